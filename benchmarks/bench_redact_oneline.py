"""Seconds per megabyte of redaction and JSON repair on adversarial one-line text, 256 KB to 4 MB (issue 34).

Run: .venv/bin/python benchmarks/bench_redact_oneline.py [--sizes 256,1024,4096] [--only SUBSTRING]

The shapes are tests/test_redact_oneline.py's (the test checks the ratio of two sizes; this prints
the time). For each shape and size (KB): the CPU time (the faster of 2 runs), seconds per MB, and
the ratio of the largest size to the smallest over their size ratio (1.0 when linear, 16 for a
quadratic rule over 256 KB -> 4 MB). The target is at most 2 s/MB at every size.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from test_redact_oneline import ONE_LINE_SHAPES, REPLIES  # noqa: E402 (one list of shapes, the test's)

from mast.judge.schema import AnswerInvalid, extract_json  # noqa: E402
from mast.redact import Redactor  # noqa: E402


def cpu(function: Callable[[str], Any], text: str) -> float:
    times = []
    for _ in range(2):
        start = time.process_time()
        try:
            function(text)
        except AnswerInvalid:
            pass
        times.append(time.process_time() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="256,1024,4096", help="sizes in KB")
    parser.add_argument("--only", default="")
    args = parser.parse_args()
    sizes = [int(s) * 1024 for s in args.sizes.split(",")]
    redactor = Redactor(ips=True)
    redactor.redact("warm up: api_key=AbCdEf0123456789XyZ 1-415-555-0132")
    work = [(f"redact: {n}", redactor.redact, u) for n, u in ONE_LINE_SHAPES.items()]
    work += [(f"repair: {n}", extract_json, u) for n, u in REPLIES.items()]
    print(f"{'shape':58} " + " ".join(f"{s // 1024:>6} KB s/MB" for s in sizes) + "  growth")
    worst = 0.0
    for name, function, unit in work:
        if args.only not in name:
            continue
        per_mb = []
        seconds = []
        for size in sizes:
            text = (unit * (size // len(unit) + 1))[:size]
            took = cpu(function, text)
            seconds.append(took)
            per_mb.append(took / (size / 2**20))
        growth = (seconds[-1] / max(seconds[0], 1e-4)) / (sizes[-1] / sizes[0])
        worst = max(worst, *per_mb)
        print(f"{name[:58]:58} " + " ".join(f"{v:>14.3f}" for v in per_mb) + f"  x{growth:.2f}", flush=True)
    print(f"worst: {worst:.3f} s/MB (target 2 s/MB)")


if __name__ == "__main__":
    main()
