"""Pydantic AI spans as Logfire writes them: ``pydantic_ai.all_messages``, ``final_result``, tool values.

An agent run's span holds the whole message history in ``pydantic_ai.all_messages`` and the
answer in ``final_result``; a tool span holds ``tool_arguments`` and ``tool_response``; the agent
is named in ``agent_name``.
"""

from __future__ import annotations

from mast.normalize._messages import to_messages
from mast.normalize._otel_dialects import SpanDialect, SpanReading, register_span_dialect

ALL_MESSAGES = "pydantic_ai.all_messages"


def read_all_messages(span: SpanReading) -> None:
    """An agent run's history, as its output (asked before the run's plain input/output values)."""
    if span.kind not in ("agent", "chain", "other"):
        return
    history = span.take(ALL_MESSAGES)
    if history is not None and span.outputs is None:
        span.outputs = to_messages(history)


register_span_dialect(SpanDialect(
    name="logfire_pydantic_ai",
    prefixes=("pydantic_ai.", "final_result", "tool_arguments", "tool_response", "agent_name"),
    late_messages=((5, read_all_messages),),
    fields={
        "input": ((40, "tool_arguments"),),
        "output": ((40, "tool_response"), (50, "final_result")),
        "agent": ((30, "agent_name"),),
    },
))
