"""``mast label``: judge every trace under some files and folders into a resumable results file."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Sequence
from contextlib import nullcontext
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

from mast.batch import (
    BatchJudge,
    BatchReport,
    BatchRunner,
    ResultsFile,
    WorkItem,
    configured_judge,
    results_path,
    scan,
)
from mast.batch.inputs import Reloader, ResumeKey, parse_shard
from mast.batch.mixing import check_one_judge
from mast.batch.runner import file_error_line, result_error_line, reusable_results
from mast.batch.table import TABLE_SUFFIXES, write_table
from mast.batch.walk import no_traces_error, select_files
from mast.cli._judge_options import judge_options
from mast.cli._run_control import (
    fail_on_option,
    file_options,
    gate_exit,
    modes_found,
    parse_fail_on,
    pick_items,
    selection_options,
)
from mast.cli._shared import plural, stderr, write_line
from mast.cli._source_options import SourceInputs, source_options
from mast.diagnosis import Diagnosis
from mast.errors import UsageError
from mast.judge.classify import judge_notice
from mast.judge.config import JudgeConfig
from mast.taxonomy import load_taxonomy

EXIT_INTERRUPTED = 130
MAX_ERROR_LINES = 20
"""Errors printed one per line as they happen; the rest are counted in the summary."""
NOT_ASSESSED = "—"
"""Shown for a mode no judged trace was assessed for (the detectors cover only some modes)."""


@click.command("label")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Results file: .jsonl (one Diagnosis per line); .csv or .parquet also writes a table, "
                   "resuming from the .jsonl of the same name.")
@judge_options
@source_options
@click.option("-j", "--concurrency", type=click.IntRange(1, 2000), default=8, show_default=True,
              envvar="MAST_CONCURRENCY", help="Traces judged at the same time.")
@click.option("--rpm", type=click.FloatRange(min=0, min_open=True), envvar="MAST_RPM",
              help="Requests-per-minute limit.")
@click.option("--tpm", type=click.FloatRange(min=0, min_open=True), envvar="MAST_TPM",
              help="Tokens-per-minute limit (from estimated tokens, corrected by actual use).")
@click.option("--budget-usd", type=click.FloatRange(min=0), envvar="MAST_BUDGET_USD",
              help="Start no new trace once spend plus in-flight estimates would pass this many dollars.")
@click.option("--dry-run", is_flag=True, help="Count traces and estimate tokens and cost; call no LLM.")
@click.option("--overwrite", is_flag=True, help="Start over: empty the results file instead of resuming.")
@click.option("--format", "format_", default="auto", show_default=True, envvar="MAST_FORMAT",
              help="Source format (see `mast formats`).")
@click.option("--recursive/--no-recursive", default=True, show_default=True, help="Walk sub-folders.")
@click.option("--shard", metavar="I/N", help="Judge only shard I of N (stable hash of the trace id).")
@click.option("--progress/--no-progress", "show_progress", default=None,
              help="Progress bar on stderr [default: when stderr is a terminal].")
@click.option("--json", "as_json", is_flag=True, help="Print the final report as JSON on stdout.")
@file_options
@selection_options
@fail_on_option
@click.option("--batch-api", is_flag=True, envvar="MAST_BATCH_API",
              help="Send the calls through the provider's batch API (about half price, results within 24 h); "
                   "resumable: rerun the same command after any interruption.")
@click.option("--batch-status", is_flag=True, help="Show the batches recorded for OUTPUT and stop.")
@click.option("--batch-cancel", is_flag=True, help="Cancel the batches of OUTPUT still running at the provider.")
@click.option("--batch-retry", type=click.Choice(["online", "batch"]), default="online", show_default=True,
              help="Ask failed, expired or invalid batch items again online, or in a follow-up batch.")
def command(
    paths: tuple[str, ...],
    output: Path,
    concurrency: int,
    rpm: float | None,
    tpm: float | None,
    budget_usd: float | None,
    dry_run: bool,
    overwrite: bool,
    format_: str,
    recursive: bool,
    shard: str | None,
    show_progress: bool | None,
    as_json: bool,
    judge_config: JudgeConfig,
    sources: SourceInputs,
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
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
    stopped the run; 2 bad usage, or input files/records that could not be read; 130 interrupted.

    \b
    Several machines: run the same inputs with a different shard on each, then concatenate:
      machine 1$ mast label runs/ --shard 1/3 -o part-1.jsonl
      machine 2$ mast label runs/ --shard 2/3 -o part-2.jsonl
      machine 3$ mast label runs/ --shard 3/3 -o part-3.jsonl
      $ cat part-*.jsonl > results.jsonl
    A trace's shard is a stable hash of its id: shards never overlap and together cover the input.
    """  # noqa: D301 - click's \b keeps a paragraph unwrapped
    paths = sources.take_urls(paths)  # phoenix://HOST:PORT/PROJECT inputs (mast.cli._source_options)
    shard_pair = parse_shard(shard) if shard else None
    for given in paths:
        if not Path(given).exists():
            raise UsageError(f"{given}: no such file or folder")
    if output.suffix.lower() not in (".jsonl", ".ndjson", *TABLE_SUFFIXES):
        raise UsageError(f"-o {output}: use a name ending in .jsonl (or .csv / .parquet for a table as well)")
    jsonl = results_path(output)
    gate = parse_fail_on(fail_on, load_taxonomy(judge_config.taxonomy))
    walk = {"include": include, "exclude": exclude, "outputs": (output, jsonl)}
    pick: dict[str, Any] = {"limit": limit, "sample": sample, "seed": sample_seed, "trace_ids": trace_ids}
    progress_on = stderr.is_terminal if show_progress is None else show_progress
    if batch_api or batch_status or batch_cancel:
        from mast.cli.label_batch import BatchCommand, run_batch_command

        def read_items() -> list[WorkItem]:
            return pick_items(_read_inputs([*paths, *sources.traces()], format_, recursive, shard_pair, progress_on, walk), **pick)

        sys.exit(run_batch_command(BatchCommand(
            output=output, judge_config=judge_config, status=batch_status, cancel=batch_cancel,
            retry="batch" if batch_retry == "batch" else "online", dry_run=dry_run, overwrite=overwrite,
            read_items=read_items, sources=sources, fail_on=gate, show_progress=progress_on, as_json=as_json,
        )))
    judge = configured_judge(judge_config)
    notice = judge_notice(judge_config) if not judge_config.jury else None
    if notice:
        stderr.print(f"mast: {notice}", markup=False, highlight=False)

    if not overwrite:
        check_one_judge(jsonl, judge.info)  # before reading inputs: a mixed file is refused at once
    if dry_run:
        items = pick_items(_read_inputs([*paths, *sources.traces()], format_, recursive, shard_pair, progress_on, walk), **pick)
        _dry_run(items, judge, jsonl, overwrite, as_json)
        sys.exit(2 if any(i.whole_file for i in items) else 0)

    runner = BatchRunner(judge, concurrency=concurrency, rpm=rpm, tpm=tpm, budget_usd=budget_usd)
    # The lock comes first: a second run on the same output stops before reading any input.
    with ResultsFile(jsonl, overwrite=overwrite) as results:
        if results.repaired:
            stderr.print(f"mast: {jsonl}: {results.repaired}", markup=False, highlight=False)
        sources.mark(jsonl)
        items = pick_items(_read_inputs([*paths, *sources.traces()], format_, recursive, shard_pair, progress_on, walk), **pick)
        runner.results_file = results
        bar = _ProgressBar(runner, total=sum(1 for i in items if not i.whole_file), enabled=progress_on)
        runner.on_result = bar.on_result
        with bar:
            asyncio.run(runner.run(items, catch_sigint=True))
    report = runner.report
    sources.after_run(jsonl)  # --write-back / --emit-otel
    if jsonl != output:
        write_table(jsonl, output)
    _print_summary(report, judge_config, jsonl, output)
    if as_json:
        write_line(report.model_dump_json())
    sys.exit(gate_exit(_exit_code(report), _gated(runner.results, gate)))


