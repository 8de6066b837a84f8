"""Synchronisation helpers for tests that need requests to overlap, whatever the machine's load."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from mast.testing import FakeLLMServer, Reply

Answer = Reply | str | dict[str, Any] | None


def hold_until_in_flight(
    server: FakeLLMServer, count: int, then: Callable[[dict[str, Any]], Answer] | None = None, *, limit: float = 60.0
) -> Callable[[dict[str, Any]], Awaitable[Answer]]:
    """A responder that holds every answer until ``count`` requests are in flight at once, then answers
    as ``then`` would (the server's default answer when ``None``).

    Tests that check overlap used to rely on a latency being longer than the time the client needs to
    send its next requests; on a busy machine it is not. Holding the answers makes the overlap an event
    the test waits for. ``limit`` (seconds from the first request) bounds the wait, so a client that
    never overlaps fails the test's assertion instead of hanging it.
    """
    deadline: list[float] = []

    async def responder(body: dict[str, Any]) -> Answer:
        if not deadline:
            deadline.append(time.monotonic() + limit)
        while server.max_in_flight < count and time.monotonic() < deadline[0]:
            await asyncio.sleep(0.01)
        return then(body) if then is not None else None

    return responder
