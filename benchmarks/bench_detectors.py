"""Offline detectors: agreement with labels, and speed.

1. Precision and recall per mode of :func:`mast.judge.detectors.run_detectors` on the example
   traces in ``data/examples`` against ``data/examples/gold.csv`` (written by this project, planted
   failures: this measures that the rules find what they are built for, not how they generalise).
2. The same on real runs: the 40 AG2 group chats of ``data/validation/mastlint-ag2`` with their
   single-annotator gold labels.
3. Time per trace on synthetic SRE runs of 200, 1,000 and 5,000 steps (tool calls, outputs with
   timestamps, a few errors and repeats), on the MAD-sized three-agent chat of ``bench_judge.py``
   (390 long, similar messages: the case that made the step-repetition rule quadratic), and on the
   two largest real Codex rollouts in ``tests/data/traces/codex_rollout``.

A mode the detectors leave unassessed (``present: null``) on a trace counts as neither a hit nor a
miss; the "assessed" column says on how many labelled traces the detectors gave a verdict.

Usage::

    .venv/bin/python benchmarks/bench_detectors.py
    .venv/bin/python benchmarks/bench_detectors.py --write-results   # rewrite its section of RESULTS.md
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import random
import re
import statistics
import sys
import time
from collections.abc import Iterable
from datetime import date
from pathlib import Path

from bench_judge import mad_sized_trace  # the MAD-sized chat of the judge benchmark

from mast.judge.detectors import run_detectors
from mast.normalize import iter_paths, load_trace, load_traces
from mast.trace import Step, ToolCall, ToolResult, Trace

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from _data import TRACES, build_label_sets  # noqa: E402 (the third-party corpus, located in one place)

VALIDATION = build_label_sets()
EXAMPLES = REPO / "data" / "examples"
RESULTS = REPO / "benchmarks" / "RESULTS.md"
MODES = ("1.3", "1.5", "3.1")
BEGIN, END = "<!-- bench_detectors -->", "<!-- /bench_detectors -->"

Labelled = list[tuple[Trace, dict[str, bool]]]


def example_set() -> Labelled:
    gold: dict[str, dict[str, bool]] = {}
    with (EXAMPLES / "gold.csv").open(newline="") as fh:
        for row in csv.DictReader(fh):
            gold.setdefault(row["trace_id"], {})[row["code"]] = row["present"].strip().lower() == "true"
    traces = {t.trace_id: t for t in (load_trace(p) for p in iter_paths([EXAMPLES]))}
    missing = set(gold) - set(traces)
    if missing:
        raise SystemExit(f"gold.csv names traces that are not in data/examples: {sorted(missing)}")
    return [(traces[tid], labels) for tid, labels in gold.items()]


def mastlint_ag2_set() -> Labelled | None:
    root = VALIDATION / "mastlint-ag2"
    if not root.is_dir():
        return None
    present: dict[str, set[str]] = {}
    for path in sorted(root.glob("gold_labels*.json")):
        data = json.loads(path.read_text())
        for key, entry in data["labels"].items():
            present[key] = {c.removeprefix("FM-") for c in entry["present"]}
    out: Labelled = []
    for path in sorted(root.glob("raw_ag2_records*.json")):
        for trace in load_traces(path):
            key = trace.trace_id.removeprefix("mad-")
            if key in present:
                # Every one of the 14 modes was judged by the annotator: absent means false.
                out.append((trace, {code: code in present[key] for code in MODES}))
    return out


def agreement(labelled: Labelled) -> list[dict[str, object]]:
    rows = []
    reports = [(run_detectors(trace), labels) for trace, labels in labelled]
    for code in MODES:
        tp = fp = fn = tn = unassessed = positives = 0
        for report, labels in reports:
            if code not in labels:
                continue
            gold = labels[code]
            positives += gold
            said = report.present(code)
            if said is None:
                unassessed += 1
            elif said and gold:
                tp += 1
            elif said:
                fp += 1
            elif gold:
                fn += 1
            else:
                tn += 1
        labelled_n = tp + fp + fn + tn + unassessed
        rows.append(
            {
                "mode": code,
                "labelled": labelled_n,
                "gold present": positives,
                "assessed": tp + fp + fn + tn,
                "tp": tp,
                "fp": fp,
                "fn": fn,
                "precision": tp / (tp + fp) if tp + fp else None,
                "recall": tp / (tp + fn) if tp + fn else None,
            }
        )
    return rows


def synthetic_trace(n_steps: int = 200, seed: int = 0) -> Trace:
    """A 200-step SRE-style run: narration, shell calls, log outputs with timestamps, some errors."""
    rng = random.Random(seed)
    commands = ["kubectl get pods -n shop", "kubectl logs cart-{i} -n shop --tail=40", "kubectl describe pod web-{i}", "curl -s http://svc-{i}/health", "cat /etc/app/config-{i}.yaml"]
    steps: list[Step] = [Step(index=0, kind="message", agent="user", role="user", content="Checkout is failing for some users since 10:00. Find out why and report the root cause.")]
    i = 0
    while len(steps) < n_steps - 1:
        i += 1
        cmd = rng.choice(commands).format(i=rng.randint(1, 9))
        narration = f"Step {i}: checking {cmd.split()[0]} output for anything related to the checkout failures; the previous result did not explain the errors yet."
        call_id = f"call_{i}"
        steps.append(Step(index=0, kind="tool_call", agent="sre", role="assistant", content=narration, tool_calls=[ToolCall(id=call_id, name="shell", arguments={"cmd": cmd})]))
        lines = [f"2025-06-0{rng.randint(1, 9)}T10:{rng.randint(10, 59)}:{rng.randint(10, 59)}Z level=info msg=\"request served\" path=/cart/{rng.randint(1000, 9999)} dur={rng.randint(1, 900)}ms" for _ in range(rng.randint(5, 25))]
        failed = rng.random() < 0.1
        if failed:
            lines.append("Error from server (NotFound): pods \"cart-x\" not found")
        steps.append(Step(index=0, kind="tool_result", agent="tool", role="tool", tool_results=[ToolResult(call_id=call_id, output="\n".join(lines), is_error=failed)]))
    steps.append(Step(index=0, kind="message", agent="sre", role="assistant", content="Root cause: the cart service's Redis connection pool is exhausted under load; raise the pool size from 10 to 50 and add an alert on pool saturation."))
    return Trace(steps=steps[:n_steps])


def time_per_trace(trace: Trace, repeats: int) -> dict[str, float]:
    """Median and p95 of CPU time (this process only) and median wall time, in milliseconds.

    CPU time is the figure to compare: on a shared machine the wall clock also counts the time
    other processes held the cores.
    """
    run_detectors(trace)  # warm caches (regex compilation, taxonomy load)
    cpu, wall = [], []
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        run_detectors(trace)
        cpu.append((time.process_time() - c0) * 1000)
        wall.append((time.perf_counter() - w0) * 1000)
    cpu.sort()
    return {"cpu median ms": statistics.median(cpu), "cpu p95 ms": cpu[int(0.95 * (len(cpu) - 1))], "wall median ms": statistics.median(wall)}


def fmt(value: object) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def table(rows: Iterable[dict[str, object]]) -> str:
    rows = list(rows)
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(fmt(r[h]) for h in head) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=200, help="timed runs per trace (default 200)")
    parser.add_argument("--write-results", action="store_true", help="rewrite this benchmark's section of benchmarks/RESULTS.md")
    args = parser.parse_args()

    parts: list[str] = []
    examples = example_set()
    parts.append(f"**Examples** (`data/examples`, {len(examples)} traces written for mast with planted failures, `gold.csv`):\n\n" + table(agreement(examples)))

    real = mastlint_ag2_set()
    if real is None:
        parts.append(f"**Real AG2 runs**: skipped, {VALIDATION / 'mastlint-ag2'} not found.")
    else:
        parts.append(
            f"**Real AG2 runs** (`data/validation/mastlint-ag2`, {len(real)} Planner/Coder/Tester group chats, one annotator's gold):\n\n"
            + table(agreement(real))
        )

    timing = []

    def text_kb(trace: Trace) -> float:
        return sum(len(s.content) + sum(len(r.output) for r in s.tool_results) for s in trace.steps) / 1000

    for n_steps in (200, 1000, 5000):
        synthetic = synthetic_trace(n_steps)
        repeats = max(5, args.repeats * 200 // n_steps)
        timing.append({"trace": f"synthetic, {n_steps} steps, {text_kb(synthetic):.0f} kB of text ({repeats} runs)", **time_per_trace(synthetic, repeats)})
    chat = mad_sized_trace()
    timing.append({"trace": f"synthetic 3-agent chat, {len(chat.steps)} steps, {text_kb(chat):.0f} kB of long similar messages ({max(5, args.repeats // 10)} runs)", **time_per_trace(chat, max(5, args.repeats // 10))})
    rollouts = sorted((TRACES / "codex_rollout").glob("*.jsonl"), key=lambda p: p.stat().st_size)
    if rollouts:
        for path in rollouts[-2:]:
            real_trace = load_trace(path)
            repeats = max(20, args.repeats // 10)
            timing.append({"trace": f"real Codex rollout, {len(real_trace.steps)} steps, {text_kb(real_trace):.0f} kB of text ({repeats} runs)", **time_per_trace(real_trace, repeats)})
    parts.append(
        "**Time per trace** (`run_detectors`, after one warm-up; targets: 200 steps well under 5 ms, a 400-step "
        "chat under 50 ms, linear in the trace's length):\n\n" + table(timing)
    )

    load = f", load average {os.getloadavg()[0]:.1f} during the run" if hasattr(os, "getloadavg") else ""
    header = f"CPython {platform.python_version()}, {platform.machine()}, shared 2-core machine{load}, {date.today().isoformat()}."
    body = "\n\n".join([header, *parts])
    print(body)
    if args.write_results:
        write_section(body)


def write_section(body: str) -> None:
    block = f"{BEGIN}\n{body}\n{END}"
    text = RESULTS.read_text() if RESULTS.exists() else ""
    if BEGIN in text and END in text:
        text = re.sub(re.escape(BEGIN) + r".*?" + re.escape(END), lambda _: block, text, flags=re.DOTALL)
    else:
        text = text.rstrip("\n") + "\n\n## Offline detectors (`benchmarks/bench_detectors.py`)\n\n" + block + "\n"
    RESULTS.write_text(text)


if __name__ == "__main__":
    main()
