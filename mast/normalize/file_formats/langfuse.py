"""Langfuse trace exports (``{"trace", "observations"}``) and Langfuse's ChatML renderings of them.

An export (``GET /api/public/traces/{id}``, or the UI's JSON download) holds the trace
(``id, name, input, output, metadata, sessionId, userId, tags, scores``; values often JSON strings)
and its observations (``SPAN``, ``GENERATION``, ``AGENT``, ``TOOL``, ``CHAIN``, ``EVENT``...) with
``parentObservationId``, times, ``input`` / ``output``, model, usage and ``metadata``. When a trace
came in over OpenTelemetry, ``metadata`` holds the original span ``attributes``, so the OTel dialect
code reads identity and messages from them; observations of the Langfuse SDK's own integrations
(LangChain/LangGraph callbacks, the OpenAI wrapper) carry messages in ``input`` / ``output`` in
many shapes, all read by :func:`mast.normalize._messages.to_messages`. The observation tree is
rebuilt and walked in time order without repeating the history each generation re-sends.

Agents: ``gen_ai.agent.name`` / ``agent.name`` attributes, AGENT observations' names, LangGraph's
``langgraph_node``, else the name a system prompt introduces, else ``assistant``. Trace ``scores``
(evaluations Langfuse ran) are kept in metadata: they are not ground-truth labels.

The ``langfuse_chatml`` format reads Langfuse's ChatML rendering of a trace (a map from observation
id to ``{"input": {"success", "data": [messages]}, "output": {...}}``): the messages of each
observation in file order, history not repeated.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import parse_time, text_of, usage_from
from mast.normalize._messages import Msg, as_dict, maybe_json, to_messages
from mast.normalize._otel_attrs import (
    _SPAN_NAME_TOOL,
    agent_from_span_name,
    framework_of,
    span_from_attributes,
)
from mast.normalize._sniff import json_head, sniffed_json
from mast.normalize._spans import Span, build_trace, output_text
from mast.normalize._timeline import Timeline
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.trace import Trace

_TYPE_KINDS = {"GENERATION": "llm", "TOOL": "tool", "AGENT": "agent", "CHAIN": "chain", "EMBEDDING": "other",
               "RETRIEVER": "other", "EVALUATOR": "other", "GUARDRAIL": "other"}
_MAPPED = {"id", "traceId", "parentObservationId", "type", "name", "startTime", "endTime", "input", "output", "metadata",
           "model", "usageDetails", "totalCost", "level", "statusMessage"}
_TASK_KEYS = ("prompt", "input", "query", "question", "task", "message", "user_input")


def _value(value: Any) -> Any:
    """A trace field as stored: JSON text (``"null"``, ``"[]"``, objects) decoded."""
    if isinstance(value, str) and value.strip() in ("null", "None", "true", "false"):
        # "None" is how Python SDKs stringify a missing output.
        return {"null": None, "None": None, "true": True, "false": False}[value.strip()]
    return maybe_json(value)


def _export_parts(data: Any) -> tuple[dict[str, Any], list[Any]] | None:
    """``(trace, observations)`` of one export, or ``None`` when ``data`` is not one."""
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("trace"), dict) and isinstance(data.get("observations"), list):
        return data["trace"], data["observations"]
    if isinstance(data.get("trace"), dict) and isinstance(data["trace"].get("observations"), list):
        return data["trace"], data["trace"]["observations"]
    if isinstance(data.get("observations"), list) and "id" in data and ({"projectId", "timestamp", "sessionId"} & set(data)):
        return data, data["observations"]
    return None


def is_export(data: Any) -> bool:
    """A Langfuse trace export, or a list of them."""
    if isinstance(data, list):
        return bool(data) and all(_export_parts(d) is not None for d in data)
    return _export_parts(data) is not None


def is_chatml(data: Any) -> bool:
    """Langfuse's ChatML rendering: ``{observation_id: {"input"|"output": {"success": bool, ...}}}``."""
    if not isinstance(data, dict) or not data:
        return False
    for entry in data.values():
        if not isinstance(entry, dict) or not entry or not set(entry) <= {"input", "output"}:
            return False
        if not all(isinstance(v, dict) and isinstance(v.get("success"), bool) for v in entry.values()):
            return False
    return True


