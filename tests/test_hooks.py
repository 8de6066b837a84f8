"""``mast hooks``: installed into Claude Code / Codex settings without clobbering them, and run as the tools run it.

``mast hooks run`` is run here as the tools run it: a new process, the event JSON on stdin (Claude
Code) or as the last argument (Codex notify), on real transcripts from ``tests/data``. It starts a
detached process that does the labelling; the tests wait for that process's results line.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from _data import REAL, TRACES
from click.testing import CliRunner

import mast
from mast.cli import main
from mast.errors import UsageError
from mast.integrations import hooks
from mast.testing import FakeLLMServer, Reply, judge_answer

ROOT = Path(__file__).resolve().parent.parent
CLAUDE = REAL / "claude_code" / "claude_code_log_representative_messages.jsonl"
CODEX = TRACES / "codex_rollout" / "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl"
CODEX_THREAD = "019b7f94-51b4-7593-922e-ba12b5b73b52"

SETTINGS = {
    "model": "opus",
    "hooks": {
        "Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "notify-send 'Claude is done'"}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./scripts/check-bash.sh", "timeout": 5}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "echo 'unbalanced"}, {"type": "command", "command": "mast-lint --x"}]}],
    },
    "permissions": {"allow": ["Bash(ls:*)"]},
}
CONFIG_TOML = 'model = "o3"\napproval_policy = "on-request"\n\n[mcp_servers.docs]\ncommand = "docs-server"\nargs = ["--port", "9000"]\n'


def cli(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


# -- install / uninstall -------------------------------------------------------------------------------


def test_claude_code_install_uninstall_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(json.dumps(SETTINGS, indent=4))
    out = tmp_path / "results.jsonl"
    cli("hooks", "install", "claude-code", "--settings", str(path), "-o", str(out), "--model", "openai/gpt-4.1-mini")
    cli("hooks", "install", "claude-code", "--settings", str(path), "-o", str(out), "--model", "openai/gpt-4.1-mini")
    installed = json.loads(path.read_text())
    for event in hooks.CLAUDE_EVENTS:
        ours = [h for g in installed["hooks"][event] for h in g["hooks"] if hooks.is_ours(h["command"])]
        assert len(ours) == 1, event  # installing twice replaces, never doubles
        assert f"-o {out}" in ours[0]["command"] and "--model openai/gpt-4.1-mini" in ours[0]["command"]
    assert installed["hooks"]["Stop"][0] == SETTINGS["hooks"]["Stop"][0]
    assert installed["hooks"]["PreToolUse"] == SETTINGS["hooks"]["PreToolUse"]
    assert installed["model"] == "opus" and installed["permissions"] == SETTINGS["permissions"]
    assert "removed 3" in cli("hooks", "uninstall", "claude-code", "--settings", str(path))
    assert path.read_text() == json.dumps(SETTINGS, indent=4)  # byte for byte: its indent, no final newline
    assert "no mast hook" in cli("hooks", "uninstall", "claude-code", "--settings", str(path))


def test_claude_code_settings_keep_their_layout(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    original = json.dumps({"z": 1, "a": {"b": [1, 2]}, "env": {"NAME": "Zoë"}}, indent="\t", ensure_ascii=False) + "\n"
    path.write_text(original)
    cli("hooks", "install", "claude-code", "--settings", str(path))
    assert path.read_text().startswith('{\n\t"z": 1,\n\t"a": {') and path.read_text().endswith("}\n")
    cli("hooks", "uninstall", "claude-code", "--settings", str(path))
    assert path.read_text() == original


def test_a_linked_settings_file_stays_a_link(tmp_path: Path) -> None:
    target = tmp_path / "dotfiles" / "claude-settings.json"
    target.parent.mkdir()
    target.write_text(json.dumps(SETTINGS))
    link = tmp_path / "settings.json"
    link.symlink_to(target)
    cli("hooks", "install", "claude-code", "--settings", str(link))
    assert link.is_symlink() and "SessionEnd" in json.loads(target.read_text())["hooks"]
    cli("hooks", "uninstall", "claude-code", "--settings", str(link))
    assert link.is_symlink() and json.loads(target.read_text()) == SETTINGS


def test_claude_code_project_scope_and_a_broken_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cli("hooks", "install", "claude-code", "--project")
    written = json.loads((tmp_path / ".claude" / "settings.json").read_text())
    assert set(written["hooks"]) == set(hooks.CLAUDE_EVENTS)
    cli("hooks", "uninstall", "claude-code", "--project")
    assert not (tmp_path / ".claude" / "settings.json").exists()  # install created it: not left as {} (issue 33)
    broken = tmp_path / "broken.json"
    broken.write_text('{"hooks": ')
    result = CliRunner().invoke(main, ["hooks", "install", "claude-code", "--settings", str(broken)])
    assert result.exit_code == 2 and "not valid JSON" in result.output and broken.read_text() == '{"hooks": '


def test_codex_install_uninstall_round_trip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    path = tmp_path / "codex" / "config.toml"
    path.parent.mkdir()
    path.write_text(CONFIG_TOML)
    cli("hooks", "install", "codex", "--quiet", "2m")
    import tomllib

    config = tomllib.loads(path.read_text())
    assert hooks.is_ours(config["notify"]) and config["notify"][-2:] == ["--quiet", "120s"]
    assert config["model"] == "o3" and config["mcp_servers"]["docs"]["args"] == ["--port", "9000"]
    cli("hooks", "install", "codex")  # again: replaced, still one notify
    assert path.read_text().count("notify =") == 1
    cli("hooks", "uninstall", "codex")
    assert path.read_text() == CONFIG_TOML  # byte for byte


def test_codex_uninstall_removes_the_config_install_created(tmp_path: Path) -> None:
    path = tmp_path / "codex" / "config.toml"
    cli("hooks", "install", "codex", "--settings", str(path))
    cli("hooks", "install", "codex", "--settings", str(path))  # again: still the file mast created
    assert "had created" in cli("hooks", "uninstall", "codex", "--settings", str(path))
    assert not path.exists() and not path.parent.exists()  # nor the folder install made it in
    cli("hooks", "install", "codex", "--settings", str(path))
    with path.open("a") as fh:
        fh.write('model = "o3"\n')  # the user's own setting since: the file stays
    cli("hooks", "uninstall", "codex", "--settings", str(path))
    assert path.read_text() == 'model = "o3"\n'
    path.write_text("")  # an empty file of the user's stays too
    cli("hooks", "install", "codex", "--settings", str(path))
    cli("hooks", "uninstall", "codex", "--settings", str(path))
    assert path.exists() and path.read_text() == ""


def test_codex_install_leaves_another_notify_alone(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('notify = ["say", "done"]\n')
    result = CliRunner().invoke(main, ["hooks", "install", "codex", "--settings", str(path)])
    assert result.exit_code == 2 and "already has notify" in result.output
    assert path.read_text() == 'notify = ["say", "done"]\n'
    assert "no mast notify" in cli("hooks", "uninstall", "codex", "--settings", str(path))


def test_install_checks_the_judge_options(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    result = CliRunner().invoke(main, ["hooks", "install", "claude-code", "--settings", str(path), "--judge", "sometimes"])
    assert result.exit_code == 2 and "invalid judge option" in result.output and not path.exists()


def test_install_refuses_a_key() -> None:
    with pytest.raises(mast.UsageError, match="keys stay in the environment"):
        hooks.hook_argv("claude-code", judge={"api_key": "sk-x"})


# -- run ---------------------------------------------------------------------------------------------


def hook_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAST_") and not k.endswith("_API_KEY")}
    env.update(PYTHONPATH=str(ROOT), MAST_CACHE_DIR=str(tmp_path / "cache"), MAST_HOOKS_DIR=str(tmp_path / "hooks"))
    env.setdefault("CLAUDE_CONFIG_DIR", str(tmp_path))  # transcripts under tmp_path/projects are Claude Code's
    env.update(extra)
    return env


def run_hook(args: list[str], env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-m", "mast", "hooks", "run", *args], input=stdin or "", env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done


def wait_for(check: Any, what: str, limit: float = 180.0) -> Any:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def log_lines(results: Path) -> list[str]:
    log = hooks.log_path(results)
    return [line for line in log.read_text().splitlines() if " session " in line] if log.exists() else []


@pytest.mark.slow
def test_claude_code_session_end_labels_in_the_background_once(tmp_path: Path) -> None:
    transcript = tmp_path / "projects" / "-home-me-app" / "test_session.jsonl"
    transcript.parent.mkdir(parents=True)
    shutil.copy(CLAUDE, transcript)
    session = mast.load_trace(transcript).trace_id
    event = json.dumps({"session_id": session, "transcript_path": str(transcript), "cwd": "/home/me/app",
                        "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})
    results = tmp_path / "results.jsonl"
    release = threading.Event()

    async def held(body: dict[str, Any]) -> Reply:
        while not release.is_set():  # the judge answers only when the test says so
            await asyncio.sleep(0.05)
        return Reply(content=judge_answer(["3.1"], summary="Ended before the user's last question was answered."))

    with FakeLLMServer(held) as server:
        env = hook_env(tmp_path, MAST_MODEL="openai/fake-judge", MAST_API_BASE=server.base_url,
                       OPENAI_API_KEY="fake-key", MAST_MAX_RETRIES="0")
        try:
            done = run_hook(["--tool", "claude-code", "-o", str(results)], env, stdin=event)
            # the hook has returned while its labelling process waits on the judge: detached, in the background
            wait_for(lambda: server.requests, "the labelling process to call the judge")
            assert lines(results) == []
        finally:
            release.set()
        assert done.stdout.count("\n") == 1 and session in done.stdout and str(results) in done.stdout
        wait_for(lambda: lines(results), "the result")
        (result,) = lines(results)
        assert result["trace_id"] == session and result["status"] == "judged"
        assert [m["code"] for m in result["failure_modes"] if m["present"]] == ["3.1"]
        assert result["judge"]["model"] == "openai/fake-judge"
        calls = len(server.chat_requests)

        again = run_hook(["--tool", "claude-code", "-o", str(results)], env, stdin=event)  # the same event again
        assert "last verdict: modes 3.1" in again.stdout
        wait_for(lambda: len(log_lines(results)) >= 2, "the second labelling process")
        assert "nothing new" in log_lines(results)[1]
        assert len(lines(results)) == 1 and len(server.chat_requests) == calls


@pytest.mark.slow
def test_codex_notify_labels_the_rollout_with_the_detectors(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    rollout = home / "sessions" / "2026" / "01" / "02" / CODEX.name
    rollout.parent.mkdir(parents=True)
    shutil.copy(CODEX, rollout)
    payload = json.dumps({"type": "agent-turn-complete", "thread-id": CODEX_THREAD, "turn-id": "12345",
                          "cwd": "/home/me/app", "input-messages": ["fix the test"], "last-assistant-message": "done"})
    env = hook_env(tmp_path, CODEX_HOME=str(home))
    done = run_hook(["--tool", "codex", "--quiet", "0", payload], env)
    results = hooks.default_results("/home/me/app").relative_to(hooks.hooks_dir())
    results = tmp_path / "hooks" / results  # the per-project default, under MAST_HOOKS_DIR
    assert str(results) in done.stdout
    (result,) = wait_for(lambda: lines(results), "the result")
    assert result["trace_id"] == CODEX_THREAD and result["status"] == "judged"
    assert result["judge"]["kind"] == "detectors"  # no model configured: the offline detectors
    run_hook(["--tool", "codex", "--quiet", "0", payload], env)
    wait_for(lambda: len(log_lines(results)) >= 2, "the second labelling process")
    assert len(lines(results)) == 1


@pytest.mark.slow
def test_a_bad_event_never_fails_the_hook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    done = run_hook([], hook_env(tmp_path), stdin="this is not json")  # a real process: exit 0, one line
    assert "hook skipped" in done.stderr and "not JSON" in done.stderr and done.stdout == ""
    monkeypatch.setenv("CODEX_HOME", str(tmp_path))
    missing = json.dumps({"session_id": "s1", "transcript_path": str(tmp_path / "gone.jsonl"), "hook_event_name": "Stop"})
    for args, stdin, reason in [([], missing, "does not exist"), ([], '["a list"]', "not a JSON object"),
                                (["--tool", "codex", '{"thread-id": "0000000000000000"}'], "", "no rollout")]:
        result = CliRunner().invoke(main, ["hooks", "run", *args], input=stdin)
        assert result.exit_code == 0 and reason in result.output, result.output


def test_stop_waits_for_a_quiet_transcript(tmp_path: Path) -> None:
    """After Stop the session is labelled once its transcript stopped changing for the quiet period; one waiter per session."""
    transcript = tmp_path / "session.jsonl"
    shutil.copy(CLAUDE, transcript)
    results = tmp_path / "results.jsonl"
    waits: list[str] = []

    def grow() -> None:
        with transcript.open("a") as fh:
            fh.write(transcript.read_text().splitlines()[0] + "\n")

    def sleep(seconds: float) -> None:
        waits.append(f"{len(lines(results))} results")
        if len(waits) == 1:
            grow()  # the session went on during the first quiet period: wait again
            # meanwhile, the next Stop event's process finds this one waiting and leaves at once
            assert "another process is waiting" in hooks.label_session(transcript, "test_session", results, quiet=300,
                                                                        judge_options={}, sleep=lambda s: None)

    line = hooks.label_session(transcript, "test_session", results, quiet=300, judge_options={}, sleep=sleep)
    assert waits == ["0 results", "0 results"] and "labelled" in line and len(lines(results)) == 1
    first_hash = lines(results)[0]["trace_hash"]
    grow()  # the session was resumed later and grew: its new whole-session result replaces the old one
    hooks.label_session(transcript, "test_session", results, quiet=0, judge_options={})
    (result,) = lines(results)
    assert result["trace_id"] == "test_session" and result["trace_hash"] != first_hash
    # the waiter's lock went with it: a later Stop waits (and labels) again
    assert "nothing new" in hooks.label_session(transcript, "test_session", results, quiet=1, judge_options={}, sleep=lambda s: None)


def test_a_transcript_that_is_not_the_tools_own_is_skipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a regular file in the tool's own format is labelled: never /etc/passwd, a link out, or a fifo."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "home" / ".codex"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    link = tmp_path / "home" / ".claude" / "projects" / "-app" / "s.jsonl"
    link.parent.mkdir(parents=True)
    link.symlink_to("/etc/passwd")
    outside = tmp_path / "elsewhere.jsonl"
    shutil.copy(CLAUDE, outside)
    link_out = link.with_name("linked-out.jsonl")
    link_out.symlink_to(outside)  # a real transcript, but the link leads out of ~/.claude/projects
    notes = tmp_path / "notes.jsonl"
    notes.write_text('{"todo": "buy milk"}\n')
    own_notes = link.with_name("notes.jsonl")  # in the tool's folder, yet not its format
    own_notes.write_text('{"todo": "buy milk"}\n')
    codex_own = tmp_path / "home" / ".codex" / "sessions" / "claude.jsonl"
    codex_own.parent.mkdir(parents=True)
    shutil.copy(CLAUDE, codex_own)
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    results = tmp_path / "out" / "r.jsonl"
    cases = [("claude-code", "/etc/passwd", "lies, outside"),
             ("claude-code", str(link), "is a link to /etc/passwd"),
             ("claude-code", str(link_out), "is a link to"),
             ("claude-code", str(notes), "lies, outside"),
             ("claude-code", f"{link.parent}/../../../../notes.jsonl", f"resolves to {notes},"),  # no link
             ("claude-code", str(outside), "lies, outside"),  # a real transcript, named directly
             ("claude-code", str(fifo), "not a regular file"),
             ("codex", str(CLAUDE), "lies, outside"),
             ("claude-code", str(own_notes), "not a claude_code transcript"),
             ("codex", str(codex_own), "not a codex_rollout transcript")]
    for tool, path, reason in cases:
        event = json.dumps({"session_id": "s1", "thread-id": "0000000000000000", "transcript_path": path,
                            "hook_event_name": "SessionEnd"})
        result = CliRunner().invoke(main, ["hooks", "run", "--tool", tool, "-o", str(results)], input=event)
        assert result.exit_code == 0 and result.output.count("\n") == 1, result.output
        assert "hook skipped" in result.output and reason in result.output, result.output
    assert not (tmp_path / "out").exists()  # nothing written: no results, no log
    # a link that stays inside the tool's folder is the tool's own (a dotfiles layout)
    inside = link.with_name("real.jsonl")
    shutil.copy(CLAUDE, inside)
    event = hooks.HookEvent("claude-code", "s1", link.with_name("alias.jsonl"), None, "Stop", final=False)
    event.transcript.symlink_to(inside)
    hooks.check_transcript(event)


def test_only_transcripts_in_the_claude_projects_folder_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever path the event names (plain, with ``..``, through a linked folder), it is read only
    when it resolves inside ~/.claude/projects or $CLAUDE_CONFIG_DIR/projects."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    projects = tmp_path / "home" / ".claude" / "projects" / "-app"
    projects.mkdir(parents=True)
    stray = tmp_path / "secrets" / "s.jsonl"  # a real Claude Code transcript, outside the folder
    stray.parent.mkdir()
    shutil.copy(CLAUDE, stray)
    (projects / "linked").symlink_to(stray.parent, target_is_directory=True)

    def event(path: Path | str) -> hooks.HookEvent:
        return hooks.HookEvent("claude-code", "s1", Path(path), None, "Stop", final=False)

    for path in (stray, projects / ".." / ".." / ".." / ".." / "secrets" / "s.jsonl", projects / "linked" / "s.jsonl"):
        with pytest.raises(UsageError, match="outside"):
            hooks.check_transcript(event(path))
    inside = projects / "s.jsonl"
    shutil.copy(CLAUDE, inside)
    hooks.check_transcript(event(inside))
    hooks.check_transcript(event(projects / ".." / "-app" / "s.jsonl"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(stray.parent.parent / "secrets"))
    with pytest.raises(UsageError, match="outside"):  # CLAUDE_CONFIG_DIR's folder is its projects/
        hooks.check_transcript(event(stray))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    shutil.copytree(stray.parent, tmp_path / "projects")
    hooks.check_transcript(event(tmp_path / "projects" / "s.jsonl"))
    results = tmp_path / "out" / "r.jsonl"
    payload = json.dumps({"session_id": "s1", "transcript_path": str(stray), "hook_event_name": "SessionEnd"})
    result = CliRunner().invoke(main, ["hooks", "run", "--tool", "claude-code", "-o", str(results)], input=payload)
    assert result.exit_code == 0 and result.output.count("\n") == 1
    assert result.output.startswith("mast: hook skipped:") and "outside" in result.output, result.output
    assert not results.parent.exists()


@pytest.mark.slow
def test_the_hook_does_not_wait_for_stdin_to_close(tmp_path: Path) -> None:
    """The event is read as soon as it is whole; with nothing on stdin the hook gives up after a short wait."""
    env = hook_env(tmp_path)
    event = json.dumps({"session_id": "s1", "transcript_path": str(tmp_path / "gone.jsonl"), "hook_event_name": "Stop"})
    for sent, reason in [(event + "\n", "does not exist"), ("", "no event on stdin")]:
        process = subprocess.Popen([sys.executable, "-m", "mast", "hooks", "run", "--tool", "claude-code"], env=env,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert process.stdin is not None
        process.stdin.write(sent)
        process.stdin.flush()  # and stdin stays open, as a tool may keep it
        try:
            process.wait(timeout=60)  # waiting for stdin to close would hang here
            assert process.stderr is not None
            err = process.stderr.read()
            assert process.returncode == 0 and "hook skipped" in err and reason in err, err
        finally:
            process.kill()
            process.wait()
            for pipe in (process.stdin, process.stdout, process.stderr):
                pipe.close()  # type: ignore[union-attr]


def test_a_transcript_swapped_for_a_link_while_the_labeller_waits_is_not_read(tmp_path: Path) -> None:
    """The quiet period passes, then the transcript is a link to another file: nothing of it is judged or written."""
    transcript = tmp_path / "session.jsonl"
    shutil.copy(CLAUDE, transcript)
    secret = tmp_path / "elsewhere.jsonl"
    secret.write_text(CLAUDE.read_text().replace("test_session", "leaked_session"))
    results = tmp_path / "results.jsonl"
    from mast._files import check_file

    checked = check_file(transcript)  # what the check saw: the quiet transcript itself

    def swap(seconds: float) -> None:  # the quiet wait: the file becomes a link to another session
        transcript.unlink()
        transcript.symlink_to(secret)

    line = hooks.label_session(transcript, "test_session", results, quiet=5, judge_options={}, sleep=swap)
    assert "not labelled" in line and "leaked_session" not in (results.read_text() if results.exists() else "")
    assert not lines(results), line
    # and the read itself refuses the link even when the check came before the swap
    items = list(hooks_scan(transcript, checked))
    assert len(items) == 1 and items[0].error is not None and "symbolic link" in str(items[0].error)


def hooks_scan(transcript: Path, check: object) -> list[object]:
    from mast.batch.inputs import scan

    return list(scan([transcript], checks={str(transcript): check}))  # type: ignore[dict-item]


# -- issue 33: a relative transcript path, a bad MAST_* variable in the hook log ----------------------


@pytest.mark.slow
def test_a_relative_transcript_path_is_taken_from_the_events_cwd(tmp_path: Path) -> None:
    """Claude Code events carry ``cwd``: a relative transcript path is read from there, as the labeller reads it."""
    transcript = tmp_path / "projects" / "-app" / "s.jsonl"
    transcript.parent.mkdir(parents=True)
    shutil.copy(CLAUDE, transcript)
    session = mast.load_trace(transcript).trace_id
    event = json.dumps({"session_id": session, "transcript_path": "projects/-app/s.jsonl", "cwd": str(tmp_path),
                        "hook_event_name": "SessionEnd"})
    results = tmp_path / "out" / "r.jsonl"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    done = subprocess.run([sys.executable, "-m", "mast", "hooks", "run", "--tool", "claude-code", "-o", str(results)],
                          input=event, env=hook_env(tmp_path), cwd=elsewhere, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "labelled now" in done.stdout, done.stderr
    (result,) = wait_for(lambda: lines(results), "the result")
    assert result["trace_id"] == session and result["status"] == "judged"
    assert hooks.parse_event("claude-code", json.loads(event)).transcript == transcript


def test_a_relative_transcript_path_without_a_cwd_is_skipped_on_the_hook_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hook never says "labelled now" for a path the detached labeller (in another folder) cannot open."""
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    transcript = tmp_path / "projects" / "-app" / "s.jsonl"
    transcript.parent.mkdir(parents=True)
    shutil.copy(CLAUDE, transcript)
    monkeypatch.chdir(tmp_path)  # the path resolves from the hook's own folder, not from the labeller's
    started: list[object] = []
    monkeypatch.setattr(hooks, "spawn_labeller", lambda *args: started.append(args) or 0)
    results = tmp_path / "out" / "r.jsonl"
    for extra in ({}, {"cwd": "app"}):
        event = json.dumps({"session_id": "s1", "transcript_path": "projects/-app/s.jsonl", "hook_event_name": "SessionEnd",
                            **extra})
        result = CliRunner().invoke(main, ["hooks", "run", "--tool", "claude-code", "-o", str(results)], input=event)
        assert result.exit_code == 0 and result.output.count("\n") == 1, result.output
        assert result.output.startswith("mast: hook skipped: transcript_path 'projects/-app/s.jsonl' is a relative path")
    assert started == [] and not results.parent.exists()


