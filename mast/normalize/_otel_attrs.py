"""Span attributes in every dialect agent tracers write, read into one :class:`~mast.normalize._spans.Span`.

Dialects (a span may carry several; the first one with content wins, in this order):

* **OTel GenAI** (current): ``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON strings
  of ``{role, parts}``), ``gen_ai.system_instructions``, ``gen_ai.operation.name``,
  ``gen_ai.agent.name``, ``gen_ai.tool.*``, ``gen_ai.usage.*``; and its span events
  (``gen_ai.user.message``, ``gen_ai.choice``...).
* **OTel GenAI, deprecated / OpenLLMetry**: indexed ``gen_ai.prompt.N.role|content|tool_calls.M.*``
  and ``gen_ai.completion.N.*``, or whole ``gen_ai.prompt`` / ``gen_ai.completion`` JSON strings;
  ``traceloop.span.kind`` and ``traceloop.entity.input|output``.
* **OpenInference** (Phoenix, Arize): ``openinference.span.kind``,
  ``llm.input_messages.N.message.*`` (with ``contents.K.message_content.*`` and
  ``tool_calls.J.tool_call.*``), ``input.value`` / ``output.value``, ``llm.token_count.*``,
  ``tool.name``, ``agent.name``, ``graph.node.id``.
* **Vercel AI SDK**: ``ai.operationId``, ``ai.prompt.messages``, ``ai.response.text|toolCalls``,
  ``ai.toolCall.*``, ``ai.usage.*``.
* **Pydantic AI / Logfire** (``pydantic_ai.all_messages``, ``final_result``, ``tool_arguments``,
  ``tool_response``) and **LangSmith OTel** (``langsmith.span.kind``).

Attribute names come from the semantic-convention packages where they define them
(``opentelemetry-semantic-conventions`` incubating GenAI attributes, ``openinference-semantic-
conventions``); the rest are spelled here. Every attribute not mapped stays in ``Span.attributes``.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from openinference.semconv.trace import (
    MessageAttributes,
    MessageContentAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolCallAttributes,
)

from mast.normalize._common import parse_time, text_of
from mast.normalize._messages import (
    Msg,
    as_dict,
    from_item,
    from_vercel,
    history_messages,
    maybe_json,
    to_messages,
)
from mast.normalize._spans import Span
from mast.trace import Usage

try:  # the "incubating" module path is not stable across semconv releases
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as _gen_ai

    GEN_AI_AGENT_DESCRIPTION = _gen_ai.GEN_AI_AGENT_DESCRIPTION
    GEN_AI_AGENT_NAME = _gen_ai.GEN_AI_AGENT_NAME
    GEN_AI_COMPLETION = _gen_ai.GEN_AI_COMPLETION
    GEN_AI_INPUT_MESSAGES = _gen_ai.GEN_AI_INPUT_MESSAGES
    GEN_AI_OPERATION_NAME = _gen_ai.GEN_AI_OPERATION_NAME
    GEN_AI_OUTPUT_MESSAGES = _gen_ai.GEN_AI_OUTPUT_MESSAGES
    GEN_AI_PROMPT = _gen_ai.GEN_AI_PROMPT
    GEN_AI_PROVIDER_NAME = _gen_ai.GEN_AI_PROVIDER_NAME
    GEN_AI_REQUEST_MODEL = _gen_ai.GEN_AI_REQUEST_MODEL
    GEN_AI_RESPONSE_MODEL = _gen_ai.GEN_AI_RESPONSE_MODEL
    GEN_AI_SYSTEM = _gen_ai.GEN_AI_SYSTEM
    GEN_AI_SYSTEM_INSTRUCTIONS = _gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS
    GEN_AI_TOOL_CALL_ARGUMENTS = _gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS
    GEN_AI_TOOL_CALL_ID = _gen_ai.GEN_AI_TOOL_CALL_ID
    GEN_AI_TOOL_CALL_RESULT = _gen_ai.GEN_AI_TOOL_CALL_RESULT
    GEN_AI_TOOL_NAME = _gen_ai.GEN_AI_TOOL_NAME
    GEN_AI_USAGE_INPUT_TOKENS = _gen_ai.GEN_AI_USAGE_INPUT_TOKENS
    GEN_AI_USAGE_OUTPUT_TOKENS = _gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS
    GEN_AI_USAGE_PROMPT_TOKENS = _gen_ai.GEN_AI_USAGE_PROMPT_TOKENS
    GEN_AI_USAGE_COMPLETION_TOKENS = _gen_ai.GEN_AI_USAGE_COMPLETION_TOKENS
except (ImportError, AttributeError):  # pragma: no cover - same names, spelled out
    GEN_AI_AGENT_DESCRIPTION = "gen_ai.agent.description"
    GEN_AI_AGENT_NAME = "gen_ai.agent.name"
    GEN_AI_COMPLETION = "gen_ai.completion"
    GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
    GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
    GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
    GEN_AI_PROMPT = "gen_ai.prompt"
    GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
    GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
    GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
    GEN_AI_SYSTEM = "gen_ai.system"
    GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
    GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
    GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
    GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
    GEN_AI_TOOL_NAME = "gen_ai.tool.name"
    GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
    GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
    GEN_AI_USAGE_PROMPT_TOKENS = "gen_ai.usage.prompt_tokens"
    GEN_AI_USAGE_COMPLETION_TOKENS = "gen_ai.usage.completion_tokens"

OI_KIND = SpanAttributes.OPENINFERENCE_SPAN_KIND
OI_INPUT_MESSAGES = SpanAttributes.LLM_INPUT_MESSAGES
OI_OUTPUT_MESSAGES = SpanAttributes.LLM_OUTPUT_MESSAGES
TRACELOOP_KIND = "traceloop.span.kind"
LANGSMITH_KIND = "langsmith.span.kind"
VERCEL_OPERATION = "ai.operationId"

_GENAI_KINDS = {
    "chat": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "completion": "llm",
    "execute_tool": "tool",
    "invoke_agent": "agent",
    "create_agent": "agent",
    "invoke_workflow": "chain",
    "chain": "chain",
    "embeddings": "other",
    "retrieval": "other",
}
_OI_KINDS = {
    OpenInferenceSpanKindValues.LLM.value: "llm",
    OpenInferenceSpanKindValues.TOOL.value: "tool",
    OpenInferenceSpanKindValues.AGENT.value: "agent",
    OpenInferenceSpanKindValues.CHAIN.value: "chain",
}
_SIMPLE_KINDS = {"llm": "llm", "tool": "tool", "agent": "agent", "chain": "chain", "workflow": "chain", "task": "chain", "generation": "llm"}
_VERCEL_LLM_OPS = re.compile(r"^ai\.(generateText|streamText|generateObject|streamObject)(\.do(Generate|Stream))?$")
_SPAN_NAME_TOOL = re.compile(r"^(?:execute_tool|running tool:?|tool:?)\s+(?P<name>.+)$")
_SPAN_NAME_AGENT = re.compile(r"^(?:invoke_agent|create_agent|agent_run|agent)\s*\[?(?P<name>[^\]]+?)\]?$")
_FRAMEWORK_HINTS = (
    ("openai_agents", "openai-agents"),
    ("openai-agents", "openai-agents"),
    ("crewai", "crewai"),
    ("google_adk", "google-adk"),
    ("gcp.vertex.agent", "google-adk"),
    ("agno", "agno"),
    ("pydantic-ai", "pydantic-ai"),
    ("pydantic_ai", "pydantic-ai"),
    ("agent_framework", "microsoft-agent-framework"),
    ("semantic_kernel", "semantic-kernel"),
    ("langgraph", "langgraph"),
    ("langchain", "langchain"),
    ("llama_index", "llamaindex"),
    ("llamaindex", "llamaindex"),
    ("autogen", "autogen"),
    ("smolagents", "smolagents"),
    ("dspy", "dspy"),
    ("strands", "strands-agents"),
    ("beeai", "beeai"),
)
_INDEXED = re.compile(r"^(?P<prefix>.+?)\.(?P<index>\d+)\.(?P<rest>.+)$")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_CODE_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
_CREWAI_ROLE = re.compile(r"\brole='([^'\n]{1,80})'")


# --- OTLP/JSON values -----------------------------------------------------------------------------


def any_value(value: Any) -> Any:
    """Decode an OTLP/JSON ``AnyValue`` (camelCase or snake_case keys) into a Python value."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "string_value"):
        if key in value:
            return value[key]
    for key in ("intValue", "int_value"):
        if key in value:
            try:
                return int(value[key])
            except (TypeError, ValueError):
                return value[key]
    for key in ("doubleValue", "double_value"):
        if key in value:
            try:
                return float(value[key])
            except (TypeError, ValueError):
                return value[key]
    for key in ("boolValue", "bool_value"):
        if key in value:
            return bool(value[key])
    for key in ("arrayValue", "array_value"):
        if key in value:
            return [any_value(v) for v in (value[key] or {}).get("values") or []]
    for key in ("kvlistValue", "kvlist_value"):
        if key in value:
            return key_values((value[key] or {}).get("values") or [])
    for key in ("bytesValue", "bytes_value"):
        if key in value:
            return value[key]
    return None if not value else value


