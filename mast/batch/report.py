"""What a batch did, counted as it goes: :class:`BatchReport`, and the one-line error texts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from mast._outputs import terminal_safe
from mast.diagnosis import Diagnosis
from mast.errors import one_line

if TYPE_CHECKING:
    from mast.batch.inputs import WorkItem

Outcome = Literal["judged", "resumed", "duplicate", "unreadable"]
"""How a result came about: judged now, read back from the output, copied (with its own source)
from an identical trace judged earlier in the input or found in the output, or an input record
that could not be read."""


class BatchReport(BaseModel):
    """What a batch did: counts, spend and why it stopped early, if it did."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    total: int = 0
    """Traces selected (unreadable records included)."""
    statuses: dict[str, int] = Field(default_factory=lambda: {"judged": 0, "unjudgeable": 0, "error": 0})
    """Results by status, resumed ones included."""
    resumed: int = 0
    """Results read back from the output instead of judged again."""
    unreadable: int = 0
    """Input records that could not be read (written as ``error`` results)."""
    not_started: int = 0
    """Traces left for a later run (budget reached or interrupted)."""
    abandoned: int = 0
    """Traces in flight when a second Ctrl-C stopped the run: no result, judged again on resume."""
    not_started_partial: bool = False
    """``not_started`` is a lower bound: after Ctrl-C the rest of a large input was not all counted."""
    file_errors: list[str] = Field(default_factory=list)
    """``path: reason`` for each input file that could not be read (skipped)."""
    mode_counts: dict[str, int] = Field(default_factory=dict)
    """Judged traces with each mode present."""
    mode_assessed: dict[str, int] = Field(default_factory=dict)
    """Judged traces in which each mode was assessed (present or absent, not ``None``): the
    denominator of its prevalence. The offline detectors assess only some modes."""
    mode_hinted: dict[str, int] = Field(default_factory=dict)
    """Judged traces in which the offline detectors saw signs of a mode not found present (their
    hints: a mode they leave to a model judge, or one the model judged absent)."""
    input_tokens: int = 0
    """Tokens sent in this run."""
    output_tokens: int = 0
    """Tokens received in this run."""
    llm_calls: int = 0
    """LLM calls made in this run."""
    cached: int = 0
    """Results answered without a call: by the judge's cache, or copied from an identical trace
    (same id and content) read from another file or record."""
    cost_usd: float = 0.0
    """Dollars spent in this run, where the price is known."""
    cost_unknown: int = 0
    """Traces judged with a model whose price litellm does not know."""
    wall_s: float = 0.0
    """Seconds the run took."""
    stopped: Literal["budget", "interrupted", "failed"] | None = None
    """Why the run stopped before starting every trace."""
    message: str | None = None
    """The reason in words."""
    retried: int = 0
    """``error`` results from an earlier run removed from the output to be judged again."""
    repaired: str | None = None
    """What was repaired in the output before resuming (a torn last line)."""
    sink_failures: int = 0
    """Results a sink could not write (they are in the output; the same run again writes them)."""

    @property
    def done(self) -> int:
        """Traces with a result."""
        return sum(self.statuses.values())

    @property
    def failed(self) -> int:
        """Results in ``error`` or ``unjudgeable``."""
        return self.statuses.get("error", 0) + self.statuses.get("unjudgeable", 0)

    @property
    def exit_code(self) -> int:
        """2: inputs unreadable; 1: a trace not judged (error, unjudgeable, not started) or not in a sink; 0."""
        if self.file_errors or self.unreadable:
            return 2
        if self.failed or self.not_started or self.abandoned or self.stopped or self.sink_failures:
            return 1
        return 0

    def count(
        self, status: str, outcome: Outcome, present: list[str], assessed: list[str], hinted: Sequence[str] = ()
    ) -> None:
        """Count one result by its status and modes (running counts: no result is kept)."""
        self.statuses[status] = self.statuses.get(status, 0) + 1
        if outcome == "resumed":
            self.resumed += 1
        elif outcome == "unreadable":
            self.unreadable += 1
        for code in assessed:
            self.mode_assessed[code] = self.mode_assessed.get(code, 0) + 1
        for code in present:
            self.mode_counts[code] = self.mode_counts.get(code, 0) + 1
        for code in hinted:
            self.mode_hinted[code] = self.mode_hinted.get(code, 0) + 1

    def count_diagnosis(self, diagnosis: Diagnosis, outcome: Outcome) -> None:
        """Count a result held whole: status, modes and (judged now, or copied) its usage."""
        judged = diagnosis.status == "judged"
        assessed = [v.code for v in diagnosis.failure_modes if judged and v.present is not None]
        present = [v.code for v in diagnosis.failure_modes if judged and v.present]
        hinted = [v.code for v in diagnosis.failure_modes if judged and v.hints and not v.present]
        self.count(diagnosis.status, outcome, present, assessed, hinted)
        usage = diagnosis.usage
        if outcome == "duplicate":
            self.cached += int(usage.cached)
        if outcome != "judged":
            return
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.llm_calls += usage.llm_calls
        self.cached += int(usage.cached)
        if usage.cost_usd is not None:
            self.cost_usd += usage.cost_usd
        elif usage.llm_calls:
            self.cost_unknown += 1


def result_error_line(diagnosis: Diagnosis) -> str:
    """``where: reason`` for an ``error`` result, naming the location once.

    Errors about reading a record (:class:`~mast.errors.TraceFormatError`) already start with
    ``path#record``; other errors (the judge's) get the location put in front.
    """
    where = diagnosis.source.path or diagnosis.trace_id
    if diagnosis.source.path is not None and diagnosis.source.record is not None:
        where += f"#{diagnosis.source.record}"
    message = diagnosis.error.message if diagnosis.error is not None else "error"
    if message.startswith((f"{where}:", f"{diagnosis.trace_id}:")):
        return message
    return f"{where}: {message}"


def file_error_line(item: WorkItem) -> str:
    """``path: reason`` for an unreadable input file, without saying the path twice."""
    error = item.error
    text = one_line(error) if error is not None else "unreadable"
    path = item.source.path or "input"
    line = text if text.startswith(path) else f"{path}: {text}"
    # The path is shown as it is (one_line would turn a newline in a file's name into a space).
    return terminal_safe(path) + line[len(path):] if line.startswith(path) else line
