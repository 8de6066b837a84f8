"""``mast report``: one self-contained HTML page about a results file.

Sections (each a ``<section id=...>``): ``summary`` (traces, statuses, judges), ``cost`` (tokens,
dollars, calls), ``prevalence`` (bars with CIs and a table), ``cooccurrence`` (heatmap),
``first-failure`` (when diagnoses name one), with gold labels ``agreement`` (per-mode kappa with
bootstrap CIs, and the table) and ``disagreements`` (every differing cell with its evidence), and last
``traces``: the per-trace view (:mod:`mast.evaluation.viewer`).
Figures are embedded PNGs; the page loads nothing from anywhere.

It sits above both :mod:`mast.analysis` (prevalence, co-occurrence, first failures) and
:mod:`mast.evaluation` (agreement with gold labels), which it puts on one page.

Example:
    >>> write_report("results.jsonl", "report.html", gold="gold.csv")   # doctest: +SKIP
"""

from __future__ import annotations

import html
import io
import os
import urllib.parse
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

import pandas as pd

from mast.__about__ import __version__
from mast._outputs import csp_meta
from mast._words import plural
from mast.diagnosis import Diagnosis
from mast.errors import EvaluationError, ResultsFileError
from mast.evaluation.digest import ResultsDigest, compact_frame
from mast.evaluation.labels import LabelSource, read_labels
from mast.evaluation.report import EvaluationReport, fmt, fmt_ci, shorten
from mast.evaluation.viewer import STYLE as VIEW_STYLE
from mast.evaluation.viewer import TraceView, script_text
from mast.redact import redact_text
from mast.results import is_results_path, iter_results
from mast.taxonomy import Taxonomy, load_taxonomy

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:2rem auto;max-width:1100px;color:#222;padding:0 1rem}
h1{font-size:1.5rem}h2{font-size:1.15rem;border-bottom:1px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;font-size:.82rem;margin:.5rem 0}th,td{border:1px solid #ddd;padding:.25rem .45rem;text-align:right;vertical-align:top}
th{background:#f4f4f4}td.text,th.text{text-align:left}img{max-width:100%}.note{color:#666;font-size:.85rem}
.kpi{display:inline-block;margin:0 1.5rem .5rem 0}.kpi b{display:block;font-size:1.3rem}
"""


def render_report(
    results: str | os.PathLike[str] | Iterable[Diagnosis],
    *,
    gold: LabelSource | None = None,
    title: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    taxonomy: Taxonomy | None = None,
    base: str | os.PathLike[str] | Iterable[Diagnosis] | None = None,
    redact_patterns: tuple[tuple[str, str], ...] = (),
) -> str:
    """The HTML page for a results file (or diagnoses), with agreement sections when ``gold`` is given.

    With an earlier run ``base``, a ``diff`` section shows what changed per mode (see :mod:`mast.regression`).
    Transcripts are shown as the judge read them, redacted with the run's options; ``redact_patterns``
    are the run's custom patterns besides ``MAST_REDACT_PATTERNS`` (see :mod:`mast.evaluation.viewer`).
    """
    out = io.StringIO()
    _write_page(
        results,
        out,
        gold=gold,
        title=title,
        n_boot=n_boot,
        seed=seed,
        taxonomy=taxonomy,
        base=base,
        redact_patterns=redact_patterns,
    )
    return out.getvalue()


def write_report(
    results: str | os.PathLike[str] | Iterable[Diagnosis], output: str | os.PathLike[str], **options: object
) -> Path:
    """Write the report to ``output`` as it is drawn (beside it, then renamed over it).

    ``notices`` (a list) receives a line when traces are shown without their transcript.

    A results file is read as a stream (once, and once more for ``gold``): what is held is a compact
    row per trace (:class:`~mast.evaluation.digest.ResultsDigest`, ~0.3 KB) and the figures, never
    the diagnoses; the per-trace rows go to a spool file (see :class:`~mast.evaluation.viewer.TraceView`).
    """
    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)  # as ``label`` and ``export`` do
    partial = target.with_name(target.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8") as handle:
            _write_page(results, handle, **options)  # type: ignore[arg-type]
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    return target


def _write_page(
    results: str | os.PathLike[str] | Iterable[Diagnosis],
    out: TextIO,
    *,
    gold: LabelSource | None = None,
    title: str | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    taxonomy: Taxonomy | None = None,
    base: str | os.PathLike[str] | Iterable[Diagnosis] | None = None,
    redact_patterns: tuple[tuple[str, str], ...] = (),
    notices: list[str] | None = None,
) -> None:
    from mast.evaluation.core import evaluate

    tax = taxonomy or load_taxonomy()
    path = Path(results) if isinstance(results, str | os.PathLike) else None
    source = str(results) if path is not None else "diagnoses"
    items = list(results) if not isinstance(results, str | os.PathLike) else None
    if path is not None and not is_results_path(path):
        raise ResultsFileError(f"{path}: no such results file")
    gold_table = read_labels(gold, role="gold", taxonomy=tax) if gold is not None else None
    digest, view = (
        ResultsDigest(tax, keys=base is not None),
        TraceView(gold_table, redact_patterns=tuple(redact_patterns), results=path),
    )
    # The disagreements name each trace's file beside its id (often a sha256: content hash).
    names: dict[str, str] = {}
    try:
        for diagnosis in iter_results(path) if path is not None else items or []:
            digest.add(diagnosis)
            if gold is not None and diagnosis.source.path:
                record = diagnosis.source.record
                names[diagnosis.trace_id] = Path(diagnosis.source.path).name + (
                    f"#{record}" if record else ""
                )
            if not digest.judges.several:  # a mixed file is refused below: stop drawing its traces
                view.add(diagnosis)
        digest.judges.check(source)
        if not len(digest):
            raise EvaluationError(f"{source}: no results to report on")
        frame = digest.frame()
        parts = [_summary(frame, digest, source, tax), _cost(frame), *_label_sections(frame, tax)]
        if base is not None:
            parts.append(_diff(base, frame, source, tax))
        if gold is not None:
            report = evaluate(
                path if path is not None else items or [], gold, n_boot=n_boot, seed=seed, taxonomy=tax
            )
            parts.append(_agreement(report))
            parts.append(_disagreements(report, names))
        heading = html.escape(title or f"mast report: {Path(source).name}")
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        out.write(
            "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            + csp_meta(scripts=(script_text(),), styles=(_STYLE + VIEW_STYLE,))
            + f"<title>{heading}</title><style>{_STYLE}{VIEW_STYLE}</style></head><body>"
            f"<h1>{heading}</h1><p class='note'>mast {__version__}, taxonomy {html.escape(tax.version)}, {stamp}</p>"
            + "".join(parts)
        )
        view.write_section(out)
        out.write("</body></html>\n")
        if notices is not None and view.unshown:
            # The page says it on each trace; the terminal says it once, so nobody has to click to find out.
            notices.append(
                f"{plural(view.unshown, 'trace')} shown without a transcript; the first: {view.first_unshown}"
            )
    finally:
        view.close()


def _label_sections(frame: pd.DataFrame, tax: Taxonomy) -> list[str]:
    """Prevalence, co-occurrence and first failures (when diagnoses name them)."""
    from mast import analysis
    from mast.evaluation import plots  # matplotlib: loaded only when a report is made

    if (frame["status"] != "judged").all():
        return [
            _section("prevalence", "Prevalence", "<p class='note'>No judged traces: nothing to count.</p>")
        ]
    prevalence = analysis.prevalence(frame, level="both", taxonomy=tax)
    modes = prevalence[prevalence["level"] == "mode"]
    body = _img(plots.prevalence_figure(modes)) + _table(
        prevalence.assign(
            prevalence=prevalence["prevalence"].map(_pct),
            ci=[
                f"[{_pct(lo)}, {_pct(hi)}]"
                for lo, hi in zip(prevalence["low"], prevalence["high"], strict=True)
            ],
        )[["level", "code", "name", "n_assessed", "n_present", "prevalence", "ci"]],
        text_columns={"level", "code", "name"},
    )
    parts = [_section("prevalence", "Prevalence", body)]
    matrix = analysis.cooccurrence(frame, taxonomy=tax)
    parts.append(
        _section(
            "cooccurrence",
            "Which modes occur together",
            _img(plots.cooccurrence_figure(matrix))
            + "<p class='note'>Cell (a, b): traces where both modes are present; the diagonal counts "
            "traces with the mode.</p>",
        )
    )
    if frame["first_failure_step"].notna().any() or frame["first_failure_agent"].notna().any():
        body = ""
        if frame["first_failure_step"].notna().any():
            body += _img(
                plots.histogram_figure(
                    analysis.first_failure_histogram(frame, "step"), title="First failure: step"
                )
            )
        if frame["first_failure_agent"].notna().any():
            body += _img(
                plots.histogram_figure(
                    analysis.first_failure_histogram(frame, "agent"), title="First failure: responsible agent"
                )
            )
        parts.append(_section("first-failure", "Where runs first go wrong", body))
    return parts


def _diff(
    base: str | os.PathLike[str] | Iterable[Diagnosis], frame: pd.DataFrame, source: str, tax: Taxonomy
) -> str:
    """What changed since ``base``; a base results file is read into the same compact rows."""
    from mast.evaluation.html_diff import diff_section
    from mast.evaluation.labels import sniff_format
    from mast.regression import diff

    base_name = str(base) if isinstance(base, str | os.PathLike) else "base"
    older: pd.DataFrame | str | os.PathLike[str] | Iterable[Diagnosis] = base
    if (
        isinstance(base, str | os.PathLike)
        and is_results_path(base)
        and sniff_format(Path(base)) == "diagnoses"
    ):
        older = compact_frame(iter_results(base), tax)
    elif not isinstance(base, str | os.PathLike):
        older = compact_frame(base, tax)
    return diff_section(diff(older, frame, taxonomy=tax), base_name, source)


def _section(anchor: str, heading: str, body: str) -> str:
    return f"<section id='{anchor}'><h2>{html.escape(heading)}</h2>{body}</section>"


def _img(fig: object) -> str:
    from mast.evaluation.plots import png_base64

    return f"<img alt='figure' src='data:image/png;base64,{png_base64(fig)}'>"  # type: ignore[arg-type]


def _pct(value: float | None) -> str:
    return "–" if value is None or pd.isna(value) else f"{value:.0%}"


def _table(
    frame: pd.DataFrame,
    *,
    text_columns: frozenset[str] | set[str] = frozenset(),
    html_columns: frozenset[str] | set[str] = frozenset(),
) -> str:
    """An HTML table; ``html_columns`` hold markup already escaped (links), the rest is escaped here."""
    head = "".join(
        f"<th class='{'text' if c in text_columns else ''}'>{html.escape(str(c))}</th>" for c in frame.columns
    )
    rows = []
    for record in frame.itertuples(index=False):
        cells = []
        for column, value in zip(frame.columns, record, strict=True):
            text = "–" if value is None or (not isinstance(value, str) and pd.isna(value)) else str(value)
            cls = " class='text'" if column in text_columns else ""
            cells.append(f"<td{cls}>{text if column in html_columns else html.escape(text)}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _summary(frame: pd.DataFrame, digest: ResultsDigest, source: str, taxonomy: Taxonomy) -> str:
    statuses = frame["status"].value_counts().to_dict()
    judges = sorted(digest.judge_labels)
    judged = frame[frame["status"] == "judged"]
    codes = [c for c in taxonomy.codes if c in frame.columns]
    with_failure = int(judged[codes].fillna(False).astype(bool).any(axis=1).sum()) if not judged.empty else 0
    kpis = [
        ("traces", str(len(frame))),
        ("judged", str(statuses.get("judged", 0))),
        ("unjudgeable", str(statuses.get("unjudgeable", 0))),
        ("errors", str(statuses.get("error", 0))),
        ("with a failure mode", f"{with_failure}"),
        ("modes per judged trace", fmt(float(judged["n_modes"].mean())) if not judged.empty else "–"),
    ]
    body = "".join(f"<div class='kpi'><b>{html.escape(v)}</b>{html.escape(k)}</div>" for k, v in kpis)
    body += f"<p class='note'>Results: {html.escape(source)}. Judge: {html.escape(', '.join(judges))}.</p>"
    if digest.errors:
        errors = pd.DataFrame(
            [(t, s, redact_text(e or "").text) for t, s, e in digest.errors],
            columns=["trace_id", "status", "error"],
            dtype=object,
        )
        body += "<p class='note'>Traces not judged, with the reason:</p>" + _table(
            errors, text_columns={"trace_id", "status", "error"}
        )
    return _section("summary", "Summary", body)


def _cost(frame: pd.DataFrame) -> str:
    # A result that made no LLM call (the offline detectors) costs nothing: it counts as priced, and
    # when no result made a call the cost is "–" (no LLM calls), as `mast label` and `classify` say.
    free = frame["llm_calls"].fillna(0) == 0
    priced = frame["cost_usd"].notna() | free
    cost = float(frame.loc[frame["cost_usd"].notna(), "cost_usd"].sum())
    no_calls = bool(free.all()) and cost == 0
    shown = "–" if no_calls else f"{cost:.4f}" if priced.any() else "unknown"
    kpis = [
        ("input tokens", f"{int(frame['input_tokens'].sum()):,}"),
        ("output tokens", f"{int(frame['output_tokens'].sum()):,}"),
        ("cost (USD)", shown),
        ("LLM calls", f"{int(frame['llm_calls'].sum()):,}"),
        ("served from cache", f"{int(frame['cached'].sum()):,}"),
        ("judge time (s)", f"{float(frame['latency_s'].sum()):.1f}"),
    ]
    body = "".join(f"<div class='kpi'><b>{html.escape(v)}</b>{html.escape(k)}</div>" for k, v in kpis)
    if (~priced).any() and priced.any():
        unpriced = int((~priced).sum())
        body += f"<p class='note'>Left out of the cost: {plural(unpriced, 'trace')} with no known price.</p>"
    if no_calls:
        body += "<p class='note'>No LLM calls (the offline detectors): nothing to pay.</p>"
    elif len(frame) and priced.any():
        body += f"<p class='note'>Mean cost per priced trace: ${cost / int(priced.sum()):.4f}.</p>"
    return _section("cost", "Cost and tokens", body)


def _agreement(report: EvaluationReport) -> str:
    from mast.evaluation.plots import agreement_figure

    p = report.pooled
    body = (
        f"<p>{plural(report.n_traces, 'trace')}, {plural(report.n_cells, 'cell')} compared with {html.escape(report.gold_source)}. "
        f"Pooled: accuracy {fmt(p.accuracy)}, precision {fmt(p.precision)}, recall {fmt(p.recall)}, "
        f"F1 {fmt(p.f1)}, Cohen's kappa {fmt(p.kappa)} {fmt_ci(p.ci.get('kappa'))}.</p>"
    )
    ex = report.exclusions
    body += (
        f"<p class='note'>Left out: {ex.gold_only_cells} gold cells without a prediction "
        f"({ex.gold_only_traces} traces), {ex.pred_only_cells} predicted cells without gold "
        f"({ex.pred_only_traces} traces), {ex.gold_ties + ex.pred_ties} tied votes. Undefined values: –.</p>"
    )
    for side, iaa in report.inter_annotator.items():
        body += (
            f"<p class='note'>Inter-annotator agreement ({side}, {len(iaa.annotators)} annotators): Fleiss kappa "
            f"{fmt(iaa.pooled.fleiss_kappa)}, Krippendorff alpha {fmt(iaa.pooled.krippendorff_alpha)}.</p>"
        )
    body += _img(agreement_figure(report))
    frame = report.per_mode_frame()
    shown = pd.DataFrame(
        {
            "mode": frame["code"],
            "name": frame["name"],
            "n": frame["n"],
            "TP": frame["tp"],
            "FP": frame["fp"],
            "FN": frame["fn"],
            "TN": frame["tn"],
            **{
                m: frame[m].map(lambda v: fmt(None if pd.isna(v) else v))
                for m in ("accuracy", "precision", "recall", "f1")
            },
            "kappa": [
                f"{fmt(None if pd.isna(v) else v)} {fmt_ci(e.ci.get('kappa'))}".strip()
                for v, e in zip(frame["kappa"], [*report.per_mode, report.pooled], strict=True)
            ],
        }
    )
    body += _table(shown, text_columns={"mode", "name"})
    return _section("agreement", "Agreement with gold", body)


def _trace_link(trace_id: str, name: str | None) -> str:
    """The trace's id linking to its row in the trace view (``#trace=ID``), with its file name."""
    link = f"<a href='#trace={urllib.parse.quote(trace_id, safe='')}'>{html.escape(trace_id)}</a>"
    return link + (f" <span class='src'>{html.escape(name)}</span>" if name else "")


def _disagreements(report: EvaluationReport, names: dict[str, str] | None = None) -> str:
    if not report.disagreements:
        return _section("disagreements", "Disagreements", "<p>None: every compared cell agrees.</p>")
    names = names or {}
    frame = pd.DataFrame(
        {
            "trace": [_trace_link(d.trace_id, names.get(d.trace_id)) for d in report.disagreements],
            "mode": [f"{d.code} {d.name}" for d in report.disagreements],
            "kind": [d.kind for d in report.disagreements],
            "gold votes": [d.gold_votes or "" for d in report.disagreements],
            "confidence": [fmt(d.pred_confidence) for d in report.disagreements],
            "judge's evidence": [
                shorten(redact_text(d.pred_evidence).text, 400) for d in report.disagreements
            ],
        }
    )
    note = (
        "<p class='note'>FP: the judge found the mode, the gold does not have it. FN: the gold has it, "
        "the judge did not find it.</p>"
    )
    return _section(
        "disagreements",
        f"Disagreements ({len(frame)})",
        note
        + _table(frame, text_columns={"trace", "mode", "kind", "judge's evidence"}, html_columns={"trace"}),
    )
