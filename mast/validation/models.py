"""What a validation run reports (written to ``summary.json``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mast.evaluation.report import AttributionReport, EvaluationReport

VALIDATION_SCHEMA_VERSION: Literal["mast-validation/1"] = "mast-validation/1"

ModeStatus = Literal["trusted", "usable", "weak", "few positives", "not measurable", "not assessed"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Reference(_Model):
    """A published or computed point to read the judge's figures against."""

    name: str
    source: str
    scope: str
    """Which traces the figure is about (it may not be the same traces as this run)."""
    kappa: float | None = None
    kappa_low: float | None = None
    kappa_high: float | None = None
    accuracy: float | None = None
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None


class ModeFinding(_Model):
    """One mode's agreement over all mode-labelled sets, and what it means for trusting the judge."""

    code: str
    name: str
    n: int
    """Cells compared."""
    positives: int
    """Cells the humans marked present."""
    base_rate: float | None = None
    precision: float | None = None
    recall: float | None = None
    f1: float | None = None
    kappa: float | None = None
    kappa_low: float | None = None
    kappa_high: float | None = None
    kappa_reason: str | None = None
    """Why kappa is not estimable here (e.g. ``judge never says present``); None when it is."""
    human_kappa: float | None = None
    """Fleiss' kappa among the annotators on the same cells, where several annotators exist."""
    status: ModeStatus
    note: str = ""


class SetResult(_Model):
    """One validation set: what was labelled and how it compares with the gold."""

    name: str
    description: str
    licence: str
    n_traces: int
    """Traces labelled (after ``limit``)."""
    n_judged: int = 0
    n_errors: int = 0
    results: str
    """The set's ``results.jsonl``."""
    evaluation: EvaluationReport | None = None
    attribution: AttributionReport | None = None
    detectors: EvaluationReport | None = None
    """The offline detectors on the same traces (a floor to beat); ``None`` when they are the judge."""
    unmapped_cells: int = 0
    """Gold cells from other taxonomy versions with no counterpart among the 14 modes (excluded)."""
    mapping_note: str = ""


class ValidationReport(_Model):
    """The whole validation run: per set, pooled per mode, references and the verdict in plain words."""

    schema_version: Literal["mast-validation/1"] = VALIDATION_SCHEMA_VERSION
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    judge: dict[str, Any]
    """Kind, model, prompt version and hash, taxonomy version, params: what was validated."""
    data_dir: str
    output_dir: str
    sets: list[SetResult]
    pooled: EvaluationReport | None = None
    """All mode-labelled sets together (trace ids prefixed by set)."""
    modes: list[ModeFinding] = Field(default_factory=list)
    references: list[Reference] = Field(default_factory=list)
    reviewer_disagreements: list[dict[str, str]] = Field(default_factory=list)
    """Gold cells where reviewers disagree (``trace_id``, ``key``, ``code``, ``values``): left out of the gold."""
    verdict: str = ""


class SetPlan(_Model):
    """What labelling one set would take (``--dry-run``)."""

    name: str
    n_traces: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None


class ValidationPlan(_Model):
    """A dry run: traces per set and the estimated tokens and cost, nothing called."""

    judge: dict[str, Any]
    sets: list[SetPlan]

    @property
    def cost_usd(self) -> float | None:
        """Total estimate; ``None`` when any set's price is unknown."""
        costs = [s.cost_usd for s in self.sets]
        return None if any(c is None for c in costs) else float(sum(c for c in costs if c is not None))
