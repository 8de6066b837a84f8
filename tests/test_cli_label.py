"""``mast label`` and ``mast export``: exit codes, dry run, shards, resume, Ctrl-C, tables."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from _data import TRACES
from click.testing import CliRunner, Result
from test_batch import MODEL, task_number
from test_batch_inputs import chat_jsonl

from mast.batch import read_results
from mast.cli import main
from mast.testing import FakeLLMServer, Reply

EXAMPLES = Path(__file__).parents[1] / "data" / "examples"


def label(*args: Any) -> Result:
    return CliRunner().invoke(main, ["label", *map(str, args)], catch_exceptions=False)


def llm_args(server: FakeLLMServer) -> list[str]:
    return ["-m", MODEL, "--api-base", server.base_url, "--api-key", "test", "--no-cache", "--max-retries", "0"]


def test_all_judged_exits_0_with_a_summary_and_the_detectors_notice(tmp_path: Path) -> None:
    runs = chat_jsonl(tmp_path / "runs.jsonl", 3)
    out = tmp_path / "results.jsonl"
    result = label(runs, "-o", out)
    assert result.exit_code == 0, result.output
    assert "no model configured: using the offline detectors" in result.stderr
    assert "judged" in result.stderr and "wall time" in result.stderr
    assert len(read_results(out)) == 3


def test_errors_exit_1_with_a_count(tmp_path: Path) -> None:
    runs = chat_jsonl(tmp_path / "runs.jsonl", 4)
    out = tmp_path / "results.jsonl"
    with FakeLLMServer(responder=lambda body: Reply(status=400) if task_number(body) == 3 else None) as server:
        result = label(runs, "-o", out, *llm_args(server), "--json")
    assert result.exit_code == 1, result.output
    assert "1 error of 4 traces" in result.stderr
    assert "runs.jsonl#3" in result.stderr  # the failing trace is named as it happens
    report = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert report["statuses"] == {"judged": 3, "unjudgeable": 0, "error": 1} and report["llm_calls"] == 3
    assert report["input_tokens"] > 0 and report["cost_usd"] > 0


def test_unreadable_inputs_are_reported_per_file_skipped_and_exit_2(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    chat_jsonl(folder / "a.jsonl", 2, tag="a")
    (folder / "b.json").write_text('{"messages": [', encoding="utf-8")
    chat_jsonl(folder / "c.jsonl", 2, tag="c")
    out = tmp_path / "results.jsonl"
    result = label(folder, "-o", out)
    assert result.exit_code == 2, result.output
    skipped = [line for line in result.stderr.splitlines() if line.startswith("mast: skipped")]
    assert len(skipped) == 1 and "b.json" in skipped[0]
    assert len(read_results(out)) == 4


def test_an_unreadable_record_is_named_once_in_its_error_line(tmp_path: Path) -> None:
    runs = chat_jsonl(tmp_path / "runs.jsonl", 3, bad_lines={1: b"{broken"})
    result = label(runs, "-o", tmp_path / "results.jsonl")
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if "not valid JSON" in line]
    assert lines == [f"mast: {runs}#1: line 2 is not valid JSON"]


def test_a_judge_error_line_names_the_record(tmp_path: Path) -> None:
    runs = chat_jsonl(tmp_path / "runs.jsonl", 2)
    with FakeLLMServer(responder=lambda body: Reply(status=400) if task_number(body) == 1 else None) as server:
        result = label(runs, "-o", tmp_path / "results.jsonl", *llm_args(server))
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if "400" in line]
    assert len(lines) == 1 and lines[0].startswith(f"mast: {runs}#1: ") and lines[0].count(f"{runs}#1") == 1


def test_summary_marks_modes_the_judge_did_not_assess(tmp_path: Path) -> None:
    runs = chat_jsonl(tmp_path / "runs.jsonl", 3)
    result = label(runs, "-o", tmp_path / "results.jsonl", "--judge", "detectors", "--json")
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.stdout.strip().splitlines()[-1])
    written = read_results(tmp_path / "results.jsonl")
    assessed = {m.code: sum(d.verdict(m.code).present is not None for d in written) for m in written[0].failure_modes}
    assert {code: n for code, n in assessed.items() if n} == report["mode_assessed"]
    assert 0 < len(report["mode_assessed"]) < 14  # the detectors cover some modes, not all
    rows = {line.split()[1]: line for line in result.stderr.splitlines() if line.startswith("│ ") and line.split()[1][:1].isdigit()}
    assert len(rows) == 14
    for code, row in rows.items():
        cells = [c.strip() for c in row.strip("│").split("│")]
        if code in report["mode_assessed"]:
            count, n = report["mode_counts"].get(code, 0), report["mode_assessed"][code]
            assert cells[2:5] == [str(count), str(n), f"{count / n:.0%}"]
        else:
            assert cells[2:5] == ["—", "—", "—"]  # not "0 / 0%": nothing was assessed


def test_summary_counts_the_detectors_hints_fresh_and_resumed(tmp_path: Path) -> None:
    examples = tmp_path / "examples"
    shutil.copytree(EXAMPLES, examples)
    out = tmp_path / "results.jsonl"
    args = (examples, "-o", out, "--judge", "detectors", "--json")
    first = label(*args)
    assert first.exit_code == 0, first.output
    written = read_results(out)
    hinted: dict[str, int] = {}
    for diagnosis in written:
        for verdict in diagnosis.failure_modes:
            if verdict.hints and not verdict.present:
                hinted[verdict.code] = hinted.get(verdict.code, 0) + 1
    assert hinted  # the examples hold signs of modes the detectors leave to a model judge
    for result, resumed in ((first, 0), (label(*args), len(written))):
        report = orjson.loads(result.stdout.strip().splitlines()[-1])
        assert (report["mode_hinted"], report["resumed"]) == (hinted, resumed)
        header = next(line for line in result.stderr.splitlines() if line.startswith("┃ mode"))
        assert [c.strip() for c in header.strip("┃").split("┃")][-1] == "hints"
        rows = {
            line.split()[1]: [c.strip() for c in line.strip("│").split("│")]
            for line in result.stderr.splitlines()
            if line.startswith("│ ") and line.split()[1][:1].isdigit()
        }
        assert {code: int(cells[5]) for code, cells in rows.items() if cells[5]} == hinted
        assert "hints: traces in which the offline detectors saw signs" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope/"], "nope/: no such file or folder"),
        (["--shard", "3/2"], "--shard '3/2'"),
        (["--concurrency", "0"], "Invalid value for '-j' / '--concurrency'"),
        (["-o", "x.txt"], "use a name ending in .jsonl"),
    ],
)
def test_usage_errors_exit_2_in_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    runs = chat_jsonl(tmp_path / "runs.jsonl", 1)
    base = [str(runs), "-o", str(tmp_path / "results.jsonl")]
    if args[0] == "nope/":
        base = [str(tmp_path / "nope"), "-o", str(tmp_path / "results.jsonl")]
        message = "nope: no such file or folder"
    elif args[0] == "-o":
        base = [str(runs)]
    result = label(*base, *args)
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_dry_run_counts_and_estimates_without_a_request(tmp_path: Path) -> None:
    runs = chat_jsonl(tmp_path / "runs.jsonl", 5)
    out = tmp_path / "results.jsonl"
    with FakeLLMServer() as server:
        result = label(runs, "-o", out, *llm_args(server), "--dry-run", "--json")
        assert server.chat_requests == []
    assert result.exit_code == 0, result.output
    plan = orjson.loads(result.stdout)
    assert plan["traces"] == plan["to_judge"] == 5 and plan["already_done"] == 0
    assert plan["estimated_input_tokens"] > 5 * 500  # the instructions alone are long
    assert plan["estimated_output_tokens"] > 0
    assert not out.exists()


def test_dry_run_with_the_detectors_says_no_llm_calls_not_a_zero_estimate(tmp_path: Path) -> None:
    runs = chat_jsonl(tmp_path / "runs.jsonl", 3)
    result = label(runs, "-o", tmp_path / "results.jsonl", "--judge", "detectors", "--dry-run")
    assert result.exit_code == 0, result.output
    assert "no LLM calls" in result.stderr
    assert "$0.0000" not in result.stderr and "est. input tokens" not in result.stderr


def test_rerun_resumes_and_overwrite_starts_over(tmp_path: Path) -> None:
    runs = chat_jsonl(tmp_path / "runs.jsonl", 6)
    out = tmp_path / "results.jsonl"
    with FakeLLMServer() as server:
        assert label(runs, "-o", out, *llm_args(server)).exit_code == 0
        # A kill -9 mid-write leaves a torn last line.
        blob = out.read_bytes()
        out.write_bytes(blob[: len(blob) - 40])
        server.reset()
        result = label(runs, "-o", out, *llm_args(server), "--json")
        assert result.exit_code == 0, result.output
        assert "removed a torn last line" in result.stderr
        assert len(server.chat_requests) == 1
        assert orjson.loads(result.stdout)["resumed"] == 5
        server.reset()
        assert label(runs, "-o", out, *llm_args(server), "--overwrite").exit_code == 0
        assert len(server.chat_requests) == 6
    assert len(read_results(out)) == 6


def test_a_trace_edited_since_it_was_judged_is_judged_again_and_its_old_result_goes(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    for name, ask in (("a", "Sum 2 and 3."), ("b", "Name the capital of France."), ("c", "List three primes.")):
        (runs / f"{name}.json").write_text(orjson.dumps([{"role": "user", "content": ask},
                                                         {"role": "assistant", "content": "Done."}]).decode())
    out = tmp_path / "results.jsonl"
    assert label(runs, "-o", out, "--judge", "detectors").exit_code == 0
    before = {Path(d.source.path or "").name: d.trace_hash for d in read_results(out)}
    (runs / "b.json").write_text(orjson.dumps([{"role": "user", "content": "Name the capital of Spain."},
                                               {"role": "assistant", "content": "Madrid."}]).decode())
    result = label(runs, "-o", out, "--judge", "detectors")
    assert result.exit_code == 0, result.output
    assert "1 older result replaced: the trace changed since it was judged" in result.stderr
    after = [(Path(d.source.path or "").name, d.trace_hash) for d in read_results(out)]
    assert sorted(name for name, _ in after) == ["a.json", "b.json", "c.json"]  # one row per trace
    hashes = dict(after)
    assert hashes["a.json"] == before["a.json"] and hashes["c.json"] == before["c.json"]
    assert hashes["b.json"] != before["b.json"]
    # A third run changes nothing and replaces nothing.
    again = label(runs, "-o", out, "--judge", "detectors")
    assert again.exit_code == 0 and "replaced" not in again.stderr
    assert sorted((Path(d.source.path or "").name, d.trace_hash) for d in read_results(out)) == sorted(after)
    # A file that no longer reads replaces nothing: its last good result stays.
    (runs / "c.json").write_text("{ not json")
    broken = label(runs, "-o", out, "--judge", "detectors")
    assert "replaced" not in broken.stderr
    assert dict((Path(d.source.path or "").name, d.trace_hash) for d in read_results(out))["c.json"] == before["c.json"]


def test_shards_partition_the_input_and_concatenate(tmp_path: Path) -> None:
    inputs = [TRACES / "smolagents_memory", chat_jsonl(tmp_path / "runs.jsonl", 9)]
    whole = tmp_path / "whole.jsonl"
    assert label(*inputs, "-o", whole).exit_code == 0
    parts = []
    for k in (1, 2, 3):
        part = tmp_path / f"part-{k}.jsonl"
        assert label(*inputs, "-o", part, "--shard", f"{k}/3").exit_code == 0
        parts.append([(d.trace_id, d.trace_hash) for d in read_results(part)])
    assert all(parts)
    merged = [key for part in parts for key in part]
    assert len(merged) == len(set(merged))
    assert sorted(merged, key=str) == sorted(((d.trace_id, d.trace_hash) for d in read_results(whole)), key=str)


def test_table_output_and_export(tmp_path: Path) -> None:
    runs = chat_jsonl(tmp_path / "runs.jsonl", 3)
    csv = tmp_path / "results.csv"
    result = label(runs, "-o", csv)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "results.jsonl").is_file() and len(csv.read_text().splitlines()) == 4
    parquet = tmp_path / "results.parquet"
    exported = CliRunner().invoke(main, ["export", str(tmp_path / "results.jsonl"), "-o", str(parquet)])
    assert exported.exit_code == 0, exported.output
    import pandas as pd

    frame = pd.read_parquet(parquet)
    assert len(frame) == 3 and str(frame["1.3"].dtype) == "boolean"
    bad = CliRunner().invoke(main, ["export", str(tmp_path / "results.jsonl"), "-o", str(tmp_path / "x.xlsx")])
    assert bad.exit_code == 2 and ".csv or .parquet" in bad.stderr


@pytest.mark.spawns
@pytest.mark.timeout(900)
def test_ctrl_c_stops_cleanly_after_writing_what_finished(tmp_path: Path) -> None:
    runs = chat_jsonl(tmp_path / "runs.jsonl", 8)
    out = tmp_path / "results.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with FakeLLMServer(latency=1.5) as server:
        script = Path(sys.executable).parent / "mast"
        assert script.exists(), "the mast console script is missing from the test environment"
        args = [str(script), "label", str(runs), "-o", str(out), "-j", "2", *llm_args(server)]
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        deadline = time.monotonic() + 600  # a bound on waiting for the event below
        while time.monotonic() < deadline and (not out.exists() or out.read_bytes().count(b"\n") < 2):
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 130, err.decode()[-2000:]
        stderr = err.decode()
        assert "interrupted" in stderr and "run the same command again to continue" in stderr
        done = read_results(out)
        assert 2 <= len(done) < 8
        assert out.read_bytes().endswith(b"\n")
        # In-flight traces were let finish: every request the server answered has its line.
        sent = len(server.chat_requests)
        assert sent == len(done)
        server.reset()
        server.latency = 0
        again = label(runs, "-o", out, *llm_args(server))
        assert again.exit_code == 0, again.output
        assert len(server.chat_requests) == 8 - len(done)
    assert len(read_results(out)) == 8


def test_budget_stops_starting_traces_says_so_and_resumes(tmp_path: Path) -> None:
    runs = chat_jsonl(tmp_path / "runs.jsonl", 12)
    out = tmp_path / "results.jsonl"
    with FakeLLMServer() as server:
        result = label(runs, "-o", out, *llm_args(server), "-j", "2", "--budget-usd", "0.006", "--json")
        assert result.exit_code == 1, result.output
        assert "budget of $0.006 reached" in result.stderr
        report = orjson.loads(result.stdout.strip().splitlines()[-1])
        judged = report["statuses"]["judged"]
        assert report["stopped"] == "budget" and 0 < judged < 12 and report["cost_usd"] <= 0.006
        assert len(server.chat_requests) == judged == len(read_results(out))
        server.reset()
        assert label(runs, "-o", out, *llm_args(server)).exit_code == 0
        assert len(server.chat_requests) == 12 - judged


def test_fail_on_modes_the_detectors_never_assess_is_one_line_before_the_run(tmp_path: Path) -> None:
    runs = chat_jsonl(tmp_path / "runs.jsonl", 2)
    out = tmp_path / "results.jsonl"
    refused = label(runs, "-o", out, "--fail-on", "2.*")
    assert refused.exit_code == 2
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert lines == [
        "mast: --fail-on '2.*' can never fire: the offline detectors assess only 1.3, 1.5, 3.1 "
        "(an LLM judge, --model or MAST_MODEL, assesses every mode)"
    ]
    assert not out.exists()
    assert label(runs, "-o", out, "--fail-on", "3.*").exit_code in (0, 3)  # 3.1 is assessed
