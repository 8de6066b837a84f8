"""A run survives any one file (issue 34 point 2): files are read in a worker under a memory limit.

The bombs of ``tests/_bombs.py`` sit beside a good trace in a folder that ``mast label`` reads
under a 2 GB address-space limit: the run finishes, the good trace is judged, each bomb gets one
error line. A test-only format plugin crashes its reader (SIGSEGV) or asks for 3 GiB: the file
gets an error row, the good trace beside it is still read, and the next scan starts a new worker.

The worker streams: a test-only format that yields traces as its spec file asks (how many, how big,
where to wait for the test or to crash) shows the first row reaching the caller while the worker is
still reading, a file of more trace bytes than the worker's memory limit read whole, a caller that
stops early leaving the worker ready for the next file, a crash mid-file keeping the rows before it,
and the worker reaped when the interpreter that started it exits or is killed.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import _bombs
import pytest

from mast.batch.inputs import scan
from mast.errors import UsageError
from mast.normalize import base
from mast.normalize._isolated import _POOL, ENV_VAR, memory_limit_from_env, read_file

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


SCRIPTED = """
import json, os, signal, time
from pathlib import Path
from mast.normalize._build import assemble_trace
from mast.normalize.base import TraceFormat, register
from mast.trace import Step

class Scripted(TraceFormat):
    name = "scripted_for_test"
    description = "traces as a JSON spec after SCRIPTED asks (tests only)"
    example = 'SCRIPTED {"n": 3}'
    priority = 1

    def detect(self, raw):
        return 1.0 if raw.head.startswith("SCRIPTED") else 0.0

    def parse(self, raw):
        spec = json.loads(Path(raw.label).read_text(encoding="utf-8").removeprefix("SCRIPTED"))
        progress = spec.get("progress")
        for i in range(spec["n"]):
            if i == spec.get("gate_at"):  # wait for the test to open the gate (a minute at most)
                for _ in range(6000):
                    if os.path.exists(spec["gate"]):
                        break
                    time.sleep(0.01)
                else:
                    raise RuntimeError("the gate was never opened")
            if i == spec.get("crash_at"):
                os.kill(os.getpid(), signal.SIGSEGV)
            if progress:
                with open(progress, "a", encoding="utf-8") as fh:
                    fh.write(f"{i}\\n")
            text = f"{i} " + "x" * spec.get("size", 10)  # a new string each time: nothing shared
            step = Step(index=0, kind="message", agent="user", role="user", content=text)
            yield assemble_trace([step], source=self.source(raw, record=i), trace_id=f"t{i}")

