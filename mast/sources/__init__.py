"""Trace stores mast reads from directly: ``SCHEME://HOST:PORT/PROJECT`` URLs instead of files.

A source lists the finished traces of a project (filtered by :class:`TraceQuery`), in the order the
store received them, and reads each as a normalised :class:`~mast.trace.Trace`. One module per store
registers its URL schemes with :func:`register`; :func:`open_source` picks the module by scheme, so a
Langfuse or LangSmith source is one new module that implements :class:`TraceSource`::

    mast.sources.phoenix    phoenix://HOST:PORT/PROJECT  (phoenixs:// or phoenix+https:// for TLS)

Example:
    >>> from mast.sources import open_source, TraceQuery
    >>> source = open_source("phoenix://localhost:6006/default")            # doctest: +SKIP
    >>> traces = list(source.traces(TraceQuery(limit=10)))                  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from mast.errors import UsageError
from mast.trace import Trace

__all__ = [
    "RootSpan",
    "TraceQuery",
    "TraceSource",
    "is_source_url",
    "open_source",
    "register",
]


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
    """Only roots the store received after this position (see :attr:`RootSpan.position`)."""
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


class TraceSource(Protocol):
    """What mast needs from a trace store."""

    url: str
    """The URL the source was opened with, written as each trace's ``source.path``."""

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


@dataclass
class _Registration:
    schemes: tuple[str, ...]
    module: str
    opener: Callable[[str], TraceSource] | None = field(default=None)


_REGISTRY: list[_Registration] = [
    _Registration(("phoenix", "phoenixs", "phoenix+http", "phoenix+https"), "mast.sources.phoenix"),
    _Registration(("mlflow", "mlflows", "mlflow+http", "mlflow+https"), "mast.sources.mlflow"),
]


def register(schemes: Sequence[str], opener: Callable[[str], TraceSource]) -> None:
    """Make ``open_source`` open URLs of ``schemes`` with ``opener`` (a new store, one module)."""
    _REGISTRY.insert(0, _Registration(tuple(schemes), opener.__module__, opener))


def _scheme(text: str) -> str | None:
    head, sep, _ = text.partition("://")
    return head.lower() if sep else None


def is_source_url(text: str) -> bool:
    """Whether ``text`` names a trace store rather than a file."""
    scheme = _scheme(text)
    return scheme is not None and any(scheme in r.schemes for r in _REGISTRY)


def open_source(url: str) -> TraceSource:
    """The source for ``url``.

    Raises:
        UsageError: no source handles the URL's scheme, or the URL is malformed.
    """
    scheme = _scheme(url)
    for registration in _REGISTRY:
        if scheme in registration.schemes:
            if registration.opener is not None:
                return registration.opener(url)
            module = importlib.import_module(registration.module)
            opener: Callable[[str], TraceSource] = module.open_url
            return opener(url)
    known = ", ".join(s for r in _REGISTRY for s in r.schemes[:1])
    raise UsageError(f"{url}: not a trace store URL (known: {known}://HOST:PORT/PROJECT)")
