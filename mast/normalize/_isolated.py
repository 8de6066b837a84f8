"""Read untrusted files in a worker process under a memory limit, so one file cannot end a run.

The caps (:mod:`mast.caps`) bound every expansion mast knows of; this is the net under them. A
reader (or a C extension under it: zstandard, orjson, a format plugin) that crashes the
interpreter, or a file that needs more memory than any trace should, would otherwise take the
whole batch with it. :func:`read_file` reads one file in a worker process whose address space is
limited (``resource.setrlimit(RLIMIT_AS)``; :data:`DEFAULT_MEMORY_LIMIT`, 2 GiB, or
``MAST_READ_MEMORY``), parses it, computes each trace's content hash there, and streams the rows
back as they are read, a few at a time over a pipe that holds the worker back while the caller has
not taken them: the caller holds only the traces in flight, and so does the worker under a
streaming reader (OTLP and MAD JSONL line by line, MAD's JSON arrays through ijson), so a
file of 200,000 traces reads under the limit; a reader that loads its file whole (up to
``MAX_WHOLE_FILE_BYTES``) still holds all of it in the worker. A worker that dies ends that file
with one error row after the rows already given; the next file gets a fresh worker.

One worker serves a process that reads one file at a time (``mast label``), started on the first
file and reused, rather than a process per file. Format plugins registered in the parent from an
importable module are imported in the worker too.

What it costs (``benchmarks/bench_isolated_read.py``, figures in ``benchmarks/RESULTS.md``; a shared
2-core machine at load 4-9): the worker's start, once per run, 0.9-3.5 s; then 1.7-3.7 ms per small
file and about 0.5 ms per trace (a row pickled in the worker and unpickled here), so a large JSONL
file reads in 1.5-2.1x the in-process time on those two busy cores. The run's own peak memory stays
at the interpreter's (37 MB) however large the file.

Example:
    >>> rows = read_file(Path("run.json"))  # doctest: +SKIP
    >>> [row.trace.trace_id if row.trace else row.error for row in rows]  # doctest: +SKIP
"""

from __future__ import annotations

import atexit
import os
import pickle
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Generator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path

from mast._files import FileCheck
from mast.errors import TraceFormatError, UsageError, one_line
from mast.trace import Trace

__all__ = ["DEFAULT_MEMORY_LIMIT", "ENV_VAR", "Row", "memory_limit_from_env", "read_file", "read_in_process"]

DEFAULT_MEMORY_LIMIT = 2 * 2**30
"""Address space a reading worker may use: 2 GiB (a trace past the caps needs far less)."""
ENV_VAR = "MAST_READ_MEMORY"
"""``2G``, ``512M``, a number of bytes, or ``off`` (read in the run's own process, unprotected)."""
_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


@dataclass(frozen=True, slots=True)
class Row:
    """One thing read from a file: a trace and its content hash, or a record's or the file's error."""

    trace: Trace | None = None
    content_hash: str | None = None
    error: str | None = None
    """The one-line reason (``reason`` of a :class:`TraceFormatError`, or why the file failed)."""
    path: str | None = None
    record: int | None = None
    whole_file: bool = False
    """True when ``error`` ends the file (the rows before it were read)."""

    def as_error(self) -> TraceFormatError:
        """The error row as the :class:`TraceFormatError` a reader in the process would have given."""
        return TraceFormatError(self.error or "unreadable", path=self.path, record=self.record)


def memory_limit_from_env() -> int | None:
    """The worker's memory limit from ``MAST_READ_MEMORY`` (bytes), :data:`DEFAULT_MEMORY_LIMIT` if unset; ``None`` for ``off``.

    Raises:
        UsageError: a value that is neither a size nor ``off``, naming the variable.
    """
    given = os.environ.get(ENV_VAR, "").strip()
    if not given:
        return DEFAULT_MEMORY_LIMIT
    if given.lower() in ("off", "0", "no", "false"):
        return None
    match = _SIZE.match(given)
    if not match or int(match.group(1)) == 0:
        raise UsageError(f"{ENV_VAR}={given!r}: expected a size such as 2G or 512M, or off")
    limit = int(match.group(1)) * _UNITS[match.group(2).lower()]
    if limit < 256 * 2**20:  # an interpreter with mast imported needs about this much address space
        raise UsageError(f"{ENV_VAR}={given!r}: at least 256M (the worker's interpreter needs it)")
    return limit


