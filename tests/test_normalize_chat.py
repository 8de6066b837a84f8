"""Chat formats: OpenAI chat completions, OpenAI Responses items, Anthropic Messages (bodies and cassettes).

Every real sample in ``tests/data/traces/openai_chat_messages`` and ``anthropic_messages`` is read
with auto-detection and checked fact by fact; synthetic inputs cover the shapes no sample has.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from _data import TRACES
from _normalize_checks import assert_no_repeats, assert_paired, check_golden

from mast.errors import TraceFormatError
from mast.normalize import detect_format, load_trace, load_traces


@pytest.fixture(scope="module")
def chat_dir() -> Path:
    return TRACES / "openai_chat_messages"


@pytest.fixture(scope="module")
def anthropic_dir() -> Path:
    return TRACES / "anthropic_messages"


def read(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


# --- OpenAI chat completions -------------------------------------------------------------------


def test_plain_message_list_is_openai_chat() -> None:
    trace = load_trace([{"role": "user", "content": "fix the bug"}])
    assert trace.source.format == "openai_chat"
    assert [s.content for s in trace.steps] == ["fix the bug"]
    assert trace.task == "fix the bug"
    assert trace.steps[0].agent == "user"


def test_crewai_manager_request(chat_dir: Path) -> None:
    trace = load_trace(chat_dir / "crewai_manager_request_body.json")
    assert (trace.source.format, trace.source.variant) == ("openai_chat", "request")
    assert trace.source.confidence == pytest.approx(0.9)
    assert trace.framework == "crewai"
    # The manager is named by CrewAI's "You are {role}." prompt; coworkers answer its delegation tools.
    assert [a.name for a in trace.agents] == ["Crew Manager", "Researcher", "Senior Writer"]
    assert trace.agents[0].model == "gpt-4o"
    assert trace.agents[0].system_prompt.startswith("You are Crew Manager.")
    assert [s.kind for s in trace.steps] == ["system", "message", "message", "tool_result", "tool_result", "message", "message", "tool_result", "message"]
    assert_paired(trace, 3)
    results = [s for s in trace.steps if s.kind == "tool_result"]
    assert [(s.agent, s.recipient) for s in results] == [
        ("Researcher", "Crew Manager"),
        ("Senior Writer", "Crew Manager"),
        ("Senior Writer", "Crew Manager"),
    ]
    assert trace.steps[2].tool_calls[1].arguments["coworker"] == "Senior Writer"
    assert trace.task.startswith("Current Task: Come up with a list of 5 interesting ideas")
    # the manager says nothing after its last delegation: the last words are the Senior Writer's reply
    assert (trace.final_output or "").startswith("1) The Rise of Autonomous AI Agents in Everyday Applications")
    assert trace.metadata["request"]["model"] == "gpt-4o"
    assert [t["function"]["name"] for t in trace.metadata["request"]["tools"]] == ["delegate_work_to_coworker", "ask_question_to_coworker"]


def test_crewai_manager_response(chat_dir: Path) -> None:
    trace = load_trace(chat_dir / "crewai_manager_response_body.json")
    assert (trace.source.format, trace.source.variant) == ("openai_chat", "response")
    assert [(s.kind, s.role, s.model) for s in trace.steps] == [("llm", "assistant", "gpt-4o-2024-08-06")]
    assert trace.final_output.startswith("- **The Rise of Autonomous AI Agents in Everyday Applications**")
    assert (trace.usage.input_tokens, trace.usage.output_tokens, trace.usage.total_tokens) == (2091, 634, 2725)
    assert trace.status == "ok"
    assert trace.metadata["response"]["system_fingerprint"] == "fp_b7c8e3f100"


@pytest.mark.parametrize("shape", ["dict", "list"])
def test_request_response_pair(chat_dir: Path, shape: str) -> None:
    request = read(chat_dir / "crewai_manager_request_body.json")
    response = read(chat_dir / "crewai_manager_response_body.json")
    pair: Any = {"request": request, "response": response} if shape == "dict" else [request, response]
    trace = load_trace(pair)
    assert (trace.source.format, trace.source.variant) == ("openai_chat", "pair")
    assert len(trace.steps) == 10
    last = trace.steps[-1]
    assert (last.kind, last.agent, last.usage.output_tokens) == ("llm", "Crew Manager", 634)
    assert trace.final_output == response["choices"][0]["message"]["content"]
    assert trace.agents[0].model == "gpt-4o-2024-08-06"
    assert_paired(trace, 3)
    if shape == "dict":
        check_golden(trace, "normalize_openai_chat_crewai_pair")


def test_chat_jsonl_one_message_per_line(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    lines = [
        {"role": "system", "content": "You are Ada, a careful coder."},
        {"role": "user", "content": "fix the bug"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "run", "arguments": "{\"cmd\": \"pytest\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "1 failed"},
        {"role": "assistant", "content": "Fixed: off-by-one in parse()."},
    ]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    trace = load_trace(path)
    assert trace.source.format == "openai_chat"
    assert [a.name for a in trace.agents] == ["Ada"]
    assert trace.steps[2].tool_calls[0].arguments == {"cmd": "pytest"}
    assert_paired(trace, 1)
    assert trace.final_output == "Fixed: off-by-one in parse()."


def test_chat_jsonl_of_request_bodies_is_one_trace_per_line(tmp_path: Path) -> None:
    path = tmp_path / "requests.jsonl"
    rows = [{"model": "gpt-4o", "messages": [{"role": "user", "content": f"task {n}"}]} for n in range(3)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n{broken\n", encoding="utf-8")
    from mast.normalize import iter_traces

    items = list(iter_traces(path))
    traces = [i for i in items if not isinstance(i, TraceFormatError)]
    errors = [i for i in items if isinstance(i, TraceFormatError)]
    assert [t.task for t in traces] == ["task 0", "task 1", "task 2"]
    assert [t.source.record for t in traces] == [0, 1, 2]
    assert len(errors) == 1 and errors[0].record == 3


def test_messages_with_extra_keys_are_read_less_surely() -> None:
    messages = [
        {"role": "user", "content": "hi", "id": "m1", "timestamp": "2025-01-01T00:00:00Z"},
        {"role": "assistant", "content": "hello", "id": "m2"},
    ]
    fmt, confidence = detect_format(messages)
    assert (fmt.name, confidence) == ("openai_chat", pytest.approx(0.6))
    trace = load_trace(messages)
    assert trace.steps[1].id == "m2"
    assert trace.steps[0].attributes["timestamp"] == "2025-01-01T00:00:00Z"


def test_named_messages_are_agents() -> None:
    trace = load_trace([
        {"role": "user", "content": "Plan a trip", "name": "admin"},
        {"role": "assistant", "content": "Step 1: flights", "name": "planner"},
        {"role": "assistant", "content": "Booked.", "name": "booker"},
    ])
    assert [s.agent for s in trace.steps] == ["admin", "planner", "booker"]
    assert [a.name for a in trace.agents] == ["admin", "planner", "booker"]


def test_framework_result_with_messages_is_read_with_less_confidence() -> None:
    fmt, confidence = detect_format({"problem": "2+2", "messages": [{"role": "user", "content": "2+2"}]})
    assert fmt.name == "openai_chat" and confidence == pytest.approx(0.5)
    assert detect_format({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})[1] == pytest.approx(0.9)


def test_forcing_openai_chat_on_other_data_fails_in_one_line() -> None:
    with pytest.raises(TraceFormatError) as info:
        load_trace({"trace": {}, "observations": []}, format="openai_chat")
    assert "\n" not in str(info.value)
    with pytest.raises(TraceFormatError):
        load_trace([{"role": "user", "content": "x"}, 5], format="openai_chat")


# --- OpenAI Responses ---------------------------------------------------------------------------

ITEMS = [
    {"role": "user", "content": "What's the weather in Tokyo?"},
    {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Need the weather tool."}]},
    {"type": "function_call", "call_id": "call_K", "name": "get_weather", "arguments": "{\"city\":\"Tokyo\"}", "id": "fc_1", "status": "completed"},
    {"type": "function_call_output", "call_id": "call_K", "output": "The weather in Tokyo is sunny."},
    {"type": "message", "role": "assistant", "id": "msg_2", "content": [{"type": "output_text", "text": "It is sunny in Tokyo.", "annotations": []}]},
]


def test_responses_item_list() -> None:
    trace = load_trace(ITEMS)
    assert trace.source.format == "openai_responses"
    assert [(s.kind, s.role) for s in trace.steps] == [("message", "user"), ("message", "assistant"), ("tool_result", "tool"), ("message", "assistant")]
    # reasoning and the call of one model turn are one step
    assert trace.steps[1].content.startswith("<thinking>\nNeed the weather tool.")
    assert trace.steps[1].tool_calls[0].arguments == {"city": "Tokyo"}
    assert_paired(trace, 1)
    assert trace.task == "What's the weather in Tokyo?"
    assert trace.final_output == "It is sunny in Tokyo."


def test_responses_request_and_response_object() -> None:
    request = {"model": "gpt-4.1", "instructions": "You are a helpful agent.", "input": ITEMS[:1]}
    assert load_trace(request).steps[0].content == "You are a helpful agent."
    response = {
        "id": "resp_1", "object": "response", "model": "gpt-4.1-2025-04-14", "status": "completed", "error": None,
        "output": [ITEMS[2]], "usage": {"input_tokens": 55, "output_tokens": 15, "total_tokens": 70},
    }
    trace = load_trace({"request": request, "response": response})
    assert trace.source.format == "openai_responses"
    assert trace.trace_id == "resp_1"
    assert [s.kind for s in trace.steps] == ["system", "message", "llm"]
    assert trace.steps[-1].tool_calls[0].id == "call_K"
    assert trace.usage.input_tokens == 55 and trace.status == "ok"


# --- Anthropic Messages -------------------------------------------------------------------------


def test_anthropic_tools_history_request(anthropic_dir: Path) -> None:
    trace = load_trace(anthropic_dir / "tools_history_request_body.json")
    assert (trace.source.format, trace.source.variant) == ("anthropic_messages", "request")
    assert [(s.kind, s.role) for s in trace.steps] == [("message", "user"), ("message", "assistant"), ("tool_result", "tool")]
    call = trace.steps[1].tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("call_1", "get_weather", {"location": "San Francisco, CA"})
    # the tool_result block came in a *user* message: it is a tool step answering the assistant
    result = trace.steps[2]
    assert (result.agent, result.recipient, result.tool_results[0].output) == ("tool", "assistant", "Sunny and 65 degrees Fahrenheit")
    assert_paired(trace, 1)
    assert trace.task == "What is the weather and current time in San Francisco?"
    assert [t["name"] for t in trace.metadata["requests"][0]["tools"]] == ["get_weather", "get_time"]


def test_anthropic_tools_history_response(anthropic_dir: Path) -> None:
    trace = load_trace(anthropic_dir / "tools_history_response_body.json")
    assert (trace.source.format, trace.source.variant) == ("anthropic_messages", "response")
    step = trace.steps[0]
    assert (step.kind, step.model) == ("llm", "claude-3-5-haiku-20241022")
    assert [(c.id, c.name, c.arguments) for c in step.tool_calls] == [("toolu_01K5KhMEdg2McN7dAkB4Y4hi", "get_time", {"timezone": "America/Los_Angeles"})]
    assert step.attributes["stop_reason"] == "tool_use"
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (568, 58)
    assert trace.final_output is None
    assert trace.trace_id == "msg_01QJDheQSo4hSrxgtLpEJFkA"


def test_anthropic_thinking_bodies(anthropic_dir: Path) -> None:
    request = load_trace(anthropic_dir / "thinking_request_body.json")
    assert request.source.format == "anthropic_messages"
    assert [s.content for s in request.steps] == ["How many times does the letter 'r' appear in the word strawberry?"]
    response = load_trace(anthropic_dir / "thinking_response_body.json")
    step = response.steps[0]
    assert step.content.startswith("<thinking>\nLet me count the number of times")
    assert "</thinking>\n\nThe letter 'r' appears 3 times" in step.content
    assert response.final_output == "The letter 'r' appears 3 times in the word \"strawberry\"."
    assert response.usage.output_tokens == 215


def test_anthropic_cassette_tools_history(anthropic_dir: Path) -> None:
    trace = load_trace(anthropic_dir / "test_anthropic_tools_history.vcr.yaml")
    assert (trace.source.format, trace.source.variant) == ("anthropic_messages", "vcr_cassette")
    assert [(s.kind, s.role) for s in trace.steps] == [("message", "user"), ("message", "assistant"), ("tool_result", "tool"), ("llm", "assistant")]
    # the gzip-compressed response body was decoded
    assert trace.steps[-1].tool_calls[0].name == "get_time"
    assert trace.steps[-1].tool_calls[0].id == "toolu_01K5KhMEdg2McN7dAkB4Y4hi"
    assert trace.steps[2].tool_results[0].call_id == "call_1"
    assert trace.agents[0].model == "claude-3-5-haiku-20241022"
    assert trace.usage.input_tokens == 568
    assert trace.metadata["requests"][0]["uri"] == "https://api.anthropic.com/v1/messages"


def test_anthropic_cassette_thinking(anthropic_dir: Path) -> None:
    trace = load_trace(anthropic_dir / "test_anthropic_thinking.vcr.yaml")
    assert [(s.kind, s.role) for s in trace.steps] == [("message", "user"), ("llm", "assistant")]
    assert trace.steps[1].content.startswith("<thinking>")
    assert trace.final_output == "The letter 'r' appears 3 times in the word \"strawberry\"."
    assert trace.status == "ok"


def _interaction(request: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    return {
        "request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages", "body": json.dumps(request)},
        "response": {"status": {"code": 200, "message": "OK"}, "body": {"string": gzip.compress(json.dumps(response).encode())}},
    }


def test_cassette_history_is_not_repeated(tmp_path: Path) -> None:
    user = {"role": "user", "content": "Add 2 and 3, then double it."}
    call_1 = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "add", "input": {"a": 2, "b": 3}}]}
    result_1 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "5"}]}
    call_2 = {"role": "assistant", "content": [{"type": "text", "text": "Now doubling."}, {"type": "tool_use", "id": "t2", "name": "mul", "input": {"a": 5, "b": 2}}]}
    result_2 = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": [{"type": "text", "text": "10"}]}]}
    answer = {"id": "m3", "type": "message", "role": "assistant", "model": "claude-x", "content": [{"type": "text", "text": "The answer is 10."}], "usage": {"input_tokens": 30, "output_tokens": 6}}
    base = {"model": "claude-x", "max_tokens": 100, "system": "You are Calc."}
    cassette = {
        "interactions": [
            _interaction({**base, "messages": [user]}, {"type": "message", "role": "assistant", "model": "claude-x", **call_1, "usage": {"input_tokens": 10, "output_tokens": 5}}),
            _interaction({**base, "messages": [user, call_1, result_1]}, {"type": "message", "role": "assistant", "model": "claude-x", **call_2, "usage": {"input_tokens": 20, "output_tokens": 5}}),
            _interaction({**base, "messages": [user, call_1, result_1, call_2, result_2]}, answer),
        ],
        "version": 1,
    }
    path = tmp_path / "calc.yaml"
    path.write_text(yaml.safe_dump(cassette), encoding="utf-8")
    trace = load_trace(path)
    assert trace.source.format == "anthropic_messages"
    assert [(s.kind, s.agent) for s in trace.steps] == [
        ("system", "system"), ("message", "user"), ("llm", "Calc"), ("tool_result", "tool"), ("llm", "Calc"), ("tool_result", "tool"), ("llm", "Calc")
    ]
    assert_paired(trace, 2)
    assert_no_repeats(trace)
    assert trace.final_output == "The answer is 10."
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (60, 16)


def test_cassette_streamed_response(tmp_path: Path) -> None:
    events = [
        {"type": "message_start", "message": {"id": "m1", "type": "message", "role": "assistant", "model": "claude-x", "content": [], "usage": {"input_tokens": 9}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me "}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "look."}},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t9", "name": "search", "input": {}}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"q\": \"mast"}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "\"}"}},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 12}},
    ]
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    cassette = {"interactions": [{
        "request": {"method": "POST", "uri": "https://api.anthropic.com/v1/messages", "body": json.dumps({"model": "claude-x", "max_tokens": 10, "stream": True, "messages": [{"role": "user", "content": "find mast"}]})},
        "response": {"status": {"code": 200}, "body": {"string": body}},
    }]}
    path = tmp_path / "stream.yml"
    path.write_text(yaml.safe_dump(cassette), encoding="utf-8")
    trace = load_trace(path)
    last = trace.steps[-1]
    assert last.content == "Let me look."
    assert [(c.id, c.name, c.arguments) for c in last.tool_calls] == [("t9", "search", {"q": "mast"})]
    assert trace.usage.output_tokens == 12


def test_openai_cassettes_are_not_anthropic() -> None:
    for path in sorted((TRACES / "crewai").glob("*.yaml")):
        assert detect_format(path)[0].name != "anthropic_messages"


def test_every_chat_sample_reads(chat_dir: Path, anthropic_dir: Path) -> None:
    files = sorted(chat_dir.glob("*.json")) + sorted(anthropic_dir.glob("*.json")) + sorted(anthropic_dir.glob("*.yaml"))
    assert len(files) == 8
    for path in files:
        (trace,) = load_traces(path)
        assert trace.source.format in ("openai_chat", "anthropic_messages")
        assert trace.steps and all(s.index == i for i, s in enumerate(trace.steps))
        assert trace.to_transcript().text.startswith("[S0]")


def test_tool_calls_that_are_not_a_list_are_kept_and_noted() -> None:
    # Found by fuzzing: `"tool_calls": true` made the reader iterate a bool.
    trace = load_trace([
        {"role": "user", "content": "restart the web pod"},
        {"role": "assistant", "content": "restarting it now", "tool_calls": True},
    ])
    assert trace.source.format == "openai_chat"
    assert [s.content for s in trace.steps] == ["restart the web pod", "restarting it now"]
    assert trace.steps[1].tool_calls == [] and trace.steps[1].attributes["tool_calls"] is True
    assert trace.warnings == ["a message's tool_calls is a bool, not a list: kept in the step's attributes"]
    langchain = load_trace([
        {"role": "user", "content": "restart the web pod"},
        {"type": "ai", "content": "done", "tool_calls": 7},
    ], format="openai_chat")
    assert langchain.steps[1].content == "done" and langchain.steps[1].attributes["tool_calls"] == 7
    assert langchain.warnings == ["a message's tool_calls is a int, not a list: kept in the step's attributes"]


def test_a_type_that_is_a_list_is_no_dialect_marker() -> None:
    # Found by fuzzing: a list in "type" could not be looked up in the sets of dialect types.
    trace = load_trace([
        {"role": "user", "content": "check the disk", "type": ["note"]},
        {"role": "assistant", "content": [{"type": ["text"], "text": "disk is 91% full"}]},
    ], format="openai_chat")
    assert [s.content for s in trace.steps] == ["check the disk", "disk is 91% full"]
    assert trace.steps[0].attributes["type"] == ["note"]
    parts = load_trace([
        {"role": "user", "content": [{"type": ["text"], "text": "check the disk"}]},
        {"role": "assistant", "content": "disk is 91% full"},
    ])
    assert parts.source.format == "openai_chat" and parts.steps[0].content == "check the disk"


def test_task_is_the_whole_first_user_turn_when_it_is_sent_as_several_messages() -> None:
    messages = [{"role": "system", "content": "You are a researcher."}, {"role": "user", "content": "Be helpful!"},
                {"role": "user", "content": "Search the web for 'example' and summarize."},
                {"role": "assistant", "content": "Done."}, {"role": "user", "content": "Thanks"}]
    trace = load_trace({"messages": messages}, format="openai_chat")
    assert trace.task == "Be helpful!\n\nSearch the web for 'example' and summarize."


def test_a_delegated_coworkers_reply_is_the_final_output_when_the_manager_says_nothing_after_it() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "delegate_work_to_coworker",
                                                         "arguments": json.dumps({"task": "write", "coworker": "Writer"})}}
    messages = [{"role": "user", "content": "Write a paragraph"}, {"role": "assistant", "content": None, "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "Agents are changing software."},
                {"role": "user", "content": "Analyze the tool result."}]
    trace = load_trace({"messages": messages}, format="openai_chat")
    assert trace.final_output == "Agents are changing software."
    assert "Writer" in {a.name for a in trace.agents}
