"""What every source-format module provides, and the input object they all read.

A format module defines one :class:`TraceFormat` subclass instance and registers it with
:func:`register`. The registry asks each format, in priority order, how sure it is that an input
is its own (:meth:`TraceFormat.detect`, 0..1) and hands the input to the most confident one.

Inputs are wrapped in a :class:`RawInput`, which reads the file lazily: the first 64 KiB as text for
cheap sniffing, the whole document parsed on demand (JSON, JSONL, YAML or plain text), and a
streaming iterator over the items of a top-level JSON array for files too big to load whole.
"""

from __future__ import annotations

import io
import os
import re
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import orjson

from mast._files import FileCheck, PinnedReader, open_checked
from mast._registry import Registry
from mast.caps import MAX_JSON_DEPTH
from mast.errors import TraceFormatError
from mast.normalize._console import plain_console, strip_ansi
from mast.normalize._payload import literal_failure
from mast.trace import SourceInfo, Trace

HEAD_BYTES = 64 * 1024
MAX_WHOLE_FILE_BYTES = 512 * 1024 * 1024
"""Files larger than this are only read by formats that stream them."""
_LOG_LINE = re.compile(r"\[[^\[\]{}\n]*\][ \t]*[^\s,\]}]")
"""A first line like ``[timestamp LEVEL] message``: a bracketed prefix followed by text is never JSON."""
# A YAML document by its look rather than its name (a cassette renamed "run.yaml.bak", or one
# piped in): the first line is a bare top-level key ("interactions:") or the "---" document marker.
_YAML_OPENING = re.compile(r"^(?:---[ \t]*$|[A-Za-z_][\w.-]*:[ \t]*$)", re.M)
_LOG_PREFIX = re.compile(
    r"^(?:\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?[ \t]+)"
    r"(?:[\[(]?(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|TRACE)[\])]?:?[ \t]+)?(?:[\w.]+:[ \t]+)?(?=[\[{\s\]}\"])"
)
"""A logger's prefix (``2025-01-01 10:00:00 [INFO] ``, optionally a logger name) before a line of JSON."""
_JSON_OPENING = re.compile(r'^(?:\{\s*(?:"|\}|$)|\[\s*(?:[\[{"\d\-]|true|false|null|\]|$))')
"""How a JSON object or array opens: ``{"``, ``{}``, ``[{``, ``[1``, ``["``... (a text line like ``[INFO] x`` does not)."""

DocKind = Literal["json", "jsonl", "yaml", "text"]


class JsonlLineError(Exception):
    """A JSONL line that did not parse; yielded in place of the record."""


