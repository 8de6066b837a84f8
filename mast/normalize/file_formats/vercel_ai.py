"""Vercel AI SDK span dumps: serialized JavaScript ``ReadableSpan`` objects (not OTLP).

Each span is ``{"name", "spanContext": {"traceId", "spanId"}, "parentSpanId" | "parentSpanContext",
"attributes": {...}, "startTime": [seconds, nanos], "endTime", "status": {"code"}, "events"}`` with
the SDK's ``ai.*`` attributes (``ai.prompt.messages``, ``ai.response.text``, ``ai.toolCall.*``)
beside ``gen_ai.*`` ones. Spans are grouped by trace id (one trace each) and read like OTLP spans:
the outer ``ai.generateText`` span wraps the ``ai.generateText.doGenerate`` model calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._otel_attrs import hex_id, span_from_attributes, span_time, status_of
from mast.normalize._sniff import json_head
from mast.normalize._spans import Span, build_trace
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Trace


def _is_js_span(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("spanContext"), dict) and isinstance(item.get("attributes"), dict)


class VercelAISpans(TraceFormat):
    """Vercel AI SDK ReadableSpan dumps: one trace per trace id."""

    name = "vercel_ai"
    description = "Vercel AI SDK spans dumped as JavaScript ReadableSpan objects (spanContext, ai.* attributes)"
    priority = 42
    example = '[{"name": "ai.generateText", "spanContext": {"traceId", "spanId"}, "attributes": {"ai.prompt.messages": ...}}]'

    def detect(self, raw: RawInput) -> float:
        """How sure this is the format: cheap sniffing first, then the parsed shape."""
        if not json_head(raw, '"spanContext"'):
            return 0.0
        try:
            data = raw.data()
        except TraceFormatError:
            return 0.0
        items = data if isinstance(data, list) else [data]
        if not items or not all(_is_js_span(i) for i in items):
            return 0.0
        has_ai = any(any(str(k).startswith("ai.") for k in i["attributes"]) for i in items)
        return 0.95 if has_ai else 0.6

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the traces in ``raw``; a broken record yields its error."""
        data = raw.data()
        items = data if isinstance(data, list) else [data]
        if not items or not all(_is_js_span(i) for i in items):
            raise raw.fail("vercel_ai needs ReadableSpan objects (spanContext + attributes)")
        groups: dict[str, list[Span]] = {}
        for order, item in enumerate(items):
            context = item["spanContext"]
            parent = item.get("parentSpanId") or (item.get("parentSpanContext") or {}).get("spanId")
            status, message = status_of(item.get("status"))
            events = [
                {"name": e.get("name"), "time": e.get("time"), "attributes": e.get("attributes") or {}}
                for e in item.get("events") or []
                if isinstance(e, dict)
            ]
            span = span_from_attributes(
                item["attributes"],
                span_id=hex_id(context.get("spanId")) or f"span-{order}",
                parent_id=hex_id(parent),
                name=str(item.get("name") or ""),
                start=span_time(item.get("startTime")),
                end=span_time(item.get("endTime")),
                status=status,
                status_message=message,
                events=events,
                scope=(item.get("instrumentationLibrary") or item.get("instrumentationScope") or {}).get("name"),
                order=order,
            )
            span.attributes["span_ref"] = f"[{order}]"
            groups.setdefault(hex_id(context.get("traceId")) or "", []).append(span)
        for record, (trace_id, spans) in enumerate(groups.items()):
            function_id = next((s.attributes.get("ai.telemetry.functionId") for s in spans if s.attributes.get("ai.telemetry.functionId")), None)
            metadata = {"function_id": function_id} if function_id else {}
            yield build_trace(
                spans,
                source=self.source(raw, record if len(groups) > 1 else None),
                trace_id=trace_id,
                framework="vercel-ai",
                metadata=metadata,
            )


register(VercelAISpans())
