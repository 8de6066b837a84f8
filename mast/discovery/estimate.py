"""``mast discover --dry-run``: calls, tokens and cost a discovery would take, without calling a model.

Counts are upper bounds where the run's course is not known in advance: every trace is assumed to
fail (and be open-coded), every group of two traces to become a candidate, and the revision round to
re-label the whole gate part.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from mast.discovery._llm import ANSWER_TOKENS_GUESS, load_discover_prompts
from mast.discovery.run import DiscoverOptions, load_corpus, split
from mast.discovery.stages import material_of, windows_of
from mast.errors import UsageError
from mast.judge.budget import price
from mast.judge.config import JudgeConfig
from mast.taxonomy import load_taxonomy
from mast.trace import Trace

EXTRA_MODES_FACTOR = 1.15
"""A gate prompt carries MAST-14 plus the candidates: about this much more than a MAST-14 judgement."""
NAMING_INPUT_TOKENS = 1_500
"""Tokens of one group's notes in a naming call, beside the instructions."""


class StagePlan(BaseModel):
    """What one stage would take."""

    model_config = ConfigDict(extra="forbid")

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    upper_bound: bool = False


class DiscoveryPlan(BaseModel):
    """A dry run of :func:`mast.discover`: nothing was sent."""

    model_config = ConfigDict(extra="forbid")

    traces: int
    discover: int
    gate: int
    stages: dict[str, StagePlan]
    notes: list[str] = []

    @property
    def totals(self) -> StagePlan:
        """Sums over the stages."""
        total = StagePlan(upper_bound=any(s.upper_bound for s in self.stages.values()))
        for stage in self.stages.values():
            total.calls += stage.calls
            total.input_tokens += stage.input_tokens
            total.output_tokens += stage.output_tokens
            total.cost_usd = None if total.cost_usd is None or stage.cost_usd is None else total.cost_usd + stage.cost_usd
        return total


def plan_discovery(paths: Sequence[str | os.PathLike[str] | Trace], *, config: JudgeConfig,
                   results: str | os.PathLike[str] | None = None, options: DiscoverOptions | None = None
                   ) -> DiscoveryPlan:
    """Estimate a discovery run stage by stage (see the module docs for what is an upper bound).

    Raises:
        UsageError: no LLM configured, fewer than 4 traces.
    """
    from mast._sync import run_sync
    from mast.judge import Judge

    options = options or DiscoverOptions()
    if config.kind not in ("llm", "both"):
        raise UsageError("discovery needs an LLM judge: set --model or MAST_MODEL")
    traces, problems = load_corpus(paths)
    if len(traces) < 4:
        raise UsageError(f"discovery needs at least 4 readable traces, found {len(traces)}")
    by_id = {t.trace_id: t for t in traces}
    discover_ids, gate_ids = split(list(by_id), seed=options.split_seed, share=options.discover_share)
    judge = Judge(config)
    run_sync(judge.start())  # sets up the backend, which counts tokens; nothing is sent
    backend = judge.backend
    count = backend.count_tokens
    prompts = load_discover_prompts(load_taxonomy(config.taxonomy))
    done: set[str] = set()
    if results is not None:
        from mast.results import iter_results

        done = {d.trace_id for d in iter_results(results) if d.status == "judged"}

    def book(stage: StagePlan, calls: int, tokens_in: int, tokens_out: int) -> None:
        stage.calls += calls
        stage.input_tokens += tokens_in
        stage.output_tokens += tokens_out
        cost = price(backend, tokens_in, tokens_out)
        stage.cost_usd = None if stage.cost_usd is None or cost is None else stage.cost_usd + cost

    stages: dict[str, StagePlan] = {}
    mast14 = stages["mast14"] = StagePlan()
    for trace in traces:
        if trace.trace_id in done:
            continue
        estimate = judge.estimate(trace)
        book(mast14, 1, estimate.input_tokens, estimate.output_tokens)
    system = count(prompts.open_code)
    naming_system = count(prompts.name_group)
    out = min(ANSWER_TOKENS_GUESS, config.max_output_tokens)
    halves = [("open_coding", discover_ids, "naming")]
    if options.stability:
        halves.append(("stability", gate_ids, "stability"))
    for coding, ids, naming in halves:
        stage = stages.setdefault(coding, StagePlan(upper_bound=True))
        for trace_id in ids:
            for window in windows_of(material_of(by_id[trace_id], config), count, options.window_tokens):
                book(stage, 1, system + window.tokens + 200, out)
        groups = math.ceil(len(ids) / 2)
        book(stages.setdefault(naming, StagePlan(upper_bound=True)), groups, groups * (naming_system + NAMING_INPUT_TOKENS),
             groups * 300)
    gate = stages["gate"] = StagePlan()
    per_gate: list[Any] = [judge.estimate(by_id[t]) for t in gate_ids]
    annotators = 1 if options.gold else 2
    for estimate in per_gate:
        book(gate, annotators, int(annotators * estimate.input_tokens * EXTRA_MODES_FACTOR),
             int(annotators * estimate.output_tokens * EXTRA_MODES_FACTOR))
    revision = stages["revision"] = StagePlan(upper_bound=True)
    revision.calls, revision.input_tokens, revision.output_tokens = gate.calls, gate.input_tokens, gate.output_tokens
    revision.cost_usd = gate.cost_usd
    notes = list(problems)
    if not options.annotators and not options.gold:
        notes.append("gate: one model with two seeds (give --annotators A,B for two models: a stronger test)")
    return DiscoveryPlan(traces=len(traces), discover=len(discover_ids), gate=len(gate_ids), stages=stages, notes=notes)
