"""MLflow traces: ``trace.to_json()`` / ``trace.to_dict()`` (``{"info": {...}, "data": {"spans": [...]}}``).

MLflow 2.x spans carry ``context: {span_id, trace_id}``, ``parent_id``, ``start_time``/``end_time``
(ns), ``status_code``; MLflow 3.x spans follow OTel (``span_id``, ``parent_span_id``,
``start_time_unix_nano``, ``status: {code}``). Both keep the span's meaning in attributes whose
values are JSON text: ``mlflow.spanType`` (``CHAT_MODEL``, ``LLM``, ``TOOL``, ``AGENT``, ``CHAIN``...),
``mlflow.spanInputs``, ``mlflow.spanOutputs``, ``mlflow.chat.messages``. The spans are read into
:class:`~mast.normalize._spans.Span` records and built like any span tree; ``info`` (id, status,
tags, request/response previews) goes to the trace.

Example:
    >>> from mast.normalize import load_trace
    >>> t = load_trace({"info": {"trace_id": "tr-1", "state": "OK"}, "data": {"spans": [
    ...   {"name": "ChatOpenAI", "span_id": "s1", "parent_span_id": None, "attributes": {
    ...    "mlflow.spanType": '"CHAT_MODEL"', "mlflow.spanInputs": '{"messages": [{"role": "user", "content": "Hi"}]}',
    ...    "mlflow.spanOutputs": '{"choices": [{"message": {"role": "assistant", "content": "Hello!"}}]}'}}]}})
    >>> t.trace_id, t.source.format, t.final_output
    ('tr-1', 'mlflow', 'Hello!')
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._common import as_dict, parse_time, usage_from
from mast.normalize._messages import maybe_json, to_messages
from mast.normalize._otel_attrs import hex_id
from mast.normalize._sniff import sniffed_json
from mast.normalize._spans import Span, build_trace, output_text
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Trace

_KINDS = {"CHAT_MODEL": "llm", "LLM": "llm", "TOOL": "tool", "AGENT": "agent", "CHAIN": "chain", "RETRIEVER": "tool",
          "EMBEDDING": "other", "RERANKER": "tool", "PARSER": "chain", "UNKNOWN": "other"}


def is_mlflow_trace(data: Any) -> bool:
    """``{"info": {...}, "data": {"spans": [...]}}`` with MLflow span attributes or an MLflow id."""
    if not isinstance(data, dict) or not isinstance(data.get("info"), dict) or not isinstance(as_dict(data.get("data")).get("spans"), list):
        return False
    info = data["info"]
    return any(k in info for k in ("request_id", "trace_id", "experiment_id", "trace_location", "request_time", "timestamp_ms"))


def _attr(attrs: dict[str, Any], key: str) -> Any:
    return maybe_json(attrs.get(key), depth=1)


def read_span(raw: dict[str, Any], order: int) -> Span:
    """One MLflow span (2.x or 3.x layout) as a :class:`Span`."""
    context = as_dict(raw.get("context"))
    attrs = {k: v for k, v in as_dict(raw.get("attributes")).items()}
    span_type = _attr(attrs, "mlflow.spanType")
    kind = _KINDS.get(span_type.upper(), "other") if isinstance(span_type, str) else "other"
    inputs = _attr(attrs, "mlflow.spanInputs")
    outputs = _attr(attrs, "mlflow.spanOutputs")
    status = raw.get("status_code") or as_dict(raw.get("status")).get("code")
    message = raw.get("status_message") or as_dict(raw.get("status")).get("message")
    failed = isinstance(status, str) and "ERROR" in status.upper()
    span = Span(
        id=hex_id(raw.get("span_id") or context.get("span_id")) or f"span-{order}",
        parent_id=hex_id(raw.get("parent_span_id") or raw.get("parent_id")),
        name=str(raw.get("name") or ""),
        kind=kind,
        start=parse_time(raw.get("start_time_unix_nano") or raw.get("start_time")),
        end=parse_time(raw.get("end_time_unix_nano") or raw.get("end_time")),
        order=order,
        status="error" if failed else "ok" if isinstance(status, str) and "OK" in status.upper() else None,
        error=str(message or "error") if failed else None,
        framework="mlflow",
    )
    if kind == "llm":
        chat = _attr(attrs, "mlflow.chat.messages")
        span.input_messages = to_messages(inputs) or None
        output_messages = to_messages(outputs) if outputs is not None else None
        if chat and not span.input_messages:
            span.input_messages = to_messages(chat)
        span.output_messages = output_messages
        if output_messages is None and outputs is not None:
            span.output = output_text(outputs)
        span.usage = usage_from(as_dict(outputs).get("usage")) if isinstance(outputs, dict) else None
        span.model = as_dict(inputs).get("model") if isinstance(as_dict(inputs).get("model"), str) else None
    elif kind == "tool":
        span.tool_name = span.name
        span.input, span.output = inputs, outputs
    else:
        span.input, span.output = inputs, outputs
        if kind == "agent":
            span.agent = span.name or None
    used = {"mlflow.spanType", "mlflow.spanInputs", "mlflow.spanOutputs", "mlflow.chat.messages"}
    span.attributes = {k: v for k, v in attrs.items() if k not in used}
    return span


class MLflowTraceFormat(TraceFormat):
    """An MLflow trace (``info`` + ``data.spans``), or a list of them."""

    name = "mlflow"
    description = "MLflow trace JSON (trace.to_json(): info + data.spans with mlflow.spanType/spanInputs/spanOutputs)"
    priority = 42
    example = '{"info": {"trace_id": "tr-..", "state": "OK"}, "data": {"spans": [{"name", "attributes": {"mlflow.spanType": "\\"CHAT_MODEL\\""}}]}}'

    def detect(self, raw: RawInput) -> float:
        """0.95 for an MLflow trace or a list of them."""
        data = sniffed_json(raw, '"info"')
        if isinstance(data, list) and data:
            return 0.95 if all(is_mlflow_trace(d) for d in data) else 0.0
        return 0.95 if is_mlflow_trace(data) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per MLflow trace."""
        data = raw.data()
        records = data if isinstance(data, list) else [data]
        for number, record in enumerate(records):
            index = number if isinstance(data, list) else None
            if not is_mlflow_trace(record):
                yield raw.fail("not an MLflow trace (info + data.spans)", record=index)
                continue
            info = record["info"]
            spans = [read_span(s, order) for order, s in enumerate(record["data"]["spans"]) if isinstance(s, dict)]
            if not spans:
                yield raw.fail("the MLflow trace holds no spans", record=index)
                continue
            state = str(info.get("state") or info.get("status") or "").upper()
            trace = build_trace(
                spans,
                source=self.source(raw, index),
                trace_id=str(info.get("trace_id") or info.get("request_id") or ""),
                framework="mlflow",
                metadata={"info": info},
                status="error" if "ERROR" in state else "ok" if state == "OK" else None,
            )
            yield trace


register(MLflowTraceFormat())
