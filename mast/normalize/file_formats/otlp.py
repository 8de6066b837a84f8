"""OTLP/JSON traces: ``{"resourceSpans": [...]}`` files and JSONL (one export request per line).

This is what the OpenTelemetry collector's file exporter, Phoenix, Logfire, OpenLLMetry and most
agent frameworks' OTel integrations write. Spans are grouped by trace id (one :class:`Trace` each,
in order of first appearance; spans of one trace may be spread over many lines), the tree is rebuilt
from ``parentSpanId`` and walked in start-time order; see :mod:`mast.normalize._spans`. Attributes
are read by the registered span dialects (OTel GenAI, OpenInference, OpenLLMetry, Vercel AI SDK...;
:mod:`mast.normalize._otel_dialects`, read through :mod:`mast.normalize._otel_attrs`).

The file is parsed as plain JSON, never with protobuf's ``json_format`` (which would decode the hex
ids of OTLP/JSON as base64); ids in base64 (protobuf's own JSON mapping) are converted to hex.
JSONL files are read in two passes, so memory holds one trace at a time, never the whole file: the
first pass finds the trace ids on each line with a byte regex (no JSON parsing) and indexes the lines
by trace id (byte offsets); the second parses, for each trace in order of first appearance, only the
lines that hold its spans, and builds it. A line holding several traces is parsed once per trace
(the last line parsed is kept, so consecutive traces of one line share one parse).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

from mast.errors import TraceFormatError
from mast.normalize._messages import forget_history
from mast.normalize._otel_attrs import (
    any_value,
    hex_id,
    key_values,
    span_from_attributes,
    span_time,
    status_of,
)
from mast.normalize._spans import Span, build_trace
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.normalize.file_formats.mlflow_trace import MLFLOW_SPAN_TYPE
from mast.normalize.file_formats.mlflow_trace import read_span as read_mlflow_span
from mast.trace import Trace

_HEAD = re.compile(r'^\s*\[?\s*\{\s*"(resourceSpans|resource_spans)"')
_KEYS = ("resourceSpans", "resource_spans")
_TRACE_ID = re.compile(rb'"(?:traceId|trace_id)"\s*:\s*"([^"\\]*)"')
"""A span's trace id in raw JSONL bytes; an escaped copy inside a string value (``\\"traceId\\"``) never matches."""


def _resource_spans(obj: Any) -> list[Any] | None:
    if isinstance(obj, dict):
        for key in _KEYS:
            found = obj.get(key)
            if isinstance(found, list):
                return found
    return None


def is_otlp(data: Any) -> bool:
    """An export request, or a list of them."""
    if isinstance(data, list):
        return bool(data) and all(_resource_spans(d) is not None for d in data if not isinstance(d, JsonlLineError))
    return _resource_spans(data) is not None


class _Collector:
    """Spans grouped by trace id, plus the resources and scopes they came from."""

    def __init__(self, only: str | None = None) -> None:
        self.only = only
        """When set, spans of other traces are skipped before any attribute is read."""
        self.spans: dict[str, list[Span]] = {}
        self.resources: dict[str, list[dict[str, Any]]] = {}
        self.scopes: dict[str, set[str]] = {}
        self.count = 0

    def add_request(self, request: Any, where: str) -> None:
        for resource_spans in _resource_spans(request) or []:
            if not isinstance(resource_spans, dict):
                continue
            resource = resource_spans.get("resource") or {}
            resource_attrs = key_values(resource.get("attributes") or [])
            for scope_spans in resource_spans.get("scopeSpans") or resource_spans.get("scope_spans") or resource_spans.get("instrumentationLibrarySpans") or []:
                scope = (scope_spans.get("scope") or scope_spans.get("instrumentationLibrary") or {}) if isinstance(scope_spans, dict) else {}
                scope_name = scope.get("name")
                for raw_span in (scope_spans.get("spans") or []) if isinstance(scope_spans, dict) else []:
                    self.add_span(raw_span, resource_attrs, scope_name, where)

    def add_span(self, raw: dict[str, Any], resource: dict[str, Any], scope: str | None, where: str) -> None:
        get = raw.get
        trace_id = hex_id(get("traceId") or get("trace_id")) or ""
        if self.only is not None and trace_id != self.only:
            return
        span_id = hex_id(get("spanId") or get("span_id")) or f"span-{self.count}"
        parent = hex_id(get("parentSpanId") or get("parent_span_id"))
        status, message = status_of(get("status"))
        raw_events = get("events")
        events = [
            {"name": e.get("name"), "time": e.get("timeUnixNano") or e.get("time_unix_nano"), "attributes": key_values(e.get("attributes") or [])}
            for e in raw_events
            if isinstance(e, dict)
        ] if raw_events else []
        attrs = key_values(get("attributes") or [])
        if MLFLOW_SPAN_TYPE in attrs:
            # Spans MLflow's tracing wrote (exported over OTLP): the MLflow reader knows their attributes,
            # so a trace gives the same steps here as read from the MLflow server (mast.sources.mlflow).
            span = read_mlflow_span({"span_id": span_id, "parent_span_id": parent, "name": get("name"),
                                     "start_time_unix_nano": get("startTimeUnixNano") or get("start_time_unix_nano"),
                                     "end_time_unix_nano": get("endTimeUnixNano") or get("end_time_unix_nano"),
                                     "status": get("status") or {}, "attributes": attrs}, self.count)
        else:
            span = span_from_attributes(
                attrs,
                span_id=span_id,
                parent_id=parent,
                name=str(get("name") or ""),
                start=span_time(get("startTimeUnixNano") or get("start_time_unix_nano")),
                end=span_time(get("endTimeUnixNano") or get("end_time_unix_nano")),
                status=status,
                status_message=message,
                events=events,
                scope=scope,
                order=self.count,
            )
        attributes = span.attributes
        attributes["otel.span_ref"] = where
        kind = get("kind")
        if kind not in _PLAIN_KINDS:
            attributes["otel.kind"] = kind
        if get("links"):
            attributes["otel.links"] = raw["links"]
        self.count += 1
        spans = self.spans.get(trace_id)
        if spans is None:
            spans = self.spans[trace_id] = []
            self.resources[trace_id] = []
        spans.append(span)
        resources = self.resources[trace_id]
        if resource not in resources:
            resources.append(resource)
        if scope:
            scopes = self.scopes.get(trace_id)
            if scopes is None:
                scopes = self.scopes[trace_id] = set()
            scopes.add(scope)


