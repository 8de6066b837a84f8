"""Diagnoses as pandas DataFrames: one row per trace (wide) or per trace and mode (long).

The one implementation of "diagnoses as a DataFrame" (``mast.to_dataframe``); the analysis, the
HTML report and ``mast export`` read it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, Literal

import pandas as pd

from mast.diagnosis import Diagnosis, ModeVerdict
from mast.taxonomy import Taxonomy, load_taxonomy

__all__ = ["to_dataframe"]


def to_dataframe(
    diagnoses: Iterable[Diagnosis] | str | os.PathLike[str],
    *,
    taxonomy: Taxonomy | None = None,
    form: Literal["wide", "long"] = "wide",
) -> pd.DataFrame:
    """Diagnoses (or a ``results.jsonl`` path) as a DataFrame, one row per trace or per (trace, mode).

    ``wide`` (default): a nullable boolean column per mode code (<NA> where not assessed), then
    status, first failure, summary, usage, and per mode ``<code>_confidence``,
    ``<code>_explanation`` and ``<code>_evidence`` (quotes with their ``[S<step>]``). ``long``: one
    row per trace and mode with ``present``, ``confidence``, ``explanation`` and ``evidence``. This
    is the one implementation of "diagnoses as a DataFrame"; :mod:`mast.analysis`, the report and
    ``mast export`` read it.

    Example:
        >>> to_dataframe([]).columns[:3].tolist()
        ['trace_id', 'status', '1.1']
    """
    tax = taxonomy or load_taxonomy()
    from mast.evaluation.labels import read_diagnoses

    items = read_diagnoses(diagnoses) if isinstance(diagnoses, str | os.PathLike) else list(diagnoses)
    if form == "long":
        return _long_frame(items, tax)
    records = [_wide_row(d, tax) for d in items]
    details = [f"{code}_{part}" for code in tax.codes for part in ("confidence", "explanation", "evidence")]
    columns = ["trace_id", "status", *tax.codes, "n_modes", "task_completed", "first_failure_step",
               "first_failure_agent", "first_failure_code", "first_failure_explanation", "summary",
               "source_path", "source_record", "source_format", "judge_kind",
               "judge_model", "input_tokens", "output_tokens", "cost_usd", "latency_s", "llm_calls",
               "cached", "error", *details]
    frame = pd.DataFrame.from_records(records, columns=columns)
    frame = frame.astype({code: "boolean" for code in tax.codes})
    frame = frame.astype({"first_failure_step": "Int64", "task_completed": "boolean", "source_record": "Int64"})
    frame = frame.astype({f"{code}_confidence": "Float64" for code in tax.codes})
    return frame


def _wide_row(d: Diagnosis, tax: Taxonomy) -> dict[str, Any]:
    row: dict[str, Any] = {"trace_id": d.trace_id, "status": d.status}
    verdicts = {v.code: v for v in d.failure_modes}
    for code in tax.codes:
        found = verdicts.get(code)
        row[code] = found.present if found else None
    first = d.first_failure
    row.update(
        {
            "n_modes": sum(1 for code in tax.codes if row[code]),
            "task_completed": d.task_completed,
            "first_failure_step": first.step if first else None,
            "first_failure_agent": first.agent if first else None,
            "first_failure_code": first.code if first else None,
            "first_failure_explanation": first.explanation if first else None,
            "summary": d.summary,
            "source_path": d.source.path,
            "source_record": d.source.record,
            "source_format": d.source.format,
            "judge_kind": d.judge.kind,
            "judge_model": d.judge.model,
            "input_tokens": d.usage.input_tokens,
            "output_tokens": d.usage.output_tokens,
            "cost_usd": d.usage.cost_usd,
            "latency_s": d.usage.latency_s,
            "llm_calls": d.usage.llm_calls,
            "cached": d.usage.cached,
            "error": d.error.message if d.error else None,
        }
    )
    for code in tax.codes:
        found = verdicts.get(code)
        row[f"{code}_confidence"] = found.confidence if found else None
        row[f"{code}_explanation"] = found.explanation if found else None
        row[f"{code}_evidence"] = _quotes(found) if found else None
    return row


def _quotes(verdict: ModeVerdict) -> str:
    return " ".join(
        (f"[S{e.step}] " if e.step is not None else "") + f'"{e.quote.strip()}"' for e in verdict.evidence
    )


def _long_frame(items: list[Diagnosis], tax: Taxonomy) -> pd.DataFrame:
    rows: list[dict[str, Any]] = []
    for d in items:
        verdicts = {v.code: v for v in d.failure_modes}
        for mode in tax.modes:
            found = verdicts.get(mode.code)
            rows.append({
                "trace_id": d.trace_id, "status": d.status, "code": mode.code, "name": mode.name,
                "present": found.present if found else None,
                "confidence": found.confidence if found else None,
                "explanation": found.explanation if found else None,
                "evidence": _quotes(found) if found else None,
                "summary": d.summary, "judge_model": d.judge.model, "source_path": d.source.path,
            })
    columns = ["trace_id", "status", "code", "name", "present", "confidence", "explanation", "evidence",
               "summary", "judge_model", "source_path"]
    frame = pd.DataFrame.from_records(rows, columns=columns)
    return frame.astype({"present": "boolean", "confidence": "Float64"})
