"""Did the new agent version fail more often than the old one, beyond noise? ``diff(base, new)``.

Two labelled runs (``results.jsonl`` files, result frames or diagnoses) are compared mode by mode:
the prevalence in each run with a Wilson interval, and the difference (new - base) with an
interval and a two-sided p-value.

* **Paired** when both runs cover the same tasks: the same key (``trace_id``, else the source file
  name) appears in both, one row each. The difference is the share of tasks that gained the mode
  minus the share that lost it; its interval is the Agresti-Min adjusted Wald interval (0.5 added to
  each cell of the 2x2 table) and the p-value McNemar's exact test on the tasks that changed.
  Pairing removes the variation between tasks, so it finds smaller changes.
* **Unpaired** otherwise: Newcombe's hybrid score interval for the difference of two independent
  proportions and the score test's p-value.

Fourteen modes are tested at once, so about ``14 x alpha`` of them look significant by chance when
nothing changed; ``p_holm`` holds Holm-adjusted p-values and the frame's ``attrs["note"]`` says so.
Only judged traces and assessed cells count.

Example:
    >>> import pandas as pd
    >>> base = pd.DataFrame({"trace_id": list("abcd"), "1.3": [False, False, True, False]})
    >>> new = pd.DataFrame({"trace_id": list("abcd"), "1.3": [True, True, True, False]})
    >>> row = diff(base, new).iloc[0]
    >>> row["code"], row["difference"], row["rose"], bool(row["paired"])
    ('1.3', 0.5, 2, True)
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from mast.diagnosis import Diagnosis
from mast.errors import EvaluationError
from mast.taxonomy import Taxonomy, load_taxonomy

RunSource = pd.DataFrame | str | os.PathLike[str] | Iterable[Diagnosis]
Pairing = Literal["auto", "paired", "unpaired"]

__all__ = ["changed_traces", "diff", "holm", "worse_modes"]


def _frame(source: RunSource, taxonomy: Taxonomy) -> tuple[pd.DataFrame, int]:
    """The run's judged traces, and how many it holds that are not judged (errors, skips)."""
    from mast.analysis import mode_columns, results_frame

    frame = results_frame(source, taxonomy=taxonomy, role="pred")
    left_out = 0
    if "status" in frame.columns:
        judged = frame["status"] == "judged"
        left_out = int((~judged).sum())
        frame = frame[judged]
    mode_columns(frame, taxonomy)
    return frame.reset_index(drop=True), left_out


def _relative_paths(frame: pd.DataFrame) -> pd.Series | None:
    """Each row's source path relative to the folder all of the run's sources share."""
    if "source_path" not in frame.columns or frame["source_path"].isna().any() or frame.empty:
        return None
    paths = [Path(str(p)) for p in frame["source_path"]]
    try:
        root = Path(os.path.commonpath([str(p.parent) for p in paths]))
    except ValueError:  # relative and absolute paths mixed, or other drives
        return None
    return pd.Series([str(p.relative_to(root)) if p.is_relative_to(root) else str(p) for p in paths],
                     index=frame.index)


def _keyed(frame: pd.DataFrame, key: str) -> pd.Series | None:
    """The key of each row, or None when it is missing or not unique.

    ``file``: the source file's name; ``path``: its path under the run's common folder (two folders
    of one run may hold files of the same name); ``path+trace_id``: that and the trace id (Claude
    Code subagent files carry their parent session's id, so an id may repeat across files).
    """
    if key == "file":
        if "source_path" not in frame.columns or frame["source_path"].isna().any():
            return None
        values = frame["source_path"].map(lambda p: Path(str(p)).name)
    elif key in ("path", "path+trace_id"):
        relative = _relative_paths(frame)
        if relative is None:
            return None
        values = relative if key == "path" else relative + "#" + frame["trace_id"].astype(str)
    elif key in frame.columns:
        values = frame[key].astype(str)
    else:
        return None
    return values if values.is_unique else None


