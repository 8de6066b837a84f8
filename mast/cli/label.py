"""``mast label``: judge every trace under some files and folders into a resumable results file."""

from __future__ import annotations

import os
import sys
import time
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from mast._outputs import terminal_safe
from mast.batch import (
    BatchReport,
    DryRunPlan,
    Selection,
    WorkItem,
    count_files,
    file_error_line,
    plan,
    read_work_items,
    result_error_line,
    results_path,
)
from mast.batch.breaker import DEFAULT_MAX_CONSECUTIVE_ERRORS, CircuitBreaker
from mast.cli._judge_options import judge_options
from mast.cli._run_control import (
    fail_on_option,
    file_options,
    gate_exit,
    judge_assessed,
    parse_fail_on,
    selection_options,
)
from mast.cli._shared import NameChoice, format_option, given_as, plural, stderr, write_line
from mast.cli._source_options import SourceInputs, source_options
from mast.diagnosis import Diagnosis
from mast.engines import engine_names, label
from mast.errors import UsageError
from mast.judge.config import JudgeConfig
from mast.taxonomy import load_taxonomy

EXIT_INTERRUPTED = 130
PLAIN_EVERY_S = 30.0
"""Off a terminal, the longest between two progress lines (besides one every tenth of the run)."""
MAX_ERROR_LINES = 20
"""Errors printed one per line as they happen; the rest are counted in the summary."""
NOT_ASSESSED = "—"
"""Shown for a mode no judged trace was assessed for (the detectors cover only some modes)."""
HINTS_CAPTION = (
    "\nhints: traces in which the offline detectors saw signs of a mode that is not found present"
    " (not verdicts: `mast classify` or the results show them)"
)


@click.command("label")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Results file: .jsonl (one Diagnosis per line); .csv or .parquet also writes a table, "
    "resuming from the .jsonl of the same name.",
)
@judge_options
@source_options
@click.option(
    "-j",
    "--concurrency",
    type=click.IntRange(1, 2000),
    default=8,
    show_default=True,
    envvar="MAST_CONCURRENCY",
    help="Traces judged at the same time.",
)
@click.option(
    "--rpm", type=click.FloatRange(min=0, min_open=True), envvar="MAST_RPM", help="Requests-per-minute limit."
)
@click.option(
    "--tpm",
    type=click.FloatRange(min=0, min_open=True),
    envvar="MAST_TPM",
    help="Tokens-per-minute limit (from estimated tokens, corrected by actual use).",
)
@click.option(
    "--budget-usd",
    type=click.FloatRange(min=0),
    envvar="MAST_BUDGET_USD",
    help="Start no new trace once spend plus in-flight estimates would pass this many dollars.",
)
@click.option(
    "--max-consecutive-errors",
    type=click.IntRange(min=0),
    default=DEFAULT_MAX_CONSECUTIVE_ERRORS,
    show_default=True,
    envvar="MAST_MAX_CONSECUTIVE_ERRORS",
    help="Stop starting traces after this many in a row end in error (0: never).",
)
@click.option("--dry-run", is_flag=True, help="Count traces and estimate tokens and cost; call no LLM.")
@click.option("--overwrite", is_flag=True, help="Start over: empty the results file instead of resuming.")
@format_option
@click.option("--recursive/--no-recursive", default=True, show_default=True, help="Walk sub-folders.")
@click.option(
    "--shard",
    metavar="I/N",
    help="Judge only shard I of N (stable hash of the trace id): the "
    "no-dependency way to split a corpus across machines (see --engine ray).",
)
@click.option(
    "--engine",
    type=NameChoice(engine_names),
    default="local",
    show_default=True,
    envvar="MAST_ENGINE",
    help="local: this process; ray: a Ray cluster (pip install 'mast-judge[ray]'); batch-api: the provider's "
    "batch API (as --batch-api); or a plugin's engine. Same results file on every engine.",
)
@click.option(
    "--address",
    envvar="RAY_ADDRESS",
    help="--engine ray: the cluster to join ('auto': the running one) [default: start Ray on this machine].",
)
@click.option(
    "--actors",
    type=click.IntRange(1, 4096),
    help="--engine ray: judge actors (each with -j calls in flight) [default: one per 2 CPUs, at least 2].",
)
@click.option(
    "--router",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    envvar="MAST_ROUTER",
    help="litellm Router YAML (model_list of deployments with rpm/tpm, routing_strategy, fallbacks).",
)
@click.option(
    "--progress/--no-progress",
    "show_progress",
    default=None,
    help="Progress on stderr: a live bar on a terminal; elsewhere (CI logs) a plain line every tenth "
    "of the run or 30 s. --no-progress: neither.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the final report as JSON on stdout.")
