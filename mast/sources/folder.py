"""A folder of trace files watched like a store: ``mast watch ~/.claude/projects`` (or ``~/.codex/sessions``).

Each trace file under the folder (the names :func:`mast.normalize.iter_paths` picks up, sub-folders
included, hidden ones skipped) is one root: its id is its path inside the folder, its position its
modification time and path (so a file written again is listed again), and its "span count" a
fingerprint of its size and modification time. :class:`~mast.batch.watch.Watcher` then labels a
file once that fingerprint has not changed for the quiet period, with the same state file, resume
and kill-safety as for a store. A file holding several traces is labelled by its first one (a
session file holds one); a file that cannot be read is reported in :attr:`FolderSource.skipped`.
"""

from __future__ import annotations

import os
import stat as stat_module
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from mast._files import FileCheck
from mast.errors import MastError, UsageError
from mast.normalize import iter_paths, iter_traces
from mast.normalize.base import RawInput
from mast.sources import RootSpan, TraceQuery
from mast.trace import Trace

__all__ = ["FolderSource"]


class FolderSource:
    """The trace files under one folder, as a :class:`~mast.sources.TraceSource`."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        """Watch ``folder`` (``~`` expanded).

        Raises:
            UsageError: when it is not a folder.
        """
        path = Path(folder).expanduser()
        if not path.is_dir():
            raise UsageError(f"{path}: not a folder")
        self.folder = path.resolve()
        self.url = str(self.folder)
        self.skipped: dict[str, str] = {}
        """Files the last :meth:`read` could not read: path inside the folder -> reason."""
        self._checks: dict[str, FileCheck] = {}
        # What the last count saw of each file: the read opens that very file (no link, same inode
        # and size), so a file swapped for a link during the quiet period is never read.

    def _path(self, trace_id: str) -> Path:
        return self.folder / trace_id

    def roots(self, query: TraceQuery) -> Iterator[RootSpan]:
        """Files changed after ``query.after`` (a position), oldest change first."""
        found: list[tuple[str, str, float]] = []
        for path in iter_paths([self.folder]):
            try:
                stat = path.stat()
            except OSError:
                continue  # gone between listing and looking
            if not path.is_file():
                continue
            name = path.relative_to(self.folder).as_posix()
            position = f"{stat.st_mtime_ns:020d} {name}"
            if query.after is not None and position <= query.after:
                continue
            if query.since is not None and stat.st_mtime < query.since.timestamp():
                continue
            found.append((position, name, stat.st_mtime))
        for position, name, mtime in sorted(found):
            if query.trace_ids and name not in query.trace_ids:
                continue
            yield RootSpan(trace_id=name, span_id="", name=Path(name).name,
                           start=datetime.fromtimestamp(mtime, UTC), position=position)

    def span_counts(self, trace_ids: Sequence[str]) -> dict[str, int]:
        """A positive fingerprint of each file's size and modification time (it changes while the file is written)."""
        counts: dict[str, int] = {}
        for trace_id in trace_ids:
            path = self._path(trace_id)
            try:
                stat = os.lstat(path)  # a link is counted as the link it is, never as its target
            except OSError:
                continue
            if stat_module.S_ISREG(stat.st_mode):
                self._checks[trace_id] = FileCheck(str(path), stat.st_dev, stat.st_ino, stat.st_size)
            else:
                self._checks.pop(trace_id, None)  # read without a check: refused with its reason
            counts[trace_id] = (hash((stat.st_mode, stat.st_size, stat.st_mtime_ns)) & ((1 << 62) - 1)) | 1
        return counts

    def read(self, trace_ids: Sequence[str]) -> dict[str, Trace]:
        """The first trace of each file, by its path inside the folder; unreadable files go to :attr:`skipped`."""
        self.skipped = {}
        traces: dict[str, Trace] = {}
        for trace_id in trace_ids:
            try:
                raw = RawInput.from_path(self._path(trace_id), self._checks.get(trace_id))
                items = iter_traces(raw)
                first = next(items, None)
                if isinstance(first, Trace):
                    more = sum(1 for _ in items)
                    if more:
                        first.warnings.append(f"the file holds {more + 1} traces; watching a folder labels the first (mast label reads all)")
                    traces[trace_id] = first
                else:
                    self.skipped[trace_id] = str(first) if first is not None else "holds no trace"
            except (MastError, OSError) as exc:
                self.skipped[trace_id] = str(exc)
        return traces

    def close(self) -> None:
        """Nothing to release."""
