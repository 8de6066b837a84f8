"""``mast report``: a self-contained HTML page about a results file."""

from __future__ import annotations

import click

from mast.cli._judge_options import _read_patterns
from mast.cli._shared import boot_seed_option, bootstrap_seed, results_path, stderr, stdout
from mast.errors import UsageError


@click.command("report")
@click.argument("results", type=click.Path(exists=True))
@click.option("--gold", type=click.Path(exists=True, dir_okay=False), help="Gold labels: adds agreement and disagreement sections.")
@click.option("-o", "--output", default="report.html", show_default=True, type=click.Path(dir_okay=False), help="HTML file to write.")
@click.option("--title", help="Page title.")
@click.option("--n-boot", default=1000, show_default=True, type=click.IntRange(min=0), help="Bootstrap resamples for the agreement CIs.")
@boot_seed_option
@click.option("--base", type=click.Path(exists=True), help="An earlier run (a results file or a Scout scan): adds a section on what changed (mast diff).")
@click.option("--redact-patterns", "redact_patterns", metavar="FILE", callback=_read_patterns,
              help="The custom redaction patterns the run used (its --redact-patterns file): transcripts are shown "
                   "redacted with them; a run with patterns the report lacks shows no transcript.")
def command(results: str, gold: str | None, output: str, title: str | None, n_boot: int, seed: int, base: str | None,
            redact_patterns: tuple[tuple[str, str], ...] | None = None, old_seed: int | None = None) -> None:
    """Write an HTML report: prevalence, co-occurrence, first failures, cost; agreement with --gold.

    \b
    mast report results.jsonl -o report.html
    mast report results.jsonl --gold gold.csv -o report.html
    mast report v2.jsonl --base v1.jsonl -o report.html           adds what changed since v1
    mast report HOOKS_FOLDER -o report.html                        a folder of one file per judge: the last changed
    mast report scans/scan_id=abc -o report.html                   a Scout scan of the mast scanner
    """  # noqa: D301 (click's \b keeps the example lines as they are)
    from mast.report import write_report

    seed = bootstrap_seed(seed, old_seed)
    if not output.lower().endswith((".html", ".htm")):
        raise UsageError(f"-o {output}: mast report writes one HTML file; use a name ending in .html")

    (results,) = results_path(results)
    notices: list[str] = []
    path = write_report(results, output, gold=gold, title=title, n_boot=n_boot, seed=seed, base=base,
                        redact_patterns=redact_patterns or (), notices=notices)
    for line in notices:
        stderr.print(f"mast: {line}", markup=False, highlight=False)
    stdout.print(f"wrote {path}", markup=False, highlight=False)
