"""The on-disk judge cache: identical judgements are answered without an LLM call.

A sqlite file (stdlib) under ``MAST_CACHE_DIR`` or the per-user cache folder. Keys are the sha256
of canonical JSON of only what changes the answer (:func:`cache_key`); values are diagnoses. The
database runs in WAL mode with a busy timeout and every operation opens its own short connection,
so several asyncio tasks (through threads) and several processes can read and write at once.
A cache that cannot be used never fails a judgement: the caller gets ``None`` and a warning
(:func:`read` and :func:`write`, what the judge calls).

:func:`judgement_key` is the one place that says what a judgement's key holds. Repeated sampling
of one trace (juries, self-consistency) passes ``sample=k`` so each draw has its own entry;
``sample=0`` keeps the key of a single judgement.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import orjson
import platformdirs

from mast._json import canonical_hash

if TYPE_CHECKING:
    from mast.diagnosis import Diagnosis
    from mast.judge.config import JudgeConfig
    from mast.judge.material import Material
    from mast.judge.prompt import PromptSet
    from mast.judge.schema import Limits
    from mast.taxonomy import Taxonomy

CACHE_FORMAT = "mast-judge-cache/1"
"""Bumped when the stored value's shape changes, so old entries are not read."""
CACHE_FILE = "judge-cache.sqlite3"


