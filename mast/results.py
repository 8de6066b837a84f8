"""Results files: the one reader and writer of ``results.jsonl`` (one :class:`~mast.diagnosis.Diagnosis` per line).

Everything that reads or writes results goes through here: the batch (writing, resuming), the
evaluation, the analysis, the report, the exports and the datasets. Reading streams: a file of a
million lines is read one line at a time, never held whole.

Reading:

* :func:`iter_results` yields each :class:`Diagnosis`; :func:`read_results` returns them as a list;
  :func:`iter_records` yields each line as plain JSON (no validation: fast, for counting and keys).
* A torn *last* line (no newline, not valid) is what a running or killed batch leaves; readers skip
  it, and the next batch on the file cuts it off. Any other bad line raises
  :class:`~mast.errors.ResultsFileError` naming the file and line.
* A JSON list of diagnoses (``[{...}, ...]``) is read too, item by item.
* A Scout scan folder of the mast scanner (``scout scan mast_judge/mast_scanner``) is read as a
  results file, one Diagnosis per transcript (:mod:`mast.integrations.scout_results`, the
  ``scout`` extra): :func:`is_results_path` says whether a path is either.

Writing (:class:`ResultsFile`), and how its guarantees are kept:

* **Whole lines.** Each result is written with a single ``os.write`` of the JSON and its newline on a
  file descriptor opened with ``O_APPEND``, so the kernel places every line at the end in one piece
  even if another process appends too. A crash can leave at most a torn *last* line; :meth:`ResultsFile.open`
  cuts it off, so the file is valid JSONL again.
* **One writer.** An exclusive ``fcntl.flock`` is held for the whole run; a second run on the same
  output stops at once with a one-line error instead of interleaving.
* **Nothing half-rewritten.** Dropping lines (stale ``error`` results that were judged again) writes a
  new file beside the old one, streaming, and renames it over (atomic on POSIX), then re-takes the
  lock on the new file.

Example:
    >>> import tempfile, pathlib
    >>> from mast.diagnosis import Diagnosis, JudgeInfo
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "results.jsonl"
    >>> with ResultsFile(path) as out:
    ...     _ = out.append(Diagnosis(trace_id="t1", judge=JudgeInfo(taxonomy_version="mast-v3")))
    >>> [d.trace_id for d in iter_results(path)]
    ['t1']
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Literal

import orjson
from pydantic import ValidationError

from mast.diagnosis import Diagnosis, ModeVerdict
from mast.errors import ResultsFileError, UsageError
from mast.integrations.scout_results import incomplete_scan, is_scan

if TYPE_CHECKING:
    import pandas as pd

    from mast.taxonomy import Taxonomy

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; one writer per output is then up to the user
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "ResultLine",
    "ResultsFile",
    "iter_lines",
    "iter_numbered",
    "iter_records",
    "iter_results",
    "is_results_path",
    "is_scout_scan",
    "read_results",
    "results_files",
    "to_dataframe",
]


@dataclass(frozen=True, slots=True)
class ResultLine:
    """One non-empty line of a results file, not yet validated."""

    number: int
    """1-based line number."""
    offset: int
    """Byte offset of the line's start (for :meth:`ResultsFile.read_at`)."""
    raw: bytes
    """The line without its newline."""
    complete: bool
    """False for a last line without its newline (possibly torn)."""


# -- reading ---------------------------------------------------------------------------------------


def iter_lines(path: str | os.PathLike[str]) -> Iterator[ResultLine]:
    """Every non-empty line of a JSONL results file, streamed; a missing file has none.

    Raises:
        ResultsFileError: the file cannot be read.
    """
    file = Path(path)
    try:
        handle = file.open("rb")
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ResultsFileError(f"cannot read results file {file}: {exc.strerror or exc}") from exc
    with handle:
        offset = 0
        for number, line in enumerate(handle, start=1):
            start, offset = offset, offset + len(line)
            complete = line.endswith(b"\n")
            raw = line[:-1] if complete else line
            if raw.strip():
                yield ResultLine(number, start, raw, complete)


def results_files(folder: str | os.PathLike[str]) -> list[Path]:
    """The results files (``*.jsonl``) directly in ``folder``, oldest first (by last change).

    A folder holds one results file per judge (what ``mast hooks`` writes per project), so commands
    that read one run take the folder and pick from these.
    """
    found = [p for p in Path(folder).glob("*.jsonl") if p.is_file()]
    return sorted(found, key=lambda p: (p.stat().st_mtime_ns, p.name))