@file_options
@selection_options
@fail_on_option
@click.option(
    "--batch-api",
    is_flag=True,
    envvar="MAST_BATCH_API",
    help="Send the calls through the provider's batch API (about half price, results within 24 h); "
    "resumable: rerun the same command after any interruption.",
)
@click.option("--batch-status", is_flag=True, help="Show the batches recorded for OUTPUT and stop.")
@click.option(
    "--batch-cancel", is_flag=True, help="Cancel the batches of OUTPUT still running at the provider."
)
@click.option(
    "--batch-retry",
    type=click.Choice(["online", "batch"]),
    default="online",
    show_default=True,
    help="Ask failed, expired or invalid batch items again online, or in a follow-up batch.",
)
def command(
    paths: tuple[str, ...],
    output: Path,
    concurrency: int,
    rpm: float | None,
    tpm: float | None,
    budget_usd: float | None,
    max_consecutive_errors: int,
    dry_run: bool,
    overwrite: bool,
    format_: str,
    recursive: bool,
    shard: str | None,
    engine: str,
    address: str | None,
    actors: int | None,
    router: Path | None,
    show_progress: bool | None,
    as_json: bool,
    judge_config: JudgeConfig,
    sources: SourceInputs,
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    follow_symlinks: bool = False,
    limit: int | None = None,
    sample: int | None = None,
    sample_seed: int = 0,
    trace_ids: tuple[str, ...] = (),
    fail_on: str | None = None,
    batch_api: bool = False,
    batch_status: bool = False,
    batch_cancel: bool = False,
    batch_retry: str = "online",
) -> None:
    """Label every trace under PATHS with the MAST failure modes, into a resumable results file.

    Files and folders are walked (a file may hold many traces). Each result is appended to OUTPUT
    as one JSON line the moment it is ready, so an interrupted run loses only the traces in flight;
    running the same command again skips every trace already in OUTPUT (same trace id, content,
    file and record, and judge settings) without calling the LLM, and retries the ones that ended in error. --overwrite
    starts over. Ctrl-C stops starting traces and finishes the ones in flight (twice: abandons
    them).

    Without a model (--model or MAST_MODEL) the offline detectors judge.

    \b
    Exit status: 0 every trace judged; 1 some trace ended in error or unjudgeable, or the budget
    stopped the run; 2 bad usage, or input files/records that could not be read; 3 --fail-on found
    a listed mode (and nothing else went wrong); 130 interrupted.

    \b
    Beyond one machine: --engine ray (pip install 'mast-judge[ray]') runs the same labelling on a
    Ray cluster into the same results file; --router spreads calls over several keys/providers.
    Without Ray, run each machine on its own --shard I/N and concatenate the outputs.
    """  # noqa: D301 - click's \b keeps a paragraph unwrapped
    paths = sources.take_urls(paths)  # phoenix:// and mlflow:// inputs (mast.cli._source_options)
    for given in paths:
        if not Path(given).exists():
            raise UsageError(f"{given}: no such file or folder")
    progress_on = stderr.is_terminal if show_progress is None else show_progress
    # Off a terminal (CI logs) a live bar cannot redraw: plain lines instead, unless --no-progress.
    plain = not stderr.is_terminal and show_progress is not False
    progress_on = progress_on and stderr.is_terminal
    taxonomy = load_taxonomy(judge_config.taxonomy)
    gate = parse_fail_on(
        fail_on,
        taxonomy,
        given_as(click.get_current_context(), "fail_on"),
        judge_assessed(judge_config, taxonomy),
    )
    select = Selection(
        include=include,
        exclude=exclude,
        limit=limit,
        sample=sample,
        sample_seed=sample_seed,
        trace_ids=trace_ids,
        follow_symlinks=follow_symlinks,
    )
    common: dict[str, Any] = {
        "config": judge_config,
        "overwrite": overwrite,
        "format": format_,
        "recursive": recursive,
        "shard": shard,
        "on_notice": _notice,
    }
    if batch_api or batch_status or batch_cancel:
        # The provider's batch API (issue 14): every trace is read first, then submitted at once.
        from mast.cli.label_batch import BatchCommand, run_batch_command

        def read_items() -> list[WorkItem]:
            return read_work_items(
                paths,
                output,
                format=format_,
                recursive=recursive,
                shard=shard,
                select=replace(select, traces=sources.traces()),
                on_notice=_notice,
            )

        sys.exit(
            run_batch_command(
                BatchCommand(
                    output=Path(output),
                    judge_config=judge_config,
                    status=batch_status,
                    cancel=batch_cancel,
                    retry="batch" if batch_retry == "batch" else "online",
                    dry_run=dry_run,
                    overwrite=overwrite,
                    read_items=read_items,
                    sources=sources,
                    fail_on=gate,
                    show_progress=progress_on,
                    as_json=as_json,
                )
            )
        )
    if dry_run:
        common["select"] = replace(select, traces=sources.traces())
        with stderr.status("reading traces...", spinner="dots") if progress_on else nullcontext():
            dry = plan(paths, output, **common)
        _print_plan(dry, as_json)
        sys.exit(2 if dry.files_skipped else 0)
    expected = count_files(paths, recursive=recursive) if progress_on or plain else 0
    for cap in (limit, sample):  # the ETA counts what this run will judge, not the whole corpus
        if cap is not None and not trace_ids:
            expected = min(expected, cap)
    engine_options = {"address": address, "actors": actors} if engine == "ray" else None
    if router is not None:
        common["router"] = router
    jsonl = results_path(output)
    common["select"] = select
    with _ProgressBar(total=expected, enabled=progress_on, plain=plain) as bar:
        # Store URLs are read a page at a time as the run goes; --write-back / --emit-otel are sinks,
        # fed as each result is written (mast.engines.label).
        report = label(
            [*paths, *sources.urls],
            output,
            query=sources.query,
            sinks=sources.sinks,
            sink_options=sources.sink_options,
            concurrency=concurrency,
            rpm=rpm,
            tpm=tpm,
            budget_usd=budget_usd,
            engine=engine,
            engine_options=engine_options,
            on_progress=bar.on_progress,
            catch_sigint=True,
            breaker=CircuitBreaker(max_consecutive_errors=max_consecutive_errors),
            **common,
        )
    _print_summary(report, judge_config, jsonl, output)
    if as_json:
        write_line(report.model_dump_json())
    if report.abandoned:
        # A second Ctrl-C: everything is written and said. Threads still blocked in the HTTP calls
        # abandoned would hold the interpreter's exit for seconds; leave at once.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_INTERRUPTED)
    sys.exit(gate_exit(_exit_code(report), _gated(report, gate)))