def _gated(results: Sequence[Diagnosis | None], codes: Sequence[str]) -> list[str]:
    found = modes_found(results, codes)
    if found:
        stderr.print(f"mast: --fail-on: found {', '.join(found)}", markup=False, highlight=False)
    return found


def _read_inputs(
    paths: Sequence[Any], format_: str, recursive: bool, shard: tuple[int, int] | None, spinner: bool,
    walk: dict[str, Any],
) -> list[WorkItem]:
    """Every trace to consider; skipped and unreadable files are reported here; none at all is an error."""
    selection = select_files(paths, recursive=recursive, **walk)
    with stderr.status("reading traces...", spinner="dots") if spinner else nullcontext():
        items = list(scan(selection.files, format=format_, recursive=recursive, shard=shard))
    summary = selection.skipped_summary()
    if summary:
        stderr.print(f"mast: {summary}", markup=False, highlight=False)
    for item in items:
        if item.whole_file:
            stderr.print(f"mast: skipped {file_error_line(item)}", markup=False, highlight=False)
    if not items and shard is None:  # a shard of a small input may rightly be empty
        raise no_traces_error(paths, selection)
    return items


def _exit_code(report: BatchReport) -> int:
    if report.stopped == "interrupted":
        return EXIT_INTERRUPTED
    return report.exit_code


