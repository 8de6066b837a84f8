"""Inspect Scout: mast as a scanner in a real ``scout scan`` over logs of a real ``inspect eval``.

The logs come from ``inspect eval`` on Inspect's ``mockllm`` model (tasks in
``tests/_inspect_tasks.py``); the judge is mast's fake provider on 127.0.0.1
(:class:`mast.testing.FakeLLMServer`), reached through ``-S api_base=...``. Scout finds
``mast_judge/mast_scanner`` through mast's ``inspect_ai`` entry point: the checkout is not installed
with it, so the test puts a small distribution holding the same entry point (read from
``pyproject.toml``) on the command's path.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from mast.testing import FakeLLMServer, Reply, judge_answer, request_text
from tests.test_inspect import ROOT, TASKS, inspect_env, run_inspect

SCOUT = Path(sys.executable).parent / "scout"
QUOTE = "I guess the answer is 3"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("inspect_scout") is None,
    reason="inspect-scout is not installed (the scout extra)",
)


def _judge(body: dict[str, Any]) -> Reply:
    text = request_text(body)
    if "3*4" in text:
        return Reply(status=500, content="provider down")
    if QUOTE in text:
        return Reply(
            content=judge_answer(
                ["2.6", "3.2"],
                evidence={"2.6": [(3, QUOTE)], "3.2": [(2, "add only takes numbers"), (3, QUOTE)]},
                summary="The agent guessed an answer after its tool call failed.",
            )
        )
    return Reply(content=judge_answer([], summary="The agent used the tool and answered correctly."))


def entry_point_path(root: Path) -> Path:
    """A folder holding a distribution whose only content is mast's ``inspect_ai`` entry points."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["inspect_ai"]
    info = root / "mast_scout_entry-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mast-scout-entry\nVersion: 0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in declared.items())
    (info / "entry_points.txt").write_text(f"[inspect_ai]\n{lines}")
    return root


