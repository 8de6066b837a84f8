"""What an evaluation returns: :class:`EvaluationReport` (and :class:`AttributionReport`), as data.

Everything is a pydantic model so ``--json`` prints the whole report and a notebook can load it back.
Undefined metrics are ``None`` (JSON ``null``), never 0. :meth:`EvaluationReport.table` renders the
readable table the CLI prints.
"""

from __future__ import annotations

import io
from datetime import UTC, datetime
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from mast._words import plural

EVALUATION_SCHEMA_VERSION: Literal["mast-evaluation/1"] = "mast-evaluation/1"
ATTRIBUTION_SCHEMA_VERSION: Literal["mast-attribution/1"] = "mast-attribution/1"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class Interval(_Model):
    """A confidence interval."""

    low: float
    high: float


class ModeAgreement(_Model):
    """Agreement of predictions with the reference on one mode, or pooled over all cells."""

    code: str
    """Mode code, or ``pooled``."""
    name: str = ""
    """Mode name from the taxonomy."""
    n: int = 0
    """Cells compared (assessed on both sides)."""
    n_traces: int = 0
    """Traces those cells come from."""
    tp: int = 0
    fp: int = 0
    fn: int = 0
    tn: int = 0
    accuracy: float | None = None
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    kappa: float | None = None
    """Cohen's kappa."""
    gold_rate: float | None = None
    """Share of cells the reference marks present."""
    pred_rate: float | None = None
    """Share of cells the predictions mark present."""
    ci: dict[str, Interval | None] = Field(default_factory=dict)
    """Bootstrap confidence interval of each metric (None where undefined)."""

    def value(self, metric: str) -> float | None:
        """A metric by name."""
        result = getattr(self, metric)
        return None if result is None else float(result)


SHOWN_IDS = 5
"""Trace ids named in the text for each side of a mismatch (``--json`` holds up to :data:`LISTED_IDS`)."""
LISTED_IDS = 50
"""Trace ids kept in :class:`Exclusions` for each side of a mismatch."""


class Exclusions(_Model):
    """Cells and traces left out of the comparison, counted so nothing disappears silently."""

    pred_only_cells: int = 0
    """Cells assessed by the predictions but not by the reference."""
    gold_only_cells: int = 0
    """Cells assessed by the reference but not by the predictions (not judged, ``present: null``)."""
    pred_only_traces: int = 0
    """Traces with predictions and no reference labels at all."""
    gold_only_traces: int = 0
    """Traces with reference labels and no predictions at all."""
    pred_only_ids: list[str] = Field(default_factory=list)
    """The first (sorted) of those predicted traces without reference labels, to find the mismatch by."""
    gold_only_ids: list[str] = Field(default_factory=list)
    """The first (sorted) of those reference traces without predictions."""
    pred_ties: int = 0
    """Cells dropped because the predictions' annotators tied (tie rule ``exclude``)."""
    gold_ties: int = 0
    """Cells dropped because the reference annotators tied (tie rule ``exclude``)."""


class ModeIAA(_Model):
    """Agreement among annotators on one mode, or pooled."""

    code: str
    n_cells: int
    """Cells with at least one label."""
    n_cells_fleiss: int
    """Cells labelled by every annotator (Fleiss' kappa needs the same number of ratings per cell)."""
    fleiss_kappa: float | None = None
    krippendorff_alpha: float | None = None
    """Nominal alpha; uses every cell with two or more labels."""
    mean_pairwise_kappa: float | None = None
    """Mean Cohen's kappa over annotator pairs (what the MAST paper reports)."""
    unanimous_share: float | None = None
    """Share of fully labelled cells on which all annotators agree."""


class AnnotatorAgreement(_Model):
    """Inter-annotator agreement of one side of a comparison."""

    annotators: list[str]
    n_traces: int
    n_cells: int
    pooled: ModeIAA
    per_mode: list[ModeIAA] = Field(default_factory=list)


