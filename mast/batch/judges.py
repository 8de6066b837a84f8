"""The configured judge (LLM or offline detectors) as a :class:`~mast.batch.runner.BatchJudge`.

One :class:`mast.judge.classify.Judge` serves the whole batch (one backend, one cache). This module
also estimates what a trace will cost before it is sent, for dry runs, budgets and token limits: the
prompt is prepared and counted exactly as the judge would, and the answer is assumed to be of a
typical size (:data:`ANSWER_TOKENS`), since its real length is only known afterwards.
"""

from __future__ import annotations

import math
from typing import Any

from mast.batch.runner import BatchJudge, Estimate
from mast.diagnosis import Diagnosis, JudgeInfo, empty_verdicts
from mast.judge.config import JudgeConfig
from mast.trace import Trace

ANSWER_TOKENS = 1_500
"""Typical tokens of a full diagnosis answer (14 verdicts with evidence and a summary)."""
WINDOW_ANSWER_TOKENS = 600
"""Typical tokens of one window's findings in the chunked strategy."""
NOTE_TOKENS_PER_WINDOW = 200
"""Typical tokens one window's findings add to the aggregation prompt."""


def judge_for(config: JudgeConfig, *, raise_on_error: bool = False) -> BatchJudge:
    """The judge ``config`` describes, ready for a batch (started by the batch in its event loop).

    With ``raise_on_error`` a judge failure raises :class:`~mast.errors.JudgeError` (fail-fast);
    otherwise it comes back as an ``error`` result.

    Raises:
        UsageError: an LLM judge without a model, or an unknown taxonomy.
    """
    from mast.judge.classify import Judge, judge_notice

    judge = Judge(config)
    adapter = _Adapter(judge, raise_on_error)
    return BatchJudge(
        call=adapter.call,
        info=adapter.info(),
        estimate=adapter.estimate,
        empty_verdicts=empty_verdicts(judge.taxonomy),
        notice=judge_notice(config),
        start=adapter.start,
        close=judge.aclose,
    )


class _Adapter:
    def __init__(self, judge: Any, raise_on_error: bool) -> None:
        self.judge = judge
        self.config: JudgeConfig = judge.config
        self.raise_on_error = raise_on_error

    async def start(self) -> None:
        await self.judge.start()

    async def call(self, trace: Trace) -> Diagnosis:
        diagnosis: Diagnosis = await self.judge.classify(trace, raise_on_error=self.raise_on_error)
        return diagnosis

    def info(self) -> JudgeInfo:
        """What every result of this judge records as ``judge`` (before per-trace details)."""
        public = getattr(self.judge, "info", None)
        if isinstance(public, JudgeInfo):
            return public
        if self.config.kind == "detectors":
            from mast.judge.detectors import detectors_diagnosis

            # The detectors describe themselves in their results; an empty trace costs nothing.
            return detectors_diagnosis(Trace(trace_id="-"), self.judge.taxonomy).judge
        info: JudgeInfo = self.judge._judge_info(self.config.kind, strategy=None, mode=None)
        return info

    def estimate(self, trace: Trace) -> Estimate:
        """Tokens and dollars judging ``trace`` is expected to take (0 for the detectors)."""
        public = getattr(self.judge, "estimate", None)
        if callable(public):
            value = public(trace)
            return Estimate(value.input_tokens, value.output_tokens, value.cost_usd)
        if self.config.kind == "detectors":
            return Estimate(0, 0, 0.0)
        return _estimate_llm(self.judge, trace)


def _estimate_llm(judge: Any, trace: Trace) -> Estimate:
    """Mirror of the judge's single/chunked decision, counting tokens the same way."""
    from mast.judge.chunking import Window, WindowTooSmall, plan_windows
    from mast.judge.classify import (
        CONTEXT_SAFETY,
        DEFAULT_CONTEXT_WINDOW,
        MESSAGE_OVERHEAD_TOKENS,
        MIN_WINDOW_TOKENS,
    )
    from mast.judge.material import prepare
    from mast.judge.prompt import choose_fence

    config: JudgeConfig = judge.config
    backend = judge.backend
    # Detector hints are left out: they add at most a few hundred tokens and cost CPU to compute.
    material = prepare(trace, redact=config.redact, redact_ips=config.redact_ips)
    fence = choose_fence(*material.all_text())

    def tokens(messages: list[dict[str, Any]]) -> int:
        return sum(backend.count_tokens(str(m.get("content") or "")) + MESSAGE_OVERHEAD_TOKENS for m in messages)

    out_cap = config.max_output_tokens
    answer = min(ANSWER_TOKENS, out_cap)
    single = tokens(judge._single_messages(material, fence))
    context = backend.context_window() or DEFAULT_CONTEXT_WINDOW
    limit = int(context * CONTEXT_SAFETY)
    if single + out_cap <= limit:
        return Estimate(single, answer, _price(backend, single, answer))
    frame = tokens(judge._window_messages(material, fence, Window(first=0, last=0, text="", tokens=0), 1, 1))
    room = limit - out_cap - frame
    try:
        if room < MIN_WINDOW_TOKENS:
            raise WindowTooSmall("no room")
        windows = plan_windows(material.blocks, backend.count_tokens, budget=room, overlap_tokens=room // 8)
    except WindowTooSmall:
        return Estimate(0, 0, 0.0)  # unjudgeable with this model: nothing will be sent
    aggregate = tokens(judge._aggregate_messages(material, "", len(windows))) + NOTE_TOKENS_PER_WINDOW * len(windows)
    input_tokens = sum(frame + w.tokens for w in windows) + aggregate
    output_tokens = len(windows) * min(WINDOW_ANSWER_TOKENS, out_cap) + answer
    return Estimate(input_tokens, output_tokens, _price(backend, input_tokens, output_tokens))


def _price(backend: Any, input_tokens: int, output_tokens: int) -> float | None:
    """Dollars for this many tokens from the backend's price table; ``None`` when it cannot say."""
    if getattr(backend, "free", False):
        return 0.0
    estimate_cost = getattr(backend, "estimate_cost", None)
    if estimate_cost is None:
        return None
    cost = estimate_cost(input_tokens, output_tokens)
    return None if cost is None or math.isnan(cost) else float(cost)
