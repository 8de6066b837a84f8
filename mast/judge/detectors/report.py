"""What the offline detectors return: findings with evidence, and which modes they could judge."""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from mast._render import arguments_text, render_step
from mast.diagnosis import Evidence
from mast.trace import Step

MAX_QUOTE_CHARS = 160
_SPACE = re.compile(r"\s+")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class Finding(_Model):
    """One thing a detector saw in a trace, with the steps and quotes that show it."""

    detector: str
    """Name of the detector (``step_repetition``, ``turn_limit``...)."""
    codes: list[str]
    """MAST mode codes the finding bears on."""
    verdict: bool
    """True: the finding is enough to call its modes present; False: a hint for a judge only."""
    steps: list[int]
    """Indices of the steps involved, ascending."""
    at: int | None = None
    """The step where the failure first shows (the first needless repeat, the limit notice...)."""
    evidence: list[Evidence] = Field(default_factory=list)
    """Verbatim quotes from those steps (each checked against the step's rendered text)."""
    confidence: float = Field(ge=0.0, le=1.0)
    """How likely the finding is right, by the detector's own calibration (0..1)."""
    message: str
    """One readable line: what was seen, where, with short quotes from the trace."""
    outline: str = ""
    """The same line without any text taken from the trace (no quotes, agent or tool names): safe
    to put outside a prompt's fenced transcript, since a trace may hold injected instructions."""


class ModeAssessment(_Model):
    """Whether the detectors could judge one mode on this trace, and why (not)."""

    code: str
    """Mode code."""
    assessed: bool
    """True when some detector can judge this mode on this trace (present or absent)."""
    note: str = ""
    """What was checked, or why the mode was left unassessed."""


class DetectorReport(_Model):
    """Everything the detectors found in one trace."""

    trace_id: str
    """Id of the trace."""
    findings: list[Finding] = Field(default_factory=list)
    """Findings in step order; verdict findings and hints alike."""
    assessments: list[ModeAssessment] = Field(default_factory=list)
    """One entry per mode a detector targets: assessed or not, and why."""
    warnings: list[str] = Field(default_factory=list)
    """Anything that limited the checks (a taxonomy without a mode the detectors target...)."""

    @property
    def assessed(self) -> list[str]:
        """Codes the detectors could judge on this trace."""
        return [a.code for a in self.assessments if a.assessed]

    def present(self, code: str) -> bool | None:
        """True when a verdict finding supports ``code``; False when assessed and none did; None when not assessed."""
        if any(f.verdict and code in f.codes for f in self.findings):
            return True
        return False if code in self.assessed else None

    def findings_for(self, code: str, *, verdicts_only: bool = False) -> list[Finding]:
        """Findings that bear on ``code``."""
        return [f for f in self.findings if code in f.codes and (f.verdict or not verdicts_only)]


def _squash(text: str) -> str:
    return _SPACE.sub("", text)


def _cut(text: str, limit: int = MAX_QUOTE_CHARS) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return cut[:space] if space > limit // 2 else cut


def evidence(step: Step, text: str) -> Evidence:
    """An :class:`Evidence` quoting ``text`` (capped) from ``step``, verified against its rendered block."""
    quote = _cut(text)
    return Evidence(step=step.index, quote=quote, verified=bool(quote) and _squash(quote) in _squash(render_step(step)))


def first_line(text: str) -> str:
    """The first line of ``text`` with words in it (code fences and blank lines skipped)."""
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("```"):
            return stripped
    return text.strip()


def step_quote(step: Step) -> Evidence:
    """The most telling quote from a step: its first line, else its tool call, else its first result."""
    if step.content.strip():
        return evidence(step, first_line(step.content))
    if step.tool_calls:
        call = step.tool_calls[0]
        return evidence(step, arguments_text(call.arguments) or call.arguments_raw or call.name)
    for result in step.tool_results:
        if result.output.strip():
            return evidence(step, first_line(result.output))
    if step.error:
        return evidence(step, first_line(step.error))
    return Evidence(step=step.index, quote="", verified=False)


def call_quote(step: Step) -> Evidence:
    """A quote of the step's first tool call: its arguments as rendered, else its name."""
    if not step.tool_calls:
        return step_quote(step)
    call = step.tool_calls[0]
    return evidence(step, arguments_text(call.arguments) or call.arguments_raw or call.name)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def matching_sentence(text: str, pattern: re.Pattern[str]) -> str | None:
    """The last sentence (or line) of ``text`` that ``pattern`` matches."""
    found = None
    for sentence in _SENTENCE_END.split(text):
        if pattern.search(sentence):
            found = sentence.strip()
    return found


def matching_line(text: str, pattern: re.Pattern[str]) -> str | None:
    """The first line of ``text`` that ``pattern`` matches."""
    for line in text.splitlines():
        if pattern.search(line):
            return line.strip()
    return None


def inline(text: str, limit: int = 100) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis: for readable messages."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def span(steps: list[int]) -> str:
    """``step 4``, ``steps 4 and 6``, ``steps 4, 6, 8``, ``steps 4-12 (7 times)``..."""
    if not steps:
        return "no step"
    if len(steps) == 1:
        return f"step {steps[0]}"
    if steps == list(range(steps[0], steps[-1] + 1)):
        return f"steps {steps[0]}-{steps[-1]}"
    if len(steps) <= 4:
        return "steps " + ", ".join(map(str, steps[:-1])) + f" and {steps[-1]}"
    return f"steps {steps[0]}-{steps[-1]} ({len(steps)} times)"
