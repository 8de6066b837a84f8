"""Flat span-attribute dicts: the attributes of one span (or a list of spans) without an OTLP envelope.

What tests, fixtures and span processors often dump: ``{"openinference.span.kind": "LLM",
"llm.input_messages.0.message.role": "user", ...}`` or ``{"gen_ai.operation.name": "chat",
"gen_ai.input.messages": "[...]"}``. Read by the same span dialects as OTLP spans
(:mod:`mast.normalize._otel_attrs`); recognised by the marker keys the dialects register
(``gen_ai.operation.name``, ``openinference.span.kind``, ``traceloop.span.kind``...). A list of such dicts is read as the spans of one run, in order
(there is no tree to rebuild).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._otel_attrs import span_from_attributes
from mast.normalize._otel_dialects import flat_keys
from mast.normalize._sniff import json_head
from mast.normalize._spans import build_trace
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Trace


def is_attribute_dict(data: Any) -> bool:
    """A flat dict of span attributes: a registered dialect's marker key, mostly its keys, scalar (or list) values."""
    if not isinstance(data, dict) or not data:
        return False
    known = flat_keys()
    if not any(key in data or any(k.startswith(key + ".") for k in data) for key in known.markers):
        return False
    dotted = sum(1 for k in data if k.startswith(known.prefixes))
    flat = all(not isinstance(v, dict) for v in data.values())
    return flat and dotted >= max(1, len(data) // 2)


class SpanAttributes(TraceFormat):
    """Flat span-attribute dicts: one run per file."""

    name = "span_attributes"
    description = "Flat span-attribute dicts (OpenInference / OTel GenAI keys without an OTLP envelope)"
    priority = 41
    example = '{"gen_ai.operation.name": "chat", "gen_ai.input.messages": "[...]", ...} (flat span attributes)'

    def detect(self, raw: RawInput) -> float:
        """How sure this is the format: cheap sniffing first, then the parsed shape."""
        if not json_head(raw, *flat_keys().sniffs):
            return 0.0
        try:
            data = raw.data()
        except TraceFormatError:
            return 0.0
        if is_attribute_dict(data):
            return 0.9
        if isinstance(data, list) and data and all(is_attribute_dict(d) for d in data):
            return 0.85
        return 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the traces in ``raw``; a broken record yields its error."""
        data = raw.data()
        items = data if isinstance(data, list) else [data]
        if not items or not all(is_attribute_dict(d) for d in items):
            raise raw.fail("span_attributes needs a flat dict of span attributes (or a list of them)")
        spans = [span_from_attributes(item, span_id=f"span-{n}", order=n) for n, item in enumerate(items)]
        trace = build_trace(spans, source=self.source(raw))
        trace.warnings.append("span attributes without an envelope: no span tree or timestamps")
        yield trace


register(SpanAttributes())
