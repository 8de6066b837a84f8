"""What discovery writes: ``taxonomy.yaml``, ``candidates.yaml``, ``manifest.json``, ``report.html``, a sheet.

``taxonomy.yaml`` has the shape of ``prompts/taxonomy/mast-v3.yaml`` (version, categories, modes with
code, name, category, definition, evidence), and discovered modes add ``when_to_use``,
``when_not_to_use``, ``examples`` and ``relation``, which :func:`mast.load_taxonomy` reads and the
judge's prompt shows. The report is one self-contained HTML file; every text from a trace or a model
is escaped.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import orjson
import pandas as pd
import yaml

from mast.__about__ import __version__
from mast._outputs import csp_meta, write_csv
from mast.discovery._llm import PROMPT_VERSION
from mast.discovery.models import SCHEMA_VERSION, Candidate
from mast.discovery.stages import CANDIDATE_DROPS, CODE_DROPS, drop_counts
from mast.taxonomy import Taxonomy
from mast.trace import Trace

if TYPE_CHECKING:
    from mast.discovery.run import DiscoveryResult, _Run

ADAMAST_DEFAULTS = {
    "calls_per_run": "about 500-650 (its defaults)",
    "characters_shown_per_trace": "the first ~1,000-1,500",
    "gate": "macro Fleiss kappa of 4 copies of one model and prompt, on ~5 traces it was built from",
    "examples": "no verified quotes",
    "tokens_and_cost": "not recorded",
}
"""AdaMAST v0.2.2, as read from its code (issue 29), for the manifest's comparison."""


def taxonomy_yaml(taxonomy: Taxonomy, *, header: str | None = None) -> str:
    """The taxonomy as YAML in the shape of ``mast-v3.yaml`` (empty optional fields left out).

    ``header``: the comment lines on top (default: discovery's).
    """
    modes = []
    for mode in taxonomy.modes:
        entry: dict[str, Any] = {"code": mode.code, "name": mode.name, "category": mode.category,
                                 "definition": mode.definition, "evidence": mode.evidence}
        if mode.when_to_use:
            entry["when_to_use"] = mode.when_to_use
        if mode.when_not_to_use:
            entry["when_not_to_use"] = mode.when_not_to_use
        if mode.examples:
            entry["examples"] = [e.model_dump(mode="json") for e in mode.examples]
        if mode.relation:
            entry["relation"] = mode.relation
        modes.append(entry)
    if header is None:
        header = ("# MAST-14 plus the failure modes `mast discover` found and gated on traces they were not built "
                  "from.\n# Use it with: mast label TRACES -o results.jsonl --taxonomy taxonomy.yaml\n")
    body = {"version": taxonomy.version, "categories": dict(taxonomy.categories), "modes": modes}
    return header + yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=110)


def candidates_yaml(candidates: Sequence[Candidate]) -> str:
    """Every candidate with its status, reason and figures."""
    body = {"schema_version": SCHEMA_VERSION, "candidates": [c.model_dump(mode="json") for c in candidates]}
    return yaml.safe_dump(body, sort_keys=False, allow_unicode=True, width=110)


def sheet(output: Path, candidates: Sequence[Candidate], traces: Sequence[Trace], base: Taxonomy) -> Path:
    """``sheet.csv``: one row per gate trace and candidate mode, ``present`` left for people to fill (1/0)."""
    output.mkdir(parents=True, exist_ok=True)
    path = output / "sheet.csv"
    gated = [c for c in candidates if c.code is not None]
    rows = [[trace.trace_id, trace.source.path if trace.source else "", candidate.code, candidate.name,
             candidate.definition, ""] for trace in traces for candidate in gated]
    # Through the one safe writer: a mode a model named "=HYPERLINK(...)", or a trace id that opens a
    # formula, stays text in the spreadsheet people label it in.
    write_csv(pd.DataFrame(rows, columns=["trace_id", "path", "code", "name", "definition", "present"],
                           dtype=object), path)
    return path


def _earlier_runs(path: Path) -> list[dict[str, Any]]:
    """The runs an earlier ``manifest.json`` of the same folder recorded (one, for a manifest from before ``runs``)."""
    try:
        earlier = orjson.loads(path.read_bytes())
    except (OSError, ValueError):
        return []
    if not isinstance(earlier, dict):
        return []
    if isinstance(earlier.get("runs"), list):
        return [r for r in earlier["runs"] if isinstance(r, dict) and isinstance(r.get("totals"), dict)]
    if isinstance(earlier.get("totals"), dict):
        return [{"created_at": earlier.get("created_at"), "status": earlier.get("status"), "totals": earlier["totals"]}]
    return []


