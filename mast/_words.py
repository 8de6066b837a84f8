"""Small helpers for the words of messages, shared by every layer (the CLI re-exports them)."""

from __future__ import annotations

__all__ = ["plural"]


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``1 call``, ``2 calls``: a count with its noun agreeing.

    Example:
        >>> plural(1, "trace"), plural(2, "batch", "batches")
        ('1 trace', '2 batches')
    """
    return f"{count} {noun if count == 1 else (plural_form or noun + 's')}"
