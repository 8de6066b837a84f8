"""What the batch core plugs into: the judge as a batch sees it, the breaker, and the gate on model calls.

The judge is anything that satisfies :class:`~mast.batch.judges.BatchJudge` (a :class:`mast.judge.Judge`
or a :class:`mast.judge.jury.Jury` as it is, or a plain function through
:class:`~mast.batch.judges.FunctionJudge`).

Kept apart from :mod:`mast.batch.runner` so that judges and engines (the local runner, the Ray actors)
depend on these small seams, not on the runner itself.
"""

from __future__ import annotations

import asyncio
from collections import deque
from contextvars import ContextVar
from typing import Protocol

from mast.batch.judges import BatchJudge, JudgeFn
from mast.diagnosis import Diagnosis
from mast.judge.budget import CostEstimate

__all__ = ["PREPARE_AHEAD", "REQUEST_GATE", "BatchJudge", "Breaker", "CallGate", "Estimate", "JudgeFn", "RunStopped"]

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


class CallGate:
    """The bound on model calls in flight: at most ``limit`` holders, the others enter in arrival order.

    Hundreds of traces prepared ahead wait here. ``asyncio.Semaphore`` (3.11) checks every waiter on
    each entry, which made the wait quadratic: 12 % of a judge actor's CPU with 128 waiting (py-spy).
    Here a leaving holder hands its place straight to the first waiter, so entry and exit cost the
    same however many wait.

    Once ``closed`` (a fatal failure stopped the run) entry is refused: traces prepared ahead must not
    call the model (every call would fail the same way), so they end as not started.
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("a gate needs room for at least one call")
        self.closed = False
        self._limit = limit
        self._free = limit
        self._waiting: deque[asyncio.Future[None]] = deque()

    async def __aenter__(self) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
        else:
            place: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiting.append(place)
            try:
                await place  # done: a holder left and handed its place over (``_free`` unchanged)
            except asyncio.CancelledError:
                if place.done() and not place.cancelled():
                    self._leave()  # handed over, then cancelled before it ran: pass the place on
                elif place in self._waiting:  # not yet skipped by a leaving holder
                    self._waiting.remove(place)
                raise
        if self.closed:
            self._leave()
            raise RunStopped("the run stopped before this trace was sent")

    @property
    def holders(self) -> int:
        """Calls in flight now (entered, not yet left)."""
        return self._limit - self._free

    async def __aexit__(self, *exc: object) -> None:
        self._leave()

    def _leave(self) -> None:
        while self._waiting:
            place = self._waiting.popleft()
            if not place.done():  # a cancelled waiter's place is skipped
                place.set_result(None)
                return
        self._free += 1


REQUEST_GATE: ContextVar[CallGate | None] = ContextVar("mast_request_gate", default=None)
"""The batch's bound on model calls in flight, given to the judge's ``classify`` as its gate (tasks inherit it)."""

PREPARE_AHEAD = 2
"""Up to this many times ``concurrency`` traces are started at once: the extra
ones are prepared while the others wait on the provider; model calls in flight stay at ``concurrency``."""
