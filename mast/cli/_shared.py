"""Pieces several CLI commands share (console, JSON output)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from typing import Any

import click
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from mast._outputs import terminal_safe
from mast._words import plural

__all__ = ["SafeConsole", "boot_seed_option", "bootstrap_seed", "plural", "stderr", "stdout", "write_line"]

OFF_TERMINAL_WIDTH = 200
"""Columns a table may take when the output is not a terminal (a CI log, a file): rich's default
of 80 cut headers to ``precisi…``; tables are not expanded, so each takes only what its content needs."""


def _width(stream: object) -> int | None:
    """``None`` (rich's own choice: the terminal's size, or ``COLUMNS``) on a terminal, else a wide line."""
    isatty = getattr(stream, "isatty", None)
    if os.environ.get("COLUMNS") or (callable(isatty) and isatty()):
        return None
    return OFF_TERMINAL_WIDTH


class SafeConsole(Console):
    """A rich console that shows control characters in what it prints as escapes (``\\x1b``).

    Trace ids, agent names, file names and error messages come from the traces: an ESC sequence
    among them would clear the screen or set the terminal's title. Every text segment is escaped
    here, at the one place all output passes (tables, progress bars and live displays included);
    the console's own control segments (cursor moves of a progress bar) are left as they are.
    """

    def render_str(self, text: str, **options: Any) -> Text:
        # rich drops BEL, backspace, CR and form feeds from a string as it makes it a Text: escaped
        # first, so they show (``\\x07``) instead of vanishing and joining what was around them.
        return super().render_str(terminal_safe(text, keep_lines=True, keep_backslashes=True), **options)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None and segment.text and not segment.text.isprintable():
                yield Segment(
                    terminal_safe(segment.text, keep_lines=True, keep_backslashes=True), segment.style
                )
            else:
                yield segment


stdout = SafeConsole(soft_wrap=True, width=_width(sys.stdout))
stderr = SafeConsole(stderr=True, soft_wrap=True, width=_width(sys.stderr))


def safe_text(text: str, **options: Any) -> Text:
    """A rich ``Text`` of ``text`` with its control characters shown (``Text`` itself drops some)."""
    return Text(terminal_safe(text, keep_lines=True, keep_backslashes=True), **options)


def write_line(text: str) -> None:
    """Write one line to stdout without rich markup processing, control characters escaped."""
    sys.stdout.write(terminal_safe(text, keep_lines=True, keep_backslashes=True) + "\n")


def check_format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``--format`` / ``MAST_FORMAT`` checked once, before any file is read (not once per file)."""
    if value == "auto":
        return value
    from mast.errors import TraceFormatError
    from mast.normalize import get_format

    try:
        get_format(value)
    except TraceFormatError as exc:
        from_env = ctx.get_parameter_source(param.name or "") is click.core.ParameterSource.ENVIRONMENT
        raise click.BadParameter(
            f"{exc} (or auto){' (from MAST_FORMAT)' if from_env else ''}", ctx=ctx, param=param
        ) from None
    return value


class NameChoice(click.Choice[str]):
    """A choice of a registry's names (engines, sinks), read when first needed: ``--help`` or parsing.

    A plugin's name (an entry point of ``mast.engines``...) is listed and accepted like a built-in one;
    an unknown name is Click's one-line error naming the choices.
    """

    def __init__(self, names: Callable[[], Iterable[str]]) -> None:
        self._names = names
        super().__init__([])

    @property
    def choices(self) -> tuple[str, ...]:
        """The registry's names now."""
        return tuple(self._names())

    @choices.setter
    def choices(self, value: Iterable[str]) -> None:
        """Ignored: the names come from the registry."""


format_option = click.option(
    "--format",
    "format_",
    default="auto",
    show_default=True,
    envvar="MAST_FORMAT",
    callback=check_format,
    help="Source format (see `mast formats`).",
)
"""``--format`` / ``MAST_FORMAT``, the same option on every command that reads traces."""


def boot_seed_option(command: Callable[..., Any]) -> Callable[..., Any]:
    """``--boot-seed``: the bootstrap's seed, named as in ``mast validate``.

    ``--seed`` is the judge's sampling seed in ``label``, ``classify`` and ``validate``; here it is
    still accepted for the bootstrap (hidden, for scripts written before the rename) and passed as
    ``old_seed``: see :func:`bootstrap_seed`.
    """
    command = click.option("--seed", "old_seed", type=int, default=None, hidden=True)(command)
    return click.option(
        "--boot-seed",
        "seed",
        type=int,
        default=0,
        show_default=True,
        help="Seed of the bootstrap (as in mast validate; elsewhere --seed is the judge's sampling seed).",
    )(command)


def bootstrap_seed(seed: int, old_seed: int | None) -> int:
    """The bootstrap seed: ``--boot-seed``, or the older ``--seed`` when that was given."""
    return old_seed if old_seed is not None else seed


def results_path(given: str, *, newest: int = 1) -> list[str]:
    """``given`` as results files: a file as it is; a folder's results files, the ``newest`` last changed.

    ``mast hooks`` writes one results file per judge into a folder per project; ``mast report`` and
    ``mast diff`` take that folder. When it holds more files than asked for, the choice is said on
    stderr, with the way to choose another. A Scout scan folder is a results file of its own; a
    folder of them (``scout scan --scans``) with no ``*.jsonl`` gives its scans.

    Raises:
        UsageError: a folder with fewer results files than asked for.
    """
    from pathlib import Path

    from mast.errors import UsageError
    from mast.results import is_scout_scan, results_files

    if not Path(given).is_dir() or is_scout_scan(given):
        return [given]
    found = results_files(given)
    if not found:
        found = sorted((p for p in Path(given).iterdir() if is_scout_scan(p)),
                       key=lambda p: ((p / "_scan.json").stat().st_mtime_ns, p.name))
    if len(found) < newest:
        what = "no results file (*.jsonl)" if not found else f"only {plural(len(found), 'results file')}"
        raise UsageError(f"{given} holds {what}; pass a results file, a Scout scan or a folder of them")
    chosen = found[-newest:]
    if len(found) > newest:
        names = ", ".join(p.name for p in found)
        picked = " and ".join(p.name for p in chosen)
        stderr.print(terminal_safe(f"mast: {given} holds {len(found)} results files, one per judge ({names}); "
                                   f"reading the last changed: {picked} (pass a file to choose another)"),
                     markup=False, highlight=False)
    return [str(p) for p in chosen]
