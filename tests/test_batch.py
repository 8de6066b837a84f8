"""The batch core end to end: the real judge (litellm path) against FakeLLMServer, or the detectors."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from _data import TRACES
from _sync import hold_until_in_flight
from test_batch_inputs import chat_jsonl

from mast.batch import BatchRunner, Estimate, ResultsFile, aclassify_many, classify_many, read_results, scan
from mast.batch.judges import FunctionJudge, judge_for
from mast.diagnosis import Diagnosis
from mast.errors import JudgeAPIError, UsageError
from mast.judge.config import JudgeConfig
from mast.testing import FakeLLMServer, Reply, request_text

MODEL = "openai/gpt-4o-mini"
"""A model litellm has a price for, served by the fake server: costs are real numbers."""

_TASK = re.compile(r"(\w+) task (\d+):")


def task_number(body: dict[str, Any]) -> int:
    match = _TASK.search(request_text(body))
    assert match, "every test trace names its task"
    return int(match.group(2))


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as srv:
        yield srv


def llm(server: FakeLLMServer, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "api_base": server.base_url, "api_key": "test", "cache": False, "max_retries": 0, **extra}


def ids(diagnoses: list[Diagnosis]) -> list[str]:
    return [d.trace_id for d in diagnoses]


def test_results_come_back_in_input_order_while_calls_overlap(tmp_path: Path, server: FakeLLMServer) -> None:
    n, concurrency = 24, 8
    path = chat_jsonl(tmp_path / "runs.jsonl", n)
    # Earlier traces answer later, so completion order is the reverse of input order. The answers wait
    # until `concurrency` requests are in flight (an event, not a guess at how fast this machine is).
    server.responder = hold_until_in_flight(server, concurrency, lambda body: Reply(delay=0.05 * (n - task_number(body))))
    results = classify_many(path, concurrency=concurrency, **llm(server))
    expected = [item.trace_id for item in scan([path])]
    assert ids(results) == expected
    assert all(d.status == "judged" and d.judge.model == MODEL for d in results)
    assert [d.source.record for d in results] == list(range(n))
    # Traces are prepared ahead, but never more than `concurrency` requests are in flight.
    assert server.max_in_flight == concurrency
    assert len(server.chat_requests) == n


def test_a_failing_trace_is_an_error_result_and_siblings_finish(tmp_path: Path, server: FakeLLMServer) -> None:
    path = chat_jsonl(tmp_path / "runs.jsonl", 6)
    server.responder = lambda body: Reply(status=400) if task_number(body) == 2 else None
    results = classify_many([path], concurrency=3, **llm(server))
    assert [d.status for d in results] == ["judged", "judged", "error", "judged", "judged", "judged"]
    failed = results[2]
    assert failed.error is not None and failed.error.type == "JudgeAPIError" and "400" in failed.error.message
    assert failed.trace_hash is not None and [v.present for v in failed.failure_modes] == [None] * 14


def test_raise_on_error_fails_fast(tmp_path: Path, server: FakeLLMServer) -> None:
    path = chat_jsonl(tmp_path / "runs.jsonl", 6)
    server.responder = lambda body: Reply(status=400) if task_number(body) == 0 else Reply(delay=5)
    with pytest.raises(JudgeAPIError, match="400"):
        classify_many([path], concurrency=2, raise_on_error=True, **llm(server))
    # Fail-fast: the first failure cancels the rest, so not every trace was sent.
    assert len(server.chat_requests) < 6


def test_unreadable_files_and_records_do_not_stop_the_batch(tmp_path: Path) -> None:
    chat_jsonl(tmp_path / "a.jsonl", 3, bad_lines={1: b"{broken"})
    (tmp_path / "b.json").write_bytes(b"\x00binary\x00")
    chat_jsonl(tmp_path / "c.jsonl", 2, tag="c")
    out = tmp_path / "out" / "results.jsonl"
    results = classify_many([tmp_path], judge="detectors", output=out)
    assert [d.status for d in results] == ["judged", "error", "judged", "error", "judged", "judged"]
    assert results[1].source.record == 1 and results[1].error and "line 2" in results[1].error.message
    assert results[3].trace_id.endswith("b.json") and results[3].error and "binary" in results[3].error.message
    written = read_results(out)
    # The unreadable record is a line (it has a place to resume by); the unreadable file is not.
    assert len(written) == 5 and not any(d.trace_id.endswith("b.json") for d in written)


def test_resume_after_a_crash_judges_each_trace_exactly_once(tmp_path: Path, server: FakeLLMServer) -> None:
    n = 10
    path = chat_jsonl(tmp_path / "runs.jsonl", n)
    out = tmp_path / "results.jsonl"
    first = classify_many([path], output=out, concurrency=4, **llm(server))
    assert len(server.chat_requests) == n
    # A crash: the last two lines never made it, and the one before is torn half-way.
    lines = out.read_bytes().splitlines(keepends=True)
    out.write_bytes(b"".join(lines[:7]) + lines[7][: len(lines[7]) // 2])
    lost = {Diagnosis.model_validate_json(line).trace_id for line in lines[7:]}
    server.reset()
    again = classify_many([path], output=out, concurrency=4, **llm(server))
    assert len(server.chat_requests) == 3  # only the lost traces were sent again
    assert {f"task {task_number(r.body)}" for r in server.chat_requests} == {
        f"task {d.source.record}" for d in first if d.trace_id in lost
    }
    written = read_results(out)
    assert sorted(ids(written)) == sorted(ids(first))  # every trace exactly once
    assert out.read_bytes().endswith(b"\n") and all(orjson.loads(x) for x in out.read_bytes().splitlines())
    assert ids(again) == ids(first)
    # Nothing left to do: a third run makes no call at all.
    server.reset()
    classify_many([path], output=out, **llm(server))
    assert server.chat_requests == []


def test_identical_traces_in_two_files_get_a_result_each_from_one_judgement(
    tmp_path: Path, server: FakeLLMServer
) -> None:
    a, b = chat_jsonl(tmp_path / "a.jsonl", 2), chat_jsonl(tmp_path / "b.jsonl", 2)
    out = tmp_path / "results.jsonl"

    def sources(diagnoses: list[Diagnosis]) -> list[tuple[str | None, int | None]]:
        return [(d.source.path, d.source.record) for d in diagnoses]

    results = classify_many([a, b], output=out, concurrency=4, **llm(server))
    assert ids(results[:2]) == ids(results[2:])  # same id and content in both files
    assert sources(results) == [(str(a), 0), (str(a), 1), (str(b), 0), (str(b), 1)]
    assert len(server.chat_requests) == 2  # one judgement per distinct trace
    assert [d.usage.cached for d in results] == [False, False, True, True]
    assert [d.usage.llm_calls for d in results[2:]] == [0, 0]
    assert sorted(sources(read_results(out)), key=str) == sorted(sources(results), key=str)
    # A rerun finds every input by its own line: no call, each keeps its source.
    server.reset()
    again = classify_many([a, b], output=out, **llm(server))
    assert server.chat_requests == [] and sources(again) == sources(results)
    assert len(read_results(out)) == 4
    # The same traces in a new file: copied from the output with the new source, no call.
    c = chat_jsonl(tmp_path / "c.jsonl", 2)
    third = classify_many([a, b, c], output=out, **llm(server))
    assert server.chat_requests == [] and sources(third[4:]) == [(str(c), 0), (str(c), 1)]
    assert len(read_results(out)) == 6


def test_error_results_are_retried_on_resume_and_replaced(tmp_path: Path, server: FakeLLMServer) -> None:
    path = chat_jsonl(tmp_path / "runs.jsonl", 4)
    out = tmp_path / "results.jsonl"
    server.responder = lambda body: Reply(status=400) if task_number(body) == 1 else None
    first = classify_many([path], output=out, **llm(server))
    assert [d.status for d in first].count("error") == 1
    server.responder = None
    server.reset()
    classify_many([path], output=out, **llm(server))
    assert len(server.chat_requests) == 1
    written = read_results(out)
    assert len(written) == 4 and all(d.status == "judged" for d in written)


def test_a_changed_judge_configuration_is_judged_again(tmp_path: Path, server: FakeLLMServer) -> None:
    path = chat_jsonl(tmp_path / "runs.jsonl", 3)
    out = tmp_path / "results.jsonl"
    classify_many([path], output=out, **llm(server))
    server.reset()
    classify_many([path], output=out, **llm(server, temperature=0.7))
    assert len(server.chat_requests) == 3
    assert len(read_results(out)) == 6  # both judges' results are kept, one line each
    server.reset()
    classify_many([path], output=out, overwrite=True, **llm(server))
    assert len(server.chat_requests) == 3 and len(read_results(out)) == 3


def test_custom_redaction_patterns_change_the_cache_and_resume_keys(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = chat_jsonl(tmp_path / "runs.jsonl", 2)
    out = tmp_path / "results.jsonl"
    cached = llm(server, cache=True)
    classify_many([path], **cached)
    assert len(server.chat_requests) == 2
    server.reset()
    classify_many([path], output=out, **cached)
    assert server.chat_requests == []  # the cache answers
    patterns = tmp_path / "patterns.yaml"
    # Matches nothing in these traces, yet the judge must not assume so: the key changes.
    patterns.write_text("ticket: 'TICKET-[0-9]+'\n", encoding="utf-8")
    monkeypatch.setenv("MAST_REDACT_PATTERNS", str(patterns))
    server.reset()
    results = classify_many([path], output=out, **cached)
    assert len(server.chat_requests) == 2  # neither resumed nor cached under other redaction
    assert all(d.judge.params["redact_patterns"] for d in results)
    server.reset()
    classify_many([path], output=out, **cached)
    assert server.chat_requests == []  # resumed under the same patterns
    assert len(read_results(out)) == 4


def test_budget_stops_starting_traces_and_the_rest_resumes(tmp_path: Path, server: FakeLLMServer) -> None:
    n = 12
    path = chat_jsonl(tmp_path / "runs.jsonl", n)
    out = tmp_path / "results.jsonl"
    judge = judge_for(JudgeConfig.from_options(**llm(server)))
    # A fixed, pessimistic estimate per trace; what is booked afterwards is the real cost litellm computed.
    judge.estimate = lambda trace: Estimate(3000, 500, 0.001)
    budget = 0.004

    async def run(limit: float | None) -> BatchRunner:
        runner = BatchRunner(judge, concurrency=2, budget_usd=limit)
        with ResultsFile(out) as results:
            runner.results_file = results
            await runner.run(list(scan([path])))
        return runner

    runner = asyncio.run(run(budget))
    report = runner.report
    assert report.stopped == "budget" and report.message and "budget of $0.00" in report.message
    judged = report.statuses["judged"]
    assert 0 < judged < n and report.not_started == n - judged
    assert report.cost_usd <= budget and report.cost_usd > 0
    assert len(server.chat_requests) == judged
    assert len(read_results(out)) == judged  # valid, resumable output
    server.reset()
    runner = asyncio.run(run(None))
    assert runner.report.resumed == judged and runner.report.statuses["judged"] == n
    assert len(server.chat_requests) == n - judged


def test_mode_prevalence_counts_only_traces_where_the_mode_was_assessed(tmp_path: Path) -> None:
    from mast.diagnosis import empty_verdicts
    from mast.taxonomy import load_taxonomy

    path = chat_jsonl(tmp_path / "runs.jsonl", 4)
    judge = judge_for(JudgeConfig(judge="detectors"))
    verdict_11 = {0: True, 1: False}  # records 2 and 3: 1.1 not assessed; 1.2 never

    async def call(trace: Any) -> Diagnosis:
        verdicts = empty_verdicts(load_taxonomy())
        verdicts[0].present = verdict_11.get(trace.source.record)
        return Diagnosis(trace_id=trace.trace_id, trace_hash=trace.content_hash(), judge=judge.info, failure_modes=verdicts)

    runner = BatchRunner(FunctionJudge(call, judge))
    report = asyncio.run(runner.run(list(scan([path]))))
    assert report.statuses["judged"] == 4
    assert report.mode_assessed == {"1.1": 2} and report.mode_counts == {"1.1": 1}


def test_budget_needs_a_price(tmp_path: Path, server: FakeLLMServer) -> None:
    path = chat_jsonl(tmp_path / "runs.jsonl", 2)
    with pytest.raises(UsageError, match="budget"):
        classify_many([path], budget_usd=1.0, **llm(server, model="openai/no-such-priced-model"))
    assert server.chat_requests == []


def test_detectors_judge_without_a_model() -> None:
    smol = next((TRACES / "smolagents_memory").glob("*.jsonl"))
    results = classify_many([smol])
    assert results and all(d.status == "judged" and d.judge.kind == "detectors" for d in results)
    assert all(d.usage.llm_calls == 0 for d in results)


def test_classify_many_inside_an_event_loop_runs_in_a_worker_thread(tmp_path: Path) -> None:
    path = chat_jsonl(tmp_path / "runs.jsonl", 1)

    async def inside() -> None:  # a notebook cell (issue 13: no longer refused)
        assert len(classify_many([path])) == 1
        assert len(await aclassify_many([path])) == 1

    asyncio.run(inside())


def test_table_output_is_exported_beside_the_jsonl(tmp_path: Path) -> None:
    path = chat_jsonl(tmp_path / "runs.jsonl", 3)
    table = tmp_path / "results.csv"
    classify_many([path], output=table)
    assert (tmp_path / "results.jsonl").is_file()
    text = table.read_text().splitlines()
    assert len(text) == 4 and text[0].startswith("trace_id,status,1.1,")


def test_resume_matches_the_judge_not_the_details_of_one_judgement(tmp_path: Path) -> None:
    from mast.batch import judge_fingerprint
    from mast.diagnosis import JudgeInfo

    base = {"temperature": 0.0, "seed": None, "structured_output": "auto", "hints": True, "redact": True}
    identity = JudgeInfo(kind="llm", model=MODEL, prompt_hash="p1", taxonomy_version="mast-v3", params=base)
    keys = set(base)
    one_judgement = identity.model_copy(update={
        "strategy": "chunked",
        "params": {**base, "structured_output": "tool", "context_window": 32768, "windows": [[0, 9]],
                   "answer_limits": {"quote": 300}},
    })
    assert judge_fingerprint(one_judgement, keys) == judge_fingerprint(identity, keys)
    for changed in ({"params": {**base, "temperature": 0.7}}, {"prompt_hash": "p2"}, {"model": "openai/other"}):
        assert judge_fingerprint(identity.model_copy(update=changed), keys) != judge_fingerprint(identity, keys)


def test_every_judge_option_is_accepted_by_name(tmp_path: Path) -> None:
    import inspect

    # `judge=` is the judge kind (as in `mast label --judge`), never the injected judge function.
    batch_parameters = set(inspect.signature(aclassify_many).parameters) - {"options"}
    assert not batch_parameters & set(JudgeConfig.model_fields)
    path = chat_jsonl(tmp_path / "runs.jsonl", 2)
    results = classify_many([path], judge="detectors", hints=False, taxonomy="mast-v3", cache=False)
    assert [d.judge.kind for d in results] == ["detectors", "detectors"]
    assert all(d.status == "judged" for d in results)
    with pytest.raises(UsageError, match="model"):
        classify_many([path], judge="llm")
