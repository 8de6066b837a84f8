"""Trace stores mast reads from directly: ``SCHEME://HOST:PORT/PROJECT`` URLs instead of files.

A source lists the finished traces of a project (filtered by :class:`TraceQuery`), in the order the
store received them, and reads each as a normalised :class:`~mast.trace.Trace`. One module per store
registers its URL schemes with :func:`register`; :func:`open_source` picks the module by scheme, so a
Langfuse or LangSmith source is one new module that implements :class:`TraceSource`::

    mast.sources.phoenix    phoenix://HOST:PORT/PROJECT  (phoenixs:// or phoenix+https:// for TLS)

    mast.sources.mlflow     mlflow://HOST:PORT/EXPERIMENT_NAME  (mlflow+https:// for TLS)

    mast.sources.scout      scout:///path/to/db  (an Inspect Scout transcript database)

:class:`StoreReader` reads the traces of some store URLs as one stream, a page of traces at a
time (never the whole store in memory), and keeps a small :class:`TraceNote` per trace (where it
came from, its root span, which span each step came from) for the sinks that write verdicts back
(:mod:`mast.sinks`). ``mast watch`` works on any source whose positions increase (:attr:`RootSpan.position`).

Example:
    >>> from mast.sources import open_source, TraceQuery
    >>> source = open_source("phoenix://localhost:6006/default")            # doctest: +SKIP
    >>> roots = list(source.roots(TraceQuery(limit=10)))                    # doctest: +SKIP
    >>> traces = source.read([r.trace_id for r in roots])                   # doctest: +SKIP

How to add a store
------------------
One module with a class that has the four methods of :class:`TraceSource` and an ``open_url``
function, registered by URL scheme: from another package, one entry point per scheme in its
``pyproject.toml`` (``[project.entry-points."mast.sources"]``, ``acme = "acme_mast.source:open_url"``),
or at run time :func:`register` (``register(["acme", "acme+https"], open_url)``)::

    from collections.abc import Iterator, Sequence

    from mast.normalize import iter_traces
    from mast.sources import RootSpan, TraceQuery
    from mast.trace import Trace


    class AcmeSource:
        def __init__(self, url: str) -> None:
            self.url = url
            self.api = AcmeClient(url)             # your HTTP calls (httpx)

        def roots(self, query: TraceQuery) -> Iterator[RootSpan]:
            for run in self.api.finished_runs(since=query.since, after=query.after):   # a page at a time
                yield RootSpan(trace_id=run["id"], span_id=run["root_span"], name=run["name"],
                               start=run["start"], position=str(run["seq"]))

        def read(self, trace_ids: Sequence[str]) -> dict[str, Trace]:
            out = {}
            for run in self.api.runs(trace_ids):
                trace = next(iter(iter_traces(run["otlp"], format="otlp")))   # reuse a reader
                trace.source.path = self.url
                out[run["id"]] = trace
            return out

        def span_counts(self, trace_ids: Sequence[str]) -> dict[str, int]:
            return {run["id"]: run["span_count"] for run in self.api.runs(trace_ids)}

        def close(self) -> None:
            self.api.close()


    def open_url(url: str) -> AcmeSource:
        return AcmeSource(url)

``mast label acme://...`` and ``mast watch acme://...`` then work; a sink writing verdicts back is
added in :mod:`mast.sinks` (a store's sink has its scheme's name). A store of mast's own is one more
``"module:open_url"`` line in ``_BUILTIN`` below.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol
from urllib.parse import SplitResult

from mast._registry import Registry
from mast.errors import UsageError
from mast.trace import Trace

__all__ = [
    "RootSpan",
    "SourceOpener",
    "StoreReader",
    "TraceNote",
    "TraceQuery",
    "TraceSource",
    "is_source_url",
    "open_source",
    "public_url",
    "register",
    "source_scheme",
    "split_store_url",
    "step_spans",
]

READ_BATCH = 50
"""Traces read from a store per request batch."""


@dataclass(frozen=True)
class TraceQuery:
    """Which traces to read. Every bound applies to the trace's root span."""

    since: datetime | None = None
    """Root span started at or after this time."""
    until: datetime | None = None
    """Root span started before this time."""
    limit: int | None = None
    """At most this many traces: the most recently received ones."""
    trace_ids: Sequence[str] = ()
    """Only these trace ids."""
    root_names: Sequence[str] = ()
    """Only traces whose root span has one of these names."""
    after: str | None = None
    """Only roots the store received after this position (see :attr:`RootSpan.position`); ``""``:
    from the start, listed in position order (what ``mast watch`` asks first)."""
    filter: str | None = None
    """The store's own filter expression (MLflow's search filter); a store without one refuses it."""