def _observation_span(obs: dict[str, Any], order: int) -> Span:
    meta = _value(obs.get("metadata"))
    meta = meta if isinstance(meta, dict) else ({} if meta is None else {"value": meta})
    attributes = as_dict(meta.get("attributes"))
    scope = as_dict(meta.get("scope"))
    name = str(obs.get("name") or "")
    level = str(obs.get("level") or "")
    span = span_from_attributes(
        attributes,
        span_id=str(obs.get("id") or f"obs-{order}"),
        parent_id=obs.get("parentObservationId"),
        name=name,
        start=parse_time(obs.get("startTime")),
        end=parse_time(obs.get("endTime")),
        status="error" if level == "ERROR" else None,
        status_message=obs.get("statusMessage"),
        scope=scope.get("name"),
        order=order,
    )
    kind = _TYPE_KINDS.get(str(obs.get("type")))
    if kind is not None:
        span.kind = kind
    elif span.kind == "other" and attributes.get("tool.name"):
        span.kind = "tool"
    obs_in, obs_out = _value(obs.get("input")), _value(obs.get("output"))
    if span.kind == "llm":
        if span.input_messages is None:
            span.input_messages = _llm_input(obs_in)
            if span.input_messages is None and obs_in is not None:
                span.attributes.setdefault("input", obs_in)
        if span.output_messages is None and obs_out not in (None, ""):
            msgs = to_messages(obs_out) if not isinstance(obs_out, str) else None
            span.output_messages = msgs if msgs is not None else [Msg(role="assistant", text=obs_out if isinstance(obs_out, str) else text_of(obs_out))]
    elif span.kind == "tool":
        if span.input is None:
            span.input = obs_in
        if span.output is None:
            span.output = obs_out
        if isinstance(span.output, dict) and (span.output.get("type") == "tool" or span.output.get("lc")):
            message = span.output.get("kwargs", span.output)
            span.tool_call_id = span.tool_call_id or message.get("tool_call_id")
            span.output = message.get("content", span.output)
        if span.tool_name is None or span.tool_name == name:
            match = _SPAN_NAME_TOOL.match(name)
            span.tool_name = match.group("name") if match else name
    else:
        if span.input_messages is None and obs_in is not None and not isinstance(obs_in, str):
            span.input_messages = to_messages(obs_in)
            if span.input_messages is None and isinstance(obs_in, dict) and isinstance(obs_in.get("prompt"), str):
                span.input_messages = _llm_input(obs_in)  # {"prompt", "system"}: the run's instructions
        if span.output_messages is None and obs_out is not None and not isinstance(obs_out, str):
            span.output_messages = to_messages(obs_out)
        if span.input is None and span.input_messages is None:
            span.input = obs_in
        if span.output is None and span.output_messages is None:
            span.output = obs_out
    if span.agent is None:
        node = meta.get("langgraph_node")
        # LangGraph's own "__start__" / "__end__" nodes route messages; they are not agents.
        if isinstance(node, str) and node and not node.startswith("__") and span.kind in ("llm", "chain", "other", "agent"):
            span.agent = node
        elif span.kind == "agent":
            span.agent = agent_from_span_name(name)
    if obs.get("model"):
        span.model = str(obs["model"])
    usage = usage_from(obs.get("usageDetails"))
    if usage is not None:
        cost = obs.get("totalCost")
        if isinstance(cost, int | float) and cost:
            usage.cost_usd = float(cost)
        span.usage = usage
    if level == "ERROR" and not span.error:
        span.error = str(obs.get("statusMessage") or "error")
    if span.framework is None:
        span.framework = framework_of(*(k for k in meta if k.startswith("langgraph")), scope.get("name") if scope.get("name") != "langfuse-sdk" else None)
    if span.framework is None and name.startswith("claude."):
        span.framework = "claude-agent-sdk"
    extra = {k: v for k, v in obs.items() if k not in _MAPPED and v not in (None, [], {}, "", 0)}
    leftover_meta = {k: v for k, v in meta.items() if k not in ("attributes", "resourceAttributes", "scope")}
    if leftover_meta:
        extra["metadata"] = leftover_meta
    if extra:
        span.attributes["langfuse"] = extra
    return span


def _llm_input(value: Any) -> list[Msg] | None:
    """A generation's input: messages of any dialect, ``role: text`` lines, ``{"prompt"}``, ``{"args": [text]}``."""
    if value is None or value == "":
        return None
    msgs = to_messages(value)
    if msgs is not None:
        return msgs
    if isinstance(value, dict):
        if isinstance(value.get("prompt"), str):
            system = [Msg(role="system", text=value["system"])] if isinstance(value.get("system"), str) else []
            return [*system, Msg(role="user", text=value["prompt"])]
        args = value.get("args")
        if isinstance(args, list) and args and all(isinstance(a, str) for a in args):
            return [Msg(role="user", text="\n".join(args))]
    if isinstance(value, str):
        return [Msg(role="user", text=value)]
    return None


