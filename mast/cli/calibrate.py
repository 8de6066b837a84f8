"""``mast calibrate``: sharpen the modes the judge gets wrong on your reviewed traces, kept only where test agrees."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from mast._outputs import terminal_safe
from mast.cli._judge_options import judge_options
from mast.cli._shared import stdout, write_line
from mast.errors import UsageError
from mast.judge.config import JudgeConfig


@click.command("calibrate")
@click.argument("gold", type=click.Path(exists=True, dir_okay=False, path_type=str))
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option(
    "-o",
    "--output",
    default="calibration",
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for taxonomy.yaml, report.json, report.html (and work/, to resume).",
)
@click.option(
    "--results",
    type=click.Path(exists=True, dir_okay=False),
    help="The results file the gold was made over [default: the judge's values recorded in the gold].",
)
@judge_options
@click.option(
    "--split-seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the dev/test split (the one `mast validate --gold --split` uses).",
)
@click.option(
    "--boot-seed",
    type=int,
    default=0,
    show_default=True,
    help="Seed of the paired bootstrap (--seed is the judge's sampling seed).",
)
@click.option(
    "--n-boot",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="Bootstrap resamples of the test traces.",
)
@click.option(
    "--min-positives",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="Test traces with (and without) a mode below which its change is not decided.",
)
@click.option(
    "--mode",
    "modes",
    multiple=True,
    metavar="CODE",
    help="Calibrate only this mode (repeatable) [default: every mode with a dev disagreement].",
)
@click.option(
    "--max-traces-shown",
    type=click.IntRange(min=0),
    default=6,
    show_default=True,
    help="Disagreeing dev traces whose transcript a proposal call shows.",
)
@click.option(
    "-j",
    "--concurrency",
    type=click.IntRange(1, 2000),
    default=8,
    show_default=True,
    envvar="MAST_CONCURRENCY",
    help="Calls in flight.",
)
@click.option(
    "--budget-usd",
    type=click.FloatRange(min=0),
    envvar="MAST_BUDGET_USD",
    help="Send no call that would take this run past this many dollars (a rerun goes on).",
)
@click.option("--dry-run", is_flag=True, help="Count the calls and estimate tokens and cost; call nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the report (or the dry-run plan) as JSON.")
def command(
    gold: str,
    paths: tuple[str, ...],
    output: Path,
    results: str | None,
    judge_config: JudgeConfig,
    split_seed: int,
    boot_seed: int,
    n_boot: int,
    min_positives: int,
    modes: tuple[str, ...],
    max_traces_shown: int,
    concurrency: int,
    budget_usd: float | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Sharpen the definitions of the modes the judge gets wrong on your gold; keep a change only where test agrees.

    \b
    mast calibrate gold.jsonl runs/ --results results.jsonl -o calibrated --model openai/gpt-4.1-mini --dry-run
    mast calibrate gold.jsonl runs/ --results results.jsonl -o calibrated --model openai/gpt-4.1-mini
    mast label new-runs/ -o results.jsonl --taxonomy calibrated/taxonomy.yaml

    \b
    Exit status: 0 done; 1 stopped by the budget (rerun the same command to go on); 2 bad usage.
    """  # noqa: D301 - click's \b keeps a paragraph unwrapped
    from mast.calibration import CalibrateOptions, CalibrationPlan, calibrate

    for given in paths:
        if not Path(given).exists():
            raise UsageError(f"{given}: no such file or folder")
    options = CalibrateOptions(
        split_seed=split_seed,
        boot_seed=boot_seed,
        n_boot=n_boot,
        min_positives=min_positives,
        modes=modes,
        max_traces_shown=max_traces_shown,
        concurrency=concurrency,
        budget_usd=budget_usd,
    )
    result = calibrate(
        gold, list(paths), output, results=results, config=judge_config, options=options, dry_run=dry_run
    )
    if isinstance(result, CalibrationPlan):
        if as_json:
            write_line(result.model_dump_json())
            return
        cost = "unknown price" if result.cost_usd is None else f"${result.cost_usd:.4f}"
        write_line(
            f"{result.dev_traces} dev and {result.test_traces} test traces; {len(result.modes)} modes with dev "
            f"disagreements, {len(result.judged)} with enough test positives to re-judge"
        )
        write_line(
            f"at most {result.proposal_calls} proposal calls + {result.judge_calls} judge calls, "
            f"~{result.input_tokens:,} input / ~{result.output_tokens:,} output tokens, {cost} "
            "(dry run: nothing was called; answers in the cache cost nothing; re-asks of an invalid answer "
            "are not counted)"
        )
        for note in result.notes:
            write_line(terminal_safe(f"note: {note}"))
        return
    if as_json:
        from mast.calibration.write import report_data

        write_line(json.dumps(report_data(result)))
    else:
        from mast.calibration.write import multiple_comparisons

        def kappa(value: float | None) -> str:
            return "undefined" if value is None else f"{value:.2f}"

        for mode in result.modes:
            stdout.print(f"{mode.code:>5}  {mode.decision:<12} {mode.reason}", markup=False, highlight=False)
            if mode.dev is not None:
                stdout.print(
                    f"{'':>5}  {'':<12} dev kappa {kappa(mode.dev.kappa_before)} -> "
                    f"{kappa(mode.dev.kappa_after)} over {mode.dev.n_traces} dev traces (not deciding)",
                    markup=False,
                    highlight=False,
                )
        if result.tested:
            stdout.print(multiple_comparisons(result), markup=False, highlight=False)
        for note in result.notes:
            click.echo(terminal_safe(f"mast: {note}"), err=True)
        totals = result.totals
        cost = "unknown" if totals["cost_usd"] is None else f"${totals['cost_usd']:.4f}"
        stdout.print(
            f"{len(result.accepted)} accepted; {totals['calls']} calls ({totals['cached']} answered from the "
            f"cache), {cost}; wrote {output}/taxonomy.yaml, report.json, report.html",
            markup=False,
            highlight=False,
        )
    if result.stopped:
        click.echo(terminal_safe(f"mast: stopped: {result.stopped}"), err=True)
        sys.exit(1 if result.stopped.startswith("budget") else 0)
