"""AutoGen / AG2 records: AgentEval chats, the autogen-ext replay session, autogen-core messages,
AG2 histories and console transcripts.

The real samples are in tests/data/traces/autogen_ag2_chat and autogen_core_llm_messages. Console
transcripts have no real sample there; the two below are written after what AG2's chat printing and
AgentChat's ``Console`` output look like.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _data import TRACES
from _trace_facts import assert_labels_hidden, check_golden, speakers, unpaired

from mast.normalize import detect_format, formats, load_trace
from mast.normalize.base import RawInput
from mast.trace import Trace

AGENTEVAL = {
    "agenteval_sample_math_response_successful.json": (2, True, "226"),
    "agenteval_sample_math_response_failed.json": (4, False, "(-\\infty, -14)\\cup(-3,\\infty)"),
    "agenteval_prealgebra_0.json": (6, True, "-89"),
    "agenteval_prealgebra_15.json": (8, False, "1\\frac{1}{10}"),
    "agenteval_prealgebra_19.json": (32, False, "m+2"),
}

GROUP_CHAT = """Admin (to chat_manager):

Plan a two-day trip to Kyoto and list the costs.

--------------------------------------------------------------------------------

Next speaker: Planner

Planner (to chat_manager):

Day 1: temples. Day 2: markets. Engineer, please total the costs.

--------------------------------------------------------------------------------

Next speaker: Engineer

Engineer (to chat_manager):

```python
print(120 + 80)
```

--------------------------------------------------------------------------------

>>>>>>>> EXECUTING CODE BLOCK 0 (inferred language is python)...
Executor (to chat_manager):

exitcode: 0 (execution succeeded)
Code output: 200

