"""Where verdicts go besides the results file: sinks, registered by name.

A run writes every result to its results file (the one record, resumable; :mod:`mast.results`)
and hands the same result, as it is written, to each sink the run was given. A sink is
**idempotent**: a rerun hands it the results it already had (resumed from the results file) and it
must not write a second copy, so a run killed anywhere loses at most what was in flight, and the
same command again completes the write-back. Sinks never read the results file back.

::

    phoenix    annotations on the Phoenix traces the run read  (mast.sinks.phoenix; upserts)
    mlflow     feedback on the MLflow traces the run read      (mast.sinks.mlflow; updated in place)
    otel       gen_ai.evaluation.result events over OTLP/HTTP  (mast.sinks.otel; this run's new results)

``mast label phoenix://... --write-back`` asks for the sink of each store read (:func:`write_back_sinks`);
``--emit-otel`` for ``otel``. In Python: ``mast.label("mlflow://host:5000/agents", output="r.jsonl",
sinks=["mlflow"])``.

How to add a sink
-----------------
One module with a class that has ``write`` and ``close``, and an ``open_sink(context)`` function,
registered by name: from another package, an entry point in its ``pyproject.toml``
(``[project.entry-points."mast.sinks"]``, ``slack = "acme_mast.slack:open_sink"``), or at run time
:func:`register`. For example ``acme_mast/slack.py``, which posts each new trace found failing::

    import httpx

    from mast.diagnosis import Diagnosis
    from mast.sinks import SinkContext
    from mast.sources import TraceNote


    class SlackSink:
        name = "slack"

        def __init__(self, webhook: str) -> None:
            self.http = httpx.Client(timeout=10)
            self.webhook = webhook
            self.posted = 0

        def write(self, diagnosis: Diagnosis, note: TraceNote | None, *, fresh: bool) -> None:
            if fresh and diagnosis.present_codes:      # resumed results were posted by an earlier run
                self.http.post(self.webhook, json={"text": f"{diagnosis.trace_id}: {diagnosis.present_codes}"})
                self.posted += 1

        def close(self) -> list[str]:
            self.http.close()
            return [f"posted {self.posted} failing traces to Slack"]


    def open_sink(context: SinkContext) -> SlackSink:
        return SlackSink(context.options["slack_webhook"])

``mast.label(..., sinks=["slack"], sink_options={"slack_webhook": ...})`` then uses it, and
``mast label --sink slack`` lists and takes it. A sink of mast's own is one more
``"module:open_sink"`` line in ``_REGISTRY`` below.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from mast._registry import Registry
from mast.diagnosis import Diagnosis
from mast.errors import MastError, UsageError
from mast.sources import StoreReader, TraceNote, public_url, source_scheme

__all__ = ["Sink", "SinkContext", "SinkOpener", "SinkSet", "open_sinks", "register", "sink_names", "write_back_sinks"]

QUEUE = 256
"""Results waiting for the sinks at most (the run waits when they are this far behind)."""


class Sink(Protocol):
    """What a run needs from a sink."""

    name: str

    def write(self, diagnosis: Diagnosis, note: TraceNote | None, *, fresh: bool) -> None:
        """Take one result as it is written (``fresh``: judged by this run, not resumed).

        ``note`` is what the store reader noted of the trace (``None`` for a trace from a file).
        A failure to write should raise :class:`~mast.errors.MastError`; the run goes on.
        """
        ...

    def close(self) -> list[str]:
        """Write what is buffered, release connections; lines for the user (what was written)."""
        ...


@dataclass
class SinkContext:
    """What a sink is opened with."""

    urls: Sequence[str] = ()
    """The store URLs the run reads."""
    options: Mapping[str, Any] = field(default_factory=dict)
    """Sink options (``otel_endpoint``...)."""


SinkOpener = Callable[[SinkContext], Sink]
"""``open_sink(context) -> Sink``: what a sink's name stands for."""

_REGISTRY: Registry[SinkOpener] = Registry("sink", group="mast.sinks", builtins={
    "phoenix": "mast.sinks.phoenix:open_sink",
    "mlflow": "mast.sinks.mlflow:open_sink",
    "otel": "mast.sinks.otel:open_sink",
})
"""Sink name -> its ``open_sink(context)`` (``"module:function"``, imported when asked for); plugins
join through the ``mast.sinks`` entry points."""


def register(name: str, opener: SinkOpener | str) -> None:
    """Make ``name`` open a sink with ``opener`` (or the ``"module:function"`` it names)."""
    _REGISTRY.register(name, opener)


def sink_names() -> list[str]:
    """The registered sinks, plugins included."""
    return _REGISTRY.names()


