"""The ``mlflow`` sink: each verdict as feedback on the MLflow trace it came from, as it arrives.

Writes through :class:`mast.integrations.mlflow.FeedbackWriter` (idempotent: mast's entries are
updated in place, never added twice), one trace at a time, so a run killed during write-back
leaves every trace either written or not, and the rerun (whose resumed results come here again)
completes it. Results of traces not read from an ``mlflow://`` store are not this sink's.
"""

from __future__ import annotations

from mast.diagnosis import Diagnosis
from mast.integrations.mlflow import FeedbackWriter
from mast.sinks import SinkContext
from mast.sources import TraceNote, public_url, source_scheme


class MLflowSink:
    """Feedback on the MLflow traces of a run."""

    name = "mlflow"

    def __init__(self) -> None:
        self.writers: dict[str, FeedbackWriter] = {}

    def write(self, diagnosis: Diagnosis, note: TraceNote | None, *, fresh: bool) -> None:
        """Write (or bring up to date) the trace's feedback."""
        if note is None or source_scheme(note.url) != "mlflow":
            return
        writer = self.writers.get(note.url)
        if writer is None:
            writer = self.writers[note.url] = FeedbackWriter(note.url)
        same = diagnosis.trace_hash is None or diagnosis.trace_hash == note.content_hash
        writer.write(diagnosis, note.step_spans if same else None)

    def close(self) -> list[str]:
        """Close the connections; one line per server written to."""
        lines = []
        for url, writer in self.writers.items():
            r = writer.report
            lines.append(f"wrote feedback for {r.traces} traces to {public_url(url)}: {r.created} new, {r.updated} updated, "
                         f"{r.unchanged} unchanged, {r.deleted} removed")
            writer.close()
        return lines


def open_sink(context: SinkContext) -> MLflowSink:
    """The registered opener."""
    return MLflowSink()
