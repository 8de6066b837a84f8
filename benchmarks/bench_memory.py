"""Peak memory of ``mast label`` / ``evaluate`` / ``report`` as the corpus grows (issue 16).

    .venv/bin/python benchmarks/bench_memory.py --n 10000 100000        # label, first run and rerun
    .venv/bin/python benchmarks/bench_memory.py --n 100000 --evaluate    # + evaluate/report on its results
    .venv/bin/python benchmarks/bench_memory.py --n 100000 --evaluate --reuse --work DIR   # only evaluate/report

Small traces (one chat transcript of ~4 KB per file, 1,000 files per folder) are generated into a
temporary folder; ``mast label DIR -o results.jsonl --judge detectors`` judges them offline (no
model), then runs again on the same output (every trace resumed). Each command runs in its own
child process and its peak resident set size (``ru_maxrss`` of that child alone) is printed, with
wall time. ``--evaluate`` also runs ``mast evaluate`` (the results as their own gold) and
``mast report`` on the results file of the largest corpus.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

PEAK_RSS = (
    "import resource, subprocess, sys, json, time; t = time.perf_counter(); "
    "rc = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE).returncode; "
    "print(json.dumps({'rc': rc, 'wall_s': time.perf_counter() - t, "
    "'peak_rss_mb': resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))"
)
"""A fresh wrapper per command, so the peak is that command's alone (RUSAGE_CHILDREN keeps a maximum)."""

_WORDS = ("parser", "date", "timezone", "offset", "regex", "test", "fixture", "planner", "coder", "cache",
          "config", "retry", "request", "payload", "schema", "field", "value", "error", "result", "patch")


def make_corpus(root: Path, n: int, *, per_folder: int = 1000) -> int:
    """``n`` chat transcripts of ~4 KB, one per ``.json`` file; returns the bytes written."""
    rng = random.Random(16)
    total = 0
    for i in range(n):
        folder = root / f"part-{i // per_folder:04d}"
        if i % per_folder == 0:
            folder.mkdir(parents=True, exist_ok=True)
        messages: list[dict[str, Any]] = [{"role": "user", "content": f"Task {i}: fix the date parser and test it."}]
        for turn in range(1, 12):
            who = ("planner", "coder", "tester")[turn % 3]
            text = " ".join(rng.choice(_WORDS) for _ in range(50))
            messages.append({"role": "assistant" if who != "planner" else "user", "name": who,
                             "content": f"{who} turn {turn} of run {i}: {text}."})
        blob = orjson.dumps(messages)
        (folder / f"trace-{i:06d}.json").write_bytes(blob)
        total += len(blob)
    return total


def measure(cmd: list[str], env: dict[str, str]) -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", PEAK_RSS, *cmd], capture_output=True, text=True, env=env)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--evaluate", action="store_true", help="evaluate/report on the largest corpus's results")
    parser.add_argument("--work", type=Path, help="keep the files here (default: a temporary folder)")
    parser.add_argument("--reuse", action="store_true",
                        help="with --work: take the results files already there (no labelling), for --evaluate")
    args = parser.parse_args()
    mast = str(Path(sys.executable).parent / "mast")
    with tempfile.TemporaryDirectory(prefix="mast-bench-memory-") as tmp:
        work = args.work or Path(tmp)
        env = {**os.environ, "MAST_CACHE_DIR": str(work / "cache")}
        rows = []
        for n in args.n if not args.reuse else ():
            corpus = work / f"corpus-{n}"
            size = make_corpus(corpus, n) if not corpus.exists() else 0
            out = work / f"results-{n}.jsonl"
            out.unlink(missing_ok=True)
            label = [mast, "label", str(corpus), "-o", str(out), "--judge", "detectors", "--no-progress"]
            first = measure(label, env)
            rerun = measure(label, env)
            lines = sum(1 for _ in out.open("rb"))
            row = {"n": n, "corpus_mb": round(size / 2**20, 1), "results_lines": lines,
                   "results_mb": round(out.stat().st_size / 2**20, 1),
                   "first": first, "rerun": rerun}
            rows.append(row)
            print(json.dumps(row), flush=True)
        if args.evaluate:
            n = max(args.n)
            out = work / f"results-{n}.jsonl"
            page = work / "report.html"
            report = measure([mast, "report", str(out), "-o", str(page)], env)
            report["page_mb"] = round(page.stat().st_size / 2**20, 1) if page.exists() else None
            evaluate = measure([mast, "evaluate", "--pred", str(out), "--gold", str(out), "--n-boot", "0"], env)
            lines = sum(1 for _ in out.open("rb"))
            print(json.dumps({"n": n, "results_lines": lines, "report": report, "evaluate": evaluate}), flush=True)


if __name__ == "__main__":
    main()