--------------------------------------------------------------------------------
"""

AGENTCHAT = """---------- TextMessage (user) ----------
What is the weather in Paris?
---------- ToolCallRequestEvent (weather_agent) ----------
[FunctionCall(id='call_9', arguments='{"city": "Paris"}', name='get_weather')]
---------- ToolCallExecutionEvent (weather_agent) ----------
[FunctionExecutionResult(content='Sunny, 21 C', name='get_weather', call_id='call_9', is_error=False)]
---------- HandoffMessage (weather_agent) ----------
Transferred to travel_agent, adopting the role of travel_agent immediately.
---------- TextMessage (travel_agent) ----------
Paris is sunny at 21 C; pack light.
"""


@pytest.fixture(scope="module")
def chats() -> Path:
    return TRACES / "autogen_ag2_chat"


@pytest.mark.parametrize("name", sorted(AGENTEVAL))
def test_agenteval_chats(chats: Path, name: str) -> None:
    path = chats / name
    record = json.loads(path.read_text(encoding="utf-8"))
    fmt, confidence = detect_format(path)
    assert (fmt.name, confidence) == ("autogen", 0.95)
    trace = load_trace(path)
    count, correct, answer = AGENTEVAL[name]
    assert trace.source.variant == "agenteval" and trace.framework == "autogen"
    assert len(trace.steps) == count and speakers(trace) == ["user_proxy", "assistant"] * (count // 2)
    assert [s.content for s in trace.steps] == [m["content"] for m in record["messages"]]
    assert [s.recipient for s in trace.steps[:2]] == ["assistant", "user_proxy"]
    assert trace.task == record["problem"] and trace.steps[0].content.startswith(record["problem"][:30])
    # The stated answer, else (stated empty) the last agent message: the run's last words.
    last = next(m["content"] for m in reversed(record["messages"]) if m["role"] == "assistant" and m["content"])
    assert trace.final_output == (record["response_with_ans"] or last)
    assert trace.labels["is_correct"] is correct and trace.labels["correct_ans"] == answer
    assert trace.metadata["problem_id"] == record["problem_id"] and trace.metadata["level"] == "Level 5"
    assert any("no speaker names" in w for w in trace.warnings)
    assert_labels_hidden(trace, record["check_result"][:40], record["solution"][:40])


def test_agenteval_loop_keeps_every_empty_turn(chats: Path) -> None:
    record = json.loads((chats / "agenteval_prealgebra_19.json").read_text(encoding="utf-8"))
    trace = load_trace(chats / "agenteval_prealgebra_19.json")
    empty = [s.index for s in trace.steps if not s.content]
    # The repeated empty exchange is the failure: all 28 empty turns stay, at their positions.
    assert empty == [i for i, m in enumerate(record["messages"]) if not m["content"]] and len(empty) == 28
    assert trace.final_output is not None and trace.final_output.startswith("My apologies")  # the last agent words before the empty loop


def test_replay_session(chats: Path) -> None:
    path = chats / "autogen_ext_replay_session_demonstration.json"
    calls = json.loads(path.read_text(encoding="utf-8"))
    trace = load_trace(path)
    assert trace.source.variant == "replay_session"
    llm = [s for s in trace.steps if s.kind == "llm"]
    assert len(llm) == len(calls) == 12
    assert [s.content for s in llm] == [c["response"]["content"] for c in calls]
    assert all(s.agent == "Assistant" for s in llm)  # named after the source later calls give the replies
    # Each call re-sends its history: no message appears twice, and each distinct system prompt once.
    systems = [s.content for s in trace.steps if s.kind == "system"]
    assert len(systems) == len(set(systems)) == len({m["content"] for c in calls for m in c["messages"] if m["type"] == "SystemMessage"})
    texts = [(s.kind, s.content) for s in trace.steps if s.kind != "llm"]
    assert len(texts) == len(set(texts))
    assert llm[0].usage is not None and (llm[0].usage.input_tokens, llm[0].usage.output_tokens) == (252, 335)
    assert trace.usage is not None and trace.usage.input_tokens == sum(c["response"]["usage"]["prompt_tokens"] for c in calls)
    assert llm[0].attributes["finish_reason"] == "stop" and llm[0].attributes["cached"] is False
    assert trace.task is not None and trace.task.startswith("You are a telecommunications engineer")
    check_golden(trace, "autogen_replay_session")


def test_autogen_core_handoff() -> None:
    path = TRACES / "autogen_core_llm_messages/history-wile_e_coyote_1.json"
    assert detect_format(path)[0].name == "autogen_core"
    trace = load_trace(path)
    assert [(s.kind, s.agent, s.recipient) for s in trace.steps] == [
        ("message", "User", None), ("message", "TriageAgent", None), ("message", "User", None),
        ("handoff", "TriageAgent", "IssuesAndRepairsAgent"), ("tool_result", None, None), ("message", "IssuesAndRepairsAgent", None),
    ]
    call = trace.steps[3].tool_calls[0]
    assert (call.id, call.name, call.arguments) == ("call_iRnHdOjAk80LBNwPxMdxwwqM", "transfer_to_issues_and_repairs", {})
    assert trace.steps[4].tool_results[0].call_id == call.id and unpaired(trace) == (set(), set())
    assert [a.name for a in trace.agents] == ["TriageAgent", "IssuesAndRepairsAgent"]
    assert trace.task == "Hi, I bought a rocket-powered unicycle and it exploded."


def test_agentchat_task_result_messages() -> None:
    result = {"messages": [
        {"type": "TextMessage", "source": "user", "content": "Book a table", "models_usage": None, "created_at": "2025-05-01T10:00:00Z"},
        {"type": "ToolCallRequestEvent", "source": "host", "content": [{"id": "c1", "name": "book", "arguments": '{"n": 2}'}],
         "models_usage": {"prompt_tokens": 50, "completion_tokens": 9}},
        {"type": "ModelClientStreamingChunkEvent", "source": "host", "content": "Boo"},
        {"type": "ToolCallExecutionEvent", "source": "host", "content": [{"call_id": "c1", "name": "book", "content": "full", "is_error": True}]},
        {"type": "HandoffMessage", "source": "host", "target": "manager", "content": "Over to you"},
        {"type": "TextMessage", "source": "manager", "content": "Sorry, we are full."},
    ], "stop_reason": "done"}
    trace = load_trace(result)
    assert trace.source.format == "autogen_core" and trace.source.variant == "agentchat"
    assert [(s.kind, s.agent, s.recipient) for s in trace.steps] == [
        ("message", "user", None), ("tool_call", "host", None), ("tool_result", "host", None),
        ("handoff", "host", "manager"), ("message", "manager", None),
    ]
    assert trace.steps[2].tool_results[0].is_error and trace.steps[1].usage is not None
    assert trace.steps[0].started_at is not None and trace.metadata["streaming_chunks_skipped"] == 1
    assert trace.final_output == "Sorry, we are full." and trace.metadata["stop_reason"] == "done"


def test_ag2_histories_with_names() -> None:
    history = [
        {"content": "Add 2 and 3.", "role": "user", "name": "user_proxy"},
        {"content": None, "role": "assistant", "name": "calc", "tool_calls": [{"id": "t1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}]},
        {"content": "5", "role": "user", "name": "user_proxy", "tool_responses": [{"tool_call_id": "t1", "role": "tool", "content": "5"}]},
    ]
    trace = load_trace(history)
    assert trace.source.format == "autogen" and trace.framework == "ag2"
    assert speakers(trace) == ["user_proxy", "calc", "user_proxy"] and unpaired(trace) == (set(), set())
    assert trace.steps[1].kind == "tool_call" and trace.steps[2].tool_results[0].output == "5"
    chat = load_trace({"chat_id": 3, "chat_history": history, "summary": "The sum is 5.", "cost": {"usage_including_cached_inference": {}}})
    assert chat.source.variant == "chat_result" and chat.final_output == "The sum is 5." and chat.metadata["chat_id"] == 3
    payload = load_trace({"problem_statement": ["Add 2 and 3."], "trajectory": history, "note": {"text": ["fine"]}})
    assert payload.source.variant == "ag2_trajectory" and payload.task == "Add 2 and 3." and payload.labels == {"note": {"text": ["fine"]}}


def test_plain_chat_lists_are_left_to_openai_chat() -> None:
    named = [{"role": "user", "name": "a", "content": "x"}, {"role": "assistant", "name": "b", "content": "y"}]
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    autogen = next(f for f in formats() if f.name == "autogen")
    assert autogen.detect(RawInput.from_object(plain)) == 0.0
    assert autogen.detect(RawInput.from_object(named)) < 0.5  # a named chat list is OpenAI-shaped too
    assert detect_format(named)[0].name != "autogen"


def test_ag2_console_group_chat(tmp_path: Path) -> None:
    path = tmp_path / "groupchat.log"
    path.write_text(GROUP_CHAT, encoding="utf-8")
    assert detect_format(path)[0].name == "autogen_console"
    trace = load_trace(path)
    assert trace.source.variant == "ag2_console" and trace.task == "Plan a two-day trip to Kyoto and list the costs."
    assert speakers(trace) == ["Admin", "Planner", "Engineer", "Executor"]
    assert {s.recipient for s in trace.steps} == {"chat_manager"}
    assert trace.steps[1].attributes["notices"] == ["Next speaker: Planner"]
    assert trace.steps[3].attributes["notices"] == [">>>>>>>> EXECUTING CODE BLOCK 0 (inferred language is python)..."]
    assert trace.steps[3].content == "exitcode: 0 (execution succeeded)\nCode output: 200"


def test_agentchat_console(tmp_path: Path) -> None:
    path = tmp_path / "console.txt"
    path.write_text(AGENTCHAT, encoding="utf-8")
    assert detect_format(path)[0].name == "autogen_console"
    trace = load_trace(path)
    assert [(s.kind, s.agent, s.recipient) for s in trace.steps] == [
        ("message", "user", None), ("tool_call", "weather_agent", None), ("tool_result", "weather_agent", None),
        ("handoff", "weather_agent", "travel_agent"), ("message", "travel_agent", None),
    ]
    assert trace.steps[1].tool_calls[0].arguments == {"city": "Paris"} and unpaired(trace) == (set(), set())
    assert trace.task == "What is the weather in Paris?"


def test_prose_with_colons_stays_plain_text(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("Alice: hello there\n\nBob (to Alice): hi\n\nnothing else", encoding="utf-8")
    assert detect_format(path)[0].name == "plain_text"


def test_labels_of_in_memory_traces_round_trip(chats: Path) -> None:
    trace = load_trace(json.loads((chats / "agenteval_prealgebra_0.json").read_text(encoding="utf-8")))
    assert isinstance(trace, Trace) and trace.source.path is None
    assert Trace.model_validate_json(trace.to_json()) == trace


def test_replay_session_task_is_the_request_asked_plainly_not_the_memory_prompt_quoting_it() -> None:
    question = "Can I publish my extension agent as a new package?"
    def call(content: object, reply: str) -> dict[str, object]:
        return {"mode": "create", "messages": [{"type": "SystemMessage", "content": "You are helpful."},
                                               {"type": "UserMessage", "content": content, "source": "User"}],
                "response": {"content": reply, "finish_reason": "stop", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}}
    calls = [call(["Does the following text contain useful advice?", "\n# Text to analyze", question], "None"),
             call(question, "Publish it in its own repository."),
             call(["Decide whether the answer is correct.", question, "Publish it in its own repository."], "1")]
    trace = load_trace(calls, format="autogen")
    assert trace.task == question
    assert trace.final_output == "Publish it in its own repository."
