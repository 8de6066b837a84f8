"""Plain text logs, the last resort: one step per turn marker, else one per paragraph."""

from __future__ import annotations

import re
from collections.abc import Iterator

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import agents_from_steps
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Agent, SourceInfo, Step, Trace

# "Name:", "Name (to Other):", "[Name]:", "### Name" at the start of a line marks a new turn.
_TURN = re.compile(
    r"^(?:\[(?P<b>[^\]\n]{1,60})\]:?|(?P<n>[A-Za-z][\w .\-]{0,40}?)(?: \(to (?P<to>[^)\n]{1,60})\))?:|#{2,3} (?P<h>[^\n]{1,60}))[ \t]*",
    re.MULTILINE,
)
MAX_TEXT_BYTES = 64 * 1024 * 1024
_LEVEL = r"(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL|SUCCESS)"
_STAMP = r"(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?|\d\d:\d\d:\d\d(?:[.,]\d+)?)"
_LOG_PREFIX = re.compile(
    rf"^[ \t]*(?:(?:\[[ \t]*(?:{_STAMP}|{_LEVEL})(?:[ \t,]+(?:{_STAMP}|{_LEVEL}))*[ \t]*\]|{_STAMP}|{_LEVEL}\b:?)"
    rf"[ \t]*(?:[|\-][ \t]*)?)+(?:[\w.]+:[\w<>.]+:\d+[ \t]+-[ \t]+)?",
    re.MULTILINE,
)
"""What loggers print before the message: ``[INFO]``, ``2025-01-02 10:00:00,123 WARNING``, ``| INFO |``, a
loguru ``module:function:line -``. Removed before speakers are read, so ``[INFO] Planner: ...`` is Planner's."""


class PlainText(TraceFormat):
    """Any readable text: the fallback when no structured format matches."""

    name = "plain_text"
    description = "Plain text log (last resort): one step per 'Name:' turn, else per paragraph"
    priority = 900
    example = 'Planner: let us start.  /  any text, split into paragraphs'

    def detect(self, raw: RawInput) -> float:
        """Barely above the threshold, and only for text that did not parse as JSON or YAML."""
        try:
            data = raw.data()
        except TraceFormatError:
            return 0.0
        return 0.31 if raw.kind == "text" and isinstance(data, str) and data.strip() else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace for the whole file, with a warning that its steps were split heuristically."""
        text = raw.text()  # also when forced onto a file that parses as JSON (--format plain_text)
        yield parse_text_log(text, source=self.source(raw), warning="read as plain text: steps split heuristically")


def parse_text_log(text: str, *, source: SourceInfo | None = None, warning: str | None = None, framework: str | None = None) -> Trace:
    """Split a text log into steps by turn markers (``Name:``), else by blank-line paragraphs."""
    steps: list[Step] = []
    text = _LOG_PREFIX.sub("", text)
    matches = list(_TURN.finditer(text))
    if len(matches) >= 2:
        for i, match in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
            who = (match.group("b") or match.group("n") or match.group("h") or "").strip()
            body = text[match.end():end].strip()
            steps.append(Step(index=i, kind="message", agent=who or None, recipient=match.group("to"), content=body, source_ref=f"char:{match.start()}"))
    else:
        offset = 0
        for block in re.split(r"\n\s*\n", text):
            if block.strip():
                steps.append(Step(index=len(steps), kind="message", content=block.strip(), source_ref=f"char:{text.find(block, offset)}"))
            offset += len(block)
    agents = agents_from_steps(steps)
    return assemble_trace(
        steps, source=source or SourceInfo(format="plain_text"), known_agents=agents, derive_agents=False,
        task=steps[0].content[:2000] if steps and steps[0].agent is None else None, derive_task=False,
        warnings=[warning] if warning else [], trace_id=_first_id(steps, agents), framework=framework,
    )


def _first_id(steps: list[Step], agents: list[Agent]) -> str:
    """The id plain-text traces have always had: the content hash of steps and agents, taken without the task.

    (The task is the first paragraph when it has no speaker; hashing it too would change every
    plain-text trace id, and with them every cached verdict.)
    """
    return "sha256:" + Trace(steps=steps, agents=agents).content_hash()[:16]

register(PlainText())
