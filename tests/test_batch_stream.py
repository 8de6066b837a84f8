"""The local engine streams: items pulled as slots free, a resume index of keys, running counts, a breaker."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_batch_inputs import chat_jsonl

from mast.batch import BatchReport, BatchRunner, ResultsFile, WorkItem, label, scan
from mast.batch.judges import FunctionJudge, judge_for
from mast.batch.runner import PREPARE_AHEAD
from mast.diagnosis import Diagnosis, empty_verdicts
from mast.judge.config import JudgeConfig
from mast.results import iter_results
from mast.taxonomy import load_taxonomy
from mast.testing import FakeLLMServer, Reply


def test_items_are_pulled_one_free_slot_at_a_time(tmp_path: Path) -> None:
    path = chat_jsonl(tmp_path / "runs.jsonl", 20)
    detectors = judge_for(JudgeConfig(judge="detectors"))
    pulled = 0
    release = asyncio.Event()
    waiting: list[int] = []
    full = asyncio.Event()

    async def call(trace: Any) -> Diagnosis:
        waiting.append(trace.source.record)
        if len(waiting) == 3:
            full.set()
        await release.wait()
        return Diagnosis(trace_id=trace.trace_id, trace_hash=trace.content_hash(), judge=detectors.info,
                         failure_modes=empty_verdicts(load_taxonomy()))

    judge = FunctionJudge(call, detectors)  # awaited inside the request gate: three calls in flight

    def items() -> Iterator[WorkItem]:
        nonlocal pulled
        for item in scan([path]):
            pulled += 1
            yield item

    async def run() -> tuple[int, BatchReport]:
        runner = BatchRunner(judge, concurrency=3, keep_results=False)
        task = asyncio.create_task(runner.run(items()))
        await full.wait()
        await asyncio.sleep(0)  # let the feeder run as far as it can
        seen = pulled
        release.set()
        return seen, await task

    seen, report = asyncio.run(run())
    # three in flight, as many prepared ahead waiting at the gate, and one more waiting for a slot:
    # not the whole input
    assert seen == 3 * PREPARE_AHEAD + 1
    assert report.statuses["judged"] == 20 and report.total == 20


def test_rerun_reads_only_keys_and_counts_modes_from_the_index(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    chat_jsonl(folder / "a.jsonl", 6, tag="a")
    chat_jsonl(folder / "b.jsonl", 4, tag="b")
    out = tmp_path / "results.jsonl"
    first = label([folder], out, judge="detectors")
    seen: list[tuple[str, Diagnosis | None]] = []
    again = label([folder], out, judge="detectors", on_progress=lambda r, i, o, d: seen.append((o, d)))
    assert again.resumed == 10 and again.total == 10
    assert all(outcome == "resumed" and d is None for outcome, d in seen)  # no result read back whole
    assert again.statuses == first.statuses
    assert again.mode_counts == first.mode_counts and again.mode_assessed == first.mode_assessed
    assert len(list(iter_results(out))) == 10


def test_a_crash_between_retry_and_cleanup_leaves_one_line_per_input(tmp_path: Path) -> None:
    path = chat_jsonl(tmp_path / "runs.jsonl", 3)
    out = tmp_path / "results.jsonl"
    label([path], out, judge="detectors")
    lines = out.read_bytes().splitlines()
    good = Diagnosis.model_validate_json(lines[0])
    stale = good.model_copy(update={"status": "error", "failure_modes": []})
    # What a run killed after writing the new result but before dropping the old error line leaves.
    out.write_bytes(b"\n".join([stale.model_dump_json().encode(), *lines]) + b"\n")
    report = label([path], out, judge="detectors")
    assert report.resumed == 3
    kept = list(iter_results(out))
    assert len(kept) == 3 and all(d.status == "judged" for d in kept)


class StopOnAuth:
    """A breaker: the first 401 stops the run (every other trace would fail the same way)."""

    def __init__(self) -> None:
        self.seen = 0

    def record(self, diagnosis: Diagnosis, exc: BaseException | None) -> str | None:
        self.seen += 1
        if diagnosis.error is not None and "401" in diagnosis.error.message:
            return f"stopped: the provider refused the key ({diagnosis.error.type})"
        return None


def test_a_breaker_stops_the_whole_run_and_unstarted_traces_are_not_written(tmp_path: Path) -> None:
    path = chat_jsonl(tmp_path / "runs.jsonl", 10)
    out = tmp_path / "results.jsonl"
    with FakeLLMServer(lambda body: Reply(status=401, body={"error": {"message": "bad key"}})) as server:
        config = JudgeConfig.from_options(model="openai/gpt-4o-mini", api_base=server.base_url, api_key="x",
                                          cache=False, max_retries=0)
        breaker = StopOnAuth()
        report = label([path], out, config=config, concurrency=1, breaker=breaker)
        requests = len(server.chat_requests)
    assert report.stopped == "failed" and report.message and "refused the key" in report.message
    written = list(iter_results(out))
    assert len(written) == 1 == requests == breaker.seen  # one call, one line; nothing else started
    assert report.not_started == 9 and report.total == 10


def test_budget_stop_counts_the_rest_of_the_input_without_judging_it(tmp_path: Path) -> None:
    path = chat_jsonl(tmp_path / "runs.jsonl", 8)
    judge = judge_for(JudgeConfig(judge="detectors"))
    from mast.batch import Estimate

    judge.estimate = lambda trace: Estimate(100, 10, 1.0)

    async def run() -> BatchReport:
        runner = BatchRunner(judge, concurrency=1, budget_usd=2.5, keep_results=False)
        with ResultsFile(tmp_path / "out.jsonl") as results:
            runner.results_file = results
            return await runner.run(scan([path]))

    report = asyncio.run(run())
    assert report.stopped == "budget"
    assert report.statuses["judged"] + report.not_started == 8 == report.total
    assert report.statuses["judged"] == len(list(iter_results(tmp_path / "out.jsonl")))


@pytest.mark.parametrize("suffix", [".csv"])
def test_label_writes_the_table_from_the_jsonl(tmp_path: Path, suffix: str) -> None:
    path = chat_jsonl(tmp_path / "runs.jsonl", 3)
    out = tmp_path / f"results{suffix}"
    report = label([path], out, judge="detectors")
    assert report.statuses["judged"] == 3
    assert out.read_text().count("\n") == 4 and (tmp_path / "results.jsonl").exists()