def read_in_process(
    path: Path, format: str = "auto", check: FileCheck | None = None
) -> Generator[Row, None, None]:
    """The rows :func:`read_file` yields, read in this process, one at a time (the worker runs this).

    ``check``: what a check saw of the file; it is opened as that very file or not read.
    """
    from mast.normalize import iter_traces
    from mast.normalize.base import RawInput

    try:
        source = RawInput.from_path(path, check) if check is not None else path
        for item in iter_traces(source, format=format):
            if isinstance(item, Trace):
                yield Row(trace=item, content_hash=item.content_hash())
            else:
                yield Row(error=item.reason, path=item.path, record=item.record)
    except TraceFormatError as exc:
        yield Row(error=exc.reason, path=exc.path, record=exc.record, whole_file=True)
    except Exception as exc:  # noqa: BLE001 - one bad file (or a normaliser bug) must not stop the batch
        yield _file_error(path, exc)


def _file_error(path: Path, exc: BaseException) -> Row:
    return Row(error=f"{type(exc).__name__}: {one_line(exc)}", path=str(path), whole_file=True)


def _died(limit: int) -> str:
    return f"reading it ended the reading process (a crash, or over {ENV_VAR}={limit // 2**20}M)"


# --- the worker's side ------------------------------------------------------------------------------
#
# The worker is a fresh interpreter (``python -c _BOOT``: spawned, never forked, and never running the
# caller's ``__main__`` again as multiprocessing's spawn would) joined to the parent by a socket pair
# carrying multiprocessing ``Connection`` messages. First the parent sends (limit, plugin modules,
# its pid). Then, per file, parent to worker: (_READ, path, format, cwd, check) starts a file; (_STOP,)
# mid-file ends it early. Worker to parent: (_ROWS, [pickled Row, ...]) any number of times, then
# (_END,). Closing the connection ends the worker. The pipe blocks the worker while the parent has
# not taken what was sent, so a file is never more than a batch or so ahead of its reader, in
# either process.

_READ, _STOP, _ROWS, _END = "read", "stop", "rows", "end"
_BATCH_ROWS = 64
_BATCH_BYTES = 4 * 2**20
_BATCH_SECONDS = 0.05
"""A batch goes when it holds 64 rows or 4 MiB, when its rows took 50 ms to read, or at the file's
first row (the caller can start on it while the rest is read)."""
_BOOT = (
    "import sys; sys.path[:] = sys.argv[2:]; "
    "from mast.normalize._isolated import _serve; _serve(int(sys.argv[1]))"
)
"""The worker's command line: the parent's import path, then the worker loop on the inherited fd."""


def _serve(fd: int) -> None:
    """The worker process: read files one after another as the parent asks, until it goes away."""
    import importlib
    import resource
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the run's to handle (it ends this worker)
    conn = Connection(fd)
    try:
        limit, modules, parent = conn.recv()
    except (EOFError, OSError):
        return
    threading.Thread(target=_watch_parent, args=(parent,), name="parent-watch", daemon=True).start()
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    for name in modules:  # format plugins the parent registered: the worker must know them too
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - a plugin that cannot load here is simply absent, as at detection
            continue
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the parent closed the connection, or is gone
            return
        if message[0] != _READ:
            continue  # a stop that came after its file had ended
        _, path, format, cwd, check = message
        try:
            _stream(conn, Path(path), format, cwd, check)
        except (EOFError, OSError):  # the parent is gone
            return


