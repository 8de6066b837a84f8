"""Pieces several CLI commands share (console, JSON output)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import click
from rich.console import Console

from mast._words import plural

__all__ = ["boot_seed_option", "bootstrap_seed", "plural", "stderr", "stdout", "write_line"]

OFF_TERMINAL_WIDTH = 200
"""Columns a table may take when the output is not a terminal (a CI log, a file): rich's default
of 80 cut headers to ``precisi…``; tables are not expanded, so each takes only what its content needs."""


def _width(stream: object) -> int | None:
    """``None`` (rich's own choice: the terminal's size, or ``COLUMNS``) on a terminal, else a wide line."""
    isatty = getattr(stream, "isatty", None)
    if os.environ.get("COLUMNS") or (callable(isatty) and isatty()):
        return None
    return OFF_TERMINAL_WIDTH


stdout = Console(soft_wrap=True, width=_width(sys.stdout))
stderr = Console(stderr=True, soft_wrap=True, width=_width(sys.stderr))


def write_line(text: str) -> None:
    """Write one line to stdout without rich markup processing."""
    sys.stdout.write(text + "\n")



def boot_seed_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--boot-seed``: the bootstrap's seed, named as in ``mast validate``.

    ``--seed`` is the judge's sampling seed in ``label``, ``classify`` and ``validate``; here it is
    still accepted for the bootstrap (hidden, for scripts written before the rename) and passed as
    ``old_seed``: see :func:`bootstrap_seed`.
    """
    command = click.option("--seed", "old_seed", type=int, default=None, hidden=True)(command)
    return click.option("--boot-seed", "seed", type=int, default=0, show_default=True,
                        help="Seed of the bootstrap (as in mast validate; elsewhere --seed is the judge's "
                             "sampling seed).")(command)


def bootstrap_seed(seed: int, old_seed: int | None) -> int:
    """The bootstrap seed: ``--boot-seed``, or the older ``--seed`` when that was given."""
    return old_seed if old_seed is not None else seed