# -- progress ------------------------------------------------------------------------------------


class _ProgressBar:
    """done/total, errors, tokens, dollars and ETA on stderr, updated as results arrive."""

    def __init__(self, runner: BatchRunner, *, total: int, enabled: bool) -> None:
        self.runner = runner
        self.enabled = enabled
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
        self.task = self.progress.add_task("label", total=total, errors=0, tokens="0", cost=0.0)

    def __enter__(self) -> _ProgressBar:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.stop()

    def on_result(self, item: WorkItem, diagnosis: Diagnosis, outcome: str) -> None:
        if item.whole_file:
            return
        report = self.runner.report
        self.progress.update(
            self.task,
            total=report.total,
            completed=report.done,
            errors=report.failed,
            tokens=_tokens(report.input_tokens + report.output_tokens),
            cost=report.cost_usd,
        )
        if diagnosis.status == "error" and outcome != "resumed":
            reason = diagnosis.error.message if diagnosis.error is not None else ""
            if reason in self.reasons_shown and diagnosis.error is not None and diagnosis.error.type == "JudgeSetupError":
                return  # the same setup error (no key, unknown model) for every trace: said once
            self.reasons_shown.add(reason)
            self.errors_shown += 1
            if self.errors_shown <= MAX_ERROR_LINES:
                line = result_error_line(diagnosis)
                self.progress.console.print(f"mast: {line}", markup=False, highlight=False)
            elif self.errors_shown == MAX_ERROR_LINES + 1:
                self.progress.console.print("mast: more errors: see the results file", markup=False, highlight=False)


def _tokens(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1e6:.1f}M"
    if count >= 10_000:
        return f"{count / 1e3:.0f}k"
    return str(count)


# -- dry run -------------------------------------------------------------------------------------


def _dry_run(items: Sequence[WorkItem], judge: BatchJudge, jsonl: Path, overwrite: bool, as_json: bool) -> None:
    """Print what the run would judge and what it would cost; nothing is sent."""
    done: set[ResumeKey] = set()
    if not overwrite and jsonl.exists():
        done = set(reusable_results(jsonl, judge.info, {item.key for item in items}))
    done_content = {(trace_id, trace_hash) for trace_id, trace_hash, _, _ in done}
    # An identical trace (same id and content) from another file or record costs no call.
    todo = [i for i in items if i.error is None and i.resume_key not in done and i.key not in done_content]
    unique = list({i.key: i for i in todo}.values())
    input_tokens = output_tokens = 0
    cost: float | None = 0.0
    reloader = Reloader()
    if unique:
        asyncio.run(judge.start())  # the backend counts tokens; starting it sends nothing
    for item in unique:
        trace = item.trace if item.trace is not None else reloader.load(item)
        estimate = judge.estimate(trace)
        input_tokens += estimate.input_tokens
        output_tokens += estimate.output_tokens
        cost = None if cost is None or estimate.cost_usd is None else cost + estimate.cost_usd
    traces = sum(1 for i in items if not i.whole_file)
    plan = {
        "traces": traces,
        "already_done": sum(1 for i in items if i.resume_key in done),
        "unreadable": sum(1 for i in items if i.error is not None and not i.whole_file),
        "files_skipped": sum(1 for i in items if i.whole_file),
        "to_judge": len(unique),
        "estimated_input_tokens": input_tokens,
        "estimated_output_tokens": output_tokens,
        "estimated_cost_usd": cost,
        "model": judge.info.model,
        "judge": judge.info.kind,
    }
    if as_json:
        import orjson

        write_line(orjson.dumps(plan).decode())
    else:
        table = Table(title="dry run: nothing was sent", show_header=False, title_justify="left")
        table.add_column(style="bold")
        table.add_column(justify="right")
        table.add_row("judge", f"{plan['judge']}" + (f" ({plan['model']})" if plan["model"] else ""))
        table.add_row("traces", str(traces))
        table.add_row("already in output", str(plan["already_done"]))
        table.add_row("to judge", str(len(unique)))
        if plan["unreadable"] or plan["files_skipped"]:
            table.add_row("unreadable records / files", f"{plan['unreadable']} / {plan['files_skipped']}")
        table.add_row("est. input tokens", f"{input_tokens:,}")
        table.add_row("est. output tokens", f"{output_tokens:,}")
        table.add_row("est. cost", "unknown (no price for this model)" if cost is None else f"${cost:.4f}")
        stderr.print(table)