def _pair_key(base: pd.DataFrame, new: pd.DataFrame, key: str, pairing: Pairing) -> tuple[str | None, str]:
    """The column the runs pair on (None: unpaired) and a sentence saying why."""
    if pairing == "unpaired":
        return None, "unpaired (as asked)"
    candidates = ["trace_id", "file", "path", "path+trace_id"] if key == "auto" else [key]
    overlap: tuple[str, int, int, int] | None = None  # the first key the runs share in part
    for name in candidates:
        left, right = _keyed(base, name), _keyed(new, name)
        if left is None or right is None:
            continue
        same = set(left) == set(right)
        shared = len(set(left) & set(right))
        if same or (pairing == "paired" and shared):
            return name, f"paired by {name} ({shared} tasks in both runs)"
        if shared and overlap is None:
            overlap = (name, shared, len(set(left)) - shared, len(set(right)) - shared)
    if pairing == "paired":
        raise EvaluationError(f"cannot pair the runs: no key among {candidates} is unique in both and shared")
    if overlap is not None:
        name, shared, base_only, new_only = overlap
        return None, (
            f"unpaired: the runs cover different tasks (by {name}: {shared} in both, {base_only} only in the base, "
            f"{new_only} only in the new run; --pairing paired compares the {shared} shared)"
        )
    return None, "unpaired: the runs share no task (no trace_id, file name or path in both)"


def _wilson(present: int, n: int, level: float) -> tuple[float, float]:
    from mast.analysis import _wilson as wilson

    low, high = wilson(present, n, level)
    return (math.nan, math.nan) if low is None or high is None else (low, high)


def _paired(b: int, c: int, n: int, z: float) -> tuple[float, float, float, float]:
    """Difference, Agresti-Min interval and McNemar's exact p for ``b`` gains and ``c`` losses among ``n`` pairs."""
    from statsmodels.stats.contingency_tables import mcnemar

    if n == 0:
        return math.nan, math.nan, math.nan, math.nan
    difference = (b - c) / n
    # Agresti & Min (2005): add 0.5 to each of the four cells, then a Wald interval.
    bb, cc, nn = b + 0.5, c + 0.5, n + 2.0
    centre = (bb - cc) / nn
    se = math.sqrt(max((bb + cc) - (bb - cc) ** 2 / nn, 0.0)) / nn
    low, high = max(-1.0, centre - z * se), min(1.0, centre + z * se)
    # Exact McNemar: the binomial test of b gains against c losses (only the tasks that changed count).
    p = 1.0 if b + c == 0 else float(mcnemar([[0, b], [c, 0]], exact=True).pvalue)
    return difference, low, high, p


def _unpaired(k_base: int, n_base: int, k_new: int, n_new: int, level: float) -> tuple[float, float, float, float]:
    """Difference, Newcombe interval and score-test p for two independent proportions."""
    from statsmodels.stats.proportion import confint_proportions_2indep, test_proportions_2indep

    if n_base == 0 or n_new == 0:
        return math.nan, math.nan, math.nan, math.nan
    difference = k_new / n_new - k_base / n_base
    # statsmodels also works out an odds ratio we do not use, dividing by zero when a proportion is
    # 0 or 1: the warning it prints says nothing about the difference, so it is silenced here.
    with np.errstate(divide="ignore", invalid="ignore"):
        low, high = confint_proportions_2indep(k_new, n_new, k_base, n_base, method="newcomb", compare="diff",
                                               alpha=1 - level)
        if k_base == k_new == 0 or (k_base == n_base and k_new == n_new):
            return difference, float(low), float(high), 1.0
        p = float(test_proportions_2indep(k_new, n_new, k_base, n_base, method="score", compare="diff").pvalue)
    return difference, float(low), float(high), p


