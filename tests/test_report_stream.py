"""`mast report` and `mast evaluate` read a results file as a stream and keep compact rows (issue 16).

What is checked here is what the streaming must not change: the compact frame holds the same values
as the full DataFrame, a page past the detail budget still lists every trace, errors and mixed
judges are reported as before. Memory itself is measured in benchmarks/bench_memory.py.
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from mast.cli import main
from mast.diagnosis import (
    Diagnosis,
    DiagnosisUsage,
    ErrorInfo,
    FirstFailure,
    JudgeInfo,
    ModeVerdict,
    SourceRef,
)
from mast.evaluation import viewer
from mast.evaluation.digest import compact_frame
from mast.evaluation.labels import label_table, labels_from_diagnoses, read_labels
from mast.evaluation.sourcekeys import resolve_source_keys, source_key
from mast.report import render_report
from mast.results import iter_results, to_dataframe
from mast.taxonomy import load_taxonomy

EXAMPLES = Path(__file__).resolve().parent.parent / "data" / "examples"
TAX = load_taxonomy()


def diagnosis(i: int, *, model: str = "openai/fake") -> Diagnosis:
    """A result of every shape the report counts: judged with modes, judged clean, error, unjudgeable."""
    kind = ("modes", "clean", "error", "unjudgeable")[i % 4]
    modes = []
    if kind in ("modes", "clean"):
        for j, mode in enumerate(TAX.modes[: 3 + i % 5]):
            present = None if j == 2 else (kind == "modes" and (i + j) % 3 == 0)
            modes.append(ModeVerdict(code=mode.code, name=mode.name, category=mode.category, present=present,
                                     confidence=None if j == 1 else 0.25 * (j % 4), explanation=f"why {i} {j}"))
    return Diagnosis(
        trace_id=f"t{i:03d}",
        status="judged" if kind in ("modes", "clean") else kind,
        failure_modes=modes,
        first_failure=FirstFailure(step=i % 7, agent=("Coder", "Planner")[i % 2]) if i % 5 else None,
        judge=JudgeInfo(kind="llm", model=model, taxonomy_version=TAX.version),
        source=SourceRef(path=f"runs/run-{i}.json", format="chat", record=None),
        usage=DiagnosisUsage(input_tokens=100 + i, output_tokens=i, cost_usd=None if i % 6 == 0 else 0.001 * i,
                             latency_s=0.1 * i, llm_calls=1, cached=i % 4 == 1),
        error=ErrorInfo(type="ProviderError", message=f"failed {i}") if kind == "error" else None,
    )


def write(path: Path, diagnoses: list[Diagnosis]) -> Path:
    path.write_text("".join(d.model_dump_json() + "\n" for d in diagnoses))
    return path


def test_compact_frame_holds_what_the_full_frame_holds(tmp_path: Path) -> None:
    results = write(tmp_path / "r.jsonl", [diagnosis(i) for i in range(40)])
    compact = compact_frame(iter_results(results))
    full = to_dataframe(results)
    assert len(compact) == len(full) == 40
    for column in compact.columns:
        assert column in full.columns
        pd.testing.assert_series_equal(compact[column], full[column].astype(compact[column].dtype),
                                       check_names=False, obj=column)
        assert compact[column].dtype == full[column].dtype or column in ("cost_usd",), column


@pytest.mark.parametrize("repeat", [False, True])
def test_labels_from_a_stream_equal_the_rows_built_one_by_one(repeat: bool) -> None:
    items = [diagnosis(i) for i in range(30)]
    random.Random(7).shuffle(items)  # traces out of id order
    items.append(diagnosis(100).model_copy(update={"trace_id": "t-none", "failure_modes": []}))  # judged, none assessed
    if repeat:  # the same result twice (a second pass over the file): one row per cell all the same
        items.append(items[3])
    streamed = labels_from_diagnoses(iter(items), source="s")
    rows = [{"trace_id": d.trace_id, "code": v.code, "present": v.present, "confidence": v.confidence,
             "evidence": v.explanation}
            for d in items if d.status == "judged" for v in d.failure_modes if v.present is not None]
    expected = label_table(rows, source="s")
    assert len(streamed) == len(expected) > 0
    for column in ("trace_id", "code", "present", "evidence"):
        assert streamed[column].tolist() == expected[column].tolist(), column
    assert streamed["confidence"].tolist() == pytest.approx(expected["confidence"].tolist(), nan_ok=True)
    assert streamed["annotator"].isna().all()


def test_gold_keyed_by_path_still_finds_the_trace_ids(tmp_path: Path) -> None:
    table = labels_from_diagnoses(iter([diagnosis(i) for i in range(8)]))
    gold = pd.DataFrame({"trace_id": [source_key("runs/run-4.json"), source_key("run-1.json"), "t000"],
                         "code": ["1.1", "1.1", "1.1"], "present": [True, False, True]})
    resolved = resolve_source_keys(gold, table.attrs["source_keys"])
    assert resolved["trace_id"].tolist() == ["t004", "t001", "t000"]


def test_a_mixed_file_is_refused_with_the_counts_and_writes_nothing(tmp_path: Path) -> None:
    items = [diagnosis(i) for i in range(5)] + [diagnosis(i, model="openai/other") for i in range(3)]
    results = write(tmp_path / "mixed.jsonl", items)
    out = tmp_path / "page.html"
    result = CliRunner().invoke(main, ["report", str(results), "-o", str(out)])
    assert result.exit_code == 2
    assert "mixes 2 judges (openai/fake: 5, openai/other: 3)" in result.output
    assert not out.exists() and not list(tmp_path.glob("*.partial"))
    evaluated = CliRunner().invoke(main, ["evaluate", "--pred", str(results), "--gold", str(results)])
    assert evaluated.exit_code == 2 and "mixes 2 judges" in evaluated.output


def test_summary_lists_fifty_errors_and_counts_them_all(tmp_path: Path) -> None:
    results = write(tmp_path / "r.jsonl", [diagnosis(i) for i in range(4 * 60)])  # 60 errors
    page = render_report(results, n_boot=0)
    summary = re.search(r"<section id='summary'>(.*?)</section>", page, re.S)
    assert summary is not None
    assert "<b>60</b>errors" in summary.group(1)
    assert summary.group(1).count("failed ") == 50


def _embedded(page: str) -> list[dict[str, Any]]:
    found = re.search(r"<script type='application/json' id='mast-traces'>(.*?)</script>", page, re.S)
    assert found
    return list(json.loads(found.group(1)))


def test_traces_past_the_detail_budget_get_compact_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "examples.jsonl"
    labelled = CliRunner().invoke(main, ["label", str(EXAMPLES), "-o", str(results), "--judge", "detectors"])
    assert labelled.exit_code == 0, labelled.output
    diagnoses = list(iter_results(results))
    findings = [d for d in diagnoses if d.status != "judged" or d.present_codes]
    assert len(findings) > 2 and len(diagnoses) - len(findings) > 1
    monkeypatch.setattr(viewer, "DETAIL_FINDINGS", 2)
    monkeypatch.setattr(viewer, "DETAIL_CLEAN", 1)

    rows = _embedded(render_report(results, n_boot=0, gold=EXAMPLES / "gold.csv"))
    assert [r["id"] for r in rows] == [d.trace_id for d in diagnoses]  # every trace, in file order
    detailed = [r["id"] for r in rows if r["steps"]]
    clean = [d.trace_id for d in diagnoses if d not in findings]
    assert detailed == sorted([d.trace_id for d in findings][:2] + clean[:1], key=[d.trace_id for d in diagnoses].index)
    for row, d in zip(rows, diagnoses, strict=True):
        if row["steps"]:
            continue
        assert "left out" in row["note"] and row["task"] == ""
        assert {m["code"] for m in row["modes"] if m["present"]} == set(d.present_codes)
        assert all(m["evidence"] == [] for m in row["modes"])
    gold = read_labels(EXAMPLES / "gold.csv", role="gold")
    assert any(m["gold"] for r in rows if not r["steps"] for m in r["modes"]) == bool(
        set(gold["trace_id"]) & {r["id"] for r in rows if not r["steps"]})