def _watch_parent(parent: int) -> None:
    """End the worker when the parent is gone, even in the middle of a long parse (no orphan)."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def _stream(conn: Connection, path: Path, format: str, cwd: str, check: FileCheck | None = None) -> None:
    try:
        if cwd != os.getcwd():
            os.chdir(cwd)  # paths are passed as given: relative ones mean what they mean to the caller
    except OSError as exc:
        conn.send((_ROWS, [pickle.dumps(_file_error(path, exc), pickle.HIGHEST_PROTOCOL)]))
        conn.send((_END,))
        return
    rows = read_in_process(path, format, check)
    batch: list[bytes] = []
    size = 0
    sent_at = time.monotonic()
    first = True
    stopped = False
    try:
        for row in rows:
            try:
                blob = pickle.dumps(row, pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # noqa: BLE001 - a row that cannot travel ends the file with its reason
                batch.append(pickle.dumps(_file_error(path, exc), pickle.HIGHEST_PROTOCOL))
                break
            batch.append(blob)
            size += len(blob)
            if (
                first
                or len(batch) >= _BATCH_ROWS
                or size >= _BATCH_BYTES
                or time.monotonic() - sent_at >= _BATCH_SECONDS
            ):
                conn.send((_ROWS, batch))
                batch, size, sent_at, first = [], 0, time.monotonic(), False
                if conn.poll():  # mid-file the parent sends nothing but a stop: it read no further
                    conn.recv()
                    stopped = True
                    break
    finally:
        rows.close()
    if batch and not stopped:
        conn.send((_ROWS, batch))
    conn.send((_END,))


# --- the parent's side ------------------------------------------------------------------------------


def _plugin_modules() -> tuple[str, ...]:
    from mast.normalize.base import formats

    return tuple(sorted({type(f).__module__ for f in formats()} - {"__main__"}))


class _Worker:
    """One reading process and the parent's end of its socket pair."""

    def __init__(self, limit: int, modules: tuple[str, ...]) -> None:
        mine, theirs = socket.socketpair()
        self.key = (limit, modules)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(theirs.fileno()), *sys.path],
                stdin=subprocess.DEVNULL,
                pass_fds=(theirs.fileno(),),
            )
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()  # the worker's end lives in the worker only: its death is EOF here
        self.conn = Connection(mine.detach())
        self._stopped = False
        try:
            self.conn.send((limit, modules, os.getpid()))
        except OSError:  # it died at once: reaped here, reported by the caller
            self.stop()
            raise

    def usable(self, key: tuple[int, tuple[str, ...]]) -> bool:
        return not self._stopped and self.key == key and self.process.poll() is None

    def stop(self) -> None:
        """End the process (closing the pipe asks it to; then terminate, then kill) and reap it."""
        if self._stopped:
            return
        self._stopped = True
        self.conn.close()  # idle, the worker's recv sees EOF; sending, it gets a broken pipe
        for end in (None, self.process.terminate, self.process.kill):
            if end is not None:
                end()
            try:
                self.process.wait(timeout=1.0)
                return
            except subprocess.TimeoutExpired:
                continue
        self.process.wait()


