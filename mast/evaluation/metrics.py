"""Agreement metrics over binary (trace, mode) cells, with bootstrap confidence intervals.

Point estimates come from scikit-learn. A metric whose denominator is zero is *undefined* and is
reported as ``None`` (JSON ``null``), never as 0: precision with no predicted positives, recall with
no gold positives, F1 with neither. Cohen's kappa is *not estimable* when either side gives every
cell the same label (the judge never, or always, says present; the gold never, or always, has the
mode): it would be 0 (or undefined) whatever the other side does, and its bootstrap CI would be a
zero-width ``[0, 0]``. :func:`kappa_not_estimable` says why, in words the app, the CLI and the
reports all show.

Confidence intervals resample **traces** with replacement (all modes of a trace move together, so
within-trace correlation is kept), recompute every metric from the resampled counts, and take the
percentile interval. An interval is ``None`` when the point estimate is undefined or when the
metric is undefined in more than half of the resamples.

Example:
    >>> m = binary_metrics(tp=10, fp=2, fn=3, tn=70)
    >>> round(m["accuracy"], 3), round(m["precision"], 3), round(m["recall"], 3), round(m["kappa"], 3)
    (0.941, 0.833, 0.769, 0.766)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
from sklearn.metrics import (
    accuracy_score,
    cohen_kappa_score,
    f1_score,
    precision_score,
    recall_score,
)

METRICS = ("accuracy", "precision", "recall", "f1", "kappa", "gold_rate", "pred_rate")
"""Metric names, in report order."""

COUNT_ORDER = ("tp", "fp", "fn", "tn")
"""Order of the last axis of count arrays."""


def cell_arrays(tp: int, fp: int, fn: int, tn: int) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Gold and predicted label vectors with exactly these confusion counts."""
    gold = np.array([True] * tp + [False] * fp + [True] * fn + [False] * tn, dtype=bool)
    pred = np.array([True] * tp + [True] * fp + [False] * fn + [False] * tn, dtype=bool)
    return gold, pred


def confusion(gold: Sequence[bool] | npt.NDArray[np.bool_], pred: Sequence[bool] | npt.NDArray[np.bool_]) -> dict[str, int]:
    """TP, FP, FN, TN of predictions against gold."""
    g = np.asarray(gold, dtype=bool)
    p = np.asarray(pred, dtype=bool)
    if g.shape != p.shape:
        raise ValueError("gold and predictions differ in length")
    return {
        "tp": int(np.sum(g & p)),
        "fp": int(np.sum(~g & p)),
        "fn": int(np.sum(g & ~p)),
        "tn": int(np.sum(~g & ~p)),
    }


def binary_metrics(tp: int, fp: int, fn: int, tn: int) -> dict[str, float | None]:
    """Accuracy, precision, recall, F1, Cohen's kappa and base rates from confusion counts.

    Computed by scikit-learn on label vectors with these counts; undefined values are None.
    """
    n = tp + fp + fn + tn
    out: dict[str, float | None] = dict.fromkeys(METRICS)
    if n == 0:
        return out
    gold, pred = cell_arrays(tp, fp, fn, tn)
    out["accuracy"] = float(accuracy_score(gold, pred))
    if tp + fp:
        out["precision"] = float(precision_score(gold, pred, zero_division=np.nan))
    if tp + fn:
        out["recall"] = float(recall_score(gold, pred, zero_division=np.nan))
    if 2 * tp + fp + fn:
        out["f1"] = float(f1_score(gold, pred, zero_division=np.nan))
    if kappa_not_estimable(tp, fp, fn, tn) is None:
        out["kappa"] = float(cohen_kappa_score(gold, pred, labels=[False, True]))
    out["gold_rate"] = (tp + fn) / n
    out["pred_rate"] = (tp + fp) / n
    return out


