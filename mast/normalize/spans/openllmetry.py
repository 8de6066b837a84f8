"""Traceloop / OpenLLMetry, and the deprecated OTel GenAI prompt keys they write.

Messages as indexed keys, ``gen_ai.prompt.N.role|content|tool_call_id|tool_calls.M.*`` and
``gen_ai.completion.N.*``, or whole ``gen_ai.prompt`` / ``gen_ai.completion`` JSON strings; the
span kind in ``traceloop.span.kind`` (or ``llm.request.type``); a workflow's or task's values in
``traceloop.entity.input|output`` and its name in ``traceloop.entity.name``.
"""

from __future__ import annotations

from typing import Any

from mast.normalize._messages import Msg, from_item, maybe_json
from mast.normalize._otel_attrs import SIMPLE_KINDS, input_messages, listify, output_messages, unflatten
from mast.normalize._otel_dialects import SpanDialect, SpanReading, register_span_dialect

GEN_AI_PROMPT = "gen_ai.prompt"
GEN_AI_COMPLETION = "gen_ai.completion"
TRACELOOP_KIND = "traceloop.span.kind"


def indexed_messages(attrs: dict[str, Any], prefix: str, default_role: str) -> list[Msg] | None:
    """``prefix.N.role|content|tool_call_id|tool_calls.M.*`` rows as messages."""
    rows = unflatten(attrs, prefix)
    if not rows:
        return None
    msgs: list[Msg] = []
    for row in rows:
        content = row.get("content")
        item: dict[str, Any] = {"role": row.get("role") or default_role,
                                "content": maybe_json(content) if isinstance(content, str) and content.lstrip()[:1] == "[" else content}
        calls = [c for c in listify(row.get("tool_calls")) if isinstance(c, dict)]
        if calls:
            item["tool_calls"] = [{"id": c.get("id"), "function": {"name": c.get("name"), "arguments": c.get("arguments")}} for c in calls]
        if row.get("tool_call_id"):
            item["tool_call_id"] = row["tool_call_id"]
        msgs.extend(from_item(item))
    return msgs


def read_messages(span: SpanReading) -> None:
    """Indexed rows first, then whole JSON strings."""
    if span.inputs is None:
        span.inputs = indexed_messages(span.attrs, GEN_AI_PROMPT, "user")
        if span.inputs is not None:
            span.use_prefix(GEN_AI_PROMPT + ".")
    if span.outputs is None:
        span.outputs = indexed_messages(span.attrs, GEN_AI_COMPLETION, "assistant")
        if span.outputs is not None:
            span.use_prefix(GEN_AI_COMPLETION + ".")
    if span.inputs is None:
        span.inputs = input_messages(span.take(GEN_AI_PROMPT))
    if span.outputs is None:
        span.outputs = output_messages(span.take(GEN_AI_COMPLETION))


def traceloop_kind(attrs: dict[str, Any], used: set[str]) -> str | None:
    """``traceloop.span.kind``: workflow, task, agent, tool, llm."""
    value = attrs.get(TRACELOOP_KIND)
    return SIMPLE_KINDS.get(value.lower()) if isinstance(value, str) else None


def request_type_kind(attrs: dict[str, Any], used: set[str]) -> str | None:
    """``llm.request.type`` of a model call (chat or completion)."""
    return "llm" if attrs.get("llm.request.type") in ("chat", "completion") else None


register_span_dialect(SpanDialect(
    name="openllmetry",
    prefixes=(GEN_AI_PROMPT, GEN_AI_COMPLETION, "traceloop.", "llm.request.type"),
    kinds=((30, traceloop_kind), (45, request_type_kind)),
    implies={"llm": (GEN_AI_PROMPT, GEN_AI_COMPLETION, GEN_AI_PROMPT + ".", GEN_AI_COMPLETION + ".")},
    messages=((20, read_messages),),
    fields={
        "input": ((20, "traceloop.entity.input"),),
        "output": ((20, "traceloop.entity.output"),),
        "agent_fallback": ((20, "traceloop.entity.name"),),
        "tool_name": ((40, "traceloop.entity.name"),),
    },
    flat_markers=(GEN_AI_PROMPT, TRACELOOP_KIND),
    flat_prefixes=("traceloop.",),
))
