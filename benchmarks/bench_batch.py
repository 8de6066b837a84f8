"""Batch labelling benchmarks against FakeLLMServer with a latency knob (issue 4).

    .venv/bin/python benchmarks/bench_batch.py                     # span, CPU, rerun
    .venv/bin/python benchmarks/bench_batch.py --compare /tmp/cmpvenv/bin/python   # + agentdash, adamast

1. **Span**: ``mast label`` on N traces (default 200) with the server answering after ``latency``
   (1000 ms) at concurrency C (32). The span is what the server sees, first request in to last
   answer out, so process start-up (imports) is excluded; the ideal is ``ceil(N/C) * latency``.
2. **CPU per trace**: a bare ``litellm.acompletion`` loop sending exactly mast's request for a
   50-step trace, against ``Judge.classify`` on that trace (cache off), both sequential, latency 0,
   client CPU time only (the server runs in its own process). The difference is mast's overhead.
   A cProfile of both shows where the time goes.
3. **Rerun** of the finished batch: wall time and LLM calls (target 0).
4. ``--compare PYTHON``: ``agentdash`` (sequential, OpenAI SDK) and ``adamast judge`` (sequential)
   installed in a separate venv, pointed at the same server with ``OPENAI_BASE_URL``.

The server runs in a child process (``--serve``) so its CPU never counts as the client's.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import math
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MODEL = "openai/gpt-4o-mini"
"""Priced in litellm's table (so costs are computed), served by the fake server."""

AGENTDASH_ANSWER = (
    "A. The coder repeated the same step and nobody verified the fix.\nB. no\nC.\n"
    + "".join(f"{code} {'yes' if code in ('1.3', '3.2') else 'no'}\n" for code in
              ("1.1", "1.2", "1.3", "1.4", "1.5", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "3.1", "3.2", "3.3"))
)


# --- traces ----------------------------------------------------------------------------------------


_ACTIONS = (
    "read {f} and found that {fn}() ignores the {arg} argument when it is None",
    "ran pytest {t}: {n} passed, {m} failed ({err} in {fn})",
    "proposed to split {fn}() into a parser and a validator before touching {f}",
    "patched {f}: the regex now accepts an optional seconds field and keeps the offset",
    "asked the tester to cover {arg}={val!r}, which the issue reporter mentioned",
    "reviewed the diff of {f}; the change to {fn}() also alters the cache key, which is risky",
    "searched the repository for callers of {fn}(): {n} in {f} and {m} in the CLI",
    "reverted the change to {f} because {t} started failing with {err}",
    "wrote a regression test {t} that parses {val!r} and compares the UTC result",
    "summarised progress: {n} of {m} subtasks done, the timezone bug is still open",
    "checked the CI log: {err} at line {n} of {f}, unrelated to our change",
    "reported to the planner that {fn}() is called with naive datetimes from {f}",
)
_FILES = ("utils/dates.py", "app/api.py", "tests/test_dates.py", "core/cache.py", "cli/main.py", "io/reader.py")
_FUNCS = ("parse_date", "to_utc", "load_config", "render_row", "fetch_page", "normalize_tz", "retry_call")
_ERRORS = ("ValueError", "KeyError", "AssertionError", "TimeoutError", "TypeError")


def make_traces(path: Path, n: int, steps: int = 50) -> Path:
    """``n`` distinct multi-agent chat transcripts of ``steps`` varied messages each, one per JSONL line."""
    import random

    import orjson

    rng = random.Random(4)
    lines = []
    for i in range(n):
        messages: list[dict[str, Any]] = [
            {"role": "user", "content": f"Run {i}: fix the failing date parser in utils/dates.py and prove it with tests."}
        ]
        for s in range(1, steps):
            who = ("planner", "coder", "tester")[s % 3]
            sentences = [
                rng.choice(_ACTIONS).format(
                    f=rng.choice(_FILES), fn=rng.choice(_FUNCS), arg=rng.choice(("tz", "fmt", "strict", "default")),
                    t=f"test_case_{rng.randrange(1000)}", n=rng.randrange(1, 90), m=rng.randrange(1, 9),
                    err=rng.choice(_ERRORS), val=f"2024-0{rng.randrange(1, 9)}-1{rng.randrange(9)}T10:0{rng.randrange(9)}+02:00",
                )
                for _ in range(2)
            ]
            text = f"{who.capitalize()} (run {i}, turn {s}): " + "; then ".join(sentences) + "."
            messages.append({"role": "user" if who == "planner" else "assistant", "name": who, "content": text})
        lines.append(orjson.dumps(messages))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