@dataclass(frozen=True)
class RootSpan:
    """A finished trace as the store lists it: its root span has ended and arrived."""

    trace_id: str
    span_id: str
    name: str
    start: datetime | None
    position: str
    """Where the store received it, opaque, increasing: a durable place to list from next time."""
    end: datetime | None = None
    """When the trace ended, where the store says so and its traces arrive whole (MLflow): a watcher
    counts the quiet period from here rather than from when it first saw the trace."""


class TraceSource(Protocol):
    """What mast needs from a trace store."""

    url: str
    """The URL the source was opened with, less any user and password (:func:`public_url`): written
    as each trace's ``source.path``."""

    def roots(self, query: TraceQuery) -> Iterator[RootSpan]:
        """The traces matching ``query`` whose root span has arrived, oldest received first."""
        ...

    def read(self, trace_ids: Sequence[str]) -> dict[str, Trace]:
        """The given traces, normalised, by trace id (a trace with no spans is left out)."""
        ...

    def span_counts(self, trace_ids: Sequence[str]) -> dict[str, int]:
        """How many spans the store holds for each trace (to tell when a trace stopped growing)."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


SourceOpener = Callable[[str], TraceSource]
"""``open_url(url) -> TraceSource``: what a URL scheme stands for."""

_BUILTIN: dict[str, tuple[str, ...]] = {
    "mast.sources.phoenix:open_url": ("phoenix", "phoenixs", "phoenix+http", "phoenix+https"),
    "mast.sources.mlflow:open_url": ("mlflow", "mlflows", "mlflow+http", "mlflow+https"),
    "mast.sources.scout:open_url": ("scout",),
}

_REGISTRY: Registry[SourceOpener] = Registry(
    "trace store", group="mast.sources",
    builtins={scheme: opener for opener, schemes in _BUILTIN.items() for scheme in schemes},
)
"""URL scheme -> the store's ``open_url(url)`` (``"module:function"``, imported when asked for);
plugins join through the ``mast.sources`` entry points, one per scheme."""

_FIRST_SCHEME: dict[str, str] = {scheme: schemes[0] for schemes in _BUILTIN.values() for scheme in schemes}
"""Scheme -> the first scheme its source registered (``phoenixs`` -> ``phoenix``); a scheme not here is its own."""


def register(schemes: Sequence[str], opener: SourceOpener | str) -> None:
    """Make ``open_source`` open URLs of ``schemes`` with ``opener`` (a new store, one module)."""
    for scheme in schemes:
        _REGISTRY.register(scheme, opener)
        _FIRST_SCHEME[scheme] = schemes[0]


def source_scheme(url: str) -> str | None:
    """The first scheme the source of ``url`` registered (``phoenix`` for ``phoenixs://``), or ``None``."""
    scheme = _scheme(url)
    if scheme is None or scheme not in _REGISTRY:
        return None
    return _FIRST_SCHEME.get(scheme, scheme)


def _scheme(text: str) -> str | None:
    head, sep, _ = text.partition("://")
    return head.lower() if sep else None


def public_url(url: str) -> str:
    """``url`` without its user and password (``mlflow://u:pw@h:5000/x`` -> ``mlflow://h:5000/x``).

    What is printed or stored (messages, each result's ``source.path``); the credentials in the URL
    are still used to connect.
    """
    from urllib.parse import urlsplit, urlunsplit

    head, sep, rest = url.partition("://")
    if sep and "@" in rest:
        # A password with "#", "?" or "/" in it, not percent-encoded, ends urlsplit's netloc early
        # ("u:p#ss@h" reads as netloc "u:p"): the credentials are cut by hand, up to their "@".
        authority = rest.split("/", 1)[0]
        if "@" in authority:
            return f"{head}://{rest[len(authority.rpartition('@')[0]) + 1 :]}"
        first = re.split(r"[/?#]", rest, maxsplit=1)[0]
        if ":" in first and not first.rpartition(":")[2].isdigit():  # "user:pa" of "user:pa/ss@host"
            return f"{head}://{rest.partition('@')[2]}"
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def split_store_url(url: str, usage: str) -> SplitResult:
    """``url`` split, refused when its user or password would be read as part of the host or path.

    A password holding ``#``, ``?``, ``/`` or ``@`` that is not percent-encoded ends the URL's
    authority early: the store would be asked at a host made of the password, and an error would
    print it. ``usage`` is the expected shape (``phoenix://HOST:PORT/PROJECT``).

    Raises:
        UsageError: naming the URL without its credentials.
    """
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    meant = urlsplit(public_url(url)).netloc
    try:
        parts.port  # noqa: B018 - raises on a port that is no number ("admin:p" of "admin:p#ss@host")
        ambiguous = parts.netloc.rpartition("@")[2] != meant
    except ValueError:
        ambiguous = True
    if ambiguous:
        raise UsageError(
            f"{public_url(url)}: expected {usage}; a user or password holding #, ?, / or @ must be "
            "percent-encoded (%23, %3F, %2F, %40)"
        )
    return parts


def is_source_url(text: str) -> bool:
    """Whether ``text`` names a trace store rather than a file."""
    scheme = _scheme(text)
    return scheme is not None and scheme in _REGISTRY


def open_source(url: str) -> TraceSource:
    """The source for ``url``.

    Raises:
        UsageError: no source handles the URL's scheme, or the URL is malformed.
    """
    scheme = _scheme(url)
    opener = _REGISTRY.find(scheme) if scheme is not None else None
    if opener is None:
        known = ", ".join(dict.fromkeys(_FIRST_SCHEME.get(s, s) for s in _REGISTRY.names()))
        raise UsageError(f"{url}: not a trace store URL (known: {known}://HOST:PORT/PROJECT)")
    return opener(url)


def step_spans(trace: Trace) -> dict[int, str]:
    """Step number -> id of the span it came from (its own span, else the enclosing one)."""
    return {s.index: sid for s in trace.steps if (sid := s.id or s.parent_id)}


@dataclass(frozen=True)
class TraceNote:
    """What a sink needs to know of a store trace once its verdict arrives (the trace itself is gone)."""

    url: str
    """The store URL it was read from."""
    content_hash: str
    root_span_id: str | None
    """The root span (to parent OTel events), when the store says."""
    step_spans: dict[int, str]
    """Step number -> span id."""

    @classmethod
    def of(cls, url: str, trace: Trace, root_span_id: str | None = None) -> TraceNote:
        """The note of ``trace``, read from ``url``."""
        root = root_span_id or str(trace.metadata.get("root_span_id") or "") or None
        return cls(url=url, content_hash=trace.content_hash(), root_span_id=root, step_spans=step_spans(trace))


class StoreReader:
    """The traces of some store URLs as one stream, read a page at a time, with a note per trace.

    ``keep_notes``: keep a :class:`TraceNote` per trace read until :meth:`pop_note` takes it (the
    sinks do, as each verdict arrives, so the notes held are about the traces in flight).
    """

    def __init__(self, urls: Sequence[str], query: TraceQuery | None = None, *, keep_notes: bool = True) -> None:
        self.urls = list(urls)
        self.query = query or TraceQuery()
        self.keep_notes = keep_notes
        self.notes: dict[str, TraceNote] = {}
        self.read_count = 0

    def __iter__(self) -> Iterator[Trace]:
        """Every trace of the URLs matching the query, store after store, oldest received first."""
        for url in self.urls:
            source = open_source(url)
            try:
                batch: list[RootSpan] = []
                for root in source.roots(self.query):
                    batch.append(root)
                    if len(batch) >= READ_BATCH:
                        yield from self._read(source, url, batch)
                        batch = []
                if batch:
                    yield from self._read(source, url, batch)
            finally:
                source.close()

    def _read(self, source: TraceSource, url: str, roots: list[RootSpan]) -> Iterator[Trace]:
        got = source.read([r.trace_id for r in roots])
        for root in roots:
            trace = got.get(root.trace_id)
            if trace is None:
                continue
            self.read_count += 1
            if self.keep_notes:
                self.notes[trace.trace_id] = TraceNote.of(url, trace, root.span_id)
            yield trace

    def pop_note(self, trace_id: str) -> TraceNote | None:
        """The note of a trace read, removed (``None`` for a trace not read from a store)."""
        return self.notes.pop(trace_id, None)