def run_scout(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(SCOUT), *args], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One Inspect log (3 samples) scanned by mast_scanner with the fake judge."""
    home = tmp_path_factory.mktemp("scout-home")
    out = tmp_path_factory.mktemp("scout")
    run_inspect(
        ["eval", f"{TASKS}@arithmetic_and_product", "--log-dir", str(out / "logs")], inspect_env(home)
    )
    entry = entry_point_path(out / "entry")
    with FakeLLMServer(_judge) as server:
        env = inspect_env(home, OPENAI_API_KEY="fake-key", PYTHONPATH=f"{ROOT}:{entry}")
        run_scout(
            [
                "scan",
                "mast_judge/mast_scanner",
                "-T",
                str(out / "logs"),
                "--scans",
                str(out / "scans"),
                "-S",
                "model=openai/fake-judge",
                "-S",
                f"api_base={server.base_url}",
                "-S",
                "max_retries=0",
                "-S",
                "cache=false",
                "--display",
                "none",
                "--max-processes",
                "1",
            ],
            env,
        )
        requests = len(server.chat_requests)
    (scan_dir,) = sorted((out / "scans").glob("scan_id=*"))
    return {"dir": scan_dir, "logs": out / "logs", "requests": requests, "home": home, "env": env}


def _raw_items(scan_dir: Path, task_id: str) -> dict[str, dict[str, Any]]:
    """The resultset items of one transcript's row in the scan's Parquet file, by label."""
    import pyarrow.parquet as pq

    rows = pq.read_table(scan_dir / "mast_scanner.parquet").to_pylist()
    (row,) = [r for r in rows if r["transcript_task_id"] == task_id]
    return {item["label"]: item for item in json.loads(row["value"])}


@pytest.mark.slow  # a real `inspect eval` and a real `scout scan`
def test_scout_scan_writes_per_mode_values_with_message_references(scan: dict[str, Any]) -> None:
    from inspect_ai.log import read_eval_log
    from inspect_scout import scan_results_df

    assert scan["requests"] >= 3
    (log_path,) = sorted(scan["logs"].glob("*.eval"))
    log = read_eval_log(str(log_path))
    assert log.samples is not None
    negative = next(s for s in log.samples if s.id == "negative")
    quoted = next(m.id for m in negative.messages if QUOTE in m.text)
    tool_error = next(m.id for m in negative.messages if m.role == "tool")

    results = scan_results_df(str(scan["dir"]), scanner="mast_scanner")
    rows = results.scanners["mast_scanner"]
    spec = json.loads((scan["dir"] / "_scan.json").read_text())
    assert spec["scanners"]["mast_scanner"]["name"] == "mast_judge/mast_scanner"

    by_task = {task: frame for task, frame in rows.groupby("transcript_task_id")}
    assert set(by_task) == {"sum", "negative", "product"}
    found = by_task["negative"].set_index("label")
    assert bool(found.loc["2.6", "value"]) is True and bool(found.loc["1.1", "value"]) is False
    refs = json.loads(found.loc["2.6", "message_references"])
    assert refs == [{"type": "message", "cite": "[S3]", "id": quoted}]
    assert "[S3]" in found.loc["2.6", "explanation"] and QUOTE in found.loc["2.6", "explanation"]
    assert [r["id"] for r in json.loads(found.loc["3.2", "message_references"])] == [tool_error, quoted]
    # the diagnosis item names the codes in its answer and has no value, so Scout does not count it
    assert found.loc["diagnosis", "answer"] == "2.6,3.2" and found.loc["diagnosis", "value"] is None
    # Scout's expanded frame leaves a resultset item's metadata out: the Parquet row holds it whole
    metadata = _raw_items(scan["dir"], "negative")["diagnosis"]["metadata"]
    assert (
        metadata["mast"]["status"] == "judged"
        and metadata["mast"]["trace_id"] == by_task["negative"]["transcript_id"].iloc[0]
    )
    assert metadata["first_failure"]["step"] == 3

    clean = by_task["sum"].set_index("label")
    assert clean.loc["diagnosis", "answer"] == "none" and not any(
        bool(v) for k, v in clean["value"].items() if k != "diagnosis"
    )

    # the judge answered 500 on the product sample: an error, never "no failure"
    failed = by_task["product"]
    assert len(failed) == 1 and "could not judge" in str(failed["scan_error"].iloc[0])
    assert failed["value"].isna().all() or (failed["value"] == None).all()  # noqa: E711 - a null value, no verdict


@pytest.mark.slow  # the scan fixture: a real `inspect eval` and a real `scout scan`
def test_scouts_summary_counts_each_mode_found_as_one_result(scan: dict[str, Any]) -> None:
    from inspect_scout import scan_status

    # Scout's "results" are a resultset's items with a positive value: here the modes found (2.6 and
    # 3.2 on the negative sample, none on the sum one); the error is counted as an error, not a result.
    for summary in (
        scan_status(str(scan["dir"])).summary.scanners["mast_scanner"],
        json.loads((scan["dir"] / "_summary.json").read_text())["scanners"]["mast_scanner"],
    ):
        counts = summary if isinstance(summary, dict) else summary.model_dump()
        assert (counts["scans"], counts["results"], counts["errors"]) == (3, 2, 1)


# -- a scan read back as mast results (mast.integrations.scout_results) -----------------------------


def _scanner_diagnoses(scan_dir: Path) -> dict[str, dict[str, Any]]:
    """What the scanner itself wrote: each judged transcript's ``metadata["mast"]``, by transcript id."""
    import pyarrow.parquet as pq

    rows = pq.read_table(scan_dir / "mast_scanner.parquet").to_pylist()
    found = {}
    for row in rows:
        if row["value_type"] == "resultset":
            (item,) = [i for i in json.loads(row["value"]) if i["label"] == "diagnosis"]
            found[row["transcript_id"]] = item["metadata"]["mast"]
    return found


