"""Formats users have today, each read from a fixture written for these tests after the format's documentation.

Claude Code session JSONL, Pydantic AI message history, Google ADK events, MLflow trace JSON,
LangGraph state / checkpoint dumps, CrewAI verbose console output. Every file under
``tests/data/normalize/formats/`` is our own text in the documented shape.
"""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mast.cli import main
from mast.normalize import detect_format, formats, load_trace

FORMATS = Path(__file__).parent / "data" / "normalize" / "formats"


def _speakers(path: Path) -> list[tuple[str | None, str]]:
    trace = load_trace(path)
    return [(s.agent, s.kind) for s in trace.steps]


def test_claude_code_session() -> None:
    path = FORMATS / "claude_code_session.jsonl"
    fmt, confidence = detect_format(path)
    assert fmt.name == "claude_code" and confidence >= 0.9
    trace = load_trace(path)
    assert trace.trace_id == "7c1e9a52-3f0d-4b8e-9a11-0d2f6c4b1e77" and trace.framework == "claude-code"
    assert trace.task == "The test test_round_price fails; make it pass without changing the test."  # not the caveat
    assert trace.final_output == "Prices now round half up with Decimal; test_round_price passes."
    assert trace.steps[0].kind == "system" and trace.steps[0].attributes["injected_context"] is True
    calls = [c for s in trace.steps for c in s.tool_calls]
    results = [r for s in trace.steps for r in s.tool_results]
    assert [c.name for c in calls] == ["Bash", "Edit"] and [r.call_id for r in results] == ["toolu_1", "toolu_2"]
    assert results[0].is_error and results[0].name == "Bash"
    assert "<thinking>" in next(s.content for s in trace.steps if any(c.name == "Edit" for c in s.tool_calls))
    # msg_01 was written over two lines: its usage counts once
    assert trace.usage is not None and (trace.usage.input_tokens, trace.usage.output_tokens) == (4400, 160)
    assert trace.agents[0].model == "claude-sonnet-4-20250514"
    assert trace.metadata["summaries"] == ["Fix failing price rounding test"] and trace.metadata["session"]["gitBranch"] == "main"


def test_claude_code_subagent_lines() -> None:
    lines = [
        {"type": "user", "sessionId": "s", "uuid": "1", "message": {"role": "user", "content": "Review the diff"}},
        {"type": "assistant", "sessionId": "s", "uuid": "2", "isSidechain": True,
         "message": {"id": "m", "role": "assistant", "content": [{"type": "text", "text": "The diff looks safe."}]}},
        {"type": "assistant", "sessionId": "s", "uuid": "3", "message": {"id": "n", "role": "assistant", "content": [{"type": "text", "text": "Approved."}]}},
    ]
    trace = load_trace(lines)
    assert [s.agent for s in trace.steps] == ["user", "subagent", "claude-code"] and trace.final_output == "Approved."


def test_pydantic_ai_message_history() -> None:
    path = FORMATS / "pydantic_ai_history.json"
    fmt, confidence = detect_format(path)
    assert fmt.name == "pydantic_ai" and confidence == 0.95
    trace = load_trace(path)
    assert trace.framework == "pydantic-ai" and trace.task == "Is it warmer in Lisbon or Oslo today?"
    assert trace.final_output == "Lisbon is warmer: 24 °C against 13 °C in Oslo."
    results = [r for s in trace.steps for r in s.tool_results]
    assert [(r.call_id, r.output, r.is_error) for r in results][:2] == [("call_L", "24", False), ("call_O", results[1].output, True)]
    assert "city: unknown city spelling" in results[1].output  # the retry prompt reads as the validation error
    calls = [c for s in trace.steps for c in s.tool_calls]
    assert calls[0].arguments == {"city": "Lisbon"} and calls[1].arguments == {"city": "Oslo"}  # JSON text or object
    assert trace.usage is not None and (trace.usage.input_tokens, trace.usage.output_tokens) == (410, 57)
    assert trace.agents[0].model == "gpt-4o"


def test_pydantic_ai_structured_output_is_the_final_result_call() -> None:
    history = [
        {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "Extract the city from: I live in Porto."}]},
        {"kind": "response", "parts": [{"part_kind": "tool-call", "tool_name": "final_result", "args": {"city": "Porto"}, "tool_call_id": "c1"}]},
        {"kind": "request", "parts": [{"part_kind": "tool-return", "tool_name": "final_result", "content": "Final result processed.", "tool_call_id": "c1"}]},
    ]
    trace = load_trace(history)
    assert trace.source.format == "pydantic_ai" and json.loads(trace.final_output or "") == {"city": "Porto"}


def test_mast_formats_lists_each_format_with_an_example() -> None:
    result = CliRunner().invoke(main, ["formats"])
    assert result.exit_code == 0
    for name in ("claude_code", "pydantic_ai", "wrapped_run", "framework_log", "otlp"):
        assert name in result.output
    assert all(fmt.example for fmt in formats()), [fmt.name for fmt in formats() if not fmt.example]
    assert "e.g." in result.output


