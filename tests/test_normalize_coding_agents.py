"""Coding-agent session readers: Harbor ATIF, Goose, opencode, Cline and the OpenHands SDK.

Each reader is checked on a small synthetic session written for these tests (tests/data/coding_agents/,
one tool error each): detection picks it, and the facts a judge depends on (task, who acted, which
call got which result, the error, the final answer, UTC timestamps) come out right. Malformed files
fail with one-line reasons, and the new detectors leave look-alike inputs of other formats alone.
"""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest

from mast.errors import TraceFormatError
from mast.normalize import detect_format, load_trace
from mast.normalize.base import RawInput, get_format
from mast.trace import Trace

DATA = Path(__file__).parent / "data" / "coding_agents"
FILES = {
    "atif": "atif_trajectory.json",
    "goose": "goose_session.jsonl",
    "opencode": "opencode_export.json",
    "cline": "cline_api_conversation_history.json",
    "openhands_sdk": "openhands_sdk_events.jsonl",
}


def calls(trace: Trace) -> list[Any]:
    return [c for s in trace.steps for c in s.tool_calls]


def results(trace: Trace) -> list[Any]:
    return [r for s in trace.steps for r in s.tool_results]


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_detect_format_picks_the_reader(fmt: str) -> None:
    chosen, confidence = detect_format(DATA / FILES[fmt])
    assert (chosen.name, confidence >= 0.9) == (fmt, True)


@pytest.mark.parametrize("fmt", sorted(FILES))
def test_common_facts(fmt: str) -> None:
    trace = load_trace(DATA / FILES[fmt])
    assert trace.source.format == fmt
    assert trace.task and trace.final_output
    stamped = [s.started_at for s in trace.steps if s.started_at is not None]
    assert all(t.utcoffset() is not None and t.utcoffset().total_seconds() == 0 for t in stamped)  # type: ignore[union-attr]
    failed = [r for r in results(trace) if r.is_error]
    assert len(failed) == 1, "each synthetic session holds exactly one failed tool call"
    error_steps = [s for s in trace.steps if s.kind == "tool_result" and s.error]
    assert len(error_steps) == 1 and error_steps[0].error == failed[0].output
    assert all(r.name for r in results(trace)), "every result names its tool (paired with its call)"


def test_atif() -> None:
    trace = load_trace(DATA / FILES["atif"])
    assert trace.trace_id == "synthetic-atif-0001"
    assert trace.task == "Create /app/hello.txt containing the word hello."
    assert trace.final_output == "Created /app/hello.txt with the word hello."
    assert [a.name for a in trace.agents] == ["terminus-2"] and trace.agents[0].model == "openai/gpt-test"
    assert [(c.id, c.name, c.arguments) for c in calls(trace)] == [
        ("call_1", "bash", {"command": "ls /app"}),
        ("call_2", "bash", {"command": "mkdir -p /app && echo hello > /app/hello.txt"}),
    ]
    assert [(r.call_id, r.is_error) for r in results(trace)] == [("call_1", True), ("call_2", False)]
    assert trace.usage is not None and (trace.usage.input_tokens, trace.usage.output_tokens) == (470, 67)
    assert trace.steps[0].kind == "system" and "<thinking>" in trace.steps[2].content
    assert trace.metadata["schema_version"] == "ATIF-v1.6"


def test_goose() -> None:
    trace = load_trace(DATA / FILES["goose"])
    assert trace.task == "The test test_parse fails; please fix it."
    assert trace.final_output == "The parser now tolerates rows without a date, so test_parse passes."
    assert trace.trace_id == "goose_session"  # a session file is named by its id
    assert [s.agent for s in trace.steps] == ["user", "goose", "tool", "goose", "tool", "goose"]
    assert [(c.id, c.name) for c in calls(trace)] == [
        ("toolu_01", "developer__shell"),
        ("toolu_02", "developer__text_editor"),
    ]
    # the MCP result ({"content", "isError"}) and the early list result are both read
    assert [(r.call_id, r.is_error, r.output[:6]) for r in results(trace)] == [
        ("toolu_01", True, "FAILED"),
        ("toolu_02", False, "The fi"),
    ]
    assert trace.metadata["session"]["working_dir"] == "/home/dev/project"
    assert trace.usage is not None and trace.usage.total_tokens == 2100


