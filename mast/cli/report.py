"""``mast report``: a self-contained HTML page about a results file."""

from __future__ import annotations

import click

from mast.cli._shared import stdout


@click.command("report")
@click.argument("results", type=click.Path(exists=True, dir_okay=False))
@click.option("--gold", type=click.Path(exists=True, dir_okay=False), help="Gold labels: adds agreement and disagreement sections.")
@click.option("-o", "--output", default="report.html", show_default=True, type=click.Path(dir_okay=False), help="HTML file to write.")
@click.option("--title", help="Page title.")
@click.option("--n-boot", default=1000, show_default=True, type=click.IntRange(min=0), help="Bootstrap resamples for the agreement CIs.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the bootstrap.")
def command(results: str, gold: str | None, output: str, title: str | None, n_boot: int, seed: int) -> None:
    """Write an HTML report: prevalence, co-occurrence, first failures, cost; agreement with --gold.

    \b
    mast report results.jsonl -o report.html
    mast report results.jsonl --gold gold.csv -o report.html
    """  # noqa: D301 (click's \b keeps the example lines as they are)
    from mast.report import write_report

    path = write_report(results, output, gold=gold, title=title, n_boot=n_boot, seed=seed)
    stdout.print(f"wrote {path}", markup=False, highlight=False)
