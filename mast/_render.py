"""Render a :class:`~mast.trace.Trace` as the judge's transcript (the single renderer).

:mod:`mast.trace` imports this module (``Trace.to_transcript``) and never the other way at run time:
the trace types appear here only in annotations.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from mast._json import canonical

if TYPE_CHECKING:
    from mast.trace import Step, Trace


BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
"""Unicode's bidirectional controls: embeddings and overrides, isolates, marks (LRM, RLM, ALM)."""

_BIDI_ESCAPES = {ord(c): f"\\u{ord(c):04x}" for c in BIDI_CONTROLS}


def neutralise_bidi(text: str) -> str:
    """``text`` with each BiDi control shown as a visible escape (U+202E as ``\\u202e``).

    An override would make a page show text other than what the trace holds (``evil`` drawn as
    ``live``); the report and ``mast review`` show transcripts, quotes and notes through this.

    Example:
        >>> neutralise_bidi("\u202eevil")
        '\\u202eevil'
    """
    return text.translate(_BIDI_ESCAPES) if text else text


class Transcript(BaseModel):
    """What the judge reads: the rendered text plus what was capped on the way."""

    text: str
    """The rendered transcript, one ``[S<n>]`` block per step."""
    warnings: list[str] = Field(default_factory=list)
    """One line per cap that shortened the text; the text holds a visible marker at each cut."""
    step_offsets: dict[int, tuple[int, int]] = Field(default_factory=dict)
    """Character span of each step's block in :attr:`text`."""


def cap_text(text: str, limit: int) -> tuple[str, int]:
    """Keep the head and tail of ``text`` around a visible marker; return (text, chars cut)."""
    if len(text) <= limit:
        return text, 0
    cut = len(text) - limit
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n[... {cut} chars cut ...]\n{text[len(text) - tail:]}", cut


def arguments_text(value: object) -> str:
    """Tool-call arguments as text: a string as it is, anything else as canonical JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return canonical(value)


def render_step(step: Step) -> str:
    """The uncapped text of one step's block."""
    who = step.agent or step.role or step.kind
    head = f"[S{step.index}] {who}"
    if step.recipient:
        head += f" → {step.recipient}"
    if step.kind not in ("message", "llm"):
        head += f" ({step.kind})"
    parts = [step.content] if step.content else []
    outputs = [step.content]
    for call in step.tool_calls:
        parts.append(f"<tool_call name={call.name!r}>{arguments_text(call.arguments) or call.arguments_raw or ''}</tool_call>")
    for result in step.tool_results:
        flag = " error" if result.is_error else ""
        name = f" name={result.name!r}" if result.name else ""
        parts.append(f"<tool_result{name}{flag}>{result.output}</tool_result>")
        outputs.append(result.output)
    # Readers copy a failed tool's output into the step's error as well (so that error-only views
    # see it); the judge reads it once, where it came from, not twice at double the tokens.
    if step.error and not any(step.error in text for text in outputs):
        parts.append(f"<error>{step.error}</error>")
    body = "\n".join(parts)
    return f"{head}: {body}"


def render_transcript(
    trace: Trace, *, max_step_chars: int, max_total_chars: int | None
) -> Transcript:
    """The trace's steps as ``[S<n>]`` blocks, capped visibly (see :meth:`mast.trace.Trace.to_transcript`)."""
    warnings: list[str] = []
    blocks: list[str] = []
    offsets: dict[int, tuple[int, int]] = {}
    position = 0
    for step in trace.steps:
        full = render_step(step)
        block, cut = cap_text(full, max_step_chars)
        if cut:
            warnings.append(f"step S{step.index}: {cut} of {len(full)} chars cut (step cap {max_step_chars})")
        if max_total_chars is not None and position + len(block) > max_total_chars:
            remaining = len(trace.steps) - step.index
            blocks.append(f"[... {remaining} more steps (S{step.index}-S{trace.steps[-1].index}) cut: transcript cap of {max_total_chars} chars reached ...]")
            warnings.append(f"transcript capped at {max_total_chars} chars: steps S{step.index}-S{trace.steps[-1].index} not rendered")
            break
        offsets[step.index] = (position, position + len(block))
        blocks.append(block)
        position += len(block) + 1
    return Transcript(text="\n".join(blocks), warnings=warnings, step_offsets=offsets)
