"""Every framework log on its own, the same log inside a MAD record, and trajectories stored as strings.

The logs under ``tests/data/normalize/logs/`` were written for these tests, following each framework's
printed layout (ChatDev, MetaGPT loguru, HyperAgent, AppWorld, OpenManus, AG2 console, AgentChat /
Magentic-One Console); their content is our own.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mast.errors import TraceFormatError
from mast.normalize import detect_format, iter_traces, load_trace
from mast.normalize._logs_common import FRAMEWORK_LOGS, framework_logs
from mast.trace import Trace

LOGS = Path(__file__).parent / "data" / "normalize" / "logs"

# file, detected format, framework, first agents, task starts with, final output: as the log states them,
# else its first request and its last substantive agent message (None: the log holds neither)
CASES = [
    ("chatdev.log", "framework_log", "chatdev", ["Chief Executive Officer", "Chief Product Officer", "Programmer"],
     "Write a unit converter", "convert.py\n```python\ndef miles_to_km(m):\n    return m * 1.609344\n```"),
    ("metagpt.log", "framework_log", "metagpt", ["SimpleCoder", "SimpleTester", "SimpleReviewer"], None,
     "The tests miss the plain divisible-by-four case."),
    ("hyperagent.log", "framework_log", "hyperagent", ["Planner", "Navigator", "Editor"], None,
     "Printable now declares empty __slots__."),
    ("appworld.log", "framework_log", "appworld", ["Supervisor", "Spotify"], "Add my two most played songs",
     "apis.supervisor.complete_task()"),
    ("openmanus.log", "framework_log", "openmanus", ["Manus"], None, "The folder holds 14 entries; done."),
    ("magentic_one.log", "autogen_console", "magentic-one", ["MagenticOneOrchestrator", "WebSurfer"], "Which river is longer",
     "Danube, by 1620 km"),
    ("ag2_console.log", "autogen_console", "autogen", ["planner", "coder"], "Write a function that reverses",
     "Use s[::-1]; it printed cba for 'abc'."),
]
MAS_NAMES = {"chatdev.log": "ChatDev", "metagpt.log": "MetaGPT", "hyperagent.log": "HyperAgent", "appworld.log": "AppWorld",
             "openmanus.log": "OpenManus", "magentic_one.log": "Magentic", "ag2_console.log": "AG2"}


def _skeleton(trace: Trace) -> list[tuple[Any, ...]]:
    return [(s.kind, s.agent, s.recipient, s.content, [c.name for c in s.tool_calls], [r.output for r in s.tool_results])
            for s in trace.steps]


def mad(mas_name: str, trajectory: Any) -> dict[str, Any]:
    return {"mas_name": mas_name, "llm_name": "GPT-4o", "benchmark_name": "ProgramDev", "trace_id": 11,
            "trace": {"key": "k", "index": 11, "trajectory": trajectory}, "mast_annotation": {"1.1": 0}}


@pytest.mark.parametrize(("name", "fmt", "framework", "agents", "task", "final"), CASES)
def test_framework_log_on_its_own(name: str, fmt: str, framework: str, agents: list[str], task: str | None, final: str | None) -> None:
    path = LOGS / name
    detected, confidence = detect_format(path)
    assert detected.name == fmt and confidence >= 0.75
    trace = load_trace(path)
    assert trace.framework == framework
    assert [a.name for a in trace.agents][: len(agents)] == agents
    assert len(trace.steps) >= 3 and not trace.warnings
    if task is None:
        assert trace.task is None  # the log does not state it; nothing is made up
    else:
        assert trace.task is not None and trace.task.startswith(task)
    assert trace.final_output == final


@pytest.mark.parametrize(("name", "fmt", "framework", "agents", "task", "final"), CASES)
def test_standalone_log_and_the_same_log_in_a_mad_record_give_the_same_steps(
    name: str, fmt: str, framework: str, agents: list[str], task: str | None, final: str | None
) -> None:
    text = (LOGS / name).read_text(encoding="utf-8")
    alone = load_trace(LOGS / name)
    wrapped = load_trace(mad(MAS_NAMES[name], text))
    assert wrapped.source.format == "mad" and wrapped.source.variant == alone.source.variant
    assert _skeleton(wrapped) == _skeleton(alone)
    assert wrapped.final_output == alone.final_output
    # and with a mas_name that names no parser, the markers still decide
    unnamed = load_trace(mad("SomeSystem", text))
    assert _skeleton(unnamed) == _skeleton(alone)


def test_every_registered_log_is_listed_and_standalone_ones_are_detected() -> None:
    names = [log.name for log in framework_logs()]
    assert {"chatdev", "metagpt", "hyperagent", "appworld", "openmanus", "magentic", "ag2_console", "ag2_yaml"} <= set(names)
    from mast.normalize import get_format

    description = get_format("framework_log").description
    assert all(log.name in description for log in framework_logs() if log.standalone)
    assert all(log.example for log in FRAMEWORK_LOGS.values())


def test_agentchat_console_summary_block_and_usage_lines_are_not_the_answer() -> None:
    trace = load_trace(LOGS / "agentchat_summary.log")
    assert trace.source.format == "autogen_console"
    assert trace.final_output == "Version 2.1 adds offline mode and fixes the sync crash on start.\nThanks to everyone who reported it."
    writer = next(s for s in trace.steps if s.agent == "writer")
    assert "Prompt tokens" not in writer.content and writer.usage is not None and writer.usage.input_tokens == 88
    assert trace.usage is not None and trace.usage.input_tokens == 228  # the summary's totals


def test_a_report_followed_by_terminate_is_the_answer_without_terminate(tmp_path: Path) -> None:
    path = tmp_path / "run.log"
    path.write_text(
        "---------- TextMessage (user) ----------\nSum 2 and 3.\n"
        "---------- TextMessage (calc) ----------\nThe sum is 5.\nTERMINATE\n[Prompt tokens: 10, Completion tokens: 4]\n"
        "---------- Summary ----------\nNumber of messages: 2\nTotal prompt tokens: 10\nTotal completion tokens: 4\n",
        encoding="utf-8",
    )
    assert load_trace(path).final_output == "The sum is 5."


# --- trajectories held as strings ---------------------------------------------------------------

AG2_MESSAGES = [
    {"content": "Find the area of a 3 by 4 rectangle.", "role": "user", "name": "Planner"},
    {"content": "Area = 3 * 4 = 12", "role": "user", "name": "Solver"},
    {"content": "Checked: 12 is right. TERMINATE", "role": "user", "name": "Checker"},
]


def test_a_python_repr_of_the_message_list_is_read_as_messages() -> None:
    trajectory = repr({"problem_statement": ["Find the area of a 3 by 4 rectangle."], "trajectory": AG2_MESSAGES, "note": None})
    assert "'" in trajectory and "None" in trajectory  # not JSON
    trace = load_trace(mad("AG2", trajectory))
    assert [s.agent for s in trace.steps] == ["Planner", "Solver", "Checker"]
    assert trace.metadata["trajectory_encoding"] == "python literal" and not trace.warnings
    assert trace.task == "Find the area of a 3 by 4 rectangle."
    json_text = load_trace(mad("AG2", json.dumps({"problem_statement": ["Find the area of a 3 by 4 rectangle."], "trajectory": AG2_MESSAGES})))
    assert _skeleton(json_text) == _skeleton(trace)


def test_a_repr_of_a_bare_list_with_tuples_and_none() -> None:
    trajectory = repr([{"content": ("line one", "line two"), "role": "user", "name": "A", "extra": None},
                       {"content": "ok", "role": "user", "name": "B"}])
    trace = load_trace(mad("AG2", trajectory))
    assert [s.agent for s in trace.steps] == ["A", "B"] and "line one" in trace.steps[0].content


def test_a_yaml_like_dump_is_read_as_messages() -> None:
    dump = "- content: Compute 6 times 7.\n  role: user\n  name: Asker\n- content: 'It is 42.'\n  role: user\n  name: Answerer\n"
    trace = load_trace(mad("AG2", dump))
    assert [s.agent for s in trace.steps] == ["Asker", "Answerer"] and trace.steps[1].content == "It is 42."


@pytest.mark.parametrize(
    ("payload", "says"),
    [
        ("[" * 5000 + "]" * 5000, "nested deeper"),
        ("[{'content': 'cut off here', 'role': 'user', 'name': 'A'}, {'content': 'never ends", "neither JSON nor a Python literal"),
        ("{'a': __import__('os').system('echo owned')}", "neither JSON nor a Python literal"),
    ],
)
def test_unreadable_or_hostile_payloads_fall_back_to_text_with_a_warning(payload: str, says: str) -> None:
    items = list(iter_traces([mad("AG2", payload)]))
    assert len(items) == 1
    trace = items[0]
    assert not isinstance(trace, TraceFormatError)
    assert trace.steps and any(says in w and "read as plain text" in w for w in trace.warnings)


def test_large_literal_is_not_evaluated(monkeypatch: pytest.MonkeyPatch) -> None:
    from mast.normalize import _payload

    monkeypatch.setattr(_payload, "MAX_LITERAL_CHARS", 100)
    trace = load_trace(mad("AG2", repr(AG2_MESSAGES)))
    assert any("too large" in w for w in trace.warnings)
