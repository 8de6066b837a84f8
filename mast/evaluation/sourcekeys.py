"""Gold labels keyed by where a trace came from (``path`` and ``record``) instead of its trace id.

A trace id of a chat list or a text file is a content hash, which a person cannot know before
running mast. A gold file may instead name the file (``path``, as ``mast normalize`` shows it) and,
for files holding many traces, the ``record`` number. Such rows get a key ``path:<path>[#<record>]``;
:func:`resolve_source_keys` turns them into the trace ids of the predictions read from the same
files (matched as written, then as absolute paths, then by file name when that is unique).

Example:
    >>> source_key("runs/a.jsonl", 2)
    'path:runs/a.jsonl#2'
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from mast.diagnosis import Diagnosis

__all__ = ["PATH_PREFIX", "SourceMap", "add_source_keys", "resolve_source_keys", "source_key", "source_map"]

PATH_PREFIX = "path:"
SOURCE_MAP_ATTR = "source_keys"


def source_key(path: str, record: Any = None) -> str:
    """``path:<path>`` or ``path:<path>#<record>``."""
    missing = record is None or (isinstance(record, float) and pd.isna(record)) or record == ""
    return f"{PATH_PREFIX}{path}" + ("" if missing else f"#{int(record)}")


def add_source_keys(frame: pd.DataFrame) -> pd.DataFrame:
    """A gold frame without ``trace_id`` but with ``path`` (or ``source_path``) gets path keys as ids."""
    if "trace_id" in frame.columns:
        return frame
    column = "path" if "path" in frame.columns else "source_path" if "source_path" in frame.columns else None
    if column is None:
        return frame
    records = frame["record"] if "record" in frame.columns else [None] * len(frame)
    keyed = frame.copy()
    keyed["trace_id"] = [source_key(str(p), r) for p, r in zip(frame[column], records, strict=True)]
    return keyed.drop(columns=[c for c in (column, "record") if c in keyed.columns])


def _variants(path: str, record: int | None) -> list[str]:
    resolved = str(Path(path).resolve()) if path else path
    return [source_key(path, record), source_key(resolved, record)]


def source_map(diagnoses: Iterable[Diagnosis]) -> dict[str, str]:
    """Path keys (as written, absolute, and by file name when unique) -> trace ids of ``diagnoses``."""
    sources = SourceMap()
    for d in diagnoses:
        sources.add(d)
    return sources.as_dict()


def _tails(path: str) -> list[str]:
    """``a/b/c.json`` -> ``b/c.json``, ``a/b/c.json``: the relative forms a gold file may name it by."""
    parts = Path(path).parts
    return ["/".join(parts[i:]) for i in range(1, len(parts) - 1)]


class SourceMap(Mapping[str, str]):
    """:func:`source_map` filled one diagnosis at a time, its keys built only when first looked up.

    A results file of 100,000 lines keeps three small values per line here (path, record, trace
    id), and the path keys (two absolute-path lookups per line) are computed only when a gold file
    keyed by path asks. It sits in a label table's ``attrs``, which pandas deep-copies on every
    operation, so a copy is the same object (it does not change once read).
    """

    def __init__(self) -> None:
        self._rows: list[tuple[str, int | None, str]] = []
        self._keys: dict[str, str] | None = None

    def add(self, diagnosis: Diagnosis) -> None:
        """Note where one diagnosis's trace came from."""
        if diagnosis.source.path is not None:
            self._rows.append((diagnosis.source.path, diagnosis.source.record, diagnosis.trace_id))
            self._keys = None

    def as_dict(self) -> dict[str, str]:
        """Every path key and its trace id."""
        if self._keys is None:
            exact: dict[str, str] = {}
            by_name: dict[str, set[str]] = {}
            per_file: dict[str, int] = {}
            for path, _, _ in self._rows:
                per_file[path] = per_file.get(path, 0) + 1
            for path, record, trace_id in self._rows:
                # A file holding one trace is named by its path alone, whatever record number it got.
                records = [record, None] if record is not None and per_file[path] == 1 else [record]
                for rec in records:
                    for key in _variants(path, rec):
                        exact.setdefault(key, trace_id)
                    by_name.setdefault(source_key(os.path.basename(path), rec), set()).add(trace_id)
                    for tail in _tails(path):  # data/x.json names /home/me/proj/data/x.json
                        by_name.setdefault(source_key(tail, rec), set()).add(trace_id)
            for key, ids in by_name.items():
                if len(ids) == 1:
                    exact.setdefault(key, next(iter(ids)))
            self._keys = exact
        return self._keys

    def __getitem__(self, key: str) -> str:
        return self.as_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.as_dict())

    def __len__(self) -> int:
        return len(self.as_dict())

    def __deepcopy__(self, memo: dict[int, Any]) -> SourceMap:
        return self


def resolve_source_keys(gold: pd.DataFrame, keys: Mapping[str, str]) -> pd.DataFrame:
    """Gold rows keyed ``path:...`` get the matching trace id (absolute paths tried too); others stay."""
    ids = gold["trace_id"].astype(str)
    if not ids.str.startswith(PATH_PREFIX).any() or not keys:
        return gold

    def resolve(value: str) -> str:
        if not value.startswith(PATH_PREFIX):
            return value
        if value in keys:
            return keys[value]
        path, _, record = value[len(PATH_PREFIX):].partition("#")
        path = path.replace("\\", "/").removeprefix("./")
        for key in [*_variants(path, int(record) if record else None), source_key(path, int(record) if record else None)]:
            if key in keys:
                return keys[key]
        return value

    resolved = gold.copy()
    resolved["trace_id"] = [resolve(v) for v in ids]
    return resolved
