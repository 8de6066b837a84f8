"""The gold out and back: the CSV ``mast evaluate --gold`` reads, and Inspect Scout validation sets.

- :func:`gold_frame`: the current cells of a gold file as a long label table (one row per trace,
  mode and reviewer), with the queue and the trace's source beside them.
- :func:`write_gold_csv`: that table as ``trace_id,code,present,annotator,queue,source_path,source_record,
  note,first_step,first_agent``, which :func:`mast.evaluation.read_labels` reads as the ``long`` form
  (the reviewer's note and first-failure correction ride along; the reader ignores them).
- :func:`write_scout`: an Inspect Scout validation set, one case per trace: ``id`` (the trace id, as
  Scout keys a transcript) and ``labels`` (mode code -> true/false, the reviewers' majority; ties and
  ``unsure`` left out). The mast scanner returns a *resultset* (one result per mode, labelled by its
  code), and Scout validates a resultset against ``labels``, not ``target`` (a ``target`` mapping
  wants a scanner whose value is a dict, so every transcript would be a Scout error): a label
  ``true`` passes when the mode's result is present, ``false`` when it is absent or not returned.
  CSV spells the labels as ``label_<code>`` columns, as Scout's reader expects; JSON and YAML as a
  ``labels`` mapping. ``split`` is written when a split is given.
- :func:`read_scout`: such a file back as a label table (``target`` sets, as older mast wrote, too).

Example:
    >>> write_gold_csv("gold.jsonl", "gold.csv")            # doctest: +SKIP
    >>> write_scout("gold.jsonl", "validation.yaml")        # doctest: +SKIP
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from mast._outputs import read_csv, write_csv
from mast.errors import EvaluationError, UsageError
from mast.evaluation.agreement import majority_vote
from mast.evaluation.labels import label_table, parse_present
from mast.gold import Queue, current_cells, iter_events
from mast.taxonomy import Taxonomy, load_taxonomy

SCOUT_SUFFIXES = (".csv", ".json", ".yaml", ".yml")
_TARGET = "target_"
_LABEL = "label_"


def gold_frame(
    gold: str | os.PathLike[str], *, queues: tuple[Queue, ...] = ("random", "improve")
) -> pd.DataFrame:
    """Every reviewer's current mode cells (``present``/``absent``; ``unsure`` left out) of ``queues``.

    Each row also carries that reviewer's ``note``, ``first_step`` and ``first_agent`` for the trace
    (empty when not given): columns the label readers ignore.
    """
    cells = current_cells(iter_events(gold))
    extra: dict[tuple[str, str], dict[str, Any]] = {}
    for (key, name, _, who), event in cells.items():
        if name in ("note", "first_step", "first_agent"):
            extra.setdefault((key, who), {})[name] = event.value
    rows = [
        {
            "trace_id": e.trace_id,
            "code": e.code,
            "present": e.value == "present",
            "annotator": e.reviewer,
            "queue": e.queue,
            "source_path": e.source_path or "",
            "source_record": e.source_record,
            "key": e.key,
            "note": extra.get((e.key, e.reviewer), {}).get("note"),
            "first_step": extra.get((e.key, e.reviewer), {}).get("first_step"),
            "first_agent": extra.get((e.key, e.reviewer), {}).get("first_agent"),
        }
        for e in cells.values()
        if e.field == "mode" and e.value in ("present", "absent") and e.queue in queues
    ]
    columns = [
        "trace_id", "code", "present", "annotator", "queue", "source_path", "source_record", "key",
        "note", "first_step", "first_agent",
    ]  # fmt: skip
    frame = pd.DataFrame(rows, columns=columns)
    frame["first_step"] = frame["first_step"].astype("Int64")  # a step number, never 2.0
    return frame.sort_values(["trace_id", "code", "annotator"], kind="stable", ignore_index=True)


def write_gold_csv(
    gold: str | os.PathLike[str], target: str | os.PathLike[str], *, queues: tuple[Queue, ...] = ("random",)
) -> Path:
    """Write the gold as a long label CSV (``present`` as 1/0) and return its path."""
    frame = gold_frame(gold, queues=queues)
    frame["present"] = frame["present"].astype(int)
    out = Path(target)
    out.parent.mkdir(parents=True, exist_ok=True)
    write_csv(frame.drop(columns=["key"]), out)
    return out


def write_scout(
    gold: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    split: str | None = None,
    queues: tuple[Queue, ...] = ("random",),
    taxonomy: Taxonomy | None = None,
) -> Path:
    """Write the gold as an Inspect Scout validation set (CSV, JSON or YAML, by ``target``'s suffix)."""
    out = Path(target)
    suffix = out.suffix.lower()
    if suffix not in SCOUT_SUFFIXES:
        raise UsageError(f"{out}: a Scout validation set is .csv, .json or .yaml")
    frame = gold_frame(gold, queues=queues)
    if frame.empty:
        raise EvaluationError(f"{gold}: no reviewed cell to export")
    tax = taxonomy or load_taxonomy()
    votes = majority_vote(
        label_table(frame[["trace_id", "code", "present", "annotator"]].to_dict("records"), taxonomy=tax)
    )
    votes = votes.dropna(subset=["present"])
    cases: list[dict[str, Any]] = []
    for trace_id, group in votes.groupby("trace_id", sort=True):
        labels = {str(c): bool(p) for c, p in zip(group["code"], group["present"], strict=True)}
        case: dict[str, Any] = {"id": str(trace_id), "labels": labels}
        if split:
            case["split"] = split
        cases.append(case)
    out.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".csv":
        codes = sorted({c for case in cases for c in case["labels"]})
        gaps = [case["id"] for case in cases if len(case["labels"]) != len(codes)]
        if gaps:
            # Scout's CSV reader turns an empty label cell into true (present): refuse rather than write one
            raise UsageError(
                f"{out}: trace {gaps[0]} has no reviewed value for every mode, and Scout reads an empty "
                "label_<code> cell of a CSV as present; write .yaml or .json instead"
            )
        flat = [
            {
                "id": c["id"],
                **{_LABEL + k: c["labels"][k] for k in codes},
                **({"split": c["split"]} if split else {}),
            }
            for c in cases
        ]
        write_csv(pd.DataFrame(flat), out)
    elif suffix == ".json":
        out.write_text(json.dumps(cases, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    else:
        out.write_text(yaml.safe_dump(cases, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return out


def read_scout(
    source: str | os.PathLike[str], *, annotator: str = "scout", taxonomy: Taxonomy | None = None
) -> pd.DataFrame:
    """A Scout validation set as labels.

    CSV with ``label_<code>`` (or ``target_<code>``) columns, JSON/YAML with a ``labels`` (or ``target``) mapping.
    """
    path = Path(source)
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            table = read_csv(path)
            prefix = _LABEL if any(k.startswith(_LABEL) for k in table.columns) else _TARGET
            records = [
                {
                    "id": r["id"],
                    "labels": {
                        k[len(prefix) :]: r[k] for k in table.columns if k.startswith(prefix) and r[k] != ""
                    },
                }
                for r in table.to_dict("records")
            ]
        elif suffix == ".json":
            records = json.loads(path.read_text(encoding="utf-8"))
        elif suffix in (".yaml", ".yml"):
            records = yaml.safe_load(path.read_text(encoding="utf-8"))
        else:
            raise UsageError(f"{path}: a Scout validation set is .csv, .json or .yaml")
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise EvaluationError(f"cannot read {path}: {' '.join(str(exc).split())[:200]}") from exc
    if not isinstance(records, list):
        raise EvaluationError(f"{path}: a Scout validation set is a list of cases with id and target")
    rows = []
    for n, case in enumerate(records, start=1):
        mapping = case.get("labels", case.get("target")) if isinstance(case, dict) else None
        if not isinstance(case, dict) or "id" not in case or not isinstance(mapping, dict):
            raise EvaluationError(f"{path}: case {n} has no id and labels mapping (one per mode code)")
        for code, value in mapping.items():
            present = parse_present(value, where=f"{path} case {n}")
            if present is not None:
                rows.append(
                    {"trace_id": str(case["id"]), "code": code, "present": present, "annotator": annotator}
                )
    return label_table(rows, taxonomy=taxonomy, source=str(path))


def import_scout(
    source: str | os.PathLike[str],
    gold: str | os.PathLike[str],
    *,
    reviewer: str = "scout",
    taxonomy: Taxonomy | None = None,
) -> int:
    """Append a Scout validation set's cells to ``gold`` as events of ``reviewer`` (random queue); return how many.

    Scout knows a trace by its id alone, so the events' key names no source file.
    """
    from mast.gold import GoldEvent, GoldStore, trace_key

    table = read_scout(source, annotator=reviewer, taxonomy=taxonomy)
    events = [
        GoldEvent(
            key=trace_key(None, None, str(t)),
            trace_id=str(t),
            field="mode",
            code=str(c),
            value="present" if p else "absent",
            reviewer=reviewer,
            queue="random",
        )
        for t, c, p in zip(table["trace_id"], table["code"], table["present"], strict=True)
    ]
    with GoldStore(gold) as store:
        return store.append(events)
