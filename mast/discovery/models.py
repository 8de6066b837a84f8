"""What discovery produces: open codes, candidate modes with their gate figures and decisions."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

SCHEMA_VERSION = 1


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class OpenCode(_Model):
    """One failure the open coder named in one trace, its quote checked against the step."""

    trace_id: str
    step: int
    """The step the quote was verified in."""
    quote: str
    label: str
    description: str
    window: int = 1
    """The window of the trace it was found in (1 = the first)."""


class Example(_Model):
    """A verified quote of a candidate, from one trace."""

    trace_id: str
    step: int
    quote: str


class GateFigures(_Model):
    """Agreement of the two annotators (or annotator and people) on one mode over the gate part."""

    round: int
    """0: first gate; 1: after the revision."""
    n_traces: int
    kappa: float | None
    ci_low: float | None
    ci_high: float | None
    positives_a: int
    """Gate traces annotator A (or the judge, against people) labelled with the mode."""
    positives_b: int
    """Gate traces annotator B (or the people) labelled with it."""
    disagreements: int
    confused_with: str | None = None
    """The mode most often given instead of this one where the annotators disagree."""
    confused_count: int = 0


class Candidate(_Model):
    """A group of open codes named as a failure mode, and what became of it."""

    group: int
    """Index of the group in the clustering of this half."""
    code: str | None = None
    """The code it is gated under (``4.1``...); ``None`` when refused before the gate."""
    name: str
    definition: str
    when_to_use: str = ""
    when_not_to_use: str = ""
    nearest_mast: str | None = None
    nearest_candidate: int | None = None
    relation: str = "new"
    """``refines <code>``, ``extends <category>`` or ``new``."""
    category: str | None = None
    examples: list[Example] = []
    n_codes: int
    n_traces: int
    prevalence: float
    """Share of the traces it was built from that hold one of its codes."""
    cohesion: float
    """Mean cosine similarity of its codes' texts to their centroid (TF-IDF)."""
    labels: list[str] = []
    """The open-code labels it groups (up to 10)."""
    status: Literal["refused", "accepted", "merged", "candidate", "not gated"] = "candidate"
    reason: str = ""
    """Why: the figures behind the decision."""
    refused_for: Literal["prevalence", "catch-all", "unnamed"] | None = None
    """The kind of reason a refused candidate was refused for (counted in the run's drop summary)."""
    gate: list[GateFigures] = []
    revised: bool = False
    merged_into: str | None = None
