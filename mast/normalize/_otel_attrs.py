"""Span attributes of any instrumentation, read into one :class:`~mast.normalize._spans.Span`.

What each instrumentation's keys mean is registered as a span dialect
(:mod:`mast.normalize._otel_dialects`), one module each: ``spans.genai`` (OTel GenAI semantic
conventions), ``spans.openllmetry`` (Traceloop / OpenLLMetry and the deprecated indexed GenAI
keys), ``spans.openinference`` (Phoenix, Arize), ``spans.vercel`` (Vercel AI SDK),
``spans.logfire`` (Pydantic AI through Logfire) and ``spans.langsmith``. This module is the generic
part: it decides once per distinct set of attribute keys which dialects read a span and which keys
hold each field (:class:`SpanPlan`), asks them in rank order for the kind and the messages, reads
the fields, and keeps every attribute not mapped in ``Span.attributes``. Span events
(``gen_ai.user.message``, ``gen_ai.choice``, ``exception``...) and the plain ``input``/``output``
keys are read here for every dialect. It also decodes OTLP/JSON values (``AnyValue``, ids, times).
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache
from typing import Any

from mast.normalize._common import text_of
from mast.normalize._messages import (
    Msg,
    as_dict,
    from_item,
    history_messages,
    maybe_json,
    reply_messages,
    to_messages,
)
from mast.normalize._otel_dialects import SpanDialect, SpanPlan, SpanReading, plan_for
from mast.normalize._otlp_values import any_value, hex_id, key_values, span_time, status_of
from mast.normalize._spans import Span
from mast.trace import Usage, text_value

SIMPLE_KINDS = {"llm": "llm", "tool": "tool", "agent": "agent", "chain": "chain", "workflow": "chain", "task": "chain", "generation": "llm"}
"""Kind words several dialects use (``traceloop.span.kind``, ``langsmith.span.kind``) and the span kind each means."""
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
_CODE_PATH = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$")
_CREWAI_ROLE = re.compile(r"\brole='([^'\n]{1,80})'")


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


def listify(node: Any) -> list[Any]:
    """A dict keyed "0", "1"... (from :func:`unflatten` of nested indexes) as a list."""
    if isinstance(node, dict) and node and all(k.isdigit() for k in node):
        return [node[k] for k in sorted(node, key=int)]
    return node if isinstance(node, list) else []


# --- messages in attribute values -----------------------------------------------------------------


def output_messages(value: Any) -> list[Msg] | None:
    """An LLM output: messages of any dialect, ``{"text": ...}``, or plain text."""
    if isinstance(value, str) and value.startswith("[") and value.endswith("]"):
        msgs = reply_messages(value)  # remembered: the next call's input re-sends it
        if msgs is not None:
            return msgs
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


def input_messages(value: Any) -> list[Msg] | None:
    """An LLM input: messages of any dialect (a re-sent history read incrementally), or ``{prompt, system}``."""
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


# --- names and frameworks ------------------------------------------------------------------------


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


@lru_cache(maxsize=1024)
def _framework(scope: str | None, provider: str, keys: tuple[str, ...]) -> str | None:
    """:func:`framework_of` for a span: spans of one run repeat the same scope, provider and keys."""
    return framework_of(scope, provider, *keys)


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


# --- the generic reader ---------------------------------------------------------------------------


def _late_llm_input(span: SpanReading) -> None:
    if span.kind == "llm" and span.inputs is None:
        span.inputs = input_messages(span.decoded_in)


def _late_llm_output(span: SpanReading) -> None:
    if span.kind == "llm" and span.outputs is None:
        span.outputs = output_messages(span.decoded_out)


def _late_values_as_messages(span: SpanReading) -> None:
    """An agent or chain whose input/output value is a message list (a state dict holding ``messages``...)."""
    if span.kind not in ("agent", "chain", "other"):
        return
    if span.inputs is None and not isinstance(span.decoded_in, str):
        span.inputs = to_messages(span.decoded_in) if span.decoded_in is not None else None
    if span.outputs is None and not isinstance(span.decoded_out, str):
        span.outputs = to_messages(span.decoded_out) if span.decoded_out is not None else None


_GENERIC = SpanDialect(
    name="generic",
    prefixes=(),
    late_messages=((10, _late_llm_input), (30, _late_llm_output), (30, _late_values_as_messages)),
    fields={"input": ((30, "input"),), "output": ((30, "output"),), "error": ((10, "exception.message"), (20, "error.message"))},
    framework_keys=("pydantic_ai", "gcp.vertex.agent", "langgraph"),
)
"""What every span may carry whatever wrote it; always asked, never registered."""


def _first(attrs: dict[str, Any], used: set[str], keys: tuple[str, ...]) -> Any:
    """The value of the first of ``keys`` (all present) that holds one, marked used."""
    for key in keys:
        value = attrs[key]
        if value is not None and value != "":
            used.add(key)
            return value
    return None


def _kind(plan: SpanPlan, attrs: dict[str, Any], name: str, used: set[str]) -> str:
    for rule in plan.kind_rules:
        kind = rule(attrs, used)
        if kind is not None:
            return kind
    if plan.implied_kind is not None:
        return plan.implied_kind
    return "tool" if _SPAN_NAME_TOOL.match(name) else "other"


def _read_messages(plan: SpanPlan, reading: SpanReading, event_inputs: list[Msg], event_outputs: list[Msg]) -> None:
    """Messages by dialect (rank order), then span events, system instructions, then the generic values."""
    for reader in plan.readers:
        reader(reading)
    if reading.inputs is None and event_inputs:
        reading.inputs = event_inputs
    if reading.outputs is None and event_outputs:
        reading.outputs = event_outputs
    system = reading.system
    if isinstance(system, str | list) and system:
        instructions = maybe_json(system)
        text = instructions if isinstance(instructions, str) else text_of(instructions)
        reading.inputs = [Msg(role="system", text=text), *(reading.inputs or [])]
    attrs, used = reading.attrs, reading.used
    raw_in = _first(attrs, used, plan.keys["input"])
    raw_out = _first(attrs, used, plan.keys["output"])
    used.update(plan.consumed)
    reading.decoded_in = maybe_json(raw_in) if raw_in is not None else None
    reading.decoded_out = maybe_json(raw_out) if raw_out is not None else None
    reading.late_inputs = reading.inputs is None
    for reader in plan.late_readers:
        reader(reading)


def _read_tool(plan: SpanPlan, reading: SpanReading, span: Span) -> None:
    attrs, used, keys = reading.attrs, reading.used, plan.keys
    tool = _first(attrs, used, keys["tool_name"])
    if tool is None:
        match = _SPAN_NAME_TOOL.match(span.name)
        tool = match.group("name") if match else span.name
    span.tool_name = str(tool)
    call_id = _first(attrs, used, keys["tool_call_id"])
    span.tool_call_id = text_value(call_id, "Span.tool_call_id")
    arguments = _first(attrs, used, keys["tool_arguments"])
    result = _first(attrs, used, keys["tool_result"])
    span.input = maybe_json(arguments) if arguments is not None else span.input
    span.output = maybe_json(result) if result is not None else span.output
    if span.input is None:
        span.input = maybe_json(_first(attrs, used, keys["tool_parameters"]))


def _count(attrs: dict[str, Any], used: set[str], keys: tuple[str, ...]) -> int | None:
    """The first of ``keys`` (all present) that reads as an integer; every one tried is mapped."""
    for key in keys:
        value = attrs[key]
        if value is not None:
            used.add(key)
            try:
                return int(value)
            except (TypeError, ValueError):
                continue
    return None


def _usage(plan: SpanPlan, attrs: dict[str, Any], used: set[str]) -> Usage | None:
    keys = plan.keys
    cost = None
    for key in keys["cost"]:
        if attrs[key] is not None:
            cost = attrs[key]
            used.add(key)
            break
    counts = (_count(attrs, used, keys["input_tokens"]), _count(attrs, used, keys["output_tokens"]), _count(attrs, used, keys["total_tokens"]))
    cost_usd = float(cost) if isinstance(cost, int | float) else None
    if cost_usd is None and counts == (None, None, None):
        return None  # most spans (tools, agents) record none: no model built to compare with an empty one
    return Usage(input_tokens=counts[0], output_tokens=counts[1], total_tokens=counts[2], cost_usd=cost_usd)


def _read_identity(plan: SpanPlan, reading: SpanReading, span: Span) -> None:
    """Agent, tool, model and usage."""
    attrs, used, keys, kind = reading.attrs, reading.used, plan.keys, reading.kind
    agent = _first(attrs, used, keys["agent"])
    if agent is None and kind == "agent":
        agent = _first(attrs, used, keys["agent_fallback"]) or _crewai_agent_role(reading.decoded_in) or agent_from_span_name(span.name)
    span.agent = str(agent) if agent is not None else None
    description = _first(attrs, used, keys["agent_description"])
    span.agent_description = str(description) if description else None
    if kind == "tool":
        _read_tool(plan, reading, span)
    model = _first(attrs, used, keys["model"])
    span.model = str(model) if model is not None else None
    span.usage = _usage(plan, attrs, used)
    outputs = reading.outputs
    if kind == "llm" and span.usage is None and outputs:
        span.usage = next((m.usage for m in reversed(outputs) if m.usage), None)


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
    """Interpret one span's flat attribute dict (any registered dialect) as a :class:`Span`."""
    event_inputs: list[Msg] = []
    event_outputs: list[Msg] = []
    event_error: str | None = None
    if events:
        event_inputs, event_outputs, detail_attrs, event_error = _event_messages(events)
        if detail_attrs:
            attrs = dict(attrs)
            for key, value in detail_attrs.items():
                attrs.setdefault(key, value)
    plan = plan_for(tuple(attrs), _GENERIC)
    used: set[str] = set()
    kind = _kind(plan, attrs, name, used)
    span = Span(id=span_id, parent_id=parent_id, name=name, kind=kind, start=start, end=end, order=order)
    reading = SpanReading(attrs, name, kind, used)
    _read_messages(plan, reading, event_inputs, event_outputs)
    inputs, outputs = reading.inputs, reading.outputs
    span.input_messages = inputs
    span.output_messages = outputs
    span.input = reading.decoded_in if inputs is None or kind == "tool" else None
    span.output = reading.decoded_out if outputs is None or kind == "tool" else None
    _read_identity(plan, reading, span)

    error_text = _first(attrs, used, plan.keys["error"]) or event_error
    if status == "error":
        span.status = "error"
        span.error = str(status_message or error_text or attrs.get("error.type") or "error")
    elif status == "ok":
        span.status = "ok"
    if error_text and span.error is None and status != "ok":
        span.error = str(error_text)
        span.status = "error"

    provider = None
    for key in plan.keys["provider"]:
        provider = attrs[key]
        if provider:
            break
    span.framework = _framework(scope, str(provider or ""), plan.framework_keys) or plan.framework
    span.attributes = {k: v for k, v in attrs.items() if k not in used} if used else dict(attrs)
    if events:
        kept = [e for e in events if str(e.get("name")) not in ("gen_ai.client.inference.operation.details",)]
        if kept:
            span.attributes["events"] = kept
    return span


__all__ = [
    "SIMPLE_KINDS",
    "SpanPlan",
    "agent_from_span_name",
    "any_value",
    "framework_of",
    "hex_id",
    "input_messages",
    "key_values",
    "listify",
    "output_messages",
    "plan_for",
    "span_from_attributes",
    "span_time",
    "status_of",
    "unflatten",
]
