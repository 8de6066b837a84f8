"""``mast classify``: judge trace files and show why each run failed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from mast._outputs import terminal_safe
from mast.batch.walk import no_traces_error, select_files
from mast.cli._judge_options import judge_options
from mast.cli._run_control import (
    fail_on_option,
    file_options,
    gate_exit,
    judge_assessed,
    modes_found,
    parse_fail_on,
)
from mast.cli._shared import format_option, given_as, plural, safe_text, stderr, stdout, write_line
from mast.diagnosis import Diagnosis
from mast.errors import TraceFormatError
from mast.judge.classify import judge_notice
from mast.judge.config import JudgeConfig
from mast.judge.jury import open_judge
from mast.normalize import iter_traces
from mast.taxonomy import load_taxonomy
from mast.trace import Trace

QUOTE_CHARS = 90


def _traces(
    paths: tuple[str, ...],
    format_: str,
    failures: list[str],
    include: tuple[str, ...],
    exclude: tuple[str, ...],
    follow_symlinks: bool = False,
) -> Iterator[Trace]:
    selection = select_files(paths, include=include, exclude=exclude, follow_symlinks=follow_symlinks)
    summary = selection.skipped_summary()
    if summary:
        stderr.print(f"mast: {summary}", markup=False, highlight=False)
    if not selection.files:
        raise no_traces_error(paths, selection)
    for path in selection.files:
        try:
            for item in iter_traces(path, format=format_):
                if isinstance(item, TraceFormatError):
                    failures.append(str(item))
                    stderr.print(f"mast: {item}", markup=False, highlight=False)
                else:
                    yield item
        except TraceFormatError as exc:
            failures.append(str(exc))
            stderr.print(f"mast: {exc}", markup=False, highlight=False)


def _short(text: str, limit: int = QUOTE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def render_diagnosis(diagnosis: Diagnosis, console: Console) -> None:
    """A readable account: header, the modes judged present with evidence, first failure, summary."""
    judge = diagnosis.judge
    where = diagnosis.source.path or diagnosis.trace_id
    if diagnosis.source.record is not None:
        where += f"#{diagnosis.source.record}"
    about = ", ".join(part for part in (judge.kind, judge.model, judge.strategy) if part)
    console.print(
        Text(
            f"{terminal_safe(where)}  [{diagnosis.status}]  id {terminal_safe(diagnosis.trace_id)}  "
            f"judge: {terminal_safe(about)}",
            style="bold",
        )
    )
    if diagnosis.error is not None:
        return  # the reason goes to stderr once, as one line (see _run)
    present = [v for v in diagnosis.failure_modes if v.present]
    if present:
        table = Table(show_edge=False, pad_edge=False, expand=False)
        table.add_column("mode")
        table.add_column("name")
        table.add_column("conf", justify="right")
        table.add_column("evidence")
        for verdict in present:
            lines = []
            for evidence in verdict.evidence[:2]:
                mark = "✓" if evidence.verified else "✗"
                step = f"S{evidence.step}" if evidence.step is not None else "S?"
                lines.append(f"{step} {mark} “{_short(evidence.quote, 70)}”")
            if not lines and verdict.explanation:
                lines.append(_short(verdict.explanation))
            confidence = f"{verdict.confidence:.2f}" if verdict.confidence is not None else "-"
            if verdict.votes is not None:
                confidence += (
                    f" ({verdict.votes.present}/{verdict.votes.present + verdict.votes.absent} votes)"
                )
            table.add_row(verdict.code, verdict.name, confidence, safe_text("\n".join(lines) or "-"))
        console.print(table)
    else:
        console.print("  no failure mode judged present")
    hinted = [v for v in diagnosis.failure_modes if v.hints and not v.present]
    if hinted:
        console.print(safe_text("  hints (seen by the detectors, not verdicts: the mode is not theirs to judge):"))
        # One finding can hint at several modes: each hint once, with every mode it is about.
        modes_of: dict[str, list[str]] = {}
        for verdict in hinted:
            for hint in verdict.hints or []:
                modes_of.setdefault(hint, []).append(f"{verdict.code} {verdict.name}")
        for hint, modes in modes_of.items():
            console.print(safe_text(f"    {', '.join(modes)}: {_short(hint, 160)}"))
    unassessed = [v.code for v in diagnosis.failure_modes if v.present is None]
    if unassessed:
        console.print(safe_text(f"  not assessed: {', '.join(unassessed)}", style="dim"))
    completed = {True: "yes", False: "no", None: "unknown"}[diagnosis.task_completed]
    console.print(safe_text(f"  task completed: {completed}"))
    first = diagnosis.first_failure
    if first is not None:
        step = f"S{first.step}" if first.step is not None else "step ?"
        console.print(
            safe_text(
                f"  first failure: {step} by {first.agent or '?'} ({first.code or '-'}): {_short(first.explanation, 160)}"
            )
        )
    if diagnosis.summary:
        console.print(safe_text(f"  summary: {diagnosis.summary}"))
    if diagnosis.jury is not None and diagnosis.jury.agreement is not None:
        agreement = diagnosis.jury.agreement
        kappa = (
            f"{round(agreement.fleiss_kappa, 2) + 0.0:.2f}"
            if agreement.fleiss_kappa is not None
            else "undefined"
        )
        raw = f"{agreement.raw:.2f}" if agreement.raw is not None else "-"
        console.print(
            safe_text(
                f"  jury: {len(diagnosis.jury.answered)} of {len(diagnosis.jury.jurors)} answered, {diagnosis.jury.reducer}; "
                f"agreement {raw} (Fleiss kappa {kappa}) over {agreement.n_modes} modes"
            )
        )
    usage = diagnosis.usage
    if usage.cost_usd is not None:
        cost = f"${usage.cost_usd:.4f}"
    else:
        cost = "no LLM cost" if usage.llm_calls == 0 else "cost unknown"
    cached = ", cached" if usage.cached else ""
    console.print(
        safe_text(
            f"  {plural(usage.llm_calls, 'call')}, {usage.input_tokens}+{usage.output_tokens} tokens, {cost}, {usage.latency_s:.1f}s{cached}",
            style="dim",
        )
    )
    for warning in diagnosis.warnings[:5]:
        console.print(safe_text(f"  warning: {warning}", style="yellow"))
    if len(diagnosis.warnings) > 5:
        console.print(
            safe_text(f"  ... {len(diagnosis.warnings) - 5} more warnings (see --json)", style="yellow")
        )


@click.command("classify")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@format_option
@click.option("--json", "as_json", is_flag=True, help="Print each Diagnosis as one JSON line.")
@judge_options
@file_options
@fail_on_option
def command(
    paths: tuple[str, ...],
    format_: str,
    as_json: bool,
    judge_config: JudgeConfig,
    include: tuple[str, ...] = (),
    exclude: tuple[str, ...] = (),
    fail_on: str | None = None,
    follow_symlinks: bool = False,
) -> None:
    """Label the trace(s) in PATHS with the MAST failure modes.

    Shows the modes judged present with confidence and evidence (✓ quote verified in the cited
    step), the first failure and a summary; --json prints the Diagnosis. Without a model the
    offline detectors judge. Exit 1 when a trace could not be judged, 2 when a file could not be read
    (or no trace was found), 3 when --fail-on found a listed mode.

    \b
    mast classify run.json --model openai/gpt-4.1-mini
    mast classify run.json --model local            # small offline model (smoke tests only)
    MAST_MODEL=anthropic/claude-sonnet-4-5 mast classify runs/ --json
    """  # noqa: D301 (click's \b keeps the example lines as they are)
    taxonomy = load_taxonomy(judge_config.taxonomy)
    gate = parse_fail_on(  # bad input first, before any notice
        fail_on, taxonomy, given_as(click.get_current_context(), "fail_on"), judge_assessed(judge_config, taxonomy)
    )
    notice = judge_notice(judge_config) if not judge_config.jury else None
    if notice:
        stderr.print(f"mast: {notice}", markup=False, highlight=False)
    unreadable: list[str] = []
    found: list[Diagnosis] = []
    traces = _traces(paths, format_, unreadable, include, exclude, follow_symlinks)
    failed = asyncio.run(_run(traces, as_json, judge_config, found))
    if unreadable:
        raise SystemExit(2)
    hits = modes_found(found, gate)
    if hits:
        stderr.print(f"mast: --fail-on: found {', '.join(hits)}", markup=False, highlight=False)
    code = gate_exit(1 if failed else 0, hits)
    if code:
        raise SystemExit(code)


async def _run(traces: Iterator[Trace], as_json: bool, config: JudgeConfig, found: list[Diagnosis]) -> int:
    failed = 0
    async with open_judge(config) as judge:
        for trace in traces:
            diagnosis = await judge.classify(trace, raise_on_error=False)
            found.append(diagnosis)
            if diagnosis.status != "judged":
                failed += 1
            if as_json:
                write_line(diagnosis.model_dump_json())
            else:
                render_diagnosis(diagnosis, stdout)
            if diagnosis.status != "judged" and diagnosis.error is not None:
                stderr.print(
                    f"mast: {diagnosis.trace_id}: {diagnosis.status}: {diagnosis.error.message}",
                    markup=False,
                    highlight=False,
                )
    return failed
