"""Offline detectors on what coding agents print (issue 33, point 9).

A Claude Code session that runs the same ``pytest`` three times with the same failure is step
repetition (1.3) though the ``Bash`` tool's free-text ``description`` differs each time; a tool
that answers ``{"status": "error", ...}`` or a non-zero exit code in JSON failed. Proven on real
sessions of the real-file corpus beside the repository (reached through ``tests/_data.py``, never
copied into it; the tests skip when it is absent), with precision kept on every real session and on the clean examples.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest
from _data import REAL, SKIP_REASON, TRACES

from mast.judge.detectors import run_detectors
from mast.judge.detectors._view import json_error
from mast.normalize import load_traces
from mast.trace import Trace

REPO = Path(__file__).resolve().parents[1]
SESSION = REAL / "claude_code" / "claude_code_spotter_tool_heavy.jsonl"
FAILURE = (
    "============================= test session starts ==============================\n"
    "collected 12 items\n\ntests/test_cart.py ....F.......\n\n"
    "FAILED tests/test_cart.py::test_total_with_discount - assert 90 == 81\n"
    "========================= 1 failed, 11 passed in 0.42s ========================="
)
DESCRIPTIONS = (
    "Run the test suite",
    "Re-run tests to check the discount fix",
    "Run pytest again after the edit",
)


def _real_session() -> list[dict[str, Any]]:
    if not SESSION.is_file():
        pytest.skip(SKIP_REASON)
    return [json.loads(line) for line in SESSION.read_text().splitlines() if line.strip()]


def _grown(
    lines: list[dict[str, Any]], commands: list[str], results: list[str], final: str
) -> list[dict[str, Any]]:
    """The real session, then Bash calls and results written the way that session writes them."""
    envelope = {
        k: lines[-1][k] for k in ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch")
    }
    parent = lines[-1]["uuid"]
    out = list(lines)

    def add(kind: str, message: dict[str, Any]) -> None:
        nonlocal parent
        me = str(uuid.uuid4())
        out.append(
            {
                **envelope,
                "parentUuid": parent,
                "type": kind,
                "message": message,
                "uuid": me,
                "timestamp": "2026-02-10T23:10:00.000Z",
            }
        )
        parent = me

    for number, (command, result) in enumerate(zip(commands, results, strict=True)):
        call = f"toolu_mast{number:04d}"
        add(
            "assistant",
            {
                "role": "assistant",
                "type": "message",
                "model": "claude-opus-4-6",
                "content": [
                    {
                        "type": "tool_use",
                        "id": call,
                        "name": "Bash",
                        "input": {
                            "command": command,
                            "description": DESCRIPTIONS[number % len(DESCRIPTIONS)],
                        },
                    }
                ],
            },
        )
        add(
            "user",
            {
                "role": "user",
                "content": [
                    {"tool_use_id": call, "type": "tool_result", "content": result, "is_error": True}
                ],
            },
        )
    add(
        "assistant",
        {
            "role": "assistant",
            "type": "message",
            "model": "claude-opus-4-6",
            "content": [{"type": "text", "text": final}],
        },
    )
    return out


def _trace(tmp_path: Path, lines: list[dict[str, Any]]) -> Trace:
    path = tmp_path / "session.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (trace,) = load_traces(path, format="claude_code")
    return trace


def test_different_commands_with_descriptions_are_not_repetition(tmp_path: Path) -> None:
    lines = _real_session()
    commands = [
        "python -m pytest tests/test_cart.py -q",
        "python -m pytest tests/test_tax.py -q",
        "git diff --stat",
    ]
    trace = _trace(
        tmp_path,
        _grown(
            lines,
            commands,
            [FAILURE, FAILURE.replace("cart", "tax"), "1 file changed"],
            "Both test files still fail.",
        ),
    )
    assert not run_detectors(trace).present("1.3")


def test_errors_as_json_and_exit_codes_are_errors() -> None:
    assert (
        json_error('{"status": "error", "message": "payment method declined"}') == "payment method declined"
    )
    assert json_error('{"ok": false, "error": {"code": 402}}') is not None
    assert json_error('{"exit_code": 2, "stdout": "", "stderr": "usage: make [target]"}') is not None
    assert json_error('{"returncode": 0, "stdout": "built"}') is None
    assert json_error('{"status": "ok", "message": "booked", "error": null}') is None
    assert json_error("the error field is documented below") is None


def _real_sessions() -> list[Path]:
    found = sorted((REAL / "claude_code").glob("*.jsonl")) + sorted(
        (TRACES / "codex_rollout").glob("*.jsonl")
    )
    if not found:
        pytest.skip(SKIP_REASON)
    return found


def test_precision_on_real_coding_agent_sessions_and_the_clean_examples() -> None:
    """Every real Claude Code and Codex session of the corpus, and the clean examples: no verdict finding."""
    paths = [
        *_real_sessions(),
        REPO / "data" / "examples" / "clean-sales-total.json",
        REPO / "data" / "examples" / "deploy-log-polling.jsonl",
    ]
    flagged = {}
    for path in paths:
        for trace in load_traces(path):
            verdicts = [f.detector for f in run_detectors(trace).findings if f.verdict]
            if verdicts:
                flagged[path.name] = sorted(set(verdicts))
    # The one real session that does fail the way a detector says: its build loop (the test below).
    assert flagged == {"claude_code_viewer_npm_build_loop.jsonl": ["step_repetition"]} or (
        flagged == {} and not (REAL / "claude_code" / "claude_code_viewer_npm_build_loop.jsonl").is_file()
    )


def test_a_real_subagent_running_the_same_build_four_times_is_step_repetition() -> None:
    # claude-code-viewer's sample session (MIT): a subagent runs `npm run build` four times in a
    # row, a new free-text description each time, no edit between, the same TypeError each time.
    # Before the descriptions were left out of a call's signature, the build loop went unseen here.
    import mast

    path = REAL / "claude_code" / "claude_code_viewer_npm_build_loop.jsonl"
    if not path.is_file():
        pytest.skip(f"{path} is not in the corpus yet (it is listed for the corpus in the closing note)")
    (trace,) = load_traces(path)
    builds = {
        i
        for i, s in enumerate(trace.steps)
        for c in s.tool_calls
        if c.name == "Bash" and (c.arguments or {}).get("command") == "npm run build"
    }
    assert len(builds) == 4
    assert run_detectors(trace).present("1.3")
    repeated = mast.classify(trace, judge="detectors").verdict("1.3")
    assert repeated is not None and repeated.present and "npm run build" in repeated.explanation
    assert {e.step for e in repeated.evidence} & builds


def test_codex_exec_command_runs_differing_only_in_limits_and_chunk_ids_are_step_repetition() -> None:
    # Codex's exec_command as recent rollouts write it: each call sets its own yield_time_ms,
    # max_output_tokens and justification, and each output opens with a new chunk id and wall time.
    from mast.trace import Step, ToolCall, ToolResult

    steps = [Step(index=0, kind="message", agent="user", role="user", content="Fix the failing cart test.")]
    for n, (wait, cap, chunk) in enumerate(
        [(1000, 4000, "853167"), (30000, 12000, "a21e41"), (5000, 8000, "ebd87a")]
    ):
        arguments = {
            "cmd": "python -m pytest tests/test_cart.py -q",
            "yield_time_ms": wait,
            "max_output_tokens": cap,
            "justification": f"attempt {n + 1} to see the failure",
        }
        steps.append(
            Step(
                index=0,
                kind="tool_call",
                agent="codex",
                role="assistant",
                content="",
                tool_calls=[ToolCall(id=f"call_{n}", name="exec_command", arguments=arguments)],
            )
        )
        output = (
            f"Chunk ID: {chunk}\nWall time: 0.{n + 4}1 seconds\nProcess exited with code 1\n"
            f"Original token count: 88\nOutput:\n{FAILURE}"
        )
        steps.append(
            Step(
                index=0,
                kind="tool_result",
                agent="tool",
                role="tool",
                tool_results=[ToolResult(call_id=f"call_{n}", output=output, is_error=True)],
            )
        )
    steps.append(
        Step(index=0, kind="message", agent="codex", role="assistant", content="The tests pass now.")
    )
    assert run_detectors(Trace(steps=steps)).present("1.3")


def test_the_same_command_with_other_output_is_not_repetition() -> None:
    from mast.trace import Step, ToolCall, ToolResult

    steps = [Step(index=0, kind="message", agent="user", role="user", content="Fix the failing cart test.")]
    for n, failing in enumerate(["test_total_with_discount", "test_total_with_tax", "test_empty_cart"]):
        steps.append(
            Step(
                index=0,
                kind="tool_call",
                agent="codex",
                role="assistant",
                content="",
                tool_calls=[
                    ToolCall(
                        id=f"call_{n}",
                        name="exec_command",
                        arguments={"cmd": "python -m pytest -q", "yield_time_ms": 1000 * n},
                    )
                ],
            )
        )
        steps.append(
            Step(
                index=0,
                kind="tool_result",
                agent="tool",
                role="tool",
                tool_results=[
                    ToolResult(
                        call_id=f"call_{n}",
                        output=f"Chunk ID: {n}a{n}\nFAILED tests/test_cart.py::{failing}",
                        is_error=True,
                    )
                ],
            )
        )
    assert not run_detectors(Trace(steps=steps)).present("1.3")
