"""Observability platforms: Langfuse trace exports (12 real frameworks) with Langfuse's own ChatML renderings as oracles, and LangSmith runs.

The three ``*.chatml.expected.json`` files are what Langfuse itself renders for the messages of
each observation. For every observation they list, those messages must appear in our steps in the
same order (roles, text, tool-call ids), each exactly once.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from _data import TRACES
from _normalize_checks import (
    assert_no_repeats,
    assert_paired,
    check_golden,
    is_subsequence,
    oracle_view,
    step_view,
    unpaired,
)

from mast.errors import TraceFormatError
from mast.normalize import detect_format, iter_traces, load_trace, load_traces
from mast.trace import Trace


@pytest.fixture(scope="module")
def langfuse_dir() -> Path:
    return TRACES / "langfuse_trace_export"


@pytest.fixture(scope="module")
def langsmith_dir() -> Path:
    return TRACES / "langsmith_runs"


def langfuse(langfuse_dir: Path, stem: str) -> Trace:
    path = langfuse_dir / f"{stem}.trace.json"
    trace = load_trace(path)
    assert (trace.source.format, trace.source.confidence) == ("langfuse", pytest.approx(0.95))
    assert trace.trace_id == json.loads(path.read_text(encoding="utf-8"))["trace"]["id"]
    assert_no_repeats(trace)
    return trace


def shape(trace: Trace) -> list[tuple[str, str | None]]:
    return [(s.kind, s.agent) for s in trace.steps]


# --- Langfuse exports, one real framework each ----------------------------------------------------


def test_langfuse_openai_agents(langfuse_dir: Path) -> None:
    trace = langfuse(langfuse_dir, "openai-agents-2025-09-30")
    assert trace.framework == "openai-agents"
    assert [(a.name, a.model) for a in trace.agents] == [("Hello world", "gpt-4.1-2025-04-14")]
    assert shape(trace) == [("system", "system"), ("message", "user"), ("llm", "Hello world"), ("tool_result", "tool"), ("llm", "Hello world")]
    # the tool span has no call id: it is paired with the call the model made, by tool name
    assert_paired(trace, 1)
    assert trace.steps[3].tool_results[0].call_id == "call_Kud0j0DxWSmLzv9W5m6qVqXn"
    assert trace.task == "What's the weather in Tokyo?"
    assert trace.final_output.startswith("The weather in Tokyo is currently sunny.")
    assert (trace.usage.input_tokens, trace.usage.output_tokens) == (140, 44)
    check_golden(trace, "normalize_langfuse_openai_agents")


def test_langfuse_crewai(langfuse_dir: Path) -> None:
    trace = langfuse(langfuse_dir, "crewai-2025-07-11")
    assert trace.framework == "crewai"
    # the agent is named by CrewAI's prompt ("You are Software developer."), not by the span "Task._execute_core"
    assert [(a.name, a.model) for a in trace.agents] == [("Software developer", "gpt-4o-mini")]
    assert shape(trace) == [("system", "system"), ("message", "user"), ("llm", "Software developer")]
    assert trace.task.startswith("Current Task: Define the HTML for making a simple website")
    assert trace.final_output.startswith("```html\n<!DOCTYPE html>")  # Crew.kickoff's raw output
    assert trace.metadata["scores"][0]["name"] == "toxicity"  # Langfuse evaluations: metadata, not labels
    assert trace.labels == {}
    names = {s["name"] for s in trace.metadata["unrendered_spans"]}
    assert {"Crew Created", "Task Created"} <= names


def test_langfuse_langgraph_python(langfuse_dir: Path) -> None:
    trace = langfuse(langfuse_dir, "langgraph-python-2025-08-22")
    assert trace.framework == "langgraph"
    assert [(a.name, a.model) for a in trace.agents] == [("agent", "gpt-4o-2024-08-06")]
    assert shape(trace) == [("message", "user"), ("message", "user"), ("llm", "agent"), ("tool_result", "tool"), ("llm", "agent")]
    assert [s.content for s in trace.steps[:2]] == ["Be helpful!", "Search the web for 'example' and summarize."]
    assert_paired(trace, 1)
    assert trace.task == "Search the web for 'example' and summarize."  # the graph's input, not the node's prompt
    assert trace.final_output.startswith('The search for "example" primarily leads to the website')


def test_langfuse_langgraph_js(langfuse_dir: Path) -> None:
    trace = langfuse(langfuse_dir, "langgraph-js-2025-10-30")
    assert trace.framework == "langgraph"
    assert [a.name for a in trace.agents] == ["model_request"]  # "__start__" routes, it is not an agent
    assert [s.kind for s in trace.steps] == ["message", "llm", "tool_result", "llm"]
    assert_paired(trace, 1)
    assert trace.steps[2].tool_results[0].output == "It's always sunny in San Francisco!"
    assert trace.final_output.startswith("It's always sunny in San Francisco!")


def test_langfuse_pydantic_ai_two_agents(langfuse_dir: Path) -> None:
    trace = langfuse(langfuse_dir, "pydantic-ai-tools-2025-12-04")
    assert trace.framework == "pydantic-ai"
    assert [a.name for a in trace.agents] == ["joke_agent", "evaluator_agent"]
    assert len(trace.steps) == 13
    assert_paired(trace, 4)
    assert [c.name for c in trace.steps[2].tool_calls] == ["get_pun_suggestion", "get_dad_joke_suggestion", "get_one_liner_suggestion"]
    handover = trace.steps[10]
    assert (handover.agent, handover.recipient) == ("user", "evaluator_agent")
    assert handover.content.startswith("Rate this joke:")
    assert trace.final_output == "Why do programmers hate nature?  \nIt has too many bugs!"


def test_langfuse_microsoft_agent_framework(langfuse_dir: Path) -> None:
    trace = langfuse(langfuse_dir, "microsoft-agent-2025-12-17")
    agent = "171105b7-59dd-49c0-9677-0b95395aa46a"
    assert trace.framework == "microsoft-agent-framework"
    # the system prompt lives only on the agent span, not on the chat spans under it
    assert shape(trace) == [("system", "system"), ("message", "user"), ("llm", agent), ("tool_result", "tool"), ("llm", agent)]
    assert trace.steps[0].content == "You are a helpful assistant."
    assert_paired(trace, 1)
    assert trace.final_output == "Current conditions in Tokyo, Japan: stormy, high around 23°C."


def test_langfuse_google_adk(langfuse_dir: Path) -> None:
    trace = langfuse(langfuse_dir, "google-adk-2025-08-28")
    assert trace.framework == "google-adk"
    assert [(a.name, a.model) for a in trace.agents] == [("hello_agent", "gemini-2.0-flash")]
    assert shape(trace) == [("system", "system"), ("message", "user"), ("llm", "hello_agent"), ("tool_result", "tool"), ("llm", "hello_agent")]
    # Gemini's function_call has no id: the tool span's id is given to it, so the pair is explicit
    assert_paired(trace, 1)
    assert trace.steps[2].tool_calls[0].id.startswith("adk-")
    assert trace.task == "hi" and trace.final_output == "Hello Langfuse 👋!\n"


def test_langfuse_agno(langfuse_dir: Path) -> None:
    trace = langfuse(langfuse_dir, "agno-2025-06-11")
    assert trace.framework == "agno"
    assert [(s.kind, s.role) for s in trace.steps] == [("system", "developer"), ("message", "user"), ("llm", "assistant"), ("tool_result", "tool"), ("llm", "assistant")]
    assert_paired(trace, 1)
    assert trace.steps[2].tool_calls[0].name == "duckduckgo_search"
    assert trace.task == "What is currently trending on Twitter?"
    assert trace.final_output.startswith("To find out what's currently trending on Twitter")


def test_langfuse_claude_agent_sdk(langfuse_dir: Path) -> None:
    trace = langfuse(langfuse_dir, "claude-agent-2025-12-22")
    assert trace.framework == "claude-agent-sdk"
    assert trace.steps[0].content == "You are a friendly travel assistant who helps with weather information."
    assert [s.kind for s in trace.steps] == ["system", "message", "llm", "llm", "llm", "tool_result", "tool_result", "llm"]
    assert_paired(trace, 2)
    assert [r.output for s in trace.steps for r in s.tool_results] == ["Weather in Berlin: Cloudy, 59°F", "Weather in New York: Sunny, 75°F"]
    assert trace.final_output.startswith("Great! Here's the current weather for both cities")


@pytest.mark.parametrize(
    ("stem", "framework", "kinds", "task", "final"),
    [
        ("autogen-2025-06-06", None, ["system", "message", "llm"], "Say 'Hello World!'", "Hello World!"),
        ("llamaindex-2025-06-05", "llamaindex", ["message", "llm"], "What is Langfuse?", "Langfuse is a tool designed to help developers"),
        ("vercel-aisdk-2025-11-17", "vercel-ai", ["message", "llm", "tool_result"], "What is the weather like today in San Francisco?", None),
    ],
)
def test_langfuse_small_exports(langfuse_dir: Path, stem: str, framework: str | None, kinds: list[str], task: str, final: str | None) -> None:
    trace = langfuse(langfuse_dir, stem)
    assert trace.framework == framework
    assert [s.kind for s in trace.steps] == kinds
    assert trace.task == task
    if final:
        assert trace.final_output.startswith(final)
    if stem.startswith("vercel"):
        assert_paired(trace, 1)
        assert trace.steps[1].tool_calls[0].id == "call_DgKARp7a7IhJPDczfifMp6Ra"


def test_every_langfuse_export_reads(langfuse_dir: Path) -> None:
    paths = sorted(langfuse_dir.glob("*.trace.json"))
    assert len(paths) == 12
    for path in paths:
        assert detect_format(path)[0].name == "langfuse"
        trace = load_trace(path)
        assert trace.steps and trace.task and trace.agents
        assert unpaired(trace) == (set(), set()), path.name
        assert all(s.started_at is not None for s in trace.steps if s.kind == "llm")


# --- Langfuse's own renderings as oracles ---------------------------------------------------------

ORACLES = ["crewai-2025-07-11", "langgraph-python-2025-08-22", "openai-agents-2025-09-30"]


@pytest.mark.parametrize("stem", ORACLES)
def test_langfuse_chatml_oracle(langfuse_dir: Path, stem: str) -> None:
    oracle = json.loads((langfuse_dir / f"{stem}.chatml.expected.json").read_text(encoding="utf-8"))
    export = json.loads((langfuse_dir / f"{stem}.trace.json").read_text(encoding="utf-8"))
    assert set(oracle) <= {o["id"] for o in export["observations"]}
    ours = step_view(load_trace(langfuse_dir / f"{stem}.trace.json"))
    listed = 0
    for obs_id, entry in oracle.items():
        for side in ("input", "output"):
            part = entry.get(side, {})
            if not part.get("success"):
                continue
            expected = oracle_view(part["data"])
            listed += len(expected)
            assert is_subsequence(expected, ours), f"{obs_id}.{side}: {expected} not in order in {ours}"
            for row in expected:
                assert ours.count(row) == 1, f"{row} appears {ours.count(row)} times"
    assert listed >= 2


@pytest.mark.parametrize("stem", ORACLES)
def test_langfuse_chatml_renderings_are_readable(langfuse_dir: Path, stem: str) -> None:
    path = langfuse_dir / f"{stem}.chatml.expected.json"
    assert detect_format(path)[0].name == "langfuse_chatml"
    rendering = load_trace(path)
    export = load_trace(langfuse_dir / f"{stem}.trace.json")
    # the rendering's messages are the export's messages, in the same order
    assert is_subsequence(step_view(rendering), step_view(export))
    assert rendering.warnings


def test_langfuse_chatml_openai_agents_steps(langfuse_dir: Path) -> None:
    trace = load_trace(langfuse_dir / "openai-agents-2025-09-30.chatml.expected.json")
    assert [(s.kind, s.role) for s in trace.steps] == [("message", "user"), ("message", "assistant"), ("tool_result", "tool"), ("message", "assistant")]
    assert_paired(trace, 1)
    assert "5b99c3e3411ed17b.input" in trace.metadata["unrendered"]


def test_langfuse_export_without_observations_fails() -> None:
    with pytest.raises(TraceFormatError, match="no observations"):
        load_trace({"trace": {"id": "t"}, "observations": []}, format="langfuse")


def test_langfuse_list_of_exports(langfuse_dir: Path) -> None:
    exports = [json.loads((langfuse_dir / f"{s}.trace.json").read_text(encoding="utf-8")) for s in ("autogen-2025-06-06", "llamaindex-2025-06-05")]
    items = list(iter_traces(exports + [{"trace": {}, "observations": "x"}], format="langfuse"))
    assert [i.task if isinstance(i, Trace) else "error" for i in items] == ["Say 'Hello World!'", "What is Langfuse?", "error"]


# --- LangSmith ------------------------------------------------------------------------------------


def test_langsmith_python_post_patch(langsmith_dir: Path) -> None:
    trace = load_trace(langsmith_dir / "py_wrap_openai_post_patch.json")
    assert (trace.source.format, trace.source.variant) == ("langsmith", "post_patch")
    assert trace.trace_id == "d0d84d31-923d-4cb5-94a8-40a0a0087578"
    assert [(s.kind, s.content) for s in trace.steps] == [("message", "howdy"), ("llm", "Howdy! How can I assist you today?")]
    assert trace.steps[1].model == "gpt-4o-mini-2024-07-18"
    assert (trace.usage.input_tokens, trace.usage.output_tokens, trace.usage.total_tokens) == (9, 9, 18)
    assert trace.started_at.isoformat() == "2024-10-11T20:58:23.298773+00:00"
    assert trace.ended_at.isoformat() == "2024-10-11T20:58:24.417106+00:00"
    assert trace.status == "ok" and trace.final_output == "Howdy! How can I assist you today?"
    assert trace.steps[1].attributes["extra"]["metadata"]["ls_provider"] == "openai"


def test_langsmith_js_post_patch_epoch_ms(langsmith_dir: Path) -> None:
    trace = load_trace(langsmith_dir / "js_wrap_openai_post_patch.json")
    assert trace.source.format == "langsmith"
    # the JS patch has no id: merged onto its post by dotted_order
    assert trace.final_output == "Howdy! How can I assist you today?"
    assert trace.started_at.isoformat() == "2024-10-13T07:05:37.170000+00:00"
    assert trace.ended_at.isoformat() == "2024-10-13T07:05:38.285000+00:00"
    assert trace.steps[1].attributes["extra"]["runtime"]["sdk"] == "langsmith-js"


def test_langsmith_reasoning_model(langsmith_dir: Path) -> None:
    trace = load_trace(langsmith_dir / "py_wrap_openai_reasoning_post_patch.json")
    assert trace.task.startswith("Write a bash script that takes a matrix represented as a string")
    assert trace.steps[-1].model == "o1-mini-2024-09-12"
    assert trace.usage.output_tokens == 2497
    assert "#!/bin/bash" in trace.final_output


def run(run_id: str, parent: str | None, name: str, run_type: str, second: int, inputs: dict[str, Any], outputs: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    return {
        "id": run_id, "trace_id": "root", "parent_run_id": parent, "name": name, "run_type": run_type,
        "start_time": f"2025-01-01T00:00:{second:02d}+00:00", "end_time": f"2025-01-01T00:00:{second + 1:02d}+00:00",
        "dotted_order": f"20250101T0000{second:02d}000000Z{run_id}", "inputs": inputs, "outputs": outputs, **extra,
    }


def graph_runs() -> list[dict[str, Any]]:
    human = {"type": "human", "content": "What is 6 times 7?"}
    ai_call = {"type": "ai", "content": "", "tool_calls": [{"name": "multiply", "args": {"a": 6, "b": 7}, "id": "tc1"}]}
    tool_msg = {"type": "tool", "content": "42", "tool_call_id": "tc1", "name": "multiply"}
    ai_done = {"type": "ai", "content": "6 times 7 is 42."}
    node = {"extra": {"metadata": {"langgraph_node": "calculator"}}}
    return [
        run("root", None, "LangGraph", "chain", 0, {"messages": [human]}, {"messages": [human, ai_call, tool_msg, ai_done]}),
        run("n1", "root", "calculator", "chain", 1, {"messages": [human]}, {"messages": [ai_call]}, **node),
        run("l1", "n1", "ChatOpenAI", "llm", 2, {"messages": [[human]]}, {"generations": [[{"text": "", "message": ai_call}]], "llm_output": {"token_usage": {"prompt_tokens": 10, "completion_tokens": 3}}}, **node),
        run("t1", "root", "multiply", "tool", 4, {"input": "{'a': 6, 'b': 7}"}, {"output": tool_msg}),
        run("n2", "root", "calculator", "chain", 6, {"messages": [human, ai_call, tool_msg]}, {"messages": [ai_done]}, **node),
        run("l2", "n2", "ChatOpenAI", "llm", 7, {"messages": [[human, ai_call, tool_msg]]}, {"generations": [[{"text": "6 times 7 is 42.", "message": ai_done}]]}, **node),
    ]


def test_langsmith_run_tree() -> None:
    runs = graph_runs()
    random.Random(3).shuffle(runs)
    trace = load_trace(runs)
    assert (trace.source.format, trace.source.variant, trace.trace_id) == ("langsmith", "runs", "root")
    assert [(s.kind, s.agent) for s in trace.steps] == [("message", "user"), ("llm", "calculator"), ("tool_result", "tool"), ("llm", "calculator")]
    assert_paired(trace, 1)
    assert_no_repeats(trace)
    assert trace.framework == "langgraph"
    assert [a.name for a in trace.agents] == ["calculator"]
    assert trace.final_output == "6 times 7 is 42."
    assert trace.usage.input_tokens == 10


def test_langsmith_nested_child_runs_and_errors() -> None:
    runs = graph_runs()
    by_id = {r["id"]: dict(r, child_runs=[]) for r in runs}
    for r in runs:
        if r["parent_run_id"]:
            by_id[r["parent_run_id"]]["child_runs"].append(by_id[r["id"]])
    root = by_id["root"]
    root["error"] = "GraphRecursionError: too many steps"
    trace = load_trace(root)
    assert [s.kind for s in trace.steps] == ["message", "llm", "tool_result", "llm", "error"]
    assert trace.status == "error" and trace.error.startswith("GraphRecursionError")


def test_langsmith_jsonl_of_runs(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in graph_runs()) + "\n", encoding="utf-8")
    (trace,) = load_traces(path)
    assert trace.source.format == "langsmith" and len(trace.steps) == 4


# --- damaged input ----------------------------------------------------------------------------------

SAMPLE_DIRS = ["openai_chat_messages", "anthropic_messages", "otlp_json", "span_attribute_dicts", "vercel_ai_sdk_spans",
               "langfuse_trace_export", "langsmith_runs"]


def _damage(value: Any, rng: random.Random) -> None:
    """Replace or drop random fields in place with values of the wrong type."""
    odd = [None, 5, "x", [], {}, [1, "a"], {"a": None}, True, "[1,", '{"role": 3}', '[{"role": "user"}]']
    if isinstance(value, dict):
        for key in list(value):
            roll = rng.random()
            if roll < 0.06:
                value[key] = rng.choice(odd)
            elif roll < 0.08:
                del value[key]
            else:
                _damage(value[key], rng)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if rng.random() < 0.06:
                value[index] = rng.choice(odd)
            else:
                _damage(item, rng)


def test_damaged_samples_give_traces_or_one_line_errors() -> None:
    """Wrong types anywhere in a real sample: a trace or a TraceFormatError, never another exception."""
    rng = random.Random(20260101)
    paths = [p for d in SAMPLE_DIRS for p in sorted((TRACES / d).glob("*.json"))]
    outcomes = {"trace": 0, "error": 0}
    for path in paths:
        original = json.loads(path.read_text(encoding="utf-8"))
        fmt = detect_format(path)[0].name
        for _ in range(12):
            damaged = json.loads(json.dumps(original))
            _damage(damaged, rng)
            try:
                for item in iter_traces(damaged, format=fmt):
                    if isinstance(item, TraceFormatError):
                        outcomes["error"] += 1
                    else:
                        item.to_transcript()
                        outcomes["trace"] += 1
            except TraceFormatError as exc:
                assert "\n" not in str(exc)
                outcomes["error"] += 1
    assert outcomes["trace"] > 100 and outcomes["error"] > 0


def test_every_sample_round_trips_through_json() -> None:
    """What ``mast normalize --json`` writes reads back as the same trace."""
    paths = [p for d in SAMPLE_DIRS for p in sorted((TRACES / d).iterdir()) if p.suffix in (".json", ".yaml")]
    assert len(paths) == 34
    for path in paths:
        for trace in load_traces(path):
            again = Trace.model_validate_json(trace.to_json())
            assert again == trace, path.name
            assert again.content_hash() == trace.content_hash()


def test_langfuse_chatml_answer_from_a_rendered_json_output_when_no_agent_message_answers() -> None:
    rendering = {
        "a": {"input": {"success": True, "data": [{"role": "user", "content": "Write a haiku"}]},
              "output": {"success": False, "error": {"name": "ZodError"}}},
        "b": {"output": {"success": True, "data": [{"json": {"raw": "Autumn moon rises", "tasks_output": []}}]}},
    }
    trace = load_trace(rendering, format="langfuse_chatml")
    assert trace.task == "Write a haiku"
    assert trace.final_output == "Autumn moon rises"
