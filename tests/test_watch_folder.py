"""``mast watch FOLDER``: session files (``~/.claude/projects``, ``~/.codex/sessions``) labelled once they go quiet."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path

import pytest
from _data import REAL, TRACES

from mast.batch import ResultsFile, configured_judge
from mast.batch.watch import Watcher
from mast.judge.config import JudgeConfig
from mast.results import read_results
from mast.sources.folder import FolderSource

ROOT = Path(__file__).resolve().parent.parent
REAL_CLAUDE = REAL / "claude_code"
CLAUDE = [REAL_CLAUDE / "claude_code_log_representative_messages.jsonl", REAL_CLAUDE / "claude_code_log_sidechain_integrated.jsonl"]
CODEX = TRACES / "codex_rollout" / "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl"


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def _watcher(folder: Path, results: ResultsFile, state: Path, clock: Clock) -> Watcher:
    source = FolderSource(folder)
    judge = configured_judge(JudgeConfig.from_options(judge="detectors"))
    return Watcher(source.url, results, judge, state_path=state, source=source, clock=clock, quiet=timedelta(seconds=60))


async def test_a_session_file_is_labelled_once_after_it_went_quiet(tmp_path: Path) -> None:
    folder = tmp_path / "projects" / "-home-me-app"
    folder.mkdir(parents=True)
    session = folder / "session.jsonl"
    lines = CLAUDE[0].read_text().splitlines(keepends=True)
    session.write_text("".join(lines[:4]))  # the session is still being written
    clock, out, state = Clock(), tmp_path / "r.jsonl", tmp_path / "state.json"
    with ResultsFile(out) as results:
        watcher = _watcher(tmp_path / "projects", results, state, clock)
        first = await watcher.poll()
        assert (first.new, len(first.labelled), first.pending) == (1, 0, 1)
        clock.now += 50
        session.write_text("".join(lines))  # more lines arrived: the quiet period starts again
        assert len((await watcher.poll()).labelled) == 0
        clock.now += 59
        assert len((await watcher.poll()).labelled) == 0
        clock.now += 1
        done = await watcher.poll()
        assert [d.trace_id for d in done.labelled] == ["test_session"] and done.pending == 0
        clock.now += 600
        assert (await watcher.poll()).new == 0  # unchanged since: never listed or labelled again
    (result,) = read_results(out)
    assert result.source.path == str(session.resolve()) and result.status == "judged"
    assert len(result.trace_hash or "") > 0


async def test_an_unreadable_file_is_reported_and_the_others_labelled(tmp_path: Path) -> None:
    (tmp_path / "sessions").mkdir()
    shutil.copy(CODEX, tmp_path / "sessions" / CODEX.name)
    (tmp_path / "sessions" / "notes.json").write_text('{"todo": "not a trace" ')
    clock = Clock()
    with ResultsFile(tmp_path / "r.jsonl") as results:
        watcher = _watcher(tmp_path / "sessions", results, tmp_path / "state.json", clock)
        await watcher.poll()
        clock.now += 61
        report = await watcher.poll()
        assert [d.trace_id for d in report.labelled] == ["019b7f94-51b4-7593-922e-ba12b5b73b52"]
        assert isinstance(watcher.source, FolderSource) and "notes.json" in watcher.source.skipped


async def test_a_session_that_grew_is_labelled_again_and_replaces_its_older_result(tmp_path: Path) -> None:
    # A resumed Claude Code session: labelled, its file grows, a watcher runs again -> one row per session.
    import csv

    from click.testing import CliRunner

    from mast.cli import main

    folder = tmp_path / "projects" / "-home-me-app"
    folder.mkdir(parents=True)
    session = folder / "session.jsonl"
    lines = CLAUDE[0].read_text().splitlines(keepends=True)
    session.write_text("".join(lines[:6]))
    clock, out, state = Clock(), tmp_path / "r.jsonl", tmp_path / "state.json"
    for _ in range(2):
        with ResultsFile(out) as results:
            watcher = _watcher(tmp_path / "projects", results, state, clock)
            await watcher.poll()
            clock.now += 61
            assert [d.trace_id for d in (await watcher.poll()).labelled] == ["test_session"]
            watcher.close()
        session.write_text("".join(lines))  # the session was resumed: more lines
        os.utime(session, ns=(int(clock.now * 1e9), int(clock.now * 1e9)))
        clock.now += 1
    (result,) = read_results(out)
    assert result.trace_hash is not None
    table = tmp_path / "t.csv"
    done = CliRunner().invoke(main, ["export", str(out), "-o", str(table)])
    assert done.exit_code == 0, done.output
    with table.open() as f:
        assert [row["trace_id"] for row in csv.DictReader(f)] == ["test_session"]


def _results(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.endswith("}")]


def _wait(check: object, what: str, limit: float = 180.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if check():  # type: ignore[operator]
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.mark.slow
def test_mast_watch_folder_survives_kill_9_and_restart(tmp_path: Path) -> None:
    folder = tmp_path / "projects"
    (folder / "a").mkdir(parents=True)
    (folder / "b").mkdir()
    shutil.copy(CLAUDE[0], folder / "a" / CLAUDE[0].name)
    out = tmp_path / "results.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAST_") and not k.endswith("_API_KEY")}
    env.update(PYTHONPATH=str(ROOT), MAST_CACHE_DIR=str(tmp_path / "cache"))
    argv = [sys.executable, "-m", "mast", "watch", str(folder), "-o", str(out), "--quiet", "3s", "--every", "0.3s",
            "--judge", "detectors"]
    state = out.with_name(out.name + ".watch.json")

    def pending() -> list[str]:
        try:
            return list(json.loads(state.read_text())["pending"])
        except (OSError, ValueError, KeyError):
            return []

    first = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(lambda: len(_results(out)) == 1, "the first session's result")
        shutil.copy(CLAUDE[1], folder / "b" / CLAUDE[1].name)  # a second session is written...
        _wait(lambda: pending() == [f"b/{CLAUDE[1].name}"], "the watcher to see it")
        first.send_signal(signal.SIGKILL)  # ...and mast is killed while it waits out the quiet period
        first.wait(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    second = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(lambda: len(_results(out)) >= 2, "the second session's result")
        _wait(lambda: not pending(), "the pending list to empty")
        time.sleep(4.0)  # more polls past the quiet period: nothing is labelled twice
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=60)
    ids = [r["trace_id"] for r in _results(out)]
    assert sorted(ids) == sorted({"test_session", "88a8d761-7b9a-4bf1-a8ca-c1febe6bf358"})
    assert second.returncode == 0


def test_watch_refuses_a_results_file_of_another_judge_before_judging(tmp_path: Path) -> None:
    # Watching a folder with the offline detectors first and with a model later (the natural path)
    # would append the model's answers beside the detectors'; the watcher refuses, as label does.
    from click.testing import CliRunner

    from mast.cli import main
    from mast.testing import FakeLLMServer

    out = tmp_path / "results.jsonl"
    first = CliRunner().invoke(main, ["label", str(ROOT / "data" / "examples" / "ag2-exchange-loop.json"),
                                      "-o", str(out), "--judge", "detectors"])
    assert first.exit_code == 0, first.output
    folder = tmp_path / "projects"
    folder.mkdir()
    with FakeLLMServer() as server:
        watched = CliRunner().invoke(main, ["watch", str(folder), "-o", str(out), "--once", "--quiet", "0s",
                                            "-m", "openai/fake", "--api-base", server.base_url, "--api-key", "x"])
        assert server.chat_requests == []
    assert watched.exit_code == 2, watched.output
    assert "holds results of another judge or settings (1 by detectors)" in watched.output
    assert len(read_results(out)) == 1


def _swap_for_link(session: Path, target: Path) -> None:
    session.unlink()
    session.symlink_to(target)


@pytest.mark.parametrize("when", ["after the last count", "during the quiet period"])
async def test_a_file_swapped_for_a_link_is_never_read(tmp_path: Path, when: str) -> None:
    """A session file replaced by a link out of the folder between the check and the read: skipped with one line."""
    folder = tmp_path / "projects" / "-home-me-app"
    folder.mkdir(parents=True)
    session = folder / "session.jsonl"
    shutil.copy(CLAUDE[0], session)
    target = tmp_path / "secret.jsonl"  # a real session outside the folder: it would parse and be judged
    shutil.copy(CLAUDE[1], target)
    marker = json.loads(target.read_text().splitlines()[0]).get("sessionId") or "no-session-id"
    clock, out, state = Clock(), tmp_path / "r.jsonl", tmp_path / "state.json"
    with ResultsFile(out) as results:
        watcher = _watcher(tmp_path / "projects", results, state, clock)
        source = watcher.source
        assert isinstance(source, FolderSource)
        assert (await watcher.poll()).pending == 1
        if when == "during the quiet period":
            _swap_for_link(session, target)
            clock.now += 61
            await watcher.poll()  # the count changed (a link now): quiet again from here
            clock.now += 61
        else:
            counts = source.span_counts

            def count_then_swap(ids: list[str]) -> dict[str, int]:
                found = counts(ids)  # the check: a quiet regular file
                _swap_for_link(session, target)  # ...swapped before the read
                return found

            source.span_counts = count_then_swap  # type: ignore[method-assign]
            clock.now += 61
        report = await watcher.poll()
    assert report.labelled == [] and report.traces == {} and report.pending == 0
    (reason,) = source.skipped.values()
    assert "symbolic link" in reason and "\n" not in reason, reason
    text = out.read_text() if out.exists() else ""
    assert marker not in text and str(target) not in text and read_results(out) == [] if out.exists() else True


async def test_a_file_replaced_by_another_file_after_its_count_is_not_read(tmp_path: Path) -> None:
    """Same name, another inode (a rename over it) after the check: refused, the new file waits for its own quiet."""
    folder = tmp_path / "projects"
    folder.mkdir()
    session = folder / "session.jsonl"
    shutil.copy(CLAUDE[0], session)
    clock, out, state = Clock(), tmp_path / "r.jsonl", tmp_path / "state.json"
    with ResultsFile(out) as results:
        watcher = _watcher(folder, results, state, clock)
        source = watcher.source
        assert isinstance(source, FolderSource)
        await watcher.poll()
        counts = source.span_counts

        def count_then_replace(ids: list[str]) -> dict[str, int]:
            found = counts(ids)
            other = folder / ".other"
            shutil.copy(CLAUDE[1], other)
            other.replace(session)
            return found

        source.span_counts = count_then_replace  # type: ignore[method-assign]
        clock.now += 61
        report = await watcher.poll()
    assert report.traces == {} and "replaced by another file" in next(iter(source.skipped.values()))
