"""What the judge reads of a trace, prepared once: rendered steps, task, final output, hints, redacted.

Everything from the trace that goes into a prompt passes through :func:`prepare` so redaction
(when on) happens before token counting and before anything leaves the process, and evidence quotes
are later verified against exactly the text the judge saw (:meth:`Material.verify`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from mast._render import cap_text
from mast.redact import Redactor, current_redactor, redact_trace
from mast.trace import Trace

TASK_MAX_CHARS = 8_000
"""Longest task text put in a prompt; a longer one keeps head and tail around a visible marker."""
FINAL_OUTPUT_MAX_CHARS = 8_000
"""Longest final output put in a prompt (same visible cut)."""
HINTS_MAX_CHARS = 4_000
"""Longest block of detector hints put in a prompt."""


@dataclass
class Material:
    """The prompt-ready text of one trace."""

    task: str
    """The task (capped, redacted), or a placeholder when the trace has none."""
    final_output: str
    """The final output (capped, redacted), or a placeholder."""
    blocks: list[tuple[int, str]]
    """``(step index, rendered block)`` in order; each block starts with ``[S<index>]``."""
    hints: str = ""
    """Detector hints (redacted), empty when none."""
    redactions: dict[str, int] = field(default_factory=dict)
    """Secrets replaced, by kind."""
    warnings: list[str] = field(default_factory=list)
    """Cuts and other notes for the diagnosis."""
    scrub: Callable[[str], str] = field(default=lambda text: text, repr=False)
    """Redacts a text with the rules the trace was redacted with (identity when redaction is off): the
    judge's answer passes through it before it is stored, so a quoted secret never reaches the results."""

    @property
    def n_steps(self) -> int:
        """Steps in the trace."""
        return len(self.blocks)

    @property
    def transcript(self) -> str:
        """All blocks, one after another."""
        return "\n".join(text for _, text in self.blocks)

    @property
    def step_range(self) -> str:
        """`, S0-S<last>` for prompts, empty for an empty trace."""
        return f", S{self.blocks[0][0]}-S{self.blocks[-1][0]}" if self.blocks else ""

    def step_text(self, index: int) -> str | None:
        """The block of step ``index`` as the judge saw it."""
        for step, text in self.blocks:
            if step == index:
                return text
        return None

    def all_text(self) -> list[str]:
        """Every piece of trace text that may go into a prompt (to choose a fence)."""
        return [self.task, self.final_output, self.hints, *(text for _, text in self.blocks)]

    def verify(self, step: int | None, quote: str) -> bool:
        """True when ``quote`` occurs in step ``step``'s block, ignoring whitespace.

        A quote with ``...`` elisions verifies when its pieces occur in order.
        """
        if step is None:
            return False
        text = self.step_text(step)
        return text is not None and quote_in(quote, text)

    def find_quote(self, quote: str) -> int | None:
        """The first step whose block holds ``quote`` (for warnings about a mis-cited step)."""
        for step, text in self.blocks:
            if quote_in(quote, text):
                return step
        return None


_ELLIPSIS = re.compile(r"\.\.\.|…")
_EDGE_QUOTES = "\"'`“”‘’ \n\t"


def _squash(text: str) -> str:
    return "".join(text.split())


def quote_in(quote: str, text: str) -> bool:
    """Whitespace-insensitive containment, with ``...`` elisions matched piece by piece in order."""
    pieces = [_squash(p) for p in _ELLIPSIS.split(quote.strip(_EDGE_QUOTES))]
    pieces = [p for p in pieces if p]
    if not pieces:
        return False
    haystack = _squash(text)
    position = 0
    for piece in pieces:
        found = haystack.find(piece, position)
        if found < 0:
            return False
        position = found + len(piece)
    return True


class _Redaction:
    """Redacts each text with one rule set for the whole trace and counts what it replaced."""

    def __init__(self, enabled: bool, ips: bool, patterns: tuple[tuple[str, str], ...]) -> None:
        self.counts: Counter[str] = Counter()
        # One rule set for every text of the trace (redact_text would look it up again per text).
        self.redactor: Redactor | None = current_redactor(ips=ips, patterns=patterns) if enabled else None

    def scrub(self, text: str) -> str:
        """``text`` redacted, not counted (for the judge's answer)."""
        if self.redactor is None or not text:
            return text
        return self.redactor.redact(text).text

    def __call__(self, text: str) -> str:
        if self.redactor is None or not text:
            return text
        result = self.redactor.redact(text)
        if result.counts:
            self.counts.update({k: v for k, v in result.counts.items() if v})
        return result.text


def prepare(
    trace: Trace,
    *,
    redact: bool = True,
    redact_ips: bool = False,
    redact_patterns: tuple[tuple[str, str], ...] = (),
    hints: str | None = None,
) -> Material:
    """Render, cap (visibly) and redact everything of ``trace`` that a prompt may hold."""
    redaction = _Redaction(redact, redact_ips, redact_patterns)
    warnings: list[str] = []
    if redact:
        # Redact the whole texts before rendering caps them: a secret that straddles a cut would
        # otherwise leave a fragment too short to match ("sk-proj-Ab3", "jane.doe@exa").
        trace, counts = redact_trace(trace, ips=redact_ips, patterns=redact_patterns)
        redaction.counts.update(counts)
    # What the normaliser could not read (a payload kept as text, a guessed speaker) stays with the verdict.
    warnings.extend(f"trace: {warning}" for warning in trace.warnings)
    transcript = trace.to_transcript()
    warnings.extend(transcript.warnings)
    blocks: list[tuple[int, str]] = []
    for step in trace.steps:
        span = transcript.step_offsets.get(step.index)
        if span is None:
            continue
        blocks.append((step.index, redaction(transcript.text[span[0] : span[1]])))

    def capped(value: str | None, limit: int, what: str, missing: str) -> str:
        if not value:
            return missing
        text, cut = cap_text(value, limit)
        if cut:
            warnings.append(f"{what}: {cut} of {len(value)} chars cut for the prompt (cap {limit})")
        return redaction(text)

    task = capped(trace.task, TASK_MAX_CHARS, "task", "(no separate task recorded; see the first steps)")
    final = capped(trace.final_output, FINAL_OUTPUT_MAX_CHARS, "final output", "(no final output recorded)")
    hint_text = capped(hints, HINTS_MAX_CHARS, "detector hints", "") if hints else ""
    return Material(
        task=task,
        final_output=final,
        blocks=blocks,
        hints=hint_text,
        redactions=dict(redaction.counts),
        warnings=warnings,
        scrub=redaction.scrub,
    )
