"""Write MAST verdicts back to Arize Phoenix as trace and span annotations.

Per judged trace (:func:`annotations_for`):

* one trace annotation per *assessed* mode, named ``mast.<code> <name>`` (``mast.3.2 No or
  Incomplete Verification``): label ``present``/``absent``, score = the judge's confidence,
  explanation = the judge's reason plus each evidence quote with its step number and span;
* one summary trace annotation ``mast``: label = the codes found (``1.1,3.2``, or ``none``), score =
  how many, explanation = the summary and the first failure; metadata names the judge model, prompt
  hash and taxonomy version;
* a span annotation ``mast.first_failure`` on the span the first-failure step came from, when the
  step maps to a span.

Modes the judge did not assess (``present: null``) are not written. A trace that ended in ``error``
or ``unjudgeable`` gets only the summary, labelled with that status. Every annotation carries the
identifier ``mast``: Phoenix upserts on (name, trace or span, identifier), so writing again updates
in place and never duplicates. The annotator kind is ``LLM`` for LLM judges and ``CODE`` for the
offline detectors.

Needs ``pip install 'mast-judge[phoenix]'`` (``arize-phoenix-client``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from mast.diagnosis import Diagnosis, ModeVerdict
from mast.errors import SourceError, UsageError
from mast.integrations.verdicts import (
    FIRST_FAILURE_NAME,
    MAX_EXPLANATION,
    SUMMARY_NAME,
    first_failure_text,
    judge_kind,
    mode_explanation,
    mode_name,
    step_spans,
    summary_label,
    summary_text,
)
from mast.sources import public_url
from mast.sources.phoenix import PhoenixSource, PhoenixURL, http_client
from mast.trace import Trace

IDENTIFIER = "mast"
"""Identifier of every annotation mast writes (the upsert key, with the name and the target)."""
__all__ = ["FIRST_FAILURE_NAME", "IDENTIFIER", "MAX_EXPLANATION", "SUMMARY_NAME", "PushReport", "annotations_for",
           "annotator_kind", "log_trace_annotations", "mode_annotation_name", "push", "read_annotations",
           "step_spans"]

AnnotatorKind = Literal["LLM", "CODE", "HUMAN"]


@dataclass
class PushReport:
    """What a write-back did."""

    traces: int = 0
    trace_annotations: int = 0
    span_annotations: int = 0
    skipped: list[str] = field(default_factory=list)
    """One line per trace (or first failure) that could not be written, with the reason."""


def mode_annotation_name(verdict: ModeVerdict) -> str:
    """``mast.<code> <name>``: sorts by code in Phoenix's annotation list."""
    return mode_name(verdict)


def annotator_kind(diagnosis: Diagnosis) -> AnnotatorKind:
    """``CODE`` for the offline detectors, ``LLM`` for any judge that asks a model."""
    return judge_kind(diagnosis)