def test_a_bad_mast_variable_is_written_to_the_hook_log_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The hooks log gives the reason of every skipped session, also one skipped for a misspelt MAST_* value."""
    import io

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path))
    monkeypatch.setenv("MAST_HOOKS_DIR", str(tmp_path / "hooks"))
    monkeypatch.setenv("MAST_REDACT", "enabled")
    transcript = tmp_path / "projects" / "-app" / "s.jsonl"
    transcript.parent.mkdir(parents=True)
    shutil.copy(CLAUDE, transcript)
    monkeypatch.setattr(hooks, "spawn_labeller", lambda *args: pytest.fail("a labeller was started"))
    event = json.dumps({"session_id": "s1", "transcript_path": str(transcript), "cwd": "/home/me/app",
                        "hook_event_name": "Stop"})
    log = hooks.log_path(hooks.default_results("/home/me/app"))
    assert log.is_relative_to(tmp_path / "hooks") and not log.exists()
    result = CliRunner().invoke(main, ["hooks", "run", "--tool", "claude-code"], input=event)  # the click command
    assert result.exit_code == 0 and "hook skipped" in result.output and "MAST_REDACT" in result.output, result.output
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    assert hooks.run_main(["--tool", "claude-code"], stdin=io.StringIO(event)) == 0  # python -m mast's fast path
    assert "hook skipped" in stderr.getvalue() and "MAST_REDACT" in stderr.getvalue()
    logged = log.read_text().splitlines()
    assert len(logged) == 2, logged
    for line in logged:
        assert " session s1 (Stop): hook skipped: " in line and "MAST_REDACT='enabled'" in line
