"""MAST-Data (MAD) records: the runs the MAST paper's annotators labelled.

Two record shapes, in one JSON array, a JSONL file or a single object:

- ``MAD_full_dataset.json``: ``{mas_name, llm_name, benchmark_name, trace_id, trace: {key, index,
  trajectory}, mast_annotation: {"1.1": 0, ...}}``;
- ``MAD_human_labelled_dataset.json``: ``{round, mas_name, benchmark_name, trace_id, trace,
  annotations: [{"failure mode": ..., annotator_1, annotator_2, annotator_3}, ...]}`` where
  ``trace`` is the raw log text (or JSON text of it).

The trajectory is parsed by :mod:`mast.normalize._mad_logs`. Ground truth (``mast_annotation``,
``annotations``, annotator notes inside AG2 trajectories) goes to :attr:`Trace.labels` only; every
other field is kept in :attr:`Trace.metadata`. The full file is ~200 MB, so a top-level array is
streamed record by record and detection reads only the first 64 KiB.

Example:
    >>> from mast.normalize import load_trace
    >>> t = load_trace({"mas_name": "AG2", "trace_id": 1, "trace": {"trajectory": '[{"content": "2+2?",'
    ...     ' "role": "user", "name": "user_proxy"}, {"content": "4", "role": "assistant", "name": "assistant"}]'},
    ...     "mast_annotation": {"1.1": 0}})
    >>> [s.agent for s in t.steps], t.labels
    (['user_proxy', 'assistant'], {'mast_annotation': {'1.1': 0}})
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from mast.errors import TraceFormatError, one_line
from mast.normalize._common import leftover
from mast.normalize._mad_logs import framework_name, parse_payload
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.trace import SourceInfo, Trace

_RECORD_KEYS = ("mas_name", "llm_name", "benchmark_name", "round")
_LABEL_KEYS = ("mast_annotation", "annotations")
_USED = {*_RECORD_KEYS, *_LABEL_KEYS, "trace_id", "trace", "trajectory"}
_HEAD_MAS = re.compile(r'"mas_name"\s*:\s*"')
_HEAD_BODY = re.compile(r'"(?:trace|trajectory|mast_annotation|annotations)"\s*:')


def is_mad_record(obj: Any) -> bool:
    """True for a dict shaped like a MAD record (``mas_name`` plus a trace or annotations)."""
    return isinstance(obj, dict) and "mas_name" in obj and any(k in obj for k in ("trace", "trajectory", "mast_annotation", "annotations"))


def record_to_trace(record: Any, raw: RawInput | None = None, index: int | None = None, fmt: str = "mad") -> Trace:
    """Normalise one MAD record.

    Raises:
        TraceFormatError: when the record is not an object, or has no usable trajectory.
    """
    path = raw.label if raw else None
    if not isinstance(record, dict):
        raise TraceFormatError(f"MAD record is a {type(record).__name__}, not an object", path=path, record=index)
    holder = record.get("trace", record.get("trajectory"))
    trace_fields: dict[str, Any] = {}
    payload = holder
    if isinstance(holder, dict) and "trajectory" in holder:
        payload = holder["trajectory"]
        trace_fields = {f"trace_{k}": v for k, v in holder.items() if k != "trajectory"}
    if payload is None or (isinstance(payload, str | list | dict) and not payload):
        raise TraceFormatError("MAD record has no trajectory (trace.trajectory is missing or empty)", path=path, record=index)
    framework = framework_name(record.get("mas_name"))
    try:
        parsed = parse_payload(payload, framework)
    except ValueError as exc:
        raise TraceFormatError(f"MAD trajectory unreadable: {one_line(exc)}", path=path, record=index) from exc
    llm = record.get("llm_name") if isinstance(record.get("llm_name"), str) else None
    metadata: dict[str, Any] = {k: record[k] for k in _RECORD_KEYS if k in record}
    metadata.update(trace_fields)
    metadata.update(leftover(record, _USED))
    parsed.labels = {**{k: record[k] for k in _LABEL_KEYS if k in record}, **parsed.labels}
    trace = parsed.to_trace(SourceInfo(format=fmt, path=path, record=index, variant=parsed.variant), framework, metadata=metadata)
    for agent in trace.agents:
        agent.model = agent.model or llm
    source_id = record.get("trace_id")
    if source_id is not None:
        trace.trace_id = str(source_id)
    return trace


class MadFormat(TraceFormat):
    """MAD records in a JSON array (streamed), JSONL, or a single object."""

    name = "mad"
    description = "MAST-Data (MAD) records: full set (mast_annotation) and human-labelled set (annotations)"
    priority = 10
    example = '{"mas_name": "ChatDev", "trace": {"trajectory": "<log text>"}, "mast_annotation": {"1.1": 0, ...}}'
    streaming = True

    def detect(self, raw: RawInput) -> float:
        """Decided from the first 64 KiB alone: ``"mas_name"`` plus a trace or annotation key."""
        if raw.path is None and not isinstance(raw.obj, str | bytes):
            obj = raw.obj
            if isinstance(obj, list) and obj:
                obj = obj[0]
            return 1.0 if is_mad_record(obj) else 0.0
        head = raw.head.lstrip("\ufeff \t\r\n")
        if not head.startswith(("{", "[")) or not _HEAD_MAS.search(head):
            return 0.0
        # Certain (1.0) stops detection here, so no other format loads a 200 MB file whole to look.
        return 1.0 if _HEAD_BODY.search(head) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per record; a broken record yields its error and the rest still come."""
        if raw.path is None:
            data = raw.data()
            yield from self._records(enumerate(data if isinstance(data, list) else [data]), raw)
        elif raw.head.lstrip("\ufeff \t\r\n").startswith("["):
            yield from self._stream(raw)
        elif _is_jsonl(raw):
            yield from self._records(raw.records(), raw)
        else:
            yield from self._records(enumerate([raw.data()]), raw)

    def _one(self, record: Any, raw: RawInput, index: int | None) -> Trace | TraceFormatError:
        if isinstance(record, JsonlLineError):
            return raw.fail(str(record), record=index)
        try:
            return record_to_trace(record, raw, index, self.name)
        except TraceFormatError as exc:
            return exc
        except Exception as exc:  # noqa: BLE001 - one bad record must not stop the other 1,600
            return raw.fail(f"MAD record could not be normalised ({type(exc).__name__}: {one_line(exc)})", record=index)

    def _records(self, items: Iterable[tuple[int, Any]], raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        for index, record in items:
            yield self._one(record, raw, index)

    def _stream(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        records = raw.iter_array()
        index = 0
        while True:
            try:
                record = next(records)
            except StopIteration:
                return
            except TraceFormatError as exc:
                if index == 0:
                    raise
                yield raw.fail(f"records from #{index} on are unreadable: {exc.reason}", record=index)
                return
            yield self._one(record, raw, index)
            index += 1


def _is_jsonl(raw: RawInput) -> bool:
    """True when the file's first line is a whole JSON object and more lines follow."""
    assert raw.path is not None
    with raw.open() as fh:
        first = fh.readline()
        try:
            complete = isinstance(orjson.loads(first), dict)
        except orjson.JSONDecodeError:
            return False
        return complete and any(line.strip() for line in fh)


register(MadFormat())
