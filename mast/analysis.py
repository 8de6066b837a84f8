"""What the labels say: prevalence, modes per trace, fatal vs benign modes, where runs first fail.

Every function takes a **results frame**: one row per trace, a column per mode code holding
True/False (missing = not assessed), plus any metadata columns (``framework``, ``model``,
``outcome``...). :func:`results_frame` builds one from a ``results.jsonl``, diagnoses, a label file
or table, and joins metadata; columns named ``FM-1.3`` or ``1_3`` are recognised as modes.

The analyses follow what published MAST studies report: prevalence per mode and category (the
paper's Figure/Table 6), modes per failed trace and which modes separate failed from successful
runs (the IBM + Berkeley IT-Bench study), and where the first failure falls (Who&When).

Example:
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"trace_id": ["a", "b"], "1.3": [True, False], "3.2": [True, True]})
    >>> prevalence(frame).set_index("code")["prevalence"].to_dict()
    {'1.3': 0.5, '3.2': 1.0}
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from mast.diagnosis import Diagnosis
from mast.errors import EvaluationError
from mast.taxonomy import Taxonomy, load_taxonomy, normalize_code

__all__ = [
    "category_shares",
    "cooccurrence",
    "diff",
    "fatal_vs_benign",
    "first_failure_histogram",
    "mode_columns",
    "modes_per_trace",
    "outcome_success",
    "prevalence",
    "results_frame",
]

_SUCCESS = frozenset({"success", "succeeded", "successful", "pass", "passed", "ok", "resolved", "solved", "correct",
                      "true", "1", "yes"})
_FAILURE = frozenset({"failure", "failed", "fail", "error", "unresolved", "unsolved", "incorrect", "wrong", "false",
                      "0", "no"})


# --- the frame --------------------------------------------------------------------------------


def results_frame(
    source: pd.DataFrame | str | os.PathLike[str] | Iterable[Diagnosis],
    *,
    metadata: pd.DataFrame | None = None,
    taxonomy: Taxonomy | None = None,
    role: Literal["pred", "gold"] = "gold",
) -> pd.DataFrame:
    """A results frame (one row per trace, a nullable boolean column per mode) with metadata joined on ``trace_id``.

    ``source`` may be a wide frame (e.g. :func:`mast.to_dataframe`), a long label table (several
    annotators are majority-voted), a path to ``results.jsonl`` or any label file, or diagnoses.
    ``role`` picks the side of files holding both a judge's and humans' labels (mast-lint).
    """
    tax = taxonomy or load_taxonomy()
    from mast.evaluation.labels import read_labels
    from mast.results import is_results_path, iter_results, to_dataframe

    if isinstance(source, pd.DataFrame):
        frame = _wide(source, tax) if not {"code", "present"} <= set(source.columns) else _pivot(source, tax)
    elif isinstance(source, str | os.PathLike):
        from pathlib import Path

        from mast.evaluation.labels import sniff_format

        path = Path(source)
        if not is_results_path(path):
            raise EvaluationError(f"{path}: no such file")
        if sniff_format(path) == "diagnoses":
            frame = to_dataframe(iter_results(path), taxonomy=tax)  # streamed: only the columns are held
        else:  # mast-lint files hold a judge's and humans' labels; the humans' are read here
            frame = _pivot(read_labels(path, role=role, taxonomy=tax), tax)
    else:
        frame = to_dataframe(list(source), taxonomy=tax)
    if metadata is not None:
        if "trace_id" not in metadata.columns:
            raise EvaluationError("metadata needs a trace_id column to join on")
        extra = [c for c in metadata.columns if c == "trace_id" or c not in frame.columns]
        frame = frame.merge(metadata[extra].astype({"trace_id": str}), on="trace_id", how="left")
    return frame


def _wide(frame: pd.DataFrame, taxonomy: Taxonomy) -> pd.DataFrame:
    renames = {}
    for column in frame.columns:
        try:
            code = normalize_code(column)
        except ValueError:
            continue
        if code in taxonomy.codes:
            renames[column] = code
    if not renames:
        raise EvaluationError("the frame has no failure-mode columns (expected columns such as 1.1 or FM-1.1)")
    out = frame.rename(columns=renames)
    return out.astype({code: "boolean" for code in renames.values()})


def _pivot(table: pd.DataFrame, taxonomy: Taxonomy) -> pd.DataFrame:
    from mast.evaluation.agreement import majority_vote
    from mast.evaluation.labels import check_label_table

    cells = majority_vote(check_label_table(table, taxonomy=taxonomy))
    wide = cells.pivot(index="trace_id", columns="code", values="present")
    codes = [c for c in taxonomy.codes if c in wide.columns]
    return wide[codes].astype("boolean").reset_index().rename_axis(columns=None)


def mode_columns(frame: pd.DataFrame, taxonomy: Taxonomy | None = None) -> list[str]:
    """The mode columns of a results frame, in taxonomy order."""
    tax = taxonomy or load_taxonomy()
    codes = [code for code in tax.codes if code in frame.columns]
    if not codes:
        raise EvaluationError("the frame has no failure-mode columns; build it with results_frame()")
    return codes


def _judged(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["status"] == "judged"] if "status" in frame.columns else frame


def _groups(frame: pd.DataFrame, by: str | Sequence[str] | None) -> list[tuple[dict[str, Any], pd.DataFrame]]:
    if by is None:
        return [({}, frame)]
    keys = [by] if isinstance(by, str) else list(by)
    missing = [k for k in keys if k not in frame.columns]
    if missing:
        raise EvaluationError(f"no column {missing[0]!r} to group by (columns: {', '.join(map(str, frame.columns))})")
    return [(dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True)), part)
            for key, part in frame.groupby(keys, dropna=False, sort=True)]


def _wilson(present: int, n: int, level: float) -> tuple[float, float] | tuple[None, None]:
    if n == 0:
        return None, None
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(present, n, alpha=1 - level, method="wilson")
    # The Wilson bounds are exactly 0 (or 1) at k = 0 (k = n); keep float noise out of the tables.
    return (0.0 if present == 0 else float(low)), (1.0 if present == n else float(high))


# --- prevalence -------------------------------------------------------------------------------


def prevalence(
    frame: pd.DataFrame,
    by: str | Sequence[str] | None = None,
    *,
    level: Literal["mode", "category", "both"] = "mode",
    confidence: float = 0.95,
    taxonomy: Taxonomy | None = None,
) -> pd.DataFrame:
    """Share of traces with each mode (or category: any of its modes) present, with Wilson CIs.

    Only judged traces and assessed cells count. Columns: the ``by`` keys, ``level``, ``code``,
    ``name``, ``n_assessed``, ``n_present``, ``prevalence``, ``low``, ``high``.
    """
    tax = taxonomy or load_taxonomy()
    codes = mode_columns(frame, tax)
    rows = []
    for keys, part in _groups(_judged(frame), by):
        units: list[tuple[str, str, str, list[str]]] = []
        if level in ("mode", "both"):
            units += [("mode", code, tax.mode(code).name, [code]) for code in codes]
        if level in ("category", "both"):
            for cat, name in tax.categories.items():
                members = [m.code for m in tax.modes if m.category == cat and m.code in codes]
                if members:
                    units.append(("category", cat, name, members))
        for kind, code, name, members in units:
            block = part[members]
            assessed = block.notna().any(axis=1)
            present = block.fillna(False).astype(bool).any(axis=1) & assessed
            n, k = int(assessed.sum()), int(present.sum())
            low, high = _wilson(k, n, confidence)
            rows.append({**keys, "level": kind, "code": code, "name": name, "n_assessed": n, "n_present": k,
                         "prevalence": k / n if n else np.nan, "low": low, "high": high})
    columns = [*(_keys(by)), "level", "code", "name", "n_assessed", "n_present", "prevalence", "low", "high"]
    out = pd.DataFrame.from_records(rows, columns=columns)
    return out.astype({"low": float, "high": float}) if not out.empty else out


def _keys(by: str | Sequence[str] | None) -> list[str]:
    return [] if by is None else ([by] if isinstance(by, str) else list(by))


def category_shares(
    frame: pd.DataFrame, by: str | Sequence[str] | None = None, *, taxonomy: Taxonomy | None = None
) -> pd.DataFrame:
    """Each category's share of all failure labels (the paper reports FC1 41.8%, FC2 36.9%, FC3 21.3%)."""
    tax = taxonomy or load_taxonomy()
    codes = mode_columns(frame, tax)
    rows = []
    for keys, part in _groups(_judged(frame), by):
        counts = part[codes].fillna(False).astype(bool).sum(axis=0)
        total = int(counts.sum())
        for cat, name in tax.categories.items():
            k = int(sum(counts[m.code] for m in tax.modes if m.category == cat and m.code in codes))
            rows.append({**keys, "category": cat, "name": name, "n_labels": k, "share": k / total if total else np.nan})
    return pd.DataFrame.from_records(rows, columns=[*_keys(by), "category", "name", "n_labels", "share"])