_PLAIN_KINDS = (None, 0, "SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", 1)
"""Span kinds not worth keeping (internal is the default)."""


class OTLPJson(TraceFormat):
    """OTLP/JSON export requests (JSON or JSONL): one trace per trace id."""

    name = "otlp"
    description = "OTLP/JSON traces (resourceSpans; JSON or JSONL) with OTel GenAI or OpenInference attributes"
    priority = 40
    example = '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId", "spanId", "attributes": [{"key": "gen_ai.operation.name", ...}]}]}]}]}'
    streaming = True

    def detect(self, raw: RawInput) -> float:
        """How sure this is the format: cheap sniffing first, then the parsed shape."""
        if _HEAD.match(raw.head):
            return 1.0  # a top-level resourceSpans key is unambiguous: stop asking other formats
        if raw.path is not None and raw.head.lstrip()[:1] not in ("[", "{"):
            return 0.0
        if raw.path is not None and raw.size > 256 * 2**20:
            return 0.0
        try:
            data = raw.data()
        except TraceFormatError:
            return 0.0
        return 0.95 if is_otlp(data) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the traces in ``raw``; a broken record yields its error."""
        if raw.path is not None and self._is_jsonl(raw):
            yield from self._parse_jsonl(raw)
            return
        collector = _Collector()
        errors: list[TraceFormatError] = []
        data = raw.data()
        requests = data if isinstance(data, list) else [data]
        if not is_otlp(data):
            raise raw.fail("not OTLP/JSON: no top-level resourceSpans")
        for number, request in enumerate(requests):
            if isinstance(request, JsonlLineError):
                errors.append(raw.fail(str(request), record=number))
            else:
                collector.add_request(request, f"request {number}" if len(requests) > 1 else "request")
        yield from errors
        if not collector.spans:
            if not errors:
                raise raw.fail("the OTLP export holds no spans")
            return
        for record, trace_id in enumerate(collector.spans):
            yield self._build(raw, collector, trace_id, record if len(collector.spans) > 1 else None)

    def _build(self, raw: RawInput, collector: _Collector, trace_id: str, record: int | None) -> Trace:
        metadata: dict[str, Any] = {"resources": collector.resources.get(trace_id, [])}
        scopes = sorted(collector.scopes.get(trace_id, set()))
        if scopes:
            metadata["scopes"] = scopes
        return build_trace(collector.spans[trace_id], source=self.source(raw, record), trace_id=trace_id, metadata=metadata)

    def _parse_jsonl(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Index lines by trace id (first pass), then parse and build one trace at a time."""
        assert raw.path is not None
        index, errors = _index_lines(raw)
        yield from errors
        if not index:
            if not errors:
                raise raw.fail("the OTLP export holds no spans")
            return
        reported = {error.record for error in errors}
        several = len(index) > 1
        record = 0
        cached: tuple[int, Any] = (-1, None)
        with raw.open() as fh:
            for trace_id, lines in index.items():
                collector = _Collector(only=trace_id)
                for number, offset, length in lines:
                    if cached[0] != number:
                        fh.seek(offset)
                        try:
                            cached = (number, orjson.loads(fh.read(length)))
                        except orjson.JSONDecodeError as exc:
                            cached = (number, None)
                            if number not in reported:
                                reported.add(number)
                                yield raw.fail(f"line {number + 1} is not valid JSON ({exc})", record=number)
                    if cached[1] is None:
                        continue
                    if _resource_spans(cached[1]) is None:
                        if number not in reported:
                            reported.add(number)
                            yield raw.fail(f"line {number + 1} is not an OTLP export request (no resourceSpans)", record=number)
                        continue
                    collector.add_request(cached[1], f"line {number + 1}")
                if collector.spans.get(trace_id):
                    trace = self._build(raw, collector, trace_id, record if several else None)
                    forget_history()  # the caches would otherwise keep ~8k messages of earlier traces alive
                    yield trace
                    record += 1

    @staticmethod
    def _is_jsonl(raw: RawInput) -> bool:
        """True when the file holds one export request per line (decided from the first line)."""
        assert raw.path is not None
        with raw.open() as fh:
            first = fh.readline()
            rest = fh.read(1024)
        if not rest.strip():
            return False
        try:
            return _resource_spans(orjson.loads(first)) is not None
        except orjson.JSONDecodeError:
            return False


