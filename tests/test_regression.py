"""mast diff / mast.analysis.diff: a planted 20-point rise is flagged, a 2-point wobble is not."""

from __future__ import annotations

import random
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

import mast
from mast.cli import main
from mast.diagnosis import Diagnosis, JudgeInfo, SourceRef, empty_verdicts
from mast.errors import EvaluationError
from mast.regression import changed_traces, diff, worse_modes
from mast.taxonomy import load_taxonomy

TAX = load_taxonomy()
N = 100


def run(present: dict[str, set[int]], *, prefix: str = "task", n: int = N, judged: int | None = None) -> list[Diagnosis]:
    """``n`` judged results; mode ``code`` present in the tasks ``present[code]``, absent elsewhere."""
    out = []
    for i in range(n):
        verdicts = empty_verdicts(TAX)
        for v in verdicts:
            v.present = i in present.get(v.code, set())
        out.append(Diagnosis(
            trace_id=f"{prefix}-{i:03d}", judge=JudgeInfo(kind="llm", model="openai/x", taxonomy_version=TAX.version),
            source=SourceRef(path=f"/runs/{prefix}/{prefix}-{i:03d}.json"), failure_modes=verdicts,
        ))
    return out


def write(path: Path, diagnoses: list[Diagnosis]) -> Path:
    path.write_bytes(b"".join(d.model_dump_json().encode() + b"\n" for d in diagnoses))
    return path


# Base: 1.3 in tasks 0-19 (20%), 3.2 in tasks 50-79 (30%).
BASE = {"1.3": set(range(20)), "3.2": set(range(50, 80))}
# New: 1.3 gains tasks 20-39 (+20 points, planted); 3.2 gains 80-82 and loses 50 (+2 points, a wobble).
NEW = {"1.3": set(range(40)), "3.2": set(range(51, 83))}


def test_paired_diff_flags_the_planted_rise_and_not_the_wobble() -> None:
    result = diff(run(BASE), run(NEW))
    assert result.attrs["key"] == "trace_id" and result.attrs["pairing"].startswith("paired by trace_id (100 tasks")
    row = result.set_index("code")
    assert row.loc["1.3", "base_prevalence"] == 0.2 and row.loc["1.3", "new_prevalence"] == 0.4
    assert row.loc["1.3", "difference"] == pytest.approx(0.2) and row.loc["1.3", "rose"] == 20
    assert row.loc["1.3", "diff_low"] > 0 and row.loc["1.3", "p_value"] < 1e-5
    assert row.loc["3.2", "difference"] == pytest.approx(0.02) and (row.loc["3.2", "rose"], row.loc["3.2", "fell"]) == (3, 1)
    assert row.loc["3.2", "diff_low"] < 0 < row.loc["3.2", "diff_high"] and row.loc["3.2", "p_value"] > 0.5
    assert row.loc["1.1", "p_value"] == 1.0 and row.loc["1.1", "difference"] == 0
    assert row.loc["1.3", "base_low"] < 0.2 < row.loc["1.3", "base_high"]
    assert worse_modes(result, ["1.3", "3.2"]) == ["1.3"]
    assert worse_modes(result, ["3.2"]) == []
    assert "14 modes compared" in result.attrs["note"] and "p_holm" in result.attrs["note"]
    changed = changed_traces(result)
    assert len(changed) == 24 and set(changed[changed["code"] == "3.2"]["key"]) == {"task-050", "task-080", "task-081", "task-082"}


def test_unpaired_when_the_runs_cover_different_tasks() -> None:
    shuffled = random.Random(7)
    new_tasks = {code: set(shuffled.sample(range(N), len(tasks))) for code, tasks in NEW.items()}
    result = diff(run(BASE), run(new_tasks, prefix="other"))
    assert result.attrs["key"] is None and result.attrs["pairing"].startswith("unpaired: the runs share no task")
    row = result.set_index("code")
    assert not row.loc["1.3", "paired"]
    assert row.loc["1.3", "p_value"] < 0.01 and row.loc["1.3", "diff_low"] > 0
    assert row.loc["3.2", "p_value"] > 0.5
    assert worse_modes(result, ["1.3", "3.2"]) == ["1.3"]
    assert changed_traces(result).empty


def test_runs_that_share_some_tasks_are_unpaired_and_the_reason_counts_them() -> None:
    base, new = run(BASE), run(NEW)
    result = diff(base, new[:97] + run({}, prefix="extra", n=3))
    assert result.attrs["key"] is None
    assert result.attrs["pairing"] == (
        "unpaired: the runs cover different tasks (by trace_id: 97 in both, 3 only in the base, 3 only in the "
        "new run; --pairing paired compares the 97 shared)"
    )
    assert diff(base, new[:97], pairing="paired").attrs["pairing"] == "paired by trace_id (97 tasks in both runs)"