def cooccurrence(frame: pd.DataFrame, *, taxonomy: Taxonomy | None = None) -> pd.DataFrame:
    """Mode x mode count of traces where both modes are present (the diagonal: traces with the mode)."""
    codes = mode_columns(frame, taxonomy)
    present = _judged(frame)[codes].fillna(False).astype(int).to_numpy()
    return pd.DataFrame(present.T @ present, index=codes, columns=codes)


# --- modes per trace, outcome ----------------------------------------------------------------


def outcome_success(values: pd.Series, *, threshold: float | None = None) -> pd.Series:
    """Read an outcome column as success (True) / failure (False) / unknown (<NA>).

    Booleans are taken as "succeeded"; text such as ``success``/``failed``/``pass``/``fail``
    is recognised; numbers need ``threshold`` (score >= threshold is a success).
    """
    def one(value: Any) -> bool | None:
        if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
            return None
        if isinstance(value, bool | np.bool_):
            return bool(value)
        if isinstance(value, int | float | np.integer | np.floating) and threshold is not None:
            return bool(float(value) >= threshold)
        text = str(value).strip().lower()
        if text in _SUCCESS:
            return True
        if text in _FAILURE:
            return False
        if threshold is not None:
            try:
                return float(text) >= threshold
            except ValueError:
                pass
        hint = "" if threshold is not None else " (numeric scores need a threshold)"
        raise EvaluationError(f"outcome {value!r} is neither success nor failure{hint}")

    return pd.Series([one(v) for v in values], index=values.index, dtype="boolean")