def default_cache_dir() -> Path:
    """``MAST_CACHE_DIR`` when set, else the per-user cache folder for ``mast``."""
    configured = os.environ.get("MAST_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    return Path(platformdirs.user_cache_dir("mast"))


def cache_key(parts: dict[str, Any]) -> str:
    """sha256 of the canonical JSON of ``parts`` (:func:`mast._json.canonical_hash`)."""
    return canonical_hash({"format": CACHE_FORMAT, **parts})


def judgement_key(
    *,
    config: JudgeConfig,
    prompts: PromptSet,
    taxonomy: Taxonomy,
    taxonomy_hash: str,
    trace_hash: str,
    material: Material,
    context: int,
    limits: Limits,
    sample: int = 0,
) -> str:
    """The cache key of one LLM judgement: only what changes the answer (never keys, timeouts, concurrency).

    Args:
        config: the sampling parameters and redaction options (:meth:`JudgeConfig.answer_params`).
        prompts: the prompt version and hash.
        taxonomy: its version.
        taxonomy_hash: the sha256 of its fingerprint (computed once per judge).
        trace_hash: the trace's content hash.
        material: what the prompt holds after rendering, redaction (custom patterns included) and hints.
        context: the context window, which decides single vs chunked.
        limits: the answer schema's caps, which shape the answer.
        sample: the draw's index when one trace is judged several times; 0 (left out of the key) otherwise.
    """
    parts: dict[str, Any] = {
        "answer": config.answer_params(),
        "prompt_version": prompts.version,
        "prompt_hash": prompts.hash,
        "taxonomy_version": taxonomy.version,
        "taxonomy": taxonomy_hash,
        "trace": trace_hash,
        "material": hashlib.sha256("\x00".join(material.all_text()).encode("utf-8", "surrogatepass")).hexdigest(),
        "context_window": context,
        "limits": dataclasses.asdict(limits),
    }
    if sample:
        parts["sample"] = sample
    return cache_key(parts)


async def read(cache: JudgeCache | None, key: str, warnings: list[str]) -> dict[str, Any] | None:
    """The cached value, or ``None`` (no cache, no entry, or a cache that cannot be read: noted in ``warnings``)."""
    if cache is None:
        return None
    try:
        return await asyncio.to_thread(cache.get, key)
    except (sqlite3.Error, OSError) as exc:
        warnings.append(f"cache not readable ({exc}); judging without it")
        return None


async def write(cache: JudgeCache | None, key: str, diagnosis: Diagnosis, warnings: list[str]) -> None:
    """Store ``diagnosis`` (without its source and usage, which belong to each run); a failure is noted in ``warnings``."""
    if cache is None:
        return
    value = diagnosis.model_dump(mode="json", exclude={"source", "usage"})
    try:
        await asyncio.to_thread(cache.put, key, value)
    except (sqlite3.Error, OSError) as exc:
        warnings.append(f"cache not writable ({exc}); the result was not cached")


@dataclass(frozen=True)
class CacheInfo:
    """What ``mast cache info`` shows."""

    path: Path
    entries: int
    size_bytes: int


T = TypeVar("T")

_BUSY_WAIT_S = 10.0
"""How long a cache operation waits out a busy database file before it fails."""


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class JudgeCache:
    """A key -> JSON store in one sqlite file, safe under concurrent writers."""

    def __init__(self, directory: Path | str | None = None) -> None:
        self.directory = Path(directory).expanduser() if directory else default_cache_dir()
        self.path = self.directory / CACHE_FILE

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        self.directory.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        try:
            connection.execute("PRAGMA busy_timeout = 30000")
            connection.execute("PRAGMA journal_mode = WAL")
            connection.execute(
                "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, value BLOB NOT NULL, created_at REAL NOT NULL)"
            )
            # What litellm said about a model (mast.judge.deferred), kept apart from the judgements.
            connection.execute(
                "CREATE TABLE IF NOT EXISTS facts (key TEXT PRIMARY KEY, value BLOB NOT NULL, created_at REAL NOT NULL)"
            )
            yield connection
        finally:
            connection.close()

    def _with_db(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``operation`` on a fresh connection, again after a short wait while the file is busy.

        SQLite answers "database is locked" at once, without its busy timeout, when a connection
        opens while the last other connection is closing (and cleaning up the WAL) or recovering
        it: with one connection per operation and many writers, that happens. A cache is shared by
        parallel workers, so a busy moment is waited out (about ``_BUSY_WAIT_S`` in all), not an error.
        """
        waited, pause = 0.0, 0.005
        while True:
            try:
                with self._connect() as db:
                    return operation(db)
            except sqlite3.OperationalError as exc:
                if waited >= _BUSY_WAIT_S or not _is_busy(exc):
                    raise
            time.sleep(pause)
            waited += pause
            pause = min(pause * 2, 0.25)

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value, or ``None`` when absent or unreadable."""
        row = self._with_db(lambda db: db.execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone())
        if row is None:
            return None
        try:
            value = orjson.loads(row[0])
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` under ``key`` (last writer wins; writers of one key write the same answer)."""
        blob = orjson.dumps(value)
        self._with_db(
            lambda db: db.execute(
                "INSERT OR REPLACE INTO entries (key, value, created_at) VALUES (?, ?, ?)",
                (key, blob, time.time()),
            )
        )

    def get_fact(self, key: str) -> dict[str, Any] | None:
        """A remembered model fact (:mod:`mast.judge.deferred`), or ``None``; never counted as a judgement."""
        row = self._with_db(lambda db: db.execute("SELECT value FROM facts WHERE key = ?", (key,)).fetchone())
        try:
            value = orjson.loads(row[0]) if row is not None else None
        except orjson.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None

    def put_fact(self, key: str, value: dict[str, Any]) -> None:
        """Remember a model fact under ``key``."""
        blob = orjson.dumps(value)
        self._with_db(
            lambda db: db.execute(
                "INSERT OR REPLACE INTO facts (key, value, created_at) VALUES (?, ?, ?)",
                (key, blob, time.time()),
            )
        )

    def info(self) -> CacheInfo:
        """Location, entry count and size on disk (data file plus WAL)."""
        if not self.path.exists():
            return CacheInfo(path=self.path, entries=0, size_bytes=0)
        entries = self._with_db(lambda db: int(db.execute("SELECT COUNT(*) FROM entries").fetchone()[0]))
        size = sum(p.stat().st_size for p in self.directory.glob(CACHE_FILE + "*") if p.is_file())
        return CacheInfo(path=self.path, entries=entries, size_bytes=size)

    def clear(self) -> int:
        """Delete every entry; return how many there were."""
        if not self.path.exists():
            return 0

        def delete_all(db: sqlite3.Connection) -> int:
            removed = int(db.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
            db.execute("DELETE FROM entries")
            db.execute("DELETE FROM facts")
            db.execute("VACUUM")
            return removed

        return self._with_db(delete_all)