def _task(value: Any) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value.strip() or None
    msgs = to_messages(value)
    if msgs:
        first = next((m.text for m in msgs if m.role == "user" and m.text.strip()), None)
        if first:
            return first.strip()
    if isinstance(value, dict):
        for key in _TASK_KEYS:
            text = value.get(key)
            if isinstance(text, str) and text.strip():
                return text.strip()
    return None


class LangfuseExport(TraceFormat):
    """Langfuse trace exports: one trace per export."""

    name = "langfuse"
    description = "Langfuse trace exports ({trace, observations}), OTel-ingested or from the Langfuse SDK"
    priority = 50
    example = '{"trace": {...}, "observations": [{"type": "GENERATION", "input": ..., "output": ...}]}'

    def detect(self, raw: RawInput) -> float:
        """How sure this is the format: cheap sniffing first, then the parsed shape."""
        data = sniffed_json(raw, '"observations"', '"projectId"')
        return 0.95 if data is not None and is_export(data) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the traces in ``raw``; a broken record yields its error."""
        data = raw.data()
        if isinstance(data, list):
            for number, item in enumerate(data):
                if isinstance(item, JsonlLineError) or _export_parts(item) is None:
                    yield raw.fail(str(item) if isinstance(item, JsonlLineError) else "not a Langfuse trace export", record=number)
                    continue
                yield self._one(item, raw, number)
            return
        if not is_export(data):
            raise raw.fail("not a Langfuse export: needs trace + observations")
        yield self._one(data, raw, None)

    def _one(self, data: dict[str, Any], raw: RawInput, record: int | None) -> Trace:
        parts = _export_parts(data)
        assert parts is not None
        trace, observations = parts
        spans = [_observation_span(obs, n) for n, obs in enumerate(observations) if isinstance(obs, dict)]
        if not spans:
            raise raw.fail("the Langfuse export holds no observations", record=record)
        fields = {k: _value(v) for k, v in trace.items() if k != "observations"}
        metadata: dict[str, Any] = {k: v for k, v in fields.items() if k not in ("id", "input", "output") and v not in (None, [], {}, "")}
        built = build_trace(
            spans,
            source=self.source(raw, record),
            trace_id=str(fields.get("id") or ""),
            task=_task(fields.get("input")),
            final_output=output_text(fields.get("output")),
            metadata=metadata,
        )
        if fields.get("input") not in (None, "") and built.task is None:
            built.metadata["trace_input"] = fields["input"]
        return built


class LangfuseChatML(TraceFormat):
    """Langfuse's ChatML rendering of one trace."""

    name = "langfuse_chatml"
    description = "Langfuse's ChatML rendering of a trace ({observation_id: {input, output}} message lists)"
    priority = 52
    example = '{"<observation_id>": {"input": [{"role": "user", "content": ...}], "output": {...}}, ...}'

    def detect(self, raw: RawInput) -> float:
        """How sure this is the format: cheap sniffing first, then the parsed shape."""
        if not json_head(raw, '"success"'):
            return 0.0
        try:
            data = raw.data()
        except TraceFormatError:
            return 0.0
        return 0.95 if is_chatml(data) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the traces in ``raw``; a broken record yields its error."""
        data = raw.data()
        if not is_chatml(data):
            raise raw.fail("not a Langfuse ChatML rendering")
        timeline = Timeline(assistant_kind="message")
        failed: dict[str, Any] = {}
        other: dict[str, Any] = {}
        for obs_id, entry in data.items():
            for side in ("input", "output"):
                part = entry.get(side)
                if not isinstance(part, dict):
                    continue
                if not part.get("success"):
                    failed[f"{obs_id}.{side}"] = part.get("error")
                    continue
                items = part.get("data") or []
                # Langfuse wraps non-chat payloads as {"json": ...}; they are not messages.
                chat = [m for m in items if isinstance(m, dict) and "role" in m]
                rest = [m for m in items if not (isinstance(m, dict) and "role" in m)]
                if rest:
                    other[f"{obs_id}.{side}"] = rest
                msgs = to_messages([{k: v for k, v in m.items() if k not in ("tools", "json", "type")} for m in chat]) or []
                timeline.add_new(msgs, source_ref=f"{obs_id}.{side}")
        if not timeline.steps:
            raise raw.fail("the ChatML rendering holds no messages")
        metadata: dict[str, Any] = {}
        if failed:
            metadata["unrendered"] = failed
        if other:
            metadata["non_chat_payloads"] = other
        yield assemble_trace(
            timeline.steps,
            source=self.source(raw),
            timeline=timeline,
            derive_usage=False,
            metadata=metadata,
            warnings=["Langfuse ChatML rendering: observations in file order, no times; messages Langfuse could not render are missing"],
        )


register(LangfuseExport())
register(LangfuseChatML())
