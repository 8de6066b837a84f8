"""Rate limits and the spending cap of a batch.

The batch gates the *start* of each trace: it asks the :class:`RateLimiter` for one request and the
trace's estimated tokens before starting, and settles the difference once the trace is done (a
chunked trace makes several calls, a re-ask spends more tokens). Limits are therefore kept on
average over a minute, which is how providers count them.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from decimal import Decimal


@dataclass
class _Bucket:
    """A token bucket: ``capacity`` units refilled evenly over one minute; may go into debt."""

    capacity: float
    stamp: float
    level: float = field(init=False)

    def __post_init__(self) -> None:
        # Start full: like a provider's per-minute window, the first minute may use its whole quota.
        self.level = self.capacity

    def refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.stamp) * self.capacity / 60.0)
        self.stamp = now

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` units are available (0 when they are now)."""
        # A single request larger than the whole quota would never fit: let it through once the
        # bucket is full rather than blocking forever.
        need = min(amount, self.capacity)
        missing = need - self.level
        return 0.0 if missing <= 0 else missing * 60.0 / self.capacity


class RateLimiter:
    """Requests-per-minute and tokens-per-minute limits shared by all workers of a batch.

    Example:
        >>> import asyncio
        >>> limiter = RateLimiter(rpm=600)
        >>> asyncio.run(limiter.acquire(tokens=1000))  # returns at once: the bucket starts full
    """

    def __init__(
        self,
        *,
        rpm: float | None = None,
        tpm: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._clock = clock
        self._sleep = sleep
        self._requests = _Bucket(float(rpm), clock()) if rpm else None
        self._tokens = _Bucket(float(tpm), clock()) if tpm else None
        self._lock = asyncio.Lock()

    @property
    def active(self) -> bool:
        """True when some limit is set."""
        return self._requests is not None or self._tokens is not None

    async def acquire(self, *, requests: int = 1, tokens: int = 0) -> None:
        """Wait until ``requests`` calls and ``tokens`` tokens fit, then take them."""
        if not self.active:
            return
        # One waiter at a time, so the limits are handed out in start order (no starvation).
        async with self._lock:
            while True:
                now = self._clock()
                delay = 0.0
                for bucket, amount in ((self._requests, requests), (self._tokens, tokens)):
                    if bucket is not None:
                        bucket.refill(now)
                        delay = max(delay, bucket.wait_for(amount))
                if delay <= 0:
                    break
                await self._sleep(delay)
            self._take(requests, tokens)

    def settle(self, *, requests: int = 0, tokens: int = 0) -> None:
        """Charge what a finished trace used beyond (or refund below) what it acquired."""
        self._take(requests, tokens)

    def _take(self, requests: float, tokens: float) -> None:
        now = self._clock()
        for bucket, amount in ((self._requests, requests), (self._tokens, tokens)):
            if bucket is not None and amount:
                bucket.refill(now)
                bucket.level = min(bucket.capacity, bucket.level - amount)


class Budget:
    """A spending cap: no new trace starts when spent + in flight + its estimate would pass it.

    Example:
        >>> budget = Budget(1.00)
        >>> budget.try_start(0.40), budget.try_start(0.40), budget.try_start(0.40)
        (True, True, False)
        >>> budget.finish(estimate=0.40, actual=0.10); budget.try_start(0.40)
        True
    """

    def __init__(self, limit_usd: float | None) -> None:
        self.limit_usd = limit_usd
        self.spent_usd = 0.0
        """Dollars spent by finished traces (their estimate when the provider reported no cost)."""
        self.in_flight_usd = 0.0
        """Estimated dollars of the traces running now."""

    def try_start(self, estimate_usd: float) -> bool:
        """Reserve ``estimate_usd`` for a trace about to start; False when it would pass the cap."""
        if self.limit_usd is not None and self.spent_usd + self.in_flight_usd + estimate_usd > self.limit_usd:
            return False
        self.in_flight_usd += estimate_usd
        return True

    def finish(self, *, estimate: float, actual: float | None) -> None:
        """Release a trace's reservation and book what it cost (the estimate when unknown)."""
        self.in_flight_usd = max(0.0, self.in_flight_usd - estimate)
        self.spent_usd += estimate if actual is None else actual


def usd(amount: float) -> str:
    """A budget in dollars with the digits it needs: ``$5.00``, ``$0.01``, ``$0.0001`` (not ``$0.00``).

    >>> usd(5), usd(0.01), usd(0.0001), usd(0.015)
    ('$5.00', '$0.01', '$0.0001', '$0.015')
    """
    text = f"{amount:.2f}"
    if amount and float(text) != amount and abs(amount) < 1:
        exact = format(Decimal(f"{amount:.8f}").normalize(), "f")
        text = exact if Decimal(exact) != 0 else f"{amount:.2g}"
    return f"${text}"
