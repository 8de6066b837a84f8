"""Trace-store inputs for ``mast label`` (``phoenix://HOST:PORT/PROJECT``) and what to do with the results.

:func:`source_options` adds the store filters (``--since``, ``--until``, with ``--limit`` and ``--trace-id`` from the run controls,
``--root-span``) and the result sinks (``--write-back``, ``--emit-otel``) to a command, and hands it
one ``sources: SourceInputs``. The command keeps its file paths and calls three hooks::

    paths = sources.take_urls(paths)        # store URLs out, file paths stay
    scan([*paths, *sources.traces()])       # the stores' traces join the files' traces
    sources.after_run(jsonl)                # write verdicts back, emit OTel events
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import click

from mast.cli._shared import stderr
from mast.diagnosis import Diagnosis
from mast.errors import UsageError
from mast.sources import RootSpan, TraceQuery, is_source_url, open_source
from mast.trace import Trace

F = TypeVar("F", bound=Callable[..., Any])
READ_BATCH = 50
"""Traces read from a store per request batch."""


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
    urls: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    read: dict[str, dict[str, Trace]] = field(default_factory=dict)
    """url -> trace id -> the trace read this run."""
    roots: dict[str, str] = field(default_factory=dict)
    """trace id -> root span id, to parent OTel events."""
    _offset: int | None = None

    def take_urls(self, paths: Sequence[str]) -> tuple[str, ...]:
        """Keep the store URLs for :meth:`traces`; return the file paths."""
        self.urls = [p for p in paths if is_source_url(p)]
        self.files = [p for p in paths if not is_source_url(p)]
        if self.write_back and not self.urls:
            raise UsageError("--write-back needs a trace store input (phoenix://HOST:PORT/PROJECT)")
        return tuple(self.files)

    def mark(self, jsonl: Path) -> None:
        """Remember where the results file ends, so :meth:`after_run` emits only this run's results."""
        self._offset = jsonl.stat().st_size if jsonl.exists() else 0

    def traces(self) -> list[Trace]:
        """Every trace of the store URLs matching the filters, oldest received first."""
        found: list[Trace] = []
        for url in self.urls:
            source = open_source(url)
            try:
                roots = list(source.roots(self.query))
                self.read[url] = {}
                for start in range(0, len(roots), READ_BATCH):
                    batch: list[RootSpan] = roots[start : start + READ_BATCH]
                    got = source.read([r.trace_id for r in batch])
                    for root in batch:
                        if root.trace_id in got:
                            self.roots[root.trace_id] = root.span_id
                            self.read[url][root.trace_id] = got[root.trace_id]
                            found.append(got[root.trace_id])
            finally:
                source.close()
        return found

    def after_run(self, jsonl: Path) -> None:
        """Write the verdicts back to the stores and/or emit them as OTel events, as asked."""
        if not self.write_back and self.emit_otel is None:
            return
        from mast.batch.table import read_results

        results = list(read_results(jsonl)) if jsonl.exists() else []
        if self.write_back:
            from mast.integrations.phoenix import push

            for url, traces in self.read.items():
                latest = {d.trace_id: d for d in results if d.source.path == url and d.trace_id in traces}
                if not latest:
                    continue
                report = push(latest.values(), url, traces=traces)
                for line in report.skipped:
                    stderr.print(f"mast: {line}", markup=False, highlight=False)
                stderr.print(f"mast: wrote {report.trace_annotations} trace and {report.span_annotations} span "
                             f"annotations for {report.traces} traces to {url}", markup=False, highlight=False)
        if self.emit_otel is not None:
            from mast.otel import emit_evaluations

            fresh = _results_after(jsonl, self._offset or 0)
            sent = emit_evaluations(fresh, self.emit_otel or None, span_ids=self.roots)
            stderr.print(f"mast: sent {sent} gen_ai.evaluation.result events for {len(fresh)} results",
                         markup=False, highlight=False)


def _results_after(jsonl: Path, offset: int) -> list[Diagnosis]:
    """Results appended after ``offset`` (a torn first line, if the file was repaired, is skipped)."""
    if not jsonl.exists():
        return []
    with jsonl.open("rb") as fh:
        fh.seek(min(offset, jsonl.stat().st_size))
        lines = fh.read().splitlines()
    out: list[Diagnosis] = []
    for line in lines:
        try:
            out.append(Diagnosis.model_validate_json(line))
        except ValueError:
            continue  # a partial line: not a result of this run
    return out


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
        )
        kwargs["sources"] = SourceInputs(query=query, write_back=kwargs.pop("write_back"),
                                         emit_otel=kwargs.pop("emit_otel"))
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
    click.option("--write-back", is_flag=True,
                 help="Store inputs: write the verdicts back as annotations (Phoenix: pip install 'mast-judge[phoenix]')."),
    click.option("--emit-otel", "emit_otel", is_flag=False, flag_value="", default=None, metavar="[ENDPOINT]",
                 help="Send each new verdict as an OTel gen_ai.evaluation.result event over OTLP/HTTP "
                      "(to ENDPOINT, else the OTEL_EXPORTER_OTLP_* variables)."),
]