def test_goose_export_and_rust_result_spelling() -> None:
    export = {
        "id": "20260101_1",
        "working_dir": "/w",
        "conversation": [
            {"role": "user", "created": 1767258000, "content": [{"type": "text", "text": "list files"}]},
            {
                "role": "assistant",
                "created": 1767258001,
                "content": [
                    {
                        "type": "toolRequest",
                        "id": "t1",
                        "toolCall": {"Ok": {"name": "shell", "arguments": {"command": "ls"}}},
                    }
                ],
            },
            {
                "role": "user",
                "created": 1767258002,
                "content": [{"type": "toolResponse", "id": "t1", "toolResult": {"Err": "permission denied"}}],
            },
            {
                "role": "assistant",
                "created": 1767258003,
                "content": [{"type": "text", "text": "I cannot list them."}],
            },
        ],
    }
    trace = load_trace(export)
    assert (trace.source.format, trace.source.variant, trace.trace_id) == ("goose", "export", "20260101_1")
    assert [(r.call_id, r.name, r.is_error, r.output) for r in results(trace)] == [
        ("t1", "shell", True, "permission denied")
    ]
    assert trace.final_output == "I cannot list them."


def test_opencode() -> None:
    trace = load_trace(DATA / FILES["opencode"])
    assert (trace.trace_id, trace.task) == ("ses_synthetic01", "How many words are in notes.md?")
    assert trace.final_output == "notes.md holds 412 words."
    assert [(c.id, c.name, c.arguments) for c in calls(trace)] == [
        ("call_a", "bash", {"command": "wc -w note.md"}),
        ("call_b", "bash", {"command": "wc -w notes.md"}),
    ]
    assert [(r.call_id, r.is_error, r.output) for r in results(trace)] == [
        ("call_a", True, "wc: note.md: No such file or directory"),
        ("call_b", False, "412 notes.md"),
    ]
    assert trace.agents[0].model == "test-model-1"
    assert trace.usage is not None and trace.usage.cost_usd == pytest.approx(0.0042)
    assert trace.metadata["not_rendered"] == {"step-start": 1, "step-finish": 1}
    times = [s.started_at for s in trace.steps]
    assert times == sorted(t for t in times if t is not None), "steps stay in time order"


def test_opencode_failed_call_is_an_error_step() -> None:
    export = json.loads((DATA / FILES["opencode"]).read_text(encoding="utf-8"))
    export["messages"][1]["info"]["error"] = {"name": "APIError", "data": {"message": "rate limited"}}
    trace = load_trace(export)
    assert trace.status == "error" and trace.error == "rate limited"
    assert trace.steps[-1].kind == "error"


def test_cline_xml_tools() -> None:
    trace = load_trace(DATA / FILES["cline"])
    assert trace.task == "Rename the function greet to welcome in src/app.py."
    assert trace.final_output == "Renamed greet to welcome in src/app.py."
    assert [c.name for c in calls(trace)] == [
        "read_file",
        "read_file",
        "replace_in_file",
        "attempt_completion",
    ]
    assert calls(trace)[0].arguments == {"path": "src/ap.py"}
    assert [(r.name, r.is_error) for r in results(trace)] == [
        ("read_file", True),
        ("read_file", False),
        ("replace_in_file", False),
    ]
    # environment details are context, never the task or a user request
    context = [s for s in trace.steps if s.attributes.get("injected_context")]
    assert len(context) == 4 and all(s.kind == "system" for s in context)
    assert [s.kind for s in trace.steps[:3]] == ["message", "system", "message"]


def test_cline_native_tool_use() -> None:
    history = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<task>\nrun the tests\n</task>"},
                {"type": "text", "text": "<environment_details>\n# cwd\n</environment_details>"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "tu_1", "name": "execute_command", "input": {"command": "pytest"}}
            ],
            "ts": 1767258000000,
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "tu_1", "content": "2 failed", "is_error": True}
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Two tests fail."}]},
    ]
    trace = load_trace(history)
    assert trace.source.format == "cline" and trace.task == "run the tests"
    assert [(r.call_id, r.name, r.is_error) for r in results(trace)] == [("tu_1", "execute_command", True)]
    assert trace.steps[2].started_at is not None and trace.steps[2].started_at.tzinfo == UTC


