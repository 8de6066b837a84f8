"""Failure attribution: did the judge name the agent and the step where the run went wrong?

Measured the way the Who&When benchmark (ICML 2025) does: **agent-level accuracy** (the responsible
agent named correctly) and **step-level accuracy** (the decisive step exactly), plus the share within
±k steps, each with a bootstrap CI over traces. A judged diagnosis that names no first failure counts
as wrong (``abstained``); gold traces with no judged diagnosis are left out and counted.

Gold comes from Who&When records (``mistake_agent``, ``mistake_step`` as a 0-based index into
``history``), a table with ``trace_id, agent, step``, or normalised traces carrying
``labels["mistake_agent"]`` / ``labels["mistake_step"]``. Who&When trace ids are
``<subset>/<file stem>`` (``Hand-Crafted/1``); a diagnosis whose trace id differs is still matched
when its ``source.path`` is the gold record's file.

Example:
    >>> agent_key("Orchestrator (thought)") == agent_key("orchestrator")
    True
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pandas as pd

from mast._outputs import read_csv
from mast.diagnosis import Diagnosis
from mast.errors import EvaluationError
from mast.evaluation.judges import require_one_judge
from mast.evaluation.labels import read_diagnoses
from mast.evaluation.metrics import bootstrap_weights, percentile_interval
from mast.evaluation.report import AttributionReport, AttributionRow, BootstrapInfo, Interval
from mast.trace import Trace

GOLD_COLUMNS = ("trace_id", "agent", "step", "path", "subset", "n_steps", "reason")
_SUFFIX = re.compile(r"\s*\(.*\)\s*$")


def agent_key(name: str | None) -> str:
    """An agent name reduced for comparison: case, spacing, underscores and a ``(…)`` suffix ignored."""
    if not name:
        return ""
    return re.sub(r"[^0-9a-z]", "", _SUFFIX.sub("", str(name)).lower())


def _step(value: Any, where: str) -> int | None:
    if (
        value is None
        or (isinstance(value, str) and not value.strip())
        or (isinstance(value, float) and np.isnan(value))
    ):
        return None
    try:
        number = int(str(value).strip())
    except ValueError as exc:
        raise EvaluationError(f"{where}: step {value!r} is not a whole number") from exc
    if number < 0:
        raise EvaluationError(f"{where}: step {value!r} is negative")
    return number


def read_who_and_when(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Gold attribution table from Who&When records: a JSON file or a folder of them (searched recursively).

    Columns: ``trace_id`` (``<subset>/<stem>``), ``agent``, ``step`` (0-based index into ``history``),
    ``path`` (resolved file), ``subset``, ``n_steps`` (length of ``history``), ``reason``.
    """
    root = Path(path)
    files = sorted(root.rglob("*.json")) if root.is_dir() else [root]
    if not files or not files[0].is_file():
        raise EvaluationError(f"{root}: no Who&When records (JSON files) found")
    rows = []
    for file in files:
        try:
            record = orjson.loads(file.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise EvaluationError(f"{file}: not a readable JSON record ({exc})") from exc
        if not isinstance(record, dict) or "mistake_agent" not in record or "history" not in record:
            if root.is_dir():
                continue  # folders may hold other JSON (manifests); only records with gold count
            raise EvaluationError(f"{file}: not a Who&When record (needs history and mistake_agent)")
        rows.append(
            {
                "trace_id": f"{file.parent.name}/{file.stem}",
                "agent": str(record["mistake_agent"]),
                "step": _step(record.get("mistake_step"), str(file)),
                "path": str(file.resolve()),
                "subset": file.parent.name,
                "n_steps": len(record.get("history") or []),
                "reason": str(record.get("mistake_reason") or ""),
            }
        )
    if not rows:
        raise EvaluationError(f"{root}: no Who&When records (files with mistake_agent) found")
    return _gold_frame(rows, str(root))


def read_attribution_gold(
    source: str | os.PathLike[str] | pd.DataFrame | Iterable[Trace],
) -> pd.DataFrame:
    """Gold attribution from Who&When records, a table (CSV/JSONL/DataFrame with trace_id, agent, step) or traces."""
    if isinstance(source, pd.DataFrame):
        return _gold_frame(source.to_dict("records"), str(source.attrs.get("source", "DataFrame")))
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if path.is_dir() or path.suffix.lower() == ".json":
            return read_who_and_when(path)
        if path.suffix.lower() in (".csv", ".tsv"):
            frame = read_csv(path, sep="\t" if path.suffix.lower() == ".tsv" else ",")
        elif path.suffix.lower() in (".jsonl", ".ndjson"):
            frame = pd.read_json(path, lines=True, dtype=False)
        else:
            raise EvaluationError(
                f"{path}: attribution gold must be Who&When JSON, a folder of them, CSV or JSONL"
            )
        return _gold_frame(frame.to_dict("records"), str(path))
    rows = []
    for trace in source:
        labels = trace.labels
        if "mistake_agent" not in labels:
            continue
        rows.append(
            {
                "trace_id": trace.trace_id,
                "agent": labels["mistake_agent"],
                "step": labels.get("mistake_step"),
                "path": trace.source.path,
                "n_steps": len(trace.steps),
            }
        )
    if not rows:
        raise EvaluationError("no trace carries attribution labels (labels['mistake_agent'])")
    return _gold_frame(rows, "traces")


def _gold_frame(rows: Sequence[Mapping[Any, Any]], source: str) -> pd.DataFrame:
    clean = []
    for n, row in enumerate(rows, start=1):
        where = f"{source} row {n}"
        if not row.get("trace_id") or not row.get("agent"):
            raise EvaluationError(f"{where}: attribution gold needs trace_id and agent")
        clean.append(
            {column: row.get(column) for column in GOLD_COLUMNS}
            | {
                "trace_id": str(row["trace_id"]),
                "agent": str(row["agent"]),
                "step": _step(row.get("step"), where),
            }
        )
    frame = pd.DataFrame.from_records(clean, columns=list(GOLD_COLUMNS))
    duplicated = frame["trace_id"].duplicated()
    if duplicated.any():
        raise EvaluationError(
            f"{source}: trace {frame['trace_id'][duplicated].iloc[0]} appears twice in the gold"
        )
    frame["step"] = frame["step"].astype("Int64")
    frame.attrs["source"] = source
    return frame


def evaluate_attribution(
    diagnoses: str | os.PathLike[str] | Iterable[Diagnosis],
    gold: str | os.PathLike[str] | pd.DataFrame | Iterable[Trace],
    *,
    k: int = 1,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> AttributionReport:
    """Agent-level accuracy, exact step accuracy and within-±k step accuracy of ``first_failure``.

    Args:
        diagnoses: a ``results.jsonl`` path or diagnoses.
        gold: see :func:`read_attribution_gold`.
        k: tolerance, in steps, of the "within ±k" accuracy.
        n_boot: bootstrap resamples of traces for the CIs (0: none).
        seed: seed of the resampling.
        level: confidence level.
    """
    if k < 0:
        raise EvaluationError("k must be 0 or more")
    pred_source = str(diagnoses) if isinstance(diagnoses, str | os.PathLike) else "diagnoses"
    items = read_diagnoses(diagnoses) if isinstance(diagnoses, str | os.PathLike) else list(diagnoses)
    items = require_one_judge(items, pred_source)
    gold_table = read_attribution_gold(gold)
    by_id = {row["trace_id"]: row for row in gold_table.to_dict("records")}
    by_path = {str(row["path"]): row for row in by_id.values() if row.get("path")}

    matched: dict[str, Diagnosis] = {}
    unmatched = 0
    for diagnosis in items:
        if diagnosis.status != "judged":
            continue
        row = by_id.get(diagnosis.trace_id) or by_path.get(_resolved(diagnosis.source.path))
        if row is None:
            unmatched += 1
            continue
        if row["trace_id"] in matched:
            raise EvaluationError(f"two judged diagnoses for gold trace {row['trace_id']}")
        matched[row["trace_id"]] = diagnosis

    if not matched:
        judged = sum(1 for d in items if d.status == "judged")
        raise EvaluationError(
            f"no overlap: none of the {judged} judged predictions in {pred_source} matches one of the "
            f"{len(by_id)} gold traces by trace id or source path"
        )
    rows: list[AttributionRow] = []
    for trace_id, gold_row in by_id.items():
        found = matched.get(trace_id)
        if found is not None:
            rows.append(_row(trace_id, gold_row, found, k))

    agent = np.array([r.agent_correct for r in rows], dtype=float)
    has_step = np.array([r.gold_step is not None for r in rows])
    exact = np.array([r.step_correct for r in rows], dtype=float)
    within = np.array([r.step_within_k for r in rows], dtype=float)
    values = {
        "agent_accuracy": _mean(agent),
        "step_accuracy": _mean(exact[has_step]),
        "step_within_k_accuracy": _mean(within[has_step]),
    }
    ci: dict[str, Interval | None] = {}
    if n_boot and rows:
        weights = bootstrap_weights(len(rows), n_boot, seed)
        for name, series, mask in (
            ("agent_accuracy", agent, np.ones(len(rows), bool)),
            ("step_accuracy", exact, has_step),
            ("step_within_k_accuracy", within, has_step),
        ):
            w = weights[:, mask]
            with np.errstate(invalid="ignore", divide="ignore"):
                resampled = (w @ series[mask]) / w.sum(axis=1)
            bounds = percentile_interval(resampled, level) if values[name] is not None else None
            ci[name] = Interval(low=bounds[0], high=bounds[1]) if bounds else None
    return AttributionReport(
        pred_source=pred_source,
        gold_source=str(gold_table.attrs.get("source", "")),
        n_gold=len(gold_table),
        n_evaluated=len(rows),
        n_abstained=sum(r.status == "abstained" for r in rows),
        n_without_prediction=len(gold_table) - len(rows),
        n_pred_without_gold=unmatched,
        k=k,
        ci=ci,
        bootstrap=BootstrapInfo(n_boot=n_boot, seed=seed, level=level),
        rows=rows,
        **values,
    )


def _row(trace_id: str, gold: Mapping[Any, Any], diagnosis: Diagnosis, k: int) -> AttributionRow:
    gold_step = None if pd.isna(gold["step"]) else int(gold["step"])
    first = diagnosis.first_failure
    if first is None or (first.agent is None and first.step is None):
        return AttributionRow(
            trace_id=trace_id, gold_agent=gold["agent"], gold_step=gold_step, status="abstained"
        )
    step_ok = first.step is not None and gold_step is not None and first.step == gold_step
    near = first.step is not None and gold_step is not None and abs(first.step - gold_step) <= k
    return AttributionRow(
        trace_id=trace_id,
        gold_agent=gold["agent"],
        gold_step=gold_step,
        pred_agent=first.agent,
        pred_step=first.step,
        agent_correct=bool(first.agent) and agent_key(first.agent) == agent_key(gold["agent"]),
        step_correct=step_ok,
        step_within_k=near,
    )


def _resolved(path: str | None) -> str:
    if not path:
        return ""
    try:
        return str(Path(path).resolve())
    except OSError:
        return path


def _mean(values: np.ndarray) -> float | None:
    return float(values.mean()) if values.size else None