def diff(
    base: RunSource,
    new: RunSource,
    *,
    key: str = "auto",
    pairing: Pairing = "auto",
    level: float = 0.95,
    codes: Sequence[str] | None = None,
    taxonomy: Taxonomy | None = None,
) -> pd.DataFrame:
    """Per mode: prevalence in ``base`` and ``new`` with CIs, the difference with a CI and p-values.

    Args:
        base: the old run (``results.jsonl``, a results frame, or diagnoses).
        new: the new run.
        key: what identifies a task in both runs: ``auto`` (``trace_id``, else the source file name),
            ``trace_id``, ``file`` or a column of the frames.
        pairing: ``auto`` (paired when the runs cover the same tasks), ``paired`` (on the tasks in
            both), or ``unpaired``.
        level: confidence level of the intervals.
        codes: the modes to compare (default: every mode in both runs).
        taxonomy: the taxonomy of the codes (default ``mast-v3``).

    Returns:
        One row per mode: ``code, name, paired, n_base, base_present, base_prevalence, base_low,
        base_high, n_new, new_present, new_prevalence, new_low, new_high, difference, diff_low,
        diff_high, p_value, p_holm, rose, fell``. ``attrs`` holds ``pairing`` (a sentence), ``key``,
        ``note`` (the multiple-comparison note), ``changed`` (see :func:`changed_traces`), ``judges``
        (each run's judges), ``judge_note`` (a sentence when they differ, else ``None``),
        ``not_judged`` (``{"base": n, "new": n}``, the traces left out because they were not judged,
        such as a Scout scan's errors) and ``not_judged_note`` (a sentence when any was, else ``None``).

    Raises:
        EvaluationError: unreadable runs, unknown codes, or ``pairing="paired"`` with no shared key.
    """
    from statistics import NormalDist

    if not 0 < level < 1:
        raise EvaluationError("level must be between 0 and 1")
    tax = taxonomy or load_taxonomy()
    (old, old_left), (fresh, fresh_left) = _frame(base, tax), _frame(new, tax)
    wanted = [c for c in tax.codes if c in old.columns and c in fresh.columns]
    if codes is not None:
        unknown = [c for c in codes if c not in wanted]
        if unknown:
            raise EvaluationError(f"mode(s) {', '.join(unknown)} not in both runs")
        wanted = [c for c in wanted if c in codes]
    pair_on, why = _pair_key(old, fresh, key, pairing)
    z = NormalDist().inv_cdf(0.5 + level / 2)
    rows: list[dict[str, Any]] = []
    changed: list[dict[str, Any]] = []
    joined = None
    if pair_on is not None:
        left = old.assign(_key=_keyed(old, pair_on))
        right = fresh.assign(_key=_keyed(fresh, pair_on))
        joined = left[["_key", *wanted]].merge(right[["_key", *wanted]], on="_key", suffixes=("_base", "_new"))
        if "source_path" in fresh.columns:  # the file name beside a hashed id, for the changed list
            names = dict(zip(right["_key"], fresh["source_path"].map(
                lambda p: Path(str(p)).name if isinstance(p, str) and p else None), strict=True))
            joined["_file"] = joined["_key"].map(names)
    for code in wanted:
        row = _mode_row(code, tax, old, fresh, joined, level, z, changed)
        rows.append(row)
    frame = pd.DataFrame.from_records(rows)
    if not frame.empty:
        has_p = frame["p_value"].notna()
        frame["p_holm"] = np.nan
        if has_p.any():
            frame.loc[has_p, "p_holm"] = holm(frame.loc[has_p, "p_value"].to_numpy(float))
    alpha = 1 - level
    tested = int(frame["p_value"].notna().sum()) if not frame.empty else 0
    judges = (_judges(old), _judges(fresh))
    frame.attrs = {
        "judges": list(judges),
        "judge_note": (
            f"the runs were labelled by different judges ({' / '.join(judges[0]) or '?'} -> "
            f"{' / '.join(judges[1]) or '?'}): a change here compares the judges, not the agent"
            if judges[0] != judges[1] else None),
        "pairing": why,
        "key": pair_on,
        "level": level,
        "note": (
            f"{tested} modes compared at once: at alpha {alpha:g} about {tested * alpha:.1f} of them would "
            "look significant by chance if nothing changed; read p_holm (Holm-adjusted) before acting on one mode."
        ),
        "changed": changed,
        "not_judged": {"base": old_left, "new": fresh_left},
        "not_judged_note": (
            f"left out as not judged (errors, skips): {old_left} trace(s) of the base run, {fresh_left} of the new"
            if old_left or fresh_left else None),
    }
    return frame


