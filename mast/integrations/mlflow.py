"""Write MAST verdicts back to MLflow as feedback (assessments) on each trace.

Per judged trace (:func:`feedback_for`):

* one feedback per *assessed* mode, named ``mast.<code> <name>`` (``mast.3.2 No or Incomplete
  Verification``): value ``true`` (present) or ``false``, rationale = the judge's explanation plus
  each evidence quote with its step number and span, metadata = confidence, the judge's model,
  prompt hash and taxonomy version;
* a summary feedback ``mast``: value = the codes found (``1.1,3.2``) or ``none``; for a trace that
  ended in ``error`` or ``unjudgeable``, that status (and no per-mode feedback);
* the first failure as a feedback ``mast.first_failure`` on the span its step came from.

The source is ``LLM_JUDGE`` (``CODE`` for the offline detectors) with id ``mast/<model>``
(``mast/detectors`` without a model). MLflow keeps every logged feedback as a new entry, so
writing is idempotent by hand (:meth:`FeedbackWriter.write`): the trace's assessments are read
first; this judge's own entries (source id exactly ``mast/<model>`` or ``mast/detectors``, a
``mast`` name) are updated in place when they differ, left alone when they do not, duplicates of one
name are deleted, and entries this judge no longer means (a mode no longer assessed, a first failure
moved to another span) are deleted. Entries written by people, by other judges, by another mast
judge (another model, or the detectors) or by any other ``mast/...`` source are never touched.

Everything goes through MLflow's REST API with ``httpx`` (:class:`mast.sources.mlflow.MLflowClient`);
no MLflow package is needed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from mast.diagnosis import Diagnosis
from mast.integrations.verdicts import (
    FIRST_FAILURE_NAME,
    SUMMARY_NAME,
    first_failure_text,
    judge_kind,
    mode_explanation,
    mode_name,
    summary_label,
    summary_text,
)
from mast.sources.mlflow import MLflowClient

SOURCE_PREFIX = "mast/"
"""Source ids of mast's feedback start with this; a run changes only entries whose id is exactly its own."""


@dataclass(frozen=True)
class Feedback:
    """One feedback entry as mast means it."""

    name: str
    value: bool | str
    rationale: str
    metadata: dict[str, str]
    source_type: str
    source_id: str
    span_id: str | None = None

    def body(self, trace_id: str) -> dict[str, Any]:
        """The ``assessment`` of MLflow's create request."""
        out: dict[str, Any] = {
            "assessment_name": self.name, "trace_id": trace_id,
            "source": {"source_type": self.source_type, "source_id": self.source_id},
            "feedback": {"value": self.value}, "rationale": self.rationale, "metadata": self.metadata,
        }
        if self.span_id:
            out["span_id"] = self.span_id
        return out

    def same_as(self, entry: Mapping[str, Any]) -> bool:
        """Whether an existing assessment already says exactly this."""
        source = entry.get("source") or {}
        return (
            (entry.get("feedback") or {}).get("value") == self.value
            and (entry.get("rationale") or "") == self.rationale
            and dict(entry.get("metadata") or {}) == self.metadata
            and source.get("source_type") == self.source_type and source.get("source_id") == self.source_id
            and (entry.get("span_id") or None) == self.span_id
        )


def source_id(diagnosis: Diagnosis) -> str:
    """``mast/<model>``, or ``mast/detectors``."""
    return SOURCE_PREFIX + (diagnosis.judge.model or diagnosis.judge.kind)


def feedback_for(diagnosis: Diagnosis, spans: Mapping[int, str] | None = None) -> list[Feedback]:
    """The feedback entries for one diagnosis (``spans``: step -> span id, for the first failure)."""
    spans = spans or {}
    kind = "CODE" if judge_kind(diagnosis) == "CODE" else "LLM_JUDGE"
    who = source_id(diagnosis)
    judge = diagnosis.judge
    common = {"model": judge.model or judge.kind, "prompt_hash": judge.prompt_hash or "",
              "taxonomy_version": judge.taxonomy_version or ""}
    out: list[Feedback] = []
    if diagnosis.status == "judged":
        for verdict in diagnosis.failure_modes:
            if verdict.present is None:
                continue
            metadata = {**common, "code": verdict.code}
            if verdict.confidence is not None:
                metadata["confidence"] = f"{verdict.confidence:g}"
            out.append(Feedback(mode_name(verdict), bool(verdict.present), mode_explanation(verdict, spans),
                                metadata, kind, who))
    summary_meta = {**common, "status": diagnosis.status}
    if diagnosis.trace_hash:
        summary_meta["trace_hash"] = diagnosis.trace_hash
    out.append(Feedback(SUMMARY_NAME, summary_label(diagnosis), summary_text(diagnosis), summary_meta, kind, who))
    first = diagnosis.first_failure
    if diagnosis.status == "judged" and first is not None and first.step is not None and first.step in spans:
        metadata = {**common, "step": str(first.step), "code": first.code or ""}
        out.append(Feedback(FIRST_FAILURE_NAME, first.code or "failure", first_failure_text(diagnosis), metadata,
                            kind, who, span_id=spans[first.step]))
    return out


