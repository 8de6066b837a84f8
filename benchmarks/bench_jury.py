"""Juries and regression tracking: what a jury costs, and how often the diff gate fires.

Part A (``--part cost``): 40 short traces judged against mast.testing.FakeLLMServer (fixed latency
per call) by one judge, a jury of 3 models, and 5 samples of one model; then the 5-sample run again
with ``samples=7`` on the same cache. Prints wall time, calls and CPU per trace.

Part B (``--part gate``): simulated pairs of runs of N tasks for one mode. Under "no change" each
task's verdict in the new run is redrawn with the judge's noise (a verdict flips with probability
``flip``); under a rise, a share of the tasks without the mode gain it. Prints how often
``worse_modes(diff(base, new), ["1.3"])`` fires at threshold 0.05, paired and unpaired.

Run: ``.venv/bin/python benchmarks/bench_jury.py`` (``--part cost|gate``, ``--sims 200``).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
import pandas as pd

import mast
from mast.regression import diff, worse_modes
from mast.testing import FakeLLMServer, judge_answer
from mast.trace import Step, Trace

N_TRACES = 40
LATENCY_S = 0.1


def traces() -> list[Trace]:
    return [
        Trace(trace_id=f"bench-{i}", task=f"Task {i}: sum the column.",
              steps=[Step(index=0, agent="user", role="user", content=f"Task {i}: sum the column."),
                     Step(index=1, agent="assistant", content=f"The sum is {i * 7}.")])
        for i in range(N_TRACES)
    ]


def cost_part() -> None:
    answer = judge_answer(["1.3"])
    rows = []
    with FakeLLMServer(lambda body: answer, latency=LATENCY_S) as server, tempfile.TemporaryDirectory() as cache:
        common = {"api_base": server.base_url, "api_key": "fake", "hints": False, "concurrency": 16,
                  "cache_dir": cache, "temperature": 0.7}
        # Warm-up (litellm's import and first-call set-up), not reported.
        mast.classify_many(traces()[:4], **common, model="openai/warm-up")
        # Each run has its own model names, so only the samples=7 rerun finds earlier answers in the cache.
        runs = [
            ("one judge", {"model": "openai/one"}),
            ("jury of 3 models", {"jury": "openai/j1,openai/j2,openai/j3"}),
            ("5 samples of one model", {"model": "openai/s", "samples": 5}),
            ("same, rerun with samples=7", {"model": "openai/s", "samples": 7}),
        ]
        for name, options in runs:
            server.reset()
            cpu, wall = time.process_time(), time.perf_counter()
            results = mast.classify_many(traces(), **common, **options)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            assert all(d.status == "judged" for d in results)
            rows.append({"run": name, "calls": len(server.chat_requests), "wall_s": round(wall, 2),
                         "cpu_ms_per_trace": round(1000 * cpu / N_TRACES, 1)})
    print(f"{N_TRACES} traces, {LATENCY_S * 1000:.0f} ms per call, concurrency 16")
    print(pd.DataFrame(rows).to_string(index=False))


def frame(values: np.ndarray, prefix: str = "t") -> pd.DataFrame:
    return pd.DataFrame({"trace_id": [f"{prefix}{i}" for i in range(len(values))], "1.3": values})


def gate_part(sims: int, n: int, base_rate: float, flip: float) -> None:
    rng = np.random.default_rng(0)
    rows = []
    for paired in (True, False):
        for rise in (0.0, 0.05, 0.10, 0.20):
            fired = 0
            for _ in range(sims):
                truth = rng.random(n) < base_rate
                noisy_base = truth ^ (rng.random(n) < flip)
                gained = ~truth & (rng.random(n) < rise / (1 - base_rate))
                new_truth = truth | gained
                if not paired:
                    new_truth = rng.random(n) < base_rate + rise
                noisy_new = new_truth ^ (rng.random(n) < flip)
                result = diff(frame(noisy_base), frame(noisy_new, "t" if paired else "u"), codes=["1.3"])
                fired += bool(worse_modes(result, ["1.3"], threshold=0.05))
            rows.append({"design": "paired" if paired else "unpaired", "true rise (points)": round(100 * rise),
                         "gate fired": f"{fired / sims:.1%}"})
    print(f"{sims} simulated run pairs per row, N={n} tasks, base prevalence {base_rate:.0%}, "
          f"judge noise: each verdict flips with p={flip}")
    print(pd.DataFrame(rows).to_string(index=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=["cost", "gate", "all"], default="all")
    parser.add_argument("--sims", type=int, default=200)
    parser.add_argument("--n", type=int, default=100)
    args = parser.parse_args()
    os.environ.setdefault("MAST_CACHE_DIR", tempfile.mkdtemp())
    if args.part in ("cost", "all"):
        cost_part()
    if args.part in ("gate", "all"):
        gate_part(args.sims, args.n, base_rate=0.3, flip=0.05)


if __name__ == "__main__":
    main()
