"""OpenTelemetry-shaped traces: OTLP/JSON (GenAI and OpenInference dialects), flat span-attribute dicts, Vercel AI SDK spans.

The two real OTLP samples record the same exchange in two dialects, and four of the span-attribute
dicts record one call in three: each group must give the same transcript. Synthetic OTLP files
cover the span tree (agents, tools, history re-sent by each call, unordered spans) and the
encodings no sample has (base64 ids, JSONL split over lines, indexed OpenLLMetry keys, errors).
"""

from __future__ import annotations

import base64
import json
import random
from pathlib import Path
from typing import Any

import pytest
from _data import TRACES
from _normalize_checks import assert_no_repeats, assert_paired

from mast.errors import TraceFormatError
from mast.normalize import detect_format, iter_traces, load_trace, load_traces
from mast.normalize._otel_attrs import any_value
from mast.normalize.spans.genai import GEN_AI_INPUT_MESSAGES
from mast.normalize.spans.openinference import OI_INPUT_MESSAGES

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.fixture(scope="module")
def otlp_dir() -> Path:
    return TRACES / "otlp_json"


# --- real OTLP samples ----------------------------------------------------------------------------


def test_otel_genai_sample(otlp_dir: Path) -> None:
    trace = load_trace(otlp_dir / "otel_genai_openai_v2_chat_toolcall.otlp.json")
    assert trace.source.format == "otlp" and trace.source.confidence == pytest.approx(1.0)
    assert trace.trace_id == "053074667b1113278073667614bb3e19"  # hex kept as is, never base64-decoded
    assert [(s.kind, s.role) for s in trace.steps] == [("system", "system"), ("message", "user"), ("llm", "assistant")]
    call = trace.steps[2].tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("call_9RtYbK2mXqLp", "lookup_order", {"order_id": "A-1187"})
    assert trace.steps[2].id == "03491beea3cb073d"
    assert trace.steps[2].attributes["gen_ai.request.temperature"] == 0.7
    assert trace.steps[2].attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (412, 27)
    assert trace.task == "Where is order A-1187?"
    assert [(a.name, a.model) for a in trace.agents] == [("assistant", "gpt-4o-mini-2024-07-18")]
    assert trace.metadata["scopes"] == ["opentelemetry.util.genai.handler"]
    assert trace.metadata["resources"][0]["service.name"] == "capture"
    assert trace.started_at.isoformat() == "2026-09-07T14:41:14.027616+00:00"  # startTimeUnixNano 1788792074027616000


def test_openinference_sample(otlp_dir: Path) -> None:
    trace = load_trace(otlp_dir / "openinference_openai_chat_toolcall.otlp.json")
    assert trace.source.format == "otlp"
    assert trace.trace_id == "9ed94f9bdc36b397e11c51f77d49e01a"
    assert trace.status == "ok"  # STATUS_CODE_OK on the only (root) span
    llm = trace.steps[-1]
    assert (llm.kind, llm.model, llm.usage.total_tokens) == ("llm", "gpt-4o-mini-2024-07-18", 439)
    assert llm.attributes["llm.token_count.prompt_details.cache_read"] == 256
    assert json.loads(llm.attributes["llm.invocation_parameters"])["temperature"] == 0.7
    assert not any(k.startswith(OI_INPUT_MESSAGES) for k in llm.attributes)  # mapped to steps, not kept twice


def test_both_dialects_give_the_same_transcript(otlp_dir: Path) -> None:
    genai = load_trace(otlp_dir / "otel_genai_openai_v2_chat_toolcall.otlp.json")
    openinference = load_trace(otlp_dir / "openinference_openai_chat_toolcall.otlp.json")
    assert genai.to_transcript().text == openinference.to_transcript().text
    assert genai.to_transcript().text.splitlines()[-1] == "[S2] assistant: <tool_call name='lookup_order'>{\"order_id\":\"A-1187\"}</tool_call>"