def test_pairing_by_file_name_and_forced_unpaired() -> None:
    base = run(BASE, prefix="v1")
    new = run(NEW, prefix="v2")
    for i, d in enumerate(new):  # the same task files in another folder, new trace ids
        d.source.path = f"/elsewhere/v1-{i:03d}.json"
    result = diff(base, new)
    assert result.attrs["key"] == "file"
    assert diff(base, new, pairing="unpaired").attrs["key"] is None
    with pytest.raises(EvaluationError, match="cannot pair"):
        diff(run(BASE, prefix="a"), run(NEW, prefix="b"), key="trace_id", pairing="paired")


def test_analysis_diff_is_the_same_function_and_reads_files(tmp_path: Path) -> None:
    base = write(tmp_path / "v1.jsonl", run(BASE))
    new = write(tmp_path / "v2.jsonl", run(NEW))
    frame = mast.analysis.diff(base, new)
    assert frame.set_index("code").loc["1.3", "rose"] == 20
    with pytest.raises(EvaluationError, match="not in both runs"):
        diff(base, new, codes=["9.9"])


def test_cli_diff_exits_3_on_a_significant_rise_and_0_on_a_wobble(tmp_path: Path) -> None:
    base = write(tmp_path / "v1.jsonl", run(BASE))
    new = write(tmp_path / "v2.jsonl", run(NEW))
    worse = CliRunner().invoke(main, ["diff", str(base), str(new), "--fail-if-worse", "1.3,3.2", "--threshold", "0.05"])
    assert worse.exit_code == 3, worse.output
    assert "significant rise in 1.3" in worse.output and "paired by trace_id" in worse.output
    assert "task-020  1.3 gained" in worse.output
    wobble = CliRunner().invoke(main, ["diff", str(base), str(new), "--fail-if-worse", "FM-3.2"])
    assert wobble.exit_code == 0, wobble.output
    as_json = CliRunner().invoke(main, ["diff", str(base), str(new), "--json", "--fail-if-worse", "1.3"])
    payload = orjson.loads(as_json.stdout)
    assert as_json.exit_code == 3 and payload["worse"] == ["1.3"] and len(payload["changed"]) == 24
    assert {m["code"]: m["rose"] for m in payload["modes"]}["1.3"] == 20
    bad = CliRunner().invoke(main, ["diff", str(base), str(new), "--fail-if-worse", "7.7"])
    assert bad.exit_code == 2 and bad.output.count("\n") == 1


def test_only_judged_traces_and_assessed_cells_count() -> None:
    new = run(NEW)
    new[0].status = "error"
    for v in new[1].failure_modes:
        v.present = None
    result = diff(run(BASE), new).set_index("code")
    assert result.loc["1.3", "n_new"] == 98 and result.loc["1.3", "n_base"] == 100


def test_html_report_shows_the_diff(tmp_path: Path) -> None:
    base = write(tmp_path / "v1.jsonl", run(BASE))
    new = write(tmp_path / "v2.jsonl", run(NEW))
    page = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(new), "--base", str(base), "-o", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text(encoding="utf-8")
    assert "<section id='diff'>" in text and "paired by trace_id" in text
    section = text[text.index("<section id='diff'>"):]
    assert section.count("▲ worse") == 1 and "+20.0" in section and "24 verdicts changed" in section


def test_holm_matches_statsmodels() -> None:
    import numpy as np
    from statsmodels.stats.multitest import multipletests

    from mast.regression import holm

    p = np.array([0.01, 0.04, 0.03, 0.5, 0.001, 0.04, 1.0])
    assert holm(p) == pytest.approx(multipletests(p, method="holm")[1])


def test_cli_diff_names_the_file_beside_a_hashed_trace_id(tmp_path: Path) -> None:
    def hashed(present: dict[str, set[int]]) -> list[Diagnosis]:
        return [d.model_copy(update={"trace_id": f"sha256:{i:016x}"}) for i, d in enumerate(run(present, n=4))]

    base = write(tmp_path / "v1.jsonl", hashed({"1.3": set()}))
    new = write(tmp_path / "v2.jsonl", hashed({"1.3": {2}}))
    result = CliRunner().invoke(main, ["diff", str(base), str(new)])
    assert result.exit_code == 0, result.output
    assert "sha256:0000000000000002 (task-002.json)  1.3 gained" in result.output, result.output


def test_files_of_one_name_in_two_folders_sharing_a_trace_id_pair_by_path() -> None:
    # Claude Code subagent files carry their parent session's id, and two folders of a run may hold
    # files of one name: neither the id nor the file name is unique, the path under the run is.
    def sessions(root: str, present: dict[str, set[int]]) -> list[Diagnosis]:
        out = run(present, n=40)
        for i, d in enumerate(out):
            d.trace_id = f"session-{i // 2:03d}"                  # each id twice
            d.source.path = f"{root}/{'a' if i % 2 else 'b'}/s{i // 2:03d}.jsonl"   # each name twice
        return out

    result = diff(sessions("/runs/v1", {"1.3": set(range(5))}), sessions("/runs/v2", {"1.3": set(range(25))}))
    assert result.attrs["key"] == "path"
    assert "paired by path (40 tasks in both runs)" in result.attrs["pairing"]
