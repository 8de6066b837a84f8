"""``mast push``: write the verdicts of a results file to a trace store as annotations."""

from __future__ import annotations

from pathlib import Path

import click

from mast._words import plural
from mast.batch.table import read_results
from mast.cli._shared import stderr, write_line
from mast.errors import UsageError
from mast.sources import is_source_url


@click.command("push")
@click.argument("results", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("url")
@click.option("--all-sources", is_flag=True,
              help="Push every result, not only those read from URL (e.g. an OTLP file export of the same traces).")
@click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON on stdout.")
def command(results: Path, url: str, all_sources: bool, as_json: bool) -> None:
    """Write the verdicts in RESULTS to the trace store at URL (phoenix://HOST:PORT/PROJECT).

    Per trace: one annotation per assessed mode (present/absent, confidence, evidence), a summary
    annotation, and one on the span of the first failure. Writing again updates them in place.
    The last result of each trace in RESULTS is the one written. Needs
    pip install 'mast-judge[phoenix]'; the key comes from PHOENIX_API_KEY.
    """
    if not is_source_url(url):
        raise UsageError(f"{url}: not a trace store URL (phoenix://HOST:PORT/PROJECT)")
    diagnoses = read_results(results)
    latest = {d.trace_id: d for d in diagnoses if all_sources or d.source.path == url}
    if not latest:
        raise UsageError(f"{results}: no result read from {url} (--all-sources pushes every result)")
    from mast.integrations.phoenix import push

    report = push(latest.values(), url)
    for line in report.skipped:
        stderr.print(f"mast: {line}", markup=False, highlight=False)
    stderr.print(f"mast: wrote {report.trace_annotations} trace and {report.span_annotations} span annotations "
                 f"for {plural(report.traces, 'trace')} to {url}", markup=False, highlight=False)
    if as_json:
        import orjson

        write_line(orjson.dumps(report.__dict__).decode())