class Disagreement(_Model):
    """A (trace, mode) cell where the two sides differ, with what backs each side."""

    trace_id: str
    code: str
    name: str = ""
    pred: bool
    gold: bool
    kind: str
    """``FP`` (predicted, not in reference) or ``FN`` (in reference, missed)."""
    pred_confidence: float | None = None
    pred_evidence: str = ""
    gold_evidence: str = ""
    gold_votes: str | None = None
    """``2/3`` when the reference is a majority vote."""
    pred_votes: str | None = None


class BootstrapInfo(_Model):
    """How the confidence intervals were computed."""

    n_boot: int
    seed: int
    level: float = 0.95
    unit: str = "trace"
    """What was resampled with replacement."""


class EvaluationReport(_Model):
    """Agreement of predictions with a reference (human gold, or a second judge)."""

    schema_version: Literal["mast-evaluation/1"] = EVALUATION_SCHEMA_VERSION
    kind: Literal["pred-vs-gold", "judge-vs-judge"] = "pred-vs-gold"
    """``judge-vs-judge``: the reference is another judge, so read kappa and accuracy, which are symmetric."""
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    pred_source: str = ""
    """Where the predictions came from."""
    gold_source: str = ""
    """Where the reference came from."""
    taxonomy_version: str
    n_traces: int = 0
    """Traces with at least one compared cell."""
    n_cells: int = 0
    """Cells compared."""
    pooled: ModeAgreement
    """Metrics over all compared cells together (micro average)."""
    macro: dict[str, float | None] = Field(default_factory=dict)
    """Mean of each metric over the modes where it is defined."""
    macro_ci: dict[str, Interval | None] = Field(default_factory=dict)
    per_mode: list[ModeAgreement] = Field(default_factory=list)
    exclusions: Exclusions = Field(default_factory=Exclusions)
    tie_rule: str = "exclude"
    """What a tied majority vote became."""
    bootstrap: BootstrapInfo
    inter_annotator: dict[str, AnnotatorAgreement] = Field(default_factory=dict)
    """``gold`` / ``pred``: agreement among the annotators of a side that has several."""
    disagreements: list[Disagreement] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)

    def mode(self, code: str) -> ModeAgreement:
        """The per-mode entry for a code."""
        for entry in self.per_mode:
            if entry.code == code:
                return entry
        raise KeyError(code)

    def to_json(self, *, indent: int | None = 2) -> str:
        """The whole report as JSON."""
        return self.model_dump_json(indent=indent)

    def per_mode_frame(self) -> pd.DataFrame:
        """Per-mode metrics (and the pooled row) as a DataFrame, with CI bounds as ``<metric>_low/high``."""
        rows = []
        for entry in [*self.per_mode, self.pooled]:
            row: dict[str, Any] = entry.model_dump(exclude={"ci"})
            for metric, interval in entry.ci.items():
                row[f"{metric}_low"] = interval.low if interval else None
                row[f"{metric}_high"] = interval.high if interval else None
            rows.append(row)
        return pd.DataFrame.from_records(rows)

    def disagreements_frame(self) -> pd.DataFrame:
        """The disagreement table as a DataFrame."""
        columns = list(Disagreement.model_fields)
        return pd.DataFrame.from_records([d.model_dump() for d in self.disagreements], columns=columns)

    def table(self, *, max_disagreements: int = 20) -> Group:
        """A readable rendering for the terminal (rich renderables)."""
        ref = "judge B" if self.kind == "judge-vs-judge" else "gold"
        head = Text()
        head.append(f"{self.pred_source or 'predictions'} vs {ref} {self.gold_source}\n", style="bold")
        head.append(
            f"{plural(self.n_traces, 'trace')}, {plural(self.n_cells, 'cell')} compared; taxonomy {self.taxonomy_version}; "
            + (f"{self.bootstrap.level:.0%} CIs from {self.bootstrap.n_boot} trace resamples (seed {self.bootstrap.seed})\n"
               if self.bootstrap.n_boot else "no confidence intervals (--n-boot 0)\n")
        )
        ex = self.exclusions
        head.append(
            f"excluded: {ex.pred_only_cells} cells assessed only by the predictions, "
            f"{ex.gold_only_cells} only by the {ref} ({ex.gold_only_traces} {ref} traces without predictions, "
            f"{ex.pred_only_traces} predicted traces without {ref}); ties: {ex.gold_ties + ex.pred_ties} ({self.tie_rule})\n"
        )
        for count, ids, what in ((ex.gold_only_traces, ex.gold_only_ids, f"{ref} traces without predictions"),
                                 (ex.pred_only_traces, ex.pred_only_ids, f"predicted traces without {ref}")):
            if ids:
                shown = ", ".join(ids[:SHOWN_IDS])
                more = f" and {count - SHOWN_IDS} more (--json lists {len(ids)})" if count > SHOWN_IDS else ""
                head.append(f"  {what}: {shown}{more}\n")
        table = Table(title="Agreement per mode", show_lines=False)
        rates = ("B%", "A%") if self.kind == "judge-vs-judge" else ("gold%", "pred%")
        for column in ("mode", "n", "TP", "FP", "FN", "TN", "acc", "prec", "rec", "F1", "kappa [CI]", *rates):
            table.add_column(column, justify="left" if column == "mode" else "right")
        for entry in [*self.per_mode, self.pooled]:
            label = "pooled" if entry.code == "pooled" else f"{entry.code} {entry.name}"
            table.add_row(
                label, str(entry.n), str(entry.tp), str(entry.fp), str(entry.fn), str(entry.tn),
                fmt(entry.accuracy), fmt(entry.precision), fmt(entry.recall), fmt(entry.f1),
                f"{fmt(entry.kappa)} {fmt_ci(entry.ci.get('kappa'))}".strip(),
                fmt_pct(entry.gold_rate), fmt_pct(entry.pred_rate),
                end_section=entry is self.per_mode[-1] if self.per_mode else False,
            )
        table.add_row(
            "macro", "", "", "", "", "", fmt(self.macro.get("accuracy")), fmt(self.macro.get("precision")),
            fmt(self.macro.get("recall")), fmt(self.macro.get("f1")),
            f"{fmt(self.macro.get('kappa'))} {fmt_ci(self.macro_ci.get('kappa'))}".strip(), "", "",
        )
        parts: list[Any] = [head, table]
        for side, iaa in self.inter_annotator.items():
            p = iaa.pooled
            parts.append(
                Text(
                    f"inter-annotator agreement ({side}, {len(iaa.annotators)} annotators, {p.n_cells} cells): "
                    f"Fleiss kappa {fmt(p.fleiss_kappa)}, Krippendorff alpha {fmt(p.krippendorff_alpha)}, "
                    f"mean pairwise Cohen kappa {fmt(p.mean_pairwise_kappa)}"
                )
            )
        if self.disagreements:
            dis = Table(title=f"Disagreements ({len(self.disagreements)}; first {min(max_disagreements, len(self.disagreements))})")
            for column in ("trace", "mode", "kind", "conf", "evidence"):
                dis.add_column(column, overflow="fold")
            for d in self.disagreements[:max_disagreements]:
                dis.add_row(d.trace_id, d.code, d.kind, fmt(d.pred_confidence), shorten(d.pred_evidence or d.gold_evidence, 160))
            parts.append(dis)
        for warning in self.warnings:
            parts.append(Text(f"warning: {warning}", style="yellow"))
        return Group(*parts)

    def to_text(self, *, width: int = 140) -> str:
        """The readable table as plain text."""
        return render_text(self.table(), width=width)

    def __str__(self) -> str:
        """``print(report)`` shows the agreement table (``model_dump()`` has the numbers)."""
        return self.to_text()

    def __repr__(self) -> str:
        kappa = fmt(self.pooled.kappa)
        return f"EvaluationReport(kind={self.kind!r}, n_traces={self.n_traces}, n_cells={self.n_cells}, pooled_kappa={kappa})"

    def _repr_html_(self) -> str:
        """The table in a notebook (preformatted, as in the terminal)."""
        from html import escape

        return f"<pre>{escape(self.to_text())}</pre>"


