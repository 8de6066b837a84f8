"""The LLM judge's own cost: preparation, parsing, chunking and concurrency, model time excluded.

Everything runs the real judge path (prompt, litellm, re-ask loop, verification, cache) against
``mast.testing.FakeLLMServer`` on 127.0.0.1, so the figures are mast's overhead, not a provider's:

1. Many short traces through one :class:`mast.judge.Judge`, concurrently, with an instant server:
   judgements per second and CPU milliseconds per judgement.
2. Long traces at a 32k context: the two large Codex rollouts in ``tests/data/traces`` (~40k tokens) and a
   synthetic multi-agent chat of ~150k tokens (MAD-sized): windows, calls, planning time.
3. Concurrency against a slow server (1 s per answer): span as the server sees it, and the most
   requests in flight.
4. Optional (``--local``): one real judgement by SmolLM2-135M through llama.cpp on this machine.

Usage::

    .venv/bin/python benchmarks/bench_judge.py [--local] [--write-results]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import sys
import time
from datetime import date
from pathlib import Path

os.environ.setdefault("MAST_CACHE_DIR", "/tmp/mast-bench-judge-cache")

from mast.judge import Judge, classify  # noqa: E402
from mast.normalize import load_trace  # noqa: E402
from mast.testing import FakeLLMServer, judge_answer, quote_steps, request_kind, window_answer  # noqa: E402
from mast.trace import Step, ToolCall, ToolResult, Trace  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from _data import TRACES  # noqa: E402 (the third-party corpus, located in one place)

RESULTS = REPO / "benchmarks" / "RESULTS.md"
BEGIN, END = "<!-- bench_judge -->", "<!-- /bench_judge -->"


def short_trace(i: int) -> Trace:
    return Trace(
        trace_id=f"short-{i}",
        task=f"Count the files in ./logs-{i}",
        steps=[
            Step(index=0, agent="user", content=f"Count the files in ./logs-{i}"),
            Step(index=1, agent="assistant", kind="tool_call", tool_calls=[ToolCall(name="sh", arguments={"cmd": f"ls ./logs-{i}"})]),
            Step(index=2, agent="sh", kind="tool_result", tool_results=[ToolResult(output="a.log b.log c.log")]),
            Step(index=3, agent="assistant", content="There are 3 files."),
        ],
        final_output="There are 3 files.",
    )


def mad_sized_trace(target_chars: int = 600_000) -> Trace:
    """A three-agent chat with varied text, about 4 characters per token."""
    agents = ["Planner", "Coder", "Reviewer"]
    steps: list[Step] = [Step(index=0, agent="user", content="Build a CLI that converts CSV files to JSON, with tests.")]
    size = 0
    i = 1
    while size < target_chars:
        words = " ".join(f"item{i}_{j} costs {(i * 7 + j) % 97} units in batch {j % 13}" for j in range(40))
        text = f"Turn {i}: I reviewed the previous output. {words}. Next I will check the edge cases again."
        steps.append(Step(index=i, agent=agents[i % 3], content=text))
        size += len(text)
        i += 1
    return Trace(trace_id="mad-sized", task=steps[0].content, steps=steps, final_output="Done: csv2json with tests.")


def chunk_responder(body: dict) -> dict:  # type: ignore[type-arg]
    if request_kind(body) == "window":
        pairs = quote_steps(body, words=5)
        step, quote = pairs[len(pairs) // 2]
        return window_answer([{"step": step, "quote": quote, "note": "repeats the check", "code": "1.3"}])
    text = body["messages"][-1]["content"]
    found = re.search(r'- S(\d+) \[1\.3\] "([^"]+)"', text)
    evidence = {"1.3": [(int(found.group(1)), found.group(2))]} if found else {}
    return judge_answer(["1.3"] if found else [], evidence=evidence)


def fake_options(server: FakeLLMServer, **extra: object) -> dict[str, object]:
    return {"model": "openai/fake-judge", "api_base": server.base_url, "api_key": "k", "hints": True, "cache": False, **extra}


async def many_short(n: int, concurrency: int) -> tuple[float, float]:
    gate = asyncio.Semaphore(concurrency)
    with FakeLLMServer() as server:
        async with Judge(**fake_options(server)) as judge:  # type: ignore[arg-type]
            await judge.classify(short_trace(-1))  # warm-up: litellm's lazy imports

            async def one(i: int) -> None:
                async with gate:
                    diagnosis = await judge.classify(short_trace(i))
                    assert diagnosis.status == "judged", diagnosis.error

            cpu, wall = time.process_time(), time.perf_counter()
            await asyncio.gather(*(one(i) for i in range(n)))
            return time.perf_counter() - wall, time.process_time() - cpu


async def slow_server(n: int, concurrency: int, latency: float) -> tuple[float, int]:
    gate = asyncio.Semaphore(concurrency)
    with FakeLLMServer(latency=latency) as server:
        async with Judge(**fake_options(server, hints=False)) as judge:  # type: ignore[arg-type]
            await judge.classify(short_trace(-1))
            server.reset()

            async def one(i: int) -> None:
                async with gate:
                    await judge.classify(short_trace(i))

            await asyncio.gather(*(one(i) for i in range(n)))
        assert server.first_request_at is not None and server.last_response_at is not None
        return server.last_response_at - server.first_request_at, server.max_in_flight


def long_rows() -> list[str]:
    rows = []
    cases: list[tuple[str, Trace]] = []
    codex = TRACES / "codex_rollout"
    for name in ("rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl",
                 "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl"):
        if (codex / name).is_file():
            cases.append((f"Codex rollout {name[8:27]}", load_trace(codex / name)))
    cases.append(("synthetic 3-agent chat (MAD-sized)", mad_sized_trace()))
    for label, trace in cases:
        with FakeLLMServer(chunk_responder) as server:
            start = time.perf_counter()
            cpu = time.process_time()
            # Hints off: the detectors are timed on their own below (bench_detectors.py covers them).
            diagnosis = classify(trace, **fake_options(server, context_window=32_768, hints=False))  # type: ignore[arg-type]
            wall, cpu = time.perf_counter() - start, time.process_time() - cpu
            sent = sum(len(str(m.get("content", ""))) for r in server.chat_requests for m in r.body["messages"])
        transcript = trace.to_transcript().text
        windows = diagnosis.judge.params.get("windows", [])
        rows.append(
            f"| {label} | {len(trace.steps)} | {len(transcript) / 1000:.0f}k chars | {diagnosis.judge.strategy} | "
            f"{len(windows)} windows + 1 aggregation = {diagnosis.usage.llm_calls} calls | "
            f"{sent / 1000:.0f}k chars sent | {wall:.1f} s wall, {cpu:.1f} s CPU |"
        )
        assert diagnosis.status == "judged", diagnosis.error
    from mast.judge.detectors import format_hints, run_detectors

    trace = cases[-1][1]
    start, cpu = time.perf_counter(), time.process_time()
    format_hints(run_detectors(trace))
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    rows.append(f"| (hints for the synthetic chat: `run_detectors` alone) | | | | | | {wall * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU |")
    return rows


def local_row() -> str:
    start = time.perf_counter()
    diagnosis = classify(short_trace(0), model="local", max_output_tokens=1600, max_reasks=1, cache=False)
    wall = time.perf_counter() - start
    from mast.judge.local import stop_shared_servers

    stop_shared_servers()
    usage = diagnosis.usage
    return (
        f"| SmolLM2-135M Q4_1 via xllamacpp, 4-step trace | {diagnosis.status} | {usage.input_tokens} in / "
        f"{usage.output_tokens} out | {usage.llm_calls} call(s) | {wall:.0f} s (model start included) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--local", action="store_true", help="also time one real SmolLM2 judgement")
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args()

    n = 300
    wall, cpu = asyncio.run(many_short(n, concurrency=32))
    span, in_flight = asyncio.run(slow_server(200, concurrency=64, latency=1.0))
    lines = [
        BEGIN,
        f"CPython {platform.python_version()}, {platform.machine()}, shared 2-core machine, {date.today()}; "
        "real litellm path against `mast.testing.FakeLLMServer` (model time excluded).",
        "",
        "| measure | result |",
        "|---|---|",
        f"| {n} short traces, one `Judge`, 32 at a time, instant server (hints on, cache off) | "
        f"{n / wall:.0f} judgements/s wall; {1000 * cpu / n:.0f} ms CPU each |",
        f"| 200 short traces, 64 at a time, server answers after 1 s | span {span:.1f} s as the server saw it "
        f"(ideal {200 / 64:.1f} s); {in_flight} requests in flight at most |",
        "",
        "Long traces at a 32k-token context (`--context-window 32768`, default 4096 output tokens):",
        "",
        "| trace | steps | transcript | strategy | calls | prompt text sent | time |",
        "|---|---|---|---|---|---|---|",
        *long_rows(),
    ]
    if args.local:
        lines += ["", "| real local model | status | tokens | calls | time |", "|---|---|---|---|---|", local_row()]
    lines.append(END)
    block = "\n".join(lines)
    print(block)
    if args.write_results:
        text = RESULTS.read_text() if RESULTS.exists() else ""
        section = f"## LLM judge overhead (`benchmarks/bench_judge.py`)\n\n{block}\n"
        if BEGIN in text:
            head, rest = text.split(BEGIN, 1)
            text = head + block + rest.split(END, 1)[1]
        else:
            text = text.rstrip("\n") + "\n\n" + section
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