def modes_per_trace(
    frame: pd.DataFrame,
    by: str | Sequence[str] | None = None,
    *,
    outcome: str | None = None,
    threshold: float | None = None,
    taxonomy: Taxonomy | None = None,
) -> pd.DataFrame:
    """Mean and median number of modes present per trace; with ``outcome``, also per failed and successful trace.

    The IT-Bench study reports modes per failed trace: Gemini-3-Flash 2.6, Kimi-K2 4.7, GPT-OSS-120B 5.3.
    """
    codes = mode_columns(frame, taxonomy)
    data = _judged(frame).copy()
    data["_n"] = data[codes].fillna(False).astype(int).sum(axis=1)
    if outcome is not None:
        if outcome not in data.columns:
            raise EvaluationError(f"no outcome column {outcome!r}")
        data["_ok"] = outcome_success(data[outcome], threshold=threshold)
    rows = []
    for keys, part in _groups(data, by):
        row: dict[str, Any] = {**keys, "n_traces": len(part), "mean_modes": _mean(part["_n"]),
                               "median_modes": float(part["_n"].median()) if len(part) else np.nan}
        if outcome is not None:
            failed, ok = part[part["_ok"] == False], part[part["_ok"] == True]  # noqa: E712 (nullable boolean)
            row |= {"n_failed": len(failed), "mean_modes_failed": _mean(failed["_n"]),
                    "n_success": len(ok), "mean_modes_success": _mean(ok["_n"])}
        rows.append(row)
    return pd.DataFrame.from_records(rows)


def _mean(values: pd.Series) -> float:
    return float(values.mean()) if len(values) else np.nan