def _cumulative(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Calls, tokens and cost summed over every run of this folder (cost ``None`` once one was unknown)."""
    sums: dict[str, Any] = {key: sum(int(r["totals"].get(key) or 0) for r in runs)
                            for key in ("calls", "cached", "input_tokens", "output_tokens")}
    costs = [r["totals"].get("cost_usd") for r in runs]
    sums["cost_usd"] = None if any(c is None for c in costs) else round(sum(costs), 6)
    sums["runs"] = len(runs)
    return sums


def manifest(run: _Run, state: dict[str, Any], candidates: Sequence[Candidate], *, stopped: str | None,
             n_traces: int, stability: list[dict[str, Any]], saturation: list[dict[str, int]],
             annotators: list[dict[str, Any]]) -> dict[str, Any]:
    """Models, seeds, split, calls, tokens and cost of the run (``manifest.json``)."""
    from mast.discovery.run import now

    totals = run.spend.totals()
    runs = [*_earlier_runs(run.output / "manifest.json"),
            {"created_at": now(), "status": "stopped" if stopped else "done", "totals": totals}]
    config = run.config
    if run.options.gold:
        kind = "one model against people (--gold)"
    elif run.options.annotators:
        kind = "two different models"
    else:
        kind = ("one model with two seeds at a temperature above 0: agreement of a model with itself is a weaker "
                "test than two models or people")
    return {
        "schema_version": SCHEMA_VERSION,
        "created_at": now(),
        "mast_version": __version__,
        "status": "stopped" if stopped else "done",
        "stopped": stopped,
        "base_taxonomy": run.base.version,
        "prompt_version": PROMPT_VERSION,
        "prompt_hash": run.prompts.hash,
        "judge": {"model": config.model, "temperature": config.temperature, "seed": config.seed},
        "annotators": annotators,
        "annotator_kind": kind,
        "options": {
            "min_kappa": run.options.min_kappa, "min_positives": run.options.min_positives,
            "min_prevalence": run.options.min_prevalence, "min_traces": state.get("min_traces"),
            "window_tokens": run.options.window_tokens, "cluster_threshold": run.options.cluster_threshold,
            "budget_usd": run.options.budget_usd, "gold": run.options.gold,
        },
        "split": state.get("split"),
        "traces": n_traces,
        "open_coding": state.get("open_coding", {}),
        "dropped": drop_counts(state.get("open_coding", {}), candidates),
        "stages": {name: vars(spend) for name, spend in run.spend.stages.items()},
        "totals": totals,
        "runs": runs,
        "cumulative": _cumulative(runs),
        "per_trace": {"calls": round(totals["calls"] / n_traces, 2) if n_traces else None,
                      "input_tokens": round(totals["input_tokens"] / n_traces) if n_traces else None,
                      "output_tokens": round(totals["output_tokens"] / n_traces) if n_traces else None},
        "decisions": {c.name: {"code": c.code, "status": c.status, "reason": c.reason} for c in candidates},
        "stability": stability,
        "saturation": saturation,
        "notes": run.notes,
        "adamast_defaults": ADAMAST_DEFAULTS,
    }


def outputs(result: DiscoveryResult, run: _Run) -> None:
    """Write the four files of the folder (the taxonomy only when the gate ran)."""
    out = result.output
    out.mkdir(parents=True, exist_ok=True)
    if result.taxonomy is not None:
        (out / "taxonomy.yaml").write_text(taxonomy_yaml(result.taxonomy), encoding="utf-8")
    (out / "candidates.yaml").write_text(candidates_yaml(result.candidates), encoding="utf-8")
    (out / "manifest.json").write_bytes(orjson.dumps(result.manifest, option=orjson.OPT_INDENT_2))
    (out / "report.html").write_text(report_html(result), encoding="utf-8")


# --- the report -----------------------------------------------------------------------------------

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:4px 8px;vertical-align:top;text-align:left}
th{background:#f4f4f4}.accepted{color:#0a6b2e}.refused{color:#a11}.candidate,.merged{color:#8a5a00}
.mode{border:1px solid #ddd;border-radius:6px;padding:.6em 1em;margin:1em 0}
blockquote{margin:.3em 0 .3em 1em;color:#444;border-left:3px solid #ccc;padding-left:.6em}
.note{background:#fff8e5;border:1px solid #f0d58a;padding:.5em 1em;border-radius:4px}
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value + 0.0:.{digits}f}".replace("-0.00", "0.00")


def report_html(result: DiscoveryResult) -> str:
    """The report: each mode with definition, examples (linked to the trace view), prevalence, kappa, decision."""
    m = result.manifest
    # The same strict policy as mast's other pages: only this style runs, nothing is fetched.
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8>{csp_meta(styles=(_STYLE,))}"
             f"<title>mast discover: {_e(result.output.name)}</title><style>{_STYLE}</style></head><body>",
             f"<h1>Discovered failure modes: {_e(result.output.name)}</h1>",
             f"<p>{_e(m['traces'])} traces; base taxonomy {_e(m['base_taxonomy'])}; judge {_e(m['judge']['model'])}; "
             f"split seed {_e((m.get('split') or {}).get('seed'))}: {len((m.get('split') or {}).get('discover', []))} "
             f"traces to discover on, {len((m.get('split') or {}).get('gate', []))} to gate on.</p>",
             f"<p class=note>Gate: {_e(m['annotator_kind'])}. A mode is accepted when the lower bound of its kappa "
             f"95% bootstrap CI reaches {_e(m['options']['min_kappa'])} with at least "
             f"{_e(m['options']['min_positives'])} positives on each side.</p>",
             "<p>Each example links to its trace in <code>traces.html</code>, the per-trace view of the MAST-14 "
             "verdicts that <code>mast discover</code> writes beside this page (from Python: <code>mast report "
             "DIR/work/mast14.jsonl -o DIR/traces.html</code>).</p>"]
    if result.stopped:
        parts.append(f"<p class=note>Stopped before the end: {_e(result.stopped)}. Rerun the same command to go on "
                     "(what was done is cached).</p>")
    parts.append("<h2>Modes</h2><table><tr><th>code</th><th>name</th><th>relation</th><th>traces</th>"
                 "<th>prevalence</th><th>kappa [CI]</th><th>decision</th></tr>")
    for c in result.candidates:
        last = c.gate[-1] if c.gate else None
        kappa = "—" if last is None else f"{_num(last.kappa)} [{_num(last.ci_low)}, {_num(last.ci_high)}]"
        parts.append(f"<tr><td>{_e(c.code or '—')}</td><td><a href='#g{c.group}'>{_e(c.name)}</a></td>"
                     f"<td>{_e(c.relation)}</td><td>{c.n_traces}</td><td>{c.prevalence:.0%}</td><td>{_e(kappa)}</td>"
                     f"<td class='{_e(c.status.replace(' ', '-'))}'>{_e(c.status)}</td></tr>")
    parts.append("</table>")
    parts.append(_dropped(m))
    for c in result.candidates:
        parts.append(_mode_card(c))
    parts.append(_stability(result))
    parts.append(_saturation(result.saturation))
    parts.append(_spend(m))
    parts.append("</body></html>")
    return "\n".join(parts)


def _dropped(m: dict[str, Any]) -> str:
    """What open coding and consolidation threw away, by reason: why a run accepts nothing."""
    drops = m.get("dropped") or {"codes": {}, "candidates": {}}
    kept = (m.get("open_coding") or {}).get("open_coding", {}).get("codes")
    rows = [f"<tr><td>open code</td><td>{_e(text)}</td><td>{int(drops['codes'].get(key, 0))}</td></tr>"
            for key, text in CODE_DROPS.items()]
    rows += [f"<tr><td>candidate</td><td>{_e(text)}</td><td>{int(drops['candidates'].get(key, 0))}</td></tr>"
             for key, text in CANDIDATE_DROPS.items()]
    return (f"<h2>Dropped</h2><p>{_e(kept if kept is not None else '—')} open codes kept; these were not:</p>"
            "<table><tr><th>what</th><th>reason</th><th>count</th></tr>" + "".join(rows) + "</table>")


def _mode_card(c: Candidate) -> str:
    rows = [f"<div class=mode id='g{c.group}'><h3>{_e(c.code or '—')} {_e(c.name)} "
            f"<span class='{_e(c.status.replace(' ', '-'))}'>({_e(c.status)})</span></h3>",
            f"<p><b>Definition.</b> {_e(c.definition)}</p>"]
    if c.when_to_use:
        rows.append(f"<p><b>Use when.</b> {_e(c.when_to_use)}</p>")
    if c.when_not_to_use:
        rows.append(f"<p><b>Not when.</b> {_e(c.when_not_to_use)}</p>")
    rows.append(f"<p><b>Relation to MAST.</b> {_e(c.relation)}; nearest MAST mode {_e(c.nearest_mast or '—')}. "
                f"<b>Prevalence</b> {c.n_traces} traces ({c.prevalence:.0%}), {c.n_codes} open codes, "
                f"similarity {c.cohesion:.2f}.</p>")
    for example in c.examples:
        link = html.escape(f"traces.html#trace={quote(example.trace_id, safe='')}", quote=True)
        rows.append(f"<blockquote><a href=\"{link}\">{_e(example.trace_id)}</a> S{example.step}: "
                    f"“{_e(example.quote)}”</blockquote>")
    for fig in c.gate:
        rows.append(f"<p>Gate round {fig.round}: kappa {_num(fig.kappa)} [{_num(fig.ci_low)}, {_num(fig.ci_high)}] "
                    f"over {fig.n_traces} traces; positives {fig.positives_a} / {fig.positives_b}; "
                    f"{fig.disagreements} disagreements"
                    + (f"; most confused with {_e(fig.confused_with)} ({fig.confused_count})" if fig.confused_with else "")
                    + "</p>")
    rows.append(f"<p><b>Decision.</b> {_e(c.reason or c.status)}</p></div>")
    return "\n".join(rows)


def _stability(result: DiscoveryResult) -> str:
    if not result.stability:
        return "<h2>Stability</h2><p>Not measured (no accepted mode, or --no-stability).</p>"
    both = sum(1 for s in result.stability if s["matched"])
    rows = "".join(f"<tr><td>{_e(s['code'])}</td><td>{_e(s['name'])}</td><td>{_e(s['match'] or '—')}</td>"
                   f"<td>{_num(s['similarity'])}</td></tr>" for s in result.stability)
    return (f"<h2>Stability</h2><p>{both} of {len(result.stability)} accepted modes were found again in the other "
            f"half of the traces (discovered there on its own, matched by definition and examples).</p>"
            f"<table><tr><th>code</th><th>mode</th><th>match in the other half</th><th>similarity</th></tr>{rows}</table>")


def _saturation(points: list[dict[str, int]]) -> str:
    if not points:
        return ""
    width, height, pad = 520, 200, 34
    top = max(1, max(p["modes"] for p in points))
    most = max(p["traces"] for p in points)

    def xy(p: dict[str, int]) -> tuple[float, float]:
        return (pad + (width - 2 * pad) * p["traces"] / most, height - pad - (height - 2 * pad) * p["modes"] / top)

    line = " ".join(f"{x:.1f},{y:.1f}" for x, y in map(xy, points))
    dots = "".join(f"<circle cx='{x:.1f}' cy='{y:.1f}' r='3'/>" for x, y in map(xy, points))
    svg = (f"<svg width='{width}' height='{height}' role='img' aria-label='candidate modes found against traces read'>"
           f"<line x1='{pad}' y1='{height - pad}' x2='{width - pad}' y2='{height - pad}' stroke='#888'/>"
           f"<line x1='{pad}' y1='{pad}' x2='{pad}' y2='{height - pad}' stroke='#888'/>"
           f"<polyline fill='none' stroke='#2a62c9' stroke-width='2' points='{line}'/>{dots}"
           f"<text x='{width / 2}' y='{height - 6}' text-anchor='middle' font-size='12'>traces read</text>"
           f"<text x='10' y='{pad - 10}' font-size='12'>modes ({top} max)</text></svg>")
    rows = "".join(f"<tr><td>{p['traces']}</td><td>{p['modes']}</td><td>{p['new']}</td></tr>" for p in points)
    return (f"<h2>Saturation</h2><p>Candidate modes reaching the minimum prevalence within the first N traces of the "
            f"discover part: when the last steps add none, more traces are unlikely to find more.</p>{svg}"
            f"<table><tr><th>traces</th><th>modes</th><th>new</th></tr>{rows}</table>")


def _spend(m: dict[str, Any]) -> str:
    rows = "".join(f"<tr><td>{_e(name)}</td><td>{s['calls']}</td><td>{s['cached']}</td><td>{s['input_tokens']}</td>"
                   f"<td>{s['output_tokens']}</td><td>{_num(s['cost_usd'], 4)}</td></tr>"
                   for name, s in m["stages"].items())
    t = m["totals"]
    return ("<h2>Calls, tokens, cost (this run)</h2><table><tr><th>stage</th><th>calls</th><th>cached</th>"
            f"<th>input tokens</th><th>output tokens</th><th>cost USD</th></tr>{rows}"
            f"<tr><th>total</th><th>{t['calls']}</th><th>{t['cached']}</th><th>{t['input_tokens']}</th>"
            f"<th>{t['output_tokens']}</th><th>{_num(t['cost_usd'], 4)}</th></tr></table>")
