"""The final output as a person would read it: the last substantive agent message, without framework trailers.

Frameworks end runs with text that is no answer: AutoGen's ``---------- Summary ----------`` block
(message counts, token totals, duration), per-message usage lines (``[Prompt tokens: 61, Completion
tokens: 1034]``), a bare ``TERMINATE`` turn, result statistics. :func:`strip_trailers` removes
those lines from a message; :func:`final_from_steps` walks back to the last agent message that says
something once they are gone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mast.trace import Step

USAGE_LINE = re.compile(
    r"^[ \t]*(?:\[?Prompt tokens: *\d+, *Completion tokens: *\d+\]?"
    r"|Total (?:prompt|completion) tokens: *\d+"
    r"|Number of messages: *\d+|Finish reason: *[^\n]*|Duration: *[\d.]+ *seconds?"
    r"|(?:Tokens|Token usage|Usage): *[^\n]*\d[^\n]*tokens?[^\n]*)[ \t]*$",
    re.MULTILINE | re.IGNORECASE,
)
"""A line that reports usage or run statistics, not content."""
_TERMINATE = re.compile(r"(?:^|\s)TERMINATE[.!]?\s*$")
_NOT_AGENTS = frozenset({"user", "tool", "system", "human", "environment"})
TERMINAL_TOOLS = frozenset({"terminate", "finish", "final_answer", "final_result", "complete_task", "submit", "task_complete", "stop"})
"""Tools whose call ends the run: the message that calls them can be the final output (``final_result`` is
Pydantic AI's output tool: its arguments are the answer)."""


def usage_numbers(text: str) -> tuple[int | None, int | None]:
    """``(prompt, completion)`` tokens from a ``[Prompt tokens: N, Completion tokens: M]`` line, if any."""
    found = re.search(r"Prompt tokens: *(\d+), *Completion tokens: *(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else (None, None)


def strip_trailers(text: str) -> str:
    """``text`` without usage/statistics lines and without a closing ``TERMINATE``."""
    if not text:
        return ""
    cleaned = USAGE_LINE.sub("", text).strip() if ("tokens" in text.lower() or ":" in text) else text.strip()
    while True:
        shorter = _TERMINATE.sub("", cleaned).rstrip()
        if shorter == cleaned:
            return cleaned
        cleaned = shorter


def final_from_steps(steps: Sequence[Step]) -> str | None:
    """The last agent message with content once trailers are stripped; ``None`` when there is none."""
    for step in reversed(steps):
        if step.kind not in ("message", "llm", "handoff") or step.role in ("system", "developer", "user", "tool"):
            continue
        if not step.agent or step.agent.lower() in _NOT_AGENTS:
            continue
        if any(call.name.lower() not in TERMINAL_TOOLS for call in step.tool_calls):
            continue
        if step.attributes.get("event") == "summary":
            continue
        text = strip_trailers(step.content)
        if text:
            return text
    return None


_POINTER_WORDS = re.compile(
    r"\b(?:begin|start|proceed|continue|go ahead|follow|instructions?|as (?:described|instructed|specified|above)"
    r"|see (?:above|the)|the task|agents\.md|per the)\b",
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(r"\b[A-Za-z][\w.-]*\d[\w.-]*\b|#\d+")
TASK_POINTER_CHARS = 300
"""Only a first user turn shorter than this can be a mere pointer to instructions given elsewhere."""


def points_elsewhere(request: str | None, instructions: str) -> bool:
    """True when a short request only points at instructions delivered elsewhere.

    ``Begin the investigation of INC-4172.`` points (a pointer word, and an identifier the
    instructions also name); ``show tools`` and a full problem statement do not.
    """
    if not instructions.strip():
        return False
    if request is None or not request.strip():
        return True
    if len(request.strip()) >= TASK_POINTER_CHARS:
        return False
    if _POINTER_WORDS.search(request):
        return True
    return any(token in instructions for token in _IDENTIFIER.findall(request))


def with_instructions(request: str | None, instructions: list[str], where: str) -> str | None:
    """The task as a person would read it: the request, then the instructions it points at, marked with ``where``.

    Unchanged when the request states the task itself (see :func:`points_elsewhere`).
    """
    given = "\n\n".join(text.strip() for text in instructions if text.strip())
    if not points_elsewhere(request, given):
        return request
    marked = f"[Instructions delivered to the agent separately ({where})]\n{given}"
    return f"{request.strip()}\n\n{marked}" if request and request.strip() else marked
