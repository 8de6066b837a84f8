"""Pydantic AI message history files: ``result.all_messages_json()`` / ``ModelMessagesTypeAdapter.dump_json``.

A JSON list of ``ModelRequest`` / ``ModelResponse`` dumps (the dialect is read by
:mod:`mast.normalize.dialects.pydantic_ai`), or an object holding one under ``messages``. The task
is the first user prompt; the final output is the last text the model returned, else the
arguments of its ``final_result`` output tool (structured output).

Example:
    >>> from mast.normalize import load_trace
    >>> t = load_trace([
    ...   {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "Weather in Paris?"}]},
    ...   {"kind": "response", "model_name": "gpt-4o", "parts": [{"part_kind": "text", "content": "Sunny."}]}])
    >>> t.source.format, t.task, t.final_output
    ('pydantic_ai', 'Weather in Paris?', 'Sunny.')
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast._json import canonical
from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._messages import from_item
from mast.normalize._sniff import sniffed_json
from mast.normalize._timeline import Timeline
from mast.normalize.base import RawInput, TraceFormat, register
from mast.normalize.dialects.pydantic_ai import is_model_message
from mast.trace import Trace

OUTPUT_TOOL = "final_result"
"""The tool Pydantic AI gives the model for structured output (``final_result`` or ``final_result_<Type>``)."""


def history(data: Any) -> list[dict[str, Any]] | None:
    """The message list, when ``data`` is a Pydantic AI history (or an object holding one under ``messages``)."""
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        data = data["messages"]
    if isinstance(data, list) and data and all(isinstance(m, dict) and is_model_message(m) for m in data):
        return data
    return None


class PydanticAIFormat(TraceFormat):
    """A Pydantic AI run's message history."""

    name = "pydantic_ai"
    description = "Pydantic AI message history (result.all_messages_json() / ModelMessagesTypeAdapter)"
    priority = 18
    example = '[{"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "..."}]}, {"kind": "response", ...}]'

    def detect(self, raw: RawInput) -> float:
        """0.95 for a list of ``kind``/``parts`` messages whose parts name a ``part_kind``."""
        data = sniffed_json(raw, '"part_kind"')
        return 0.95 if data is not None and history(data) is not None else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per history."""
        data = raw.data()
        messages = history(data)
        if messages is None:
            raise raw.fail("not a Pydantic AI message history: expected a list of {kind, parts}")
        timeline = Timeline(default_agent="agent")
        structured: Any = None
        for position, message in enumerate(messages):
            for msg in from_item(message):
                for call in msg.tool_calls:
                    if call.name.startswith(OUTPUT_TOOL):
                        structured = call.arguments if call.arguments is not None else call.arguments_raw
                timeline.add(msg, source_ref=f"messages[{position}]")
        if not timeline.steps:
            raise raw.fail("the history holds no messages with content")
        final = timeline.final_answer()
        if final is None and structured is not None:
            final = structured if isinstance(structured, str) else canonical(structured)
        extra = {k: v for k, v in data.items() if k != "messages"} if isinstance(data, dict) else {}
        yield assemble_trace(timeline.steps, source=self.source(raw), timeline=timeline, final_output=final,
                             framework="pydantic-ai", metadata=extra)


register(PydanticAIFormat())