@dataclass
class RawInput:
    """An input to normalise: a file on disk or an in-memory object.

    Normalisers call :meth:`data` for the parsed document, :meth:`records` for JSONL lines, or
    :meth:`iter_array` to stream a large top-level JSON array.
    """

    path: Path | None = None
    obj: Any = None
    _data: Any = field(default=None, repr=False)
    _kind: DocKind | None = field(default=None, repr=False)
    _head: str | None = field(default=None, repr=False)
    _error: TraceFormatError | None = field(default=None, repr=False)
    _text: str | None = field(default=None, repr=False)
    _plain_done: bool = field(default=False, repr=False)
    warnings: list[str] = field(default_factory=list)
    """What reading the bytes cost (invalid UTF-8 replaced...): added to every trace read from this input."""
    _fd: int | None = field(default=None, repr=False)

    @classmethod
    def from_path(cls, path: Path, check: FileCheck | None = None, *, follow: bool = False) -> RawInput:
        """The file at ``path``, opened now and read from that descriptor only (see :mod:`mast._files`).

        ``check``: what an earlier check saw (the file must still be that one); without it a link at
        ``path`` is refused unless ``follow``. Every read (:meth:`open`) goes through the descriptor, so
        the file swapped for a link once opened is never read.

        Raises:
            TraceFormatError: a link, not a regular file, or not the file checked.
        """
        raw = cls(path=path)
        raw._fd = open_checked(path, check, follow=follow)
        weakref.finalize(raw, os.close, raw._fd)
        return raw

    def open(self) -> io.BufferedReader:
        """The file's bytes from its start, as a binary reader (of the pinned descriptor when there is one)."""
        if self._fd is not None and hasattr(os, "pread"):
            return io.BufferedReader(PinnedReader(self._fd))
        assert self.path is not None
        return self.path.open("rb")

    @classmethod
    def from_object(cls, obj: Any) -> RawInput:
        """Wrap an already parsed object (dict, list or string)."""
        raw = cls(obj=obj)
        if isinstance(obj, str | bytes):
            raw._head = plain_console(
                obj[:HEAD_BYTES] if isinstance(obj, str) else obj[:HEAD_BYTES].decode("utf-8", "replace")
            )
        else:
            raw._data, raw._kind = obj, "json"
        return raw

    @property
    def label(self) -> str | None:
        """Path as text, for messages and :class:`SourceInfo`."""
        return str(self.path) if self.path else None

    @property
    def size(self) -> int:
        """Size in bytes (of the file, or of the text for string objects)."""
        if self._fd is not None:
            return os.fstat(self._fd).st_size
        if self.path is not None:
            return self.path.stat().st_size
        if isinstance(self.obj, str | bytes):
            return len(self.obj)
        return 0

    @property
    def head(self) -> str:
        """The first 64 KiB as text (invalid UTF-8 replaced), for cheap sniffing."""
        if self._head is None:
            if self.path is None:
                self._head = ""
            else:
                with self.open() as fh:
                    self._head = plain_console(fh.read(HEAD_BYTES).decode("utf-8", "replace"))
                # sniffed like the parse reads it: log prefixes before JSON lines removed
                self._head = _unprefixed_lines(self._head.lstrip("\ufeff").lstrip()) or self._head
        return self._head

    def fail(self, message: str, record: int | None = None) -> TraceFormatError:
        """A :class:`TraceFormatError` located at this input."""
        return TraceFormatError(message, path=self.label, record=record)

    @property
    def kind(self) -> DocKind:
        """How the document parses: ``json``, ``jsonl``, ``yaml`` or ``text``."""
        if self._kind is None:
            self._load()
        assert self._kind is not None
        return self._kind

    def data(self) -> Any:
        """The whole document parsed: JSON value, list of JSONL records, YAML value, or text.

        Raises:
            TraceFormatError: when the input is empty, binary, not UTF-8, or too large to load.
        """
        if self._kind is None:
            self._load()
        if self._error is not None:
            raise self._error
        return self._data

    def text(self) -> str:
        """The whole input as text, whatever it parses as (for text readers forced onto any file).

        Escape sequences and terminal decorations are removed (see :mod:`mast.normalize._console`).

        Raises:
            TraceFormatError: when the input is empty, binary, too large, or an object rather than text.
        """
        if self._kind is None:
            self._load()
        if self._text is None:
            if self._error is not None:
                raise self._error
            raise self.fail("holds an object, not text")
        if not self._plain_done:
            self._text, self._plain_done = plain_console(self._text), True
        return self._text

    def records(self) -> Iterator[tuple[int, Any]]:
        """Stream JSONL records as ``(line_number, value)``; a bad line yields a JsonlLineError."""
        if self.path is None:
            data = self.data()
            yield from enumerate(data if isinstance(data, list) else [data])
            return
        with self.open() as fh:
            for number, line in enumerate(fh):
                if not line.strip():
                    continue
                try:
                    yield number, orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    yield number, JsonlLineError(f"line {number + 1} is not valid JSON ({exc})")

    def iter_array(self, prefix: str = "item") -> Iterator[Any]:
        """Stream the items of a top-level JSON array without loading the file whole (ijson)."""
        if self.path is None:
            data = self.data()
            yield from (data if isinstance(data, list) else [data])
            return
        import ijson

        with self.open() as fh:
            try:
                yield from ijson.items(fh, prefix, use_float=True)
            except ijson.JSONError as exc:
                raise self.fail(f"JSON array breaks off or is malformed: {exc}") from exc

    def _load(self) -> None:
        try:
            self._data, self._kind = self._parse()
        except TraceFormatError as exc:
            self._error, self._kind, self._data = exc, "text", None

    def _decode(self, blob: bytes) -> str:
        """UTF-8 (with or without BOM); bytes that are not UTF-8 are replaced, with a warning, never refused."""
        try:
            return blob.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            bad = sum(1 for ch in blob.decode("utf-8", "replace") if ch == "\ufffd") - blob.decode(
                "utf-8", "ignore"
            ).count("\ufffd")
            self.warnings.append(
                f"input is not valid UTF-8 ({bad} undecodable byte sequence(s), the first at byte {exc.start}): "
                "decoded with U+FFFD replacement characters"
            )
            return blob.decode("utf-8-sig", "replace")

    def _parse(self) -> tuple[Any, DocKind]:
        if self.path is None:
            text = self._decode(self.obj) if isinstance(self.obj, bytes) else str(self.obj)
        else:
            size = self.size
            if size == 0:
                raise self.fail("file is empty")
            if size > MAX_WHOLE_FILE_BYTES:
                raise self.fail(
                    f"file is {size // 2**20} MiB, too large to load whole; no streaming format matched it"
                )
            with self.open() as fh:
                blob = fh.read()
            if b"\x00" in blob[:8192]:
                raise self.fail("file is binary (NUL bytes), not a text trace")
            text = self._decode(blob)
        text = strip_ansi(text)  # a raw escape byte is never valid JSON: removing it loses nothing
        stripped = text.strip()
        if not stripped:
            raise self.fail("file holds only whitespace")
        self._text = text
        unprefixed = self._without_log_prefix(stripped)
        if unprefixed is not None:
            text = stripped = unprefixed
            self._text = text
        if stripped[0] in '"-0123456789tfn' and "\n" not in stripped:
            # A bare JSON scalar ("text", 42, true, null) is JSON of no trace shape, not a text log.
            try:
                return orjson.loads(stripped), "json"
            except orjson.JSONDecodeError:
                pass
        if stripped[0] in "[{":
            try:
                return orjson.loads(stripped), "json"
            except orjson.JSONDecodeError as exc:
                if "depth limit" in str(exc) or "recursion" in str(exc).lower():
                    raise self.fail(
                        f"JSON nested too deeply: more than {MAX_JSON_DEPTH:,} levels "
                        "(the MAX_JSON_DEPTH cap)"
                    ) from exc
            if _LOG_LINE.match(stripped):
                # "[2025-17-01 10:00:00 INFO] ..." opens a log (ChatDev), not broken JSON
                return self._plain(text), "text"
            lines = [ln for ln in stripped.splitlines() if ln.strip()]
            if len(lines) > 1:
                records: list[Any] = []
                for number, line in enumerate(lines):
                    try:
                        records.append(orjson.loads(line))
                    except orjson.JSONDecodeError:
                        records.append(JsonlLineError(f"line {number + 1} is not valid JSON"))
                # JSONL when most lines are JSON objects or arrays; a text log in which a line or two
                # happen to parse (a quoted '" Finished."', a bare number) stays a text log.
                containers = sum(isinstance(r, dict | list) for r in records)
                if isinstance(records[0], dict | list) or 2 * containers >= len(records):
                    return records, "jsonl"
                if containers == 0 and not _JSON_OPENING.match(stripped):
                    return self._plain(text), "text"
            why = literal_failure(stripped)
            if " cap, " in why:  # too big to be tried as anything else: the cap is what stopped it
                tail = why.removeprefix("not JSON, and ").replace(
                    "to try as a Python literal", "to read any further"
                )
                raise self.fail(f"looks like JSON but does not parse; {tail}")
            raise self.fail("looks like JSON but does not parse (truncated or malformed)")
        named = self.path is not None and any(s in (".yaml", ".yml") for s in self.path.suffixes)
        if named or _YAML_OPENING.match(stripped):
            import yaml

            try:
                doc = yaml.safe_load(io.StringIO(text))
            except yaml.YAMLError as exc:
                if named:
                    raise self.fail(f"YAML does not parse: {' '.join(str(exc).split())}") from exc
                doc = None
            # Known by its look only: kept as YAML when it is a structured document (a mapping
            # holding a list or mapping), so a text log whose first line is "Task:" stays text.
            if named or (isinstance(doc, dict) and any(isinstance(v, dict | list) for v in doc.values())):
                return doc, "yaml"
        return self._plain(text), "text"

    def _without_log_prefix(self, stripped: str) -> str | None:
        """JSON or JSONL whose every line a logger prefixed (timestamp, level), without the prefixes.

        A warning says so; ``None`` when the lines are not all so prefixed or the rest is not JSON.
        """
        rest = _unprefixed_lines(stripped)
        if rest is None:
            return None
        lines = stripped.splitlines()
        try:
            orjson.loads(rest)
        except orjson.JSONDecodeError:
            parsed = 0
            for ln in rest.splitlines():
                try:
                    parsed += isinstance(orjson.loads(ln), dict | list)
                except orjson.JSONDecodeError:
                    pass
            if 2 * parsed < sum(1 for ln in rest.splitlines() if ln.strip()):
                return None
        prefix = _LOG_PREFIX.match(lines[0])  # it matches: _unprefixed_lines checked every line
        shown = lines[0][: prefix.end()] if prefix else lines[0]
        self.warnings.append(
            f"every line opens with a log prefix ({shown.strip()!r}...): removed before reading the JSON"
        )
        return rest

    def _plain(self, text: str) -> str:
        self._text, self._plain_done = plain_console(text), True
        return self._text


