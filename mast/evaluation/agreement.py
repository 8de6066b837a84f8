"""Several annotators per cell: majority-vote gold and inter-annotator agreement.

The judge's kappa only means something next to the humans' own agreement: MAST's annotators reached
Cohen's kappa 0.88 after three rounds, but 0.24 in the first. :func:`inter_annotator` reports
Fleiss' kappa, Krippendorff's alpha (nominal) and the mean pairwise Cohen's kappa, per mode and
pooled over all cells, so both can be read side by side.

Example:
    >>> import pandas as pd
    >>> from mast.evaluation.labels import label_table
    >>> votes = label_table([
    ...     {"trace_id": "t1", "code": "1.1", "present": p, "annotator": a}
    ...     for a, p in [("a", True), ("b", True), ("c", False)]
    ... ])
    >>> majority_vote(votes)[["trace_id", "code", "present", "votes"]].to_dict("records")
    [{'trace_id': 't1', 'code': '1.1', 'present': True, 'votes': '2/3'}]
"""

from __future__ import annotations

import itertools
import math
from typing import Literal

import numpy as np
import pandas as pd

from mast.evaluation.metrics import binary_metrics, confusion, nanmean_or_none
from mast.evaluation.report import AnnotatorAgreement, ModeIAA

TieRule = Literal["exclude", "present", "absent"]
"""What a tied vote becomes: not assessed (``exclude``), ``present`` or ``absent``."""


def annotators_of(table: pd.DataFrame) -> list[str]:
    """Distinct annotators of a label table (a missing annotator counts as one anonymous labeller)."""
    return sorted(set(table["annotator"].fillna("").astype(str)))


def majority_vote(table: pd.DataFrame, *, ties: TieRule = "exclude") -> pd.DataFrame:
    """One row per (trace, mode): present when more than half of the annotators said so.

    Adds ``votes`` (``"2/3"``: present votes / votes). Confidence is the mean of the annotators'
    confidences, evidence their texts joined. Ties follow ``ties``; the number of tied cells that
    were excluded is in ``attrs["ties_excluded"]``.
    """
    if table.empty:
        out = table.assign(votes=pd.Series(dtype=object))
        out.attrs = {**table.attrs, "ties_excluded": 0, "tied": 0}
        return out
    keys = ["trace_id", "code"]
    if table["annotator"].isna().all() and not table.duplicated(keys).any():
        return _single_labeller(table.sort_values(keys, kind="stable"))
    summary = table.groupby(keys, sort=True).agg(
        n_present=("present", "sum"),
        n_votes=("present", "size"),
        confidence=("confidence", "mean"),
    ).reset_index()
    # Joining texts is Python work per group: do it only for cells that have any evidence.
    texts = table[table["evidence"].astype(bool)]
    if texts.empty:
        summary["evidence"] = ""
    else:
        joined = texts.groupby(keys, sort=False)["evidence"].agg(" | ".join).rename("evidence")
        summary = summary.merge(joined.reset_index(), on=keys, how="left")
        summary["evidence"] = summary["evidence"].astype(object).where(summary["evidence"].notna(), "")
    twice = summary["n_present"] * 2
    present = twice > summary["n_votes"]
    tied = twice == summary["n_votes"]
    if ties == "present":
        present = present | tied
    keep = ~tied if ties == "exclude" else pd.Series(True, index=summary.index)
    out = pd.DataFrame(
        {
            "trace_id": summary["trace_id"],
            "code": summary["code"],
            "present": present.astype(bool),
            "annotator": None,
            "confidence": summary["confidence"].astype(float),
            "evidence": summary["evidence"].astype(object),
            "votes": summary["n_present"].astype(int).astype(str) + "/" + summary["n_votes"].astype(str),
        }
    )[keep.to_numpy()].reset_index(drop=True)
    out.attrs = {**table.attrs, "ties_excluded": int(tied.sum()) if ties == "exclude" else 0, "tied": int(tied.sum())}
    return out


