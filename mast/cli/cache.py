"""``mast cache info|clear``: the on-disk judge cache."""

from __future__ import annotations

import click

from mast.cli._shared import stdout
from mast.judge.cache import JudgeCache


@click.group("cache")
def command() -> None:
    """Inspect or empty the judge cache (MAST_CACHE_DIR, else the per-user cache folder)."""


@command.command("info")
def info() -> None:
    """Show where the cache is, how many answers it holds and its size."""
    details = JudgeCache().info()
    stdout.print(
        f"{details.path}: {details.entries} cached judgements, {details.size_bytes / 1_048_576:.1f} MiB",
        markup=False,
        highlight=False,
    )


@command.command("clear")
def clear() -> None:
    """Delete every cached judgement."""
    cache = JudgeCache()
    removed = cache.clear()
    stdout.print(f"{cache.path}: {removed} cached judgements removed", markup=False, highlight=False)
