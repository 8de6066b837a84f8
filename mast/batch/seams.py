"""What the batch core plugs into: the judge as a batch sees it, the breaker, and the gate on model calls.

The judge is anything that satisfies :class:`~mast.batch.judges.BatchJudge` (a :class:`mast.judge.Judge`
or a :class:`mast.judge.jury.Jury` as it is, or a plain function through
:class:`~mast.batch.judges.FunctionJudge`).

Kept apart from :mod:`mast.batch.runner` so that judges and engines (the local runner, the Ray actors)
depend on these small seams, not on the runner itself.
"""

from __future__ import annotations

import asyncio
from contextvars import ContextVar
from typing import Literal, Protocol

from mast.batch.judges import BatchJudge, JudgeFn
from mast.diagnosis import Diagnosis
from mast.judge.budget import CostEstimate

__all__ = ["PREPARE_AHEAD", "REQUEST_GATE", "BatchJudge", "Breaker", "Estimate", "JudgeFn", "RunStopped"]

Estimate = CostEstimate
"""What judging one trace is expected to cost, before any call (the judge's own estimate)."""


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
"""The batch's bound on model calls in flight, given to the judge's ``classify`` as its gate (tasks inherit it)."""

PREPARE_AHEAD = 2
"""Up to this many times ``concurrency`` traces are started at once: the extra
ones are prepared while the others wait on the provider; model calls in flight stay at ``concurrency``."""
