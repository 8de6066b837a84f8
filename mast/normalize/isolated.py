"""Read untrusted files in a worker process under a memory limit, so one file cannot end a run.

The caps (:mod:`mast.caps`) bound every expansion mast knows of; this is the net under them. A
reader (or a C extension under it: zstandard, orjson, a format plugin) that crashes the
interpreter, or a file that needs more memory than any trace should, would otherwise take the
whole batch with it. :func:`read_file` reads one file in a worker process whose address space is
limited (``resource.setrlimit(RLIMIT_AS)``; :data:`DEFAULT_MEMORY_LIMIT`, 2 GiB, or
``MAST_READ_MEMORY``), parses it, computes each trace's content hash there, and sends the results
back. A worker that dies gives that file one error row; the next file gets a fresh worker.

One worker serves the whole process, started on the first file and reused, rather than a
process per file (the overhead per file is not yet measured in ``benchmarks/``). Format plugins registered
in the parent from an importable module are imported in the worker too.

Example:
    >>> rows = read_file(Path("run.json"))  # doctest: +SKIP
    >>> [row.trace.trace_id if row.trace else row.error for row in rows]  # doctest: +SKIP
"""

from __future__ import annotations

import multiprocessing
import os
import re
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path

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


def read_in_process(path: Path, format: str = "auto") -> list[Row]:
    """What :func:`read_file` returns, read in this process (the worker runs this)."""
    from mast.normalize import iter_traces

    rows: list[Row] = []
    try:
        for item in iter_traces(path, format=format):
            if isinstance(item, Trace):
                rows.append(Row(trace=item, content_hash=item.content_hash()))
            else:
                rows.append(Row(error=item.reason, path=item.path, record=item.record))
    except TraceFormatError as exc:
        rows.append(Row(error=exc.reason, path=exc.path, record=exc.record, whole_file=True))
    except Exception as exc:  # noqa: BLE001 - one bad file (or a normaliser bug) must not stop the batch
        rows.append(Row(error=f"{type(exc).__name__}: {one_line(exc)}", path=str(path), whole_file=True))
    return rows


def _init_worker(limit: int, modules: tuple[str, ...]) -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import importlib

    for name in modules:  # format plugins the parent registered: the worker must know them too
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - a plugin that cannot load here is simply absent, as at detection
            continue


class _Pool:
    """The one worker process, started on first use, replaced when a file kills it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self._limit: int | None = None

    def executor(self, limit: int) -> ProcessPoolExecutor:
        with self._lock:
            if self._executor is None or self._limit != limit:
                if self._executor is not None:
                    self._executor.shutdown(wait=False, cancel_futures=True)
                from mast.normalize.base import formats

                modules = tuple(sorted({type(f).__module__ for f in formats()} - {"__main__"}))
                # spawn, not fork: the run has threads (fork would copy their locks held) and
                # litellm loaded; a fresh interpreter imports only the readers.
                self._executor = ProcessPoolExecutor(
                    max_workers=1,
                    mp_context=multiprocessing.get_context("spawn"),
                    initializer=_init_worker,
                    initargs=(limit, modules),
                )
                self._limit = limit
            return self._executor

    def discard(self, executor: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._executor is executor:
                self._executor = None
        executor.shutdown(wait=False, cancel_futures=True)


_POOL = _Pool()


def read_file(
    path: Path, format: str = "auto", *, memory_limit: int | None = DEFAULT_MEMORY_LIMIT
) -> list[Row]:
    """Every trace and error of the file at ``path``, read in the worker under ``memory_limit`` bytes.

    ``memory_limit=None`` reads in this process. A worker that dies (a crash in a reader, the
    memory limit) gives one whole-file error row, and the next call starts a new worker.
    """
    if memory_limit is None:
        return read_in_process(path, format)
    executor = _POOL.executor(memory_limit)
    try:
        return executor.submit(read_in_process, path, format).result()
    except BrokenProcessPool:
        _POOL.discard(executor)
        why = f"reading it ended the reading process (a crash, or over {ENV_VAR}={memory_limit // 2**20}M)"
        return [Row(error=why, path=str(path), whole_file=True)]
    except Exception as exc:  # noqa: BLE001 - a result that does not travel back (pickling) is this file's error
        return [Row(error=f"{type(exc).__name__}: {one_line(exc)}", path=str(path), whole_file=True)]