class _Pool:
    """The reading workers: taken by one :func:`read_file` iteration at a time, kept idle between files.

    A worker belongs to one open iteration from its first row to its end, so rows of two files never
    interleave; the lock guards only the idle list, never a file's reading. Holding one lock (or one
    worker per thread) across a whole file would deadlock a thread that opens a second file before it
    has finished the first (two scans walked side by side), and would leave every other thread
    waiting on an iteration abandoned unclosed in a reference cycle until the garbage collector runs.
    A run that reads one file at a time (``mast label``) so has one worker, reused for every file;
    ``n`` iterations open at once have ``n``, and as many are kept idle afterwards.
    """

    def __init__(self) -> None:
        self._exit_handler = False  # a forked child inherits the handler with the rest of atexit's list
        self._reset()
        os.register_at_fork(after_in_child=self._reset)  # a forked child's workers are not its own

    def _reset(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        self._live: set[_Worker] = set()
        """Every worker not yet stopped, idle or taken: what the exit handler reaps."""

    def take(self, limit: int) -> _Worker:
        """An idle worker for this limit and these plugins, or a new one."""
        key = (limit, _plugin_modules())
        stale: list[_Worker] = []
        found: _Worker | None = None
        with self._lock:
            while self._idle and found is None:
                worker = self._idle.pop()
                if worker.usable(key):
                    found = worker
                else:  # dead, another limit, or started before a plugin was registered
                    self._live.discard(worker)
                    stale.append(worker)
        for worker in stale:
            worker.stop()
        if found is not None:
            return found
        worker = _Worker(limit, key[1])
        with self._lock:
            self._live.add(worker)
            if not self._exit_handler:  # no worker outlives the interpreter that started it
                atexit.register(self.close_all)
                self._exit_handler = True
        return worker

    def give(self, worker: _Worker) -> None:
        """Take back a worker that finished its file."""
        with self._lock:
            if worker in self._live:
                self._idle.append(worker)
                return
        worker.stop()  # the pool was closed meanwhile (interpreter exit)

    def settle(self, worker: _Worker) -> None:
        """Take back a worker whose caller stopped mid-file: stop the file, drain what was sent."""
        try:
            worker.conn.send((_STOP,))
            while worker.conn.recv()[0] != _END:
                pass  # at most the batches already in the pipe, and the one being read
        except (EOFError, OSError):
            self.discard(worker)
            return
        except BaseException:  # interrupted while draining: the worker's state is unknown
            self.discard(worker)
            raise
        self.give(worker)

    def discard(self, worker: _Worker) -> None:
        with self._lock:
            self._live.discard(worker)
            if worker in self._idle:
                self._idle.remove(worker)
        worker.stop()

    def close_all(self) -> None:
        """Stop and reap every worker (at interpreter exit)."""
        with self._lock:
            workers = list(self._live)
            self._live.clear()
            self._idle.clear()
        for worker in workers:
            worker.stop()

    def workers(self) -> list[int]:
        """The process ids of the live workers (for tests)."""
        with self._lock:
            return [w.process.pid for w in self._live]


_POOL = _Pool()


def read_file(
    path: Path,
    format: str = "auto",
    *,
    memory_limit: int | None = DEFAULT_MEMORY_LIMIT,
    check: FileCheck | None = None,
) -> Generator[Row, None, None]:
    """Every trace and error of the file at ``path``, read in a worker under ``memory_limit`` bytes.

    Rows come as the worker reads them (a few at a time), not once the file is done, so a file of
    any number of traces needs no more memory than its largest few. ``memory_limit=None`` reads in
    this process. A worker that dies (a crash in a reader, the memory limit) ends the file with one
    whole-file error row after the rows already given, and the next file gets a new worker. Closing
    the iterator early stops the worker's file and keeps the worker for the next one.
    """
    if memory_limit is None:
        return read_in_process(path, format, check)
    return _read_isolated(path, format, memory_limit, check)


def _read_isolated(
    path: Path, format: str, limit: int, check: FileCheck | None = None
) -> Generator[Row, None, None]:
    try:
        cwd = os.getcwd()  # the worker reads relative paths from the caller's folder
    except OSError as exc:  # the folder was removed
        yield _file_error(path, exc)
        return
    try:
        worker = _POOL.take(limit)
    except OSError as exc:  # no process to be had (out of processes, no interpreter to run)
        yield Row(
            error=f"could not start the reading process ({type(exc).__name__}: {one_line(exc)})",
            path=str(path),
            whole_file=True,
        )
        return
    ended = False  # the worker said the file is done: it waits for the next one
    lost = False  # the worker was discarded
    try:
        worker.conn.send((_READ, str(path), format, cwd, check))
        while not ended:
            message = worker.conn.recv()
            ended = message[0] == _END
            for blob in message[1] if not ended else ():
                try:
                    row: Row = pickle.loads(blob)
                except Exception as exc:  # noqa: BLE001 - a row that does not load here ends the file
                    yield _file_error(path, exc)
                    return
                yield row
    except (EOFError, OSError):  # the worker died: the rows given stand, one error row ends the file
        lost = True
        _POOL.discard(worker)
        yield Row(error=_died(limit), path=str(path), whole_file=True)
    except GeneratorExit:
        raise  # closed early: settled below
    except BaseException:  # interrupted (Ctrl-C) while waiting: the worker's state is unknown
        lost = True
        _POOL.discard(worker)
        raise
    finally:
        if not lost:
            (_POOL.give if ended else _POOL.settle)(worker)
