"""What a batch works on: every trace under the given files and folders, as :class:`WorkItem` s.

The unit of work is one trace. Each item knows its position in the input order, what it holds
(:attr:`WorkItem.key`: trace id + content hash), where it came from and so its resume key
(:attr:`WorkItem.resume_key`: the content key plus source path and record). A record that could not be read is an item too
(it becomes an ``error`` result in the output), and so is a file that cannot be read at all
(reported and skipped: it has no trace id to resume by, so it is never written). Traces are kept in memory only up to a byte budget; beyond it an item keeps
its location and the file is read again, in order, when the item's turn comes.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mast._files import FileCheck, check_file
from mast.batch.resume import ContentKey, ResumeKey
from mast.diagnosis import SourceRef
from mast.errors import TraceFormatError, UsageError
from mast.normalize import iter_paths, iter_traces, looks_like_path
from mast.normalize._isolated import memory_limit_from_env, read_file
from mast.trace import Trace

KEEP_BYTES: int | None = None
"""Keep parsed traces in memory while the input files read so far stay under this many bytes
(``None``: always). The batch consumes :func:`scan` lazily, one item per free slot, so every item
keeps its trace until judged and nothing piles up; a caller that lists every item first passes a
byte budget, and the items beyond it are read again by :class:`Reloader`."""


@dataclass(slots=True)
class WorkItem:
    """One trace (or one unreadable record) to judge, at its place in the input order."""

    index: int
    """Position in the input order; results come back in this order."""
    trace_id: str
    """The trace's id (``path#record`` for an unreadable record)."""
    trace_hash: str | None
    """:meth:`Trace.content_hash`; ``None`` for an unreadable record."""
    source: SourceRef
    """Where the trace came from."""
    trace: Trace | None = None
    """The parsed trace while it is held in memory."""
    error: BaseException | None = None
    """Why the record (or the whole file) could not be read; then there is no trace."""
    whole_file: bool = False
    """True when ``error`` is about a whole input file, not one record in it."""
    file_position: int = 0
    """Position of the item among the items of its file, to find it again when re-reading."""
    format: str = "auto"
    """Format to re-read the file with."""

    @property
    def key(self) -> ContentKey:
        """Identity of the judged content: the same key means the same answer can be reused."""
        return (self.trace_id, self.trace_hash)

    @property
    def resume_key(self) -> ResumeKey:
        """Identity of this input: its content and where it was read from (path and record).

        Two identical traces in different files (or records) are two inputs, each with its own
        result line; a rerun finds each by this key.
        """
        return (self.trace_id, self.trace_hash, self.source.path, self.source.record)


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)`` (shards count from 1).

    Raises:
        UsageError: anything but ``i/n`` with ``1 <= i <= n``.
    """
    try:
        i, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise UsageError(f"--shard {text!r}: expected i/n, e.g. 1/4") from None
    if n < 1 or not 1 <= i <= n:
        raise UsageError(f"--shard {text!r}: need 1 <= i <= n")
    return i, n


def in_shard(trace_id: str, shard: tuple[int, int] | None) -> bool:
    """Whether a trace belongs to shard ``i`` of ``n``: a stable hash of its id, not of the machine."""
    if shard is None or shard[1] == 1:
        return True
    i, n = shard
    digest = hashlib.sha256(trace_id.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % n == i - 1


def scan(
    inputs: Iterable[Any],
    *,
    format: str = "auto",
    recursive: bool = True,
    shard: tuple[int, int] | None = None,
    keep_bytes: int | None = KEEP_BYTES,
    skip: Iterable[str | os.PathLike[str]] = (),
    read_memory: int | None | Literal["env"] = "env",
    checks: Mapping[str, FileCheck] | None = None,
) -> Iterator[WorkItem]:
    """Every trace of ``inputs`` as a work item, in input order.

    Files are read in a worker process under a memory limit (:mod:`mast.normalize._isolated`), so a
    file that crashes its reader or needs gigabytes becomes one error row.

    Args:
        inputs: :class:`Trace` objects, paths to files or folders, or parsed objects (message lists,
            OTLP dicts...) as :func:`mast.normalize.iter_traces` reads them.
        format: source format name, or ``auto``.
        recursive: walk sub-folders of folders.
        shard: ``(i, n)``: keep only the traces of shard ``i`` of ``n`` (unreadable files go to all).
        keep_bytes: keep parsed traces while the files read so far stay under this many bytes
            (``None``: always; right for a lazy consumer).
        skip: files never read as input (the batch's own output: it grows while the scan goes on).
        read_memory: the reading worker's memory limit in bytes; ``None`` reads in this process;
            ``"env"``: ``MAST_READ_MEMORY``, default 2 GiB.
        checks: what an earlier check saw of a file (by its path as given): it is read only as that
            file. Other files are checked as they are found (a link in a folder must stay inside it)
            and read as checked, so a file swapped for a link meanwhile is never read.

    Raises:
        UsageError: a path that does not exist.
    """
    index = 0
    read_bytes = 0
    skipped = {_file_id(Path(p)) for p in skip} - {None}
    memory_limit = memory_limit_from_env() if read_memory == "env" else read_memory
    for given in inputs:
        if isinstance(given, Trace):
            if in_shard(given.trace_id, shard):
                yield _item(index, given, keep=True)
                index += 1
        elif isinstance(given, os.PathLike) or (isinstance(given, str) and looks_like_path(given)):
            top = Path(given).resolve() if Path(given).is_dir() else None
            for path in iter_paths([given], recursive=recursive):
                check = (checks or {}).get(str(path)) or _check(path)
                if top is not None and check is not None and not Path(check.target).is_relative_to(top):
                    # iter_paths let it through as a file (or a link inside); it is a link out now
                    yield _file_error_item(
                        index,
                        str(path),
                        TraceFormatError(
                            "a link that leaves the folder (replaced after it was listed): not read",
                            path=str(path),
                        ),
                    )
                    index += 1
                    continue
                try:
                    stat = path.stat()
                except OSError:
                    stat = None
                if stat is not None:
                    if (stat.st_dev, stat.st_ino) in skipped:
                        continue
                    read_bytes += stat.st_size
                keep = keep_bytes is None or read_bytes <= keep_bytes
                for item in _file_items(
                    path, format, shard, keep=keep, start=index, memory_limit=memory_limit, check=check
                ):
                    yield item
                    index += 1
        else:
            for item in _object_items(given, format, shard, start=index):
                yield item
                index += 1


def _check(path: Path) -> FileCheck | None:
    """The file ``path`` names now, to be read as that file; ``None`` when there is none (the read says why)."""
    try:
        return check_file(path)
    except TraceFormatError:
        return None


def _file_id(path: Path) -> tuple[int, int] | None:
    try:
        stat = path.stat()
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino)


def count_files(inputs: Iterable[Any], *, recursive: bool = True) -> int:
    """A cheap count of the inputs: files found under the paths (nothing is read), plus other inputs.

    A progress total to start from: exact when every file holds one trace; the batch raises it as
    files turn out to hold more.
    """
    count = 0
    for given in inputs:
        if isinstance(given, os.PathLike) or (isinstance(given, str) and looks_like_path(given)):
            count += sum(1 for _ in iter_paths([given], recursive=recursive))
        else:
            count += 1
    return count


def _item(
    index: int,
    trace: Trace,
    *,
    keep: bool,
    position: int = 0,
    format: str = "auto",
    trace_hash: str | None = None,
) -> WorkItem:
    src = trace.source
    return WorkItem(
        index=index,
        trace_id=trace.trace_id,
        trace_hash=trace_hash or trace.content_hash(),
        source=SourceRef(path=src.path, format=src.format, record=src.record),
        trace=trace if keep else None,
        file_position=position,
        format=format,
    )


def _error_item(
    index: int, error: TraceFormatError, path: str | None, position: int, format: str
) -> WorkItem:
    record = error.record if error.record is not None else position
    where = path or "input"
    return WorkItem(
        index=index,
        trace_id=f"{where}#{record}",
        trace_hash=None,
        source=SourceRef(path=path, format=None if format == "auto" else format, record=record),
        error=error,
        file_position=position,
        format=format,
    )


def _file_items(
    path: Path,
    format: str,
    shard: tuple[int, int] | None,
    *,
    keep: bool,
    start: int,
    memory_limit: int | None,
    check: FileCheck | None = None,
) -> Iterator[WorkItem]:
    index = start
    # Read in the worker process (mast.normalize._isolated), which sends the rows as it reads them: a
    # reader that crashes or a file that blows memory up gives this file an error row, and the run
    # goes on. Closed on the way out (a whole-file error, or a consumer that stops early), so the
    # worker stops this file and is ready for the next.
    rows = read_file(path, format, memory_limit=memory_limit, check=check)
    try:
        for position, row in enumerate(rows):
            if row.whole_file:
                # A file that breaks off half-way keeps the traces read before the break.
                yield _file_error_item(index, str(path), row.as_error())
                return
            if row.trace is not None:
                if in_shard(row.trace.trace_id, shard):
                    yield _item(
                        index,
                        row.trace,
                        keep=keep,
                        position=position,
                        format=format,
                        trace_hash=row.content_hash,
                    )
                    index += 1
            else:
                item = _error_item(index, row.as_error(), str(path), position, format)
                if in_shard(item.trace_id, shard):
                    yield item
                    index += 1
    finally:
        rows.close()


def _object_items(
    given: Any, format: str, shard: tuple[int, int] | None, *, start: int
) -> Iterator[WorkItem]:
    index = start
    try:
        for position, got in enumerate(iter_traces(given, format=format)):
            if isinstance(got, Trace):
                if in_shard(got.trace_id, shard):
                    yield _item(index, got, keep=True, position=position)
                    index += 1
            else:
                item = _error_item(index, got, None, position, format)
                if in_shard(item.trace_id, shard):
                    yield item
                    index += 1
    except Exception as exc:  # noqa: BLE001 - as for files
        yield _file_error_item(index, f"<{type(given).__name__} input>", exc)


def _file_error_item(index: int, where: str, exc: BaseException) -> WorkItem:
    return WorkItem(
        index=index,
        trace_id=where,
        trace_hash=None,
        source=SourceRef(path=where),
        error=exc,
        whole_file=True,
    )


class Reloader:
    """Reads dropped traces back, walking each file once in order as items come due."""

    def __init__(self) -> None:
        self._path: str | None = None
        self._iter: Iterator[Trace | TraceFormatError] | None = None
        self._position = -1

    def load(self, item: WorkItem) -> Trace:
        """The trace of ``item``, parsed again from its file.

        Raises:
            TraceFormatError: the file changed since it was scanned.
        """
        path = item.source.path
        if path is None:
            raise TraceFormatError("trace was not kept in memory and has no file to re-read")
        if self._path != path or self._iter is None or self._position >= item.file_position:
            self._path, self._iter, self._position = path, iter_traces(path, format=item.format), -1
        for got in self._iter:
            self._position += 1
            if self._position == item.file_position:
                if (
                    isinstance(got, Trace)
                    and got.trace_id == item.trace_id
                    and got.content_hash() == item.trace_hash
                ):
                    return got
                break
        self._iter = None
        raise TraceFormatError("file changed while the batch ran; run again to pick up the change", path=path)

    def close(self) -> None:
        """Forget the open file."""
        self._path, self._iter = None, None
