"""``mast evaluate``: agreement of a judge with gold labels, of two judges, or of failure attribution."""

from __future__ import annotations

import click

from mast.cli._shared import boot_seed_option, bootstrap_seed, stdout, write_line
from mast.errors import UsageError

_FORMATS = click.Choice(["auto", "diagnoses", "long", "wide", "mad", "mastlint", "present-list", "review"])


@click.command("evaluate")
@click.option(
    "--pred",
    "preds",
    multiple=True,
    required=True,
    type=click.Path(exists=True),
    help="Predictions: results.jsonl, a Scout scan of the mast scanner or a label file. Give it twice (and no --gold) to compare two judges.",
)
@click.option(
    "--gold",
    type=click.Path(exists=True),
    help="Gold labels (CSV, JSONL, MAD, mast-lint); with --attribution, Who&When records.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the whole report as JSON.")
@click.option(
    "--attribution", is_flag=True, help="Evaluate first_failure (agent, step) against Who&When-style gold."
)
@click.option(
    "--n-boot",
    default=1000,
    show_default=True,
    type=click.IntRange(min=0),
    help="Bootstrap resamples of traces (0: no CIs).",
)
@boot_seed_option
@click.option(
    "--ties",
    type=click.Choice(["exclude", "present", "absent"]),
    default="exclude",
    show_default=True,
    help="What a tied majority vote of several annotators becomes.",
)
@click.option(
    "-k",
    "--k",
    "k",
    default=1,
    show_default=True,
    type=click.IntRange(min=0),
    help="Step tolerance for --attribution.",
)
@click.option(
    "--pred-format", type=_FORMATS, default="auto", show_default=True, help="Format of the --pred files."
)
@click.option(
    "--gold-format", type=_FORMATS, default="auto", show_default=True, help="Format of the --gold file."
)
@click.option(
    "--jurors",
    is_flag=True,
    help="Jury results (--jury/--samples): score each juror, the reduced verdict and inter-juror agreement.",
)
@click.option(
    "--taxonomy",
    default=None,
    metavar="NAME|FILE",
    help="Taxonomy of the labels (e.g. a `mast discover` taxonomy.yaml) [default: mast-v3].",
)
@click.option(
    "--disagreements",
    "max_disagreements",
    default=20,
    show_default=True,
    type=click.IntRange(min=0),
    help="Disagreements listed in the table (--json lists all).",
)
def command(
    preds: tuple[str, ...],
    gold: str | None,
    as_json: bool,
    attribution: bool,
    n_boot: int,
    seed: int,
    ties: str,
    k: int,
    pred_format: str,
    gold_format: str,
    max_disagreements: int,
    jurors: bool = False,
    taxonomy: str | None = None,
    old_seed: int | None = None,
) -> None:
    """Measure how far predictions agree with gold labels (or with a second judge).

    \b
    mast evaluate --pred results.jsonl --gold gold.csv
    mast evaluate --pred judge_a.jsonl --pred judge_b.jsonl          judge vs judge
    mast evaluate --pred results.jsonl --gold who_and_when/ --attribution
    mast evaluate --pred jury.jsonl --gold gold.csv --jurors          each juror vs the jury
    """  # noqa: D301 (click's \b keeps the example lines as they are)
    from mast.evaluation import compare_judges, evaluate, evaluate_attribution

    seed = bootstrap_seed(seed, old_seed)
    if attribution:
        if len(preds) != 1 or gold is None:
            raise UsageError(
                "--attribution needs one --pred (results) and --gold (Who&When records or a table)"
            )
        attr = evaluate_attribution(preds[0], gold, k=k, n_boot=n_boot, seed=seed)
        if as_json:
            write_line(attr.to_json())
        else:
            write_line(attr.to_text(width=max(stdout.width, 100)))
        return
    if jurors:
        _jurors(preds, gold, as_json, n_boot=n_boot, seed=seed, ties=ties, gold_format=gold_format)
        return
    options: dict[str, object] = {"n_boot": n_boot, "seed": seed, "ties": ties, "pred_format": pred_format}
    if taxonomy is not None:
        from mast.taxonomy import load_taxonomy

        options["taxonomy"] = load_taxonomy(taxonomy)
    if len(preds) == 2 and gold is None:
        report = compare_judges(preds[0], preds[1], gold_format=pred_format, **options)
    elif len(preds) == 1 and gold is not None:
        report = evaluate(preds[0], gold, gold_format=gold_format, **options)  # type: ignore[arg-type]
    else:
        raise UsageError("give --pred and --gold, or two --pred to compare judges")
    if as_json:
        write_line(report.to_json())
    else:
        # Rendered at a readable width even when piped: a squeezed table is worse than a wide one.
        table = report.table(max_disagreements=max_disagreements)
        from mast.evaluation.report import render_text  # scikit-learn loads only for this command

        write_line(render_text(table, width=max(stdout.width, 150)).rstrip())


def _jurors(preds: tuple[str, ...], gold: str | None, as_json: bool, **options: object) -> None:
    from mast.evaluation.jury import evaluate_jury
    from mast.evaluation.report import render_text

    if len(preds) != 1 or gold is None:
        raise UsageError("--jurors needs one --pred (jury results) and --gold")
    report = evaluate_jury(preds[0], gold, **options)  # type: ignore[arg-type]
    write_line(
        report.to_json() if as_json else render_text(report.table(), width=max(stdout.width, 130)).rstrip()
    )
