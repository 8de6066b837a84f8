"""The durable record of a provider-batch run, kept next to the results file.

``results.jsonl.batch.json`` lists every batch this run made: its request file (kept, with its
sha256, in the ``results.jsonl.batch/`` folder), which requests and traces it holds, and how far
it got (:class:`Phase`). Each step is written down (atomically: temp file, fsync, rename) *before*
the step that depends on it, so a process killed at any point resumes where it was:

- ``prepared``: the request file is written; nothing sent yet (upload it).
- ``uploaded``: the provider holds the file (create the batch).
- ``creating``: the batch may exist at the provider without its id here: look it up by the
  ``mast_batch`` metadata before creating another, so nothing is submitted twice.
- ``submitted``: the batch id is known (poll it).
- ``downloaded``: its output and error files are saved in the folder (read answers from them).

Example:
    >>> store = BatchStore("results.jsonl")                    # doctest: +SKIP
    >>> store.load().entries[0].phase                          # doctest: +SKIP
    'submitted'
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field

from mast.errors import UsageError

BATCH_STATE_SCHEMA_VERSION: Final = "mast-batch-state/1"

Phase = Literal["prepared", "uploaded", "creating", "submitted", "downloaded"]


def _now() -> datetime:
    return datetime.now(UTC)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class BatchEntry(_Model):
    """One provider batch: its requests, where it is, and what the provider last said."""

    local_id: str
    """``b0001``...: names the request file and is sent as the batch's ``mast_batch`` metadata."""
    request_file: str
    """The JSONL request file, in the state folder."""
    request_sha256: str
    """sha256 of the request file: checked before it is uploaded again after a crash."""
    n_bytes: int
    requests: dict[str, str]
    """``custom_id -> trace id`` of every request in the batch."""
    phase: Phase = "prepared"
    input_file_id: str | None = None
    batch_id: str | None = None
    provider_status: str | None = None
    """The provider's last word (``in_progress``, ``completed``, ``expired``...)."""
    counts: dict[str, int] = Field(default_factory=dict)
    """``total`` / ``completed`` / ``failed`` requests, when the provider reports them."""
    output_file: str | None = None
    """The downloaded output, in the state folder."""
    error_file: str | None = None
    """The downloaded error file, in the state folder."""
    created_at: datetime = Field(default_factory=_now)
    submitted_at: datetime | None = None
    finished_at: datetime | None = None

    @property
    def open(self) -> bool:
        """Answers may still come from this batch."""
        return self.phase != "downloaded"


class BatchState(_Model):
    """Every batch of one results file."""

    schema_version: str = BATCH_STATE_SCHEMA_VERSION
    model: str | None = None
    """The model the batches ask (a run with another model starts its own batches)."""
    entries: list[BatchEntry] = Field(default_factory=list)

    def next_id(self) -> str:
        """The local id of the next batch."""
        return f"b{len(self.entries) + 1:04d}"


@dataclass(frozen=True)
class ItemResult:
    """One request's fate in a downloaded output or error file."""

    custom_id: str
    body: dict[str, Any] | None
    """The chat completion, for a request answered with HTTP 200."""
    status_code: int | None
    error: str | None
    """Why there is no answer (failed, expired, refused)."""

    @property
    def ok(self) -> bool:
        """An answer came."""
        return self.body is not None and self.status_code == 200


class BatchStore:
    """The state file and folder beside ``results``; every write is atomic."""

    def __init__(self, results: str | os.PathLike[str]) -> None:
        results = Path(results)
        self.path = results.with_name(results.name + ".batch.json")
        self.folder = results.with_name(results.name + ".batch")

    def exists(self) -> bool:
        """Whether a batch run was recorded for this results file."""
        return self.path.exists()

    def clear(self) -> None:
        """Forget every batch recorded (``--overwrite``); batches still running at the provider are not cancelled."""
        self.path.unlink(missing_ok=True)
        if self.folder.is_dir():
            for path in self.folder.iterdir():
                path.unlink(missing_ok=True)

    def load(self) -> BatchState:
        """The recorded state (empty when there is none).

        Raises:
            UsageError: the state file is not one mast wrote.
        """
        if not self.path.exists():
            return BatchState()
        try:
            state = BatchState.model_validate_json(self.path.read_bytes())
        except ValueError as exc:
            raise UsageError(f"{self.path}: not a readable mast batch state ({' '.join(str(exc).split())[:200]})") from exc
        if state.schema_version != BATCH_STATE_SCHEMA_VERSION:
            raise UsageError(f"{self.path}: batch state version {state.schema_version} is not {BATCH_STATE_SCHEMA_VERSION}")
        return state

    def save(self, state: BatchState) -> None:
        """Write the state atomically (a crash leaves the old or the new file, never half of one)."""
        _atomic_write(self.path, state.model_dump_json(indent=1).encode())

    def write_requests(self, local_id: str, lines: list[bytes]) -> tuple[str, str, int]:
        """Save a request file; returns ``(name, sha256, bytes)``."""
        content = b"".join(line + b"\n" for line in lines)
        name = f"{local_id}.requests.jsonl"
        _atomic_write(self.folder / name, content)
        return name, hashlib.sha256(content).hexdigest(), len(content)

    def read_requests(self, entry: BatchEntry) -> bytes:
        """The request file of ``entry``, checked against its recorded hash.

        Raises:
            UsageError: the file is missing or was changed since it was written.
        """
        path = self.folder / entry.request_file
        try:
            content = path.read_bytes()
        except OSError as exc:
            raise UsageError(f"{path}: request file of batch {entry.local_id} unreadable ({exc})") from exc
        if hashlib.sha256(content).hexdigest() != entry.request_sha256:
            raise UsageError(f"{path}: request file changed since it was written (sha256 differs); not uploading it")
        return content

    def write_result_file(self, entry: BatchEntry, kind: Literal["output", "errors"], content: bytes) -> str:
        """Save a downloaded output or error file; returns its name in the folder."""
        name = f"{entry.local_id}.{kind}.jsonl"
        _atomic_write(self.folder / name, content)
        return name

    def results(self, entry: BatchEntry) -> Iterator[ItemResult]:
        """Every request result of a downloaded batch (output file first, then errors)."""
        for name in (entry.output_file, entry.error_file):
            if not name:
                continue
            path = self.folder / name
            if not path.exists():
                continue
            for line in path.read_bytes().splitlines():
                if line.strip():
                    item = parse_result_line(line)
                    if item is not None:
                        yield item


def parse_result_line(line: bytes) -> ItemResult | None:
    """One line of a provider's output or error file (OpenAI's shape, which litellm returns)."""
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(record, dict) or not record.get("custom_id"):
        return None
    custom_id = str(record["custom_id"])
    response = record.get("response") or {}
    error = record.get("error")
    status = response.get("status_code") if isinstance(response, dict) else None
    body = response.get("body") if isinstance(response, dict) else None
    if status == 200 and isinstance(body, dict) and not error:
        return ItemResult(custom_id, body, 200, None)
    reason = _reason(error) or _reason(body.get("error") if isinstance(body, dict) else None) or f"HTTP {status}"
    return ItemResult(custom_id, None, status if isinstance(status, int) else None, reason)


def _reason(error: Any) -> str | None:
    if not error:
        return None
    if isinstance(error, dict):
        code, message = error.get("code"), error.get("message")
        return f"{code}: {message}" if code and message else str(message or code)
    return str(error)


def _atomic_write(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    try:  # the rename itself survives a power cut only once the folder is synced
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)