@pytest.mark.slow  # the scan fixture: a real `inspect eval` and a real `scout scan`
def test_a_scan_reads_as_results_with_the_scanners_diagnoses(scan: dict[str, Any]) -> None:
    from mast.results import is_results_path, read_results

    written = _scanner_diagnoses(scan["dir"])
    assert len(written) == 2 and is_results_path(scan["dir"]) and not is_results_path(scan["dir"].parent)
    read = read_results(scan["dir"])
    judged = {d.trace_id: d for d in read if d.status == "judged"}
    assert {t: d.model_dump(mode="json") for t, d in judged.items()} == written
    assert [c for d in judged.values() for c in d.present_codes] == ["2.6", "3.2"]
    # the transcript the judge could not judge is an error, with Scout's message, never "no failure"
    (failed,) = [d for d in read if d.status != "judged"]
    assert failed.status == "error" and "could not judge" in failed.error.message  # type: ignore[union-attr]
    assert failed.failure_modes == [] and failed.judge.model == "openai/fake-judge"


@pytest.mark.slow
def test_report_evaluate_diff_and_validate_read_a_scan(scan: dict[str, Any], tmp_path: Path) -> None:
    from click.testing import CliRunner

    from mast.cli import main
    from mast.diagnosis import Diagnosis
    from mast.results import ResultsFile
    from mast.review import ReviewSession

    runner = CliRunner()
    scan_dir, written = scan["dir"], _scanner_diagnoses(scan["dir"])
    negative = next(
        t for t, d in written.items() if d["failure_modes"] and any(v["present"] for v in d["failure_modes"])
    )
    # the folder `scout scan --scans` wrote, holding the scan, is read as its newest scan
    for given in (scan_dir, scan_dir.parent):
        out = tmp_path / f"{given.name}.html"
        done = runner.invoke(main, ["report", str(given), "-o", str(out), "--n-boot", "0"])
        assert done.exit_code == 0, done.output
        assert negative in out.read_text() and "Reasoning-Action Mismatch" in out.read_text()

    gold = tmp_path / "gold.csv"
    gold.write_text(
        "trace_id,code,present\n"
        + "".join(
            f"{t},{v['code']},{str(v['present']).lower()}\n"
            for t, d in written.items()
            for v in d["failure_modes"]
            if v["present"] is not None
        ).replace(f"{negative},3.2,true", f"{negative},3.2,false")
    )
    done = runner.invoke(
        main, ["evaluate", "--pred", str(scan_dir), "--gold", str(gold), "--json", "--n-boot", "0"]
    )
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert report["n_cells"] == 28 and report["pooled"]["tp"] == 1 and report["pooled"]["fp"] == 1

    # an edited copy of the run as a results file: diff sees the one verdict that changed
    edited = tmp_path / "edited.jsonl"
    with ResultsFile(edited) as results:
        for record in written.values():
            d = Diagnosis.model_validate(record)
            modes = [
                v.model_copy(update={"present": False}) if v.code == "2.6" else v for v in d.failure_modes
            ]
            results.append(d.model_copy(update={"failure_modes": modes}))
    done = runner.invoke(main, ["diff", str(scan_dir), str(edited), "--json"])
    assert done.exit_code == 0, done.output
    diff = json.loads(done.stdout)
    assert "left out as not judged" in done.stderr  # the scan's one error is said, not counted
    assert diff["base"] == str(scan_dir)
    assert [(c["key"], c["code"], c["base"], c["new"]) for c in diff["changed"]] == [
        (negative, "2.6", True, False)
    ]
    rows = {row["code"]: row for row in diff["modes"]}
    assert (rows["2.6"]["base_present"], rows["2.6"]["new_present"], rows["2.6"]["fell"]) == (1, 0, 1)

    # validate --gold ... --results SCAN: a gold reviewed from the edited run measures the scan
    reviewed = tmp_path / "gold.jsonl"
    session = ReviewSession(edited, reviewed, reviewer="ana")
    for position in range(len(session)):
        session.record(position, [{"field": "accept"}])
    session.close()
    done = runner.invoke(
        main,
        [
            "validate",
            "--gold",
            str(reviewed),
            "--results",
            str(scan_dir),
            "--json",
            "--n-boot",
            "0",
            "-o",
            str(tmp_path / "v"),
        ],
    )
    assert done.exit_code == 0, done.output
    (measured,) = json.loads(done.output)["sets"]
    pooled = measured["evaluation"]["pooled"]
    assert measured["results"] == str(scan_dir) and measured["n_judged"] == 2
    # the gold lacks the scan's 2.6: one false positive
    assert (pooled["n"], pooled["tp"], pooled["fp"], pooled["fn"]) == (28, 1, 1, 0)


