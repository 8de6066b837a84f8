"""Records that wrap a run with its own id, task and outcome; tasks delivered as instructions; warnings kept.

Every input here is written for these tests (AdaMAST's documented trace shapes, a Codex rollout whose
user turn only points at its AGENTS.md, runs whose payload cannot be read).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mast.cli import main
from mast.judge import classify
from mast.normalize import detect_format, iter_traces, load_trace, load_traces
from mast.normalize._envelope import read_envelope, status_word
from mast.testing import FakeLLMServer, judge_answer
from mast.trace import Trace

ADAMAST = {
    "trace_id": "demo-1",
    "task": "Return the final calculation",
    "messages": [
        {"role": "system", "content": "You are Calculator. Work step by step."},
        {"role": "user", "content": "What is 17 * 23?"},
        {"role": "assistant", "content": "17 * 23 = 381"},
    ],
    "outcome": {"status": "failure", "score": 0.0},
    "metadata": {"benchmark": "arith-demo", "seed": 4},
}


def test_adamast_messages_record_keeps_its_id_task_and_outcome() -> None:
    fmt, confidence = detect_format(ADAMAST)
    assert fmt.name == "wrapped_run" and confidence == 0.9
    trace = load_trace(ADAMAST)
    assert (trace.trace_id, trace.task, trace.status) == ("demo-1", "Return the final calculation", "error")
    assert trace.final_output == "17 * 23 = 381"
    assert [s.agent for s in trace.steps] == ["system", "user", "Calculator"]
    assert trace.metadata["benchmark"] == "arith-demo" and trace.metadata["envelope"]["outcome"] == {"status": "failure", "score": 0.0}


@pytest.mark.parametrize(
    ("key", "payload"),
    [
        ("trajectory", [{"role": "user", "content": "Sort 3 1 2"}, {"role": "assistant", "content": "1 2 3"}]),
        ("raw_trajectory", json.dumps([{"role": "user", "content": "Sort 3 1 2"}, {"role": "assistant", "content": "1 2 3"}])),
        ("raw_trajectory", repr([{"role": "user", "content": "Sort 3 1 2"}, {"role": "assistant", "content": "1 2 3", "name": None}])),
        ("raw_trajectory", "user: Sort 3 1 2\nassistant: 1 2 3"),
    ],
)
def test_adamast_trajectory_shapes(key: str, payload: Any) -> None:
    record = {"id": 42, "goal": "Sort the numbers", key: payload, "success": True}
    trace = load_trace(record)
    assert trace.source.format == "wrapped_run" and trace.source.variant == key
    assert (trace.trace_id, trace.task, trace.status) == ("42", "Sort the numbers", "ok")
    assert [s.content for s in trace.steps] == ["Sort 3 1 2", "1 2 3"] and trace.final_output == "1 2 3"


def test_a_jsonl_of_wrapped_runs_and_a_broken_one(tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    second = {"run_id": "r2", "question": "Capital of Peru?", "messages": [{"role": "user", "content": "Capital of Peru?"},
              {"role": "assistant", "content": "Lima"}], "score": 1.0}
    path.write_text(json.dumps(ADAMAST) + "\n" + json.dumps(second) + "\n{oops\n", encoding="utf-8")
    items = list(iter_traces(path))
    traces = [i for i in items if isinstance(i, Trace)]
    assert [t.trace_id for t in traces] == ["demo-1", "r2"] and [t.status for t in traces] == ["error", "ok"]
    assert len(items) == 3 and "line 3" in str(items[2])


def test_envelope_spellings() -> None:
    env = read_envelope({"run_id": "x", "instruction": {"description": "Book a table"}, "outcome": "passed", "answer": "Booked."})
    assert (env.trace_id, env.task, env.status, env.final_output) == ("x", "Book a table", "ok", "Booked.")
    assert read_envelope({"result": {"status": "error", "reason": "timeout"}}).status == "error"
    assert read_envelope({"outcome": {"success": False, "error": "wrong total"}}).error == "wrong total"
    assert [status_word(v) for v in ("Succeeded", "FAILED", 0.5, 1, 0, None, "maybe")] == ["ok", "error", None, "ok", "error", None, None]


def test_request_bodies_stay_openai_chat() -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    assert detect_format(body)[0].name == "openai_chat"
    assert detect_format([{"role": "user", "content": "hi"}])[0].name == "openai_chat"


# --- Codex: a user turn that only points at instructions ---------------------------------------

AGENTS_MD = ("# AGENTS.md instructions for /srv/oncall\n\n<INSTRUCTIONS>\nAlert INC-4172: checkout latency p99 above 2 s since 09:10.\n"
             "Goals: find the cause, propose a rollback or fix, do not restart production pods.\n</INSTRUCTIONS>")


def _rollout(user_text: str) -> list[dict[str, Any]]:
    def item(role: str, text: str) -> dict[str, Any]:
        kind = "input_text" if role == "user" else "output_text"
        return {"timestamp": "2026-03-01T09:20:00Z", "type": "response_item", "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}}

    return [
        {"timestamp": "2026-03-01T09:20:00Z", "type": "session_meta", "payload": {"id": "sess-9", "cwd": "/srv/oncall"}},
        item("user", AGENTS_MD),
        item("user", user_text),
        item("assistant", "The latency comes from the new cache client; rolling it back is the fix."),
    ]


def test_codex_pointer_task_carries_the_instructions_marked() -> None:
    trace = load_trace(_rollout("Begin the investigation of INC-4172."))
    assert trace.task is not None and trace.task.startswith("Begin the investigation of INC-4172.")
    assert "[Instructions delivered to the agent separately (session instructions / AGENTS.md)]" in trace.task
    assert "do not restart production pods" in trace.task
    assert trace.steps[0].kind == "system"  # the AGENTS.md block stays context, not a user turn


def test_codex_self_contained_task_is_left_alone() -> None:
    trace = load_trace(_rollout("show tools"))
    assert trace.task == "show tools"


# --- warnings reach the user -------------------------------------------------------------------


def _unreadable_mad() -> dict[str, Any]:
    return {"mas_name": "AG2", "trace_id": 5, "trace": {"trajectory": "[{'content': 'half a message"}, "mast_annotation": {}}


def test_mast_normalize_prints_the_warnings(tmp_path: Path) -> None:
    path = tmp_path / "mad.json"
    path.write_text(json.dumps([_unreadable_mad()]), encoding="utf-8")
    result = CliRunner().invoke(main, ["normalize", str(path)])
    assert result.exit_code == 0
    assert "warning: the trajectory text opens like a list or object but is neither JSON nor a Python literal" in result.output


def test_the_diagnosis_keeps_the_trace_warnings() -> None:
    trace = load_traces([_unreadable_mad()])[0]
    assert trace.warnings
    answer = judge_answer([], summary="Nothing went wrong.")
    with FakeLLMServer(lambda body: answer) as server:
        diagnosis = classify(trace, model="openai/fake-judge", api_base=server.base_url, api_key="test-key", hints=False, cache=False,
                             timeout=5.0, max_retries=1)
    assert diagnosis.status == "judged"
    assert any(w.startswith("trace: the trajectory text opens like a list or object") for w in diagnosis.warnings)
