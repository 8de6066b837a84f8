"""``mast push``: write the verdicts of a results file to a trace store (Phoenix annotations, MLflow feedback)."""

from __future__ import annotations

from pathlib import Path

import click

from mast._words import plural
from mast.batch.table import read_results
from mast.cli._shared import stderr, write_line
from mast.diagnosis import Diagnosis
from mast.errors import UsageError
from mast.sources import is_source_url, public_url, source_scheme, step_spans

IDS_PER_READ = 50


@click.command("push")
@click.argument("results", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("url")
@click.option("--all-sources", is_flag=True,
              help="Push every result, not only those read from URL (e.g. an OTLP file export of the same traces).")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON on stdout.")
def command(results: Path, url: str, all_sources: bool, as_json: bool) -> None:
    """Write the verdicts in RESULTS to the trace store at URL (phoenix://HOST:PORT/PROJECT, mlflow://HOST:PORT/EXPERIMENT).

    Per trace: one annotation (MLflow: feedback) per assessed mode (present/absent, confidence,
    evidence), a summary, and one on the span of the first failure. Writing again updates them in
    place. The last result of each trace in RESULTS is the one written. Phoenix needs
    pip install 'mast-judge[phoenix]'; the key comes from PHOENIX_API_KEY. MLflow takes
    MLFLOW_TRACKING_TOKEN or MLFLOW_TRACKING_USERNAME/PASSWORD.
    """
    shown = public_url(url)  # what is printed and what results record: never the URL's user and password
    if not is_source_url(url):
        raise UsageError(f"{shown}: not a trace store URL (phoenix://HOST:PORT/PROJECT, mlflow://HOST:PORT/EXPERIMENT)")
    diagnoses = read_results(results)
    latest = {d.trace_id: d for d in diagnoses if all_sources or d.source.path == shown}
    if not latest:
        raise UsageError(f"{results}: no result read from {shown} (--all-sources pushes every result)")
    if source_scheme(url) == "mlflow":
        _push_mlflow(list(latest.values()), url, as_json)
        return
    from mast.integrations.phoenix import push

    report = push(latest.values(), url)
    for line in report.skipped:
        stderr.print(f"mast: {line}", markup=False, highlight=False)
    stderr.print(f"mast: wrote {report.trace_annotations} trace and {report.span_annotations} span annotations "
                 f"for {plural(report.traces, 'trace')} to {shown}", markup=False, highlight=False)
    if as_json:
        import orjson

        write_line(orjson.dumps(report.__dict__).decode())


def _push_mlflow(diagnoses: list[Diagnosis], url: str, as_json: bool) -> None:
    """Feedback for each result, its steps mapped to spans from the trace as the server holds it now."""
    from mast.integrations.mlflow import FeedbackWriter
    from mast.sources.mlflow import MLflowSource

    source = MLflowSource(url)
    writer = FeedbackWriter(url, api=source.api)
    try:
        for start in range(0, len(diagnoses), IDS_PER_READ):
            chunk = diagnoses[start : start + IDS_PER_READ]
            traces = source.read([d.trace_id for d in chunk])
            for diagnosis in chunk:
                trace = traces.get(diagnosis.trace_id)
                if trace is None:
                    writer.report.skipped.append(f"{diagnosis.trace_id}: not in {public_url(url)}")
                    continue
                same = diagnosis.trace_hash is None or trace.content_hash() == diagnosis.trace_hash
                writer.write(diagnosis, step_spans(trace) if same else None)
    finally:
        source.close()
    r = writer.report
    for line in r.skipped:
        stderr.print(f"mast: {line}", markup=False, highlight=False)
    stderr.print(f"mast: wrote feedback for {r.traces} traces to {public_url(url)}: {r.created} new, {r.updated} updated, "
                 f"{r.unchanged} unchanged, {r.deleted} removed", markup=False, highlight=False)
    if as_json:
        import orjson

        write_line(orjson.dumps(r.__dict__).decode())
    if r.skipped:
        raise SystemExit(1)