# -- summary -------------------------------------------------------------------------------------


def _print_summary(report: BatchReport, config: JudgeConfig, jsonl: Path, output: Path) -> None:
    table = Table(title=f"mast label: {jsonl}", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    for status in ("judged", "unjudgeable", "error"):
        table.add_row(status, str(report.statuses.get(status, 0)))
    if report.resumed:
        table.add_row("  of which resumed", str(report.resumed))
    if report.not_started:
        table.add_row("not started", str(report.not_started))
    if report.file_errors:
        table.add_row("files skipped", str(len(report.file_errors)))
    table.add_row("LLM calls", f"{report.llm_calls:,}" + (f" (+{report.cached} cached)" if report.cached else ""))
    table.add_row("tokens in / out", f"{report.input_tokens:,} / {report.output_tokens:,}")
    cost = f"${report.cost_usd:.4f}" + (f" (+{report.cost_unknown} unpriced)" if report.cost_unknown else "")
    table.add_row("cost", cost)
    table.add_row("wall time", f"{report.wall_s:.1f}s")
    stderr.print(table)

    judged = report.statuses.get("judged", 0)
    if judged:
        taxonomy = load_taxonomy(config.taxonomy)
        modes = Table(
            title=f"failure modes in {judged} judged traces",
            title_justify="left",
            caption=f"share: of the traces in which the mode was assessed; {NOT_ASSESSED} not assessed by this judge",
            caption_justify="left",
        )
        modes.add_column("mode")
        modes.add_column("name")
        modes.add_column("traces", justify="right")
        modes.add_column("assessed", justify="right")
        modes.add_column("share", justify="right")
        for mode in taxonomy.modes:
            assessed = report.mode_assessed.get(mode.code, 0)
            if not assessed:
                modes.add_row(mode.code, mode.name, NOT_ASSESSED, NOT_ASSESSED, NOT_ASSESSED)
                continue
            count = report.mode_counts.get(mode.code, 0)
            modes.add_row(mode.code, mode.name, str(count), str(assessed), f"{count / assessed:.0%}")
        stderr.print(modes)

    if report.message:
        stderr.print(f"mast: {report.message}", markup=False, highlight=False)
    if report.stopped == "interrupted":
        stderr.print(
            f"mast: {report.done - report.resumed} results written this run, {report.not_started} traces not "
            "started; run the same command again to continue",
            markup=False, highlight=False,
        )
    failed = report.failed
    if failed:
        parts = [plural(report.statuses.get("error", 0), "error")] if report.statuses.get("error") else []
        if report.statuses.get("unjudgeable"):
            parts.append(f"{report.statuses['unjudgeable']} unjudgeable")
        stderr.print(f"mast: {' and '.join(parts)} of {plural(report.total, 'trace')} (see {jsonl})", markup=False, highlight=False)
    if output != jsonl:
        stderr.print(f"mast: table written to {output}", markup=False, highlight=False)
