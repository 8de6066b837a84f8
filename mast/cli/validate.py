"""``mast validate``: how far to trust a judge, measured on human-labelled traces."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click
from rich.table import Table

from mast._words import plural
from mast.cli._judge_options import judge_options
from mast.cli._shared import stderr, stdout, write_line
from mast.errors import UsageError
from mast.judge import JudgeConfig
from mast.judge.classify import judge_notice

if TYPE_CHECKING:
    import pandas as pd

    from mast.validation import ValidationReport


def _f(value: float | None) -> str:
    from mast.validation.page import figure  # the page's own rule: one mark for a missing figure

    return figure(value)


@click.command("validate")
@judge_options
@click.option(
    "--set",
    "sets",
    multiple=True,
    metavar="NAME",
    help="Validation set (repeatable; default all). `--list-sets` shows them.",
)
@click.option("--list-sets", is_flag=True, help="List the validation sets and exit.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Label at most N traces per set.")
@click.option(
    "-o",
    "--output",
    default="validation",
    show_default=True,
    type=click.Path(file_okay=False),
    help="Folder for per-set results and the figures (a rerun resumes it).",
)
@click.option(
    "--data",
    "data_dir",
    type=click.Path(exists=True, file_okay=False),
    default=None,
    help="Folder holding the sets, one sub-folder each (default: MAST_VALIDATION_DIR, else the cache, "
    "downloading each set from its public home on first use, checked by sha256).",
)
@click.option("--dry-run", is_flag=True, help="Count traces and estimate tokens and cost; call nothing.")
@click.option(
    "--budget-usd", type=click.FloatRange(min=0), default=None, help="Stop starting traces past this spend."
)
@click.option(
    "-j",
    "--concurrency",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    envvar="MAST_CONCURRENCY",
    help="Traces judged at once (as in mast label).",
)
@click.option(
    "--n-boot", type=click.IntRange(min=0), default=1000, show_default=True, help="Bootstrap resamples."
)
@click.option(
    "--boot-seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the bootstrap (--seed is the judge's sampling seed, as in mast label).",
)
@click.option(
    "-k",
    "k",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Step tolerance of the localisation accuracy.",
)
@click.option(
    "--compare",
    nargs=2,
    type=click.Path(exists=True, file_okay=False),
    default=None,
    metavar="RUN_A RUN_B",
    help="Compare two validation output folders (paired bootstrap); labels nothing.",
)
@click.option(
    "--gold",
    "gold",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Your own gold (the JSONL `mast review` writes): measure the judge on your traces; labels nothing.",
)
@click.option(
    "--results",
    "gold_results",
    type=click.Path(exists=True),
    default=None,
    help="With --gold: the run to measure, a results file or a Scout scan (default: the judge's values recorded in the gold).",
)
@click.option(
    "--split",
    type=click.Choice(["dev", "test"]),
    default=None,
    help="With --gold: only the dev or test traces (seeded, stratified by trace).",
)
@click.option("--split-seed", type=int, default=0, show_default=True, help="Seed of the dev/test split.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary (or comparison) as JSON.")
def command(
    judge_config: JudgeConfig,
    sets: tuple[str, ...],
    list_sets: bool,
    limit: int | None,
    output: str,
    data_dir: str | None,
    dry_run: bool,
    budget_usd: float | None,
    concurrency: int,
    n_boot: int,
    boot_seed: int,
    k: int,
    compare: tuple[str, str] | None,
    gold: str | None,
    gold_results: str | None,
    split: str | None,
    split_seed: int,
    as_json: bool,
) -> None:
    """Label human-labelled traces with this judge and report how far to trust it, mode by mode.

    \b
    mast validate --model openai/gpt-4.1-mini -o validation/gpt41mini
    mast validate --judge detectors --set mastlint-ag2
    mast validate --model openai/gpt-4.1-mini --dry-run
    mast validate --compare validation/a validation/b
    mast validate --gold gold.jsonl -o validation/mine     your own traces, reviewed with mast review
    """  # noqa: D301 (click's \b keeps the example lines as they are)
    from mast.datasets import validation_sets
    from mast.validation import ValidationPlan, compare_validations, validate

    if list_sets:
        for spec in validation_sets():
            write_line(f"{spec.name}: {spec.description} ({spec.licence}; {spec.source})")
        return
    if compare:
        frame = compare_validations(*compare, n_boot=n_boot, seed=boot_seed)
        if as_json:
            write_line(frame.to_json(orient="records"))
            return
        _comparison_table(frame, compare)
        return
    if gold is not None:
        from mast.validation.gold import validate_gold

        result = validate_gold(
            gold,
            results=gold_results,
            split=split,  # type: ignore[arg-type]  # click.Choice(["dev", "test"])
            split_seed=split_seed,
            output=output,
            n_boot=n_boot,
            seed=boot_seed,
        )
        if as_json:
            write_line(result.model_dump_json())
            return
        _mode_table(result)
        return
    if gold_results or split:
        raise UsageError("--results and --split go with --gold")
    notice = judge_notice(judge_config)
    if notice:
        stderr.print(notice, markup=False, highlight=False)
    run = validate(
        config=judge_config,
        sets=list(sets) or None,
        output=output,
        limit=limit,
        data_dir=data_dir,
        dry_run=dry_run,
        budget_usd=budget_usd,
        concurrency=concurrency,
        n_boot=n_boot,
        seed=boot_seed,
        k=k,
    )
    if as_json:
        write_line(run.model_dump_json())
        return
    if isinstance(run, ValidationPlan):
        for plan in run.sets:
            cost = "unknown price" if plan.cost_usd is None else f"${plan.cost_usd:.4f}"
            write_line(
                f"{plan.name}: {plural(plan.n_traces, 'trace')}, ~{plan.input_tokens:,} input / ~{plan.output_tokens:,} output tokens, {cost}"
            )
        total = run.cost_usd
        write_line(
            f"total: {'unknown price' if total is None else f'${total:.4f}'} (dry run: nothing was called)"
        )
        return
    _mode_table(run)


def _mode_table(result: ValidationReport) -> None:
    from mast.validation.page import kappa_figure  # the page's own rule: "– (reason)" when not estimable

    output = result.output_dir
    table = Table(title="Agreement with the human gold, per mode (kappa with 95% bootstrap CI)")
    for column in ("mode", "cells", "positives", "precision", "recall", "kappa [CI]", "humans", "status"):
        table.add_column(column, justify="left" if column in ("mode", "status") else "right")
    for m in result.modes:
        table.add_row(
            m.code,
            str(m.n),
            str(m.positives),
            _f(m.precision),
            _f(m.recall),
            kappa_figure(m.kappa, m.kappa_low, m.kappa_high, m.kappa_reason),
            _f(m.human_kappa),
            m.status,
        )
    stdout.print(table)
    stdout.print(result.verdict, markup=False, highlight=False)
    split = result.reviewer_disagreements
    if split:
        stdout.print(
            f"{plural(len(split), 'cell')} where reviewers disagree, left out of the gold: "
            f"see {output}/reviewer_disagreements.csv",
            markup=False,
            highlight=False,
        )
    extra = ", reviewer_disagreements.csv" if result.judge.get("kind") == "gold" else ""
    stdout.print(
        f"wrote {output}/summary.json, per_mode.csv, disagreements.csv{extra}, verdict.txt, report.html",
        markup=False,
        highlight=False,
    )


def _reading(row: dict[Any, Any]) -> str:
    """The row's reading and its caveat; pandas turns a missing caveat into NaN, which is not one."""
    caveat = row.get("caveat")
    return str(row["reading"]) + (f"; {caveat}" if isinstance(caveat, str) and caveat else "")


def _comparison_table(frame: pd.DataFrame, runs: tuple[str, str]) -> None:
    table = Table(title=f"A = {runs[0]}, B = {runs[1]}: kappa and paired bootstrap difference B - A")
    for column in ("scope", "traces", "cells", "positives", "kappa A", "kappa B", "B - A [CI]", "reading"):
        table.add_column(column, justify="left" if column in ("scope", "reading") else "right")
    for row in frame.to_dict(orient="records"):
        table.add_row(
            str(row["scope"]),
            str(row["n_traces"]),
            str(row["n_cells"]),
            str(row["positives"]),
            _f(row["kappa_a"]),
            _f(row["kappa_b"]),
            f"{_f(row['diff'])} [{_f(row['low'])}, {_f(row['high'])}]",
            _reading(row),
        )
    stdout.print(table)
    stdout.print(frame.attrs["note"], markup=False, highlight=False)
