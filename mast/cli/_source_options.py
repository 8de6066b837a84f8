"""Trace-store inputs for ``mast label`` (``phoenix://``, ``mlflow://``) and the sinks for the results.

:func:`source_options` adds the store filters (``--since``, ``--until``, with ``--limit`` and
``--trace-id`` from the run controls, ``--root-span``, ``--filter``) and the result sinks
(``--write-back``, ``--emit-otel``) to a command, and hands it one ``sources: SourceInputs``: what
:func:`mast.label` takes (``query=``, ``sinks=``, ``sink_options=``). Nothing here reads a results
file: the sinks are fed as results are written (:mod:`mast.sinks`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import click

from mast.cli._shared import NameChoice
from mast.errors import UsageError
from mast.sinks import sink_names, write_back_sinks
from mast.sources import StoreReader, TraceQuery, is_source_url
from mast.trace import Trace

F = TypeVar("F", bound=Callable[..., Any])


def parse_time(text: str) -> datetime:
    """An ISO time (``2026-01-31``, ``2026-01-31T12:00``, UTC unless it says) or an age (``90m``, ``2h``, ``7d``)."""
    ago = _duration(text)
    if ago is not None:
        return datetime.now(UTC) - ago
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"{text!r}: expected an ISO time (2026-01-31T12:00) or an age (90m, 2h, 7d)") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def parse_duration(text: str) -> timedelta:
    """``60s``, ``5m``, ``2h``, ``1d`` or plain seconds."""
    found = _duration(text)
    if found is None:
        try:
            return timedelta(seconds=float(text))
        except ValueError:
            raise UsageError(f"{text!r}: expected a duration such as 30s, 5m, 2h") from None
    return found


def _duration(text: str) -> timedelta | None:
    units = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}
    if len(text) >= 2 and text[-1] in units:
        try:
            return timedelta(**{units[text[-1]]: float(text[:-1])})
        except ValueError:
            return None
    return None


@dataclass
class SourceInputs:
    """The store URLs of a command line, their filters, and the sinks for the results."""

    query: TraceQuery = field(default_factory=TraceQuery)
    write_back: bool = False
    emit_otel: str | None = None
    """``None``: off; ``""``: the ``OTEL_EXPORTER_OTLP_*`` variables; else the endpoint."""
    named_sinks: tuple[str, ...] = ()
    """``--sink NAME``: registered sinks asked for by name (plugins included)."""
    urls: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    _reader: StoreReader | None = None

    def take_urls(self, paths: Sequence[str]) -> tuple[str, ...]:
        """Keep the store URLs; return the file paths."""
        self.urls = [p for p in paths if is_source_url(p)]
        self.files = [p for p in paths if not is_source_url(p)]
        if self.write_back:
            write_back_sinks(self.urls)  # a one-line error now, before anything is read
        if self.query.filter and not self.urls:
            raise UsageError("--filter applies to trace store inputs (mlflow://HOST:PORT/EXPERIMENT)")
        return tuple(self.files)

    @property
    def sinks(self) -> list[str]:
        """The sinks asked for: the stores' own (``--write-back``), ``otel`` (``--emit-otel``), ``--sink``."""
        asked = (["write-back"] if self.write_back else []) + (["otel"] if self.emit_otel is not None else [])
        return asked + [name for name in self.named_sinks if name not in asked]

    @property
    def sink_options(self) -> dict[str, Any]:
        """Options of the sinks."""
        return {"otel_endpoint": self.emit_otel or None}

    @property
    def reader(self) -> StoreReader | None:
        """The stores' traces as one stream (read a page at a time as the run pulls them)."""
        if self._reader is None and self.urls:
            self._reader = StoreReader(self.urls, self.query, keep_notes=bool(self.sinks))
        return self._reader

    def traces(self) -> Iterable[Trace]:
        """Every trace of the store URLs matching the filters, as a stream."""
        return self.reader or ()


def source_options(func: F) -> F:
    """Add the store filters and sinks to a command; the command receives ``sources``."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        since, until = kwargs.pop("since"), kwargs.pop("until")
        query = TraceQuery(
            since=parse_time(since) if since else None,
            until=parse_time(until) if until else None,
            # --limit and --trace-id are the run-control options (mast.cli._run_control): the same
            # words pick traces from a store query and from files.
            limit=kwargs.get("limit"),
            trace_ids=tuple(kwargs.get("trace_ids") or ()),
            root_names=tuple(kwargs.pop("root_names")),
            filter=kwargs.pop("store_filter") or None,
        )
        kwargs["sources"] = SourceInputs(query=query, write_back=kwargs.pop("write_back"),
                                         emit_otel=kwargs.pop("emit_otel"), named_sinks=tuple(kwargs.pop("named_sinks")))
        return func(*args, **kwargs)

    decorated: Any = wrapper
    for option in reversed(_OPTIONS):
        decorated = option(decorated)
    return decorated  # type: ignore[no-any-return]


_OPTIONS: list[Callable[[Any], Any]] = [
    click.option("--since", metavar="TIME", help="Store inputs: traces whose root span started at or after TIME "
                 "(ISO, UTC unless given, or an age: 90m, 2h, 7d)."),
    click.option("--until", metavar="TIME", help="Store inputs: traces whose root span started before TIME."),
    click.option("--root-span", "root_names", multiple=True, metavar="NAME",
                 help="Store inputs: only traces whose root span has this name (repeat)."),
    click.option("--filter", "store_filter", metavar="EXPR",
                 help="Store inputs: the store's own filter (MLflow: \"tags.env = 'prod'\", \"trace.status = 'ERROR'\"; "
                      "a Scout database: a SQL WHERE clause, \"task_set = 'cybench'\")."),
    click.option("--write-back", is_flag=True,
                 help="Store inputs: write the verdicts back (Phoenix annotations: pip install 'mast-judge[phoenix]'; "
                      "MLflow feedback)."),
    click.option("--emit-otel", "emit_otel", is_flag=False, flag_value="", default=None, metavar="[ENDPOINT]",
                 help="Send each new verdict as an OTel gen_ai.evaluation.result event over OTLP/HTTP "
                      "(to ENDPOINT, else the OTEL_EXPORTER_OTLP_* variables)."),
    click.option("--sink", "named_sinks", multiple=True, type=NameChoice(sink_names),
                 help="Also hand each verdict to this registered sink (repeat; plugins' sinks included)."),
]
