"""The on-disk judge cache: identical judgements are answered without an LLM call.

A sqlite file (stdlib) under ``MAST_CACHE_DIR`` or the per-user cache folder. Keys are the sha256
of canonical JSON of only what changes the answer (:func:`cache_key`); values are diagnoses. The
database runs in WAL mode with a busy timeout and every operation opens its own short connection,
so several asyncio tasks (through threads) and several processes can read and write at once.
A cache that cannot be used never fails a judgement: the caller gets ``None`` and a warning.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import platformdirs

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
    """sha256 of the canonical JSON of ``parts`` (sorted keys, no whitespace)."""
    canonical = orjson.dumps({"format": CACHE_FORMAT, **parts}, option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).hexdigest()


@dataclass(frozen=True)
class CacheInfo:
    """What ``mast cache info`` shows."""

    path: Path
    entries: int
    size_bytes: int


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
            yield connection
        finally:
            connection.close()

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value, or ``None`` when absent or unreadable."""
        with self._connect() as db:
            row = db.execute("SELECT value FROM entries WHERE key = ?", (key,)).fetchone()
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
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO entries (key, value, created_at) VALUES (?, ?, ?)",
                (key, blob, time.time()),
            )

    def info(self) -> CacheInfo:
        """Location, entry count and size on disk (data file plus WAL)."""
        if not self.path.exists():
            return CacheInfo(path=self.path, entries=0, size_bytes=0)
        with self._connect() as db:
            entries = int(db.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
        size = sum(p.stat().st_size for p in self.directory.glob(CACHE_FILE + "*") if p.is_file())
        return CacheInfo(path=self.path, entries=entries, size_bytes=size)

    def clear(self) -> int:
        """Delete every entry; return how many there were."""
        if not self.path.exists():
            return 0
        with self._connect() as db:
            removed = int(db.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
            db.execute("DELETE FROM entries")
            db.execute("VACUUM")
        return removed