def annotations_for(
    diagnosis: Diagnosis, spans: Mapping[int, str] | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The trace annotations and span annotations for one diagnosis (Phoenix's JSON shape)."""
    spans = spans or {}
    kind = annotator_kind(diagnosis)
    trace_rows: list[dict[str, Any]] = []
    if diagnosis.status == "judged":
        for verdict in diagnosis.failure_modes:
            if verdict.present is None:
                continue
            result: dict[str, Any] = {"label": "present" if verdict.present else "absent",
                                      "explanation": mode_explanation(verdict, spans)}
            if verdict.confidence is not None:
                result["score"] = verdict.confidence
            trace_rows.append(_row("trace_id", diagnosis.trace_id, mode_annotation_name(verdict), kind, result, {
                "code": verdict.code, "category": verdict.category, "present": verdict.present,
                "evidence": [e.model_dump(mode="json") for e in verdict.evidence],
            }))
    summary: dict[str, Any] = {"label": summary_label(diagnosis), "explanation": summary_text(diagnosis)}
    if diagnosis.status == "judged":
        summary["score"] = float(len(diagnosis.present_codes))
    trace_rows.append(_row("trace_id", diagnosis.trace_id, SUMMARY_NAME, kind, summary, {
        "status": diagnosis.status,
        "modes_found": diagnosis.present_codes,
        "first_failure": diagnosis.first_failure.model_dump(mode="json") if diagnosis.first_failure else None,
        "task_completed": diagnosis.task_completed,
        "judge_model": diagnosis.judge.model,
        "judge_kind": diagnosis.judge.kind,
        "prompt_hash": diagnosis.judge.prompt_hash,
        "prompt_version": diagnosis.judge.prompt_version,
        "taxonomy_version": diagnosis.judge.taxonomy_version,
        "trace_hash": diagnosis.trace_hash,
    }))
    span_rows: list[dict[str, Any]] = []
    first = diagnosis.first_failure
    if diagnosis.status == "judged" and first is not None and first.step is not None and first.step in spans:
        result = {"label": first.code or "failure", "explanation": first_failure_text(diagnosis)}
        span_rows.append(_row("span_id", spans[first.step], FIRST_FAILURE_NAME, kind, result, {
            "step": first.step, "agent": first.agent, "code": first.code, "trace_id": diagnosis.trace_id,
        }))
    return trace_rows, span_rows


def _row(target: str, target_id: str, name: str, kind: AnnotatorKind, result: dict[str, Any],
         metadata: dict[str, Any]) -> dict[str, Any]:
    return {target: target_id, "name": name, "annotator_kind": kind, "result": result,
            "metadata": metadata, "identifier": IDENTIFIER}


# --- writing ---------------------------------------------------------------------------------------


def _client(url: str, api_key: str | None = None) -> Any:
    try:
        from phoenix.client import Client
    except ImportError as exc:
        raise UsageError("writing to Phoenix needs the client: pip install 'mast-judge[phoenix]'") from exc
    location = PhoenixURL.parse(url)
    return Client(http_client=http_client(location.base_url, api_key))


def push(
    diagnoses: Iterable[Diagnosis],
    url: str,
    *,
    traces: Mapping[str, Trace] | None = None,
    span_maps: Mapping[str, Mapping[int, str]] | None = None,
    api_key: str | None = None,
) -> PushReport:
    """Write the verdicts of ``diagnoses`` to the Phoenix project at ``url`` (upserts).

    Args:
        diagnoses: results, as ``mast label`` writes them (their ``trace_id`` is the OTel trace id).
        url: ``phoenix://HOST:PORT/PROJECT``.
        traces: the judged traces by id, to map steps to spans; traces missing here are read
            from Phoenix again (a trace whose content changed since it was judged gets no span
            annotation: its step numbers may no longer match).
        span_maps: instead of ``traces``: trace id -> step -> span id, already checked against the
            judged content (what :class:`mast.sources.StoreReader` notes as it reads).
        api_key: else ``PHOENIX_API_KEY``.

    Raises:
        UsageError: the client is not installed, or the URL is malformed.
        SourceError: Phoenix cannot be reached or refuses the annotations.
    """
    items = list(diagnoses)
    report = PushReport()
    given = {d.trace_id: dict(span_maps[d.trace_id]) for d in items if span_maps and d.trace_id in span_maps}
    rest = [d for d in items if d.trace_id not in given]
    spans = {**_span_maps(rest, url, traces or {}, api_key, report), **given} if rest else given
    client = _client(url, api_key)
    trace_rows: list[dict[str, Any]] = []
    span_rows: list[dict[str, Any]] = []
    for diagnosis in items:
        rows, span_part = annotations_for(diagnosis, spans.get(diagnosis.trace_id))
        trace_rows.extend(rows)
        span_rows.extend(span_part)
        report.traces += 1
    _log(client, url, trace_rows, span_rows)
    report.trace_annotations = len(trace_rows)
    report.span_annotations = len(span_rows)
    return report


def log_trace_annotations(url: str, rows: Sequence[Mapping[str, Any]], *, api_key: str | None = None) -> int:
    """Write trace annotations already in Phoenix's JSON shape (upserts on name, trace, identifier); how many.

    Raises:
        UsageError: the client is not installed, or the URL is malformed.
        SourceError: Phoenix cannot be reached or refuses the annotations.
    """
    items = [dict(r) for r in rows]
    if items:
        _log(_client(url, api_key), url, items, [])
    return len(items)


def _log(client: Any, url: str, trace_rows: list[dict[str, Any]], span_rows: list[dict[str, Any]]) -> None:
    import httpx

    try:
        for chunk in _chunks(trace_rows):
            client.traces.log_trace_annotations(trace_annotations=chunk, sync=True)
        for chunk in _chunks(span_rows):
            client.spans.log_span_annotations(span_annotations=chunk, sync=True)
    except httpx.HTTPStatusError as exc:
        raise SourceError(f"{public_url(url)}: Phoenix refused the annotations ({exc.response.status_code}): "
                          f"{exc.response.text[:200]}") from exc
    except httpx.HTTPError as exc:
        raise SourceError(f"{public_url(url)}: cannot reach Phoenix: {exc}") from exc


def _span_maps(
    items: Sequence[Diagnosis], url: str, traces: Mapping[str, Trace], api_key: str | None, report: PushReport
) -> dict[str, dict[int, str]]:
    """Step -> span maps for the judged traces, reading from Phoenix the traces not given."""
    judged = [d for d in items if d.status == "judged"]
    missing = [d.trace_id for d in judged if d.trace_id not in traces]
    found = dict(traces)
    if missing:
        source = PhoenixSource(url, api_key=api_key)
        try:
            found.update(source.read(missing))
        finally:
            source.close()
    maps: dict[str, dict[int, str]] = {}
    for diagnosis in judged:
        trace = found.get(diagnosis.trace_id)
        if trace is None:
            report.skipped.append(f"{diagnosis.trace_id}: not in {public_url(url)}; no span annotation")
        elif diagnosis.trace_hash is not None and trace.content_hash() != diagnosis.trace_hash:
            report.skipped.append(f"{diagnosis.trace_id}: trace changed since it was judged; no span annotation")
        else:
            maps[diagnosis.trace_id] = step_spans(trace)
    return maps


def _chunks(rows: list[dict[str, Any]], size: int = 500) -> Iterable[list[dict[str, Any]]]:
    for start in range(0, len(rows), size):
        yield rows[start : start + size]


def read_annotations(
    url: str, trace_ids: Sequence[str], *, api_key: str | None = None, identifier: str | None = IDENTIFIER
) -> list[dict[str, Any]]:
    """The trace annotations on ``trace_ids`` (Phoenix's JSON): by default those the judge wrote.

    ``identifier=None``: every annotation, whoever wrote it (people's, other tools', the gold's).
    """
    location = PhoenixURL.parse(url)
    rows: list[dict[str, Any]] = []
    with http_client(location.base_url, api_key) as client:
        cursor: str | None = None
        while True:
            params: dict[str, Any] = {"trace_ids": list(trace_ids), "limit": 1000}
            if identifier is not None:
                params["identifier"] = identifier
            if cursor:
                params["cursor"] = cursor
            response = client.get(f"v1/projects/{location.project}/trace_annotations", params=params)
            if response.status_code >= 400:
                raise SourceError(f"{public_url(url)}: Phoenix answered {response.status_code}: {response.text[:200]}")
            body = response.json()
            rows.extend(body.get("data") or [])
            cursor = body.get("next_cursor")
            if not cursor:
                return rows
