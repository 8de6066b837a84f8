"""Vercel AI SDK telemetry: ``ai.*`` span attributes.

``ai.operationId`` names the call (``ai.generateText``, its ``ai.generateText.doGenerate`` provider
call, ``ai.toolCall``...); prompts in ``ai.prompt.messages`` (or ``ai.prompt``), answers in
``ai.response.text`` and ``ai.response.toolCalls``; tool spans in ``ai.toolCall.*``; token counts in
``ai.usage.*`` (``inputTokens`` in AI SDK 5, ``promptTokens`` before).
"""

from __future__ import annotations

import re
from typing import Any

from mast.normalize._messages import Msg, from_vercel, maybe_json
from mast.normalize._otel_attrs import input_messages
from mast.normalize._otel_dialects import SpanDialect, SpanReading, register_span_dialect

VERCEL_OPERATION = "ai.operationId"
_LLM_OPERATIONS = re.compile(r"^ai\.(generateText|streamText|generateObject|streamObject)(\.do(Generate|Stream))?$")


def operation_kind(attrs: dict[str, Any], used: set[str]) -> str | None:
    """``ai.operationId``: text/object generation (and its provider call) or a tool call."""
    operation = attrs.get(VERCEL_OPERATION)
    if not isinstance(operation, str):
        return None
    if _LLM_OPERATIONS.match(operation):
        return "llm"
    return "tool" if operation == "ai.toolCall" else None


def tool_calls(value: Any) -> list[Msg] | None:
    """``ai.response.toolCalls``: ``[{toolCallId, toolName, args | input}]``."""
    value = maybe_json(value)
    if not isinstance(value, list) or not value:
        return None
    content = [
        {"type": "tool-call", "toolCallId": c.get("toolCallId"), "toolName": c.get("toolName"), "input": maybe_json(c.get("input", c.get("args")))}
        for c in value
        if isinstance(c, dict)
    ]
    return from_vercel({"role": "assistant", "content": content})


def read_messages(span: SpanReading) -> None:
    """A model call's prompt and response."""
    if span.kind != "llm":
        return
    if span.inputs is None:
        span.inputs = input_messages(span.take("ai.prompt.messages", "ai.prompt"))
    if span.outputs is None:
        text = span.take("ai.response.text")
        calls = tool_calls(span.take("ai.response.toolCalls"))
        if text is not None or calls:
            span.outputs = [Msg(role="assistant", text=str(text or ""), tool_calls=[c for m in calls or [] for c in m.tool_calls])]


register_span_dialect(SpanDialect(
    name="vercel_ai",
    prefixes=("ai.",),
    kinds=((40, operation_kind),),
    implies={"tool": ("ai.toolCall.name",)},
    messages=((50, read_messages),),
    fields={
        "tool_name": ((30, "ai.toolCall.name"),),
        "tool_call_id": ((30, "ai.toolCall.id"),),
        "tool_arguments": ((20, "ai.toolCall.args"), (30, "ai.toolCall.input")),
        "tool_result": ((20, "ai.toolCall.result"), (30, "ai.toolCall.output")),
        "model": ((30, "ai.response.model"), (50, "ai.model.id")),
        "input_tokens": ((40, "ai.usage.inputTokens"), (50, "ai.usage.promptTokens")),
        "output_tokens": ((40, "ai.usage.outputTokens"), (50, "ai.usage.completionTokens")),
        "total_tokens": ((20, "ai.usage.totalTokens"),),
    },
    framework="vercel-ai",
    flat_prefixes=("ai.",),
))
