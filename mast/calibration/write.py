"""What calibration writes: ``taxonomy.yaml`` (the shape ``mast discover`` writes), ``report.json``, ``report.html``.

The report shows, per mode, the dev disagreements, the proposal, the test kappa before and after
with their CIs, the paired CI of the difference and the decision. Every text from a trace, a gold
file or a model is HTML-escaped.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

import orjson

from mast.calibration.models import CalibrationResult, ModeDecision
from mast.discovery.write import taxonomy_yaml
from mast.taxonomy import Taxonomy

HEADER = (
    "# The taxonomy after `mast calibrate`: a mode's definition changed only where the test split's kappa\n"
    "# improved with a paired bootstrap CI above 0 (report.html says which and why).\n"
    "# Use it with: mast label TRACES -o results.jsonl --taxonomy taxonomy.yaml\n"
)


def taxonomy_file(taxonomy: Taxonomy, path: Path) -> Path:
    """Write ``taxonomy`` as YAML to ``path`` (atomically: a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_name(path.name + ".part")
    part.write_text(taxonomy_yaml(taxonomy, header=HEADER), encoding="utf-8")
    os.replace(part, path)
    return path


def _f(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _ci(value: tuple[float, float] | None) -> str:
    return "" if value is None else f" [{value[0]:.2f}, {value[1]:.2f}]"


def _row(m: ModeDecision) -> str:
    e = html.escape
    t = m.test
    before = "–" if t is None else _f(t.kappa_before) + _ci(t.ci_before)
    after = "–" if t is None else _f(t.kappa_after) + _ci(t.ci_after)
    diff = "–" if t is None or t.diff is None else f"{t.diff:+.2f}{_ci(t.ci_diff)}"
    if t is not None and t.ci_diff_adjusted is not None:
        diff += f"; Bonferroni{_ci(t.ci_diff_adjusted)}"
    test = "–" if t is None else f"{t.n_traces} ({t.positives}+)"
    d = m.dev
    dev = "–" if d is None else f"{_f(d.kappa_before)} → {_f(d.kappa_after)} ({d.n_traces} traces)"
    cells = [
        m.code,
        m.name,
        f"{m.dev_disagreements} of {m.dev_traces} ({m.dev_false_positives} FP, {m.dev_false_negatives} FN)",
        dev,
        test,
        before,
        after,
        diff,
        m.decision,
        m.reason,
    ]
    return "<tr>" + "".join(f"<td>{e(c)}</td>" for c in cells) + "</tr>"


def _proposal(m: ModeDecision) -> str:
    e = html.escape
    p = m.proposal
    if p is None:
        return ""
    examples = "".join(
        f"<li><code>{e(x.trace_id)}</code> S{x.step}: <q>{e(x.quote)}</q></li>" for x in p.examples
    )
    dropped = f"<p>{p.examples_dropped} unverified example(s) dropped.</p>" if p.examples_dropped else ""
    return (
        f"<h3>{e(m.code)} {e(m.name)}: {e(m.decision)}</h3><dl><dt>Definition</dt><dd>{e(p.definition)}</dd>"
        f"<dt>Use when</dt><dd>{e(p.when_to_use)}</dd><dt>Not when</dt><dd>{e(p.when_not_to_use)}</dd></dl>"
        f"<ul>{examples}</ul>{dropped}"
    )


def multiple_comparisons(result: CalibrationResult) -> str:
    """The plain warning about testing several modes on one test split, with the count and a Bonferroni reading."""
    tested = result.tested
    m = len(tested)
    if m <= 1:
        return (
            f"{m} mode tested on the test split: no correction for multiple comparisons is needed. The dev "
            "figures are those of the traces the proposal was written from: they show fit, not proof."
        )
    level = 1 - 0.05 / m
    holding = [
        x.code
        for x in result.accepted
        if x.test and x.test.ci_diff_adjusted and x.test.ci_diff_adjusted[0] > 0
    ]
    return (
        f"{m} modes were tested on the same test split. Each acceptance uses a 95% CI, so the chance that at "
        f"least one of them is accepted by luck alone grows with the count (up to about {min(m * 2.5, 100):.0f}% "
        f"rather than 2.5%). Read with Bonferroni (each difference's CI at {level:.1%}), the accepted changes "
        f"that still hold are: {', '.join(holding) if holding else 'none'}. Confirm the others on fresh reviewed "
        "traces before trusting them. The dev figures are those of the traces the proposal was written from: "
        "they show fit, not proof."
    )


def report_html(result: CalibrationResult) -> str:
    """One self-contained page: the table of decisions, then each proposal."""
    e = html.escape
    heads = [
        "mode",
        "name",
        "dev disagreements",
        "dev kappa before → after",
        "test traces",
        "test kappa before [CI]",
        "test kappa after [CI]",
        "difference [paired CI]",
        "decision",
        "reason",
    ]
    rows = "".join(_row(m) for m in result.modes)
    notes = "".join(f"<li>{e(n)}</li>" for n in result.notes)
    stopped = (
        f"<p><strong>Stopped:</strong> {e(result.stopped)} (rerun the same command to go on)</p>"
        if result.stopped
        else ""
    )
    totals = result.totals
    cost = "unknown" if totals.get("cost_usd") is None else f"${totals['cost_usd']}"
    split = result.split
    n_dev = len(split["dev"]) if isinstance(split["dev"], list) else split["dev"]
    n_test = len(split["test"]) if isinstance(split["test"], list) else split["test"]
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>mast calibrate</title><style>'
        "body{font-family:system-ui,sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:.3em .5em;vertical-align:top;text-align:left}</style></head><body>"
        f"<h1>Calibration of {e(result.base_version)}</h1>"
        f"<p>Written taxonomy: <code>{e(result.taxonomy_version)}</code>; {len(result.accepted)} change(s) "
        f"accepted. Split seed {e(str(split['seed']))}: {n_dev} dev, {n_test} test traces. A change is accepted "
        f"when the test kappa improves and the 95% paired bootstrap CI of the difference ({result.n_boot} "
        f"resamples of test traces) lies above 0; fewer than {result.min_positives} test traces with (or "
        "without) the mode: not decided.</p>"
        f"<p><strong>Multiple comparisons:</strong> {e(multiple_comparisons(result))}</p>"
        f"{stopped}<table><thead><tr>{''.join(f'<th>{h}</th>' for h in heads)}</tr></thead><tbody>{rows}"
        f"</tbody></table><h2>Proposals</h2>{''.join(_proposal(m) for m in result.modes)}"
        f"<h2>Notes</h2><ul>{notes}</ul><p>{e(str(totals.get('calls')))} calls "
        f"({e(str(totals.get('cached')))} from the cache), {cost}.</p></body></html>\n"
    )


def report_data(result: CalibrationResult) -> dict[str, Any]:
    """The result as ``report.json`` and ``mast calibrate --json`` give it.

    Its fields, and the warning about multiple comparisons that the terminal and the page print
    (``None`` when no mode was tested).
    """
    data = result.model_dump(mode="json")
    data["multiple_comparisons"] = multiple_comparisons(result) if result.tested else None
    return data


def outputs(result: CalibrationResult, taxonomy: Taxonomy, output: Path) -> None:
    """``taxonomy.yaml``, ``report.json`` and ``report.html`` in ``output``."""
    output.mkdir(parents=True, exist_ok=True)
    taxonomy_file(taxonomy, output / "taxonomy.yaml")
    data = report_data(result)
    (output / "report.json").write_bytes(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
    (output / "report.html").write_text(report_html(result), encoding="utf-8")
