"""OpenInference (Arize Phoenix and its instrumentations): ``openinference.span.kind`` and ``llm.*`` keys.

Messages as ``llm.input_messages.N.message.*`` / ``llm.output_messages.N.message.*`` (text in
``content`` or ``contents.K.message_content.*``, calls in ``tool_calls.J.tool_call.*``), or a
completion's ``llm.prompts``; values in ``input.value`` / ``output.value``; ``llm.model_name``,
``llm.token_count.*``, ``llm.cost.total``, ``tool.*``, ``agent.name`` and ``graph.node.id``. Names
come from ``openinference-semantic-conventions``.
"""

from __future__ import annotations

from typing import Any

from openinference.semconv.trace import (
    MessageAttributes,
    MessageContentAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolCallAttributes,
)

from mast.normalize._common import text_of
from mast.normalize._messages import Msg, as_dict, from_item, maybe_json
from mast.normalize._otel_attrs import listify, unflatten
from mast.normalize._otel_dialects import SpanDialect, SpanReading, register_span_dialect

OI_KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
OI_INPUT_MESSAGES = SpanAttributes.LLM_INPUT_MESSAGES
OI_OUTPUT_MESSAGES = SpanAttributes.LLM_OUTPUT_MESSAGES
_KINDS = {
    OpenInferenceSpanKindValues.LLM.value: "llm",
    OpenInferenceSpanKindValues.TOOL.value: "tool",
    OpenInferenceSpanKindValues.AGENT.value: "agent",
    OpenInferenceSpanKindValues.CHAIN.value: "chain",
}
_ROLE = MessageAttributes.MESSAGE_ROLE.split(".", 1)[1]
_CONTENT = MessageAttributes.MESSAGE_CONTENT.split(".", 1)[1]
_CONTENT_TYPE = MessageContentAttributes.MESSAGE_CONTENT_TYPE.split(".", 1)[1]


def _contents(contents: list[Any]) -> list[Any]:
    parts: list[Any] = []
    for entry in contents:
        part = entry.get("message_content", entry) if isinstance(entry, dict) else {}
        kind = part.get(_CONTENT_TYPE)
        if kind == "text":
            parts.append({"type": "text", "text": part.get("text", "")})
        elif kind == "image":
            parts.append({"type": "image"})
        else:
            parts.append(part)
    return parts


def oi_messages(attrs: dict[str, Any], prefix: str) -> list[Msg] | None:
    """``llm.input_messages.N.message.*`` rows as messages."""
    rows = unflatten(attrs, prefix)
    if not rows:
        return None
    msgs: list[Msg] = []
    for row in rows:
        message = as_dict(row.get("message")) or row
        content: Any = message.get(_CONTENT)
        contents = listify(message.get("contents"))
        if content is None and contents:
            content = _contents(contents)
        calls = []
        for entry in listify(message.get("tool_calls")):
            call = entry.get("tool_call", entry) if isinstance(entry, dict) else {}
            fn = as_dict(call.get("function"))
            calls.append({"id": call.get("id"), "function": {"name": fn.get("name"), "arguments": fn.get("arguments")}})
        fn_call = message.get("function_call_name")
        item: dict[str, Any] = {"role": message.get(_ROLE) or "user", "content": content}
        if calls:
            item["tool_calls"] = calls
        if message.get("tool_call_id"):
            item["tool_call_id"] = message["tool_call_id"]
        if message.get("name"):
            item["name"] = message["name"]
        if fn_call:
            item["function_call"] = {"name": fn_call, "arguments": message.get("function_call_arguments_json")}
        msgs.extend(from_item(item))
    return msgs


def span_kind(attrs: dict[str, Any], used: set[str]) -> str | None:
    """``openinference.span.kind``: an unknown value (RETRIEVER, EMBEDDING...) is ``other``."""
    value = attrs.get(OI_KIND)
    if not isinstance(value, str):
        return None
    used.add(OI_KIND)
    return _KINDS.get(value.upper(), "other")


def read_messages(span: SpanReading) -> None:
    """Flattened input and output message rows."""
    if span.inputs is None:
        span.inputs = oi_messages(span.attrs, OI_INPUT_MESSAGES)
        if span.inputs is not None:
            span.use_prefix(OI_INPUT_MESSAGES + ".")
    if span.outputs is None:
        span.outputs = oi_messages(span.attrs, OI_OUTPUT_MESSAGES)
        if span.outputs is not None:
            span.use_prefix(OI_OUTPUT_MESSAGES + ".")


def read_prompts(span: SpanReading) -> None:
    """A completion call's ``llm.prompts`` when its input value held no messages."""
    if span.kind != "llm" or not span.late_inputs:
        return
    prompts = span.take(SpanAttributes.LLM_PROMPTS)
    if span.inputs is None and prompts:
        prompts = maybe_json(prompts)
        span.inputs = [Msg(role="user", text=text_of(p)) for p in (prompts if isinstance(prompts, list) else [prompts])]


register_span_dialect(SpanDialect(
    name="openinference",
    prefixes=("openinference.", "llm.", "input.", "output.", "tool.", "tool_call.", "agent.", "graph."),
    kinds=((10, span_kind),),
    implies={"llm": (OI_INPUT_MESSAGES + ".",), "tool": (SpanAttributes.TOOL_NAME,), "agent": (SpanAttributes.AGENT_NAME,)},
    messages=((40, read_messages),),
    late_messages=((20, read_prompts),),
    fields={
        "input": ((10, SpanAttributes.INPUT_VALUE),),
        "output": ((10, SpanAttributes.OUTPUT_VALUE),),
        "agent": ((20, SpanAttributes.AGENT_NAME),),
        "agent_fallback": ((10, SpanAttributes.GRAPH_NODE_ID),),
        "tool_name": ((20, SpanAttributes.TOOL_NAME),),
        "tool_call_id": ((20, ToolCallAttributes.TOOL_CALL_ID), (40, SpanAttributes.TOOL_ID)),
        "tool_parameters": ((10, SpanAttributes.TOOL_PARAMETERS),),
        "model": ((20, SpanAttributes.LLM_MODEL_NAME),),
        "input_tokens": ((30, SpanAttributes.LLM_TOKEN_COUNT_PROMPT),),
        "output_tokens": ((30, SpanAttributes.LLM_TOKEN_COUNT_COMPLETION),),
        "total_tokens": ((10, SpanAttributes.LLM_TOKEN_COUNT_TOTAL),),
        "cost": ((10, SpanAttributes.LLM_COST_TOTAL),),
    },
    consumed=(SpanAttributes.INPUT_MIME_TYPE, SpanAttributes.OUTPUT_MIME_TYPE),
    flat_markers=(OI_KIND, SpanAttributes.LLM_MODEL_NAME),
    flat_prefixes=("llm.", "openinference.", "input.value", "output.value", "tool."),
))