def test_plain_anthropic_messages_are_not_cline() -> None:
    """Without Cline's <task> and <environment_details>, a message list stays with the chat readers."""
    history = json.loads((DATA / FILES["cline"]).read_text(encoding="utf-8"))
    for message in history:
        for block in message["content"]:
            block["text"] = (
                block["text"]
                .replace("<task>", "")
                .replace("</task>", "")
                .replace("<environment_details>", "")
            )
    assert detect_format(history)[0].name != "cline"
    assert (
        detect_format([{"role": "user", "content": [{"type": "text", "text": "<task>x</task>"}]}])[0].name
        != "cline"
    )


def test_openhands_sdk() -> None:
    trace = load_trace(DATA / FILES["openhands_sdk"])
    assert trace.task == "Print the Python version used in this workspace."
    assert trace.final_output == "The workspace uses Python 3.12.4."
    assert trace.status == "ok"
    assert [(c.id, c.name, c.arguments) for c in calls(trace)] == [
        ("call_1", "terminal", {"command": "pyhton --version"}),
        ("call_2", "terminal", {"command": "python --version"}),
        ("call_3", "finish", {"message": "The workspace uses Python 3.12.4."}),
    ]
    assert [(r.call_id, r.is_error) for r in results(trace)] == [("call_1", True), ("call_2", False)]
    assert trace.steps[0].kind == "system"
    assert trace.usage is not None and (trace.usage.input_tokens, trace.usage.cost_usd) == (2400, 0.0031)
    assert trace.agents[0].model == "test-model"


def test_openhands_sdk_agent_error_and_items_page() -> None:
    events = [
        json.loads(line) for line in (DATA / FILES["openhands_sdk"]).read_text(encoding="utf-8").splitlines()
    ]
    events[4] = {
        "id": "e4",
        "timestamp": "2026-03-02T08:00:06",
        "source": "agent",
        "kind": "AgentErrorEvent",
        "tool_name": "terminal",
        "tool_call_id": "call_1",
        "error": "tool crashed",
    }
    trace = load_trace({"items": events, "next_page_id": None})
    assert trace.source.format == "openhands_sdk"
    assert [(r.call_id, r.is_error, r.output) for r in results(trace)][0] == ("call_1", True, "tool crashed")


def test_openhands_sdk_is_not_the_legacy_reader() -> None:
    legacy = [{"id": 1, "source": "user", "action": "message", "args": {"content": "hi"}}]
    assert detect_format(legacy)[0].name == "openhands"
    sdk = [
        json.loads(line) for line in (DATA / FILES["openhands_sdk"]).read_text(encoding="utf-8").splitlines()
    ]
    assert detect_format(sdk)[0].name == "openhands_sdk"


@pytest.mark.parametrize(
    ("fmt", "text", "reason"),
    [
        (
            "atif",
            '{"schema_version": "ATIF-v1.6", "steps": [{"step_id": 1, "source": "robot"}]}',
            "holds no steps",
        ),
        ("goose", '{"working_dir": "/w"}\n{"role": "tool", "content": []}\n', "holds no messages"),
        (
            "opencode",
            '{"info": {"id": "s"}, "messages": [{"info": {"role": "user"}, "parts": [{"type": "step-start"}]}]}',
            "no messages with text",
        ),
        ("cline", '[{"role": "assistant", "content": "hi"}]', "not a Cline"),
        (
            "openhands_sdk",
            '[{"id": "e1", "source": "user", "kind": "MessageEvent", "llm_message": {"role": "user"}}]',
            "hold no messages",
        ),
    ],
)
def test_malformed_files_fail_with_one_line_reason(tmp_path: Path, fmt: str, text: str, reason: str) -> None:
    path = tmp_path / ("x.jsonl" if "\n" in text.strip() else "x.json")
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TraceFormatError) as caught:
        load_trace(path, format=fmt)
    message = str(caught.value)
    assert reason in message and "\n" not in message


def test_detection_order_is_explicit() -> None:
    """Cline's list is an Anthropic message list too: its reader is asked first, and scores above the chat readers."""
    cline = get_format("cline")
    for other in ("openai_chat", "anthropic_messages"):
        assert cline.priority < get_format(other).priority
        assert get_format(other).detect(RawInput(path=DATA / FILES["cline"])) < cline.detect(
            RawInput(path=DATA / FILES["cline"])
        )


