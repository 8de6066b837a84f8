"""``mast gold``: the review gold out (CSV for ``mast evaluate``, Inspect Scout sets) and back in."""

from __future__ import annotations

from pathlib import Path

import click

from mast.cli._shared import stderr, stdout
from mast.errors import UsageError


@click.group("gold")
def command() -> None:
    """Export the gold `mast review` writes, or import a Scout validation set into a gold file.

    \b
    mast gold export gold.jsonl gold.csv                 the CSV `mast evaluate --gold` reads
    mast gold export gold.jsonl validation.yaml          an Inspect Scout validation set (.csv with --format scout)
    mast gold import validation.yaml -o gold.jsonl       a Scout set back into a gold file
    mast gold export gold.jsonl phoenix://HOST:PORT/PROJECT   human annotations (also mlflow://...)
    mast gold import phoenix://HOST:PORT/PROJECT -o gold.jsonl human labels in the store as gold
    """  # noqa: D301 (click's \b keeps the example lines as they are)


@command.command("export")
@click.argument("gold", type=click.Path(exists=True, dir_okay=False))
@click.argument("output")
@click.option(
    "--format",
    "kind",
    type=click.Choice(["auto", "long", "scout"]),
    default="auto",
    show_default=True,
    help="long: trace_id,code,present,annotator CSV; scout: id + target per trace. auto: scout for .json/.yaml.",
)
@click.option("--split", default=None, help="Write this split name on each Scout case (dev, test...).")
@click.option(
    "--with-improve",
    is_flag=True,
    help="Include improve-queue cells (left out by default: they are a biased sample).",
)
def export(gold: str, output: str, kind: str, split: str | None, with_improve: bool) -> None:
    """Write the gold's current cells as a label CSV, a Scout validation set, or human annotations in a store.

    OUTPUT a phoenix:// or mlflow:// URL: one HUMAN annotation (MLflow: feedback) per trace, mode
    and reviewer, with the reviewer's note, on the store's trace of the same id; run again, it
    updates them in place. Every queue and `unsure` go too (the store keeps what was said).
    A trace the store does not hold is named on stderr, its labels left out, and the exit
    status is 1; the other traces' labels are written.
    """
    from mast.review.export import write_gold_csv, write_scout
    from mast.sources import is_source_url, public_url

    if is_source_url(output):
        from mast.review.stores import export_gold

        report = export_gold(gold, output)
        for line in report.skipped:
            stderr.print(f"mast: {line}", markup=False, highlight=False)
        stdout.print(
            f"wrote {report.cells} human labels on {report.traces} traces to {public_url(output)}",
            markup=False,
            highlight=False,
        )
        if report.skipped:
            raise SystemExit(1)  # labels the user made did not all arrive: a script must see it
        return

    queues: tuple[str, ...] = ("random", "improve") if with_improve else ("random",)
    suffix = Path(output).suffix.lower()
    if kind == "auto":
        kind = "scout" if suffix in (".json", ".yaml", ".yml") else "long"
    if kind == "long":
        if suffix != ".csv":
            raise UsageError(f"{output}: the long form is a .csv file")
        path = write_gold_csv(gold, output, queues=queues)  # type: ignore[arg-type]
    else:
        path = write_scout(gold, output, split=split, queues=queues)  # type: ignore[arg-type]
    stdout.print(f"wrote {path}", markup=False, highlight=False)


@command.command("import")
@click.argument("source")
@click.option("-o", "--gold", required=True, type=click.Path(dir_okay=False), help="Gold file to append to.")
@click.option("--reviewer", default="scout", show_default=True, help="Reviewer name the imported cells get.")
def import_(source: str, gold: str, reviewer: str) -> None:
    """Append a Scout validation set's targets, or a store's human labels, to a gold file.

    SOURCE a phoenix:// or mlflow:// URL: every HUMAN annotation (MLflow: assessment) whose name is
    a mode (`mast.1.3 ...`, `1.3`, or the mode's name) becomes a cell of its reviewer (--reviewer
    is not used: the store names them), keyed by the store's trace id.
    """
    from mast.review.export import import_scout
    from mast.sources import is_source_url

    if is_source_url(source):
        from mast.review.stores import import_gold

        count = import_gold(source, gold)
    elif not Path(source).is_file():
        raise UsageError(f"{source}: no such file (or a phoenix:// / mlflow:// URL)")
    else:
        count = import_scout(source, gold, reviewer=reviewer)
    stdout.print(f"appended {count} cells to {gold}", markup=False, highlight=False)
