"""``mast export``: a results file as a CSV or Parquet table."""

from __future__ import annotations

from pathlib import Path

import click

from mast.batch import read_results, write_table
from mast.cli._shared import stderr


@click.command("export")
@click.argument("results", type=click.Path(dir_okay=False, path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="Table to write: a name ending in .csv or .parquet.")
@click.option("--long", "long_form", is_flag=True,
              help="One row per trace and mode (present, confidence, explanation, evidence) instead of per trace.")
def command(results: Path, output: Path, long_form: bool) -> None:
    """Write RESULTS (a results.jsonl from `mast label`) as a table: one row per trace.

    Columns: trace_id, status, one column per mode code (true/false, empty when not assessed),
    first failure, task completion, summary, source, judge, tokens and cost, then per mode its
    confidence, explanation and evidence quotes. --long writes one row per trace and mode.

    \b
    mast export results.jsonl -o results.parquet
    """  # noqa: D301 - click's \b keeps a paragraph unwrapped
    diagnoses = read_results(results)
    write_table(diagnoses, output, form="long" if long_form else "wide")
    stderr.print(f"mast: {len(diagnoses)} rows written to {output}", markup=False, highlight=False)