def key_values(items: Iterable[Any]) -> dict[str, Any]:
    """OTLP ``[{key, value: AnyValue}]`` as a dict."""
    out: dict[str, Any] = {}
    for item in items or []:
        if isinstance(item, dict) and "key" in item:
            out[str(item["key"])] = any_value(item.get("value"))
    return out


def hex_id(value: Any) -> str | None:
    """A span or trace id as hex: OTLP/JSON ids are hex already; protobuf-JSON ids are base64."""
    if value in (None, ""):
        return None
    text = str(value)
    if _HEX.match(text) and len(text) in (16, 32):
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text
    return raw.hex() if len(raw) in (8, 16) else text


# --- flattened lists ------------------------------------------------------------------------------


def unflatten(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.0.a.b = 1`` style keys as ``[{"a": {"b": 1}}]``; marks the keys used by returning them."""
    rows: dict[int, dict[str, Any]] = {}
    dot = prefix + "."
    for key, value in attrs.items():
        if not key.startswith(dot):
            continue
        index_text, _, rest = key[len(dot):].partition(".")
        if not index_text.isdigit() or not rest:
            continue
        node = rows.setdefault(int(index_text), {})
        parts = rest.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = value
    return [rows[i] for i in sorted(rows)]


def _listify(node: Any) -> list[Any]:
    """A dict keyed "0", "1"... (from :func:`unflatten` of nested indexes) as a list."""
    if isinstance(node, dict) and node and all(k.isdigit() for k in node):
        return [node[k] for k in sorted(node, key=int)]
    return node if isinstance(node, list) else []


def _oi_messages(attrs: dict[str, Any], prefix: str) -> list[Msg] | None:
    """OpenInference ``llm.input_messages.N.message.*`` rows as messages."""
    rows = unflatten(attrs, prefix)
    if not rows:
        return None
    msgs: list[Msg] = []
    role_key = MessageAttributes.MESSAGE_ROLE.split(".", 1)[1]
    for row in rows:
        message = as_dict(row.get("message")) or row
        content: Any = message.get(MessageAttributes.MESSAGE_CONTENT.split(".", 1)[1])
        contents = _listify(message.get("contents"))
        if content is None and contents:
            parts = []
            for entry in contents:
                part = entry.get("message_content", entry) if isinstance(entry, dict) else {}
                kind = part.get(MessageContentAttributes.MESSAGE_CONTENT_TYPE.split(".", 1)[1])
                if kind == "text":
                    parts.append({"type": "text", "text": part.get("text", "")})
                elif kind == "image":
                    parts.append({"type": "image"})
                else:
                    parts.append(part)
            content = parts
        calls = []
        for entry in _listify(message.get("tool_calls")):
            call = entry.get("tool_call", entry) if isinstance(entry, dict) else {}
            fn = as_dict(call.get("function"))
            calls.append({"id": call.get("id"), "function": {"name": fn.get("name"), "arguments": fn.get("arguments")}})
        fn_call = message.get("function_call_name")
        item: dict[str, Any] = {"role": message.get(role_key) or "user", "content": content}
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


def _indexed_messages(attrs: dict[str, Any], prefix: str, default_role: str) -> list[Msg] | None:
    """OpenLLMetry's ``gen_ai.prompt.N.role|content|tool_call_id|tool_calls.M.*`` rows as messages."""
    rows = unflatten(attrs, prefix)
    if not rows:
        return None
    msgs: list[Msg] = []
    for row in rows:
        item: dict[str, Any] = {"role": row.get("role") or default_role, "content": maybe_json(row.get("content")) if isinstance(row.get("content"), str) and row.get("content", "").lstrip()[:1] == "[" else row.get("content")}
        calls = [c for c in _listify(row.get("tool_calls")) if isinstance(c, dict)]
        if calls:
            item["tool_calls"] = [{"id": c.get("id"), "function": {"name": c.get("name"), "arguments": c.get("arguments")}} for c in calls]
        if row.get("tool_call_id"):
            item["tool_call_id"] = row["tool_call_id"]
        msgs.extend(from_item(item))
    return msgs


def _output_messages(value: Any) -> list[Msg] | None:
    """An LLM output: messages of any dialect, ``{"text": ...}``, or plain text."""
    value = maybe_json(value)
    if value is None or value == "":
        return None
    msgs = to_messages(value)
    if msgs is not None and not isinstance(value, str):
        return msgs
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return [Msg(role="assistant", text=value["text"])]
    if isinstance(value, str):
        return msgs if msgs else [Msg(role="assistant", text=value)]
    return None


def _input_messages(value: Any) -> list[Msg] | None:
    if isinstance(value, str) and value.startswith("["):
        msgs = history_messages(value)  # re-sent history: only the new messages are parsed
        if msgs is not None:
            return msgs
    value = maybe_json(value)
    if value is None or value == "":
        return None
    msgs = to_messages(value)
    if msgs is not None:
        return msgs
    if isinstance(value, dict) and isinstance(value.get("prompt"), str):
        out = [Msg(role="system", text=value["system"])] if isinstance(value.get("system"), str) else []
        return [*out, Msg(role="user", text=value["prompt"])]
    return None


def _vercel_tool_calls(value: Any) -> list[Msg] | None:
    """Vercel ``ai.response.toolCalls``: ``[{toolCallId, toolName, args | input}]``."""
    value = maybe_json(value)
    if not isinstance(value, list) or not value:
        return None
    content = [
        {"type": "tool-call", "toolCallId": c.get("toolCallId"), "toolName": c.get("toolName"), "input": maybe_json(c.get("input", c.get("args")))}
        for c in value
        if isinstance(c, dict)
    ]
    return from_vercel({"role": "assistant", "content": content})


def _usage(attrs: dict[str, Any], used: set[str]) -> Usage | None:
    def first(*keys: str) -> int | None:
        for key in keys:
            value = attrs.get(key)
            if value is not None:
                used.add(key)
                try:
                    return int(value)
                except (TypeError, ValueError):
                    continue
        return None

    cost = attrs.get(SpanAttributes.LLM_COST_TOTAL)
    if cost is not None:
        used.add(SpanAttributes.LLM_COST_TOTAL)
    counts = (
        first(GEN_AI_USAGE_INPUT_TOKENS, GEN_AI_USAGE_PROMPT_TOKENS, SpanAttributes.LLM_TOKEN_COUNT_PROMPT, "ai.usage.inputTokens", "ai.usage.promptTokens"),
        first(GEN_AI_USAGE_OUTPUT_TOKENS, GEN_AI_USAGE_COMPLETION_TOKENS, SpanAttributes.LLM_TOKEN_COUNT_COMPLETION, "ai.usage.outputTokens", "ai.usage.completionTokens"),
        first(SpanAttributes.LLM_TOKEN_COUNT_TOTAL, "ai.usage.totalTokens", "gen_ai.usage.total_tokens"),
    )
    cost_usd = float(cost) if isinstance(cost, int | float) else None
    if cost_usd is None and counts == (None, None, None):
        return None  # most spans (tools, agents) record none: no model built to compare with an empty one
    return Usage(input_tokens=counts[0], output_tokens=counts[1], total_tokens=counts[2], cost_usd=cost_usd)


def framework_of(*names: str | None) -> str | None:
    """The agent framework a scope name, attribute key or span name points at."""
    for name in names:
        if not name:
            continue
        lowered = name.lower()
        for needle, framework in _FRAMEWORK_HINTS:
            if needle in lowered:
                return framework
    return None


def _kind(attrs: dict[str, Any], name: str, used: set[str]) -> str:
    oi = attrs.get(OI_KIND)
    if isinstance(oi, str):
        used.add(OI_KIND)
        return _OI_KINDS.get(oi.upper(), "other")
    op = attrs.get(GEN_AI_OPERATION_NAME)
    if isinstance(op, str) and op in _GENAI_KINDS:
        return _GENAI_KINDS[op]
    for key in (TRACELOOP_KIND, LANGSMITH_KIND):
        value = attrs.get(key)
        if isinstance(value, str) and value.lower() in _SIMPLE_KINDS:
            return _SIMPLE_KINDS[value.lower()]
    vercel = attrs.get(VERCEL_OPERATION)
    if isinstance(vercel, str):
        if _VERCEL_LLM_OPS.match(vercel):
            return "llm"
        if vercel == "ai.toolCall":
            return "tool"
    if attrs.get("llm.request.type") in ("chat", "completion"):
        return "llm"
    if any(k in attrs for k in (GEN_AI_INPUT_MESSAGES, GEN_AI_OUTPUT_MESSAGES, GEN_AI_PROMPT, GEN_AI_COMPLETION)) or any(
        k.startswith((OI_INPUT_MESSAGES + ".", GEN_AI_PROMPT + ".", GEN_AI_COMPLETION + ".")) for k in attrs
    ):
        return "llm"
    if GEN_AI_TOOL_NAME in attrs or SpanAttributes.TOOL_NAME in attrs or "ai.toolCall.name" in attrs:
        return "tool"
    if GEN_AI_AGENT_NAME in attrs or SpanAttributes.AGENT_NAME in attrs:
        return "agent"
    if _SPAN_NAME_TOOL.match(name):
        return "tool"
    return "other"


def agent_from_span_name(name: str) -> str | None:
    """The agent an agent span's name announces (``invoke_agent X``, ``agent_run [X]``, ``X``).

    Dotted code paths (``Agent.run``, ``Task._execute_core``) name a method, not an agent.
    """
    match = _SPAN_NAME_AGENT.match(name)
    candidate = match.group("name").strip() if match else name.strip()
    if not candidate or _CODE_PATH.match(candidate):
        return None
    return candidate


def _crewai_agent_role(value: Any) -> str | None:
    """CrewAI's task spans pass the agent as a repr: ``... role='Researcher' goal=...``."""
    if isinstance(value, dict) and isinstance(value.get("agent"), str):
        match = _CREWAI_ROLE.search(value["agent"])
        return match.group(1) if match else None
    return None


def _take(attrs: dict[str, Any], used: set[str], *keys: str) -> Any:
    for key in keys:
        if key in attrs and attrs[key] not in (None, ""):
            used.add(key)
            return attrs[key]
    return None


def _event_messages(events: list[dict[str, Any]]) -> tuple[list[Msg], list[Msg], dict[str, Any], str | None]:
    """Messages carried on span events (older GenAI event style) plus attributes of detail events."""
    inputs: list[Msg] = []
    outputs: list[Msg] = []
    merged: dict[str, Any] = {}
    error: str | None = None
    for event in events:
        name = str(event.get("name") or "")
        attrs = as_dict(event.get("attributes"))
        if name in ("gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message", "gen_ai.tool.message"):
            body = maybe_json(attrs.get("content")) if "content" in attrs else attrs
            item = {"role": attrs.get("role") or name.split(".")[1], "content": body if isinstance(body, str | list) else text_of(body)}
            tool_calls = maybe_json(attrs.get("tool_calls"))
            if isinstance(tool_calls, list):
                item["tool_calls"] = tool_calls
            if attrs.get("id"):
                item["tool_call_id"] = attrs["id"]
            inputs.extend(from_item(item))
        elif name == "gen_ai.choice":
            message = maybe_json(attrs.get("message"))
            if isinstance(message, dict):
                outputs.extend(from_item({"role": "assistant", **message}))
            elif isinstance(message, str):
                outputs.append(Msg(role="assistant", text=message))
        elif name == "gen_ai.client.inference.operation.details":
            merged.update(attrs)
        elif name == "exception":
            error = str(attrs.get("exception.message") or attrs.get("exception.type") or "exception")
    return inputs, outputs, merged, error


def span_from_attributes(
    attrs: dict[str, Any],
    *,
    span_id: str,
    parent_id: str | None = None,
    name: str = "",
    start: datetime | None = None,
    end: datetime | None = None,
    status: str | None = None,
    status_message: str | None = None,
    events: list[dict[str, Any]] | None = None,
    scope: str | None = None,
    order: int = 0,
) -> Span:
    """Interpret one span's flat attribute dict (any dialect) as a :class:`Span`."""
    attrs = dict(attrs)
    event_inputs, event_outputs, detail_attrs, event_error = _event_messages(events or [])
    for key, value in detail_attrs.items():
        attrs.setdefault(key, value)
    used: set[str] = set()
    kind = _kind(attrs, name, used)
    span = Span(id=span_id, parent_id=parent_id, name=name, kind=kind, start=start, end=end, order=order)

    # messages, by dialect
    system = _take(attrs, used, GEN_AI_SYSTEM_INSTRUCTIONS)
    inputs = _input_messages(_take(attrs, used, GEN_AI_INPUT_MESSAGES))
    outputs = _output_messages(_take(attrs, used, GEN_AI_OUTPUT_MESSAGES))
    if inputs is None:
        inputs = _indexed_messages(attrs, GEN_AI_PROMPT, "user")
        if inputs is not None:
            used.update(k for k in attrs if k.startswith(GEN_AI_PROMPT + "."))
    if outputs is None:
        outputs = _indexed_messages(attrs, GEN_AI_COMPLETION, "assistant")
        if outputs is not None:
            used.update(k for k in attrs if k.startswith(GEN_AI_COMPLETION + "."))
    if inputs is None:
        inputs = _input_messages(_take(attrs, used, GEN_AI_PROMPT))
    if outputs is None:
        outputs = _output_messages(_take(attrs, used, GEN_AI_COMPLETION))
    if inputs is None:
        inputs = _oi_messages(attrs, OI_INPUT_MESSAGES)
        if inputs is not None:
            used.update(k for k in attrs if k.startswith(OI_INPUT_MESSAGES + "."))
    if outputs is None:
        outputs = _oi_messages(attrs, OI_OUTPUT_MESSAGES)
        if outputs is not None:
            used.update(k for k in attrs if k.startswith(OI_OUTPUT_MESSAGES + "."))
    if inputs is None and kind == "llm":
        inputs = _input_messages(_take(attrs, used, "ai.prompt.messages", "ai.prompt"))
    if outputs is None and kind == "llm":
        text = _take(attrs, used, "ai.response.text")
        calls = _vercel_tool_calls(_take(attrs, used, "ai.response.toolCalls"))
        if text is not None or calls:
            outputs = [Msg(role="assistant", text=str(text or ""), tool_calls=[c for m in calls or [] for c in m.tool_calls])]
    if inputs is None and event_inputs:
        inputs = event_inputs
    if outputs is None and event_outputs:
        outputs = event_outputs
    if isinstance(system, str | list) and system:
        instructions = maybe_json(system)
        text = instructions if isinstance(instructions, str) else text_of(instructions)
        inputs = [Msg(role="system", text=text), *(inputs or [])]

    # generic input / output values
    raw_in = _take(attrs, used, SpanAttributes.INPUT_VALUE, "traceloop.entity.input", "input", "tool_arguments")
    raw_out = _take(attrs, used, SpanAttributes.OUTPUT_VALUE, "traceloop.entity.output", "output", "tool_response", "final_result")
    used.update(k for k in (SpanAttributes.INPUT_MIME_TYPE, SpanAttributes.OUTPUT_MIME_TYPE) if k in attrs)
    decoded_in, decoded_out = maybe_json(raw_in), maybe_json(raw_out)
    if kind == "llm":
        if inputs is None:
            inputs = _input_messages(decoded_in)
            prompts = _take(attrs, used, SpanAttributes.LLM_PROMPTS)
            if inputs is None and prompts:
                prompts = maybe_json(prompts)
                inputs = [Msg(role="user", text=text_of(p)) for p in (prompts if isinstance(prompts, list) else [prompts])]
        if outputs is None:
            outputs = _output_messages(decoded_out)
    elif kind in ("agent", "chain", "other"):
        all_messages = _take(attrs, used, "pydantic_ai.all_messages")
        if all_messages is not None and outputs is None:
            outputs = to_messages(all_messages)
        if inputs is None and not isinstance(decoded_in, str):
            inputs = to_messages(decoded_in) if decoded_in is not None else None
        if outputs is None and not isinstance(decoded_out, str):
            outputs = to_messages(decoded_out) if decoded_out is not None else None
    span.input_messages = inputs
    span.output_messages = outputs
    span.input = decoded_in if inputs is None or kind == "tool" else None
    span.output = decoded_out if outputs is None or kind == "tool" else None

    # identity, tool, model, usage
    agent = _take(attrs, used, GEN_AI_AGENT_NAME, SpanAttributes.AGENT_NAME, "agent_name")
    if agent is None and kind == "agent":
        agent = _take(attrs, used, SpanAttributes.GRAPH_NODE_ID, "traceloop.entity.name") or _crewai_agent_role(decoded_in) or agent_from_span_name(name)
    span.agent = str(agent) if agent is not None else None
    description = _take(attrs, used, GEN_AI_AGENT_DESCRIPTION)
    span.agent_description = str(description) if description else None
    if kind == "tool":
        tool = _take(attrs, used, GEN_AI_TOOL_NAME, SpanAttributes.TOOL_NAME, "ai.toolCall.name", "traceloop.entity.name")
        if tool is None:
            match = _SPAN_NAME_TOOL.match(name)
            tool = match.group("name") if match else name
        span.tool_name = str(tool)
        call_id = _take(attrs, used, GEN_AI_TOOL_CALL_ID, ToolCallAttributes.TOOL_CALL_ID, "ai.toolCall.id", SpanAttributes.TOOL_ID)
        span.tool_call_id = str(call_id) if call_id is not None else None
        arguments = _take(attrs, used, GEN_AI_TOOL_CALL_ARGUMENTS, "ai.toolCall.args", "ai.toolCall.input")
        result = _take(attrs, used, GEN_AI_TOOL_CALL_RESULT, "ai.toolCall.result", "ai.toolCall.output")
        span.input = maybe_json(arguments) if arguments is not None else span.input
        span.output = maybe_json(result) if result is not None else span.output
        if span.input is None:
            span.input = maybe_json(_take(attrs, used, SpanAttributes.TOOL_PARAMETERS))
    model = _take(attrs, used, GEN_AI_RESPONSE_MODEL, SpanAttributes.LLM_MODEL_NAME, "ai.response.model", GEN_AI_REQUEST_MODEL, "ai.model.id")
    span.model = str(model) if model is not None else None
    span.usage = _usage(attrs, used)
    if span.kind == "llm" and span.usage is None and outputs:
        span.usage = next((m.usage for m in reversed(outputs) if m.usage), None)

    # status and errors
    error_text = _take(attrs, used, "exception.message", "error.message") or event_error
    if status == "error":
        span.status = "error"
        span.error = str(status_message or error_text or attrs.get("error.type") or "error")
    elif status == "ok":
        span.status = "ok"
    if error_text and span.error is None and status != "ok":
        span.error = str(error_text)
        span.status = "error"

    provider = attrs.get(GEN_AI_PROVIDER_NAME) or attrs.get(GEN_AI_SYSTEM)
    span.framework = framework_of(scope, str(provider or ""), *(k for k in attrs if k.startswith(("pydantic_ai", "gcp.vertex.agent", "langgraph"))))
    if span.framework is None and any(k.startswith("ai.") for k in attrs):
        span.framework = "vercel-ai"
    span.attributes = {k: v for k, v in attrs.items() if k not in used}
    if events:
        kept = [e for e in events if str(e.get("name")) not in ("gen_ai.client.inference.operation.details",)]
        if kept:
            span.attributes["events"] = kept
    return span


def span_time(value: Any) -> datetime | None:
    """A span timestamp: nanoseconds (int or string), ISO text, or JS ``[seconds, nanos]``."""
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, int | float) for v in value):
        return parse_time(int(value[0]) * 1_000_000_000 + int(value[1]))
    return parse_time(value)


def status_of(status: Any) -> tuple[str | None, str | None]:
    """``(ok|error|None, message)`` from an OTLP / JS status (int codes or enum names)."""
    if not isinstance(status, dict):
        return None, None
    code = status.get("code")
    message = status.get("message") or None
    if code in (2, "2", "STATUS_CODE_ERROR", "ERROR"):
        return "error", message
    if code in (1, "1", "STATUS_CODE_OK", "OK"):
        return "ok", message
    return None, message
