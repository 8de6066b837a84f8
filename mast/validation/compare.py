"""Two validation runs side by side: per-mode kappa of each and the paired bootstrap difference.

Both runs are scored on the cells they share (same set, trace and mode, assessed by both judges
and by the gold), and the bootstrap resamples *traces* once for both, so what differs between the
two numbers is the judge, not the sample. Several annotators are reduced to their majority (ties
left out).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from mast.datasets import validation_sets
from mast.errors import EvaluationError
from mast.evaluation import majority_vote
from mast.evaluation.labels import read_diagnoses
from mast.validation.verdict import FEW_POSITIVES
from mast.validation.write import read_summary


def kappa_from_counts(tp: np.ndarray, fp: np.ndarray, fn: np.ndarray, tn: np.ndarray) -> np.ndarray:
    """Cohen's kappa of binary labels from confusion counts (NaN where undefined), elementwise."""
    tp, fp, fn, tn = (np.asarray(v, dtype=float) for v in (tp, fp, fn, tn))
    denominator = (tp + fp) * (fp + tn) + (tp + fn) * (fn + tn)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, 2 * (tp * tn - fn * fp) / denominator, np.nan)


def _cells(run: Path, name: str) -> pd.DataFrame:
    path = run / name / "results.jsonl"
    if not path.is_file():
        raise EvaluationError(f"{run}: no results for set {name!r} ({path} is missing)")
    rows = [
        {"trace_id": d.trace_id, "code": v.code, "present": bool(v.present)}
        for d in read_diagnoses(path) if d.status == "judged"
        for v in d.failure_modes if v.present is not None
    ]
    return pd.DataFrame(rows, columns=["trace_id", "code", "present"])


def shared_cells(run_a: Path, run_b: Path) -> pd.DataFrame:
    """One row per (set, trace, mode) judged by both runs and labelled in the gold: gold, a, b."""
    a, b = read_summary(run_a), read_summary(run_b)
    names = [s.name for s in a.sets if s.name in {t.name for t in b.sets}]
    frames = []
    for spec in validation_sets(names):
        if not spec.gold:
            continue
        gold = majority_vote(spec.gold_labels(a.data_dir or None))[["trace_id", "code", "present"]].rename(columns={"present": "gold"})
        cells = gold.dropna(subset=["gold"]).merge(_cells(run_a, spec.name).rename(columns={"present": "a"}), on=["trace_id", "code"])
        cells = cells.merge(_cells(run_b, spec.name).rename(columns={"present": "b"}), on=["trace_id", "code"])
        frames.append(cells.assign(set=spec.name, unit=spec.name + ":" + cells["trace_id"].astype(str)))
    if not frames or all(f.empty for f in frames):
        raise EvaluationError(f"{run_a} and {run_b} share no judged, gold-labelled cell to compare")
    return pd.concat(frames, ignore_index=True)


def compare_validations(
    run_a: str | os.PathLike[str], run_b: str | os.PathLike[str], *, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> pd.DataFrame:
    """Kappa of run A and run B per mode and pooled, and B - A with a paired bootstrap CI.

    ``reading`` says ``B better`` / ``A better`` when the CI excludes 0, else ``no clear difference``;
    ``caveat`` flags a scope with fewer than :data:`~mast.validation.verdict.FEW_POSITIVES` positive
    gold cells, where no reading holds.
    """
    cells = shared_cells(Path(run_a), Path(run_b))
    cells["gold"] = cells["gold"].astype(bool)
    units = sorted(cells["unit"].unique())
    codes = sorted(cells["code"].unique(), key=lambda c: tuple(int(p) for p in c.split(".") if p.isdigit()))
    unit_index = {u: i for i, u in enumerate(units)}
    code_index = {c: i for i, c in enumerate(codes)}
    # counts[judge, unit, code, (tp, fp, fn, tn)]
    counts = np.zeros((2, len(units), len(codes), 4))
    u = cells["unit"].map(unit_index).to_numpy()
    c = cells["code"].map(code_index).to_numpy()
    gold = cells["gold"].to_numpy()
    for j, column in enumerate(("a", "b")):
        pred = cells[column].astype(bool).to_numpy()
        cell = np.select([pred & gold, pred & ~gold, ~pred & gold], [0, 1, 2], 3)
        np.add.at(counts, (j, u, c, cell), 1)  # type: ignore[arg-type]  # numpy's stubs reject the int index

    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(units), size=(n_boot, len(units))) if n_boot else np.empty((0, len(units)), dtype=int)
    alpha = (1 - level) / 2
    rows = []
    for scope in ["pooled", *codes]:
        block = counts.sum(axis=2) if scope == "pooled" else counts[:, :, code_index[scope], :]
        point = kappa_from_counts(*block.sum(axis=1).T)  # shape (2,)
        if n_boot:
            sampled = block[:, draws, :].sum(axis=2)  # (2, n_boot, 4)
            ka = kappa_from_counts(*np.moveaxis(sampled[0], -1, 0))
            kb = kappa_from_counts(*np.moveaxis(sampled[1], -1, 0))
            diff = (kb - ka)[~np.isnan(kb - ka)]
            low, high = (np.quantile(diff, [alpha, 1 - alpha]) if diff.size else (np.nan, np.nan))
        else:
            low = high = np.nan
        delta = point[1] - point[0]
        reading = ("B better" if low > 0 else "A better" if high < 0 else "no clear difference") if not np.isnan(low) else "undefined"
        in_scope = cells if scope == "pooled" else cells[cells["code"] == scope]
        positives = int(in_scope["gold"].sum())
        rows.append({
            "scope": scope, "n_traces": int(in_scope["unit"].nunique()), "n_cells": len(in_scope),
            "positives": positives, "kappa_a": _num(point[0]), "kappa_b": _num(point[1]),
            "diff": _num(delta), "low": _num(low), "high": _num(high), "reading": reading,
            # The same flag as the per-mode table: a difference on a handful of positive cells is noise.
            "caveat": (f"few positives ({positives} < {FEW_POSITIVES}): do not read the difference"
                       if positives < FEW_POSITIVES else None),
        })
    frame = pd.DataFrame(rows)
    frame.attrs.update({"run_a": str(run_a), "run_b": str(run_b), "n_boot": n_boot, "level": level,
                        "note": "paired bootstrap over traces; no multiple-comparison correction across modes"})
    return frame


def _num(value: float) -> float | None:
    return None if np.isnan(value) else float(value)