def _index_lines(raw: RawInput) -> tuple[dict[str, list[tuple[int, int, int]]], list[TraceFormatError]]:
    """Lines by trace id (hex), each as ``(line_number, byte_offset, length)``, in order of first appearance.

    The file is read in large chunks and trace ids are found with ``bytes.find`` inside each line's
    bounds (no per-line copies, no JSON parsing), except on lines where none is found: those are
    parsed to tell a broken line (an error) from a request whose spans carry no trace id (indexed
    under ``""``).
    """
    assert raw.path is not None
    index: dict[str, list[tuple[int, int, int]]] = {}
    errors: list[TraceFormatError] = []
    number = 0
    base = 0  # file offset of buf[0]
    buf = bytearray(_CHUNK)  # read into, again and again: no new buffer (and its page faults) per chunk
    filled = 0  # bytes of buf that hold the file
    with raw.open() as fh:
        while True:
            if filled == len(buf):
                buf.extend(bytes(len(buf)))  # a line longer than the buffer: room for the rest of it
            with memoryview(buf) as view, view[filled:] as free:
                got = fh.readinto(free)
            filled += got
            pos = 0
            while True:
                end = buf.find(b"\n", pos, filled)
                if end == -1:
                    if got:
                        break  # the line continues in the next chunk
                    end = filled
                    if pos >= end:
                        break
                found = dict.fromkeys(_trace_ids(buf, pos, end))  # distinct, in order of appearance
                ids = [hex_id(value.decode("utf-8", "replace")) or "" for value in found]
                if not found and buf[pos:end].strip():
                    ids = _ids_of_unindexed_line(raw, bytes(buf[pos:end]), number, errors)
                length = min(end + 1, filled) - pos
                for trace_id in dict.fromkeys(ids):
                    index.setdefault(trace_id, []).append((number, base + pos, length))
                number += 1
                pos = end + 1
            if not got:
                break
            buf[:filled - pos] = buf[pos:filled]  # the unfinished line moves to the front
            filled -= pos
            base += pos
    return index, errors


_CHUNK = 8 * 2**20
"""Bytes read at a time by the indexing pass."""


def _trace_ids(data: bytes | bytearray, start: int, end: int) -> list[bytes]:
    """The raw trace ids in ``data[start:end]``: ``bytes.find`` jumps to each key (no copy, no regex scan of every quote)."""
    found: list[bytes] = []
    for key in (b'"traceId"', b'"trace_id"'):
        at = data.find(key, start, end)
        while at != -1:
            match = _TRACE_ID.match(data, at, end)
            if match:
                found.append(bytes(match.group(1)))
            at = data.find(key, at + len(key), end)
        if found:
            break  # a line spells its keys one way (OTLP/JSON camelCase, or protobuf snake_case): one scan, not two
    return found


def _ids_of_unindexed_line(raw: RawInput, line: bytes, number: int, errors: list[TraceFormatError]) -> list[str]:
    try:
        record = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        errors.append(raw.fail(f"line {number + 1} is not valid JSON ({exc})", record=number))
        return []
    if _resource_spans(record) is None:
        errors.append(raw.fail(f"line {number + 1} is not an OTLP export request (no resourceSpans)", record=number))
        return []
    probe = _Collector()
    probe.add_request(record, f"line {number + 1}")
    return list(probe.spans)


register(OTLPJson())

__all__ = ["OTLPJson", "any_value", "is_otlp"]
