"""What a batch needs of a judge (:class:`BatchJudge`), which :class:`mast.judge.Judge` satisfies as it is.

One :class:`~mast.judge.Judge` serves the whole batch (one backend, one cache). The batch starts it
in its own event loop, asks it for each trace (holding the batch's request gate only around the
model calls, so the next traces are prepared meanwhile), and closes it at the end. What a trace will
cost before it is sent (dry runs, budgets, token limits) is the judge's own estimate
(:meth:`mast.judge.Judge.estimate`): the prompt is prepared and counted exactly as the judge would,
and the answer is assumed to be of a typical size, since its real length is only known afterwards.
The ``judge`` a result records, and resume compares, is the judge's own :attr:`~BatchJudge.info`.

A plain ``async (trace) -> Diagnosis`` function becomes a batch judge with :class:`FunctionJudge`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from mast.diagnosis import Diagnosis, JudgeInfo
from mast.judge.budget import CostEstimate
from mast.judge.classify import Judge
from mast.judge.config import JudgeConfig
from mast.judge.strategy import Gate
from mast.taxonomy import Taxonomy
from mast.trace import Trace

__all__ = ["BatchJudge", "FunctionJudge", "JudgeFn", "configured_judge", "judge_for"]

JudgeFn = Callable[[Trace], Awaitable[Diagnosis]]
"""Judge one trace. Raising is fine: the batch turns the error into an ``error`` result."""


@runtime_checkable
class BatchJudge(Protocol):
    """A judge as the batch sees it; :class:`mast.judge.Judge` is one."""

    taxonomy: Taxonomy
    """The modes every result has a verdict for (``error`` results: all not assessed)."""

    @property
    def info(self) -> JudgeInfo:
        """The judge's identity, written into every result it makes and into ``error`` results.

        Results in the output whose ``judge`` has the same :func:`~mast.batch.runner.judge_fingerprint`
        are reused on resume.
        """
        ...

    async def start(self) -> None:
        """Set up inside the batch's event loop (backend, local model server)."""
        ...

    async def aclose(self) -> None:
        """Release what the judge holds when the batch ends."""
        ...

    async def classify(self, trace: Trace, *, raise_on_error: bool = True, gate: Gate | None = None) -> Diagnosis:
        """Judge one trace, entering ``gate`` only around the calls to the model."""
        ...

    def estimate(self, trace: Trace) -> CostEstimate:
        """Expected tokens and dollars of one trace, before any call (``cost_usd=None``: no price known)."""
        ...


def judge_for(config: JudgeConfig) -> Judge:
    """The judge ``config`` describes, ready for a batch (started by the batch in its event loop).

    Raises:
        UsageError: an LLM judge without a model, or an unknown taxonomy.
    """
    return Judge(config)


def configured_judge(config: JudgeConfig) -> BatchJudge:
    """The judge ``config`` describes, for a batch (:func:`judge_for`), or its jury.

    Raises:
        UsageError: an LLM judge without a model, or an unknown taxonomy.
    """
    from mast.judge.jury import Jury, is_jury

    if is_jury(config):  # several models or samples per trace: the jury is a batch judge as it is
        return Jury(config)
    return judge_for(config)


class FunctionJudge:
    """``fn`` as a batch judge; its identity, estimates and lifecycle are those of ``like``.

    ``fn`` is awaited inside the request gate as a whole (it may call a model at any point).
    """

    def __init__(self, fn: JudgeFn, like: BatchJudge) -> None:
        self.fn = fn
        self.like = like
        self.taxonomy = like.taxonomy

    @property
    def info(self) -> JudgeInfo:
        """The identity of ``like``."""
        return self.like.info

    async def start(self) -> None:
        """Start ``like`` (``fn`` may use it)."""
        await self.like.start()

    async def aclose(self) -> None:
        """Close ``like``."""
        await self.like.aclose()

    async def classify(self, trace: Trace, *, raise_on_error: bool = True, gate: Gate | None = None) -> Diagnosis:
        """``await fn(trace)`` inside ``gate``; its exceptions propagate (the batch makes them ``error`` results)."""
        async with gate if gate is not None else contextlib.nullcontext():
            return await self.fn(trace)

    def estimate(self, trace: Trace) -> CostEstimate:
        """The estimate of ``like``."""
        return self.like.estimate(trace)