LAST_WORDS = {
    "sum": "so the answer is 4.",
    "negative": "so I guess the answer is 3.",
    "product": "3 * 4 = 12.",
}
"""The last message of each sample of the fixture's log (``tests/_inspect_tasks.py``)."""


def _report_rows(page: str) -> dict[str, dict[str, Any]]:
    found = re.search(r"<script type='application/json' id='mast-traces'>(.*?)</script>", page, re.S)
    assert found
    return {row["id"]: row for row in json.loads(found.group(1))}


@pytest.mark.slow  # a real `scout scan` over a copy of the fixture's log
def test_the_report_of_a_scan_shows_each_transcript_through_its_hash(
    scan: dict[str, Any], tmp_path: Path
) -> None:
    import pyarrow.parquet as pq
    from click.testing import CliRunner
    from inspect_ai.log import read_eval_log, write_eval_log

    from mast.cli import main

    logs = tmp_path / "logs"
    logs.mkdir()
    (original,) = scan["logs"].glob("*.eval")
    log_path = logs / original.name
    log_path.write_bytes(original.read_bytes())
    scans = tmp_path / "scans"
    run_scout(
        [
            "scan",
            "mast_judge/mast_scanner",
            "-T",
            str(logs),
            "--scans",
            str(scans),
            "-S",
            "judge=detectors",
            "--display",
            "none",
            "--max-processes",
            "1",
        ],
        scan["env"],
    )
    folder = _scan_folder(scans)
    sample_of = {
        r["transcript_id"]: r["transcript_task_id"]
        for r in pq.read_table(folder / "mast_scanner.parquet").to_pylist()
    }
    assert sorted(sample_of.values()) == sorted(LAST_WORDS)

    def report() -> dict[str, dict[str, Any]]:
        out = tmp_path / "report.html"
        done = CliRunner().invoke(main, ["report", str(folder), "-o", str(out), "--n-boot", "0"])
        assert done.exit_code == 0, done.output
        return _report_rows(out.read_text())

    rows = report()
    assert set(rows) == set(sample_of)
    for transcript, row in rows.items():
        texts = [step["text"] for step in row["steps"]]
        assert row["note"] is None and texts and texts[-1].endswith(LAST_WORDS[sample_of[transcript]])

    # a log changed since the scan: that sample's transcript is refused by the hash, the others still show
    log = read_eval_log(str(log_path))
    assert log.samples is not None
    changed = next(s for s in log.samples if s.id == "negative")
    changed.messages[-1].content = "The tool failed, so the answer is 2."
    write_eval_log(log, str(log_path))
    rows = report()
    for transcript, row in rows.items():
        if sample_of[transcript] == "negative":
            assert not row["steps"] and "content hash" in row["note"]
        else:
            assert row["steps"][-1]["text"].endswith(LAST_WORDS[sample_of[transcript]])


