"""The ``diff`` section of ``mast report --base BASE.jsonl``: what changed since an earlier run.

A table per mode (prevalence in each run with its interval, the change with its interval, p and
Holm-adjusted p; significant rises and falls marked), the pairing used, the multiple-comparison
note, and the traces whose verdicts changed (see :mod:`mast.regression`).
"""

from __future__ import annotations

import html
import math

import pandas as pd

CHANGED_SHOWN = 100
"""Changed verdicts listed on the page (the rest are counted)."""


def _pct(value: float) -> str:
    return "–" if value is None or math.isnan(value) else f"{100 * value:.1f}%"


def _interval(low: float, high: float) -> str:
    return "" if low is None or math.isnan(low) else f" [{100 * low:z.1f}, {100 * high:z.1f}]"


def _p(value: float) -> str:
    return "–" if value is None or math.isnan(value) else (f"{value:.3f}" if value >= 0.001 else "<0.001")


def diff_section(result: pd.DataFrame, base: str, new: str) -> str:
    """HTML for a :func:`mast.regression.diff` result (a ``<section id='diff'>``)."""
    level = float(result.attrs.get("level", 0.95))
    rows = []
    for row in result.to_dict("records"):
        significant = not math.isnan(row["p_holm"]) and row["p_holm"] < 1 - level
        mark = ("▲ worse" if row["difference"] > 0 else "▼ better") if significant else ""
        cells = [
            f"<td class='text'>{html.escape(row['code'])}</td>",
            f"<td class='text'>{html.escape(row['name'])}</td>",
            f"<td>{_pct(row['base_prevalence'])}{_interval(row['base_low'], row['base_high'])}</td>",
            f"<td>{_pct(row['new_prevalence'])}{_interval(row['new_low'], row['new_high'])}</td>",
            f"<td>{100 * row['difference']:+z.1f}{_interval(row['diff_low'], row['diff_high'])}</td>"
            if not math.isnan(row["difference"]) else "<td>–</td>",
            f"<td>{_p(row['p_value'])}</td><td>{_p(row['p_holm'])}</td><td class='text'>{mark}</td>",
        ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("mode", "name", "base", "new", "change (points)", "p", "p (Holm)", ""))
    changed = result.attrs.get("changed", [])
    listed = "".join(
        f"<li>{html.escape(str(c['key']))}: {html.escape(c['code'])} {'gained' if c['new'] else 'lost'}</li>"
        for c in changed[:CHANGED_SHOWN]
    )
    more = f"<p class='note'>… {len(changed) - CHANGED_SHOWN} more</p>" if len(changed) > CHANGED_SHOWN else ""
    body = (
        f"<p class='note'>{html.escape(base)} → {html.escape(new)}; {html.escape(str(result.attrs.get('pairing', '')))}; "
        f"{level:.0%} intervals. {html.escape(str(result.attrs.get('note', '')))}</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        + (f"<h3>{len(changed)} verdicts changed</h3><ul>{listed}</ul>{more}" if changed else "")
    )
    return f"<section id='diff'><h2>Changes since {html.escape(base)}</h2>{body}</section>"
