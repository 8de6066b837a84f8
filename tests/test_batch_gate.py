"""The gate on model calls in flight: bounded, first come first served, and nothing lost to a cancellation."""

from __future__ import annotations

import asyncio

import pytest

from mast.batch.seams import CallGate, RunStopped


async def _hold(gate: CallGate, name: str, entered: list[str], leave: asyncio.Event) -> None:
    async with gate:
        entered.append(name)
        await leave.wait()


async def _settle() -> None:
    for _ in range(5):  # a handed-over place needs a few loop turns to reach its task
        await asyncio.sleep(0)


def test_at_most_limit_hold_the_gate_and_waiters_enter_in_arrival_order() -> None:
    async def main() -> list[str]:
        gate = CallGate(2)
        entered: list[str] = []
        leave = {name: asyncio.Event() for name in "abcde"}
        tasks = [asyncio.create_task(_hold(gate, name, entered, leave[name])) for name in "abcde"]
        await _settle()
        assert entered == ["a", "b"]
        leave["b"].set()
        await _settle()
        assert entered == ["a", "b", "c"]
        leave["a"].set()
        leave["c"].set()
        await _settle()
        assert entered == ["a", "b", "c", "d", "e"]
        leave["d"].set()
        leave["e"].set()
        await asyncio.gather(*tasks)
        return entered

    assert asyncio.run(main()) == ["a", "b", "c", "d", "e"]


def test_a_cancelled_waiter_gives_up_its_place_and_the_slot_is_not_lost() -> None:
    async def main() -> None:
        gate = CallGate(1)
        entered: list[str] = []
        leave = {name: asyncio.Event() for name in "abc"}
        a = asyncio.create_task(_hold(gate, "a", entered, leave["a"]))
        b = asyncio.create_task(_hold(gate, "b", entered, leave["b"]))
        c = asyncio.create_task(_hold(gate, "c", entered, leave["c"]))
        await _settle()
        b.cancel()  # waiting: it leaves the queue
        await _settle()
        leave["a"].set()
        await _settle()
        assert entered == ["a", "c"]
        leave["c"].set()
        await asyncio.gather(a, c)
        assert b.cancelled()
        # the one place is free again: a newcomer enters at once
        async with gate:
            pass

    asyncio.run(main())


def test_a_waiter_cancelled_after_its_place_was_handed_over_passes_it_on() -> None:
    async def main() -> None:
        gate = CallGate(1)
        entered: list[str] = []
        leave = {name: asyncio.Event() for name in "bc"}
        await gate.__aenter__()
        b = asyncio.create_task(_hold(gate, "b", entered, leave["b"]))
        c = asyncio.create_task(_hold(gate, "c", entered, leave["c"]))
        await _settle()
        # leaving hands the place to b at once; b is cancelled before it runs again
        await gate.__aexit__(None, None, None)
        b.cancel()
        async with asyncio.timeout(5):
            await _settle()
            assert entered == ["c"]
            leave["c"].set()
            await c
        assert b.cancelled()
        async with gate:  # the place came back
            pass

    asyncio.run(main())


def test_a_waiter_cancelled_and_skipped_by_the_leaving_holder_ends_cancelled() -> None:
    async def main() -> None:
        gate = CallGate(1)
        entered: list[str] = []
        leave = asyncio.Event()
        await gate.__aenter__()
        b = asyncio.create_task(_hold(gate, "b", entered, leave))
        await _settle()
        b.cancel()  # b's place is cancelled, but b has not run its handler yet ...
        await gate.__aexit__(None, None, None)  # ... when the holder leaves and skips that place
        await _settle()
        assert b.cancelled() and entered == []
        async with asyncio.timeout(5), gate:  # the place is free
            pass

    asyncio.run(main())


def test_a_closed_gate_refuses_the_waiters_and_frees_their_places() -> None:
    async def main() -> list[BaseException | None]:
        gate = CallGate(1)
        entered: list[str] = []
        leave = {name: asyncio.Event() for name in "abc"}
        tasks = [asyncio.create_task(_hold(gate, name, entered, leave[name])) for name in "abc"]
        await _settle()
        gate.closed = True
        leave["a"].set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert entered == ["a"]
        return [r if isinstance(r, BaseException) else None for r in results]

    first, *rest = asyncio.run(main())
    assert first is None
    assert all(isinstance(r, RunStopped) for r in rest)


def test_a_gate_without_room_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        CallGate(0)