def is_mast_entry(entry: Mapping[str, Any], owner: str | None = None) -> bool:
    """An assessment mast wrote: its source id and its name are mast's.

    ``owner``: only the entries of that source id exactly (``mast/openai/gpt-4o``); the entries a
    run may change. Without it, any ``mast/...`` source (for reading feedback back).
    """
    name = str(entry.get("assessment_name") or "")
    source_id = str((entry.get("source") or {}).get("source_id") or "")
    mine = source_id == owner if owner is not None else source_id.startswith(SOURCE_PREFIX)
    return mine and (name == SUMMARY_NAME or name.startswith("mast."))


@dataclass
class WriteReport:
    """What writing feedback did, counted over traces."""

    traces: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    skipped: list[str] = field(default_factory=list)


class FeedbackWriter:
    """Writes mast's feedback to the traces of one MLflow server, idempotently (see the module docs)."""

    def __init__(self, url: str, *, api: MLflowClient | None = None) -> None:
        self.url = url
        self.api = api or MLflowClient(url)
        self.report = WriteReport()

    def write(self, diagnosis: Diagnosis, spans: Mapping[int, str] | None = None) -> None:
        """Make the trace's mast feedback say what ``diagnosis`` says: create, update, delete as needed."""
        owner = source_id(diagnosis)
        self.sync(diagnosis.trace_id, feedback_for(diagnosis, spans), lambda e: is_mast_entry(e, owner))

    def sync(self, trace_id: str, wanted: list[Feedback], mine: Callable[[Mapping[str, Any]], bool]) -> None:
        """Make the trace's entries that ``mine`` selects be exactly ``wanted`` (matched by name).

        What :meth:`write` does for the judge, open to another writer (the gold's human assessments
        select their reviewer's entries). Entries ``mine`` does not select are never touched.
        """
        existing = [e for e in self.api.trace_info(trace_id).get("assessments") or [] if mine(e)]
        by_name: dict[str, list[Mapping[str, Any]]] = {}
        for entry in sorted(existing, key=lambda e: str(e.get("create_time") or "")):
            by_name.setdefault(str(entry["assessment_name"]), []).append(entry)
        for feedback in wanted:
            entries = by_name.pop(feedback.name, [])
            keep, extra = (entries[0], entries[1:]) if entries else (None, [])
            for duplicate in extra:
                self._delete(trace_id, duplicate)
            if keep is not None and (keep.get("source") or {}).get("source_type") != feedback.source_type:
                self._delete(trace_id, keep)  # MLflow cannot change an entry's source type
                keep = None
            if keep is not None and (keep.get("span_id") or None) != feedback.span_id:
                self._delete(trace_id, keep)  # the first failure moved to another span
                keep = None
            if keep is None:
                self.api.call("POST", f"{self._path(trace_id)}/assessments", json={"assessment": feedback.body(trace_id)})
                self.report.created += 1
            elif feedback.same_as(keep):
                self.report.unchanged += 1
            else:
                self._update(trace_id, str(keep["assessment_id"]), feedback)
        for stale in (e for entries in by_name.values() for e in entries):
            self._delete(trace_id, stale)
        self.report.traces += 1

    def _update(self, trace_id: str, assessment_id: str, feedback: Feedback) -> None:
        body = {"assessment": {"assessment_id": assessment_id, "trace_id": trace_id,
                               "feedback": {"value": feedback.value}, "rationale": feedback.rationale,
                               "metadata": feedback.metadata},
                "update_mask": "feedback,rationale,metadata"}
        self.api.call("PATCH", f"{self._path(trace_id)}/assessments/{quote(assessment_id, safe='')}", json=body)
        self.report.updated += 1

    def _delete(self, trace_id: str, entry: Mapping[str, Any]) -> None:
        assessment_id = quote(str(entry["assessment_id"]), safe="")
        self.api.call("DELETE", f"{self._path(trace_id)}/assessments/{assessment_id}")
        self.report.deleted += 1

    @staticmethod
    def _path(trace_id: str) -> str:
        return f"api/3.0/mlflow/traces/{quote(trace_id, safe='')}"

    def close(self) -> None:
        """Close the HTTP connections."""
        self.api.close()


def read_feedback(url: str, trace_id: str) -> list[dict[str, Any]]:
    """Mast's feedback on one trace (MLflow's JSON), to check a write-back."""
    api = MLflowClient(url)
    try:
        return [e for e in api.trace_info(trace_id).get("assessments") or [] if is_mast_entry(e)]
    finally:
        api.close()

