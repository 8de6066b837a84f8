"""The configured judge (LLM or offline detectors) as a :class:`~mast.batch.runner.BatchJudge`.

One :class:`mast.judge.classify.Judge` serves the whole batch (one backend, one cache). What a trace
will cost before it is sent (dry runs, budgets, token limits) is the judge's own estimate
(:meth:`mast.judge.classify.Judge.estimate`): the prompt is prepared and counted exactly as the
judge would, and the answer is assumed to be of a typical size, since its real length is only
known afterwards.
"""

from __future__ import annotations

from mast.batch.runner import REQUEST_GATE, BatchJudge, Estimate
from mast.diagnosis import Diagnosis, empty_verdicts
from mast.judge.classify import (
    ANSWER_TOKENS,
    NOTE_TOKENS_PER_WINDOW,
    WINDOW_ANSWER_TOKENS,
    Judge,
    judge_notice,
)
from mast.judge.config import JudgeConfig
from mast.judge.protocol import Backend
from mast.trace import Trace

__all__ = ["ANSWER_TOKENS", "NOTE_TOKENS_PER_WINDOW", "WINDOW_ANSWER_TOKENS", "judge_for"]


def judge_for(config: JudgeConfig, *, raise_on_error: bool = False, backend: Backend | None = None) -> BatchJudge:
    """The judge ``config`` describes, ready for a batch (started by the batch in its event loop).

    With ``raise_on_error`` a judge failure raises :class:`~mast.errors.JudgeError` (fail-fast);
    otherwise it comes back as an ``error`` result.

    Raises:
        UsageError: an LLM judge without a model, or an unknown taxonomy.

    ``backend`` replaces the model's own (the provider-batch engine parks calls through one).
    """
    judge = Judge(config, backend=backend)
    adapter = _Adapter(judge, raise_on_error)
    return BatchJudge(
        call=adapter.call,
        info=judge.info,
        estimate=adapter.estimate,
        empty_verdicts=empty_verdicts(judge.taxonomy),
        notice=judge_notice(config),
        start=judge.start,
        close=judge.aclose,
        gated=True,
    )


class _Adapter:
    def __init__(self, judge: Judge, raise_on_error: bool) -> None:
        self.judge = judge
        self.raise_on_error = raise_on_error

    async def call(self, trace: Trace) -> Diagnosis:
        """Judge one trace, holding the batch's :data:`REQUEST_GATE` only while the model is asked."""
        return await self.judge.classify(trace, raise_on_error=self.raise_on_error, gate=REQUEST_GATE.get())

    def estimate(self, trace: Trace) -> Estimate:
        """Tokens and dollars judging ``trace`` is expected to take (0 for the detectors)."""
        value = self.judge.estimate(trace)
        return Estimate(value.input_tokens, value.output_tokens, value.cost_usd)