def test_cline_task_and_context_in_one_block() -> None:
    history = [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "<task>\nrefactor app.py\n</task>\n<environment_details>\n# cwd\n</environment_details>",
                }
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "<attempt_completion>\n<result>\nDone.\n</result>\n</attempt_completion>",
                }
            ],
        },
    ]
    trace = load_trace(history)
    assert (trace.source.format, trace.task, trace.final_output) == ("cline", "refactor app.py", "Done.")
    assert [s.kind for s in trace.steps] == ["message", "system", "message"]
    assert "<environment_details>" not in trace.steps[0].content


def test_atif_results_without_call_ids_pair_in_order() -> None:
    trajectory = {
        "schema_version": "ATIF-v1.2",
        "session_id": "s",
        "agent": {"name": "a", "version": "1"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "two commands"},
            {
                "step_id": 2,
                "source": "agent",
                "message": "",
                "tool_calls": [
                    {"tool_call_id": "c1", "function_name": "bash", "arguments": {"cmd": "a"}},
                    {"tool_call_id": "c2", "function_name": "bash", "arguments": {"cmd": "b"}},
                ],
                "observation": {"results": [{"content": "out a"}, {"content": "out b"}]},
            },
        ],
    }
    trace = load_trace(trajectory)
    assert [(r.call_id, r.output) for r in results(trace)] == [("c1", "out a"), ("c2", "out b")]


def test_goose_keeps_unknown_item_types() -> None:
    lines = [
        {"working_dir": "/w", "description": "d"},
        {"role": "user", "created": 1767258000, "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "created": 1767258001,
            "content": [{"type": "futureThing", "x": 1}, {"type": "text", "text": "hello"}],
        },
    ]
    trace = load_trace("\n".join(json.dumps(line) for line in lines).encode())
    assert trace.source.format == "goose"
    assert [s.kind for s in trace.steps] == ["message", "system", "message"] and trace.steps[1].attributes[
        "goose_item"
    ] == "futureThing"


def test_openhands_sdk_single_event_file_is_a_one_step_trace(tmp_path: Path) -> None:
    events = [
        json.loads(line) for line in (DATA / FILES["openhands_sdk"]).read_text(encoding="utf-8").splitlines()
    ]
    path = tmp_path / "event-00002-e2.json"
    path.write_text(json.dumps(events[2]), encoding="utf-8")
    assert detect_format(path)[0].name == "openhands_sdk"
    trace = load_trace(path)
    assert trace.task == "Print the Python version used in this workspace." and len(trace.steps) == 1
    assert any("one OpenHands SDK event" in w for w in trace.warnings)


def test_opencode_export_after_the_cli_banner_line(tmp_path: Path) -> None:
    path = tmp_path / "export.json"
    path.write_text(
        "Exporting session: ses_synthetic01\n" + (DATA / FILES["opencode"]).read_text(encoding="utf-8"),
        encoding="utf-8",
    )
    assert detect_format(path)[0].name == "opencode"
    trace = load_trace(path)
    assert trace.trace_id == "ses_synthetic01" and trace.final_output == "notes.md holds 412 words."
    assert [s.agent for s in trace.steps if s.role == "assistant"] == [
        "build"
    ] * 3  # the opencode agent that wrote them


def test_opencode_tool_part_without_status() -> None:
    export = {
        "info": {"id": "s"},
        "messages": [
            {"info": {"role": "user"}, "parts": [{"type": "text", "text": "write it"}]},
            {
                "info": {"role": "assistant"},
                "parts": [
                    {
                        "type": "tool",
                        "tool": "write",
                        "state": {"input": {"path": "a.py"}, "output": "wrote a.py"},
                    }
                ],
            },
        ],
    }
    trace = load_trace(export)
    assert [(r.name, r.output, r.is_error) for r in results(trace)] == [("write", "wrote a.py", False)]


def _stamped_history() -> list[dict[str, Any]]:
    return [
        {"role": "user", "ts": 1767258000000, "content": "run the tests"},
        {
            "role": "assistant",
            "ts": 1767258001000,
            "content": [
                {"type": "tool_use", "id": "t1", "name": "execute_command", "input": {"command": "pytest"}}
            ],
        },
        {
            "role": "user",
            "ts": 1767258002000,
            "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "1 failed", "is_error": True}
            ],
        },
    ]