# --- the server, in its own process -----------------------------------------------------------------


def serve(latency: float) -> None:
    """Child process: serve, print the base URL, answer 'stats' / 'reset' / 'latency X' on stdin."""
    from mast.testing import FakeLLMServer, Reply, request_text

    def responder(body: dict[str, Any]) -> Any:
        text = request_text(body)
        if "*** begin of things you should answer ***" in text:  # agentdash's free-text protocol
            return Reply(content=AGENTDASH_ANSWER)
        if "none_apply" in text:  # adamast's selection judge
            return Reply(content={"failure_modes": [], "none_apply": True})
        return None

    server = FakeLLMServer(responder, latency=latency).start()
    print(server.base_url, flush=True)
    for line in sys.stdin:
        command = line.split()
        if not command:
            continue
        if command[0] == "stats":
            stats = {
                "requests": len(server.chat_requests),
                "max_in_flight": server.max_in_flight,
                "span_s": (server.last_response_at - server.first_request_at)
                if server.first_request_at and server.last_response_at else None,
            }
            print(json.dumps(stats), flush=True)
        elif command[0] == "reset":
            server.reset()
            print("{}", flush=True)
        elif command[0] == "latency":
            server.latency = float(command[1])
            print("{}", flush=True)
    server.stop()


class ServerProcess:
    def __init__(self, latency: float) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(latency)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().strip()

    def ask(self, command: str) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()
        return dict(json.loads(self.proc.stdout.readline()))

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        self.proc.wait(timeout=30)


# --- 1 and 3: span and rerun through the CLI -------------------------------------------------------