def write_back_sinks(urls: Sequence[str]) -> list[str]:
    """The sinks that write verdicts back to the stores of ``urls`` (a store's sink has its scheme's name).

    Raises:
        UsageError: no store URL, or a store nothing writes back to.
    """
    names: list[str] = []
    for url in urls:
        scheme = source_scheme(url)
        if scheme is None:
            continue
        if scheme not in _REGISTRY:
            raise UsageError(f"{public_url(url)}: mast cannot write verdicts back to {scheme}:// stores")
        if scheme not in names:
            names.append(scheme)
    if not names:
        raise UsageError("--write-back needs a trace store input (phoenix://HOST:PORT/PROJECT or "
                         "mlflow://HOST:PORT/EXPERIMENT)")
    return names


def _open(name: str, context: SinkContext) -> Sink:
    return _REGISTRY.get(name)(context)


class SinkSet:
    """The sinks of one run, fed as results arrive (the runner's ``on_result``).

    With ``background`` (the default) the sinks write from one worker thread: a store's HTTP calls
    never hold up the run's event loop, and the results reach each sink in the order they were
    written. The queue is bounded (:data:`QUEUE`), so a slow sink slows the run rather than
    holding every result in memory; :meth:`close` waits until everything queued is written.
    """

    def __init__(self, sinks: Sequence[Sink], reader: StoreReader | None = None,
                 on_notice: Callable[[str], None] | None = None, *, background: bool = True) -> None:
        self.sinks = list(sinks)
        self.reader = reader
        self.on_notice = on_notice
        self.failures = 0
        self._queue: queue.Queue[tuple[Diagnosis, TraceNote | None, bool] | None] | None = None
        self._worker: threading.Thread | None = None
        if background and self.sinks:
            self._queue = queue.Queue(maxsize=QUEUE)
            self._worker = threading.Thread(target=self._drain, name="mast-sinks", daemon=True)
            self._worker.start()

    def write(self, diagnosis: Diagnosis, *, fresh: bool, note: TraceNote | None = None) -> None:
        """Hand one result to every sink; a sink's failure is reported and the run goes on.

        ``note``: the trace's note, when the caller has it (else the reader's is taken).
        """
        if note is None and self.reader is not None:
            note = self.reader.pop_note(diagnosis.trace_id)
        if note is not None and diagnosis.source.path not in (None, note.url, public_url(note.url)):
            note = None  # the same trace id read from a file: not the store's trace
        if self._queue is not None:
            self._queue.put((diagnosis, note, fresh))
        else:
            self._write(diagnosis, note, fresh)

    def _write(self, diagnosis: Diagnosis, note: TraceNote | None, fresh: bool) -> None:
        for sink in self.sinks:
            try:
                sink.write(diagnosis, note, fresh=fresh)
            except Exception as exc:  # one result a sink cannot take never stops the others
                self.failures += 1
                if self.on_notice is not None and self.failures <= 5:
                    reason = str(exc) if isinstance(exc, MastError) else f"{type(exc).__name__}: {exc}"
                    self.on_notice(f"{sink.name}: {diagnosis.trace_id}: {reason}")

    def _drain(self) -> None:
        assert self._queue is not None
        while (job := self._queue.get()) is not None:
            self._write(*job)

    def on_result(self, item: Any, diagnosis: Diagnosis, outcome: str) -> None:
        """The runner's result callback."""
        self.write(diagnosis, fresh=outcome != "resumed")

    def close(self) -> None:
        """Write what is queued, close every sink; their lines go to ``on_notice``."""
        if self._queue is not None and self._worker is not None:
            self._queue.put(None)
            self._worker.join()
            self._queue = None
        for sink in self.sinks:
            try:
                lines = sink.close()
            except MastError as exc:
                self.failures += 1
                lines = [f"{sink.name}: {exc}"]
            for line in lines:
                if self.on_notice is not None:
                    self.on_notice(line)
        if self.failures > 5 and self.on_notice is not None:
            self.on_notice(f"{self.failures} sink writes failed in all (the first 5 shown); run again to retry them")


def open_sinks(
    sinks: Sequence[str | Sink],
    *,
    reader: StoreReader | None = None,
    urls: Sequence[str] = (),
    options: Mapping[str, Any] | None = None,
    on_notice: Callable[[str], None] | None = None,
) -> SinkSet:
    """The sinks named (or given) for a run reading ``reader``'s stores (or ``urls``).

    Raises:
        UsageError: an unknown sink name, or a sink that cannot open (a missing extra).
    """
    context = SinkContext(urls=reader.urls if reader is not None else urls, options=options or {})
    opened = [_open(s, context) if isinstance(s, str) else s for s in sinks]
    return SinkSet(opened, reader, on_notice)
