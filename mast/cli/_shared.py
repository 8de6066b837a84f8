"""Pieces several CLI commands share (console, JSON output)."""

from __future__ import annotations

import sys

from rich.console import Console

stdout = Console(soft_wrap=True)
stderr = Console(stderr=True, soft_wrap=True)


def write_line(text: str) -> None:
    """Write one line to stdout without rich markup processing."""
    sys.stdout.write(text + "\n")


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``1 call``, ``2 calls``: a count with its noun agreeing."""
    return f"{count} {noun if count == 1 else (plural_form or noun + 's')}"
