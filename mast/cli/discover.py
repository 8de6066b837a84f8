"""``mast discover``: find the failure modes of your own traces that MAST-14 does not name, gated on agreement."""

from __future__ import annotations

import sys
from pathlib import Path

import click
import orjson

from mast._outputs import terminal_safe
from mast.cli._judge_options import judge_options
from mast.cli._shared import stdout, write_line
from mast.errors import UsageError
from mast.judge.config import JudgeConfig


@click.command("discover")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=str))
@click.option("-o", "--output", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Folder for taxonomy.yaml, candidates.yaml, report.html, manifest.json (and work/, to resume).")
@judge_options
@click.option("--results", type=click.Path(exists=True, dir_okay=False),
              help="MAST-14 results of these traces (mast label) to reuse instead of judging them again.")
@click.option("--annotators", metavar="A,B", help="Two models that label the gate part [default: the judge's model "
              "with two seeds at a temperature above 0, a weaker test].")
@click.option("--min-kappa", type=click.FloatRange(0, 1), default=0.4, show_default=True,
              help="A mode is accepted when the lower bound of its kappa 95% CI reaches this.")
@click.option("--min-positives", type=click.IntRange(min=1), default=3, show_default=True,
              help="Gate traces each annotator must label with a mode for its kappa to count.")
@click.option("--min-prevalence", type=click.FloatRange(0, 1), default=0.05, show_default=True,
              help="Share of the discover part's traces a candidate must occur in (and at least 2).")
@click.option("--split-seed", "split_seed", type=int, default=0, show_default=True,
              help="Seed of the split into the part to discover on and the part to gate on.")
@click.option("--window-tokens", type=click.IntRange(min=100), default=6000, show_default=True,
              help="Most tokens of steps the open coder reads at once (whole steps; every window is read).")
@click.option("--cluster-threshold", type=click.FloatRange(0, 2), default=0.8, show_default=True,
              help="Cosine distance above which groups of open codes stay apart.")
@click.option("--stability/--no-stability", default=True, show_default=True,
              help="Also discover on the other half and report which accepted modes are found there too.")
@click.option("--gold", type=click.Path(exists=True, dir_okay=False),
              help="A sheet people labelled (from --sheet): gate against them instead of a second annotator.")
@click.option("--sheet", is_flag=True, help="Stop after the candidates and write DIR/sheet.csv for people to label.")
@click.option("-j", "--concurrency", type=click.IntRange(1, 2000), default=8, show_default=True,
              envvar="MAST_CONCURRENCY", help="Calls in flight.")
@click.option("--budget-usd", type=click.FloatRange(min=0), envvar="MAST_BUDGET_USD",
              help="Send no call that would take this run past this many dollars (a rerun goes on).")
@click.option("--dry-run", is_flag=True, help="Estimate calls, tokens and cost per stage; call nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the manifest (or the dry-run plan) as JSON.")
def command(
    paths: tuple[str, ...], output: Path, judge_config: JudgeConfig, results: str | None, annotators: str | None,
    min_kappa: float, min_positives: int, min_prevalence: float, split_seed: int, window_tokens: int,
    cluster_threshold: float, stability: bool, gold: str | None, sheet: bool, concurrency: int,
    budget_usd: float | None, dry_run: bool, as_json: bool,
) -> None:
    """Extend MAST-14 with the failure modes of your domain, each gated on traces it was not built from.

    \b
    mast discover runs/ -o discovered --model openai/gpt-4.1-mini --dry-run
    mast discover runs/ -o discovered --model openai/gpt-4.1-mini --annotators openai/gpt-4.1,anthropic/claude-sonnet-4-5
    mast label new-runs/ -o results.jsonl --taxonomy discovered/taxonomy.yaml

    \b
    Exit status: 0 done; 1 stopped by the budget (rerun the same command to go on); 2 bad usage.
    """  # noqa: D301 - click's \b keeps a paragraph unwrapped
    from mast.discovery import DiscoverOptions, adiscover, plan_discovery

    for given in paths:
        if not Path(given).exists():
            raise UsageError(f"{given}: no such file or folder")
    chosen = tuple(a.strip() for a in annotators.split(",") if a.strip()) if annotators else ()
    if annotators and len(chosen) != 2:
        raise UsageError("--annotators takes two models: A,B")
    if gold and sheet:
        raise UsageError("--sheet writes the sheet people fill; --gold reads it back: use one at a time")
    options = DiscoverOptions(annotators=chosen, min_kappa=min_kappa, min_positives=min_positives,
                              min_prevalence=min_prevalence, split_seed=split_seed, window_tokens=window_tokens,
                              cluster_threshold=cluster_threshold, stability=stability, concurrency=concurrency,
                              budget_usd=budget_usd, gold=gold, sheet=sheet)
    if dry_run:
        plan = plan_discovery(list(paths), config=judge_config, results=results, options=options)
        if as_json:
            write_line(plan.model_dump_json())
            return
        _print_plan(plan)
        return
    from mast._sync import run_sync
    from mast.discovery.stages import describe_drops

    result = run_sync(adiscover(list(paths), output, config=judge_config, results=results, options=options))
    _trace_view(output, results)
    if as_json:
        write_line(orjson.dumps(result.manifest).decode())
    else:
        for candidate in result.candidates:
            code = candidate.code or "—"
            stdout.print(f"{code:>5}  {candidate.status:<10} {candidate.name}: {candidate.reason}",
                         markup=False, highlight=False)
        for note in result.manifest["notes"]:
            click.echo(terminal_safe(f"mast: {note}"), err=True)
        kept = result.manifest["open_coding"].get("open_coding", {}).get("codes")
        stdout.print(describe_drops(result.manifest["dropped"], kept), markup=False, highlight=False)
        totals = result.manifest["totals"]
        cost = "unknown" if totals["cost_usd"] is None else f"${totals['cost_usd']:.4f}"
        stdout.print(f"{len(result.accepted)} accepted; {totals['calls']} calls ({totals['cached']} answered from the "
                     f"cache), {totals['input_tokens']}+{totals['output_tokens']} tokens, {cost}; wrote {output}/",
                     markup=False, highlight=False)
    if result.stopped:
        click.echo(terminal_safe(f"mast: stopped: {result.stopped}"), err=True)
        sys.exit(1 if result.stopped.startswith("budget") else 0)


def _print_plan(plan: object) -> None:
    from mast.discovery import DiscoveryPlan

    assert isinstance(plan, DiscoveryPlan)
    stdout.print(f"{plan.traces} traces: {plan.discover} to discover on, {plan.gate} to gate on", markup=False)
    rows = [*plan.stages.items(), ("total", plan.totals)]
    for name, stage in rows:
        cost = "unknown" if stage.cost_usd is None else f"${stage.cost_usd:.4f}"
        bound = " (at most)" if stage.upper_bound else ""
        stdout.print(f"  {name:<12} {stage.calls:>6} calls {stage.input_tokens:>10} in {stage.output_tokens:>9} out "
                     f"{cost}{bound}", markup=False, highlight=False)
    for note in plan.notes:
        stdout.print(f"  note: {note}", markup=False, highlight=False)


def _trace_view(output: Path, results: str | None) -> None:
    """``traces.html``: the per-trace view the report's examples link to (mast report of the MAST-14 results)."""
    source = output / "work" / "mast14.jsonl"
    if not source.exists() and results:
        source = Path(results)
    if not source.exists():
        return
    try:
        from mast.report import write_report

        write_report(source, output / "traces.html", title="Traces of the discovery (MAST-14 verdicts)", n_boot=0)
    except Exception as exc:  # noqa: BLE001 - the view is a convenience; the discovery's outputs are written
        click.echo(terminal_safe(f"mast: traces.html not written: {' '.join(str(exc).split())}"), err=True)
