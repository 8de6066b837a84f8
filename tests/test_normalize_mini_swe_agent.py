"""mini-SWE-agent's v2 envelope (written for mast from the documented shape; the real bare lists are in the corpus, read by test_real_files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mast.normalize import load_trace

SYSTEM = "You are a helpful assistant. To finish, run `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`."


def _envelope(messages: list[dict[str, Any]], **info: Any) -> dict[str, Any]:
    return {
        "info": {
            "model_stats": {"instance_cost": 0.01, "api_calls": 2},
            "config": {"model": {"model_name": "gpt-5-mini"}},
            "mini_version": "2.0.0",
            "exit_status": "Submitted",
            **info,
        },
        "messages": messages,
        "trajectory_format": "mini-swe-agent-1.1",
    }


def test_the_envelope_reads_commands_from_extra_actions_and_the_submission_from_info(tmp_path: Path) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Please solve this issue: the parser drops the last line."},
        {
            "role": "assistant",
            "content": "THOUGHT: look first.",
            "extra": {"actions": [{"command": "cat parser.py"}], "cost": 0.003},
        },
        {
            "role": "user",
            "content": "<returncode>0</returncode>\n<output>\ndef parse(...)\n</output>",
            "extra": {"returncode": 0},
        },
        {
            "role": "assistant",
            "content": "Done.\n\n```mswea_bash_command\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff\n```",
            "extra": {"actions": [{"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"}]},
        },
        {"role": "user", "content": "diff --git a/parser.py b/parser.py"},
    ]
    path = tmp_path / "run.traj.json"
    path.write_text(
        json.dumps(_envelope(messages, submission="diff --git a/parser.py b/parser.py\n+keep the last line")),
        encoding="utf-8",
    )
    trace = load_trace(path)
    assert trace.source.format == "mini_swe_agent" and trace.source.variant == "mini-swe-agent-1.1"
    assert trace.task is not None and "drops the last line" in trace.task
    assert trace.final_output == "diff --git a/parser.py b/parser.py\n+keep the last line"
    calls = [c for s in trace.steps for c in s.tool_calls]
    assert [c.arguments for c in calls] == [
        {"command": "cat parser.py"},
        {"command": "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"},
    ]
    results = [r for s in trace.steps for r in s.tool_results]
    assert results and results[0].call_id == calls[0].id and "def parse" in results[0].output
    assert trace.status == "ok" and trace.agents[0].model == "gpt-5-mini"


def test_a_run_that_hit_its_limits_is_an_error_with_the_agents_last_words(tmp_path: Path) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Please solve this issue: flaky test."},
        {"role": "assistant", "content": "Trying again.\n\n```bash\npytest -x\n```"},
        {"role": "user", "content": "<returncode>1</returncode>\n<output>\n1 failed\n</output>"},
    ]
    path = tmp_path / "limits.traj.json"
    path.write_text(
        json.dumps(_envelope(messages, exit_status="LimitsExceeded", submission="")), encoding="utf-8"
    )
    trace = load_trace(path)
    assert trace.status == "error" and trace.error == "LimitsExceeded"
    assert [c.arguments for s in trace.steps for c in s.tool_calls] == [{"command": "pytest -x"}]