def test_google_adk_session_with_a_transfer() -> None:
    path = FORMATS / "google_adk_session.json"
    assert detect_format(path)[0].name == "google_adk"
    trace = load_trace(path)
    assert trace.trace_id == "sess-42" and trace.framework == "google-adk"
    assert [a.name for a in trace.agents] == ["coordinator", "museum_agent"]
    handoff = next(s for s in trace.steps if s.kind == "handoff")
    assert (handoff.agent, handoff.recipient) == ("coordinator", "museum_agent")
    results = [r for s in trace.steps for r in s.tool_results]
    assert [r.call_id for r in results] == ["adk-t1", "adk-t2"] and "Serralves" in results[1].output
    assert trace.final_output == "Serralves is open on Mondays from 10:00."
    assert sum(1 for s in trace.steps if "Serralves is open" in s.content) == 1  # the streamed chunk is not a step
    assert trace.usage is not None and trace.usage.input_tokens == 650
    assert trace.metadata["session"]["app_name"] == "trip_app"


def test_google_adk_camel_case_events_as_jsonl(tmp_path: Path) -> None:
    lines = [
        {"author": "user", "invocationId": "e-1", "content": {"role": "user", "parts": [{"text": "Spell cat backwards"}]}},
        {"author": "speller", "invocationId": "e-1", "content": {"role": "model", "parts": [{"functionCall": {"id": "f1", "name": "reverse", "args": {"s": "cat"}}}]}},
        {"author": "speller", "invocationId": "e-1", "content": {"role": "user", "parts": [{"functionResponse": {"id": "f1", "name": "reverse", "response": {"out": "tac"}}}]}},
        {"author": "speller", "invocationId": "e-1", "content": {"role": "model", "parts": [{"text": "tac"}]}},
    ]
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    trace = load_trace(path)
    assert trace.source.format == "google_adk" and [s.agent for s in trace.steps] == ["user", "speller", "tool", "speller"]
    assert trace.final_output == "tac"


def test_mlflow_trace() -> None:
    path = FORMATS / "mlflow_trace.json"
    assert detect_format(path)[0].name == "mlflow"
    trace = load_trace(path)
    assert (trace.trace_id, trace.framework, trace.status) == ("tr-5f3a", "mlflow", "ok")
    assert trace.task == "What is 15% of 80?" and trace.final_output == "12"
    assert [s.kind for s in trace.steps] == ["system", "message", "llm", "tool_result", "llm"]  # history not repeated
    call = trace.steps[2].tool_calls[0]
    assert (call.name, call.arguments) == ("calculator", {"expr": "0.15*80"}) and trace.steps[3].tool_results[0].call_id == "call_c1"
    assert trace.steps[-1].content == "15% of 80 is 12." and trace.agents[0].name == "math_agent"
    assert trace.usage is not None and trace.usage.input_tokens == 150


def test_mlflow_error_span_marks_the_trace() -> None:
    record = {"info": {"request_id": "tr-x", "status": "ERROR"}, "data": {"spans": [
        {"name": "agent", "context": {"span_id": "0x01", "trace_id": "0xab"}, "parent_id": None, "status_code": "ERROR", "status_message": "tool crashed",
         "attributes": {"mlflow.spanType": '"AGENT"', "mlflow.spanInputs": '"Add 1 and 1"'}}]}}
    trace = load_trace(record)
    assert trace.source.format == "mlflow" and trace.status == "error" and trace.error == "tool crashed"


def test_langgraph_checkpoint_history_keeps_the_nodes_as_agents() -> None:
    path = FORMATS / "langgraph_checkpoints.json"
    assert detect_format(path)[0].name == "langgraph"
    trace = load_trace(path)
    assert trace.trace_id == "thread-8" and trace.source.variant == "history"
    assert [(s.agent, s.kind) for s in trace.steps] == [("user", "message"), ("researcher", "message"), ("tool", "tool_result"), ("writer", "message")]
    assert trace.final_output == "Saturn, with 274 confirmed moons." and trace.task == "Which planet has the most moons? One line."
    assert trace.steps[2].tool_results[0].call_id == "call_s" and trace.agents[0].model == "gpt-4o"
    assert trace.metadata["channels"] == {"route": "end"}


def test_langgraph_plain_state_and_messages_to_dict_entries() -> None:
    state = {"messages": [{"type": "human", "data": {"content": "Translate 'gato'", "type": "human"}},
                          {"type": "ai", "data": {"content": "cat", "type": "ai", "name": "translator"}}]}
    trace = load_trace(state)
    assert trace.source.format == "langgraph" and [s.agent for s in trace.steps] == ["user", "translator"]