def _unprefixed_lines(text: str) -> str | None:
    """``text`` without the log prefix every non-blank line opens with, when the rest opens JSON; else ``None``."""
    if not text or text[0] in "[{" or not _LOG_PREFIX.match(text):
        return None
    lines = text.splitlines()
    if not all(_LOG_PREFIX.match(ln) for ln in lines if ln.strip()):
        return None
    rest = "\n".join(_LOG_PREFIX.sub("", ln, count=1) for ln in lines).strip()
    return rest if rest[:1] in ("[", "{") else None


class TraceFormat(ABC):
    """A source format: how to recognise it and how to turn it into traces."""

    name: str
    """Short name used by ``--format`` and in :attr:`SourceInfo.format`."""
    description: str
    """One line for ``mast formats``."""
    priority: int
    """Lower goes first when two formats are equally sure."""
    example: str = ""
    """A short excerpt of what this format detects, shown by ``mast formats``."""
    streaming: bool = False
    """True when :meth:`parse` can read inputs too large to load whole."""

    @abstractmethod
    def detect(self, raw: RawInput) -> float:
        """How sure this format is that ``raw`` is its own: 0 (no) to 1 (certain).

        Must be cheap and must not raise for inputs of other shapes.
        """

    @abstractmethod
    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the traces in ``raw``; a broken record yields a :class:`TraceFormatError` instead.

        Raise :class:`TraceFormatError` when the input as a whole cannot be read.
        """

    def source(self, raw: RawInput, record: int | None = None, variant: str | None = None) -> SourceInfo:
        """The :class:`SourceInfo` for a trace read from ``raw``."""
        return SourceInfo(format=self.name, path=raw.label, record=record, variant=variant)


def _plugin_format(name: str, loaded: object) -> TraceFormat:
    """An entry point of ``mast.formats``: a :class:`TraceFormat` instance (or class) called ``name``."""
    fmt = loaded() if isinstance(loaded, type) and issubclass(loaded, TraceFormat) else loaded
    if not isinstance(fmt, TraceFormat):
        raise TypeError(f"{loaded!r} is not a mast.normalize.TraceFormat")
    if fmt.name != name:
        raise ValueError(f"the entry point {name!r} names a format called {fmt.name!r}")
    return fmt


_REGISTRY: Registry[TraceFormat] = Registry("format", group="mast.formats", on_plugin=_plugin_format)
"""The readers by name; other packages add theirs through the ``mast.formats`` entry points."""


def register(fmt: TraceFormat) -> TraceFormat:
    """Add a format to the registry (module import time)."""
    if _REGISTRY.registered(fmt.name) and _REGISTRY.find(fmt.name) is not fmt:
        raise ValueError(f"format {fmt.name!r} registered twice")
    _REGISTRY.register(fmt.name, fmt)
    return fmt


def formats() -> list[TraceFormat]:
    """Registered formats in priority order (a plugin's joins with its own priority)."""
    return sorted((f for _, f in _REGISTRY.values()), key=lambda f: (f.priority, f.name))


def get_format(name: str) -> TraceFormat:
    """The registered format called ``name``."""
    found = _REGISTRY.find(name)
    if found is None:
        known = ", ".join(f.name for f in formats())
        raise TraceFormatError(f"unknown format {name!r}; known formats: {known}") from None
    return found
