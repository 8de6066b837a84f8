"""``mast hooks`` (issue 33, point 3): one results file per judge, one result per session, reasons in the log.

The labeller is called in-process (what the detached process runs) on a real Claude Code transcript
of the real-file corpus beside the repository (``tests/_data.py``); a model judge is the local fake server.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from _data import REAL, SKIP_REASON
from click.testing import CliRunner

from mast.cli import main
from mast.evaluation.judges import JudgeTally
from mast.integrations import hooks
from mast.normalize import load_traces
from mast.testing import FakeLLMServer, Reply, judge_answer

CLAUDE = REAL / "claude_code" / "claude_code_log_representative_messages.jsonl"


@pytest.fixture
def transcript(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    if not CLAUDE.is_file():
        pytest.skip(SKIP_REASON)
    # The hooks label only what lies in Claude Code's own projects folder (CLAUDE_CONFIG_DIR's here).
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    path = tmp_path / "claude" / "projects" / "app" / "session.jsonl"
    path.parent.mkdir(parents=True)
    shutil.copy(CLAUDE, path)
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_each_judge_has_its_own_results_file_in_the_project_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    detectors = hooks.default_results("/home/me/app", {})
    model = hooks.default_results("/home/me/app", {"model": "openai/gpt-4o-mini"})
    assert detectors.parent == model.parent == hooks.project_dir("/home/me/app")
    assert (detectors.name, model.name) == ("detectors.jsonl", "openai-gpt-4o-mini.jsonl")
    monkeypatch.setenv("MAST_MODEL", "anthropic/claude-haiku")  # the agent's environment names the model
    assert hooks.default_results("/home/me/app").name == "anthropic-claude-haiku.jsonl"
    assert hooks.default_results("/home/me/app", {"judge": "detectors"}).name == "detectors.jsonl"
    assert (
        hooks.default_results("/home/me/app", {"judge": "both"}).name
        == "anthropic-claude-haiku+detectors.jsonl"
    )


def test_one_model_behind_two_endpoints_is_two_judges_and_the_name_holds_no_credential(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A fake server first, the real provider later, under one model name: two files, never one
    # file the second endpoint is refused from (which had stopped the hook labelling for good).
    local = hooks.judge_name({"model": "openai/gpt-4o-mini", "api_base": "http://127.0.0.1:9/v1"})
    other = hooks.judge_name({"model": "openai/gpt-4o-mini", "api_base": "http://127.0.0.1:8/v1"})
    plain = hooks.judge_name({"model": "openai/gpt-4o-mini"})
    assert len({local, other, plain}) == 3 and plain == "openai-gpt-4o-mini"
    assert local.startswith("openai-gpt-4o-mini-via-127.0.0.1-9-")
    keyed = hooks.judge_name({"model": "m", "api_base": "https://user:s3cret@gw.example:8443/v1?key=abc"})
    assert "s3cret" not in keyed and "abc" not in keyed and keyed.startswith("m-via-gw.example-8443-")
    # the same endpoint written with or without credentials or a trailing slash is one judge
    assert keyed == hooks.judge_name({"model": "m", "api_base": "https://gw.example:8443/v1/"})
    monkeypatch.setenv("MAST_API_BASE", "http://127.0.0.1:9/v1")  # the agent's environment names it
    assert hooks.judge_name({"model": "openai/gpt-4o-mini"}) == local


def test_detectors_then_a_model_are_kept_apart_and_report_and_diff_read_the_folder(
    transcript: Path, tmp_path: Path
) -> None:
    session = load_traces(transcript, format="claude_code")[0].trace_id
    folder = tmp_path / "hooks" / "app"
    hooks.label_session(
        transcript, session, folder / f"{hooks.judge_name({})}.jsonl", quiet=0, judge_options={}
    )
    answer = judge_answer(["1.3"])
    with FakeLLMServer(lambda body: Reply(content=answer)) as server:
        judge = {"model": "openai/fake-judge", "api_base": server.base_url}
        line = hooks.label_session(
            transcript,
            session,
            folder / f"{hooks.judge_name(judge)}.jsonl",
            quiet=0,
            judge_options={**judge, "api_key": "k", "cache": False},
            tool="claude-code",
        )
    assert "labelled" in line, line
    files = sorted(p.name for p in folder.glob("*.jsonl"))
    assert files == ["detectors.jsonl", f"{hooks.judge_name(judge)}.jsonl"]
    assert files[1].startswith("openai-fake-judge-via-127.0.0.1-")
    assert all(len(_lines(folder / name)) == 1 for name in files)

    runner = CliRunner()
    made = runner.invoke(main, ["report", str(folder), "-o", str(tmp_path / "r.html"), "--n-boot", "0"])
    assert made.exit_code == 0, made.output
    assert files[1] in made.output and "one per judge" in made.output
    compared = runner.invoke(main, ["diff", str(folder), str(folder), "--json"])
    assert compared.exit_code == 0, compared.output
    payload = json.loads(compared.output.splitlines()[-1])
    assert Path(payload["base"]).name == "detectors.jsonl" and Path(payload["new"]).name == files[1]


def test_the_mixed_file_advice_applies_to_hooks() -> None:
    from mast.diagnosis import Diagnosis, JudgeInfo

    tally = JudgeTally()
    tally.add(Diagnosis(trace_id="s", judge=JudgeInfo(kind="detectors", taxonomy_version="mast-v3")))
    tally.add(Diagnosis(trace_id="s", judge=JudgeInfo(kind="llm", model="m", taxonomy_version="mast-v3")))
    with pytest.raises(Exception, match="mast hooks"):
        tally.check("app.jsonl")


def test_a_stop_that_waited_for_the_lock_does_not_bring_back_an_older_result(
    transcript: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Stop's process waits for the results file while SessionEnd's writes the final transcript's result."""
    session = load_traces(transcript, format="claude_code")[0].trace_id
    results = tmp_path / "detectors.jsonl"
    real_open = hooks._open_results
    injected: list[bool] = []

    def open_after_session_end(path: Path, wait_s: float) -> Any:
        if not injected:  # the Stop process, about to wait for the lock: meanwhile the session ends
            injected.append(True)
            with transcript.open("a") as fh:
                fh.write(transcript.read_text().splitlines()[0] + "\n")
            hooks.label_session(transcript, session, results, quiet=0, judge_options={}, tool="claude-code")
        return real_open(path, wait_s)

    monkeypatch.setattr(hooks, "_open_results", open_after_session_end)
    hooks.label_session(
        transcript, session, results, quiet=1, judge_options={}, sleep=lambda s: None, tool="claude-code"
    )
    final = load_traces(transcript, format="claude_code")[0].content_hash()
    (row,) = _lines(results)  # one result per session and judge...
    assert row["trace_hash"] == final  # ...of the latest transcript