class AttributionRow(_Model):
    """One trace of a failure-attribution comparison."""

    trace_id: str
    gold_agent: str
    gold_step: int | None
    pred_agent: str | None = None
    pred_step: int | None = None
    agent_correct: bool = False
    step_correct: bool = False
    step_within_k: bool = False
    status: str = "predicted"
    """``predicted``; ``abstained`` (no first failure given, counted wrong)."""


class AttributionReport(_Model):
    """Who and when: the judge's ``first_failure`` against the human-labelled responsible agent and step."""

    schema_version: Literal["mast-attribution/1"] = ATTRIBUTION_SCHEMA_VERSION
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    pred_source: str = ""
    gold_source: str = ""
    n_gold: int
    """Traces in the gold set."""
    n_evaluated: int
    """Gold traces with a judged diagnosis (the denominator of the accuracies)."""
    n_abstained: int = 0
    """Evaluated traces whose diagnosis named no first failure (counted as wrong)."""
    n_without_prediction: int = 0
    """Gold traces with no judged diagnosis (left out)."""
    n_pred_without_gold: int = 0
    """Diagnoses whose trace is not in the gold set (left out)."""
    k: int
    """Tolerance of :attr:`step_within_k_accuracy`, in steps."""
    agent_accuracy: float | None = None
    step_accuracy: float | None = None
    """Exact step."""
    step_within_k_accuracy: float | None = None
    ci: dict[str, Interval | None] = Field(default_factory=dict)
    bootstrap: BootstrapInfo
    rows: list[AttributionRow] = Field(default_factory=list)
    reference: dict[str, float] = Field(
        default_factory=lambda: {"who_and_when_best_agent_accuracy": 0.535, "who_and_when_best_step_accuracy": 0.142}
    )
    """Best single-method results published with Who&When (ICML 2025), for comparison."""

    def to_json(self, *, indent: int | None = 2) -> str:
        """The whole report as JSON."""
        return self.model_dump_json(indent=indent)

    def table(self) -> Table:
        """A readable rendering for the terminal."""
        table = Table(title=f"Failure attribution: {self.n_evaluated} of {self.n_gold} gold traces evaluated")
        for column in ("metric", "value", f"{self.bootstrap.level:.0%} CI", "Who&When best"):
            table.add_column(column, justify="left" if column == "metric" else "right")
        table.add_row("agent accuracy", fmt(self.agent_accuracy), fmt_ci(self.ci.get("agent_accuracy")),
                      fmt(self.reference.get("who_and_when_best_agent_accuracy"), 3))
        table.add_row("step accuracy (exact)", fmt(self.step_accuracy), fmt_ci(self.ci.get("step_accuracy")),
                      fmt(self.reference.get("who_and_when_best_step_accuracy"), 3))
        table.add_row(f"step within ±{self.k}", fmt(self.step_within_k_accuracy),
                      fmt_ci(self.ci.get("step_within_k_accuracy")), "")
        table.caption = (
            f"{self.n_abstained} abstained (counted wrong), {self.n_without_prediction} gold traces without a "
            f"judged diagnosis and {self.n_pred_without_gold} diagnoses without gold left out"
        )
        return table

    def to_text(self, *, width: int = 120) -> str:
        """The readable table as plain text."""
        return render_text(self.table(), width=width)


def fmt(value: float | None, digits: int = 2) -> str:
    """A number for a table; ``-`` for undefined."""
    if value is None:
        return "-"
    text = f"{value:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def fmt_pct(value: float | None) -> str:
    """A share as a percentage; ``-`` for undefined."""
    return "-" if value is None else f"{value:.0%}"


def fmt_ci(interval: Interval | None) -> str:
    """``[low, high]``, or empty when there is no interval."""
    return "" if interval is None else f"[{fmt(interval.low)}, {fmt(interval.high)}]"


def shorten(text: str, limit: int) -> str:
    """One line of at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def render_text(renderable: Any, *, width: int) -> str:
    """Render rich output to plain text."""
    console = Console(file=io.StringIO(), width=width, color_system=None, force_terminal=False, soft_wrap=False)
    console.print(renderable)
    output = console.file.getvalue()  # type: ignore[attr-defined]
    return str(output)
