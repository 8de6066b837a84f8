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

__all__ = [
    "EnvVarError",
    "SafeConsole",
    "boot_seed_option",
    "bootstrap_seed",
    "env_error",
    "given_as",
    "plural",
    "stderr",
    "stdout",
    "write_line",
]

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


class EnvVarError(click.ClickException):
    """A bad value of an environment variable bound to an option: one line naming the variable.

    click's own message names the flag (``Invalid value for '--concurrency'``) and shows the usage,
    though the user never typed the flag; see :func:`env_error`.
    """

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(terminal_safe(f"mast: {self.format_message()}"), err=True, file=file)


def _variable(param: click.Parameter, ctx: click.Context) -> tuple[str, str] | None:
    """The variable (and its value) an option's value came from, as click picks it: the first set one."""
    names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar or ())
    for name in names:
        raw = os.environ.get(name)
        if raw:
            return name, raw
    return None


def _variable_message(name: str, raw: str, kind: click.ParamType[Any], exc: click.BadParameter) -> str:
    """The reason ``raw`` is refused, said by mast._env's parsers where one mirrors the option's type."""
    from mast._env import parse_bool, parse_number
    from mast.errors import UsageError

    try:
        if isinstance(kind, click.types.BoolParamType):
            parse_bool(name, raw)
        elif isinstance(kind, (click.types.IntParamType, click.types.FloatParamType)):
            parse_number(
                name,
                raw,
                int if isinstance(kind, click.types.IntParamType) else float,
                minimum=getattr(kind, "min", None),
                min_open=getattr(kind, "min_open", False),
                maximum=getattr(kind, "max", None),
                max_open=getattr(kind, "max_open", False),
            )
        elif isinstance(kind, click.Choice):
            return f"{name}={raw!r} is not one of {', '.join(str(c) for c in kind.choices)}"
    except UsageError as refused:
        return str(refused)
    # A check of the option's own (a callback, a path that must exist, a rule the parsers above do not know).
    return f"{name}={raw!r}: {exc.message}"


def env_error(exc: click.BadParameter) -> EnvVarError | None:
    """``exc`` said of the variable its value came from, ``None`` when the value was given otherwise.

    One mechanism for every option bound to a variable (``envvar=``): the main group calls it on
    each refused value, so ``MAST_CONCURRENCY=abc`` reads ``MAST_CONCURRENCY='abc' is not a whole
    number ...``, never a message about a ``--concurrency`` flag nobody typed.
    """
    param, ctx = exc.param, exc.ctx
    if not isinstance(param, click.Option) or ctx is None or not param.name:
        return None
    if ctx.get_parameter_source(param.name) is not click.core.ParameterSource.ENVIRONMENT:
        return None
    bound = _variable(param, ctx)
    if bound is None:
        return None
    return EnvVarError(_variable_message(*bound, param.type, exc))


def given_as(ctx: click.Context, name: str) -> str:
    """How the user gave option ``name``: its variable when the value came from there, else its flag.

    For a value checked after parsing (``--fail-on`` needs the taxonomy), so the error names what the
    user wrote.
    """
    param = next(p for p in ctx.command.params if p.name == name)
    if ctx.get_parameter_source(name) is click.core.ParameterSource.ENVIRONMENT:
        bound = _variable(param, ctx)
        if bound is not None:
            return bound[0]
    return param.opts[-1] if param.opts else name


def check_format(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """``--format`` / ``MAST_FORMAT`` checked once, before any file is read (not once per file)."""
    if value == "auto":
        return value
    from mast.errors import TraceFormatError
    from mast.normalize import get_format

    try:
        get_format(value)
    except TraceFormatError as exc:  # from MAST_FORMAT, env_error says so
        raise click.BadParameter(f"{exc} (or auto)", ctx=ctx, param=param) from None
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
    from mast.results import incomplete_scout_scan, is_scout_scan, results_files

    if not Path(given).is_dir() or is_scout_scan(given):
        return [given]
    broken = incomplete_scout_scan(given)
    if broken:
        raise UsageError(broken)
    found = results_files(given)
    if not found:
        found = sorted((p for p in Path(given).iterdir() if is_scout_scan(p)),
                       key=lambda p: ((p / "_scan.json").stat().st_mtime_ns, p.name))
    if not found:
        broken = next(filter(None, map(incomplete_scout_scan, sorted(Path(given).iterdir()))), None)
        if broken:
            raise UsageError(broken)
    if len(found) < newest:
        what = "no results file (*.jsonl)" if not found else f"only {plural(len(found), 'results file')}"
        raise UsageError(f"{given} holds {what}; pass a results file, a Scout scan or a folder of them")
    chosen = found[-newest:]
    if len(found) > newest:
        names = ", ".join(p.name for p in found)
        picked = " and ".join(p.name for p in chosen)
        # A hooks folder holds one results file per judge; a folder of Scout scans, one scan per run.
        what = "Scout scans" if is_scout_scan(found[0]) else "results files, one per judge"
        stderr.print(terminal_safe(f"mast: {given} holds {len(found)} {what} ({names}); "
                                   f"reading the last changed: {picked} (pass a file to choose another)"),
                     markup=False, highlight=False)
    return [str(p) for p in chosen]