def test_base64_ids_are_converted_to_hex(otlp_dir: Path) -> None:
    data = json.loads((otlp_dir / "otel_genai_openai_v2_chat_toolcall.otlp.json").read_text(encoding="utf-8"))
    span = data["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["traceId"] = base64.b64encode(bytes.fromhex(span["traceId"])).decode()
    span["spanId"] = base64.b64encode(bytes.fromhex(span["spanId"])).decode()
    trace = load_trace(data)
    assert trace.trace_id == "053074667b1113278073667614bb3e19"
    assert trace.steps[-1].id == "03491beea3cb073d"


def test_jsonl_of_export_requests(otlp_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    lines = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(otlp_dir.glob("*.otlp.json"))]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\nnot json\n", encoding="utf-8")
    items = list(iter_traces(path))
    errors = [i for i in items if isinstance(i, TraceFormatError)]
    traces = [i for i in items if not isinstance(i, TraceFormatError)]
    assert len(errors) == 1 and errors[0].record == 2
    assert [t.trace_id for t in traces] == ["9ed94f9bdc36b397e11c51f77d49e01a", "053074667b1113278073667614bb3e19"]
    assert [t.source.record for t in traces] == [0, 1]


# --- synthetic span trees -------------------------------------------------------------------------


def value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, list):
        return {"arrayValue": {"values": [value(x) for x in v]}}
    return {"stringValue": v if isinstance(v, str) else json.dumps(v)}


def span(span_id: str, parent: str | None, name: str, start: int, attrs: dict[str, Any], *, status: dict[str, Any] | None = None, trace: str = TRACE) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": trace,
        "spanId": span_id,
        "name": name,
        "kind": "SPAN_KIND_INTERNAL",
        "startTimeUnixNano": str(1_760_000_000_000_000_000 + start * 1_000_000),
        "endTimeUnixNano": str(1_760_000_000_000_000_000 + (start + 5) * 1_000_000),
        "attributes": [{"key": k, "value": value(v)} for k, v in attrs.items()],
        "status": status or {},
    }
    if parent:
        out["parentSpanId"] = parent
    return out


def export(spans: list[dict[str, Any]], scope: str = "my.agents") -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "demo"}}]},
                               "scopeSpans": [{"scope": {"name": scope}, "spans": spans}]}]}


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


SYSTEM = text("system", "You plan and delegate.")
USER = text("user", "Find the cheapest flight to Oslo.")
CALL = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "search_flights", "arguments": {"to": "OSL"}}]}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "SK123 at 99 EUR"}]}
PLAN = text("assistant", "Cheapest is SK123; asking writer to summarise.")