def _judges(frame: pd.DataFrame) -> list[str]:
    """The judges (model, else kind) that labelled a run's rows, sorted."""
    for column in ("judge_model", "judge_kind"):
        if column in frame.columns and frame[column].notna().any():
            return sorted(str(v) for v in frame[column].dropna().unique())
    return []


def _mode_row(
    code: str, tax: Taxonomy, old: pd.DataFrame, fresh: pd.DataFrame, joined: pd.DataFrame | None,
    level: float, z: float, changed: list[dict[str, Any]],
) -> dict[str, Any]:
    k_base, n_base = int(old[code].fillna(False).astype(bool).sum()), int(old[code].notna().sum())
    k_new, n_new = int(fresh[code].fillna(False).astype(bool).sum()), int(fresh[code].notna().sum())
    rose = fell = 0
    if joined is not None:
        both = joined[joined[f"{code}_base"].notna() & joined[f"{code}_new"].notna()]
        files = dict(zip(both["_key"], both["_file"], strict=True)) if "_file" in both.columns else {}
        was, now = both[f"{code}_base"].astype(bool), both[f"{code}_new"].astype(bool)
        rose, fell = int((~was & now).sum()), int((was & ~now).sum())
        difference, low, high, p = _paired(rose, fell, len(both), z)
        for task, before, after in zip(both["_key"], was, now, strict=True):
            if before != after:
                changed.append({"key": task, "code": code, "base": bool(before), "new": bool(after),
                                "file": files.get(task)})
    else:
        difference, low, high, p = _unpaired(k_base, n_base, k_new, n_new, level)
    base_low, base_high = _wilson(k_base, n_base, level)
    new_low, new_high = _wilson(k_new, n_new, level)
    return {
        "code": code, "name": tax.mode(code).name, "paired": joined is not None,
        "n_base": n_base, "base_present": k_base, "base_prevalence": k_base / n_base if n_base else math.nan,
        "base_low": base_low, "base_high": base_high,
        "n_new": n_new, "new_present": k_new, "new_prevalence": k_new / n_new if n_new else math.nan,
        "new_low": new_low, "new_high": new_high,
        "difference": difference, "diff_low": low, "diff_high": high, "p_value": p, "rose": rose, "fell": fell,
    }


def holm(p_values: np.ndarray) -> np.ndarray:
    """Holm's step-down adjusted p-values (same order as given).

    Written out rather than taken from statsmodels, whose ``multipletests`` runs a full garbage
    collection on every call (~0.4 s each in a loop).
    """
    m = len(p_values)
    order = np.argsort(p_values, kind="stable")
    stepped = np.minimum(1.0, (m - np.arange(m)) * p_values[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(stepped)
    return adjusted


def changed_traces(result: pd.DataFrame) -> pd.DataFrame:
    """The tasks whose verdict changed between the runs (paired diffs only): ``key, code, base, new, file``.

    ``file`` is the new run's source file name for the task (``None`` when unknown).
    """
    return pd.DataFrame.from_records(result.attrs.get("changed", []), columns=["key", "code", "base", "new", "file"])


def worse_modes(result: pd.DataFrame, codes: Sequence[str], *, threshold: float = 0.05) -> list[str]:
    """The listed modes whose rise is significant.

    Significant: the difference is above 0 and its Holm-adjusted p (over the listed modes only) is
    below ``threshold``.

    Raises:
        EvaluationError: a listed code that the diff does not hold.
    """
    unknown = [c for c in codes if c not in set(result["code"])]
    if unknown:
        raise EvaluationError(f"--fail-if-worse: mode(s) {', '.join(unknown)} not compared (not in both runs)")
    rows = result[result["code"].isin(codes) & result["p_value"].notna()]
    if rows.empty:
        return []
    adjusted = holm(rows["p_value"].to_numpy(float))
    return [code for code, d, p in zip(rows["code"], rows["difference"], adjusted, strict=True) if d > 0 and p < threshold]
