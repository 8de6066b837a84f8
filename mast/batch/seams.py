"""What the batch core plugs into: the judge as a batch sees it, the breaker, and the gate on model calls.

Kept apart from :mod:`mast.batch.runner` so that judges and engines (the local runner, the Ray actors)
depend on these small seams, not on the runner itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from mast.diagnosis import Diagnosis, JudgeInfo, ModeVerdict
from mast.trace import Trace

JudgeFn = Callable[[Trace], Awaitable[Diagnosis]]
"""Judge one trace. Raising is fine: the batch turns the error into an ``error`` result."""


@dataclass(frozen=True)
class Estimate:
    """What judging one trace is expected to cost, before any call."""

    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    """``None`` when the model's price is unknown."""


@dataclass
class BatchJudge:
    """A judge as the batch sees it.

    Attributes:
        call: judges one trace.
        info: the judge's identity, written into ``error`` results; results in the output whose
            ``judge`` has the same :func:`judge_fingerprint` are reused on resume.
        estimate: expected tokens and cost of one trace (needed by budgets, token limits, dry runs).
        empty_verdicts: the not-assessed verdicts put into ``error`` results (one per mode).
        notice: a line for the user about this judge (e.g. that no model is configured).
        start: set the judge up inside the batch's event loop (backend, local model server).
        close: release what the judge holds when the batch ends.
        gated: ``call`` holds :data:`REQUEST_GATE` only around its model calls. The batch then
            prepares (renders, redacts, counts) the next traces while ``concurrency`` requests are
            in flight, instead of only once a slot frees.
    """

    call: JudgeFn
    info: JudgeInfo
    estimate: Callable[[Trace], Estimate] | None = None
    empty_verdicts: list[ModeVerdict] = field(default_factory=list)
    notice: str | None = None
    start: Callable[[], Coroutine[Any, Any, None]] | None = None
    close: Callable[[], Coroutine[Any, Any, None]] | None = None
    gated: bool = False


class Breaker(Protocol):
    """Decides, after each judged trace, whether the whole run must stop (a circuit breaker).

    ``record`` sees every result judged this run and the exception behind it when the judge raised
    (``None`` otherwise; an ``error`` result still names the exception type in ``diagnosis.error``).
    It returns why the run must stop (a bad API key, an unknown model: every other trace would fail
    the same way), or ``None`` to go on.
    """

    def record(self, diagnosis: Diagnosis, exc: BaseException | None) -> str | None:
        """Why the run must stop, or ``None``."""


class RunStopped(Exception):
    """The run stopped (a fatal failure elsewhere) before this trace's model call: it counts as not started."""


class _Gate(asyncio.Semaphore):
    """The bound on model calls in flight, which refuses entry once the run has failed.

    Traces prepared ahead wait here; when a fatal failure stops the run they must not call the model
    (every call would fail the same way), so they end as not started and nothing is written for them.
    """

    closed = False

    async def acquire(self) -> Literal[True]:
        await super().acquire()
        if self.closed:
            self.release()
            raise RunStopped("the run stopped before this trace was sent")
        return True


REQUEST_GATE: ContextVar[asyncio.Semaphore | None] = ContextVar("mast_request_gate", default=None)
"""The batch's bound on model calls in flight, seen by a gated judge's ``call`` (tasks inherit it)."""

PREPARE_AHEAD = 2
"""With a gated judge, up to this many times ``concurrency`` traces are started at once: the extra
ones are prepared while the others wait on the provider; model calls in flight stay at ``concurrency``."""