def _gated(report: BatchReport, codes: list[str]) -> list[str]:
    """The ``--fail-on`` codes judged present in any trace of this run (resumed ones included)."""
    found = [code for code in codes if report.mode_counts.get(code)]
    if found:
        stderr.print(f"mast: --fail-on: found {', '.join(found)}", markup=False, highlight=False)
    return found


def _notice(line: str) -> None:
    stderr.print(f"mast: {line}", markup=False, highlight=False)


def _exit_code(report: BatchReport) -> int:
    if report.stopped == "interrupted":
        return EXIT_INTERRUPTED
    return report.exit_code


# -- progress ------------------------------------------------------------------------------------


class _ProgressBar:
    """done/total, errors, tokens, dollars and ETA on stderr, updated as results arrive.

    The total starts from a cheap count of the input files and grows when files hold several traces.
    """

    def __init__(self, *, total: int, enabled: bool, plain: bool = False) -> None:
        self.enabled = enabled
        self.plain = plain and not enabled
        self.expected = total
        self.started = time.monotonic()
        self.last_line = self.started
        self.next_mark = 0
        self.first_shown = False
        self.progress = Progress(
            TextColumn("[bold]labelling"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[errors]} err"),
            TextColumn("{task.fields[tokens]} tok"),
            TextColumn("${task.fields[cost]:.4f}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=stderr,
            disable=not enabled,
            transient=False,
        )
        self.errors_shown = 0
        self.reasons_shown: set[str] = set()
        self.task = self.progress.add_task("label", total=total or None, errors=0, tokens="0", cost=0.0)

    def __enter__(self) -> _ProgressBar:
        self.progress.start()
        if self.plain:  # a CI log shows at once that the run began, and how big it is
            # ``expected`` counts input files (a JSONL file may hold many traces): said as such.
            files = f" on {plural(self.expected, 'input file')}" if self.expected else ""
            stderr.print(f"mast: progress: 0 traces, starting{files}", markup=False, highlight=False)
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def on_progress(
        self, report: BatchReport, item: WorkItem, outcome: str, diagnosis: Diagnosis | None
    ) -> None:
        if item.whole_file:
            self.progress.console.print(
                f"mast: skipped {file_error_line(item)}", markup=False, highlight=False
            )
            return
        if self.plain:
            self._plain_line(report)
        if self.enabled:
            self.progress.update(
                self.task,
                total=max(self.expected, report.total),
                completed=report.done,
                errors=report.failed,
                tokens=_tokens(report.input_tokens + report.output_tokens),
                cost=report.cost_usd,
            )
        if diagnosis is not None and outcome != "resumed":
            # A trace read only in part because a cap stopped its reader is said here, not only in the results.
            for warning in diagnosis.warnings:
                if "_cap" in warning.casefold() or " cap" in warning:
                    where = terminal_safe(diagnosis.source.path or diagnosis.trace_id)
                    self.progress.console.print(f"mast: {where}: {warning}", markup=False, highlight=False)
        if diagnosis is not None and diagnosis.status == "error" and outcome != "resumed":
            reason = diagnosis.error.message if diagnosis.error is not None else ""
            if (
                reason in self.reasons_shown
                and diagnosis.error is not None
                and diagnosis.error.type == "JudgeSetupError"
            ):
                return  # the same setup error (no key, unknown model) for every trace: said once
            self.reasons_shown.add(reason)
            self.errors_shown += 1
            if self.errors_shown <= MAX_ERROR_LINES:
                line = result_error_line(diagnosis)
                self.progress.console.print(f"mast: {line}", markup=False, highlight=False)
            elif self.errors_shown == MAX_ERROR_LINES + 1:
                self.progress.console.print(
                    "mast: more errors: see the results file", markup=False, highlight=False
                )

    def _plain_line(self, report: BatchReport) -> None:
        """One line after the first result, then every tenth (20 traces or more) or :data:`PLAIN_EVERY_S` s."""
        now = time.monotonic()
        total = max(self.expected, report.total)
        step = total // 10 if total >= 20 else 0
        # The first result gets a line too: a short run would otherwise show nothing until its end.
        first = not self.first_shown
        due = first or (step and report.done >= self.next_mark) or now - self.last_line >= PLAIN_EVERY_S
        if not due or report.done == 0:
            return
        self.first_shown = True
        if step:
            self.next_mark = (report.done // step + 1) * step
        self.last_line = now
        elapsed = now - self.started
        fresh = report.done - report.resumed
        eta = ""
        if fresh and total > report.done:
            eta = f", about {_clock(elapsed / fresh * (total - report.done))} left"
        of = f"/{total}" if total else ""
        stderr.print(
            f"mast: progress: {report.done}{of} traces, {plural(report.failed, 'error')}, "
            f"{_tokens(report.input_tokens + report.output_tokens)} tokens, ${report.cost_usd:.4f}, "
            f"{_clock(elapsed)} elapsed{eta}",
            markup=False,
            highlight=False,
        )


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def _tokens(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1e6:.1f}M"
    if count >= 10_000:
        return f"{count / 1e3:.0f}k"
    return str(count)


# -- dry run -------------------------------------------------------------------------------------


def _print_plan(dry: DryRunPlan, as_json: bool) -> None:
    """Print what the run would judge and what it would cost; nothing was sent."""
    if as_json:
        write_line(dry.model_dump_json())
        return
    table = Table(title="dry run: nothing was sent", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("judge", dry.judge + (f" ({dry.model})" if dry.model else ""))
    table.add_row("traces", str(dry.traces))
    table.add_row("already in output", str(dry.already_done))
    table.add_row("to judge", str(dry.to_judge))
    if dry.unreadable or dry.files_skipped:
        table.add_row("unreadable records / files", f"{dry.unreadable} / {dry.files_skipped}")
    if dry.model is None:
        # Offline detectors call no model: tokens and "$0.0000" would read as an estimate of a call.
        table.add_row("est. cost", "– (no LLM calls)")
    elif dry.estimated_input_tokens is not None:
        cost = dry.estimated_cost_usd
        table.add_row("est. input tokens", f"{dry.estimated_input_tokens:,}")
        per_answer = (
            f" ({dry.answer_tokens:,} per answer, as this judge's earlier answers)"
            if dry.answer_tokens
            else ""
        )
        table.add_row("est. output tokens", f"{dry.estimated_output_tokens or 0:,}{per_answer}")
        table.add_row(
            "est. cost",
            "unknown: no price for this model (give --price-input and --price-output, "
            "dollars per million tokens)"
            if cost is None
            else f"${cost:.4f}",
        )
    stderr.print(table)
    if dry.last_estimate:
        stderr.print(f"mast: {dry.last_estimate}", markup=False, highlight=False)


# -- summary -------------------------------------------------------------------------------------


def _print_summary(report: BatchReport, config: JudgeConfig, jsonl: Path, output: Path) -> None:
    table = Table(title=f"mast label: {jsonl}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    for status in ("judged", "unjudgeable", "error"):
        table.add_row(status, str(report.statuses.get(status, 0)))
    if report.resumed:
        table.add_row("  of which resumed", str(report.resumed))
    if report.abandoned:
        table.add_row("abandoned (redone on resume)", str(report.abandoned))
    if report.not_started:
        table.add_row(
            "not started", ("at least " if report.not_started_partial else "") + str(report.not_started)
        )
    if report.file_errors:
        table.add_row("files skipped", str(len(report.file_errors)))
    table.add_row(
        "LLM calls", f"{report.llm_calls:,}" + (f" (+{report.cached} cached)" if report.cached else "")
    )
    table.add_row("tokens in / out", f"{report.input_tokens:,} / {report.output_tokens:,}")
    cost = f"${report.cost_usd:.4f}" + (f" (+{report.cost_unknown} unpriced)" if report.cost_unknown else "")
    if not report.llm_calls and not report.cached and not report.cost_usd:
        cost = "– (no LLM calls)"  # the offline detectors, said as classify and the report say it
    table.add_row("cost", cost)
    table.add_row("wall time", f"{report.wall_s:.1f}s")
    stderr.print(table)

    judged = report.statuses.get("judged", 0)
    if judged:
        taxonomy = load_taxonomy(config.taxonomy)
        modes = Table(
            title=f"failure modes in {plural(judged, 'judged trace')}",
            title_justify="left",
            caption=f"share: of the traces in which the mode was assessed; {NOT_ASSESSED} not assessed by this judge"
            + (HINTS_CAPTION if report.mode_hinted else ""),
            caption_justify="left",
        )
        modes.add_column("mode")
        modes.add_column("name")
        modes.add_column("traces", justify="right")
        modes.add_column("assessed", justify="right")
        modes.add_column("share", justify="right")
        if report.mode_hinted:
            modes.add_column("hints", justify="right")
        for mode in taxonomy.modes:
            hinted = [str(report.mode_hinted.get(mode.code, 0) or "")] if report.mode_hinted else []
            assessed = report.mode_assessed.get(mode.code, 0)
            if not assessed:
                modes.add_row(mode.code, mode.name, NOT_ASSESSED, NOT_ASSESSED, NOT_ASSESSED, *hinted)
                continue
            count = report.mode_counts.get(mode.code, 0)
            modes.add_row(mode.code, mode.name, str(count), str(assessed), f"{count / assessed:.0%}", *hinted)
        stderr.print(modes)

    if report.message and report.stopped != "interrupted":  # Ctrl-C was said when it was pressed
        stderr.print(f"mast: {report.message}", markup=False, highlight=False)
    if report.stopped == "interrupted":
        left = f"at least {report.not_started}" if report.not_started_partial else str(report.not_started)
        stderr.print(
            f"mast: interrupted: {plural(report.done - report.resumed, 'result')} written this run, "
            + (f"{report.abandoned} abandoned (redone on resume), " if report.abandoned else "")
            + f"{left} "
            f"{'trace' if report.not_started == 1 and not report.not_started_partial else 'traces'} not started; "
            "run the same command again to continue",
            markup=False,
            highlight=False,
        )
    failed = report.failed
    if failed:
        parts = [plural(report.statuses.get("error", 0), "error")] if report.statuses.get("error") else []
        if report.statuses.get("unjudgeable"):
            parts.append(f"{report.statuses['unjudgeable']} unjudgeable")
        stderr.print(
            f"mast: {' and '.join(parts)} of {plural(report.total, 'trace')} (see {jsonl})",
            markup=False,
            highlight=False,
        )
    if output != jsonl:
        stderr.print(f"mast: table written to {output}", markup=False, highlight=False)
