"""Start-up of the CLI: `mast --help` against `mast classify --model ...` answered from the cache.

Issue 33, point 11: a cached classify must not pay for importing litellm (about 4 s of a 6-7 s
start). Each command runs in a fresh interpreter against a FakeLLMServer on 127.0.0.1, with its own
answer cache; the first classify fills it, the next ones are cache hits. Prints the median wall
and CPU seconds of each command and the ratio of a cached classify to `mast --help`, and the cost
of `import litellm` alone for comparison (what every cached run paid before).

    python benchmarks/bench_startup.py [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mast.testing import FakeLLMServer

REPO = Path(__file__).resolve().parent.parent
TRACE = REPO / "data" / "examples" / "ag2-exchange-loop.json"


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _median(argv: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    samples = [_run(argv, env) for _ in range(runs)]
    return statistics.median(s[0] for s in samples), statistics.median(s[1] for s in samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as server:
        env = {**os.environ, "MAST_CACHE_DIR": tmp, "OPENAI_API_KEY": "x", "PYTHONPATH": str(REPO)}
        mast = [sys.executable, "-m", "mast"]
        classify = [*mast, "classify", str(TRACE), "--model", "openai/fake-judge", "--api-base", server.base_url]
        uncached = _run(classify, env)                      # fills the cache (one call)
        rows = {
            "mast --help": _median([*mast, "--help"], env, runs),
            "mast classify --model (cache hit)": _median(classify, env, runs),
            "python -c 'import litellm'": _median([sys.executable, "-c", "import litellm"], env, runs),
        }
        calls = len(server.chat_requests)
    print(f"CPython {sys.version.split()[0]}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, "
          f"median of {runs} runs; server calls in all: {calls}")
    print(f"{'command':<38} {'wall s':>7} {'CPU s':>7}")
    print(f"{'mast classify --model (first: a call)':<38} {uncached[0]:>7.2f} {uncached[1]:>7.2f}")
    for name, (wall, cpu) in rows.items():
        print(f"{name:<38} {wall:>7.2f} {cpu:>7.2f}")
    help_wall, help_cpu = rows["mast --help"]
    hit_wall, hit_cpu = rows["mast classify --model (cache hit)"]
    print(f"cache hit / --help: {hit_wall / help_wall:.2f}x wall, {hit_cpu / help_cpu:.2f}x CPU; "
          f"cache hit - --help: {hit_wall - help_wall:+.2f} s wall (target: within 1.5 s)")


if __name__ == "__main__":
    main()
