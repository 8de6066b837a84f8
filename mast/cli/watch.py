"""``mast watch``: label a trace store's new traces as they finish, poll after poll."""

from __future__ import annotations

import asyncio
import signal
import threading
from pathlib import Path
from types import FrameType

import click

from mast.batch import ResultsFile, configured_judge
from mast.batch.mixing import check_one_judge
from mast.batch.watch import DEFAULT_QUIET, PollReport, Watcher
from mast.cli._judge_options import judge_options
from mast.cli._shared import stderr
from mast.cli._source_options import parse_duration, parse_time
from mast.errors import UsageError
from mast.judge.classify import judge_notice
from mast.judge.config import JudgeConfig
from mast.sources import TraceNote, TraceQuery, is_source_url


@click.command("watch")
@click.argument("url")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Results file (.jsonl), shared with `mast label` runs on the same store.")
@judge_options
@click.option("--every", default="60s", show_default=True, metavar="DURATION", help="Time between polls.")
@click.option("--quiet", "quiet", default=f"{int(DEFAULT_QUIET.total_seconds())}s", show_default=True,
              metavar="DURATION",
              help="A trace is finished once its root span arrived and no span arrived for this long.")
@click.option("--budget-usd", type=click.FloatRange(min=0), envvar="MAST_BUDGET_USD",
              help="Spend at most this many dollars per UTC day; traces past it wait for the next day.")
@click.option("--since", metavar="TIME", help="On the first start, only traces whose root started at or after TIME.")
@click.option("--root-span", "root_names", multiple=True, metavar="NAME", help="Only traces whose root span has this name.")
@click.option("--filter", "store_filter", metavar="EXPR", help="The store's own filter (MLflow's search filter).")
@click.option("--state", "state_path", type=click.Path(dir_okay=False, path_type=Path),
              help="Where the position is kept [default: OUTPUT.watch.json].")
@click.option("-j", "--concurrency", type=click.IntRange(1, 2000), default=8, show_default=True,
              envvar="MAST_CONCURRENCY", help="Traces judged at the same time.")
@click.option("--write-back", is_flag=True, help="Write each verdict back to the store (Phoenix annotations, MLflow feedback).")
@click.option("--emit-otel", "emit_otel", is_flag=False, flag_value="", default=None, metavar="[ENDPOINT]",
              help="Send each verdict as an OTel gen_ai.evaluation.result event (OTLP/HTTP).")
@click.option("--once", is_flag=True, help="Poll once and exit (for cron).")
def command(
    url: str,
    output: Path,
    every: str,
    quiet: str,
    budget_usd: float | None,
    since: str | None,
    root_names: tuple[str, ...],
    store_filter: str | None,
    state_path: Path | None,
    concurrency: int,
    write_back: bool,
    emit_otel: str | None,
    once: bool,
    judge_config: JudgeConfig,
) -> None:
    """Label every new trace of URL (phoenix://HOST:PORT/PROJECT, mlflow://HOST:PORT/EXPERIMENT, or a FOLDER) once it has finished.

    A trace counts as finished when its root span has arrived (spans are sent when they end) and
    no new span of it arrived for --quiet (counted from the trace's end time where the store gives it,
    as MLflow does, so traces that ended long ago are labelled at once). In a folder (~/.claude/projects, ~/.codex/sessions), each
    trace file counts as finished once it has not changed for --quiet. The position in the store, the traces waiting and the
    day's spend are kept in the state file, so a stopped or killed watcher started again labels
    every trace exactly once. SIGINT/SIGTERM stop after the poll in progress.
    """
    source = None
    if not is_source_url(url):
        if not Path(url).expanduser().is_dir():
            raise UsageError(f"{url}: not a trace store URL (phoenix://HOST:PORT/PROJECT, mlflow://HOST:PORT/EXPERIMENT) "
                             "or a folder")
        from mast.sources.folder import FolderSource

        if write_back:
            raise UsageError("--write-back writes to a trace store; a folder has none")
        source = FolderSource(url)  # session files (~/.claude/projects, ~/.codex/sessions), each once it is quiet
        url = source.url
    interval = parse_duration(every).total_seconds()
    query = TraceQuery(since=parse_time(since) if since else None, root_names=root_names, filter=store_filter or None)
    judge = configured_judge(judge_config)
    # The watcher appends to -o as label does: a file of another judge's answers (an earlier watch
    # with the detectors, another endpoint) is refused before anything is judged, not mixed into.
    check_one_judge(output, judge.info)
    notice = judge_notice(judge_config) if not judge_config.jury else None
    if notice:
        stderr.print(f"mast: {notice}", markup=False, highlight=False)
    stop = threading.Event()
    _stop_on_signals(stop)
    with ResultsFile(output) as results:
        watcher = Watcher(url, results, judge, state_path=state_path or output.with_name(output.name + ".watch.json"),
                          quiet=parse_duration(quiet), budget_usd=budget_usd, query=query, concurrency=concurrency,
                          source=source)
        try:
            while not stop.is_set():
                report = asyncio.run(watcher.poll())
                _to_sinks(report, url, write_back=write_back, emit_otel=emit_otel)
                for name, reason in (source.skipped.items() if source is not None else ()):
                    stderr.print(f"mast: watch: skipped {name}: {reason}", markup=False, highlight=False)
                left = "" if report.budget_left_usd is None else f", ${report.budget_left_usd:.4f} left today"
                stderr.print(f"mast: watch: {report.new} new, {len(report.labelled)} labelled, "
                             f"{report.pending} waiting{left}", markup=False, highlight=False)
                if once:
                    break
                stop.wait(interval)
        finally:
            watcher.close()


def _to_sinks(report: PollReport, url: str, *, write_back: bool, emit_otel: str | None) -> None:
    """--write-back / --emit-otel: the poll's results to the sinks (every finished trace; OTel: the new ones)."""
    names = (["write-back"] if write_back else []) + (["otel"] if emit_otel is not None else [])
    if not names or not report.results:
        return
    from mast.engines import open_run_sinks

    sinks = open_run_sinks(names, None, urls=[url], options={"otel_endpoint": emit_otel or None}, on_notice=_notice)
    assert sinks is not None
    fresh = {id(d) for d in report.labelled}
    try:
        for diagnosis in report.results:
            trace = report.traces.get(diagnosis.trace_id)
            note = TraceNote.of(url, trace, report.roots.get(diagnosis.trace_id)) if trace is not None else None
            sinks.write(diagnosis, fresh=id(diagnosis) in fresh, note=note)
    finally:
        sinks.close()


def _notice(line: str) -> None:
    stderr.print(f"mast: {line}", markup=False, highlight=False)


def _stop_on_signals(stop: threading.Event) -> None:
    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