def fatal_vs_benign(
    frame: pd.DataFrame,
    outcome: str,
    *,
    threshold: float | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    taxonomy: Taxonomy | None = None,
) -> pd.DataFrame:
    """Per mode: prevalence in failed vs successful traces, their difference and ratio, with bootstrap CIs.

    Failed and successful traces are resampled separately (seeded). ``verdict``: ``fatal`` when the
    difference's CI lies above 0 (the mode marks failing runs); ``benign`` when the mode also occurs
    in successful runs and the CI does not lie above 0; ``inconclusive`` when it occurs only in
    failed runs without a clear difference; ``unseen`` when it never occurs. A ratio with no
    successful occurrence is undefined (NaN).
    """
    tax = taxonomy or load_taxonomy()
    codes = mode_columns(frame, tax)
    data = _judged(frame)
    if outcome not in data.columns:
        raise EvaluationError(f"no outcome column {outcome!r}")
    ok = outcome_success(data[outcome], threshold=threshold)
    failed = data[(ok == False).to_numpy(bool)]  # noqa: E712
    success = data[(ok == True).to_numpy(bool)]  # noqa: E712
    if failed.empty or success.empty:
        raise EvaluationError(
            f"fatal vs benign needs failed and successful traces; found {len(failed)} failed, {len(success)} successful"
        )
    f_present, f_assessed = _matrices(failed, codes)
    s_present, s_assessed = _matrices(success, codes)
    prev_f = _share(f_present.sum(0), f_assessed.sum(0))
    prev_s = _share(s_present.sum(0), s_assessed.sum(0))
    diff = prev_f - prev_s
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(prev_s > 0, prev_f / prev_s, np.nan)
    diff_ci = ratio_ci = np.full((2, len(codes)), np.nan)
    if n_boot:
        from mast.evaluation.metrics import bootstrap_weights

        wf = bootstrap_weights(len(failed), n_boot, seed)
        ws = bootstrap_weights(len(success), n_boot, seed + 1)
        bf = _share(wf @ f_present, wf @ f_assessed)
        bs = _share(ws @ s_present, ws @ s_assessed)
        tail = (1 - confidence) / 2 * 100
        with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
            # an all-undefined column (a mode never assessed) rightly gives NaN bounds
            warnings.filterwarnings("ignore", message="All-NaN slice encountered", category=RuntimeWarning)
            diff_ci = np.nanpercentile(bf - bs, [tail, 100 - tail], axis=0)
            ratio_ci = np.nanpercentile(np.where(bs > 0, bf / bs, np.nan), [tail, 100 - tail], axis=0)
        ratio_ci = np.where(np.isnan(ratio), np.nan, ratio_ci)
    rows = []
    for j, code in enumerate(codes):
        seen_s, seen_f = s_present[:, j].sum() > 0, f_present[:, j].sum() > 0
        if not seen_s and not seen_f:
            verdict = "unseen"
        elif n_boot and diff_ci[0, j] > 0:
            verdict = "fatal"
        elif seen_s:
            verdict = "benign"
        else:
            verdict = "inconclusive"
        rows.append({"code": code, "name": tax.mode(code).name, "n_failed": int(f_assessed[:, j].sum()),
                     "n_success": int(s_assessed[:, j].sum()), "prev_failed": prev_f[j], "prev_success": prev_s[j],
                     "difference": diff[j], "diff_low": diff_ci[0, j], "diff_high": diff_ci[1, j],
                     "ratio": ratio[j], "ratio_low": ratio_ci[0, j], "ratio_high": ratio_ci[1, j], "verdict": verdict})
    return pd.DataFrame.from_records(rows)


def _matrices(part: pd.DataFrame, codes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    block = part[codes]
    assessed = block.notna().to_numpy(float)
    present = block.fillna(False).astype(bool).to_numpy(float) * assessed
    return present, assessed


def _share(present: np.ndarray, assessed: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(assessed > 0, present / assessed, np.nan)


# --- first failure ----------------------------------------------------------------------------


def first_failure_histogram(
    frame: pd.DataFrame,
    by: Literal["step", "agent", "relative"] = "step",
    *,
    bins: int = 10,
    n_steps: str = "n_steps",
) -> pd.DataFrame:
    """How often the first failure falls at each step, on each agent, or at each tenth of the run.

    ``relative`` divides ``first_failure_step`` by the trace length in column ``n_steps`` (join it
    as metadata) into ``bins`` equal bins. Traces with no first failure are left out.
    """
    column = "first_failure_agent" if by == "agent" else "first_failure_step"
    if column not in frame.columns:
        raise EvaluationError(f"no {column} column; build the frame from diagnoses with results_frame()")
    data = _judged(frame)
    data = data[data[column].notna()]
    if by == "agent":
        counts = data[column].astype(str).value_counts()
        return counts.rename_axis("agent").reset_index(name="count")
    if by == "step":
        counts = data[column].astype(int).value_counts().sort_index()
        return counts.rename_axis("step").reset_index(name="count")
    if n_steps not in data.columns:
        raise EvaluationError(f"relative positions need the trace length in a {n_steps!r} column (join it as metadata)")
    data = data[data[n_steps].notna() & (data[n_steps].astype(float) > 0)]
    position = (data[column].astype(float) / data[n_steps].astype(float)).clip(0, 1 - 1e-9)
    edges = np.linspace(0, 1, bins + 1)
    counts_arr, _ = np.histogram(position, bins=edges)
    return pd.DataFrame({"bin_start": edges[:-1], "bin_end": edges[1:], "count": counts_arr})


# --- two runs ---------------------------------------------------------------------------------


def diff(base: Any, new: Any, **options: Any) -> pd.DataFrame:
    """Per mode, prevalence in two labelled runs and their difference with CIs (paired when possible).

    See :func:`mast.regression.diff` for the options and the statistics; this is the same function.

    Example:
        >>> frame = mast.analysis.diff("v1.jsonl", "v2.jsonl")     # doctest: +SKIP
        >>> frame[["code", "base_prevalence", "new_prevalence", "difference", "p_value"]]  # doctest: +SKIP
    """
    from mast.regression import diff as compare

    return compare(base, new, **options)