def test_reading_a_scan_without_scout_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mast.errors import UsageError
    from mast.results import read_results

    folder = tmp_path / "scan_id=abc"
    folder.mkdir()
    (folder / "_scan.json").write_text("{}")
    monkeypatch.setitem(sys.modules, "inspect_scout", None)  # what an install without the extra sees
    with pytest.raises(UsageError, match=r"pip install 'mast-judge\[scout\]'"):
        read_results(folder)


# -- Scout's transcript database as a source (mast.sources.scout) ----------------------------------

IMPORT = """
import asyncio, sys
from inspect_scout import transcripts_db, transcripts_from

async def main() -> None:
    async with transcripts_db(sys.argv[2]) as db:
        await db.insert(transcripts_from(sys.argv[1]))

asyncio.run(main())
"""


@pytest.mark.slow  # the scan fixture's `inspect eval`, then Scout's own import into its database
def test_mast_label_reads_a_scout_database_trace_for_trace(scan: dict[str, Any], tmp_path: Path) -> None:
    from click.testing import CliRunner

    import mast
    from mast.cli import main
    from mast.results import read_results
    from mast.sources import TraceQuery, open_source

    db = tmp_path / "transcripts"
    done = subprocess.run(
        [sys.executable, "-c", IMPORT, str(scan["logs"]), str(db)],
        env=scan["env"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert list(db.glob("*.parquet"))  # Scout wrote its database: Parquet files and an index

    url = f"scout://{db}"
    source = open_source(url)
    roots = list(source.roots(TraceQuery()))
    traces = source.read([r.trace_id for r in roots])
    source.close()
    direct = {
        (t.metadata["inspect"]["sample_id"], t.metadata["inspect"]["epoch"]): t
        for t in mast.load_traces(next(scan["logs"].glob("*.eval")))
    }
    assert len(traces) == len(direct) == 3
    for transcript_id, trace in traces.items():
        same = direct[(trace.metadata["inspect"]["sample_id"], trace.metadata["inspect"]["epoch"])]
        assert trace.trace_id == transcript_id == trace.metadata["scout"]["transcript_id"]
        assert [s.model_dump() for s in trace.steps] == [s.model_dump() for s in same.steps]
        assert trace.task == same.task and trace.source.path == url
        assert trace.content_hash() == same.content_hash()  # what the judge reads: the same

    # Scout's own WHERE clause picks transcripts; mast watch is refused (no order of arrival)
    (product,) = open_source(url).roots(TraceQuery(filter="task_id = 'product'"))
    assert traces[product.trace_id].metadata["inspect"]["sample_id"] == "product"
    with pytest.raises(mast.UsageError, match="mast watch"):
        list(open_source(url).roots(TraceQuery(after="")))

    out = tmp_path / "results.jsonl"
    labelled = CliRunner().invoke(main, ["label", url, "--judge", "detectors", "-o", str(out)])
    assert labelled.exit_code == 0, labelled.output
    from_db = {d.trace_id: d for d in read_results(out)}
    files = tmp_path / "files.jsonl"
    direct_run = CliRunner().invoke(
        main, ["label", str(scan["logs"]), "--judge", "detectors", "-o", str(files)]
    )
    assert direct_run.exit_code == 0, direct_run.output
    from_logs = {d.trace_id: d for d in read_results(files)}
    assert set(from_db) == set(traces) and all(d.status == "judged" for d in from_db.values())
    by_sample = {
        (t.metadata["inspect"]["sample_id"], t.metadata["inspect"]["epoch"]): i for i, t in traces.items()
    }
    for key, trace in direct.items():
        db_modes = [v.model_dump() for v in from_db[by_sample[key]].failure_modes]
        assert db_modes == [v.model_dump() for v in from_logs[trace.trace_id].failure_modes]


def test_a_scout_url_names_an_existing_database(tmp_path: Path) -> None:
    from mast.errors import UsageError
    from mast.sources import is_source_url, open_source, source_scheme

    assert is_source_url("scout:///data/db") and source_scheme("scout://db") == "scout"
    with pytest.raises(UsageError, match="no Scout transcript database"):
        open_source(f"scout://{tmp_path / 'missing'}")
    with pytest.raises(UsageError, match="name the Scout database"):
        open_source("scout://")


def _scan_folder(scans: Path) -> Path:
    (found,) = sorted(scans.glob("scan_id=*"))
    return found


@pytest.mark.slow  # a real `scout scan -V` over the fixture's logs
@pytest.mark.parametrize("suffix", [".yaml", ".csv"])
def test_scout_validates_a_scan_against_a_validation_set_mast_wrote(
    scan: dict[str, Any], tmp_path: Path, suffix: str
) -> None:
    import pyarrow.parquet as pq

    from mast.gold import GoldEvent, GoldStore, trace_key
    from mast.review.export import write_scout
    from mast.taxonomy import load_taxonomy

    # the offline detectors judge the fixture's transcripts; the gold agrees with them but for one cell
    plain = tmp_path / "plain"
    run_scout(
        [
            "scan",
            "mast_judge/mast_scanner",
            "-T",
            str(scan["logs"]),
            "--scans",
            str(plain),
            "-S",
            "judge=detectors",
            "--display",
            "none",
            "--max-processes",
            "1",
        ],
        scan["env"],
    )
    found = {
        r["transcript_id"]: {i["label"]: i.get("value") for i in json.loads(r["value"])}
        for r in pq.read_table(_scan_folder(plain) / "mast_scanner.parquet").to_pylist()
    }
    assert len(found) == 3
    codes = [m.code for m in load_taxonomy().modes]
    flipped = next(iter(sorted(found)))
    events = [
        GoldEvent(
            key=trace_key(None, None, t),
            trace_id=t,
            field="mode",
            code=c,
            reviewer="ana",
            queue="random",
            value="present" if bool(values.get(c)) != (t == flipped and c == "3.1") else "absent",
        )
        for t, values in found.items()
        for c in codes
    ]
    gold = tmp_path / "gold.jsonl"
    with GoldStore(gold) as store:
        store.append(events)
    validation = write_scout(gold, tmp_path / f"validation{suffix}")

    checked = tmp_path / "checked"
    run_scout(
        [
            "scan",
            "mast_judge/mast_scanner",
            "-T",
            str(scan["logs"]),
            "--scans",
            str(checked),
            "-S",
            "judge=detectors",
            "-V",
            f"mast_scanner:{validation}",
            "--display",
            "none",
            "--max-processes",
            "1",
        ],
        scan["env"],
    )
    folder = _scan_folder(checked)
    assert not (folder / "_errors.jsonl").exists() or not (folder / "_errors.jsonl").read_text().strip()
    rows = pq.read_table(folder / "mast_scanner.parquet").to_pylist()
    assert [r["scan_error"] for r in rows] == [None, None, None]
    valid = {r["transcript_id"]: json.loads(r["validation_result"]) for r in rows}
    assert set(valid) == set(found)
    for transcript, result in valid.items():
        assert set(result) == set(codes)
        assert {c for c, ok in result.items() if not ok} == ({"3.1"} if transcript == flipped else set())


@pytest.mark.slow  # a real `scout scan` whose judge cannot be reached: every transcript is a Scout error
def test_a_scan_whose_judge_failed_is_read_as_errors_not_judged(scan: dict[str, Any], tmp_path: Path) -> None:
    from click.testing import CliRunner

    from mast.cli import main
    from mast.results import read_results

    scans = tmp_path / "scans"
    run_scout(
        [
            "scan",
            "mast_judge/mast_scanner",
            "-T",
            str(scan["logs"]),
            "--scans",
            str(scans),
            "-S",
            "model=openai/fake-judge",
            "-S",
            "api_base=http://127.0.0.1:9/v1",
            "-S",
            "max_retries=0",
            "-S",
            "cache=false",
            "-S",
            "timeout=1",
            "--display",
            "none",
            "--max-processes",
            "1",
        ],
        scan["env"],
    )
    folder = _scan_folder(scans)
    assert json.loads((folder / "_summary.json").read_text())["complete"] is False
    read = read_results(folder)
    assert len(read) == 3 and {d.status for d in read} == {"error"}
    assert all("could not judge" in (d.error.message if d.error else "") for d in read)
    gold = tmp_path / "gold.csv"
    gold.write_text("trace_id,code,present\n" + "".join(f"{d.trace_id},2.6,false\n" for d in read))
    done = CliRunner().invoke(main, ["evaluate", "--pred", str(folder), "--gold", str(gold), "--n-boot", "0"])
    assert done.exit_code != 0 and "no (trace, mode) cell is assessed" in done.output
    done = CliRunner().invoke(main, ["diff", str(scan["dir"]), str(folder), "--json"])
    assert done.exit_code == 0, done.output
    payload = json.loads(done.stdout)
    rows = {row["code"]: row for row in payload["modes"]}
    assert rows["2.6"]["n_base"] == 2 and rows["2.6"]["n_new"] == 0
    # the fixture's scan holds one error too: both runs' left-out traces are said, not hidden
    assert payload["not_judged"] == {"base": 1, "new": 3}
    assert "not judged" in done.stderr and "3 of the new" in done.stderr


def test_a_scan_folder_without_its_spec_is_named_not_read_as_its_errors_file(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from mast.cli import main

    folder = tmp_path / "scans" / "scan_id=Part1al"
    folder.mkdir(parents=True)
    (folder / "_summary.json").write_text('{"scans": 1, "results": 0, "errors": 0}')
    (folder / "_errors.jsonl").write_text('{"transcript_id": "t1", "error": "boom"}\n')
    (folder / "mast_scanner.parquet").write_bytes(b"PAR1")
    for given in (folder, folder.parent):
        done = CliRunner().invoke(main, ["report", str(given), "-o", str(tmp_path / "r.html")])
        assert done.exit_code == 2, done.output
        line = done.output.strip()
        assert line.count("\n") == 0 and "looks like an Inspect Scout scan" in line, line
        assert "_errors.jsonl" in line and "no _scan.json" in line and "no results to report on" not in line


def test_a_scanner_with_no_judge_chosen_says_it_uses_the_detectors(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from mast.integrations.scout import NO_MODEL_SCAN_NOTICE, build_scan

    monkeypatch.delenv("MAST_MODEL", raising=False)
    monkeypatch.delenv("MAST_JUDGE", raising=False)
    with caplog.at_level("WARNING", logger="mast"):
        build_scan()
    assert [r.getMessage() for r in caplog.records] == [NO_MODEL_SCAN_NOTICE]
    caplog.clear()
    with caplog.at_level("WARNING", logger="mast"):
        build_scan(judge="detectors")
        build_scan(model="openai/gpt-4.1-mini")
    assert caplog.records == []


def test_a_folder_of_scans_is_said_to_hold_scans_not_one_file_per_judge(tmp_path: Path) -> None:
    import os

    from click.testing import CliRunner

    from mast.cli import main

    for n, name in enumerate(("scan_id=Aaa", "scan_id=Bbb")):
        folder = tmp_path / "scans" / name
        folder.mkdir(parents=True)
        (folder / "_scan.json").write_text("{}")
        os.utime(folder / "_scan.json", ns=(n * 10**9, n * 10**9))
    done = CliRunner().invoke(main, ["report", str(tmp_path / "scans"), "-o", str(tmp_path / "r.html")])
    assert (
        "holds 2 Scout scans (scan_id=Aaa, scan_id=Bbb); reading the last changed: scan_id=Bbb" in done.stderr
    )
    assert "one per judge" not in done.stderr
