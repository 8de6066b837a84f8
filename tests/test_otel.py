"""mast's OpenTelemetry output: evaluation events to an in-process OTLP/HTTP receiver, judge spans.

The receiver is a real HTTP server on 127.0.0.1 that decodes what opentelemetry-sdk's OTLP exporter
sends (``ExportLogsServiceRequest`` protobuf), so the test checks the events a backend would get.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _phoenix import load_runs, send_run
from click.testing import CliRunner

import mast
from mast.batch.table import read_results
from mast.cli import main
from mast.normalize import iter_traces
from mast.otel import (
    EVALUATION_EVENT,
    disable_judge_spans,
    emit_evaluations,
    enable_judge_spans,
    root_span_id,
)
from mast.testing import FakeLLMServer
from mast.trace import Trace


class Receiver:
    """An OTLP/HTTP logs endpoint that keeps every log record it receives."""

    def __init__(self) -> None:
        self.records: list[tuple[Any, Any]] = []  # (log record, resource)
        self.got = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

                body = self.rfile.read(int(self.headers["Content-Length"]))
                request = ExportLogsServiceRequest.FromString(body)
                with receiver.got:
                    for resource_logs in request.resource_logs:
                        for scope_logs in resource_logs.scope_logs:
                            receiver.records.extend((r, resource_logs.resource) for r in scope_logs.log_records)
                    receiver.got.notify_all()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def wait_for(self, count: int, timeout: float = 60) -> list[Any]:
        with self.got:
            assert self.got.wait_for(lambda: len(self.records) >= count, timeout=timeout), len(self.records)
            return [r for r, _ in self.records]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    got = Receiver()
    yield got
    got.close()


@pytest.fixture
def otlp_file(tmp_path: Path) -> Path:
    """Two of our runs as an OTLP/JSON file export (the spans opentelemetry-sdk would send)."""
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    for i, run in enumerate(load_runs()[:2]):
        send_run(memory, run, project="otel", offset=i)
    path = tmp_path / "export.json"
    path.write_text(MessageToJson(encode_spans(memory.get_finished_spans())))
    assert len([t for t in iter_traces(path) if isinstance(t, Trace)]) == 2
    return path


def _attributes(record: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kv in record.attributes:
        value = kv.value
        out[kv.key] = getattr(value, value.WhichOneof("value"))
    return out


def test_each_assessed_verdict_arrives_as_an_evaluation_event_parented_to_the_trace(
    receiver: Receiver, otlp_file: Path
) -> None:
    traces = [t for t in iter_traces(otlp_file) if isinstance(t, Trace)]
    diagnoses = mast.classify_many(traces, judge="detectors")
    roots = {t.trace_id: root_span_id(t) or "" for t in traces}
    assessed = sum(1 for d in diagnoses for v in d.failure_modes if v.present is not None)
    sent = emit_evaluations(diagnoses, receiver.endpoint, span_ids=roots)
    assert sent == assessed + len(diagnoses)  # one per assessed mode, one summary per trace
    records = receiver.wait_for(sent)
    assert len(records) == sent
    assert {r.event_name for r in records} == {EVALUATION_EVENT}
    by_trace: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        attributes = _attributes(record)
        assert record.trace_id.hex() == attributes["mast.trace_id"]
        assert record.span_id.hex() == roots[attributes["mast.trace_id"]]
        by_trace.setdefault(record.trace_id.hex(), []).append(attributes)
    for diagnosis in diagnoses:
        events = {a["gen_ai.evaluation.name"]: a for a in by_trace[diagnosis.trace_id]}
        for verdict in diagnosis.failure_modes:
            name = f"mast.{verdict.code} {verdict.name}"
            if verdict.present is None:
                assert name not in events
                continue
            event = events[name]
            assert event["gen_ai.evaluation.score.label"] == ("present" if verdict.present else "absent")
            assert event["gen_ai.evaluation.score.value"] == pytest.approx(verdict.confidence)
            assert event["gen_ai.evaluation.explanation"]
        assert events["mast"]["mast.judge.kind"] == "detectors"


def test_label_emit_otel_sends_only_the_results_of_this_run(
    receiver: Receiver, otlp_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r.jsonl"
    first = CliRunner().invoke(main, ["label", str(otlp_file), "-o", str(out), "--judge", "detectors",
                                      "--emit-otel", receiver.endpoint], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    diagnoses = read_results(out)
    expected = sum(1 + sum(v.present is not None for v in d.failure_modes) for d in diagnoses)
    assert len(receiver.wait_for(expected)) == expected
    # A rerun resumes everything from the results file: no new verdict, so no event.
    again = CliRunner().invoke(main, ["label", str(otlp_file), "-o", str(out), "--judge", "detectors",
                                      "--emit-otel", receiver.endpoint], catch_exceptions=False)
    assert again.exit_code == 0 and "sent 0 " in again.output
    assert len(receiver.records) == expected


def test_judge_calls_become_genai_spans_only_when_turned_on(otlp_file: Path) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace = next(t for t in iter_traces(otlp_file) if isinstance(t, Trace))
    with FakeLLMServer() as llm:
        options: dict[str, Any] = {"model": "openai/fake", "api_base": llm.base_url, "api_key": "x", "cache": False}
        mast.classify(trace, **options)
        assert exporter.get_finished_spans() == ()  # off by default
        enable_judge_spans(provider)
        try:
            mast.classify(trace, **options)
        finally:
            disable_judge_spans()
        assert len(llm.chat_requests) == 2
    (span,) = exporter.get_finished_spans()
    assert span.name == "chat openai/fake"
    assert span.attributes["gen_ai.operation.name"] == "chat"
    assert span.attributes["gen_ai.request.model"] == "openai/fake"
    assert span.attributes["gen_ai.usage.input_tokens"] > 0
    assert span.attributes["gen_ai.usage.output_tokens"] > 0
