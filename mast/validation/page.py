"""The validation page: verdict, per-mode agreement with CIs (an inline SVG), references, disagreements.

One self-contained HTML file like ``mast report``: no external URL, no plotting library needed.
"""

from __future__ import annotations

import html

from mast._outputs import csp_meta
from mast.validation.models import ModeFinding, Reference, ValidationReport

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2rem auto;max-width:1100px;color:#222;padding:0 1rem}
table{border-collapse:collapse;font-size:.82rem;margin:.5rem 0}th,td{border:1px solid #ddd;padding:.25rem .45rem;vertical-align:top}
th{background:#f4f4f4}.note{color:#666;font-size:.85rem}.trusted{color:#1a7f37}.usable{color:#7a5d00}.weak{color:#b02a2a}
#verdict{font-size:1.05rem;background:#f6f8fa;padding:.8rem;border-left:4px solid #888}
"""


def figure(value: float | None) -> str:
    """A figure as the validation page and ``mast validate`` show it: two decimals; "–" when missing.

    Missing is ``None`` or NaN (undefined: a mode with no positives); the row's caveat says why.
    """
    if value is None or value != value:
        return "–"
    return f"{value:z.2f}"


def kappa_figure(kappa: float | None, low: float | None, high: float | None, reason: str | None = None) -> str:
    """Kappa with its CI as the page and ``mast validate`` show it; ``– (reason)`` when not estimable.

    A kappa that cannot be estimated (one side never varies) is never shown as a zero-width CI.
    """
    if reason:
        return f"– ({reason})"
    if low is None or high is None:
        return figure(kappa)
    return f"{figure(kappa)} [{figure(low)}, {figure(high)}]"


_f = figure


def _figure(modes: list[ModeFinding], references: list[Reference]) -> str:
    """Kappa per mode as a dot with its CI bar, on the whole -1..1 axis, with the paper's o1 kappa as a line.

    The label column is as wide as the longest mode name (about 6.5 px a character at 11 px), so no
    name is cut; a kappa below 0 is drawn where it is, left of the 0 line.
    """
    labels = [f"{mode.code} {mode.name}" for mode in modes]
    row = 22
    left = 12 + round(6.5 * max((len(label) for label in labels), default=10))
    width = left + 440
    height = row * (len(modes) + 1) + 20

    def x(value: float) -> float:
        return left + (max(-1.0, min(1.0, value)) + 1.0) / 2.0 * (width - left - 20)

    parts = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' role='img' aria-label='kappa per mode'>"]
    for tick in (-1.0, -0.5, 0.0, 0.2, 0.4, 0.6, 0.8, 1.0):
        parts.append(f"<line x1='{x(tick):.1f}' x2='{x(tick):.1f}' y1='10' y2='{height - 10}' stroke='#eee'/>"
                     f"<text class='tick' x='{x(tick):.1f}' y='{height - 2}' font-size='10' text-anchor='middle'>{tick:.1f}</text>")
    paper = next((r.kappa for r in references if r.name == "o1 judge (paper)" and r.kappa is not None), None)
    if paper is not None:
        parts.append(f"<line x1='{x(paper):.1f}' x2='{x(paper):.1f}' y1='10' y2='{height - 12}' stroke='#999' "
                     f"stroke-dasharray='4 3'><title>paper o1 kappa {paper}</title></line>")
    for i, (mode, text) in enumerate(zip(modes, labels, strict=True)):
        y = 20 + i * row
        parts.append(f"<text class='mode' x='4' y='{y + 4}' font-size='11'>{html.escape(text)}</text>")
        if mode.kappa_low is not None and mode.kappa_high is not None:
            parts.append(f"<line x1='{x(mode.kappa_low):.1f}' x2='{x(mode.kappa_high):.1f}' y1='{y}' y2='{y}' "
                         "stroke='#4a6fa5' stroke-width='2'/>")
        if mode.kappa is not None:
            parts.append(f"<circle class='kappa' data-code='{html.escape(mode.code)}' cx='{x(mode.kappa):.1f}' cy='{y}' "
                         f"r='4' fill='#1f3b63'><title>{html.escape(mode.code)}: {mode.kappa:z.2f}</title></circle>")
        else:
            parts.append(f"<text x='{left}' y='{y + 4}' font-size='10' fill='#999'>{html.escape(mode.status)}</text>")
    parts.append("</svg>")
    return "".join(parts)


def render_validation_page(report: ValidationReport) -> str:
    """The whole page."""
    judge = html.escape(str(report.judge.get("model") or report.judge.get("kind")))
    modes = "".join(
        f"<tr data-code='{html.escape(m.code)}'><td>{html.escape(m.code)} {html.escape(m.name)}</td><td>{m.n}</td>"
        f"<td>{m.positives}</td><td>{_f(m.base_rate)}</td><td>{_f(m.precision)}</td><td>{_f(m.recall)}</td>"
        f"<td>{_f(m.f1)}</td><td>{html.escape(kappa_figure(m.kappa, m.kappa_low, m.kappa_high, m.kappa_reason))}</td><td>{_f(m.human_kappa)}</td>"
        f"<td class='{m.status.split()[0]}'>{html.escape(m.status)}</td><td>{html.escape(m.note)}</td></tr>"
        for m in report.modes
    )
    refs = "".join(
        f"<tr><td>{html.escape(r.name)}</td><td>{html.escape(r.scope)}</td><td>{_f(r.kappa)}"
        + (f" [{_f(r.kappa_low)}, {_f(r.kappa_high)}]" if r.kappa_low is not None else "")
        + f"</td><td>{_f(r.accuracy)}</td><td>{_f(r.precision)}</td><td>{_f(r.recall)}</td><td>{_f(r.f1)}</td>"
        f"<td class='note'>{html.escape(r.source)}</td></tr>"
        for r in report.references
    )
    sets = "".join(
        f"<tr><td>{html.escape(s.name)}</td><td>{s.n_traces}</td><td>{s.n_judged}</td><td>{s.n_errors}</td>"
        f"<td>{_f(s.evaluation.pooled.kappa) if s.evaluation else '–'}</td>"
        f"<td>{s.unmapped_cells}</td><td class='note'>{html.escape(s.description)}; {html.escape(s.licence)}"
        f"{'; ' + html.escape(s.mapping_note) if s.mapping_note else ''}</td></tr>"
        for s in report.sets
    )
    disagreements = "".join(
        f"<tr data-code='{html.escape(d.code)}' data-kind='{d.kind}'><td>{html.escape(s.name)}</td><td>{html.escape(d.trace_id)}</td>"
        f"<td>{html.escape(d.code)} {html.escape(d.name)}</td><td>{d.kind}</td><td>{html.escape(d.gold_votes or '')}</td>"
        f"<td>{_f(d.pred_confidence)}</td><td>{html.escape(d.pred_evidence[:600])}</td></tr>"
        for s in report.sets if s.evaluation for d in s.evaluation.disagreements
    )
    codes = sorted({m.code for m in report.modes})
    options = "".join(f"<option>{html.escape(c)}</option>" for c in codes)
    code = (
        "const f=document.getElementById('dis-mode'),k=document.getElementById('dis-kind');"
        "function d(){for(const r of document.querySelectorAll('#disagreements tbody tr')){"
        "r.hidden=(f.value&&r.dataset.code!==f.value)||(k.value&&r.dataset.kind!==k.value);}}"
        "f.onchange=d;k.onchange=d;"
    )
    script = f"<script>{code}</script>"
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        + csp_meta(scripts=(code,), styles=(_STYLE,))
        + f"<title>mast validation: {judge}</title><style>{_STYLE}</style></head><body>"
        f"<h1>Validation of {judge}</h1><p class='note'>prompt {html.escape(str(report.judge.get('prompt_hash') or '–'))[:19]}, "
        f"taxonomy {html.escape(str(report.judge.get('taxonomy_version')))}, {report.created_at:%Y-%m-%d %H:%M} UTC</p>"
        f"<section id='verdict-section'><h2>Verdict</h2><p id='verdict'>{html.escape(report.verdict)}</p></section>"
        f"<section id='agreement'><h2>Agreement per mode (Cohen's kappa, 95% bootstrap CI)</h2>"
        f"{_figure(report.modes, report.references)}<p class='note'>Dashed line: the paper's o1 judge (kappa 0.58).</p>"
        "<table><thead><tr><th>mode</th><th>cells</th><th>positives</th><th>base rate</th><th>precision</th><th>recall</th>"
        f"<th>F1</th><th>kappa [CI]</th><th>humans' kappa</th><th>status</th><th>note</th></tr></thead><tbody>{modes}</tbody></table>"
        "</section>"
        "<section id='references'><h2>Reference points</h2><table><thead><tr><th>judge</th><th>traces</th><th>kappa</th>"
        f"<th>accuracy</th><th>precision</th><th>recall</th><th>F1</th><th>source</th></tr></thead><tbody>{refs}</tbody></table></section>"
        "<section id='sets'><h2>Sets</h2><table><thead><tr><th>set</th><th>traces</th><th>judged</th><th>errors</th>"
        f"<th>kappa</th><th>unmapped gold cells</th><th>about</th></tr></thead><tbody>{sets}</tbody></table></section>"
        "<section id='disagreements'><h2>Disagreements to review</h2>"
        f"<label>mode <select id='dis-mode'><option value=''>any</option>{options}</select></label> "
        "<label>kind <select id='dis-kind'><option value=''>any</option><option>FP</option><option>FN</option></select></label>"
        "<table><thead><tr><th>set</th><th>trace</th><th>mode</th><th>kind</th><th>gold votes</th><th>confidence</th>"
        f"<th>judge's evidence</th></tr></thead><tbody>{disagreements}</tbody></table></section>"
        f"{script}</body></html>\n"
    )