def _single_labeller(table: pd.DataFrame) -> pd.DataFrame:
    """:func:`majority_vote` of a table with one labeller: each row is its cell's only vote.

    A label table holds each (trace, mode, annotator) once (:func:`~mast.evaluation.labels.label_table`),
    so with one labeller there is nothing to group: the rows are the cells, already in (trace, mode)
    order, and no vote can tie. This keeps a judge's 100,000-line results file from being grouped
    row by row; the votes (``1/1``, ``0/1``) are a two-value categorical.
    """
    present = table["present"].astype(bool)
    codes = present.to_numpy().astype(np.int8)
    votes = pd.Categorical.from_codes(codes, dtype=pd.CategoricalDtype(["0/1", "1/1"]))
    out = pd.DataFrame({
        "trace_id": table["trace_id"], "code": table["code"], "present": present, "annotator": None,
        "confidence": table["confidence"].astype(float), "evidence": table["evidence"].astype(object), "votes": votes,
    }).reset_index(drop=True)
    out.attrs = {**table.attrs, "ties_excluded": 0, "tied": 0}
    return out


def inter_annotator(table: pd.DataFrame, codes: list[str] | None = None) -> AnnotatorAgreement | None:
    """Agreement among the annotators of a label table; None when it has fewer than two."""
    names = annotators_of(table)
    if len(names) < 2:
        return None
    frame = table.assign(annotator=table["annotator"].fillna("").astype(str))
    wide = frame.pivot_table(index=["trace_id", "code"], columns="annotator", values="present", aggfunc="first")
    wide = wide.astype(float)  # NaN where an annotator did not label the cell
    order = codes or sorted(set(frame["code"]))
    per_mode = []
    for code in order:
        block = wide[wide.index.get_level_values("code") == code]
        if block.empty:
            continue
        per_mode.append(_agreement(code, block.to_numpy()))
    pooled = _agreement("pooled", wide.to_numpy())
    return AnnotatorAgreement(
        annotators=names,
        n_traces=int(frame["trace_id"].nunique()),
        n_cells=pooled.n_cells,
        pooled=pooled,
        per_mode=per_mode,
    )


def _agreement(code: str, ratings: np.ndarray) -> ModeIAA:
    """ratings: cells x annotators, 1.0/0.0/NaN."""
    rated = ~np.isnan(ratings)
    counts = rated.sum(axis=1)
    full = int(counts.max()) if counts.size else 0
    complete = ratings[counts == full] if full else ratings[:0]
    return ModeIAA(
        code=code,
        n_cells=int(ratings.shape[0]),
        n_cells_fleiss=int(complete.shape[0]),
        fleiss_kappa=_fleiss(complete) if full >= 2 else None,
        krippendorff_alpha=_krippendorff(ratings),
        mean_pairwise_kappa=_pairwise_kappa(ratings),
        unanimous_share=_unanimous(complete) if full >= 2 else None,
    )


def _fleiss(ratings: np.ndarray) -> float | None:
    if ratings.shape[0] == 0:
        return None
    # Cells rated by the same number of annotators, not necessarily by all of them: count per row.
    present = np.nansum(ratings, axis=1)
    table = np.column_stack([(~np.isnan(ratings)).sum(axis=1) - present, present])
    share = table.sum(axis=0) / table.sum()
    if math.isclose(float(np.sum(share**2)), 1.0):
        return None  # every rating in one category: chance agreement 1, kappa undefined
    from statsmodels.stats.inter_rater import fleiss_kappa

    return float(fleiss_kappa(table, method="fleiss"))


def _krippendorff(ratings: np.ndarray) -> float | None:
    # Alpha counts only cells rated at least twice: when those all hold one value it is 0/0 (undefined),
    # even if a cell rated once holds the other value.
    pairable = ratings[(~np.isnan(ratings)).sum(axis=1) >= 2]
    values = pairable[~np.isnan(pairable)]
    if values.size == 0 or np.all(values == values[0]):
        return None
    import krippendorff

    return float(krippendorff.alpha(reliability_data=ratings.T, level_of_measurement="nominal"))


def _pairwise_kappa(ratings: np.ndarray) -> float | None:
    kappas: list[float | None] = []
    for i, j in itertools.combinations(range(ratings.shape[1]), 2):
        both = ~np.isnan(ratings[:, i]) & ~np.isnan(ratings[:, j])
        if both.any():
            counts = confusion(ratings[both, i] == 1, ratings[both, j] == 1)
            kappas.append(binary_metrics(**counts)["kappa"])
    return nanmean_or_none(kappas)


def _unanimous(ratings: np.ndarray) -> float | None:
    if ratings.shape[0] == 0:
        return None
    present = np.nansum(ratings, axis=1)
    unanimous = (present == 0) | (present == (~np.isnan(ratings)).sum(axis=1))
    return float(np.mean(unanimous))
