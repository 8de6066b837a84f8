"""Split a transcript too long for one call into overlapping windows of whole steps.

Windows never cut a step: a step is in a window whole or not at all. Consecutive windows share up
to :data:`OVERLAP_MAX_STEPS` steps (within an overlap token budget) so a failure on a window edge is
seen with its context. A single step larger than a window cannot be judged within the limits; the
caller turns :class:`WindowTooSmall` into an ``unjudgeable`` result with its reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

OVERLAP_MAX_STEPS = 3
"""Most steps two consecutive windows share."""


@dataclass(frozen=True)
class Window:
    """Consecutive steps judged in one call."""

    first: int
    """Index of the first step."""
    last: int
    """Index of the last step."""
    text: str
    """The steps' blocks, joined."""
    tokens: int
    """Tokens of :attr:`text`."""


class WindowTooSmall(Exception):
    """A step does not fit in a window; the message says which and by how much."""


def plan_windows(
    blocks: Sequence[tuple[int, str]],
    count: Callable[[str], int],
    *,
    budget: int,
    overlap_tokens: int,
) -> list[Window]:
    """Greedy windows of whole steps, each at most ``budget`` tokens.

    Args:
        blocks: ``(step index, block text)`` in order.
        count: token counter.
        budget: most tokens of step text per window.
        overlap_tokens: most tokens two consecutive windows share.

    Raises:
        WindowTooSmall: a single step needs more than ``budget`` tokens.
    """
    sizes = [count(text) + 1 for _, text in blocks]  # +1: the newline joining blocks
    windows: list[Window] = []
    start = 0
    while start < len(blocks):
        end, total = start, 0
        while end < len(blocks) and total + sizes[end] <= budget:
            total += sizes[end]
            end += 1
        if end == start:
            step = blocks[start][0]
            raise WindowTooSmall(
                f"step S{step} alone needs {sizes[start]} tokens, more than the {budget} tokens a window can hold"
            )
        windows.append(
            Window(
                first=blocks[start][0],
                last=blocks[end - 1][0],
                text="\n".join(text for _, text in blocks[start:end]),
                tokens=total,
            )
        )
        if end >= len(blocks):
            break
        shared, back = 0, 0
        # Always move forward: a window never repeats every step of the previous one.
        while back < min(OVERLAP_MAX_STEPS, end - start - 1) and shared + sizes[end - 1 - back] <= overlap_tokens:
            shared += sizes[end - 1 - back]
            back += 1
        start = end - back
    return windows
