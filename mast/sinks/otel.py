"""The ``otel`` sink: each new verdict as OTel ``gen_ai.evaluation.result`` events over OTLP/HTTP.

Only results judged by this run are sent (an event cannot be taken back, so resumed results,
sent by the run that judged them, are not sent again). Events are queued as results arrive and
exported in the background (the SDK's batch processor); :meth:`OTelSink.close` flushes them.
Options: ``otel_endpoint`` (``None``: the ``OTEL_EXPORTER_OTLP_*`` variables). Needs
``pip install 'mast-judge[otel]'``.
"""

from __future__ import annotations

from typing import Any

from mast.diagnosis import Diagnosis
from mast.otel import EvaluationEmitter
from mast.sinks import SinkContext
from mast.sources import TraceNote


class OTelSink:
    """Evaluation events for the results of a run."""

    name = "otel"

    def __init__(self, endpoint: str | None, *, exporter: Any = None) -> None:
        self.emitter = EvaluationEmitter(endpoint, exporter=exporter)
        self.results = 0

    def write(self, diagnosis: Diagnosis, note: TraceNote | None, *, fresh: bool) -> None:
        """Queue the events of a result judged now (parented on the store trace's root span)."""
        if not fresh:
            return
        self.emitter.emit(diagnosis, span_id=note.root_span_id if note is not None else None)
        self.results += 1

    def close(self) -> list[str]:
        """Flush the events."""
        self.emitter.close()
        return [f"sent {self.emitter.sent} gen_ai.evaluation.result events for {self.results} results"]


def open_sink(context: SinkContext) -> OTelSink:
    """The registered opener (``otel_endpoint`` from the options)."""
    return OTelSink(context.options.get("otel_endpoint") or None, exporter=context.options.get("otel_exporter"))
