"""Calls and tokens per trace of a `mast discover` run, beside AdaMAST's defaults (issue 29).

    .venv/bin/python benchmarks/bench_discover.py                 # 60 SRE-like traces of ~40 steps
    .venv/bin/python benchmarks/bench_discover.py --traces 100 --steps 80

The corpus is the planted SRE corpus of the tests (tests/_discover_fake.py: wrong namespace in half
the traces, a stale metric, a skipped approval, a one-off), with filler steps of realistic size so
the traces are several thousand tokens long; the scripted fake model answers every prompt. Token
counts are the fake's estimates (4 characters per token) for a priced model name, so costs are
litellm's list prices for that model. What is printed: calls, input and output tokens per stage,
per trace, and the share of each trace's characters the open coder read (all of it, in windows).
A second run of the same command checks that a rerun makes no call.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

MODEL = "openai/gpt-4o-mini"
"""Priced in litellm's table, answered by the fake server."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--traces", type=int, default=60)
    parser.add_argument("--steps", type=int, default=40, help="filler steps per trace (besides the planted ones)")
    parser.add_argument("--window-tokens", type=int, default=6000)
    args = parser.parse_args()

    from _discover_fake import Scripted, write_corpus

    from mast.discovery import DiscoverOptions, discover
    from mast.testing import FakeLLMServer

    root = Path(tempfile.mkdtemp(prefix="bench-discover-"))
    os.environ["MAST_CACHE_DIR"] = str(root / "cache")
    corpus = write_corpus(root / "traces", n=args.traces, filler=args.steps)
    # Filler of realistic size: each filler step becomes a ~600-character tool-style output.
    for path in corpus.glob("*.json"):
        messages = json.loads(path.read_text())
        for message in messages:
            if message["content"].startswith(("Checking", "Reading", "Looking", "Listing")):
                message["content"] += " " + ("pod api-7f9c ready 1/1 restarts 0 age 3d node ip-10-0-1-17; " * 9)
        path.write_text(json.dumps(messages))
    chars = sum(len(p.read_text()) for p in corpus.glob("*.json"))
    options = DiscoverOptions(annotators=(MODEL, "openai/gpt-4o"), window_tokens=args.window_tokens)
    with FakeLLMServer(responder=Scripted(b_model="gpt-4o")) as server:
        started = time.perf_counter()
        result = discover([corpus], root / "out", model=MODEL, api_base=server.base_url, api_key="x", options=options)
        wall = time.perf_counter() - started
        first = len(server.chat_requests)
        discover([corpus], root / "out", model=MODEL, api_base=server.base_url, api_key="x", options=options)
        rerun = len(server.chat_requests) - first
    m = result.manifest
    n = m["traces"]
    print(f"{n} traces, {chars / n:,.0f} characters each on average; wall {wall:.1f} s against the fake (latency 0)")
    print(f"{'stage':<12} {'calls':>6} {'input tok':>10} {'output tok':>10} {'calls/trace':>11} {'tok/trace':>10}")
    for name, stage in m["stages"].items():
        print(f"{name:<12} {stage['calls']:>6} {stage['input_tokens']:>10,} {stage['output_tokens']:>10,} "
              f"{stage['calls'] / n:>11.2f} {(stage['input_tokens'] + stage['output_tokens']) / n:>10,.0f}")
    t = m["totals"]
    print(f"{'total':<12} {t['calls']:>6} {t['input_tokens']:>10,} {t['output_tokens']:>10,} {t['calls'] / n:>11.2f} "
          f"{(t['input_tokens'] + t['output_tokens']) / n:>10,.0f}   cost ${t['cost_usd']}")
    coding = m["open_coding"]["open_coding"]
    print(f"open coding: {coding['open_coded']} traces in {coding['windows']} windows: every step read")
    print("accepted:", [(c.code, c.name) for c in result.accepted], "| rerun calls:", rerun)
    print("AdaMAST defaults:", json.dumps(m["adamast_defaults"]))


if __name__ == "__main__":
    main()
