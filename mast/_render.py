"""Render a :class:`~mast.trace.Trace` as the judge's transcript (the single renderer)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from mast._json import canonical

if TYPE_CHECKING:
    from mast.trace import Step, Trace, Transcript


def _cap(text: str, limit: int) -> tuple[str, int]:
    """Keep the head and tail of ``text`` around a visible marker; return (text, chars cut)."""
    if len(text) <= limit:
        return text, 0
    cut = len(text) - limit
    head = limit * 2 // 3
    tail = limit - head
    return f"{text[:head]}\n[... {cut} chars cut ...]\n{text[len(text) - tail:]}", cut


def _arguments(value: object) -> str:
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
    for call in step.tool_calls:
        parts.append(f"<tool_call name={call.name!r}>{_arguments(call.arguments) or call.arguments_raw or ''}</tool_call>")
    for result in step.tool_results:
        flag = " error" if result.is_error else ""
        name = f" name={result.name!r}" if result.name else ""
        parts.append(f"<tool_result{name}{flag}>{result.output}</tool_result>")
    if step.error and step.error not in step.content:
        parts.append(f"<error>{step.error}</error>")
    body = "\n".join(parts)
    return f"{head}: {body}"


def render_transcript(
    trace: Trace, *, max_step_chars: int, max_total_chars: int | None
) -> Transcript:
    from mast.trace import Transcript

    warnings: list[str] = []
    blocks: list[str] = []
    offsets: dict[int, tuple[int, int]] = {}
    position = 0
    for step in trace.steps:
        full = render_step(step)
        block, cut = _cap(full, max_step_chars)
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
