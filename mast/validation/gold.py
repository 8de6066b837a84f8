"""``mast validate --gold GOLD``: how far to trust the judge on *your* traces, from the review gold.

The gold file (:mod:`mast.gold`) holds, per cell, what the reviewer said and what the judge said
when it was shown; the judge's values are the predictions unless ``results`` names another run
(a re-judged one, say). Only random-queue cells enter the estimate: the improve queue picked its
traces where the judge was doubtful, so counting them would pull kappa down for the whole file.
They are counted and reported apart. Several reviewers on the same cells give their agreement
with each other per mode (Fleiss' kappa) beside the judge's, and the gold is their majority.

``split`` keeps dev and test apart (:func:`split_traces`): seeded, stratified by each trace's
gold (its present modes), so tuning on dev and measuring on test never share a trace.

Example:
    >>> report = validate_gold("gold.jsonl", output="validation/mine")   # doctest: +SKIP
    >>> print(report.verdict)                                            # doctest: +SKIP
"""

from __future__ import annotations

import os
import random
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import pandas as pd

from mast.errors import EvaluationError, UsageError
from mast.evaluation.core import evaluate
from mast.evaluation.labels import label_table, read_labels
from mast.gold import GoldEvent, current_cells, iter_events, label_rows, reviewer_disagreements
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.validation.models import SetResult, ValidationReport
from mast.validation.verdict import mode_findings, verdict_text
from mast.validation.write import write_outputs

Split = Literal["dev", "test"]
DEV_FRACTION = 0.5


def split_traces(
    gold: pd.DataFrame, *, seed: int = 0, dev_fraction: float = DEV_FRACTION
) -> dict[str, Split]:
    """Each gold trace's split: within each stratum (the trace's present modes), a seeded shuffle cut at ``dev_fraction``.

    Stratifying keeps a mode's positive traces on both sides where there are two or more; the same
    seed and gold always give the same split, so dev stays dev across runs.
    """
    present: dict[str, set[str]] = defaultdict(set)
    for trace_id, code, value in zip(gold["trace_id"], gold["code"], gold["present"], strict=True):
        codes = present.setdefault(str(trace_id), set())
        if value:
            codes.add(str(code))
    strata: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for trace_id, codes in present.items():
        strata[tuple(sorted(codes))].append(trace_id)
    rng = random.Random(seed)
    out: dict[str, Split] = {}
    carry = 0.0  # strata of one trace alternate, so many small strata still split near dev_fraction
    for key in sorted(strata):
        members = sorted(strata[key])
        rng.shuffle(members)
        exact = len(members) * dev_fraction + carry
        n_dev = int(exact)
        carry = exact - n_dev
        for i, trace_id in enumerate(members):
            out[trace_id] = "dev" if i < n_dev else "test"
    return out


def judge_labels(events: Iterable[GoldEvent]) -> pd.DataFrame:
    """The judge's values the gold recorded, one per (trace, mode), as a label table."""
    seen: dict[tuple[str, str], bool] = {}
    for event in current_cells(events).values():
        if event.field == "mode" and event.code and event.judge in ("present", "absent"):
            seen[(event.trace_id, event.code)] = event.judge == "present"
    rows = [{"trace_id": t, "code": c, "present": p} for (t, c), p in seen.items()]
    return label_table(rows, source="the judge's values in the gold")


def validate_gold(
    gold: str | os.PathLike[str],
    *,
    results: str | os.PathLike[str] | None = None,
    split: Split | None = None,
    split_seed: int = 0,
    output: str | os.PathLike[str] | None = "validation",
    n_boot: int = 1000,
    seed: int = 0,
    taxonomy: Taxonomy | None = None,
) -> ValidationReport:
    """Per-mode agreement of the judge with the reviewers' gold, with CIs, a verdict and the reviewers' own agreement.

    Args:
        gold: the gold JSONL ``mast review`` writes.
        results: predictions to measure instead of the judge values recorded in the gold.
        split: measure only the ``dev`` or ``test`` traces of :func:`split_traces`.
        split_seed: the split's seed.
        output: folder for summary.json, per_mode.csv, disagreements.csv, reviewer_disagreements.csv
            (cells the reviewers disagree on, left out of the gold), verdict.txt, report.html
            (``None``: write nothing).
        n_boot: bootstrap resamples.
        seed: the bootstrap's seed.
        taxonomy: the taxonomy of the codes (default mast-v3).

    Raises:
        EvaluationError: an empty or unreadable gold, or no cell shared with the predictions.
    """
    tax = taxonomy or load_taxonomy()
    path = Path(gold)
    if not path.is_file():
        raise UsageError(f"{path}: no such gold file")
    events = list(iter_events(path))
    gold_table = label_table(label_rows(events), taxonomy=tax, source=str(path))
    improve = sum(1 for e in current_cells(events).values() if e.field == "mode" and e.queue == "improve")
    if gold_table.empty:
        raise EvaluationError(
            f"{path}: no reviewed random-queue cell (present/absent) to measure the judge on"
        )
    pred = read_labels(results, role="pred", taxonomy=tax) if results is not None else judge_labels(events)
    note = ""
    if split is not None:
        chosen = split_traces(gold_table, seed=split_seed)
        keep = {t for t, s in chosen.items() if s == split}
        gold_table = gold_table[gold_table["trace_id"].isin(keep)].reset_index(drop=True)
        pred = pred[pred["trace_id"].isin(keep)].reset_index(drop=True)
        note = f"{split} split (seed {split_seed}): {len(keep)} of {len(chosen)} traces"
        if gold_table.empty:
            raise EvaluationError(f"{path}: the {split} split holds no reviewed trace")
    report = evaluate(pred, gold_table, n_boot=n_boot, seed=seed, taxonomy=tax)
    agreement = report.inter_annotator.get("gold")
    human: dict[str, float | None] = {m.code: m.fleiss_kappa for m in agreement.per_mode} if agreement else {}
    if improve:
        note = (note + "; " if note else "") + (
            f"{improve} improve-queue cells left out of the estimate "
            "(picked for disagreement: a biased sample)"
        )
    result = SetResult(
        name=split or "gold",
        description=f"reviewed traces of {path.name}",
        licence="yours",
        n_traces=report.n_traces,
        n_judged=report.n_traces,
        results=str(results or path),
        evaluation=report,
        mapping_note=note,
    )
    judge = {
        "kind": "gold",
        "model": f"judge values in {path.name}" if results is None else str(results),
        "taxonomy_version": tax.version,
    }
    validation = ValidationReport(
        judge=judge,
        data_dir=str(path),
        output_dir=str(output or ""),
        sets=[result],
        pooled=report,
        modes=mode_findings(report, human),
        reviewer_disagreements=reviewer_disagreements(events),
    )
    validation.verdict = verdict_text(validation) + (f" ({note})" if note else "")
    if output is not None:
        out = Path(output)
        out.mkdir(parents=True, exist_ok=True)
        sources = {e.trace_id: e.source_path for e in events if e.source_path}
        write_outputs(validation, out, sources=sources)
    return validation
