"""Agent-framework normalisers on the real samples in tests/data/traces.

Codex CLI rollouts, SWE-agent ``.traj``, OpenHands events, smolagents memory, OpenAI Agents SDK state
and CrewAI cassettes: each file is detected as its format and the facts a judge depends on (who
acted, which tool call got which result, the task, the final output) are checked. Step skeletons of
three files are compared with goldens in ``tests/golden/`` (``MAST_UPDATE_GOLDEN=1`` rewrites them).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _data import TRACES
from _trace_facts import step_skeleton

from mast.errors import TraceFormatError
from mast.normalize import detect_format, iter_traces, load_trace, load_traces
from mast.normalize._readable import TERMINAL_TOOLS
from mast.normalize.base import RawInput
from mast.trace import Trace

GOLDEN = Path(__file__).parent / "golden"
MINE = ("codex_rollout", "swe_agent", "openhands", "smolagents", "openai_agents_sdk", "crewai")


def unpaired(trace: Trace) -> tuple[set[str], set[str]]:
    """Call ids without a result, and result ids without a call (a finish/submit call ends the run: it needs none)."""
    terminal = {c.id for s in trace.steps for c in s.tool_calls if c.id and c.name.lower() in TERMINAL_TOOLS}
    calls = {c.id for s in trace.steps for c in s.tool_calls if c.id} - terminal
    results = {r.call_id for s in trace.steps for r in s.tool_results if r.call_id} - terminal
    return calls - results, results - calls


def kinds(trace: Trace) -> Counter[str]:
    return Counter(s.kind for s in trace.steps)


def calls(trace: Trace) -> list[Any]:
    return [c for s in trace.steps for c in s.tool_calls]


def check_golden(trace: Trace, name: str) -> None:
    path = GOLDEN / f"{name}.steps.json"
    actual = {"task": (trace.task or "")[:120], "final_output": (trace.final_output or "")[:120],
              "agents": [a.name for a in trace.agents], "steps": step_skeleton(trace)}
    if os.environ.get("MAST_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(actual, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert path.is_file(), f"golden {path.name} missing; run with MAST_UPDATE_GOLDEN=1 once and review it"
    assert actual == json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def traces_dir() -> Path:
    return TRACES


def only(path: Path, fmt: str) -> Trace:
    chosen, confidence = detect_format(path)
    assert chosen.name == fmt
    assert confidence >= 0.9
    trace = load_trace(path)
    assert trace.source.format == fmt and trace.source.path == str(path)
    assert trace.labels == {} or fmt in ("openhands", "smolagents")
    return trace


# --- Codex CLI rollouts ---------------------------------------------------------------------------

CODEX = "codex_rollout"


def test_codex_small_real_run(traces_dir: Path) -> None:
    trace = only(traces_dir / CODEX / "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl", "codex_rollout")
    assert trace.trace_id == "019b7f94-51b4-7593-922e-ba12b5b73b52"
    assert trace.framework == "codex"
    assert [a.name for a in trace.agents] == ["codex"]
    assert trace.agents[0].model == "gpt-5-1-codex-2025-11-13"
    assert trace.agents[0].system_prompt and trace.agents[0].system_prompt.startswith("## Skills")
    # the task is what the user typed, not the injected AGENTS.md / environment context
    assert trace.task == "what is current repository about? summarize purpuse and explain goals"
    system = [s for s in trace.steps if s.kind == "system"]
    assert all(s.agent == "system" and s.attributes["injected_context"] for s in system)
    assert [s.content.split("\n", 1)[0] for s in system] == ["# AGENTS.md instructions for /Users/Nikita_Levyankov/repos/EPMCDME/codemie-ai/codemie-code", "<environment_context>"]
    # the user message is written as a response item and again as an event: one step
    assert [s.content for s in trace.steps if s.agent == "user" and s.kind == "message"] == [trace.task]
    assert [c.name for c in calls(trace)] == ["shell", "shell", "shell"]
    assert calls(trace)[0].arguments == {"command": ["bash", "-lc", "ls"], "workdir": "/Users/Nikita_Levyankov/repos/EPMCDME/codemie-ai/codemie-code"}
    assert unpaired(trace) == (set(), set())
    # the JSON-wrapped shell output is unwrapped to its text
    first = next(r for s in trace.steps for r in s.tool_results)
    assert first.output.startswith("_bmad\n_bmad-output\nassets")
    plans = [s for s in trace.steps if s.kind == "plan"]
    assert len(plans) == 1 and plans[0].content.startswith("**Clarifying documentation instructions**")
    assert trace.final_output is None  # the run stops before the agent answered
    assert trace.usage is not None and (trace.usage.input_tokens, trace.usage.output_tokens) == (22474, 300)
    assert trace.metadata["not_rendered"]["response_item:ghost_snapshot"] == 1
    assert trace.metadata["not_rendered"]["reasoning (encrypted, no summary)"] == 2
    assert len(trace.steps) == 10
    check_golden(trace, "codex_rollout_small")


def test_codex_hand_made_failure_fixture(traces_dir: Path) -> None:
    trace = only(traces_dir / CODEX / "rollout-2026-01-02T19-00-00-019b7f95-0000-7000-0000-000000000001.jsonl", "codex_rollout")
    assert kinds(trace) == Counter({"tool_call": 3, "tool_result": 3})
    results = [r for s in trace.steps for r in s.tool_results]
    assert [r.is_error for r in results] == [False, True, False]
    assert results[1].output == "cat: nonexistent.txt: No such file or directory\n"
    failed = next(s for s in trace.steps if s.tool_results and s.tool_results[0].is_error)
    assert failed.error == "exit code 1" and failed.attributes["exit_code"] == 1
    assert trace.task is None and trace.final_output is None
    assert unpaired(trace) == (set(), set())


def test_codex_line_whose_type_is_an_object_is_skipped_with_a_warning(traces_dir: Path, tmp_path: Path) -> None:
    # Found by fuzzing: an object in "type" could not be looked up in the set of line types.
    source = traces_dir / CODEX / "rollout-2026-01-02T19-00-00-019b7f95-0000-7000-0000-000000000001.jsonl"
    odd = tmp_path / "rollout.jsonl"
    lines = source.read_bytes().rstrip(b"\n").split(b"\n")
    odd.write_bytes(b"\n".join([*lines, b'{"type": {"kind": "event_msg"}, "payload": {}}']) + b"\n")
    expected = load_trace(source)
    trace = only(odd, "codex_rollout")
    assert [s.content for s in trace.steps] == [s.content for s in expected.steps]
    assert f"skipped line {len(lines) + 1}: not a rollout line (no type/payload)" in trace.warnings


def test_codex_large_tui_run(traces_dir: Path) -> None:
    trace = only(traces_dir / CODEX / "rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl", "codex_rollout")
    assert trace.agents[0].model == "gpt-5.5"
    assert trace.agents[0].system_prompt is not None and trace.agents[0].system_prompt.startswith("You are Codex")
    users = [s.content for s in trace.steps if s.kind == "message" and s.agent == "user"]
    assert users == ["show tools", "let's update the defailt context compart to 90 in env var"]
    assert trace.task == "show tools"
    names = Counter(c.name for c in calls(trace))
    assert names == Counter({"write_stdin": 54, "exec_command": 43, "apply_patch": 3, "web_search": 3, "update_plan": 2})
    assert unpaired(trace) == (set(), set())
    # agent_message events duplicate the assistant response items: 13 answers, not 26
    assert sum(1 for s in trace.steps if s.kind == "message" and s.agent == "codex") == 13
    # exec_command_end exit codes mark the four failed commands
    failed_commands = {s.tool_results[0].call_id for s in trace.steps if s.tool_results and s.tool_results[0].is_error and s.tool_results[0].name == "exec_command"}
    assert len(failed_commands) == 4
    patch = next(c for c in calls(trace) if c.name == "apply_patch")
    assert patch.arguments is None and patch.arguments_raw and patch.arguments_raw.startswith("*** Begin Patch")
    assert trace.final_output is not None and trace.final_output.startswith("Implemented the default context compaction setting")
    assert trace.status == "ok"
    assert trace.usage is not None and trace.usage.total_tokens == 6064954
    assert trace.metadata["session"]["cli_version"] == "0.125.0" and len(trace.metadata["turn_contexts"]) == 2


def test_codex_desktop_run_without_turn_context(traces_dir: Path) -> None:
    trace = only(traces_dir / CODEX / "rollout-2026-05-11T13-28-45-019e1695-0522-7c83-8b39-0dd379793f80.jsonl", "codex_rollout")
    assert trace.agents[0].model is None  # no turn_context lines: the model is unknown, not guessed
    users = [s for s in trace.steps if s.kind == "message" and s.agent == "user"]
    assert len(users) == 3 and all(s.attributes.get("from_event") for s in users)  # only written as events
    assert trace.task is not None and "analyze trascript and summarzie action items" in trace.task
    assert Counter(c.name for c in calls(trace)) == Counter({"exec_command": 35, "js": 3})
    assert unpaired(trace) == (set(), set())
    assert sum(r.is_error for s in trace.steps for r in s.tool_results) == 1
    assert trace.final_output is not None and trace.final_output.startswith("I couldn’t directly inspect your already-open Chrome tab")


def test_codex_in_memory_lines_and_broken_lines(tmp_path: Path) -> None:
    lines = [
        {"timestamp": "2026-01-02T17:00:00Z", "type": "session_meta", "payload": {"id": "s1", "cwd": "/w"}},
        {"timestamp": "2026-01-02T17:00:01Z", "type": "response_item", "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]}},
        {"timestamp": "2026-01-02T17:00:02Z", "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]}},
    ]
    trace = load_trace(lines)
    assert trace.source.format == "codex_rollout" and (trace.task, trace.final_output, trace.trace_id) == ("fix it", "done", "s1")
    path = tmp_path / "rollout.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + '\n{"timestamp": "2026-01-02T17:00:0', encoding="utf-8")
    trace = load_trace(path)
    assert trace.final_output == "done" and len(trace.warnings) == 1 and "line 4" in trace.warnings[0]
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"timestamp": "x", "type": "session_meta", "payload": {"id": 1}}\n{"timestamp": "x", "type": "event_msg", "payload": {"type": "token_count"}}\n', encoding="utf-8")
    with pytest.raises(TraceFormatError, match="no messages, tool calls or events"):
        load_trace(broken)


def test_codex_task_is_the_typed_prompt_not_the_user_items_codex_wrote_before_it() -> None:
    # Newer rollouts write context blocks as user items before the prompt, with markers that change
    # between versions (or that a redacting exporter removed); the user_message event is the prompt.
    def item(role: str, text: str) -> dict[str, Any]:
        return {"timestamp": "2026-02-01T10:00:00Z", "type": "response_item",
                "payload": {"type": "message", "role": role, "content": [{"type": "input_text", "text": text}]}}

    context = "Repository notes: run make before committing. " * 20
    lines = [
        {"timestamp": "2026-02-01T10:00:00Z", "type": "session_meta", "payload": {"id": "s2", "cwd": "/w"}},
        item("user", context),
        {"timestamp": "2026-02-01T10:00:00Z", "type": "event_msg", "payload": {"type": "task_started"}},
        item("user", "rename the config loader"),
        {"timestamp": "2026-02-01T10:00:01Z", "type": "event_msg", "payload": {"type": "user_message", "message": "rename the config loader"}},
        item("assistant", "Renamed."),
    ]
    trace = load_trace(lines)
    assert trace.task == "rename the config loader"
    assert [s.content for s in trace.steps if s.role == "user"] == [context, "rename the config loader"]  # nothing lost
    # An event whose text no item repeats still names the task, and is kept as the user's step.
    lines[4]["payload"]["message"] = "[prompt redacted by the exporter]"
    assert load_trace(lines).task == "[prompt redacted by the exporter]"
    # Without user_message events, the first user item is the task, as before.
    assert load_trace([x for x in lines if x["type"] != "event_msg"]).task == context


# --- SWE-agent ------------------------------------------------------------------------------------

SWE = "swe_agent_traj"


def test_swe_agent_v1x_function_calling(traces_dir: Path) -> None:
    trace = only(traces_dir / SWE / "v1x_function_calling_test_repo.traj", "swe_agent")
    assert trace.trace_id == "SWE-agent__test-repo-i1"
    assert [(a.name, a.model) for a in trace.agents] == [("main", "gpt-4o")]
    assert trace.task is not None and "SyntaxError: invalid syntax" in trace.task
    assert [c.name for c in calls(trace)] == ["find_file", "open", "edit", "bash", "submit"]
    assert calls(trace)[0].id == "call_fJuazlMUN5fQDQ73G6XSpYpx" and calls(trace)[0].arguments == {"file_name": "missing_colon.py"}
    assert unpaired(trace) == (set(), set())
    # submit is only in `trajectory`, not in the history: it is added from there
    assert [s.source_ref for s in trace.steps[-2:]] == ["/trajectory/4", "/trajectory/4/observation"]
    assert trace.final_output is not None and "+def division(a: float, b: float) -> float:" in trace.final_output
    assert trace.status == "ok"
    assert trace.usage is not None and (trace.usage.input_tokens, trace.usage.output_tokens) == (7141, 243)
    assert trace.usage.cost_usd == pytest.approx(0.01952)
    assert trace.steps[0].kind == "system" and trace.agents[0].system_prompt is not None
    check_golden(trace, "swe_agent_v1x")


def test_swe_agent_v07_text_actions(traces_dir: Path) -> None:
    trace = only(traces_dir / SWE / "v07_marshmallow-1867_default.traj", "swe_agent")
    assert [a.name for a in trace.agents] == ["primary"]
    actions = calls(trace)
    assert len(actions) == 14
    assert [c.name for c in actions[:4]] == ["ls", "open", "pip", "create"]
    assert actions[4].name == "edit" and actions[4].arguments["command"].startswith("edit 1:1\nfrom marshmallow.fields import TimeDelta")
    assert unpaired(trace) == (set(), set())
    results = [r for s in trace.steps for r in s.tool_results]
    assert results[5].output.startswith("344")  # the reproduction before the fix
    assert trace.steps[-1].source_ref == "/trajectory/13/observation"  # submit's output from the trajectory
    assert trace.usage is None  # a replayed demonstration records zero cost: unknown, not free
    assert trace.status == "ok" and trace.final_output is not None and "round(value.total_seconds()" in trace.final_output
    assert len(trace.metadata["states"]) == 14 and trace.metadata["states"][0] == {"open_file": "n/a", "working_dir": "/marshmallow-code__marshmallow"}


def test_swe_agent_history_only_demo(traces_dir: Path) -> None:
    trace = only(traces_dir / SWE / "demo_function_calling_simple_history_only.traj", "swe_agent")
    assert kinds(trace) == Counter({"tool_call": 5, "tool_result": 5, "system": 1, "message": 1})
    assert unpaired(trace) == (set(), set())
    assert calls(trace)[-1].name == "submit"
    # No submission recorded, but the submit action's words are the run's closing answer.
    assert trace.final_output is not None and trace.final_output.startswith("The script ran successfully") and trace.status == "unknown"


# --- OpenHands ------------------------------------------------------------------------------------

OH = "openhands_trajectory"


def test_openhands_events_with_tool_call_metadata(traces_dir: Path) -> None:
    trace = only(traces_dir / OH / "events_basic_with_tool_call_metadata.json", "openhands")
    assert [(s.kind, s.agent) for s in trace.steps] == [("message", "user"), ("tool_call", "agent"), ("tool_result", "environment"), ("message", "agent")]
    assert trace.task == "Please create a simple 2048 game. No need to run it. Please finish the interaction after your finish coding."
    call = calls(trace)[0]
    assert (call.name, call.id) == ("str_replace_editor", "toolu_017nBp7UfiGqyrA7j77HgtFP")
    assert call.arguments["command"] == "create" and call.arguments["path"] == "/workspace/game_2048.py"
    assert unpaired(trace) == (set(), set())
    assert trace.steps[2].tool_results[0].output.startswith("--- /workspace/game_2048.py")
    assert trace.agents[0].model == "claude-3-5-sonnet-20241022"
    assert trace.final_output is not None and trace.final_output.startswith("I've created a simple implementation of the 2048 game")
    assert trace.status == "ok"
    assert trace.usage is not None and trace.usage.output_tokens is not None and trace.usage.output_tokens > 0
    check_golden(trace, "openhands_basic")


def test_openhands_messages_only(traces_dir: Path) -> None:
    trace = only(traces_dir / OH / "events_messages_only.json", "openhands")
    assert [s.agent for s in trace.steps] == ["user", "agent"] * 3
    assert trace.task == "what's 1+1?"
    assert trace.final_output == "All done! What's next on the agenda?"
    assert trace.steps[-1].attributes["action"] == "finish"
    assert [c.name for c in calls(trace)] == ["finish"]  # the finish action is a tool call and the final output


def test_openhands_resolver_output_records(traces_dir: Path) -> None:
    path = traces_dir / OH / "resolver_output_history.jsonl"
    assert detect_format(path)[0].name == "openhands"
    traces = load_traces(path)
    assert [t.trace_id for t in traces] == ["neubig/pr-viewer#5", "neubig/pr-viewer#1"]
    assert [t.source.record for t in traces] == [0, 1]
    first, second = traces
    assert first.task is not None and first.task.startswith("Please fix the following issue") and "MIT license" in first.task
    assert first.steps[0].content == first.task  # the first event is the instruction, now readable
    assert [c.name for c in calls(first)] == ["run", "run_ipython", "run", "finish"]
    assert calls(first)[0].arguments == {"command": "touch LICENSE"}
    assert len(calls(second)) == 22 and calls(second)[-1].name == "finish"
    for trace in traces:
        assert unpaired(trace) == (set(), set())
        assert trace.final_output is not None and "diff --git" in trace.final_output  # the finish words, then the patch
        assert trace.labels["success"] is True and "result_explanation" in trace.labels
        assert trace.labels["result_explanation"][:60] not in trace.to_transcript().text  # grades never reach the judge
    assert first.usage is not None and first.usage.cost_usd == pytest.approx(0.070713)
    assert first.metadata["issue"]["title"] == "Add MIT license"


# --- smolagents -----------------------------------------------------------------------------------

SMOL = "smolagents_memory"


def test_smolagents_tool_calling_rows(traces_dir: Path) -> None:
    path = traces_dir / SMOL / "gpt-4o__tool-calling__gaia__2025-07-24.rows-0-6-8-9-13.jsonl"
    assert detect_format(path)[0].name == "smolagents"
    traces = load_traces(path)
    assert len(traces) == 5
    assert [t.final_output for t in traces][:3] == ["Guava", "Wojciech", "2"]
    assert [t.labels["true_answer"] for t in traces] == ["Guava", "Wojciech", "2", "16000", "Saint Petersburg"]
    for trace in traces:
        assert [(a.name, a.model) for a in trace.agents] == [("ToolCallingAgent", "gpt-4o")]
        assert unpaired(trace) == (set(), set())
        assert calls(trace)[-1].name == "final_answer"
        assert trace.labels["true_answer"] not in trace.to_transcript().text or trace.labels["true_answer"] == trace.final_output
    first = traces[0]
    assert calls(first)[0].arguments == {"answer": "Guava"} and calls(first)[0].id == "call_UlS2QmSyoyvIA1m01rbjPdIr"
    assert first.task is not None and first.task.startswith("If there is anything that doesn't make sense")
    assert first.usage is not None and first.usage.total_tokens == 1397
    assert [c.name for c in calls(traces[1])] == ["web_search", "web_search", "final_answer"]


def test_smolagents_code_rows_with_parsing_errors(traces_dir: Path) -> None:
    traces = load_traces(traces_dir / SMOL / "gpt-4o__code__gaia__2025-07-24.rows-0-4-6-10-18.jsonl")
    assert [a.name for a in traces[0].agents] == ["CodeAgent"]
    pineapple = traces[0]
    assert pineapple.final_output == "Pineapple" and pineapple.labels == {"true_answer": "Guava"}
    errors = [s for s in pineapple.steps if s.kind == "error"]
    assert len(errors) == 5 and all("regex pattern" in s.content for s in errors)  # output the executor could not parse
    assert [c.name for c in calls(pineapple)] == ["python_interpreter", "python_interpreter"]
    assert calls(pineapple)[0].arguments_raw == 'print("Pineapple")'
    kipchoge = traces[2]  # the decisive-step failure: the code prints 17, the agent answers 17000
    assert kipchoge.final_output == "17000" and kipchoge.labels["true_answer"] == "17"
    assert sum(1 for s in kipchoge.steps if s.kind == "error") == 1
    for trace in traces:
        assert unpaired(trace) == (set(), set())


def test_smolagents_legacy_step_reprs(traces_dir: Path) -> None:
    trace = only(traces_dir / SMOL / "legacy_GAIA_submission_code_o1_27-01_text.jsonl", "smolagents")
    assert trace.source.variant == "benchmark_row"
    assert [a.name for a in trace.agents] == ["code_o1_27-01_text"]
    assert kinds(trace) == Counter({"tool_call": 4, "tool_result": 4, "system": 1, "message": 1})
    assert [c.id for c in calls(trace)] == ["call_2", "call_3", "call_4", "call_5"]
    assert calls(trace)[0].arguments_raw is not None and "navigational_web_search" in calls(trace)[0].arguments_raw
    assert unpaired(trace) == (set(), set())
    assert trace.steps[2].started_at is not None  # ActionStep start_time read from the repr
    assert trace.task is not None and trace.task.startswith("What's the last line of the rhyme")
    assert trace.final_output == "Caused its demise" and trace.labels == {"true_answer": "So we had to let it die."}
    assert trace.metadata["iteration_limit_exceeded"] is False and trace.warnings == []


def test_smolagents_memory_step_dicts() -> None:
    # agent.memory.get_full_steps() shape (smolagents memory.py ActionStep.dict / TaskStep / PlanningStep)
    memory = [
        {"task": "What is 2**10?", "task_images": None},
        {"model_input_messages": [], "model_output_message": None, "plan": "1. compute", "timing": {"start_time": 1.0, "end_time": 2.0}, "token_usage": None},
        {"step_number": 1, "timing": {"start_time": 2.0, "end_time": 3.0}, "model_input_messages": None,
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "python_interpreter", "arguments": "print(2**10)"}}],
         "error": None, "model_output_message": None, "model_output": "Thought: compute\n<code>print(2**10)</code>", "code_action": "print(2**10)",
         "observations": "Execution logs:\n1024", "observations_images": None, "action_output": None, "token_usage": {"input_tokens": 10, "output_tokens": 5}, "is_final_answer": False},
        {"step_number": 2, "timing": {"start_time": 3.0, "end_time": 4.0}, "tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "python_interpreter", "arguments": "final_answer(1024)"}}],
         "error": {"type": "AgentExecutionError", "message": "boom"}, "model_output": "<code>final_answer(1024)</code>", "observations": None, "action_output": 1024, "is_final_answer": True},
    ]
    assert detect_format(memory)[0].name == "smolagents"
    trace = load_trace(memory)
    assert trace.source.variant == "memory"
    assert [s.kind for s in trace.steps] == ["message", "plan", "tool_call", "tool_result", "tool_call", "tool_result"]
    assert trace.task == "What is 2**10?" and trace.final_output == "1024"
    assert trace.steps[3].tool_results[0].output == "Execution logs:\n1024" and trace.steps[2].usage is not None
    assert trace.steps[5].tool_results[0].is_error and trace.steps[5].error == "AgentExecutionError: boom"
    assert unpaired(trace) == (set(), set())


# --- OpenAI Agents SDK ----------------------------------------------------------------------------


def test_agents_sdk_run_state_pending_approval(traces_dir: Path) -> None:
    trace = only(traces_dir / "openai_agents_sdk" / "run_state_v1_13_pending_tool_approval.json", "openai_agents_sdk")
    assert trace.source.variant == "run_state"
    assert trace.trace_id == "trace_179a5e809d614cf89ac5a1f24b415704"
    assert [a.name for a in trace.agents] == ["compat-agent"]
    assert trace.task == "historical input"
    call = calls(trace)[0]
    assert (call.name, call.id, call.arguments) == ("historical_approval", "historical-approval-1", {"account_id": "account-1"})
    # the run stopped for a human approval: the call has no result yet, and the trace says so
    assert unpaired(trace) == ({"historical-approval-1"}, set())
    assert trace.metadata["pending_approvals"] == ["historical-approval-1"]
    assert trace.steps[-1].kind == "system" and "waiting for human approval" in trace.steps[-1].content
    assert trace.final_output is None and trace.warnings
    assert trace.usage is None  # zero requests recorded
    assert trace.metadata["$schemaVersion"] == "1.13"


def _state_with_handoff() -> dict[str, Any]:
    # RunState.to_json() item shapes (run_state.py _serialize_item): type, raw_item, agent, output, source/target_agent
    def item(kind: str, agent: str, raw: dict[str, Any], **extra: Any) -> dict[str, Any]:
        return {"type": kind, "agent": {"name": agent}, "raw_item": raw, **extra}
    return {
        "$schemaVersion": "1.0",
        "current_agent": {"name": "Billing"},
        "original_input": [{"role": "user", "content": "I was charged twice"}],
        "generated_items": [
            item("handoff_call_item", "Triage", {"type": "function_call", "call_id": "h1", "name": "transfer_to_billing", "arguments": "{}"}),
            item("handoff_output_item", "Triage", {"type": "function_call_output", "call_id": "h1", "output": '{"assistant": "Billing"}'},
                 source_agent={"name": "Triage"}, target_agent={"name": "Billing"}),
            item("tool_call_item", "Billing", {"type": "function_call", "call_id": "c1", "name": "refund", "arguments": '{"amount": 10}'}),
            item("tool_call_output_item", "Billing", {"type": "function_call_output", "call_id": "c1", "output": "refunded"}, output="refunded"),
            item("message_output_item", "Billing", {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Refunded 10 USD."}]}),
        ],
        "context": {"usage": {"requests": 2, "input_tokens": 100, "output_tokens": 20, "total_tokens": 120}},
        "trace": None,
    }


def test_agents_sdk_run_state_handoffs() -> None:
    trace = load_trace(_state_with_handoff())
    assert trace.source.format == "openai_agents_sdk"
    handoffs = [s for s in trace.steps if s.kind == "handoff"]
    assert [(s.agent, s.recipient) for s in handoffs] == [("Triage", "Billing"), ("Triage", "Billing")]
    assert [a.name for a in trace.agents] == ["Billing", "Triage"]
    assert unpaired(trace) == (set(), set())
    assert trace.final_output == "Refunded 10 USD." and trace.task == "I was charged twice"
    assert trace.usage is not None and trace.usage.total_tokens == 120


def test_agents_sdk_js_state_follows_an_agent_run_as_a_tool_that_is_paused_inside() -> None:
    # The JavaScript SDK keeps the paused run of an agent used as a tool as its own serialised state.
    def call(agent: str, call_id: str, name: str, arguments: str) -> dict[str, Any]:
        raw = {"type": "function_call", "id": f"fc_{call_id}", "callId": call_id, "name": name, "arguments": arguments}
        return {"type": "tool_call_item", "rawItem": raw, "agent": {"name": agent}}

    inner = {
        "$schemaVersion": "1.2", "currentAgent": {"name": "Checker"}, "originalInput": "check the invoice",
        "generatedItems": [
            call("Checker", "c2", "lookup_invoice", '{"id": 7}'),
            {**call("Checker", "c2", "lookup_invoice", '{"id": 7}'), "type": "tool_approval_item", "toolName": "lookup_invoice"},
        ],
    }
    state = {
        "$schemaVersion": "1.2", "currentAgent": {"name": "Desk"}, "originalInput": "is invoice 7 paid?",
        "generatedItems": [call("Desk", "c1", "checker_tool", '{"input": "check the invoice"}')],
        "pendingAgentToolRuns": {"checker_tool:c1": json.dumps(inner), "broken_tool:c9": "{not json"},
        "currentStep": {"type": "next_step_interruption"},
    }
    trace = load_trace(state)
    assert [a.name for a in trace.agents] == ["Desk", "Checker"]
    assert [(s.agent, [c.name for c in s.tool_calls]) for s in trace.steps if s.tool_calls] == [
        ("Desk", ["checker_tool"]), ("Checker", ["lookup_invoice"])]
    assert trace.metadata["pending_approvals"] == ["c2"] and trace.final_output is None
    assert all("pendingAgentToolRuns" not in str(s.content) for s in trace.steps)


def _span_export() -> list[dict[str, Any]]:
    # Trace.export() / Span.export() shapes of openai-agents tracing (spans.py, span_data.py)
    t = "2025-01-01T00:00:0{}.000000+00:00"

    def span(i: int, parent: str | None, start: int, end: int, data: dict[str, Any], error: Any = None) -> dict[str, Any]:
        return {"object": "trace.span", "id": f"span_{i}", "trace_id": "trace_1", "parent_id": parent,
                "started_at": t.format(start), "ended_at": t.format(end), "span_data": data, "error": error}
    handoff = {"id": "call_1", "type": "function", "function": {"name": "transfer_to_spanish_agent", "arguments": "{}"}}
    weather = {"id": "call_2", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Madrid"}'}}
    system_es = {"role": "system", "content": "Solo hablas español."}
    user = {"role": "user", "content": "Hola, que tiempo hace en Madrid?"}
    history = [system_es, user, {"role": "assistant", "content": None, "tool_calls": [handoff]},
               {"role": "tool", "tool_call_id": "call_1", "content": '{"assistant": "Spanish Agent"}'}]
    return [
        {"object": "trace", "id": "trace_1", "workflow_name": "Agent workflow", "group_id": None, "metadata": {"user": "u1"}},
        span(1, None, 0, 3, {"type": "agent", "name": "Triage", "handoffs": ["Spanish Agent", "English Agent"], "tools": [], "output_type": "str"}),
        span(2, "span_1", 1, 2, {"type": "generation", "input": [{"role": "system", "content": "You route."}, user],
                                 "output": [{"role": "assistant", "content": None, "tool_calls": [handoff]}], "model": "gpt-4o",
                                 "model_config": {"temperature": 0}, "usage": {"input_tokens": 50, "output_tokens": 10}}),
        span(3, "span_1", 2, 2, {"type": "handoff", "from_agent": "Triage", "to_agent": "Spanish Agent"}),
        span(4, None, 3, 8, {"type": "agent", "name": "Spanish Agent", "handoffs": [], "tools": ["get_weather"], "output_type": "str"}),
        span(5, "span_4", 4, 5, {"type": "generation", "input": history, "output": [{"role": "assistant", "content": None, "tool_calls": [weather]}],
                                 "model": "gpt-4o", "usage": {"input_tokens": 80, "output_tokens": 12}}),
        span(6, "span_4", 6, 6, {"type": "function", "name": "get_weather", "input": '{"city": "Madrid"}', "output": "Soleado, 25C", "mcp_data": None}),
        span(7, "span_4", 7, 8, {"type": "generation", "input": [*history, {"role": "assistant", "content": None, "tool_calls": [weather]},
                                                                   {"role": "tool", "tool_call_id": "call_2", "content": "Soleado, 25C"}],
                                 "output": [{"role": "assistant", "content": "En Madrid hace sol, 25 grados."}], "model": "gpt-4o",
                                 "usage": {"input_tokens": 120, "output_tokens": 15}}),
        span(8, "span_4", 8, 8, {"type": "guardrail", "name": "no_pii", "triggered": False}),
        span(9, "span_4", 8, 8, {"type": "custom", "name": "turn", "data": {"sdk_span_type": "turn", "turn": 1, "agent_name": "Spanish Agent"}}),
    ]


def test_agents_sdk_span_export_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "agents_trace.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _span_export()) + "\n", encoding="utf-8")
    assert detect_format(path)[0].name == "openai_agents_sdk"
    trace = load_trace(path)
    assert trace.trace_id == "trace_1" and trace.source.variant == "trace_export"
    assert [(a.name, a.model) for a in trace.agents] == [("Triage", "gpt-4o"), ("Spanish Agent", "gpt-4o")]
    # each generation re-sends the conversation: every message appears once
    assert [s.content for s in trace.steps if s.role == "user"] == ["Hola, que tiempo hace en Madrid?"]
    assert [(s.agent, s.recipient) for s in trace.steps if s.kind == "handoff"] == [("Triage", "Spanish Agent")]
    # the function span is the result of the generation's call_2, not a second call
    assert [c.id for c in calls(trace)] == ["call_1", "call_2"]
    assert unpaired(trace) == (set(), set())
    assert trace.final_output == "En Madrid hace sol, 25 grados." and trace.task == "Hola, que tiempo hace en Madrid?"
    assert trace.usage is not None and (trace.usage.input_tokens, trace.usage.output_tokens) == (250, 37)
    assert any(s.content == "guardrail no_pii: passed" for s in trace.steps)
    assert trace.metadata["workflow_name"] == "Agent workflow" and trace.metadata["not_rendered"] == {"custom:turn": 1}
    assert trace.status == "ok"
    # the ingest payload {"data": [...]} reads the same
    assert load_trace({"data": _span_export()}).content_hash() == trace.content_hash()


# --- CrewAI ---------------------------------------------------------------------------------------


def test_crewai_hierarchical_cassette(traces_dir: Path) -> None:
    trace = only(traces_dir / "crewai" / "test_hierarchical_process.vcr.yaml", "crewai")
    assert trace.source.variant == "vcr_cassette"
    assert [a.name for a in trace.agents] == ["Crew Manager", "Senior Writer", "Researcher"]
    assert trace.agents[0].role == "goal: Manage the team to complete the task in the best way possible."
    assert [a.model for a in trace.agents] == ["gpt-4o-2024-08-06", "gpt-4.1-mini-2025-04-14", "gpt-4.1-mini-2025-04-14"]
    handoffs = [s for s in trace.steps if s.kind == "handoff"]
    assert [(s.agent, s.recipient) for s in handoffs] == [("Crew Manager", "Researcher, Senior Writer"), ("Crew Manager", "Senior Writer")]
    assert [c.name for c in calls(trace)] == ["ask_question_to_coworker", "ask_question_to_coworker", "delegate_work_to_coworker"]
    assert unpaired(trace) == (set(), set())
    # delegated work arrives from the manager; the answers go back to it from the coworker
    delegated = [s for s in trace.steps if s.role == "user" and s.agent == "Crew Manager"]
    assert [s.recipient for s in delegated] == ["Senior Writer", "Researcher", "Senior Writer"]
    answers = [(s.agent, s.recipient) for s in trace.steps if s.kind == "tool_result"]
    assert answers == [("Researcher", "Crew Manager"), ("Senior Writer", "Crew Manager"), ("Senior Writer", "Crew Manager")]
    # "Analyze the tool result..." is CrewAI prompting its manager, not a person
    nudges = [s for s in trace.steps if s.agent == "crewai"]
    assert len(nudges) == 2 and all(s.content.startswith("Analyze the tool result") for s in nudges)
    assert [s.agent for s in trace.steps if s.role == "user"].count("user") == 1
    assert trace.task is not None and trace.task.startswith("Come up with a list of 5 interesting ideas")
    assert trace.final_output is not None and trace.final_output.startswith("- **The Rise of Autonomous AI Agents")
    assert trace.metadata["not_rendered"] == {"repeated system prompt": 1}
    assert len(trace.metadata["llm_calls"]) == 6
    assert trace.usage is not None and trace.usage.total_tokens == 715 + 288 + 583 + 1421 + 1197 + 2725
    check_golden(trace, "crewai_hierarchical")


def test_crewai_single_agent_react_cassette(traces_dir: Path) -> None:
    trace = only(traces_dir / "crewai" / "test_crew_output_file_end_to_end.vcr.yaml", "crewai")
    assert [a.name for a in trace.agents] == ["Researcher"]
    assert trace.metadata["not_rendered"] == {"request to telemetry.crewai.com:4319": 1}
    assert [s.kind for s in trace.steps] == ["system", "message", "message"]
    assert trace.task == "Explain the advantages of AI."
    assert trace.final_output is not None and trace.final_output.startswith("**Advantages of AI**")  # after "Final Answer:"
    assert trace.status == "ok"


def test_crewai_does_not_claim_anthropic_cassettes(traces_dir: Path) -> None:
    from mast.normalize import get_format

    crewai = get_format("crewai")
    for path in sorted((traces_dir / "anthropic_messages").glob("*.yaml")):
        assert crewai.detect(RawInput(path=path)) == 0.0


def test_crewai_outputs() -> None:
    crew_output = {
        "raw": "Final report",
        "pydantic": None,
        "json_dict": None,
        "tasks_output": [
            {"description": "Research AI", "name": None, "expected_output": "notes", "summary": "Research AI...", "raw": "notes on AI", "agent": "Researcher", "output_format": "raw"},
            {"description": "Write report", "name": None, "expected_output": "report", "summary": "Write...", "raw": "Final report", "agent": "Writer", "output_format": "raw"},
        ],
        "token_usage": {"total_tokens": 300, "prompt_tokens": 200, "completion_tokens": 100, "successful_requests": 2},
    }
    trace = load_trace(crew_output)
    assert trace.source.format == "crewai" and trace.source.variant == "crew_output"
    assert [a.name for a in trace.agents] == ["Researcher", "Writer"]
    assert [(s.agent, s.recipient) for s in trace.steps] == [("user", "Researcher"), ("Researcher", None), ("user", "Writer"), ("Writer", None)]
    assert trace.final_output == "Final report" and trace.usage is not None and trace.usage.total_tokens == 300
    log = [{"timestamp": "2025-01-01 10:00:00", "task_name": None, "task": "Research AI", "agent": "Researcher", "status": "completed", "output": "notes"}]
    logged = load_trace(log)
    assert logged.source.variant == "output_log" and logged.final_output == "notes" and logged.steps[0].started_at is not None


# --- every sample ---------------------------------------------------------------------------------


@pytest.mark.parametrize("folder", [CODEX, SWE, OH, SMOL, "openai_agents_sdk", "crewai"])
def test_every_sample_detected_and_paired(traces_dir: Path, folder: str) -> None:
    files = [p for p in sorted((traces_dir / folder).iterdir()) if p.suffix != ".md"]
    assert files
    for path in files:
        assert detect_format(path)[0].name in MINE, path.name
        for item in iter_traces(path):
            assert isinstance(item, Trace), item
            assert item.steps and [s.index for s in item.steps] == list(range(len(item.steps)))
            missing_results, orphan_results = unpaired(item)
            assert orphan_results == set(), path.name
            assert missing_results == set() or folder == "openai_agents_sdk", path.name
            item.to_transcript()  # renders without error


def test_my_detectors_leave_other_formats_alone(traces_dir: Path) -> None:
    from mast.normalize import get_format

    for path in sorted(traces_dir.glob("*/*")):
        if path.parent.name in (CODEX, SWE, OH, SMOL, "openai_agents_sdk", "crewai") or path.suffix == ".md":
            continue
        raw = RawInput(path=path)
        claims = {name: get_format(name).detect(raw) for name in MINE}
        assert all(score == 0.0 for score in claims.values()), (path.name, claims)


def test_benchmark_generators_write_readable_files(tmp_path: Path) -> None:
    """The synthetic files of benchmarks/bench_normalize.py stay readable as MAD and OTLP."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_normalize", Path(__file__).parent.parent / "benchmarks" / "bench_normalize.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    mad, otlp = tmp_path / "mad.json", tmp_path / "otlp.jsonl"
    records = bench.write_mad(mad, 600_000)
    runs = bench.write_otlp(otlp, 300_000)
    assert detect_format(mad)[0].name == "mad" and detect_format(otlp)[0].name == "otlp"
    traces = load_traces(mad)
    assert len(traces) == records and all(t.labels.get("mast_annotation") for t in traces)
    assert {a.name for t in traces for a in t.agents} >= {"Planner"}
    spans = load_traces(otlp)
    assert len(spans) == runs and all(unpaired(t) == (set(), set()) for t in spans)