def two_agent_spans() -> list[dict[str, Any]]:
    return [
        span("a000000000000001", None, "invoke_agent planner", 0, {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner"}),
        span("a000000000000002", "a000000000000001", "chat gpt-4o", 1, {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 20, "gen_ai.usage.output_tokens": 5,
            "gen_ai.input.messages": json.dumps([SYSTEM, USER]), "gen_ai.output.messages": json.dumps([CALL])}),
        span("a000000000000003", "a000000000000001", "execute_tool search_flights", 10, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search_flights", "gen_ai.tool.call.id": "c1",
            "gen_ai.tool.call.arguments": json.dumps({"to": "OSL"}), "gen_ai.tool.call.result": "SK123 at 99 EUR"}),
        span("a000000000000004", "a000000000000001", "chat gpt-4o", 20, {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 9,
            "gen_ai.input.messages": json.dumps([SYSTEM, USER, CALL, RESULT]), "gen_ai.output.messages": json.dumps([PLAN])}),
        span("b000000000000001", None, "invoke_agent writer", 30, {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "writer"}),
        span("b000000000000002", "b000000000000001", "chat gpt-4o-mini", 31, {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.input.messages": json.dumps([text("user", "Summarise: SK123 at 99 EUR")]),
            "gen_ai.output.messages": json.dumps([text("assistant", "Fly SK123 for 99 EUR.")])}),
    ]


def test_span_tree_with_agents_tools_and_resent_history() -> None:
    trace = load_trace(export(two_agent_spans(), scope="openinference.instrumentation.openai_agents"))
    assert trace.source.format == "otlp" and trace.trace_id == TRACE
    assert [(s.kind, s.agent, s.recipient) for s in trace.steps] == [
        ("system", "system", "planner"),
        ("message", "user", "planner"),
        ("llm", "planner", None),
        ("tool_result", "tool", "planner"),
        ("llm", "planner", None),
        ("message", "user", "writer"),
        ("llm", "writer", None),
    ]
    assert_paired(trace, 1)
    assert_no_repeats(trace)
    assert [(a.name, a.model) for a in trace.agents] == [("planner", "gpt-4o"), ("writer", "gpt-4o-mini")]
    assert trace.framework == "openai-agents"
    assert trace.final_output == "Fly SK123 for 99 EUR."
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (60, 14)
    assert trace.task == "Find the cheapest flight to Oslo."


def test_span_order_in_the_file_does_not_matter() -> None:
    ordered = load_trace(export(two_agent_spans()))
    shuffled_spans = two_agent_spans()
    random.Random(7).shuffle(shuffled_spans)
    shuffled = load_trace(export(shuffled_spans))
    assert shuffled.to_transcript().text == ordered.to_transcript().text


def test_spans_of_one_trace_split_over_jsonl_lines(tmp_path: Path) -> None:
    spans = two_agent_spans()
    path = tmp_path / "file_exporter.jsonl"
    path.write_text("\n".join(json.dumps(export([s])) for s in reversed(spans)) + "\n", encoding="utf-8")
    (trace,) = load_traces(path)
    assert trace.to_transcript().text == load_trace(export(spans)).to_transcript().text


def test_tool_span_without_call_id_pairs_by_name() -> None:
    spans = two_agent_spans()[:4]
    spans[2] = span("a000000000000003", "a000000000000001", "search_flights", 10, {
        "openinference.span.kind": "TOOL", "tool.name": "search_flights", "input.value": json.dumps({"to": "OSL"}), "output.value": "SK123 at 99 EUR"})
    trace = load_trace(export(spans))
    assert_paired(trace, 1)
    assert trace.steps[3].tool_results[0].call_id == "c1"


def test_openllmetry_indexed_attributes() -> None:
    attrs = {
        "llm.request.type": "chat", "gen_ai.system": "OpenAI", "gen_ai.request.model": "gpt-4",
        "gen_ai.prompt.0.role": "system", "gen_ai.prompt.0.content": "Be brief.",
        "gen_ai.prompt.1.role": "user", "gen_ai.prompt.1.content": "Weather in Paris?",
        "gen_ai.completion.0.role": "assistant", "gen_ai.completion.0.finish_reason": "tool_calls",
        "gen_ai.completion.0.tool_calls.0.id": "call_w", "gen_ai.completion.0.tool_calls.0.name": "get_weather",
        "gen_ai.completion.0.tool_calls.0.arguments": "{\"city\": \"Paris\"}",
        "gen_ai.usage.prompt_tokens": 17, "gen_ai.usage.completion_tokens": 8,
        "traceloop.workflow.name": "weather",
    }
    trace = load_trace(export([span("c000000000000001", None, "openai.chat", 0, attrs)]))
    assert [(s.kind, s.role) for s in trace.steps] == [("system", "system"), ("message", "user"), ("llm", "assistant")]
    assert [(c.id, c.name, c.arguments) for c in trace.steps[2].tool_calls] == [("call_w", "get_weather", {"city": "Paris"})]
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (17, 8)
    assert trace.steps[2].attributes["traceloop.workflow.name"] == "weather"
    assert not any(k.startswith("gen_ai.prompt.") for k in trace.steps[2].attributes)


def test_error_span_sets_status_and_error_step() -> None:
    spans = [
        span("d000000000000001", None, "invoke_agent coder", 0, {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "coder"},
             status={"code": "STATUS_CODE_ERROR", "message": "RateLimitError: 429"}),
        span("d000000000000002", "d000000000000001", "chat", 1, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps([text("user", "Write tests")])},
             status={"code": 2, "message": "RateLimitError: 429"}),
    ]
    trace = load_trace(export(spans))
    assert trace.status == "error" and trace.error == "RateLimitError: 429"
    assert trace.steps[1].kind == "llm" and trace.steps[1].error == "RateLimitError: 429"
    assert trace.steps[-1].kind == "error" and trace.steps[-1].agent == "coder"
    assert any("no output" in w for w in trace.warnings)


