"""Span dialects register like formats: the documented example, added in a test, reads its spans.

The example in ``mast.normalize``'s docstring (an invented instrumentation, ``acme.*`` keys) is run
as written, registered for one test and removed after it; OTLP spans written in it must then come
out as steps, and as unmapped attributes before and after.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from _data import TRACES

import mast.normalize as normalize
from mast.errors import TraceFormatError
from mast.normalize import load_trace
from mast.normalize._otel_attrs import span_from_attributes
from mast.normalize._otel_dialects import (
    SpanDialect,
    SpanReading,
    register_span_dialect,
    span_dialects,
    unregister_span_dialect,
)
from mast.trace import Trace

TRACE_ID = "5b8efff798038103d269b633813fc60c"


def _documented_example() -> str:
    doc = normalize.__doc__ or ""
    lines: list[str] = []
    for line in doc.split("For example ``spans/acme.py``::", 1)[1].splitlines()[1:]:
        if line.strip() and not line.startswith("      "):
            break  # the literal block ends at the first line indented less
        lines.append(line)
    return textwrap.dedent("\n".join(lines))


@pytest.fixture
def acme() -> Iterator[None]:
    """The docstring's ``_span_acme.py``, registered for this test only."""
    exec(compile(_documented_example(), "_span_acme.py", "exec"), {"__name__": "_span_acme"})  # noqa: S102 - our own docstring
    try:
        yield
    finally:
        unregister_span_dialect("acme")


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def _span(span_id: str, parent: str | None, start: int, name: str, attrs: dict[str, Any]) -> dict[str, Any]:
    span: dict[str, Any] = {"traceId": TRACE_ID, "spanId": span_id, "name": name,
                            "startTimeUnixNano": str(1_790_000_000_000_000_000 + start * 10**9),
                            "endTimeUnixNano": str(1_790_000_000_000_000_000 + start * 10**9 + 5 * 10**8),
                            "attributes": [_attr(k, v) for k, v in attrs.items()]}
    if parent:
        span["parentSpanId"] = parent
    return span


def _acme_run() -> dict[str, Any]:
    """One run of the invented instrumentation: a model call that asks for grep, the grep, the answer."""
    root = "a1a1a1a1a1a1a1a1"
    spans = [
        _span(root, None, 0, "run", {"acme.agent": "Fixer"}),
        _span("b2b2b2b2b2b2b2b2", root, 1, "model", {
            "acme.step": "model_call", "acme.model": "acme-1", "acme.tokens.in": 40, "acme.tokens.out": 9,
            "acme.prompt": json.dumps([{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Why does parse() drop the last line?"}]),
            "acme.reply": json.dumps([{"role": "assistant", "content": "Let me look.",
                                       "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{\"pattern\": \"split\"}"}}]}]),
        }),
        _span("c3c3c3c3c3c3c3c3", root, 2, "grep", {"acme.step": "action", "acme.tool": "grep", "input": "{\"pattern\": \"split\"}",
                                                   "output": "parse.py:12: lines = text.split('\\n')[:-1]"}),
        _span("d4d4d4d4d4d4d4d4", root, 3, "model", {
            "acme.step": "model_call", "acme.model": "acme-1",
            "acme.reply": "The slice [:-1] drops the last line when the text has no trailing newline.",
        }),
    ]
    return {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "acme-demo")]},
                               "scopeSpans": [{"scope": {"name": "acme.tracing"}, "spans": spans}]}]}


def _read() -> Trace:
    return load_trace(_acme_run())


def test_the_documented_span_dialect_reads_its_spans(acme: None) -> None:
    trace = _read()
    assert trace.source.format == "otlp"
    assert [(s.kind, s.agent, s.role) for s in trace.steps] == [
        ("system", "system", "system"), ("message", "user", "user"), ("llm", "Fixer", "assistant"),
        ("tool_result", "tool", "tool"), ("llm", "Fixer", "assistant")]
    first, tool, answer = trace.steps[2], trace.steps[3], trace.steps[4]
    assert first.usage is not None
    assert (first.model, first.usage.input_tokens, first.usage.output_tokens) == ("acme-1", 40, 9)
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [("c1", "grep", {"pattern": "split"})]
    assert tool.tool_results[0].call_id == "c1" and "split('\\n')" in tool.tool_results[0].output
    assert trace.task == "Why does parse() drop the last line?"
    assert trace.final_output == answer.content and answer.content.startswith("The slice [:-1]")
    mapped = {"acme.model", "acme.prompt", "acme.reply", "acme.tokens.in", "acme.tokens.out", "acme.agent", "acme.tool"}
    assert not any(mapped & set(s.attributes) for s in trace.steps)  # read into the steps, not kept twice
    assert answer.attributes["acme.step"] == "model_call"  # the kind rule marks nothing used: the key stays


