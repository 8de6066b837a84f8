"""Does the jury beat its best member? Score each juror, the reduced verdict and inter-juror agreement.

A results file written with ``--jury`` or ``--samples`` keeps every juror's own diagnosis
(``diagnosis.jury.verdicts``). :func:`evaluate_jury` evaluates each juror against the gold labels
exactly as :func:`~mast.evaluation.core.evaluate` evaluates a judge (same cells, same bootstrap
seed, so the intervals are comparable), then the reduced verdict, and reports the jurors'
agreement among themselves (Fleiss' kappa, Krippendorff's alpha, mean pairwise Cohen's kappa).

Example:
    >>> report = evaluate_jury("jury.jsonl", "gold.csv")          # doctest: +SKIP
    >>> report.best_juror, report.jury_beats_best                  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from rich.console import Group
from rich.table import Table
from rich.text import Text

from mast.diagnosis import Diagnosis
from mast.errors import EvaluationError
from mast.evaluation.agreement import TieRule, inter_annotator
from mast.evaluation.core import evaluate
from mast.evaluation.labels import LabelFormat, LabelSource, label_table, read_diagnoses
from mast.evaluation.report import AnnotatorAgreement, EvaluationReport, fmt, fmt_ci
from mast.taxonomy import Taxonomy, load_taxonomy

JURY_EVALUATION_SCHEMA_VERSION: Literal["mast-jury-evaluation/1"] = "mast-jury-evaluation/1"
METRIC = "kappa"
"""The metric that decides whether the jury beats its best member."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class JurorScore(_Model):
    """One juror (or the reduced verdict) against the gold labels."""

    name: str
    """Juror name, or ``jury (<reducer>)`` for the reduced verdict."""
    report: EvaluationReport


class JuryEvaluationReport(_Model):
    """Each juror, the reduced verdict and inter-juror agreement against the same gold."""

    schema_version: Literal["mast-jury-evaluation/1"] = JURY_EVALUATION_SCHEMA_VERSION
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    pred_source: str = ""
    gold_source: str = ""
    reducer: str = ""
    jurors: list[JurorScore] = Field(default_factory=list)
    jury: JurorScore
    inter_juror: AnnotatorAgreement | None = None
    """Agreement among the jurors themselves (no gold involved)."""
    best_juror: str | None = None
    """The juror with the highest pooled kappa."""
    jury_beats_best: bool | None = None
    """True when the reduced verdict's pooled kappa is above the best juror's (read the CIs too)."""
    warnings: list[str] = Field(default_factory=list)

    def to_json(self, *, indent: int | None = 2) -> str:
        """The whole report as JSON."""
        return self.model_dump_json(indent=indent)

    def table(self) -> Group:
        """A readable rendering for the terminal."""
        n_boot = self.jury.report.bootstrap.n_boot
        table = Table(title=f"jury vs gold: {self.pred_source} vs {self.gold_source}",
                      caption=f"pooled over all compared cells; {self.jury.report.bootstrap.level:.0%} bootstrap CIs "
                              f"({n_boot} resamples of traces)" if n_boot else "no CIs (--n-boot 0)")
        for column in ("who", "cells", "kappa", "F1", "precision", "recall", "accuracy"):
            table.add_column(column, justify="left" if column == "who" else "right")
        for score in [*self.jurors, self.jury]:
            pooled = score.report.pooled
            name = score.name + (" *" if score.name == self.best_juror else "")
            table.add_row(name, str(pooled.n), *(f"{fmt(pooled.value(m))} {fmt_ci(pooled.ci.get(m))}".strip()
                                                  for m in ("kappa", "f1", "precision", "recall", "accuracy")))
        lines: list[Any] = [table, Text("* best juror by pooled kappa")]
        if self.inter_juror is not None:
            pooled_iaa = self.inter_juror.pooled
            lines.append(Text(
                f"inter-juror agreement ({len(self.inter_juror.annotators)} jurors, {pooled_iaa.n_cells} cells): "
                f"Fleiss kappa {fmt(pooled_iaa.fleiss_kappa)}, Krippendorff alpha {fmt(pooled_iaa.krippendorff_alpha)}, "
                f"mean pairwise kappa {fmt(pooled_iaa.mean_pairwise_kappa)}, unanimous {fmt(pooled_iaa.unanimous_share)}"
            ))
        if self.jury_beats_best is not None:
            verdict = "beats" if self.jury_beats_best else "does not beat"
            lines.append(Text(f"the jury ({self.reducer}) {verdict} its best member ({self.best_juror}) on pooled kappa"))
        lines.extend(Text(f"warning: {w}", style="yellow") for w in self.warnings)
        return Group(*lines)


def _juror_diagnoses(diagnoses: list[Diagnosis]) -> dict[str, list[Diagnosis]]:
    """Each juror's own diagnoses, under the trace id of the trace they judged."""
    out: dict[str, list[Diagnosis]] = {}
    for diagnosis in diagnoses:
        if diagnosis.jury is None:
            continue
        for verdict in diagnosis.jury.verdicts:
            own = verdict.diagnosis.model_copy(update={"trace_id": diagnosis.trace_id})
            out.setdefault(verdict.name, []).append(own)
    return out


def evaluate_jury(
    pred: str | os.PathLike[str] | Iterable[Diagnosis],
    gold: LabelSource,
    *,
    taxonomy: Taxonomy | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    ties: TieRule = "exclude",
    gold_format: LabelFormat = "auto",
) -> JuryEvaluationReport:
    """Score every juror, the reduced verdict and the jurors' agreement against ``gold``.

    Raises:
        EvaluationError: ``pred`` holds no jury results, or labels that cannot be compared.
    """
    tax = taxonomy or load_taxonomy()
    source = str(pred) if isinstance(pred, str | os.PathLike) else "diagnoses"
    diagnoses = read_diagnoses(pred) if isinstance(pred, str | os.PathLike) else list(pred)
    by_juror = _juror_diagnoses(diagnoses)
    if not by_juror:
        raise EvaluationError(f"{source}: no jury results (label with --jury or --samples to keep each juror's verdict)")
    options: dict[str, Any] = {"taxonomy": tax, "n_boot": n_boot, "seed": seed, "level": level, "ties": ties,
                               "gold_format": gold_format}
    warnings: list[str] = []
    jurors: list[JurorScore] = []
    for name, own in by_juror.items():
        try:
            jurors.append(JurorScore(name=name, report=evaluate(own, gold, **options)))
        except EvaluationError as exc:
            warnings.append(f"juror {name} not scored: {exc}")
    reducer = next((d.jury.reducer for d in diagnoses if d.jury is not None), "")
    jury = JurorScore(name=f"jury ({reducer})", report=evaluate(diagnoses, gold, **options))
    rows = [
        {"trace_id": d.trace_id, "code": v.code, "present": v.present, "annotator": name}
        for name, own in by_juror.items() for d in own if d.status == "judged" for v in d.failure_modes
        if v.present is not None
    ]
    inter = inter_annotator(label_table(rows, taxonomy=tax), codes=tax.codes) if rows else None
    scored = [(s.report.pooled.kappa, s.name) for s in jurors if s.report.pooled.kappa is not None]
    best = max(scored)[1] if scored else None
    best_kappa = max(scored)[0] if scored else None
    beats = None if best_kappa is None or jury.report.pooled.kappa is None else jury.report.pooled.kappa > best_kappa
    return JuryEvaluationReport(
        pred_source=source, gold_source=jury.report.gold_source, reducer=reducer, jurors=jurors, jury=jury,
        inter_juror=inter, best_juror=best, jury_beats_best=beats, warnings=warnings,
    )