def kappa_not_estimable(
    tp: float, fp: float, fn: float, tn: float, *, judge: str = "judge", gold: str = "gold"
) -> str | None:
    """Why Cohen's kappa cannot be estimated from these counts, or None when it can.

    Kappa needs variation on both sides: when one side labels every cell alike it is 0 (or 0/0)
    whatever the other does, so it says nothing, and a bootstrap CI of it is a meaningless ``[0, 0]``.

    Example:
        >>> kappa_not_estimable(0, 0, 3, 12)
        'judge never says present'
        >>> kappa_not_estimable(2, 1, 3, 12) is None
        True
    """
    if tp + fp + fn + tn == 0:
        return "no cell compared"
    if tp + fp == 0:
        return f"{judge} never says present"
    if fn + tn == 0:
        return f"{judge} always says present"
    if tp + fn == 0:
        return f"no positive in the {gold}"
    if fp + tn == 0:
        return f"every cell present in the {gold}"
    return None


def metrics_from_counts(
    counts: npt.NDArray[np.floating] | npt.NDArray[np.integer], *, estimable_only: bool = True
) -> dict[str, npt.NDArray[np.float64]]:
    """The same metrics, vectorised over any leading axes of ``counts[..., (tp, fp, fn, tn)]``.

    Undefined entries are NaN. Used for bootstrap resamples, where calling scikit-learn per
    resample would be slow; a test checks it agrees with :func:`binary_metrics`.

    ``estimable_only=False`` keeps the 0 of a side with no variation where chance agreement is
    below 1 (calibration's paired difference: a judge that never flags a mode is the baseline a
    new definition must beat, at 0). Every figure mast *shows* as a kappa uses the default.
    """
    c = np.asarray(counts, dtype=float)
    tp, fp, fn, tn = c[..., 0], c[..., 1], c[..., 2], c[..., 3]
    n = tp + fp + fn + tn
    with np.errstate(divide="ignore", invalid="ignore"):
        accuracy = np.where(n > 0, (tp + tn) / n, np.nan)
        precision = np.where(tp + fp > 0, tp / (tp + fp), np.nan)
        recall = np.where(tp + fn > 0, tp / (tp + fn), np.nan)
        f1 = np.where(2 * tp + fp + fn > 0, 2 * tp / (2 * tp + fp + fn), np.nan)
        gold_rate = np.where(n > 0, (tp + fn) / n, np.nan)
        pred_rate = np.where(n > 0, (tp + fp) / n, np.nan)
        chance = gold_rate * pred_rate + (1 - gold_rate) * (1 - pred_rate)
        # Not estimable (NaN) when either side has no variation: see kappa_not_estimable.
        varied = (tp + fp > 0) & (fn + tn > 0) & (tp + fn > 0) & (fp + tn > 0) if estimable_only else n > 0
        kappa = np.where(varied & (chance < 1 - 1e-12), (accuracy - chance) / (1 - chance), np.nan)
    return {"accuracy": accuracy, "precision": precision, "recall": recall, "f1": f1, "kappa": kappa,
            "gold_rate": gold_rate, "pred_rate": pred_rate}


def bootstrap_weights(n_units: int, n_boot: int, seed: int) -> npt.NDArray[np.float64]:
    """How many times each unit (trace) is drawn in each of ``n_boot`` resamples: shape (n_boot, n_units)."""
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_units, size=(n_boot, n_units))
    weights = np.zeros((n_boot, n_units))
    np.add.at(weights, (np.repeat(np.arange(n_boot), n_units), draws.ravel()), 1.0)
    return weights


def percentile_interval(
    values: npt.NDArray[np.float64], level: float = 0.95, *, min_defined: float = 0.5
) -> tuple[float, float] | None:
    """Percentile interval of bootstrap values along axis 0, ignoring undefined (NaN) resamples.

    None when fewer than ``min_defined`` of the resamples are defined.
    """
    values = np.asarray(values, dtype=float)
    defined = values[~np.isnan(values)]
    if values.size == 0 or defined.size < min_defined * values.size or defined.size == 0:
        return None
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(defined, [tail, 100 - tail])
    return float(low), float(high)


def nanmean_or_none(values: Sequence[float | None]) -> float | None:
    """Mean of the defined values; None when none is defined."""
    defined = [v for v in values if v is not None and not np.isnan(v)]
    return float(np.mean(defined)) if defined else None
