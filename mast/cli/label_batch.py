"""``mast label --batch-api`` and its companions ``--batch-status`` / ``--batch-cancel``.

A thin layer over :func:`mast.batch.provider_run.arun_provider_batch` and the batch state beside
the results file; ``mast label`` hands over to :func:`run_batch_command` when one of these flags is given.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson
from rich.table import Table

from mast._words import plural
from mast.batch import ResultsFile, WorkItem, results_path
from mast.batch.batch_state import BatchStore
from mast.batch.inputs import Reloader
from mast.batch.mixing import check_one_judge
from mast.batch.table import write_table
from mast.cli._run_control import gate_exit
from mast.cli._shared import stderr, write_line
from mast.cli._source_options import SourceInputs
from mast.errors import UsageError
from mast.judge.config import JudgeConfig

if TYPE_CHECKING:  # the provider batch module loads litellm: only `mast label --batch-api` pays for it
    from mast.batch.provider_batch import BatchProgress, RetryMode


@dataclass
class BatchCommand:
    """What ``mast label`` hands over when a batch-API flag is given."""

    output: Path
    judge_config: JudgeConfig
    status: bool
    cancel: bool
    retry: RetryMode
    dry_run: bool
    overwrite: bool
    read_items: Callable[[], list[WorkItem]]
    """Reads the inputs as ``mast label`` does (files, trace stores, selection, shard)."""
    sources: SourceInputs
    fail_on: Sequence[str]
    """The ``--fail-on`` codes (exit 3 when one is found)."""
    show_progress: bool
    as_json: bool


def run_batch_command(command: BatchCommand) -> int:
    """Run the batch-API variant of ``mast label`` the flags ask for; returns the exit status."""
    from mast.cli import label

    output, judge_config = command.output, command.judge_config
    jsonl = results_path(output)
    store = BatchStore(jsonl)
    if command.status:
        return _status(store, command.as_json)
    if command.cancel:
        return _cancel(store, judge_config, command.as_json)
    if not command.overwrite and judge_config.model and not (judge_config.jury or judge_config.samples > 1):
        from mast.judge.classify import Judge

        check_one_judge(jsonl, Judge(judge_config).info)  # before reading inputs: a mixed file is refused at once
    if command.dry_run:
        items = command.read_items()
        _dry_run(items, judge_config, command.as_json)
        return 2 if any(i.whole_file for i in items) else 0

    from mast.batch.provider_run import arun_provider_batch
    from mast.engines import open_run_sinks

    sources = command.sources
    # --write-back / --emit-otel: sinks fed as each result is written.
    sinks = open_run_sinks(sources.sinks, sources.reader, options=sources.sink_options, on_notice=_notice)
    try:
        with ResultsFile(jsonl, overwrite=command.overwrite) as results:
            if results.repaired:
                stderr.print(f"mast: {jsonl}: {results.repaired}", markup=False, highlight=False)
            items = command.read_items()
            progress = _progress_line if command.show_progress else None
            run = asyncio.run(arun_provider_batch(items, judge_config, results, retry=command.retry, on_progress=progress,
                                                  on_result=sinks.on_result if sinks else None, catch_sigint=True))
    finally:
        if sinks is not None:
            sinks.close()
    if sinks is not None:
        run.report.sink_failures = sinks.failures
    if jsonl != output:
        write_table(jsonl, output)
    label._print_summary(run.report, judge_config, jsonl, output)  # noqa: SLF001
    stderr.print(
        f"mast: batch API: {plural(run.batches_submitted, 'batch', 'batches')} submitted, {plural(run.online_calls, 'call')} asked online; "
        f"cost ${run.cost_usd:.4f}, list price ${run.list_cost_usd:.4f}, saved ${run.saving_usd:.4f}"
        + (f" ({run.saving_usd / run.list_cost_usd:.0%})" if run.list_cost_usd else ""),
        markup=False, highlight=False,
    )
    if command.as_json:
        summary = {
            **run.report.model_dump(mode="json"),
            "batch": {
                "batches_submitted": run.batches_submitted, "online_calls": run.online_calls,
                "cost_usd": run.cost_usd, "list_cost_usd": run.list_cost_usd, "saving_usd": run.saving_usd,
                "cached_input_tokens": run.cached_input_tokens,
            },
        }
        write_line(orjson.dumps(summary).decode())
    return gate_exit(label._exit_code(run.report), label._gated(run.report, list(command.fail_on)))  # noqa: SLF001


def _notice(line: str) -> None:
    stderr.print(f"mast: {line}", markup=False, highlight=False)


def _progress_line(progress: BatchProgress) -> None:
    eta = f", eta {progress.eta_s:.0f}s" if progress.eta_s is not None else ""
    stderr.print(
        f"mast: {plural(progress.batches, 'batch', 'batches')}: {progress.submitted} submitted / {progress.in_progress} in progress / "
        f"{progress.completed} completed / {progress.failed} failed, {progress.elapsed_s:.0f}s elapsed{eta}",
        markup=False, highlight=False,
    )


def _status(store: BatchStore, as_json: bool) -> int:
    if not store.exists():
        raise UsageError(f"{store.path}: no batch run recorded for this output")
    state = store.load()
    if as_json:
        write_line(state.model_dump_json())
        return 0
    table = Table(title=f"batches of {store.path.name} ({state.model})", title_justify="left")
    for column in ("batch", "phase", "provider status", "requests", "traces", "completed", "failed", "provider id"):
        table.add_column(column)
    for entry in state.entries:
        table.add_row(
            entry.local_id, entry.phase, entry.provider_status or "-", str(len(entry.requests)),
            str(len(set(entry.requests.values()))), str(entry.counts.get("completed", "-")),
            str(entry.counts.get("failed", "-")), entry.batch_id or "-",
        )
    stderr.print(table)
    return 0


def _cancel(store: BatchStore, config: JudgeConfig, as_json: bool) -> int:
    if not store.exists():
        raise UsageError(f"{store.path}: no batch run recorded for this output")
    if not config.model:
        raise UsageError("--batch-cancel needs the model of the run (--model or MAST_MODEL)")
    from mast.batch.provider_batch import BatchEngine
    from mast.judge.backend import LiteLLMBackend

    engine = BatchEngine(LiteLLMBackend.from_config(config), store)
    cancelled = asyncio.run(engine.cancel())
    if as_json:
        write_line(orjson.dumps([{"batch": e.local_id, "id": e.batch_id, "status": e.provider_status} for e in cancelled]).decode())
    for entry in cancelled:
        stderr.print(f"mast: cancelled {entry.local_id} ({entry.batch_id}): {entry.provider_status}", markup=False, highlight=False)
    if not cancelled:
        stderr.print("mast: no batch in flight to cancel", markup=False, highlight=False)
    return 0


def _dry_run(items: Sequence[WorkItem], config: JudgeConfig, as_json: bool) -> None:
    """Tokens and cost online (list price) and through the batch API; nothing is sent."""
    from mast.batch.provider_batch import batch_prices
    from mast.judge.backend import LiteLLMBackend
    from mast.judge.classify import Judge

    if not config.model:
        raise UsageError("--batch-api needs an LLM judge: set --model")
    backend = LiteLLMBackend.from_config(config)
    judge = Judge(config, backend=backend)
    unique = list({i.key: i for i in items if i.error is None}.values())
    reloader = Reloader()
    input_tokens = output_tokens = 0
    try:
        for item in unique:
            estimate = judge.estimate(item.trace if item.trace is not None else reloader.load(item))
            input_tokens += estimate.input_tokens
            output_tokens += estimate.output_tokens
    finally:
        reloader.close()
    batch, online = batch_prices(backend.prices(), input_tokens, output_tokens)
    plan: dict[str, Any] = {
        "traces": sum(1 for i in items if not i.whole_file), "to_judge": len(unique), "model": config.model,
        "estimated_input_tokens": input_tokens, "estimated_output_tokens": output_tokens,
        "estimated_cost_usd_online": online, "estimated_cost_usd_batch": batch,
    }
    if as_json:
        write_line(orjson.dumps(plan).decode())
        return
    table = Table(title="dry run (batch API): nothing was sent", show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("judge", f"llm ({config.model})")
    table.add_row("to judge", str(len(unique)))
    table.add_row("est. input tokens", f"{input_tokens:,}")
    table.add_row("est. output tokens", f"{output_tokens:,}")
    for label, value in (("est. cost online (list price)", online), ("est. cost batch API", batch)):
        table.add_row(label, "unknown (no price for this model)" if value is None else f"${value:.4f}")
    stderr.print(table)