def is_scout_scan(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a Scout scan folder, read as results (Scout is not imported to tell)."""
    return is_scan(path)


def incomplete_scout_scan(path: str | os.PathLike[str]) -> str | None:
    """Why a folder that looks like a Scout scan is not one (it lacks ``_scan.json``), else ``None``."""
    return incomplete_scan(path)


def is_results_path(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is something results are read from: a file, or a Scout scan folder."""
    return Path(path).is_file() or is_scout_scan(path)


def iter_numbered(path: str | os.PathLike[str]) -> Iterator[tuple[int, Diagnosis]]:
    """Every result as ``(line_number, Diagnosis)``, streamed (JSON lists, Scout scans: the item number).

    Raises:
        ResultsFileError: a line (other than a torn last one) is not a valid Diagnosis.
        UsageError: a Scout scan, and Inspect Scout is not installed.
    """
    file = Path(path)
    if is_scout_scan(file):
        from mast.integrations.scout_results import iter_scan

        yield from enumerate(iter_scan(file), start=1)
        return
    if _starts_with_bracket(file):
        yield from _iter_json_list(file)
        return
    for line in iter_lines(file):
        diagnosis = parse_line(file, line)
        if diagnosis is not None:
            yield line.number, diagnosis


def iter_results(path: str | os.PathLike[str]) -> Iterator[Diagnosis]:
    """Every result in a results file, in file order, one at a time (a torn last line is left out).

    Raises:
        ResultsFileError: a line is not a valid Diagnosis (the message names file and line).
    """
    for _, diagnosis in iter_numbered(path):
        yield diagnosis


def read_results(path: str | os.PathLike[str]) -> list[Diagnosis]:
    """Every result in a results file, as a list (prefer :func:`iter_results` for big files).

    Raises:
        ResultsFileError: the file is missing, or holds a line that is not a Diagnosis.
    """
    if not is_results_path(path):
        raise ResultsFileError(f"{path}: no such results file")
    return list(iter_results(path))


def iter_records(path: str | os.PathLike[str]) -> Iterator[tuple[ResultLine, dict[str, Any]]]:
    """Every line as parsed JSON, without validating it as a Diagnosis: for keys and counts.

    Raises:
        ResultsFileError: a line (other than a torn last one) is not a JSON object.
    """
    file = Path(path)
    for line in iter_lines(file):
        try:
            record = orjson.loads(line.raw)
        except orjson.JSONDecodeError as exc:
            if not line.complete:
                return
            raise _bad_line(file, line.number, "not JSON") from exc
        if not isinstance(record, dict):
            raise _bad_line(file, line.number, "not a mast diagnosis (not a JSON object)")
        yield line, record


def parse_line(file: Path, line: ResultLine) -> Diagnosis | None:
    """The Diagnosis on ``line`` of ``file`` (from :func:`iter_lines`); ``None`` for a torn last line.

    Raises:
        ResultsFileError: the line is not JSON, or not a Diagnosis (the message names file and line).
    """
    try:
        return Diagnosis.model_validate_json(line.raw)
    except ValidationError as exc:
        if not line.complete:
            return None  # a torn last line: what a batch still writing (or killed) leaves behind
        json_error = any(err.get("type") == "json_invalid" for err in exc.errors())
        if json_error:
            raise _bad_line(file, line.number, "not JSON") from exc
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        raise _bad_line(file, line.number, f"not a mast diagnosis ({where}: {first.get('msg')})") from exc


def _bad_line(file: Path, number: int, reason: str) -> ResultsFileError:
    return ResultsFileError(
        f"{file}:{number}: {reason}; fix or remove it (mast label --overwrite starts over)", path=str(file), line=number
    )


def _starts_with_bracket(file: Path) -> bool:
    try:
        with file.open("rb") as handle:
            while chunk := handle.read(64):
                stripped = chunk.lstrip()
                if stripped:
                    return stripped.startswith(b"[")
    except OSError:
        return False
    return False


def _iter_json_list(file: Path) -> Iterator[tuple[int, Diagnosis]]:
    import ijson

    with file.open("rb") as handle:
        try:
            for number, record in enumerate(ijson.items(handle, "item", use_float=True), start=1):
                try:
                    yield number, Diagnosis.model_validate(record)
                except ValidationError as exc:
                    first = exc.errors()[0]
                    where = ".".join(str(p) for p in first.get("loc", ()))
                    raise ResultsFileError(
                        f"{file} record {number}: not a mast diagnosis ({where}: {first.get('msg')})",
                        path=str(file), line=number,
                    ) from exc
        except ijson.JSONError as exc:
            raise ResultsFileError(f"{file}: not a JSON list of diagnoses ({exc})", path=str(file)) from exc


# -- as a table ------------------------------------------------------------------------------------

_USAGE_COLUMNS = ("input_tokens", "output_tokens", "cost_usd", "latency_s", "llm_calls", "cached")
_LONG_COLUMNS = ("trace_id", "status", "code", "name", "present", "confidence", "explanation", "evidence",
                 "summary", "judge_model", "source_path")


def to_dataframe(
    diagnoses: Iterable[Diagnosis] | str | os.PathLike[str],
    *,
    taxonomy: Taxonomy | None = None,
    form: Literal["wide", "long"] = "wide",
) -> pd.DataFrame:
    """Diagnoses (or a results file) as a DataFrame, one row per trace or per (trace, mode).

    ``wide`` (default): a nullable boolean column per mode code (<NA> where not assessed), then
    status, first failure, summary, source, judge, usage, and per mode ``<code>_confidence``,
    ``<code>_explanation`` and ``<code>_evidence`` (quotes with their ``[S<step>]``). ``long``: one
    row per trace and mode with ``present``, ``confidence``, ``explanation`` and ``evidence``.

    This is the one implementation of "diagnoses as a DataFrame" (:mod:`mast.analysis`, the report
    and ``mast export`` read it). A path or a stream (:func:`iter_results`) is read one diagnosis at
    a time: columns are filled as it goes, so no diagnosis is held afterwards.

    Example:
        >>> to_dataframe([]).columns[:3].tolist()
        ['trace_id', 'status', '1.1']
    """
    import pandas as pd

    from mast.taxonomy import load_taxonomy

    tax = taxonomy or load_taxonomy()
    items = iter_results(diagnoses) if isinstance(diagnoses, str | os.PathLike) else diagnoses
    if form == "long":
        rows = (row for d in items for row in _long_rows(d, tax))
        data = _columns(_LONG_COLUMNS, rows)
        return pd.DataFrame(data).astype({"present": "boolean", "confidence": "Float64"})
    codes = tax.codes
    details = [f"{code}_{part}" for code in codes for part in ("confidence", "explanation", "evidence")]
    columns = ("trace_id", "status", *codes, "n_modes", "task_completed", "first_failure_step",
               "first_failure_agent", "first_failure_code", "first_failure_explanation", "summary",
               "source_path", "source_record", "source_format", "judge_kind", "judge_model",
               *_USAGE_COLUMNS, "error", *details)
    frame = pd.DataFrame(_columns(columns, (_wide_row(d, codes) for d in items)))
    frame = frame.astype({code: "boolean" for code in codes})
    frame = frame.astype({"first_failure_step": "Int64", "task_completed": "boolean", "source_record": "Int64"})
    return frame.astype({f"{code}_confidence": "Float64" for code in codes})


def _columns(names: Sequence[str], rows: Iterable[Sequence[Any]]) -> dict[str, list[Any]]:
    data: dict[str, list[Any]] = {name: [] for name in names}
    lists = list(data.values())
    for row in rows:
        for column, value in zip(lists, row, strict=True):
            column.append(value)
    return data


def _wide_row(d: Diagnosis, codes: Sequence[str]) -> list[Any]:
    verdicts = {v.code: v for v in d.failure_modes}
    present = [v.present if (v := verdicts.get(code)) else None for code in codes]
    first, usage = d.first_failure, d.usage
    row = [d.trace_id, d.status, *present, sum(1 for p in present if p), d.task_completed,
           first.step if first else None, first.agent if first else None, first.code if first else None,
           first.explanation if first else None, d.summary, d.source.path, d.source.record, d.source.format,
           d.judge.kind, d.judge.model, *(getattr(usage, name) for name in _USAGE_COLUMNS),
           d.error.message if d.error else None]
    for code in codes:
        v = verdicts.get(code)
        row.extend((v.confidence, v.explanation, _quotes(v)) if v else (None, None, None))
    return row


def _long_rows(d: Diagnosis, tax: Taxonomy) -> Iterator[list[Any]]:
    verdicts = {v.code: v for v in d.failure_modes}
    for mode in tax.modes:
        v = verdicts.get(mode.code)
        yield [d.trace_id, d.status, mode.code, mode.name, v.present if v else None, v.confidence if v else None,
               v.explanation if v else None, _quotes(v) if v else None, d.summary, d.judge.model, d.source.path]


def _quotes(verdict: ModeVerdict) -> str:
    return " ".join(
        (f"[S{e.step}] " if e.step is not None else "") + f'"{e.quote.strip()}"' for e in verdict.evidence
    )


# -- writing ---------------------------------------------------------------------------------------


class ResultsFile:
    """An append-only JSONL results file held under an exclusive lock (see the module docs)."""

    def __init__(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        self.path = Path(path)
        self.overwrite = overwrite
        self.repaired: str | None = None
        """What :meth:`open` had to repair (a torn last line), for the user to see; else ``None``."""
        self._fd: int | None = None
        self._last_source: tuple[str, tuple[str, str | None] | None] | None = None

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

    @classmethod
    def read(cls, path: str | os.PathLike[str]) -> Iterator[tuple[int, Diagnosis]]:
        """Every result as ``(line_number, Diagnosis)``; no lock needed (see :func:`iter_numbered`)."""
        return iter_numbered(path)

    def append(self, diagnosis: Diagnosis) -> int:
        """Append one result as one whole line; returns the byte offset where the line starts.

        A result read from a local file records where that file is from anywhere (its absolute
        path, and its path relative to this results file): ``path`` stays as the run was given it,
        relative to where the run was started, which a report made elsewhere cannot resolve.
        """
        return self.append_line(self._located(diagnosis).model_dump_json().encode())

    def _located(self, diagnosis: Diagnosis) -> Diagnosis:
        source = diagnosis.source
        if not source.path or source.absolute_path or "://" in source.path:
            return diagnosis
        if self._last_source is None or self._last_source[0] != source.path:  # a JSONL's traces come in a row
            self._last_source = (source.path, _locate_source(source.path, self.path))
        found = self._last_source[1]
        if found is None:
            return diagnosis
        absolute, relative = found
        return diagnosis.model_copy(update={"source": source.model_copy(
            update={"absolute_path": absolute, "results_relative_path": relative})})

    def append_line(self, line: bytes) -> int:
        """Append already serialised JSON (no newline) as one line; returns its byte offset."""
        fd = self._require_open()
        data = line + b"\n"
        written = os.write(fd, data)
        # Regular files take the whole buffer in one call; a short write means the disk filled up
        # or a signal landed mid-way. Finish the line; a crash in between leaves a torn tail that
        # the next open() removes.
        while written < len(data):
            written += os.write(fd, data[written:])
        return os.lseek(fd, 0, os.SEEK_CUR) - len(data)

    def read_at(self, offset: int) -> Diagnosis:
        """The result whose line starts at byte ``offset`` (as :meth:`append` or :func:`iter_lines` gave it)."""
        fd = self._require_open()
        chunks: list[bytes] = []
        position = offset
        while True:
            block = os.pread(fd, 65536, position)
            cut = block.find(b"\n")
            chunks.append(block if cut < 0 else block[:cut])
            if cut >= 0 or not block:
                break
            position += len(block)
        return Diagnosis.model_validate_json(b"".join(chunks))

    def rewrite_without(self, drop: Callable[[Diagnosis], bool]) -> int:
        """Atomically rewrite the file without the results for which ``drop`` is true; returns how many."""
        dropped = {line.offset for line in iter_lines(self.path)
                   if (d := parse_line(self.path, line)) is not None and drop(d)}
        return self.drop_lines(dropped)

    def drop_lines(self, offsets: Collection[int]) -> int:
        """Atomically rewrite the file without the lines starting at ``offsets``; returns how many went.

        The kept lines are copied one at a time into a file beside this one, which is renamed over it.
        """
        fd = self._require_open()
        if not offsets:
            return 0
        dropped = 0
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        with open(tmp, "wb") as out:
            dropped = _copy_lines(self.path, out, offsets)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, self.path)
        # Lock the new file before letting go of the old one, so no other run slips in between.
        self._fd = self._open_locked()
        os.close(fd)
        return dropped

    def _require_open(self) -> int:
        if self._fd is None:
            raise RuntimeError("ResultsFile is not open")
        return self._fd

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
        fd = self._require_open()
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return
        # Find where the last complete line ends; read backwards in blocks so huge files stay cheap.
        end, cut = size, 0
        while end > 0:
            start = max(0, end - 65536)
            newline = os.pread(fd, end - start, start).rfind(b"\n")
            if newline >= 0:
                cut = start + newline + 1
                break
            end = start
        try:
            Diagnosis.model_validate_json(os.pread(fd, size - cut, cut))
        except ValidationError:
            os.ftruncate(fd, cut)
            self.repaired = (
                f"removed a torn last line ({size - cut} bytes) left by an interrupted run; "
                "that trace will be judged again"
            )
        else:
            # A complete result missing only its newline (edited by hand): keep it, end the line.
            os.write(fd, b"\n")


def _locate_source(path: str, results: Path) -> tuple[str, str | None] | None:
    """``(absolute, relative to the results file's folder)`` of a source file; ``None`` when it is no file here."""
    try:
        target = Path(path)
        if not target.is_file():
            return None
        absolute = target.resolve()
    except (OSError, ValueError):
        return None
    try:
        relative: str | None = os.path.relpath(absolute, results.resolve().parent)
    except (OSError, ValueError):  # another drive (Windows): no relative path
        relative = None
    return str(absolute), relative


def _copy_lines(path: Path, out: IO[bytes], offsets: Collection[int]) -> int:
    dropped = 0
    with path.open("rb") as handle:
        offset = 0
        for line in handle:
            if offset in offsets and line.strip():
                dropped += 1
            else:
                out.write(line)
            offset += len(line)
    return dropped
