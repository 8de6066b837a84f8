"""What calibration produces: per mode, the dev disagreements, the proposal, the test figures and the decision."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from mast.taxonomy import ModeExample

SCHEMA_VERSION = 1

Decision = Literal["accepted", "refused", "not decided", "unchanged", "not run"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class Proposal(_Model):
    """The model's proposed change of one mode (examples verified against their steps)."""

    definition: str
    when_to_use: str = ""
    when_not_to_use: str = ""
    examples: list[ModeExample] = []
    """Quotes found in the step they cite, in a dev trace."""
    examples_dropped: int = 0
    """Quotes not found where they said (or not from a dev trace): dropped."""


class SplitFigures(_Model):
    """Current taxonomy (before) and candidate (after) against the gold, on one split, for one mode."""

    n_traces: int
    """Traces of the split judged by both runs and reviewed for this mode."""
    positives: int
    """Traces of the split the reviewers found the mode in."""
    negatives: int
    kappa_before: float | None = None
    ci_before: tuple[float, float] | None = None
    kappa_after: float | None = None
    ci_after: tuple[float, float] | None = None
    diff: float | None = None
    """kappa after - kappa before."""
    ci_diff: tuple[float, float] | None = None
    """Paired bootstrap CI of the difference (the same resampled traces for both)."""
    ci_diff_adjusted: tuple[float, float] | None = None
    """The same CI, Bonferroni-widened for the number of modes tested on one test split (test only)."""


class ModeDecision(_Model):
    """One mode's calibration: what dev showed, what was proposed, what test said, what was decided."""

    code: str
    name: str
    dev_traces: int = 0
    """Dev traces with both a gold and a judge value for the mode."""
    dev_disagreements: int = 0
    dev_false_positives: int = 0
    """Dev traces the judge found the mode in and the reviewers did not."""
    dev_false_negatives: int = 0
    proposal: Proposal | None = None
    dev: SplitFigures | None = None
    """The dev split's figures, current against candidate: the proposal was written from dev, so
    these show it fits what it saw, and never decide."""
    test: SplitFigures | None = None
    decision: Decision = "unchanged"
    reason: str = ""


class CalibrationResult(_Model):
    """A calibration run: the decisions, where it wrote them, and what it spent."""

    schema_version: int = SCHEMA_VERSION
    output: str
    base_version: str
    """The taxonomy calibrated."""
    taxonomy_version: str
    """The version of the written taxonomy (the base's when no change was accepted)."""
    split: dict[str, int | list[str]]
    """Seed and the dev and test trace ids."""
    min_positives: int
    n_boot: int
    modes: list[ModeDecision]
    totals: dict[str, int | float | None]
    """Calls, answers from the cache, tokens and dollars of this run."""
    notes: list[str] = []
    stopped: str | None = None
    """Why the run stopped before the end (the budget), or ``None``."""

    @property
    def tested(self) -> list[ModeDecision]:
        """The modes whose candidate was judged on the test split (accepted or refused there)."""
        return [m for m in self.modes if m.test is not None and m.test.kappa_after is not None]

    @property
    def accepted(self) -> list[ModeDecision]:
        """The modes whose change was accepted."""
        return [m for m in self.modes if m.decision == "accepted"]


class CalibrationPlan(_Model):
    """A dry run of :func:`mast.calibrate`: nothing was sent."""

    dev_traces: int
    test_traces: int
    modes: list[str]
    """Modes with dev disagreements: one proposal call each."""
    judged: list[str]
    """Of them, the modes with enough test positives to be re-judged."""
    proposal_calls: int
    judge_calls: int
    """Test traces x (1 + judged modes), at most: answers already in the cache cost nothing."""
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    notes: list[str] = []
