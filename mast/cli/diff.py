"""``mast diff``: compare two labelled runs mode by mode (regression tracking between agent versions)."""

from __future__ import annotations

import math
import sys
from typing import Any

import click
import orjson

from mast._outputs import terminal_safe
from mast.cli._shared import results_path, stdout, write_line
from mast.errors import UsageError

EXIT_WORSE = 3
"""Exit status when a mode listed in ``--fail-if-worse`` rose significantly."""


def _pct(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{100 * value:.1f}%"


def _span(low: float, high: float, *, signed: bool = False) -> str:
    if low is None or math.isnan(low):
        return ""
    if signed:
        return f"[{100 * low:+z.1f}, {100 * high:+z.1f}]"
    return f"[{100 * low:.0f}, {100 * high:.0f}]"


def _p(value: float) -> str:
    return "-" if value is None or math.isnan(value) else (f"{value:.3f}" if value >= 0.001 else "<0.001")


def _codes(text: str) -> list[str]:
    from mast.taxonomy import normalize_code

    try:
        return [normalize_code(part.strip()) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise UsageError(f"--fail-if-worse: {exc}") from exc


@click.command("diff")
@click.argument("base", type=click.Path(exists=True))
@click.argument("new", type=click.Path(exists=True))
@click.option("--key", default="auto", show_default=True, metavar="auto|trace_id|file|path|COLUMN",
              help="What identifies a task in both runs (auto: trace_id, else the source file name, else "
                   "its path under the run's folder, else that path and the trace_id).")
@click.option("--pairing", type=click.Choice(["auto", "paired", "unpaired"]), default="auto", show_default=True,
              help="auto: paired when both runs cover the same tasks.")
@click.option("--level", default=0.95, show_default=True, type=click.FloatRange(0, 1, min_open=True, max_open=True),
              help="Confidence level of the intervals.")
@click.option("--fail-if-worse", "fail_if_worse", default=None, metavar="CODES",
              help=f"Exit {EXIT_WORSE} when one of these modes (1.3,3.2) rose significantly.")
@click.option("--threshold", default=0.05, show_default=True, type=click.FloatRange(0, 1, min_open=True),
              help="Significance level for --fail-if-worse (Holm-adjusted over the listed modes).")
@click.option("--changed", "max_changed", default=20, show_default=True, type=click.IntRange(min=0),
              help="Changed traces listed (--json lists all).")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def command(
    base: str, new: str, key: str, pairing: str, level: float, fail_if_worse: str | None, threshold: float,
    max_changed: int, as_json: bool,
) -> None:
    """Compare two labelled runs (e.g. agent v1 vs v2): per mode, prevalence in each and the change.

    \b
    mast diff v1.jsonl v2.jsonl
    mast diff v1.jsonl v2.jsonl --fail-if-worse 1.3,3.2 --threshold 0.05     for CI: exit 3 on a rise
    mast diff HOOKS_FOLDER HOOKS_FOLDER       one folder, one file per judge (mast hooks): the two judges compared
    """  # noqa: D301 (click's \b keeps the example lines as they are)
    from mast.regression import changed_traces, diff, worse_modes

    base, new = _runs(base, new)

    result = diff(base, new, key=key, pairing=pairing, level=level)  # type: ignore[arg-type]
    watched = _codes(fail_if_worse) if fail_if_worse else []
    worse = worse_modes(result, watched, threshold=threshold) if watched else []
    changed = changed_traces(result)
    if as_json:
        payload: dict[str, Any] = {
            "base": base, "new": new, "pairing": result.attrs["pairing"], "key": result.attrs["key"],
            "level": level, "note": result.attrs["note"], "judges": result.attrs["judges"],
            "judge_note": result.attrs["judge_note"], "not_judged": result.attrs["not_judged"],
            "modes": [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
                      for row in result.to_dict("records")],
            "changed": changed.to_dict("records"), "fail_if_worse": watched, "worse": worse,
        }
        write_line(orjson.dumps(payload, option=orjson.OPT_SERIALIZE_NUMPY).decode())
    else:
        _print(result, changed, base, new, level, max_changed, worse)
    if result.attrs.get("not_judged_note"):
        click.echo(terminal_safe(f"mast: warning: {result.attrs['not_judged_note']}"), err=True)
    if worse:
        click.echo(terminal_safe(f"mast: significant rise in {', '.join(worse)} (threshold {threshold:g})"), err=True)
        sys.exit(EXIT_WORSE)


def _runs(base: str, new: str) -> tuple[str, str]:
    """The two results files to compare; a folder (one results file per judge, as hooks write) gives its own.

    The same folder twice compares its two last changed files (two judges of the same sessions);
    two folders compare the same judge's file in each when they share one. A Scout scan folder is
    one run.
    """
    from pathlib import Path

    from mast.results import is_scout_scan

    if Path(base).is_dir() and Path(new).is_dir() and not (is_scout_scan(base) or is_scout_scan(new)):
        if Path(base).resolve() == Path(new).resolve():
            older, newer = results_path(base, newest=2)
            return older, newer
        common = {p.name for p in Path(base).glob("*.jsonl")} & {p.name for p in Path(new).glob("*.jsonl")}
        if common:
            from mast.results import results_files

            name = next(p.name for p in reversed(results_files(new)) if p.name in common)
            return str(Path(base) / name), str(Path(new) / name)
    (base_file,) = results_path(base)
    (new_file,) = results_path(new)
    return base_file, new_file


def _print(result: Any, changed: Any, base: str, new: str, level: float, max_changed: int, worse: list[str]) -> None:
    from rich.table import Table

    table = Table(title=f"{base} -> {new}", caption=f"{level:.0%} intervals; {result.attrs['pairing']}")
    for column in ("mode", "name", "base", "new", "change", "p", "p (Holm)"):
        table.add_column(column, justify="left" if column in ("mode", "name") else "right")
    for row in result.to_dict("records"):
        mark = " ▲" if row["code"] in worse else ""
        table.add_row(
            row["code"] + mark, row["name"],
            f"{_pct(row['base_prevalence'])} {_span(row['base_low'], row['base_high'])} n={row['n_base']}",
            f"{_pct(row['new_prevalence'])} {_span(row['new_low'], row['new_high'])} n={row['n_new']}",
            f"{100 * row['difference']:+z.1f} {_span(row['diff_low'], row['diff_high'], signed=True)}"
            if not math.isnan(row["difference"]) else "-",
            _p(row["p_value"]), _p(row["p_holm"]),
        )
    stdout.print(table)
    stdout.print(result.attrs["note"], markup=False, highlight=False)
    if result.attrs.get("judge_note"):
        stdout.print(f"note: {result.attrs['judge_note']}", markup=False, highlight=False)
    if not changed.empty:
        what = "verdicts of the two judges differ on" if result.attrs.get("judge_note") else "verdicts changed between the runs"
        stdout.print(f"{len(changed)} {what}:", markup=False)
        for entry in changed.head(max_changed).to_dict("records"):
            arrow = "gained" if entry["new"] else "lost"
            name = entry.get("file")
            # A hashed id (sha256:...) says nothing to a reader: the file name goes beside it.
            named = isinstance(name, str) and name and str(entry["key"]) not in (name, name.rsplit(".", 1)[0])
            where = f"{entry['key']} ({name})" if named else entry["key"]
            stdout.print(f"  {where}  {entry['code']} {arrow}", markup=False, highlight=False)
        if len(changed) > max_changed:
            stdout.print(f"  ... {len(changed) - max_changed} more (--json lists all)", markup=False)