register(Scripted())
"""


def _plugin(tmp_path: Path, module: str, source: str, format_name: str) -> Iterator[Path]:
    """A plugin as an importable module (the worker imports it too), unregistered afterwards."""
    folder = tmp_path / "plugin"
    folder.mkdir(exist_ok=True)
    (folder / f"{module}.py").write_text(source, encoding="utf-8")
    sys.path.insert(0, str(folder))
    try:
        __import__(module)
        yield folder
    finally:
        base._REGISTRY.unregister(format_name)
        sys.modules.pop(module, None)
        sys.path.remove(str(folder))


@pytest.fixture
def hostile_plugin(tmp_path: Path) -> Iterator[None]:
    for _ in _plugin(tmp_path, "hostile_format_for_test", PLUGIN, "hostile_for_test"):
        yield


@pytest.fixture
def scripted_plugin(tmp_path: Path) -> Iterator[Path]:
    """The folder the scripted format's module is in (for a subprocess's import path)."""
    yield from _plugin(tmp_path, "scripted_format_for_test", SCRIPTED, "scripted_for_test")


def _spec(path: Path, **spec: object) -> Path:
    path.write_text("SCRIPTED " + json.dumps(spec), encoding="utf-8")
    return path


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


def test_the_first_row_arrives_while_the_worker_is_still_reading(
    tmp_path: Path, scripted_plugin: Path
) -> None:
    gate, progress = tmp_path / "gate", tmp_path / "progress"
    path = _spec(tmp_path / "gated.txt", n=5, gate_at=1, gate=str(gate), progress=str(progress))
    rows = read_file(path, memory_limit=LIMIT)
    first = next(rows)
    assert first.trace is not None and first.trace.trace_id == "t0"
    # The worker waits at the gate before trace 1: had it to finish the file before sending, the
    # first row would only come once the gate's wait gave up, followed by its error.
    assert progress.read_text(encoding="utf-8") == "0\n"
    gate.touch()
    assert [row.trace.trace_id for row in rows if row.trace] == ["t1", "t2", "t3", "t4"]


def test_a_file_of_more_trace_bytes_than_the_memory_limit_is_read_whole(
    tmp_path: Path, scripted_plugin: Path
) -> None:
    # 48 traces of 8 MiB each (384 MiB of text, twice that pickled) under a 300 MiB address space,
    # of which the interpreter with mast imported takes about 120: held at once, they could not be.
    limit = 300 * 2**20
    path = _spec(tmp_path / "big.txt", n=48, size=8 * 2**20)
    seen = []
    for row in read_file(path, memory_limit=limit):
        assert row.error is None, row.error
        assert row.trace is not None and len(row.trace.steps[0].content) > 8 * 2**20
        seen.append(row.trace.trace_id)
    assert seen == [f"t{i}" for i in range(48)]


def test_a_caller_that_stops_early_leaves_the_worker_ready_for_the_next_file(
    tmp_path: Path, scripted_plugin: Path
) -> None:
    # The pool is the process's: workers that earlier tests left idle (another limit, two files
    # open at once, an iteration the garbage collector had not closed yet) are not this test's.
    _POOL.close_all()
    progress = tmp_path / "progress"
    many = _spec(tmp_path / "many.txt", n=20000, size=200, progress=str(progress))
    rows = read_file(many, memory_limit=LIMIT)
    assert next(rows).trace is not None
    (worker,) = _POOL.workers()
    rows.close()  # the worker is far from the end of the file: the pipe holds a few hundred rows
    read = len(progress.read_text(encoding="utf-8").splitlines())
    assert read < 20000  # it stopped reading the file
    few = _spec(tmp_path / "few.txt", n=3)
    assert [row.trace.trace_id for row in read_file(few, memory_limit=LIMIT) if row.trace] == [
        "t0",
        "t1",
        "t2",
    ]
    assert _POOL.workers() == [worker]  # the same worker, neither lost nor replaced
    # And through scan: a consumer that drops the scan half-way does the same.
    items = scan([many], read_memory=LIMIT)
    assert next(items).trace_id == "t0"
    items.close()
    assert [i.trace_id for i in scan([few], read_memory=LIMIT)] == ["t0", "t1", "t2"]
    assert _POOL.workers() == [worker]


def test_a_crash_mid_file_keeps_the_rows_before_it_and_ends_the_file_with_one_error(
    tmp_path: Path, scripted_plugin: Path
) -> None:
    path = _spec(tmp_path / "crashes.txt", n=10, crash_at=3)
    rows = list(read_file(path, memory_limit=LIMIT))
    # The rows that had come over stand (t0 at least: a file's first row is sent at once; t1 and t2
    # may still have been in the worker's batch), then one error row for the file.
    got = [row.trace.trace_id for row in rows[:-1] if row.trace]
    assert got == ["t0", "t1", "t2"][: len(got)] and got and len(rows) == len(got) + 1
    last = rows[-1]
    assert last.whole_file and last.trace is None
    assert last.error == "reading it ended the reading process (a crash, or over MAST_READ_MEMORY=2048M)"
    items = list(scan([path], read_memory=LIMIT))
    assert [i.trace_id for i in items[:-1]] == ["t0", "t1", "t2"][: len(items) - 1] and items[-1].whole_file
    ok = _spec(tmp_path / "ok.txt", n=1)  # a fresh worker for the next file
    assert [row.trace.trace_id for row in read_file(ok, memory_limit=LIMIT) if row.trace] == ["t0"]


def test_files_read_side_by_side_do_not_mix(tmp_path: Path, scripted_plugin: Path) -> None:
    a = _spec(tmp_path / "a.txt", n=300, size=2000)
    b = _spec(tmp_path / "b.txt", n=200, size=3000)
    # Two iterations open at once in one thread (a lock held across a file would deadlock here).
    got: dict[str, list[str]] = {"a": [], "b": []}
    for ra, rb in zip(read_file(a, memory_limit=LIMIT), read_file(b, memory_limit=LIMIT), strict=False):
        for key, row in (("a", ra), ("b", rb)):
            assert row.trace is not None and row.trace.source.path == str(tmp_path / f"{key}.txt")
            got[key].append(row.trace.trace_id)
    assert got["a"] == got["b"] == [f"t{i}" for i in range(200)]
    # And from threads.
    results: dict[int, list[str]] = {}

    def read(n: int) -> None:
        path = _spec(tmp_path / f"thread{n}.txt", n=50 + n)
        results[n] = [row.trace.trace_id for row in read_file(path, memory_limit=LIMIT) if row.trace]

    threads = [threading.Thread(target=read, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {n: [f"t{i}" for i in range(50 + n)] for n in range(3)}


def test_without_a_limit_the_file_is_read_in_this_process_as_a_stream(
    tmp_path: Path, scripted_plugin: Path
) -> None:
    gate, progress = tmp_path / "gate", tmp_path / "progress"
    path = _spec(tmp_path / "gated.txt", n=3, gate_at=1, gate=str(gate), progress=str(progress))
    rows = read_file(path, memory_limit=None)
    assert next(rows).trace is not None and progress.read_text(encoding="utf-8") == "0\n"
    gate.touch()
    assert len(list(rows)) == 2


CHILD = """
import sys, time
from pathlib import Path
sys.path.insert(0, {plugin!r})
import scripted_format_for_test
from mast.normalize._isolated import _POOL, read_file
idle = list(read_file(Path({few!r}), memory_limit=2**31))
rows = read_file(Path({many!r}), memory_limit=2**31)
next(rows)  # left open mid-file: the worker is blocked sending the rest
print(*_POOL.workers(), flush=True)
if {wait!r}:
    sys.stdin.readline()
"""


def _gone(pid: int) -> bool:
    """The process has exited and been reaped (a zombie counts as gone: its parent is dead too)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_the_worker_is_reaped_when_the_interpreter_exits_or_is_killed(
    tmp_path: Path, scripted_plugin: Path
) -> None:
    few = _spec(tmp_path / "few.txt", n=2)
    many = _spec(tmp_path / "many.txt", n=20000, size=200)
    code = textwrap.dedent(CHILD)
    args = {"plugin": str(scripted_plugin), "few": str(few), "many": str(many)}
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", code.format(**args, wait=False)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    (pid,) = map(int, done.stdout.split())
    assert _gone(pid)  # reaped by the exit handler before the interpreter ended
    assert "Exception ignored" not in done.stderr, done.stderr
    # Killed (no exit handler runs): the worker sees its pipe close, or its parent change, and exits.
    child = subprocess.Popen(
        [sys.executable, "-c", code.format(**args, wait=True)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert child.stdout is not None
    (pid,) = map(int, child.stdout.readline().split())
    assert not _gone(pid)
    child.send_signal(signal.SIGKILL)
    child.wait()
    for _ in range(600):  # a minute at most: this waits for the exit, it does not time it
        if _gone(pid):
            break
        time.sleep(0.1)
    assert _gone(pid)