def test_span_without_content_is_reported_not_hidden() -> None:
    trace = load_trace(export([span("e000000000000001", None, "chat gpt-4o", 0, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.usage.input_tokens": 3})]))
    assert [(s.kind, s.content, s.model) for s in trace.steps] == [("llm", "", "gpt-4o")]
    assert any("no message content" in w for w in trace.warnings)


def test_otlp_export_without_spans_is_an_error() -> None:
    with pytest.raises(TraceFormatError, match="no spans"):
        load_trace({"resourceSpans": []})


def test_any_value_decoding() -> None:
    assert any_value({"intValue": "42"}) == 42
    assert any_value({"kvlistValue": {"values": [{"key": "a", "value": {"boolValue": True}}]}}) == {"a": True}
    assert any_value({"arrayValue": {"values": [{"doubleValue": 1.5}, {"string_value": "x"}]}}) == [1.5, "x"]
    assert GEN_AI_INPUT_MESSAGES == "gen_ai.input.messages"  # names come from the semconv package


# --- flat span-attribute dicts --------------------------------------------------------------------

SAME_CALL = [
    "openinference_client_span_input_output_only.json",
    "openinference_client_span_tool_calls.json",
    "otel_genai_client_span_tool_calls.json",
    "otel_genai_deprecated_client_span_tool_calls.json",
]


@pytest.mark.parametrize("name", SAME_CALL)
def test_span_attribute_dicts_of_one_call(name: str) -> None:
    trace = load_trace(TRACES / "span_attribute_dicts" / name)
    assert trace.source.format == "span_attributes"
    assert [(s.kind, s.role) for s in trace.steps] == [("message", "user"), ("message", "assistant"), ("tool_result", "tool"), ("llm", "assistant")]
    assert trace.steps[1].content == "Absolutely! Let me check the weather for you."
    assert [(c.id, c.name, c.arguments) for c in trace.steps[1].tool_calls] == [("1234", "get_weather", {"location": "Paris"})]
    assert trace.steps[2].tool_results[0].output == "rainy, 57°F"
    assert_paired(trace, 1)
    assert trace.task == "Weather in Paris?"
    assert trace.final_output == "The weather in Paris is currently rainy with a temperature of 57°F."
    assert trace.steps[-1].model == "gpt-4-0613"
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (97, 52)


def test_span_attribute_dicts_agree() -> None:
    texts = {load_trace(TRACES / "span_attribute_dicts" / n).to_transcript().text for n in SAME_CALL}
    assert len(texts) == 1


def test_tool_execution_span_dict() -> None:
    trace = load_trace(TRACES / "span_attribute_dicts" / "otel_genai_tool_execution_span.json")
    (step,) = trace.steps
    assert step.kind == "tool_call"
    assert [(c.id, c.name, c.arguments) for c in step.tool_calls] == [("1234", "get_weather", {"city": "New York"})]
    assert json.loads(step.tool_results[0].output)["status"] == "success"
    assert step.tool_results[0].call_id == "1234"
    assert step.attributes["gen_ai.tool.description"].startswith("Retrieves the current weather")


# --- Vercel AI SDK spans --------------------------------------------------------------------------


def test_vercel_ai_sdk_spans() -> None:
    path = TRACES / "vercel_ai_sdk_spans" / "ai-generateText-doGenerate.json"
    assert detect_format(path)[0].name == "vercel_ai"
    first, second = load_traces(path)
    assert (first.trace_id, second.trace_id) == ("b3e700af9eab81e19f72f964d62a35af", "edff2fc5854be6170e8cccccec0c82cf")
    assert [s.content for s in first.steps] == ["Write a haiku about programming.", "Lines of code align,  \nLogic dances through the night—  \nDreams in data flow."]
    assert first.framework == "vercel-ai" and first.metadata["function_id"] == "test-generate-text"
    assert (first.usage.input_tokens, first.usage.output_tokens) == (14, 20)
    assert first.steps[-1].model == "gpt-4o-mini-2024-07-18"
    assert first.started_at.isoformat() == "2026-02-03T15:19:52.242000+00:00"
    # the second call re-sends a conversation: history is shown once, as plain messages
    assert [(s.kind, s.role) for s in second.steps] == [("system", "system"), ("message", "user"), ("message", "assistant"), ("message", "user"), ("llm", "assistant")]
    assert second.task == "What is 2 + 2?" and second.final_output == "3 + 3 equals 6."


def test_pairing_in_one_trace_does_not_leak_into_another() -> None:
    """Identical messages in two traces are converted once; an id given while pairing stays in its trace."""
    call = {"role": "assistant", "parts": [{"type": "tool_call", "name": "say_hello", "arguments": {}}]}
    hello = text("user", "hi")

    def one(trace_id: str, tool_id: str) -> list[dict[str, Any]]:
        root, llm = f"{trace_id[:15]}1", f"{trace_id[:15]}2"
        return [
            span(root, None, "chat", 0, {"gen_ai.operation.name": "chat", "gen_ai.input.messages": json.dumps([hello]),
                                          "gen_ai.output.messages": json.dumps([call])}, trace=trace_id),
            span(llm, root, "execute_tool say_hello", 1, {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "say_hello",
                                                           "gen_ai.tool.call.id": tool_id, "gen_ai.tool.call.result": "hello"}, trace=trace_id),
        ]

    first, second = load_traces(export(one("1" * 32, "id-A") + one("2" * 32, "id-B")))
    assert [c.id for s in first.steps for c in s.tool_calls] == ["id-A"]
    assert [c.id for s in second.steps for c in s.tool_calls] == ["id-B"]
    assert_paired(first, 1)
    assert_paired(second, 1)


def test_messages_on_span_events() -> None:
    """The older GenAI style puts messages on span events instead of attributes."""
    raw = span("f000000000000001", None, "chat gpt-4o", 0, {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"})
    raw["events"] = [
        {"name": "gen_ai.system.message", "timeUnixNano": "1", "attributes": [{"key": "content", "value": {"stringValue": "Be terse."}}]},
        {"name": "gen_ai.user.message", "timeUnixNano": "2", "attributes": [{"key": "content", "value": {"stringValue": "2+2?"}}]},
        {"name": "gen_ai.choice", "timeUnixNano": "3", "attributes": [{"key": "message", "value": {"stringValue": json.dumps({"content": "4"})}}]},
        {"name": "exception", "timeUnixNano": "4", "attributes": [{"key": "exception.message", "value": {"stringValue": "late timeout"}}]},
    ]
    trace = load_trace(export([raw]))
    assert [(s.kind, s.role, s.content) for s in trace.steps] == [("system", "system", "Be terse."), ("message", "user", "2+2?"), ("llm", "assistant", "4")]
    assert trace.steps[-1].error == "late timeout"
    assert [e["name"] for e in trace.steps[-1].attributes["events"]][-1] == "exception"