def test_a_flat_attribute_dict_in_the_dialect_is_recognised(acme: None) -> None:
    flat = {"acme.step": "model_call", "acme.model": "acme-1", "acme.prompt": json.dumps([{"role": "user", "content": "Summarise the incident."}]),
            "acme.reply": "The disk filled up at 03:10."}
    trace = load_trace(flat)
    assert trace.source.format == "span_attributes"
    assert [(s.role, s.content) for s in trace.steps] == [("user", "Summarise the incident."), ("assistant", "The disk filled up at 03:10.")]
    assert trace.steps[1].model == "acme-1"


def test_a_flat_attribute_dict_of_an_unknown_dialect_is_refused() -> None:
    with pytest.raises(TraceFormatError, match="no known trace format"):
        load_trace({"acme.step": "model_call", "acme.model": "acme-1", "acme.reply": "Done."})


def test_without_the_dialect_its_keys_stay_unread() -> None:
    assert "acme" not in [d.name for d in span_dialects()]
    before = _read()
    assert not any(s.kind == "llm" for s in before.steps)
    first_call = next(u for u in before.metadata["unrendered_spans"] if u["name"] == "model")
    assert {"acme.prompt", "acme.reply", "acme.model"} <= set(first_call["attributes"])  # kept, not lost
    exec(compile(_documented_example(), "_span_acme.py", "exec"), {"__name__": "_span_acme"})  # noqa: S102
    try:
        assert any(s.kind == "llm" for s in _read().steps)
    finally:
        unregister_span_dialect("acme")
    after = _read()  # plans made while it was registered are forgotten with it
    assert after.model_dump(exclude={"source"}) == before.model_dump(exclude={"source"})


def test_a_dialect_reads_only_spans_that_carry_its_keys() -> None:
    calls: list[str] = []

    def count(span: SpanReading) -> None:
        calls.append(span.name)

    register_span_dialect(SpanDialect(name="counting", prefixes=("acme.",), messages=((99, count),)))
    try:
        load_trace(TRACES / "otlp_json" / "otel_genai_openai_v2_chat_toolcall.otlp.json")
        assert calls == []  # no acme key on these spans: the reader is never asked
        _read()
        assert calls == ["run", "model", "grep", "model"]
    finally:
        unregister_span_dialect("counting")


def test_ranks_decide_between_dialects_on_one_span() -> None:
    attrs = {"gen_ai.operation.name": "chat", "gen_ai.response.model": "gpt-4o", "acme.model": "acme-1"}
    assert span_from_attributes(attrs, span_id="s").model == "gpt-4o"  # the GenAI answered model
    register_span_dialect(SpanDialect(name="acme_first", prefixes=("acme.",), fields={"model": ((5, "acme.model"),)}))
    try:
        span = span_from_attributes(attrs, span_id="s")
        assert span.model == "acme-1" and "acme.model" not in span.attributes
        assert span.attributes["gen_ai.response.model"] == "gpt-4o"  # the other key, not read, is kept
    finally:
        unregister_span_dialect("acme_first")


def test_the_registry_refuses_mistakes() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register_span_dialect(SpanDialect(name="otel_genai", prefixes=("gen_ai.",)))
    with pytest.raises(ValueError, match="unknown fields"):
        register_span_dialect(SpanDialect(name="typo", prefixes=("x.",), fields={"modle": ((1, "x.model"),)}))
    assert "typo" not in [d.name for d in span_dialects()]


def test_every_builtin_dialect_is_its_own_module() -> None:
    names = {d.name for d in span_dialects()}
    assert {"otel_genai", "openllmetry", "openinference", "vercel_ai", "logfire_pydantic_ai", "langsmith"} <= names
