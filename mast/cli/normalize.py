"""``mast normalize`` and ``mast formats``."""

from __future__ import annotations

import click

from mast.cli._shared import stderr, stdout, write_line
from mast.errors import TraceFormatError
from mast.normalize import formats, iter_paths, iter_traces


@click.command("normalize")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("--format", "format_", default="auto", show_default=True, envvar="MAST_FORMAT", help="Source format (see `mast formats`).")
@click.option("--json", "as_json", is_flag=True, help="Print the normalised traces as JSON lines.")
def command(paths: tuple[str, ...], format_: str, as_json: bool) -> None:
    """Read trace files of any supported format and print them normalised.

    Folders are walked. Prints one summary line per trace, or with --json one JSON line per trace.
    A file that cannot be read gives a one-line error; the others still print (exit 2 if any failed).
    """
    failed = 0
    files = list(iter_paths(paths))
    for path in files:
        try:
            for item in iter_traces(path, format=format_):
                if isinstance(item, TraceFormatError):
                    failed += 1
                    stderr.print(f"mast: {item}", markup=False, highlight=False)
                elif as_json:
                    write_line(item.to_json())
                else:
                    src = item.source
                    where = f"{src.path}" + (f"#{src.record}" if src.record is not None else "")
                    conf = f" ({src.confidence:.2f})" if src.confidence is not None else ""
                    stdout.print(
                        f"{where}: {src.format}{conf} {item.framework or '-'} | {len(item.steps)} steps, "
                        f"{len(item.agents)} agents, task: {(item.task or '-')[:60]!r}",
                        markup=False, highlight=False,
                    )
                    for warning in item.warnings:
                        stderr.print(f"  warning: {warning}", markup=False, highlight=False)
        except TraceFormatError as exc:
            failed += 1
            stderr.print(f"mast: {exc}", markup=False, highlight=False)
    if failed:
        raise SystemExit(2)


@click.command("formats")
def formats_command() -> None:
    """List the trace formats mast reads, in detection priority order."""
    for fmt in formats():
        stdout.print(f"{fmt.name:<22} {fmt.description}", markup=False, highlight=False)
        if fmt.example:
            stdout.print(f"{'':<22}   e.g. {fmt.example}", markup=False, highlight=False)
