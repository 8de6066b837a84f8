"""Provider batch API (issue 14): same verdicts as online, resumable after kill -9, failed items recovered.

Everything runs the real litellm files/batches and chat paths against ``FakeLLMServer``'s
``/v1/files`` and ``/v1/batches``; kills are real SIGKILLs of a ``mast label --batch-api``
subprocess at named points (``MAST_BATCH_KILL_AT``).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest

import mast
from mast.batch import ResultsFile, scan
from mast.batch.batch_state import BatchStore
from mast.batch.provider_run import arun_provider_batch
from mast.judge.config import JudgeConfig
from mast.testing import (
    FakeLLMServer,
    Reply,
    judge_answer,
    quote_steps,
    request_kind,
    request_text,
    window_answer,
)
from mast.trace import Step, Trace

DATA = Path(__file__).parent / "data" / "batch_api"
MODEL = "openai/gpt-4.1-mini"  # litellm knows its list, batch and cached prices
PRESENT = {"weather-loop": ["1.3"], "unverified-patch": ["3.2"]}


def verdicts_by_content(body: dict[str, Any]) -> dict[str, Any]:
    """A judge whose verdicts depend only on the trace: 1.3 for the repeating planner, 3.2 for the unverified fix."""
    text = request_text(body)
    if "Lisbon forecast" in text:
        return judge_answer(["1.3"])
    if "leap years" in text:
        return judge_answer(["3.2"])
    return judge_answer([])


def options(server: FakeLLMServer, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "api_base": server.base_url, "api_key": "fake", "cache": False, **extra}


def present(results: list[mast.Diagnosis]) -> dict[str, tuple[str, list[str]]]:
    return {d.source.path or d.trace_id: (d.status, d.present_codes) for d in results}


@pytest.fixture(autouse=True)
def _fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_BATCH_POLL_S", "0.01")


async def run_batch(server: FakeLLMServer, inputs: list[Any], out: Path, **kwargs: Any) -> Any:
    config = JudgeConfig.from_options(**options(server, **kwargs.pop("judge", {})))
    items = list(scan(inputs))
    with ResultsFile(out) as results:
        return await arun_provider_batch(items, config, results, poll_interval=0.01, **kwargs)


# -- same verdicts, cheaper ----------------------------------------------------------------------


def test_batch_run_gives_the_same_verdicts_as_the_online_run(tmp_path: Path) -> None:
    with FakeLLMServer(verdicts_by_content) as server:
        online = mast.classify_many([DATA], output=tmp_path / "online.jsonl", **options(server))
        online_calls = len(server.chat_requests)
        server.reset()
        batched = mast.classify_many([DATA], output=tmp_path / "batch.jsonl", batch_api=True, **options(server))
        assert server.chat_requests == []  # nothing asked online
        assert server.batches_submitted == 1
        assert len(server.batch_items) == online_calls == 4
    assert present(batched) == present(online)
    assert {p: codes for p, (_, codes) in present(batched).items() if codes} == {
        str(DATA / f"{name}.json"): codes for name, codes in PRESENT.items()
    }
    for diagnosis in batched:
        usage = diagnosis.usage
        assert usage.batch_api and usage.llm_calls == 1
        assert usage.cost_usd is not None and usage.list_cost_usd is not None
        # gpt-4.1-mini's batch prices are half its list prices in litellm's table.
        assert usage.cost_usd == pytest.approx(usage.list_cost_usd / 2)
    online_cost = sum(d.usage.cost_usd or 0 for d in online)
    assert sum(d.usage.cost_usd or 0 for d in batched) == pytest.approx(online_cost / 2)


def long_trace(n_steps: int = 90) -> Trace:
    steps = [Step(index=0, agent="user", role="user", content="Find why the checkout service returns 500s.")]
    for i in range(1, n_steps):
        detail = " ".join(f"pod-{i}-{j} restarted with exit code {j % 7}" for j in range(12))
        steps.append(Step(index=i, agent="sre", content=f"Observation {i}: {detail}"))
    return Trace(trace_id="t-long", task="Find why the checkout service returns 500s.", steps=steps, final_output="Root cause: bad config.")


def chunked_responder(body: dict[str, Any]) -> dict[str, Any]:
    if request_kind(body) == "window":
        step, quote = quote_steps(body, words=4)[0]
        return window_answer([{"step": step, "quote": quote, "note": "restarts again", "code": "1.3"}], summary="restarts")
    found = re.search(r'- S(\d+) \[1\.3\] "([^"]+)"', request_text(body))
    if found is None:  # a short trace, judged in one call
        return verdicts_by_content(body)
    return judge_answer(["1.3"], evidence={"1.3": [(int(found.group(1)), found.group(2))]})


async def test_chunked_trace_sends_windows_in_one_batch_and_aggregation_in_the_next(tmp_path: Path) -> None:
    with FakeLLMServer(chunked_responder) as server:
        run = await run_batch(server, [long_trace(), *sorted(DATA.glob("*.json"))], tmp_path / "r.jsonl",
                              judge={"context_window": 8192, "max_output_tokens": 1024})
        batches = sorted(server.batches.values(), key=lambda b: b["created_at"])
        kinds = [[r.kind for r in server.batch_items if r.path.endswith(b["id"])] for b in batches]
    long = next(d for d in run.results if d is not None and d.trace_id == "t-long")
    windows = long.judge.params["windows"]
    assert long.status == "judged" and long.judge.strategy == "chunked" and len(windows) >= 3
    assert long.present_codes == ["1.3"] and long.failure_modes[2].evidence[0].verified
    assert server.batches_submitted == 2
    # Round 1: every window of the long trace and the four short traces; round 2: the aggregation.
    assert sorted(kinds[0]) == sorted(["window"] * len(windows) + ["diagnosis"] * 4)
    assert kinds[1] == ["diagnosis"]
    assert long.usage.llm_calls == len(windows) + 1 and run.report.statuses["judged"] == 5


# -- failed, expired and invalid items -------------------------------------------------------------


def faults_once(plan: dict[str, str]) -> Any:
    """Fail or expire the batch item of a trace (by a phrase of its text) the first time only."""
    done: set[str] = set()
    lock = threading.Lock()

    def fate(body: dict[str, Any]) -> str | None:
        text = request_text(body)
        for phrase, kind in plan.items():
            with lock:
                if phrase in text and phrase not in done:
                    done.add(phrase)
                    return kind
        return None

    return fate


async def test_failed_and_expired_items_are_asked_again_online(tmp_path: Path) -> None:
    fate = faults_once({"Lisbon forecast": "failed", "leap years": "expired"})
    with FakeLLMServer(verdicts_by_content, batch_faults=fate) as server:
        run = await run_batch(server, [DATA], tmp_path / "r.jsonl", retry="online")
        batch_statuses = [b["status"] for b in server.batches.values()]
        online = len(server.chat_requests)
    assert batch_statuses == ["expired"]
    assert server.batches_submitted == 1 and online == 2 and run.online_calls == 2
    assert run.report.statuses == {"judged": 4, "unjudgeable": 0, "error": 0}
    assert {p: c for p, (_, c) in present([d for d in run.results if d]).items() if c} == {
        str(DATA / f"{name}.json"): codes for name, codes in PRESENT.items()
    }


async def test_failed_items_go_into_a_follow_up_batch_with_retry_batch(tmp_path: Path) -> None:
    fate = faults_once({"Lisbon forecast": "failed", "Invoice 77": "expired"})
    with FakeLLMServer(verdicts_by_content, batch_faults=fate) as server:
        run = await run_batch(server, [DATA], tmp_path / "r.jsonl", retry="batch")
        followup = sorted(server.batches.values(), key=lambda b: b["created_at"])[-1]
        assert followup["request_counts"]["total"] == 2
    assert server.chat_requests == [] and server.batches_submitted == 2
    assert run.report.statuses["judged"] == 4


async def test_an_item_failing_in_every_batch_ends_in_error_and_the_rest_are_judged(tmp_path: Path) -> None:
    def always(body: dict[str, Any]) -> str | None:
        return "failed" if "Lisbon forecast" in request_text(body) else None

    with FakeLLMServer(verdicts_by_content, batch_faults=always) as server:
        run = await run_batch(server, [DATA], tmp_path / "r.jsonl", retry="batch")
    assert server.batches_submitted == 3  # MAX_BATCH_ATTEMPTS
    assert run.report.statuses == {"judged": 3, "unjudgeable": 0, "error": 1}
    failed = next(d for d in run.results if d is not None and d.status == "error")
    assert failed.error is not None and "no answer after 3 batches" in failed.error.message


async def test_an_invalid_batch_answer_is_re_asked_online(tmp_path: Path) -> None:
    with FakeLLMServer(verdicts_by_content, script=[Reply(invalid_json=True)]) as server:
        run = await run_batch(server, [DATA], tmp_path / "r.jsonl", retry="online")
        reasks = server.chat_requests
    assert run.report.statuses["judged"] == 4 and server.batches_submitted == 1
    assert len(reasks) == 1 and any(m["role"] == "assistant" for m in reasks[0].body["messages"])


async def test_large_runs_are_split_by_the_request_and_byte_limits(tmp_path: Path) -> None:
    with FakeLLMServer(verdicts_by_content) as server:
        run = await run_batch(server, [DATA], tmp_path / "a.jsonl", max_requests=3)
        by_requests = sorted(b["request_counts"]["total"] for b in server.batches.values())
        server.batches.clear()
        first_line = len(orjson.dumps(server.batch_items[0].body))
        run_bytes = await run_batch(server, [DATA], tmp_path / "b.jsonl", max_bytes=first_line * 2 + 400)
        by_bytes = [b["request_counts"]["total"] for b in server.batches.values()]
    assert by_requests == [1, 3] and run.report.statuses["judged"] == 4
    assert len(by_bytes) >= 2 and max(by_bytes) <= 2 and sum(by_bytes) == 4
    assert run_bytes.report.statuses["judged"] == 4
    state = BatchStore(tmp_path / "b.jsonl").load()
    assert all(e.n_bytes <= first_line * 2 + 400 for e in state.entries)


# -- durable: kill -9 anywhere, rerun, nothing submitted twice ---------------------------------


def mast_label(server: FakeLLMServer, out: Path, *extra: str, kill_at: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update({"MAST_BATCH_POLL_S": "0.01", "MAST_CACHE_DIR": str(out.parent / "cache")})
    if kill_at:
        env["MAST_BATCH_KILL_AT"] = kill_at
    command = [sys.executable, "-m", "mast", "label", str(DATA), "-o", str(out), "--model", MODEL,
               "--api-base", server.base_url, "--api-key", "fake", "--batch-api", "--no-progress", *extra]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300, check=False)


def lines(out: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in out.read_bytes().splitlines() if line.strip()]


@pytest.mark.faults
@pytest.mark.parametrize("point", ["upload", "create", "submitted", "download", "result"])
def test_kill_9_then_rerun_submits_nothing_twice_and_writes_every_trace_once(tmp_path: Path, point: str) -> None:
    out = tmp_path / "results.jsonl"
    with FakeLLMServer(verdicts_by_content) as server:
        killed = mast_label(server, out, kill_at=point)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        submitted_before = server.batches_submitted
        assert submitted_before == (0 if point == "upload" else 1)
        rerun = mast_label(server, out)
        assert rerun.returncode == 0, rerun.stderr
        assert server.batches_submitted == 1  # the rerun found the batch instead of submitting another
        assert server.chat_requests == []
        answered = len(server.batch_items)
    results = lines(out)
    assert sorted(r["source"]["path"] for r in results) == sorted(str(p) for p in DATA.glob("*.json"))
    assert all(r["status"] == "judged" and r["usage"]["batch_api"] for r in results)
    assert answered == 4  # every request answered once by the provider: nothing paid twice


@pytest.mark.faults
def test_batch_status_and_cancel_then_rerun_recovers_the_cancelled_items(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    hold = threading.Event()  # batches stay in progress until released
    with FakeLLMServer(verdicts_by_content, batch_hold=hold) as server:
        assert mast_label(server, out, kill_at="submitted").returncode == -signal.SIGKILL
        status = mast_label(server, out, "--batch-status", "--json")
        state = orjson.loads(status.stdout)
        assert state["entries"][0]["phase"] == "submitted" and len(state["entries"][0]["requests"]) == 4
        cancel = mast_label(server, out, "--batch-cancel")
        assert cancel.returncode == 0 and "cancelled b0001" in cancel.stderr
        assert [b["status"] for b in server.batches.values()] == ["cancelled"]
        rerun = mast_label(server, out)  # the cancelled batch's requests are asked online
        assert rerun.returncode == 0, rerun.stderr
        assert server.batches_submitted == 1 and len(server.chat_requests) == 4
    assert len(lines(out)) == 4 and "saved $" in rerun.stderr


@pytest.mark.spawns
def test_batch_api_keeps_labels_selection_and_fail_on(tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    with FakeLLMServer(verdicts_by_content) as server:
        picked = mast_label(server, out, "--trace-id", "weather-loop", "--fail-on", "1.3")
        assert picked.returncode == 3, picked.stderr  # --fail-on found 1.3 in the one trace picked
        assert len(server.batch_items) == 1
    [result] = lines(out)
    assert result["trace_id"] == "weather-loop" and result["usage"]["batch_api"]


@pytest.mark.spawns
def test_dry_run_with_batch_api_estimates_online_and_batch_cost(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mast", "label", str(DATA), "-o", str(tmp_path / "r.jsonl"), "--model", MODEL,
         "--batch-api", "--dry-run", "--json"],
        capture_output=True, text=True, timeout=300, check=False,
        env={k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")},
    )
    assert result.returncode == 0, result.stderr
    plan = orjson.loads(result.stdout)
    assert plan["to_judge"] == 4 and plan["estimated_input_tokens"] > 0
    assert plan["estimated_cost_usd_batch"] == pytest.approx(plan["estimated_cost_usd_online"] / 2)
    assert not (tmp_path / "r.jsonl.batch.json").exists()
