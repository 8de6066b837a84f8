"""The configured judge (LLM or offline detectors) as a :class:`~mast.batch.runner.BatchJudge`."""

from __future__ import annotations

from functools import partial

from mast.batch.runner import BatchJudge, Estimate
from mast.diagnosis import JudgeInfo, empty_verdicts
from mast.judge.config import JudgeConfig
from mast.taxonomy import load_taxonomy
from mast.trace import Trace


def judge_for(config: JudgeConfig) -> BatchJudge:
    """The judge ``config`` describes, ready for a batch."""
    from mast.judge.classify import aclassify, judge_notice

    taxonomy = load_taxonomy(config.taxonomy)
    return BatchJudge(
        call=partial(_call, aclassify, config),
        info=JudgeInfo(kind=config.kind, model=config.model, taxonomy_version=taxonomy.version, params=config.answer_params()),
        estimate=None,
        empty_verdicts=empty_verdicts(taxonomy),
        notice=judge_notice(config),
    )


async def _call(aclassify, config: JudgeConfig, trace: Trace):  # type: ignore[no-untyped-def]
    return await aclassify(trace, config=config, raise_on_error=False)


def _unused(e: Estimate) -> None:  # pragma: no cover
    pass