def test_cline_detected_by_ts_stamps_and_by_file_name(tmp_path: Path) -> None:
    assert detect_format(_stamped_history())[0].name == "cline"
    unstamped = [{k: v for k, v in m.items() if k != "ts"} for m in _stamped_history()]
    assert detect_format(unstamped)[0].name != "cline"
    named = tmp_path / "1767258000000" / "api_conversation_history.json"
    named.parent.mkdir()
    named.write_text(json.dumps(unstamped), encoding="utf-8")
    assert detect_format(named)[0].name == "cline"
    trace = load_trace(named)
    assert (trace.task, trace.trace_id) == ("run the tests", "1767258000000")
    assert [(r.call_id, r.is_error) for r in results(trace)] == [("t1", True)]


def _task_only_history() -> list[dict[str, Any]]:
    """A Cline conversation as a copied file: the <task> opens it, no <environment_details>, XML tools."""
    return [
        {"role": "user", "content": [{"type": "text", "text": "<task>\nFix the bug in add.py\n</task>"}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "I'll read it.\n<read_file>\n<path>add.py</path>\n</read_file>"}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[read_file for 'add.py'] Result:"},
                {"type": "text", "text": "def add(a, b): return a - b"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "<attempt_completion>\n<result>\nFixed.\n</result>\n</attempt_completion>",
                }
            ],
        },
    ]


def test_cline_file_opening_with_task_without_environment_details_is_cline(tmp_path: Path) -> None:
    copied = tmp_path / "conversation.json"  # not named api_conversation_history.json
    copied.write_text(json.dumps(_task_only_history()), encoding="utf-8")
    assert detect_format(copied)[0].name == "cline"
    trace = load_trace(copied)
    assert (trace.source.format, trace.task, trace.final_output) == (
        "cline",
        "Fix the bug in add.py",
        "Fixed.",
    )
    assert load_trace(copied, format="cline").task == "Fix the bug in add.py"
    # a <task> alone, with no Cline tool after it, stays with the chat readers
    plain = [m for m in _task_only_history() if m["role"] == "user"][:1] + [
        {"role": "assistant", "content": [{"type": "text", "text": "Sure."}]}
    ]
    assert detect_format(plain)[0].name != "cline"


def test_cline_format_error_says_what_is_missing(tmp_path: Path) -> None:
    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps([{"role": "user", "content": "hello"}]), encoding="utf-8")
    with pytest.raises(TraceFormatError, match="first user message opening with <task>") as caught:
        load_trace(plain, format="cline")
    assert "environment_details" in str(caught.value)
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps([*_task_only_history(), {"role": "system", "content": "x"}]), encoding="utf-8")
    with pytest.raises(TraceFormatError, match="message 4 is not an Anthropic-style message"):
        load_trace(odd, format="cline")


def test_cline_attempt_completion_with_null_input_is_read(tmp_path: Path) -> None:
    history = _task_only_history()[:1] + [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "add.py"}},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "def add(): ..."}],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t2", "name": "attempt_completion", "input": None}],
        },
    ]
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps(history), encoding="utf-8")
    assert detect_format(path)[0].name == "cline"
    trace = load_trace(path)
    assert trace.source.format == "cline" and trace.final_output is None
    assert [c.name for s in trace.steps for c in s.tool_calls] == ["read_file", "attempt_completion"]


@pytest.mark.parametrize(
    ("later", "final"),
    [
        (
            "<plan_mode_respond>\n<response>\nIt subtracted; now it adds.\n</response>\n</plan_mode_respond>",
            "It subtracted; now it adds.",
        ),
        ("It subtracted; now it adds.", "It subtracted; now it adds."),
        ("Let me check.\n<read_file>\n<path>add.py</path>\n</read_file>", "Fixed."),
    ],
)
def test_cline_final_answer_is_the_latest_assistant_answer(later: str, final: str) -> None:
    history = [
        *_task_only_history(),
        {"role": "user", "content": [{"type": "text", "text": "<feedback>\nwhy?\n</feedback>"}]},
        {"role": "assistant", "content": [{"type": "text", "text": later}]},
    ]
    assert load_trace(history).final_output == final
