"""The results file of a batch: one :class:`~mast.diagnosis.Diagnosis` JSON per line, safe to resume.

Guarantees, and how they are kept:

* **Whole lines.** Each result is written with a single ``os.write`` of the JSON and its newline on a file
  descriptor opened with ``O_APPEND``, so the kernel places every line at the end in one piece even
  if another process appends too. A crash (``kill -9``, power loss) can leave at most a torn *last*
  line; :meth:`ResultsFile.open` finds it and cuts it off, so the file is valid JSONL again.
* **One writer.** An exclusive ``fcntl.flock`` on the file is held for the whole run; a second
  ``mast label`` on the same output stops at once with a one-line error instead of interleaving
  and judging the same traces twice.
* **Nothing half-rewritten.** Dropping stale ``error`` lines before retrying them writes a new file
  beside the old one and renames it over (atomic on POSIX), then re-takes the lock on the new file.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from pydantic import ValidationError

from mast.diagnosis import Diagnosis
from mast.errors import UsageError

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; one writer per output is then up to the user
    fcntl = None  # type: ignore[assignment]


class ResultsFile:
    """An append-only JSONL results file held under an exclusive lock.

    Example:
        >>> import tempfile, pathlib
        >>> from mast.diagnosis import Diagnosis, JudgeInfo
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "results.jsonl"
        >>> with ResultsFile(path) as out:
        ...     out.append(Diagnosis(trace_id="t1", judge=JudgeInfo(taxonomy_version="mast-v3")))
        >>> [d.trace_id for _, d in ResultsFile.read(path)]
        ['t1']
    """

    def __init__(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        self.path = Path(path)
        self.overwrite = overwrite
        self.repaired: str | None = None
        """What :meth:`open` had to repair (a torn last line), for the user to see; else ``None``."""
        self._fd: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------------

    def open(self) -> ResultsFile:
        """Take the lock, then start over (``overwrite``) or repair a torn tail.

        Raises:
            UsageError: another process holds the file, or it cannot be created.
        """
        if self.path.is_dir():
            raise UsageError(f"{self.path} is a folder; -o needs a file name such as results.jsonl")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create the folder for {self.path}: {exc.strerror}") from exc
        self._fd = self._open_locked()
        if self.overwrite:
            os.ftruncate(self._fd, 0)
        else:
            self._repair_tail()
        return self

    def close(self) -> None:
        """Flush to disk and release the lock."""
        if self._fd is not None:
            try:
                os.fsync(self._fd)
            except OSError:
                pass  # fsync is best effort: some filesystems (pipes, /dev/null) refuse it
            os.close(self._fd)  # closing the descriptor releases the flock
            self._fd = None

    def __enter__(self) -> ResultsFile:
        return self.open()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------------------

    def append(self, diagnosis: Diagnosis) -> None:
        """Append one result as one whole line."""
        self.append_line(diagnosis.model_dump_json().encode())

    def append_line(self, line: bytes) -> None:
        """Append already serialised JSON (no newline) as one line."""
        if self._fd is None:
            raise RuntimeError("ResultsFile is not open")
        data = line + b"\n"
        written = os.write(self._fd, data)
        # Regular files take the whole buffer in one call; a short write means the disk filled up
        # or a signal landed mid-way. Finish the line; a crash in between leaves a torn tail that
        # the next open() removes.
        while written < len(data):
            written += os.write(self._fd, data[written:])

    def rewrite_without(self, drop: Callable[[Diagnosis], bool]) -> int:
        """Atomically rewrite the file without the results for which ``drop`` is true.

        Used to remove ``error`` lines that are about to be retried, so every trace keeps exactly
        one line. Returns how many lines were dropped.
        """
        if self._fd is None:
            raise RuntimeError("ResultsFile is not open")
        kept: list[bytes] = []
        dropped = 0
        for _, raw, diagnosis in self._lines(self.path):
            if drop(diagnosis):
                dropped += 1
            else:
                kept.append(raw)
        if not dropped:
            return 0
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(b"".join(line + b"\n" for line in kept))
            fh.flush()
            os.fsync(fh.fileno())
        old_fd = self._fd
        os.replace(tmp, self.path)
        # Lock the new file before letting go of the old one, so no other run slips in between.
        self._fd = self._open_locked()
        os.close(old_fd)
        return dropped

    # -- reading -----------------------------------------------------------------------------------

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Iterator[tuple[int, Diagnosis]]:
        """Every result in a results file as ``(line_number, Diagnosis)``; no lock needed.

        Raises:
            UsageError: a line in the middle of the file is not a valid Diagnosis (a torn *last*
                line is skipped: it is what a crash leaves and the next run removes it).
        """
        for number, _, diagnosis in cls._lines(Path(path)):
            yield number, diagnosis

    @staticmethod
    def _lines(path: Path) -> Iterator[tuple[int, bytes, Diagnosis]]:
        try:
            blob = path.read_bytes()
        except FileNotFoundError:
            return
        except OSError as exc:
            raise UsageError(f"cannot read results file {path}: {exc.strerror}") from exc
        lines = blob.split(b"\n")
        torn_tail = not blob.endswith(b"\n")
        for number, raw in enumerate(lines, start=1):
            if not raw.strip():
                continue
            try:
                diagnosis = Diagnosis.model_validate_json(raw)
            except ValidationError as exc:
                if torn_tail and number == len(lines):
                    return
                reason = "not JSON" if _is_json_error(exc) else "not a Diagnosis"
                raise UsageError(
                    f"{path}:{number}: line is {reason}; fix or remove it (mast label --overwrite starts over)"
                ) from exc
            yield number, raw, diagnosis

    # -- internals ---------------------------------------------------------------------------------

    def _open_locked(self) -> int:
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
            except OSError as exc:
                raise UsageError(f"cannot open results file {self.path}: {exc.strerror}") from exc
            try:
                if fcntl is not None:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise UsageError(
                    f"{self.path} is being written by another mast run; wait for it to finish or use another -o"
                ) from None
            # The holder may have renamed a new file over this path while we waited: then our lock
            # is on an unlinked inode and protects nothing. Try again on the current file.
            try:
                if os.fstat(fd).st_ino == os.stat(self.path).st_ino:
                    return fd
            except FileNotFoundError:
                pass
            os.close(fd)

    def _repair_tail(self) -> None:
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        if size == 0:
            return
        last = os.pread(self._fd, 1, size - 1)
        if last == b"\n":
            return
        # Find where the last complete line ends; read backwards in blocks so huge files stay cheap.
        end = size
        cut = 0
        while end > 0:
            start = max(0, end - 65536)
            block = os.pread(self._fd, end - start, start)
            newline = block.rfind(b"\n")
            if newline >= 0:
                cut = start + newline + 1
                break
            end = start
        tail = os.pread(self._fd, size - cut, cut)
        try:
            Diagnosis.model_validate_json(tail)
        except ValidationError:
            os.ftruncate(self._fd, cut)
            self.repaired = (
                f"removed a torn last line ({size - cut} bytes) left by an interrupted run; "
                "that trace will be judged again"
            )
        else:
            # A complete result missing only its newline (edited by hand): keep it, end the line.
            os.write(self._fd, b"\n")


def _is_json_error(exc: ValidationError) -> bool:
    return any(err.get("type") == "json_invalid" for err in exc.errors())

