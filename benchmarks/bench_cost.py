"""What 1,000 example-sized traces cost online, with prompt caching, through the batch API, and both (issue 14).

    .venv/bin/python benchmarks/bench_cost.py            # 1,000 traces; --traces N for fewer

The traces are the examples in ``data/examples`` (nine, six formats), repeated with a distinct
task suffix each so no two requests are alike. Each of the four runs labels them all through
mast's real path (prompt building, litellm, parsing) against ``FakeLLMServer``:

1. online, the server reporting no cached tokens;
2. online, the server reporting the repeated system prefix as cached (as OpenAI's automatic
   caching does once a prefix was seen; Anthropic's needs mast's ``cache_control`` breakpoint);
3. ``batch_api=True``, no cache;
4. ``batch_api=True`` with the cache.

The token counts come from the fake's reported usage (about 4 characters per token) of the
prompts mast builds, so every run sends the same work. Each run's usage is then priced at
gpt-4.1-mini's and claude-sonnet-4-5's rates from litellm's bundled table (list, cached, batch)
with :func:`mast.judge.pricing.call_cost`. For Claude each run that uses the cache also pays one
cache write of the prefix (125% of input); later writes within the five-minute lifetime are reads.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import mast
from mast.batch import ResultsFile, scan
from mast.batch.inputs import Reloader
from mast.batch.provider_run import arun_provider_batch
from mast.diagnosis import Diagnosis
from mast.judge.backend import LiteLLMBackend
from mast.judge.config import JudgeConfig
from mast.judge.pricing import Prices, call_cost
from mast.testing import FakeLLMServer
from mast.trace import Trace

REPO = Path(__file__).resolve().parent.parent
SERVED_MODEL = "openai/gpt-4.1-mini"
PRICED = {"gpt-4.1-mini": "openai/gpt-4.1-mini", "claude-sonnet-4-5": "anthropic/claude-sonnet-4-5"}


def example_traces(n: int) -> list[Trace]:
    reloader = Reloader()
    base = []
    for item in scan([REPO / "data" / "examples"]):
        if item.error is None and not item.whole_file:
            base.append(item.trace if item.trace is not None else reloader.load(item))
    reloader.close()
    traces = []
    for i in range(n):
        trace = base[i % len(base)]
        traces.append(trace.model_copy(update={"trace_id": f"{trace.trace_id}-{i}", "task": f"{trace.task or ''} (case {i})"}))
    return traces


async def run(traces: list[Trace], *, batch: bool, cache: bool, work: Path) -> tuple[list[Diagnosis], float, int]:
    started = time.perf_counter()
    with FakeLLMServer(prompt_cache=cache) as server:
        options: dict[str, Any] = {"model": SERVED_MODEL, "api_base": server.base_url, "api_key": "fake", "cache": False}
        out = work / f"{'batch' if batch else 'online'}-{'cache' if cache else 'plain'}.jsonl"
        if batch:
            config = JudgeConfig.from_options(**options)
            items = list(scan(traces))
            with ResultsFile(out, overwrite=True) as results:
                done = await arun_provider_batch(items, config, results, poll_interval=0.05)
            diagnoses = [d for d in done.results if d is not None]
        else:
            diagnoses = await mast.aclassify_many(traces, concurrency=32, **options)
        submitted = server.batches_submitted
    return diagnoses, time.perf_counter() - started, submitted


def price(diagnoses: list[Diagnosis], prices: Prices, *, batch: bool, claude: bool) -> float:
    total = 0.0
    prefix = 0
    for d in diagnoses:
        u = d.usage
        total += call_cost(prices, input_tokens=u.input_tokens, output_tokens=u.output_tokens,
                           cached_input_tokens=u.cached_input_tokens, batch=batch)
        prefix = max(prefix, u.cached_input_tokens)
    if claude and prefix:  # one cache write of the prefix per run, at the write premium
        rate_in, _, _, rate_write = prices.rates(batch=batch)
        total += prefix * (rate_write - rate_in)
    return total


async def main() -> None:
    # One event loop for all four runs: litellm keeps its HTTP clients per loop.
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=1000)
    args = parser.parse_args()
    traces = example_traces(args.traces)
    prices = {name: LiteLLMBackend(model).prices() for name, model in PRICED.items()}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for batch, cache in ((False, False), (False, True), (True, False), (True, True)):
            diagnoses, seconds, submitted = await run(traces, batch=batch, cache=cache, work=Path(tmp))
            judged = sum(d.status == "judged" for d in diagnoses)
            tokens_in = sum(d.usage.input_tokens for d in diagnoses)
            tokens_out = sum(d.usage.output_tokens for d in diagnoses)
            cached = sum(d.usage.cached_input_tokens for d in diagnoses)
            costs = {}
            for name, p in prices.items():
                assert p is not None, f"litellm has no price for {name}"
                costs[name] = price(diagnoses, p, batch=batch, claude=name.startswith("claude"))
            label = f"{'batch' if batch else 'online'}{' + cache' if cache else ''}"
            rows.append((label, judged, tokens_in, cached, tokens_out, costs, seconds, submitted))
            print(f"{label}: {judged} judged, {submitted} batches, {seconds:.0f}s", flush=True)
    base = rows[0][5]
    print(f"\n{args.traces} traces from data/examples; tokens as the fake reports them\n")
    print("| run | judged | input tok | of which cached | output tok | gpt-4.1-mini $ | × online | claude-sonnet-4-5 $ | × online |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, judged, tin, cached, tout, costs, _, _ in rows:
        g, c = costs["gpt-4.1-mini"], costs["claude-sonnet-4-5"]
        print(f"| {label} | {judged} | {tin:,} | {cached:,} | {tout:,} | {g:.2f} | {g / base['gpt-4.1-mini']:.3f} "
              f"| {c:.2f} | {c / base['claude-sonnet-4-5']:.3f} |")


if __name__ == "__main__":
    asyncio.run(main())
