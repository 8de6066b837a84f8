"""The ``phoenix`` sink: verdicts as annotations on the Phoenix traces they came from, as they arrive.

Results are sent in small batches (:data:`BATCH` traces per request) through
:func:`mast.integrations.phoenix.push`; Phoenix upserts on (name, target, identifier), so sending a
result again (a rerun resumes it and hands it here) updates in place. A kill loses at most the
batch not yet sent, which the rerun sends. Needs ``pip install 'mast-judge[phoenix]'``.
"""

from __future__ import annotations

from collections.abc import Mapping

from mast.diagnosis import Diagnosis
from mast.errors import UsageError
from mast.integrations.phoenix import PushReport, push
from mast.sinks import SinkContext
from mast.sources import TraceNote, public_url, source_scheme

BATCH = 25
"""Traces per write request."""


class PhoenixSink:
    """Annotations on the Phoenix traces of a run."""

    name = "phoenix"

    def __init__(self) -> None:
        self.pending: dict[str, list[tuple[Diagnosis, TraceNote]]] = {}
        self.totals: dict[str, PushReport] = {}
        self.skipped: list[str] = []

    def write(self, diagnosis: Diagnosis, note: TraceNote | None, *, fresh: bool) -> None:
        """Queue the result; send the queue once it holds :data:`BATCH` traces."""
        if note is None or source_scheme(note.url) != "phoenix":
            return
        queue = self.pending.setdefault(note.url, [])
        queue.append((diagnosis, note))
        if len(queue) >= BATCH:
            self._send(note.url)

    def _send(self, url: str) -> None:
        queue, self.pending[url] = self.pending.get(url, []), []
        if not queue:
            return
        maps: dict[str, Mapping[int, str]] = {}
        for diagnosis, note in queue:
            if diagnosis.trace_hash is not None and diagnosis.trace_hash != note.content_hash:
                self.skipped.append(
                    f"{diagnosis.trace_id}: trace changed since it was judged; no span annotation"
                )
                maps[diagnosis.trace_id] = {}
            else:
                maps[diagnosis.trace_id] = note.step_spans
        report = push([d for d, _ in queue], url, span_maps=maps)
        total = self.totals.setdefault(url, PushReport())
        total.traces += report.traces
        total.trace_annotations += report.trace_annotations
        total.span_annotations += report.span_annotations
        self.skipped.extend(report.skipped)

    def close(self) -> list[str]:
        """Send what is queued; one line per project written to."""
        for url in list(self.pending):
            self._send(url)
        lines = list(self.skipped)
        for url, r in self.totals.items():
            lines.append(
                f"wrote {r.trace_annotations} trace and {r.span_annotations} span annotations for "
                f"{r.traces} traces to {public_url(url)}"
            )
        return lines


def open_sink(context: SinkContext) -> PhoenixSink:
    """The registered opener.

    Raises:
        UsageError: the Phoenix client is not installed (said before anything is judged).
    """
    from importlib.metadata import PackageNotFoundError, distribution

    try:  # asked of the package metadata: importing phoenix.client would load the whole server beside it
        distribution("arize-phoenix-client")
    except PackageNotFoundError:
        raise UsageError("writing to Phoenix needs the client: pip install 'mast-judge[phoenix]'") from None
    return PhoenixSink()
