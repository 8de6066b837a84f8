"""LangSmith's OpenTelemetry export: the span kind in ``langsmith.span.kind`` (llm, tool, chain...).

Messages and values come in the OTel GenAI keys, which :mod:`.genai` reads.
"""

from __future__ import annotations

from typing import Any

from mast.normalize._otel_attrs import SIMPLE_KINDS
from mast.normalize._otel_dialects import SpanDialect, register_span_dialect

LANGSMITH_KIND = "langsmith.span.kind"


def span_kind(attrs: dict[str, Any], used: set[str]) -> str | None:
    """``langsmith.span.kind`` in the common kind words."""
    value = attrs.get(LANGSMITH_KIND)
    return SIMPLE_KINDS.get(value.lower()) if isinstance(value, str) else None


register_span_dialect(SpanDialect(name="langsmith", prefixes=("langsmith.",), kinds=((35, span_kind),)))
