"""``mast normalize`` and ``mast formats``."""

from __future__ import annotations

import click

from mast._outputs import terminal_safe
from mast.batch.walk import no_traces_error, select_files
from mast.cli._run_control import file_options
from mast.cli._shared import format_option, plural, stderr, stdout, write_line
from mast.errors import TraceFormatError
from mast.normalize import formats, iter_traces
from mast.trace import Trace


def _summary(item: Trace) -> str:
    src = item.source
    where = terminal_safe(src.path) + (f"#{src.record}" if src.record is not None else "")
    conf = f" ({src.confidence:.2f})" if src.confidence is not None else ""
    return (
        f"{where}: id {terminal_safe(item.trace_id)} | {src.format}{conf} {item.framework or '-'} | "
        f"{plural(len(item.steps), 'step')}, {plural(len(item.agents), 'agent')}, task: {(item.task or '-')[:60]!r}"
    )


def _transcript(item: Trace) -> str:
    """The numbered transcript exactly as the judge reads it (redacted, capped)."""
    from mast.judge.material import prepare

    material = prepare(item)
    return f"# {item.trace_id} ({material.n_steps} steps{material.step_range})\n{material.transcript}\n"


@click.command("normalize")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@format_option
@click.option("--json", "as_json", is_flag=True, help="Print the normalised traces as JSON lines.")
@click.option(
    "--transcript",
    is_flag=True,
    help="Print the numbered transcript the judge reads ([S<n>] per step, secrets redacted).",
)
@file_options
def command(
    paths: tuple[str, ...],
    format_: str,
    as_json: bool,
    transcript: bool,
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    follow_symlinks: bool = False,
) -> None:
    """Read trace files of any supported format and print them normalised.

    Folders are walked. Prints one summary line per trace with its id (the key gold labels and
    --trace-id use), or with --json one JSON line per trace, or with --transcript the numbered
    transcript the judge reads (the step numbers a diagnosis cites). A file that cannot be read
    gives a one-line error; the others still print (exit 2 if any failed, or if no trace was found).
    """
    failed = found = 0
    selection = select_files(paths, include=include, exclude=exclude, follow_symlinks=follow_symlinks)
    summary = selection.skipped_summary()
    if summary:
        stderr.print(f"mast: {summary}", markup=False, highlight=False)
    for path in selection.files:
        try:
            for item in iter_traces(path, format=format_):
                if isinstance(item, TraceFormatError):
                    failed += 1
                    stderr.print(f"mast: {item}", markup=False, highlight=False)
                    continue
                found += 1
                if as_json:
                    write_line(item.to_json())
                elif transcript:
                    write_line(_transcript(item))
                else:
                    stdout.print(_summary(item), markup=False, highlight=False)
                    for warning in item.warnings:
                        stderr.print(f"  warning: {warning}", markup=False, highlight=False)
        except TraceFormatError as exc:
            failed += 1
            stderr.print(f"mast: {exc}", markup=False, highlight=False)
    if not found and not failed:
        raise no_traces_error(paths, selection)
    if failed:
        raise SystemExit(2)


@click.command("formats")
def formats_command() -> None:
    """List the trace formats mast reads, in detection priority order.

    Under each: an example, and how the reader is proven: the real files from public repositories
    it is tested on and the framework versions they come from, or "from documentation only".
    """
    from mast.normalize._coverage import coverage_summary, format_coverage

    coverage = format_coverage()
    for fmt in formats():
        stdout.print(f"{fmt.name:<22} {fmt.description}", markup=False, highlight=False)
        if fmt.example:
            stdout.print(f"{'':<22}   e.g. {fmt.example}", markup=False, highlight=False)
        stdout.print(f"{'':<22}   {coverage_summary(fmt.name)}", markup=False, highlight=False)
        entry = coverage.get(fmt.name)
        for version in entry.versions if entry else ():
            stdout.print(f"{'':<22}     - {version}", markup=False, highlight=False, soft_wrap=True)