def test_the_hook_log_gives_the_reason_of_an_error(transcript: Path, tmp_path: Path) -> None:
    session = load_traces(transcript, format="claude_code")[0].trace_id
    refusal = {"error": {"message": "model 'fake-judge' is not served here", "type": "invalid_request_error"}}
    with FakeLLMServer(lambda body: Reply(status=400, body=refusal)) as server:
        line = hooks.label_session(
            transcript,
            session,
            tmp_path / "m.jsonl",
            quiet=0,
            tool="claude-code",
            judge_options={
                "model": "openai/fake-judge",
                "api_base": server.base_url,
                "api_key": "k",
                "cache": False,
                "max_retries": 0,
            },
        )
    assert "error (" in line and "is not served here" in line, line


def test_hooks_with_one_output_file_refuse_a_second_judge_at_the_hook_and_in_the_labeller(
    tmp_path: Path,
) -> None:
    # `-o FILE` is one file whatever the judge: a detectors run then a model run must not mix there.
    from mast.batch.judges import configured_judge
    from mast.integrations.hooks import _label_now, _other_judge
    from mast.judge.config import JudgeConfig

    session = tmp_path / "s.jsonl"
    session.write_text(
        '{"type":"user","sessionId":"s1","uuid":"u1","message":{"role":"user","content":"list files"}}\n'
        '{"type":"assistant","sessionId":"s1","uuid":"u2","parentUuid":"u1","message":{"role":"assistant",'
        '"content":[{"type":"text","text":"Done: there are 3 files."}]}}\n'
    )
    results = tmp_path / "one.jsonl"
    first = _label_now(session, "s1", results, {"judge": "detectors"}, "claude_code")
    assert "not labelled" not in first and results.read_text().count("\n") == 1
    other = configured_judge(
        JudgeConfig.from_options(model="openai/fake", api_base="http://127.0.0.1:9/v1")
    ).info
    assert _other_judge(results, other, chosen=True) is not None
    again = _label_now(
        session, "s1", results, {"model": "openai/fake", "api_base": "http://127.0.0.1:9/v1"}, "claude_code"
    )
    assert "not labelled" in again and "another judge" in again
    assert results.read_text().count("\n") == 1
