"""A :class:`~mast.judge.jury.Jury` (several models or samples per trace) as a batch judge.

The batch loop is the same as for one judge: the jury's ``classify`` is the call, its ``info`` (jurors,
reducer, quorum, each juror's answer parameters) is what resume compares, and the batch's request
gate bounds each juror's model calls, so ``--concurrency`` still counts requests in flight.
"""

from __future__ import annotations

from mast.batch.runner import REQUEST_GATE, BatchJudge, Estimate
from mast.diagnosis import Diagnosis, empty_verdicts
from mast.judge.classify import judge_notice
from mast.judge.config import JudgeConfig
from mast.judge.jury import Jury
from mast.trace import Trace

__all__ = ["jury_for"]


def jury_for(config: JudgeConfig, *, raise_on_error: bool = False) -> BatchJudge:
    """The jury ``config`` describes, ready for a batch.

    Raises:
        UsageError: as :class:`~mast.judge.jury.Jury`.
    """
    jury = Jury(config)

    async def call(trace: Trace) -> Diagnosis:
        return await jury.classify(trace, raise_on_error=raise_on_error, gate=REQUEST_GATE.get())

    def estimate(trace: Trace) -> Estimate:
        value = jury.estimate(trace)
        return Estimate(value.input_tokens, value.output_tokens, value.cost_usd)

    return BatchJudge(
        call=call,
        info=jury.info,
        estimate=estimate,
        empty_verdicts=empty_verdicts(jury.taxonomy),
        notice=judge_notice(config) if not config.jury else None,
        start=jury.start,
        close=jury.aclose,
        gated=True,
    )