def label_cli(
    traces: Path, out: Path, server: ServerProcess, concurrency: int, env: dict[str, str], extra: list[str]
) -> tuple[float, float, dict[str, Any]]:
    """Run ``mast label``; returns (wall seconds, CPU seconds of the process, its --json report)."""
    mast = Path(sys.executable).parent / "mast"
    cmd = [str(mast), "label", str(traces), "-o", str(out), "-m", MODEL, "--api-base", server.base_url,
           "--api-key", "bench", "-j", str(concurrency), "--no-progress", "--json", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"mast label failed ({done.returncode}): {done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(done.stdout.strip().splitlines()[-1])


def bench_span(n: int, latency: float, concurrency: int, work: Path, extra: list[str]) -> dict[str, Any]:
    traces = make_traces(work / "traces.jsonl", n)
    out = work / f"results{'-'.join(extra)}.jsonl"
    env = {**os.environ, "MAST_CACHE_DIR": str(work / f"cache{'-'.join(extra)}")}
    server = ServerProcess(latency)
    try:
        load = os.getloadavg()[0]
        wall, cpu, report = label_cli(traces, out, server, concurrency, env, extra)
        stats = server.ask("stats")
        server.ask("reset")
        rerun_wall, rerun_cpu, rerun_report = label_cli(traces, out, server, concurrency, env, extra)
        rerun_stats = server.ask("stats")
    finally:
        server.close()
    ideal = math.ceil(n / concurrency) * latency
    return {
        "n": n, "latency_s": latency, "concurrency": concurrency, "options": " ".join(extra) or "defaults",
        "load_avg_1m": load,
        "span_s": stats["span_s"], "ideal_s": ideal, "ratio": stats["span_s"] / ideal,
        "requests": stats["requests"], "max_in_flight": stats["max_in_flight"],
        "process_wall_s": wall, "process_cpu_s": cpu, "batch_wall_s": report["wall_s"],
        "judged": report["statuses"]["judged"], "cost_usd": report["cost_usd"],
        "rerun_process_wall_s": rerun_wall, "rerun_process_cpu_s": rerun_cpu, "rerun_batch_wall_s": rerun_report["wall_s"],
        "rerun_requests": rerun_stats["requests"], "rerun_resumed": rerun_report["resumed"],
    }


# --- 2: CPU per trace --------------------------------------------------------------------------------


def cpu_client(base_url: str, calls: int, profile: bool) -> dict[str, Any]:
    """Child process: CPU per call of bare litellm vs mast's Judge on the same 50-step trace."""
    os.environ["MAST_CACHE_DIR"] = tempfile.mkdtemp()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # as mast does: no price-map download
    import litellm

    from mast.batch import BatchRunner, ResultsFile, scan
    from mast.batch.judges import judge_for
    from mast.judge.classify import Judge
    from mast.judge.config import JudgeConfig
    from mast.judge.material import prepare
    from mast.judge.messages import build_single
    from mast.judge.schema import diagnosis_spec
    from mast.normalize import load_traces

    work = Path(tempfile.mkdtemp())
    traces = load_traces(make_traces(work / "t.jsonl", calls + 10))
    results: dict[str, Any] = {"calls": calls, "steps": len(traces[0].steps)}

    async def main(variant: str, **options: Any) -> None:
        config = JudgeConfig(model=MODEL, api_base=base_url, api_key="bench", cache=False, **options)
        judge = Judge(config)
        await judge.start()
        backend = judge.backend
        material = prepare(traces[0], redact=config.redact, redact_ips=config.redact_ips)
        messages = build_single(judge.prompts, material)
        kwargs = backend._request(messages, diagnosis_spec(judge.taxonomy), backend.resolve_mode("auto"), 4096)
        results["prompt_chars"] = sum(len(m["content"]) for m in messages)

        async def bare(k: int) -> None:
            for _ in range(k):
                await litellm.acompletion(**kwargs)

        async def mast_calls(batch: list[Any]) -> None:
            for trace in batch:
                diagnosis = await judge.classify(trace, raise_on_error=True)
                assert diagnosis.status == "judged" and diagnosis.usage.llm_calls == 1

        batch_judge = judge_for(config)
        items = list(scan(traces[:calls]))

        async def batch_calls() -> None:
            # The whole batch layer too: runner, resume bookkeeping, one JSON line written per trace.
            out = work / f"results-{variant}.jsonl"
            with ResultsFile(out, overwrite=True) as results:
                runner = BatchRunner(batch_judge, concurrency=1, results=results)
                report = await runner.run(items)
            assert report.statuses["judged"] == calls

        await bare(5)  # warm both paths: first calls load lazily
        await mast_calls(traces[calls:calls + 5])
        runs = (
            ("bare_litellm", lambda: bare(calls)),
            (f"mast_{variant}", lambda: mast_calls(traces[:calls])),
            (f"batch_{variant}", batch_calls),
        )
        for name, run in runs:
            best = math.inf
            for _ in range(3):
                cpu = time.process_time()
                await run()
                best = min(best, (time.process_time() - cpu) / calls)
            results[f"{name}_cpu_ms"] = min(best * 1000, results.get(f"{name}_cpu_ms", math.inf))
        if profile:
            for name, run in runs:
                prof = cProfile.Profile()
                prof.enable()
                await run()
                prof.disable()
                text = io.StringIO()
                pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(25)
                results[f"{name}_profile"] = text.getvalue()

    asyncio.run(main("default"))
    asyncio.run(main("no_hints", hints=False))
    for variant in ("default", "no_hints"):
        results[f"overhead_{variant}_ms"] = results[f"mast_{variant}_cpu_ms"] - results["bare_litellm_cpu_ms"]
        results[f"batch_layer_{variant}_ms"] = results[f"batch_{variant}_cpu_ms"] - results[f"mast_{variant}_cpu_ms"]
    started = time.process_time()
    for _ in range(5):
        list(scan(traces[:calls]))
    results["scan_per_trace_ms"] = (time.process_time() - started) / (5 * calls) * 1000
    return results


def bench_cpu(calls: int, profile: bool) -> dict[str, Any]:
    server = ServerProcess(0.0)
    try:
        done = subprocess.run(
            [sys.executable, __file__, "--cpu-client", server.base_url, "--calls", str(calls)] + (["--profile"] if profile else []),
            capture_output=True, text=True, timeout=3600,
        )
    finally:
        server.close()
    if done.returncode != 0:
        raise SystemExit(f"cpu client failed: {done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# --- 4: agentdash and adamast -------------------------------------------------------------------------

_AGENTDASH = """
import json, sys, time
from agentdash import annotator
texts = json.load(open(sys.argv[1]))
a = annotator("bench", model="gpt-4o-mini")
t = time.perf_counter()
results = [a.produce_taxonomy(text) for text in texts]
print(json.dumps({"wall_s": time.perf_counter() - t, "n": len(results),
                  "flagged": sum(1 for r in results if r["failure_modes"].get("1.3"))}))
"""


def bench_compare(python: str, n: int, latency: float, work: Path) -> dict[str, Any]:
    from mast.normalize import load_traces

    source = make_traces(work / "cmp.jsonl", n)
    traces = load_traces(source)
    # agentdash takes a trace as text: give it the transcript mast's judge reads.
    (work / "texts.json").write_text(json.dumps([t.to_transcript().text for t in traces]))
    # adamast reads JSONL records holding a message list.
    folder = work / "adamast_traces"
    folder.mkdir(exist_ok=True)
    with (folder / "runs.jsonl").open("w") as fh:
        for i, line in enumerate(source.read_text().splitlines()):
            fh.write(json.dumps({"trace_id": f"run{i:04d}", "messages": json.loads(line)}) + "\n")
    results: dict[str, Any] = {"n": n, "latency_s": latency}
    server = ServerProcess(latency)
    env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "bench"}
    try:
        done = subprocess.run([python, "-c", _AGENTDASH, str(work / "texts.json")], capture_output=True, text=True, env=env, timeout=7200)
        stats = server.ask("stats")
        results["agentdash"] = (
            {**json.loads(done.stdout.strip().splitlines()[-1]), **stats} if done.returncode == 0
            else {"error": done.stderr[-1500:]}
        )
        server.ask("reset")
        adamast = Path(python).parent / "adamast"
        taxonomy = next(Path(python).parent.parent.glob("lib/python*/site-packages/adamast/core/mast.json"))
        started = time.perf_counter()
        done = subprocess.run(
            [str(adamast), "judge", "--taxonomy", str(taxonomy), "--traces", str(folder), "--provider", "openai",
             "--model", "gpt-4o-mini", "--output", str(work / "adamast.json")],
            capture_output=True, text=True, env=env, timeout=7200,
        )
        wall = time.perf_counter() - started
        stats = server.ask("stats")
        if done.returncode == 0:
            judged = json.loads((work / "adamast.json").read_text())
            results["adamast"] = {"process_wall_s": wall, "n": judged["trace_count"], **stats}
        else:
            results["adamast"] = {"error": (done.stderr or done.stdout)[-1500:], **stats}
    finally:
        server.close()
    return results


# --- main ---------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--cpu-client", help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help="print cProfile tables of the CPU benchmark")
    parser.add_argument("-n", type=int, default=200)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--compare", metavar="PYTHON", help="python of a venv holding agentdash and adamast")
    parser.add_argument("--compare-n", type=int, default=200)
    parser.add_argument("--skip", nargs="*", default=[], choices=["span", "cpu"])
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve)
        return
    if args.cpu_client:
        print(json.dumps(cpu_client(args.cpu_client, args.calls, args.profile)))
        return
    work = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    out: dict[str, Any] = {}
    if "span" not in args.skip:
        for extra in ([], ["--no-hints"], ["--no-hints", "--no-redact", "--no-cache"]):
            out["span"] = bench_span(args.n, args.latency, args.concurrency, work, extra)
            print(json.dumps({"span": out["span"]}, indent=1), flush=True)
    if "cpu" not in args.skip:
        out["cpu"] = bench_cpu(args.calls, args.profile)
        profiles = {k: out["cpu"].pop(k) for k in list(out["cpu"]) if k.endswith("_profile")}
        print(json.dumps({"cpu": out["cpu"]}, indent=1), flush=True)
        for name, text in profiles.items():
            print(f"--- {name} ---\n{text}")
    if args.compare:
        out["compare"] = bench_compare(args.compare, args.compare_n, args.latency, work)
        print(json.dumps({"compare": out["compare"]}, indent=1), flush=True)


if __name__ == "__main__":
    main()
