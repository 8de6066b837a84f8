"""A run survives any one file (issue 34 point 2): files are read in a worker under a memory limit.

The bombs of ``tests/_bombs.py`` sit beside a good trace in a folder that ``mast label`` reads
under a 2 GB address-space limit: the run finishes, the good trace is judged, each bomb gets one
error line. A test-only format plugin crashes its reader (SIGSEGV) or asks for 3 GiB: the file
gets an error row, the good trace beside it is still read, and the next scan starts a new worker.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import _bombs
import pytest

from mast.batch.inputs import scan
from mast.errors import UsageError
from mast.normalize import base
from mast.normalize.isolated import ENV_VAR, memory_limit_from_env

REPO = Path(__file__).resolve().parent.parent
LIMIT = 2 * 2**30

PLUGIN = """
import os, signal
from mast.normalize.base import TraceFormat, register

class Hostile(TraceFormat):
    name = "hostile_for_test"
    description = "a reader that crashes or eats memory (tests only)"
    example = "HOSTILE SEGV"
    priority = 1

    def detect(self, raw):
        return 1.0 if raw.head.startswith("HOSTILE") else 0.0

    def parse(self, raw):
        if "SEGV" in raw.head:
            os.kill(os.getpid(), signal.SIGSEGV)
        bytearray(3 * 2**30)  # over the worker's 2 GiB: MemoryError there, not in the run
        yield from ()

register(Hostile())
"""


@pytest.fixture
def hostile_plugin(tmp_path: Path) -> Iterator[None]:
    """The plugin as an importable module (the worker imports it too), unregistered afterwards."""
    folder = tmp_path / "plugin"
    folder.mkdir()
    (folder / "hostile_format_for_test.py").write_text(PLUGIN, encoding="utf-8")
    sys.path.insert(0, str(folder))
    try:
        __import__("hostile_format_for_test")
        yield
    finally:
        base._REGISTRY.pop("hostile_for_test", None)
        sys.modules.pop("hostile_format_for_test", None)
        sys.path.remove(str(folder))


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


def test_each_bomb_beside_a_good_trace_under_a_2_gb_limit_gets_one_error_line(tmp_path: Path) -> None:
    bombs = _bombs.build_all(tmp_path / "runs")
    out = tmp_path / "results.jsonl"
    env = {**os.environ, ENV_VAR: "2G"}
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mast",
            "label",
            str(tmp_path / "runs"),
            "--judge",
            "detectors",
            "-o",
            str(out),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        env=env,
        preexec_fn=_limit_memory,
    )
    results = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    judged = [r for r in results if r["status"] == "judged"]
    assert [r["trace_id"] for r in judged] == ["good"], run.stderr  # the run finished and judged it
    for name, path in bombs.items():
        if name == "good":
            continue
        # One line on the terminal for the bomb, naming the cap; at most one error row in the results
        # (a whole unreadable file has no trace id to resume by, so it is reported, not written).
        lines = [line for line in run.stderr.splitlines() if path.name in line]
        assert len(lines) == 1 and "MAX_EXPANDED_BYTES_PER_FILE" in lines[0], (name, run.stderr)
        rows = [r for r in results if r["source"]["path"] == str(path)]
        assert len(rows) <= 1 and all(r["status"] == "error" for r in rows), (name, rows)


def test_a_reader_that_segfaults_gives_an_error_row_and_the_run_goes_on(
    tmp_path: Path, hostile_plugin: None
) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a_crash.txt").write_text("HOSTILE SEGV\n", encoding="utf-8")
    (folder / "b_memory.txt").write_text("HOSTILE MEMORY\n", encoding="utf-8")
    _bombs.good_trace(folder / "c_good.json")
    items = list(scan([folder], read_memory=LIMIT))
    by_file = {Path(i.source.path or "").name: i for i in items}
    assert set(by_file) == {"a_crash.txt", "b_memory.txt", "c_good.json"}
    crash, memory, good = by_file["a_crash.txt"], by_file["b_memory.txt"], by_file["c_good.json"]
    assert (
        crash.whole_file and "ended the reading process" in str(crash.error) and "\n" not in str(crash.error)
    )
    assert memory.error is not None and "too large to read in memory" in str(memory.error)
    assert good.trace is not None and good.trace_hash == good.trace.content_hash()
    again = list(scan([folder / "c_good.json"], read_memory=LIMIT))  # a fresh worker after the crash
    assert [i.trace_id for i in again] == ["good"]


def test_the_memory_limit_variable_is_parsed_strictly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert memory_limit_from_env() == LIMIT
    for given, want in (("512M", 512 * 2**20), ("3g", 3 * 2**30), ("off", None), ("4294967296", 2**32)):
        monkeypatch.setenv(ENV_VAR, given)
        assert memory_limit_from_env() == want, given
    for bad in ("lots", "2X", "1M"):
        monkeypatch.setenv(ENV_VAR, bad)
        with pytest.raises(UsageError, match=ENV_VAR):
            memory_limit_from_env()
