"""Pieces several CLI commands share (console, JSON output)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import click
from rich.console import Console

stdout = Console(soft_wrap=True)
stderr = Console(stderr=True, soft_wrap=True)


def write_line(text: str) -> None:
    """Write one line to stdout without rich markup processing."""
    sys.stdout.write(text + "\n")


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``1 call``, ``2 calls``: a count with its noun agreeing."""
    return f"{count} {noun if count == 1 else (plural_form or noun + 's')}"


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
