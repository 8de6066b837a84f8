"""Span exports of Arize Phoenix: what its UI and its Python client write to files.

mast reads Phoenix over its REST API (:mod:`mast.sources.phoenix`); users also download spans, in
Phoenix's own span shape rather than OTLP:

* a span list (JSON array or JSONL, one span a line; also ``{"data": [...]}`` as the REST API pages
  it): ``{"name", "context": {"trace_id", "span_id"}, "span_kind", "parent_id", "start_time",
  "end_time", "status_code", "status_message", "attributes": {...}, "events": [...]}``, the
  attributes nested (``{"input": {"value": ...}}``) or dotted (``"input.value"``);
* the client's spans dataframe saved with ``to_json(orient="records")``: the same fields as flat
  columns (``context.span_id``, ``attributes.input.value``, ``attributes.llm.input_messages`` as a
  list of ``{"message.role", "message.content"}``).

Each span is rewritten as an OTLP span (dotted OpenInference keys, ISO times, status) and the
spans are read by the OTLP reader, so a trace reads the same from a file as from the server. A file
holding several traces gives one trace per ``trace_id``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._common import as_dict
from mast.normalize._sniff import sniffed_json
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, get_format, register
from mast.trace import Trace

_SPAN_KINDS = frozenset(
    {
        "LLM",
        "CHAIN",
        "TOOL",
        "AGENT",
        "RETRIEVER",
        "EMBEDDING",
        "RERANKER",
        "GUARDRAIL",
        "EVALUATOR",
        "UNKNOWN",
        "PROMPT",
    }
)


def _unflatten_row(span: dict[str, Any]) -> dict[str, Any]:
    """A dataframe row (``context.span_id``, ``attributes.input.value``...) as a nested span."""
    if not any(isinstance(k, str) and k.startswith("context.") for k in span):
        return span
    out: dict[str, Any] = {"context": {}, "attributes": {}}
    for key, value in span.items():
        if key.startswith("context."):
            out["context"][key[8:]] = value
        elif key.startswith("attributes."):
            if value is not None:  # a dataframe fills every column; most are empty for a given span
                out["attributes"][key[11:]] = value
        else:
            out[key] = value
    return out


def is_phoenix_span(item: Any) -> bool:
    """A span in Phoenix's shape (nested, or a dataframe row)."""
    if not isinstance(item, dict):
        return False
    span = _unflatten_row(item)
    context = as_dict(span.get("context"))
    kind = span.get("span_kind")
    return (
        "span_id" in context
        and "trace_id" in context
        and (kind is None or str(kind).upper() in _SPAN_KINDS)
        and "name" in span
    )


def _spans(data: Any) -> list[Any] | None:
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        return None
    good = [s for s in data if not isinstance(s, JsonlLineError)]
    return data if good and all(is_phoenix_span(s) for s in good) else None


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    """Nested attributes as OpenInference's dotted keys (``llm.input_messages.0.message.role``)."""
    if isinstance(value, dict):
        for key, inner in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), inner, out)
    elif isinstance(value, list) and any(isinstance(v, dict) for v in value):
        for position, inner in enumerate(value):
            _flatten(f"{prefix}.{position}", inner, out)
    elif value is not None:
        out[prefix] = value


def _any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": str(value)}


def to_otlp_span(item: dict[str, Any]) -> dict[str, Any]:
    """One Phoenix span as an OTLP/JSON span (what :mod:`mast.normalize.file_formats.otlp` reads)."""
    span = _unflatten_row(item)
    context = as_dict(span.get("context"))
    attributes: dict[str, Any] = {}
    _flatten("", span.get("attributes") or {}, attributes)
    if span.get("span_kind") and "openinference.span.kind" not in attributes:
        attributes["openinference.span.kind"] = str(span["span_kind"]).upper()
    code = str(span.get("status_code") or "UNSET").upper()
    return {
        "traceId": str(context.get("trace_id") or ""),
        "spanId": str(context.get("span_id") or ""),
        "parentSpanId": str(span.get("parent_id") or ""),
        "name": str(span.get("name") or ""),
        "startTimeUnixNano": span.get("start_time"),
        "endTimeUnixNano": span.get("end_time"),
        "status": {"code": f"STATUS_CODE_{code}", "message": span.get("status_message") or ""},
        "attributes": [{"key": k, "value": _any_value(v)} for k, v in attributes.items()],
        "events": [
            {
                "name": e.get("name"),
                "timeUnixNano": e.get("timestamp"),
                "attributes": [
                    {"key": k, "value": _any_value(v)} for k, v in as_dict(e.get("attributes")).items()
                ],
            }
            for e in span.get("events") or []
            if isinstance(e, dict)
        ],
    }


class PhoenixSpans(TraceFormat):
    """Phoenix span exports (UI download, REST page, client dataframe as JSON): one trace per trace id."""

    name = "phoenix_spans"
    description = "Arize Phoenix span exports: span lists (JSON/JSONL, context + span_kind + parent_id) and the client's spans dataframe as JSON"
    priority = 39
    example = '[{"name": "agent", "context": {"trace_id": "...", "span_id": "..."}, "span_kind": "AGENT", "parent_id": null, "attributes": {...}}]'

    def detect(self, raw: RawInput) -> float:
        """How sure this is the format: a sniff for Phoenix's keys, then every span's shape."""
        data = sniffed_json(raw, '"span_kind"', '"context.span_id"', '"context"')
        if data is None:
            return 0.0
        return 0.9 if _spans(data) is not None else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per trace id, in the order the file first names them; a broken JSONL line yields its error."""
        spans = _spans(raw.data())
        if spans is None:
            raise raw.fail(
                "phoenix_spans needs a list of spans with context.trace_id, context.span_id and name"
            )
        by_trace: dict[str, list[dict[str, Any]]] = {}
        for number, item in enumerate(spans):
            if isinstance(item, JsonlLineError):
                yield raw.fail(str(item), record=number)
                continue
            otlp = to_otlp_span(item)
            by_trace.setdefault(otlp["traceId"], []).append(otlp)
        otlp_format = get_format("otlp")
        for trace_id, group in by_trace.items():
            request = {
                "resourceSpans": [
                    {"resource": {"attributes": []}, "scopeSpans": [{"scope": {}, "spans": group}]}
                ]
            }
            for got in otlp_format.parse(RawInput.from_object(request)):
                if isinstance(got, Trace):
                    got.source.format, got.source.path = self.name, raw.label
                    got.source.variant = (
                        "dataframe"
                        if any("context.span_id" in s for s in spans if isinstance(s, dict))
                        else "spans"
                    )
                    got.metadata["phoenix"] = {"trace_id": trace_id}
                yield got


register(PhoenixSpans())
