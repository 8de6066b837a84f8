"""``evaluate(pred, gold)``: how far a judge agrees with human labels, with uncertainty.

Both sides are read into label tables (:mod:`mast.evaluation.labels`), several annotators per cell are
reduced to a majority vote (:mod:`mast.evaluation.agreement`), and the cells assessed on **both** sides
are compared; cells assessed on one side only are left out and counted in
:class:`~mast.evaluation.report.Exclusions`.

Example:
    >>> import pandas as pd
    >>> pred = pd.DataFrame({"trace_id": ["t1", "t2"], "code": ["1.3", "1.3"], "present": [1, 0]})
    >>> gold = pd.DataFrame({"trace_id": ["t1", "t2"], "code": ["1.3", "1.3"], "present": [1, 1]})
    >>> report = evaluate(pred, gold, n_boot=0)
    >>> report.pooled.tp, report.pooled.fn, report.pooled.recall
    (1, 1, 0.5)
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from mast.errors import EvaluationError
from mast.evaluation.agreement import TieRule, inter_annotator, majority_vote
from mast.evaluation.labels import SHARED_IDS_ATTR, LabelFormat, LabelSource, read_labels
from mast.evaluation.metrics import (
    COUNT_ORDER,
    METRICS,
    binary_metrics,
    bootstrap_weights,
    confusion,
    metrics_from_counts,
    nanmean_or_none,
    percentile_interval,
)
from mast.evaluation.report import (
    LISTED_IDS,
    AnnotatorAgreement,
    BootstrapInfo,
    Disagreement,
    EvaluationReport,
    Exclusions,
    Interval,
    ModeAgreement,
)
from mast.evaluation.sourcekeys import SOURCE_MAP_ATTR, resolve_source_keys
from mast.taxonomy import Taxonomy, load_taxonomy

WIDE_CI = 0.2
"""A pooled kappa CI wider than this is called wide in the report's warnings."""

Kind = Literal["pred-vs-gold", "judge-vs-judge"]


def evaluate(
    pred: LabelSource,
    gold: LabelSource,
    *,
    taxonomy: Taxonomy | None = None,
    n_boot: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    ties: TieRule = "exclude",
    pred_format: LabelFormat = "auto",
    gold_format: LabelFormat = "auto",
    kind: Kind = "pred-vs-gold",
) -> EvaluationReport:
    """Compare predicted labels with gold labels, per mode and pooled, with bootstrap CIs.

    Args:
        pred: predictions: a ``results.jsonl`` path, a label file, a label DataFrame or diagnoses.
        gold: the reference, in any form :func:`~mast.evaluation.labels.read_labels` reads.
        taxonomy: taxonomy of the codes (default ``mast-v3``).
        n_boot: bootstrap resamples of traces for the confidence intervals (0: no intervals).
        seed: seed of the resampling, so a report can be reproduced exactly.
        level: confidence level of the intervals.
        ties: what a tied majority vote becomes: ``exclude`` (not assessed), ``present``, ``absent``.
        pred_format: format of ``pred`` when it is a file (``auto`` detects it).
        gold_format: format of ``gold`` when it is a file.
        kind: ``judge-vs-judge`` when ``gold`` is a second judge (see :func:`compare_judges`).

    Raises:
        EvaluationError: labels that cannot be read, or no cell assessed on both sides.
    """
    if n_boot < 0:
        raise EvaluationError("n_boot must be 0 or more")
    if not 0 < level < 1:
        raise EvaluationError("level must be between 0 and 1")
    tax = taxonomy or load_taxonomy()
    gold_role: Literal["pred", "gold"] = "pred" if kind == "judge-vs-judge" else "gold"
    pred_table = read_labels(pred, format=pred_format, role="pred", taxonomy=tax)
    gold_table = read_labels(gold, format=gold_format, role=gold_role, taxonomy=tax)
    # Gold keyed by source path (+ record) takes the trace ids of the predictions from those files.
    gold_table = resolve_source_keys(gold_table, pred_table.attrs.get(SOURCE_MAP_ATTR, {}))

    iaa: dict[str, AnnotatorAgreement] = {}
    for side, table in (("gold", gold_table), ("pred", pred_table)):
        agreement = inter_annotator(table, codes=tax.codes)
        if agreement is not None:
            iaa[side] = agreement
    del table
    pred_cells = majority_vote(pred_table, ties=ties)
    gold_cells = majority_vote(gold_table, ties=ties)
    pred_source, gold_source = str(pred_table.attrs.get("source", "")), str(gold_table.attrs.get("source", ""))
    # Results of different files under one trace id are merged into one trace: said, never silent.
    shared_ids = [*pred_table.attrs.get(SHARED_IDS_ATTR, []), *gold_table.attrs.get(SHARED_IDS_ATTR, [])]
    del pred_table, gold_table

    merged = pred_cells.merge(gold_cells, on=["trace_id", "code"], how="outer", suffixes=("_pred", "_gold"),
                              indicator=True)
    both = merged[merged["_merge"] == "both"].reset_index(drop=True)
    if both.empty:
        raise EvaluationError(
            f"no (trace, mode) cell is assessed in both {pred_source} and {gold_source}; do the trace ids match? "
            f"(predicted: {_some(pred_cells['trace_id'])}; gold: {_some(gold_cells['trace_id'])})"
        )
    pred_traces, gold_traces = set(pred_cells["trace_id"]), set(gold_cells["trace_id"])
    exclusions = Exclusions(
        pred_only_cells=int((merged["_merge"] == "left_only").sum()),
        gold_only_cells=int((merged["_merge"] == "right_only").sum()),
        pred_only_traces=len(pred_traces - gold_traces),
        gold_only_traces=len(gold_traces - pred_traces),
        pred_only_ids=sorted(map(str, pred_traces - gold_traces))[:LISTED_IDS],
        gold_only_ids=sorted(map(str, gold_traces - pred_traces))[:LISTED_IDS],
        pred_ties=int(pred_cells.attrs.get("ties_excluded", 0)),
        gold_ties=int(gold_cells.attrs.get("ties_excluded", 0)),
    )

    seen = set(pred_cells["code"]) | set(gold_cells["code"])
    codes = [c for c in tax.codes if c in seen]
    del merged, pred_cells, gold_cells  # a results file's cells: let them go before the per-mode work
    rows_of = both.groupby("code", sort=False).indices
    per_mode = [_mode_entry(both.take(np.asarray(rows_of.get(code, []), dtype=np.intp)), code, tax.mode(code).name)
                for code in codes]
    pooled = _mode_entry(both, "pooled", "all modes")
    macro = {metric: nanmean_or_none([m.value(metric) for m in per_mode if m.n]) for metric in METRICS}
    macro_ci: dict[str, Interval | None] = {}
    if n_boot:
        macro_ci = _bootstrap(both, codes, per_mode, pooled, macro, n_boot=n_boot, seed=seed, level=level)

    warnings = list(shared_ids)
    if kind == "pred-vs-gold" and pooled.n < 100:
        kappa_ci = pooled.ci.get("kappa")
        if kappa_ci is None:
            warnings.append(f"only {pooled.n} cells compared and no CI computed: read kappa with care")
        elif kappa_ci.high - kappa_ci.low > WIDE_CI:
            warnings.append(f"only {pooled.n} cells compared: intervals are wide; read kappa with its CI")
    return EvaluationReport(
        kind=kind,
        pred_source=pred_source,
        gold_source=gold_source,
        taxonomy_version=tax.version,
        n_traces=int(both["trace_id"].nunique()),
        n_cells=len(both),
        pooled=pooled,
        macro=macro,
        macro_ci=macro_ci,
        per_mode=per_mode,
        exclusions=exclusions,
        tie_rule=ties,
        bootstrap=BootstrapInfo(n_boot=n_boot, seed=seed, level=level),
        inter_annotator=iaa,
        disagreements=_disagreements(both, tax),
        warnings=warnings,
    )


def compare_judges(a: LabelSource, b: LabelSource, **options: object) -> EvaluationReport:
    """Agreement of two judges with no gold.

    ``b`` is the reference, so kappa and accuracy are the symmetric numbers to read; the
    disagreement table lists every cell where they differ.
    """
    return evaluate(a, b, kind="judge-vs-judge", **options)  # type: ignore[arg-type]


def _mode_entry(cells: pd.DataFrame, code: str, name: str) -> ModeAgreement:
    counts = confusion(cells["present_gold"].to_numpy(bool), cells["present_pred"].to_numpy(bool))
    values = binary_metrics(**counts)
    return ModeAgreement(code=code, name=name, n=len(cells), n_traces=int(cells["trace_id"].nunique()),
                         **counts, **values)


def _count_cube(cells: pd.DataFrame, codes: list[str]) -> tuple[list[str], np.ndarray]:
    """Counts per trace and mode: shape (traces, modes, 4) in :data:`COUNT_ORDER`."""
    traces = sorted(set(cells["trace_id"]))
    t_index = {t: i for i, t in enumerate(traces)}
    m_index = {c: i for i, c in enumerate(codes)}
    cube = np.zeros((len(traces), len(codes), len(COUNT_ORDER)))
    gold = cells["present_gold"].to_numpy(bool)
    pred = cells["present_pred"].to_numpy(bool)
    outcome = np.where(gold & pred, 0, np.where(~gold & pred, 1, np.where(gold & ~pred, 2, 3)))
    rows = cells["trace_id"].map(t_index).to_numpy()
    cols = cells["code"].map(m_index).to_numpy()
    np.add.at(cube, (rows, cols, outcome), 1.0)
    return traces, cube


def _bootstrap(
    cells: pd.DataFrame,
    codes: list[str],
    per_mode: list[ModeAgreement],
    pooled: ModeAgreement,
    macro: dict[str, float | None],
    *,
    n_boot: int,
    seed: int,
    level: float,
) -> dict[str, Interval | None]:
    traces, cube = _count_cube(cells, codes)
    weights = bootstrap_weights(len(traces), n_boot, seed)
    resampled = np.einsum("bt,tmk->bmk", weights, cube)  # (n_boot, modes, 4)
    # A resample in which one side happens not to vary counts as kappa 0 (no agreement beyond chance),
    # not as a missing replicate: dropping those would lift the lower bound exactly where the data are
    # thinnest. Whether a figure is estimable at all is the point estimate's question (its CI is None).
    mode_values = metrics_from_counts(resampled, estimable_only=False)
    pooled_values = metrics_from_counts(resampled.sum(axis=1), estimable_only=False)

    def interval(values: np.ndarray, point: float | None) -> Interval | None:
        if point is None:
            return None
        bounds = percentile_interval(values, level)
        return Interval(low=bounds[0], high=bounds[1]) if bounds else None

    for j, entry in enumerate(per_mode):
        entry.ci = {metric: interval(mode_values[metric][:, j], entry.value(metric)) for metric in METRICS}
    pooled.ci = {metric: interval(pooled_values[metric], pooled.value(metric)) for metric in METRICS}
    present = resampled.sum(axis=2) > 0  # modes with any cell in the resample
    macro_ci: dict[str, Interval | None] = {}
    for metric in METRICS:
        values = np.where(present, mode_values[metric], np.nan)
        with np.errstate(invalid="ignore"):
            defined = ~np.all(np.isnan(values), axis=1)
            means = np.full(n_boot, np.nan)
            means[defined] = np.nanmean(values[defined], axis=1)
        macro_ci[metric] = interval(means, macro.get(metric))
    return macro_ci


def _disagreements(cells: pd.DataFrame, taxonomy: Taxonomy) -> list[Disagreement]:
    differ = cells[cells["present_pred"] != cells["present_gold"]]
    out = []
    order = {code: i for i, code in enumerate(taxonomy.codes)}
    for row in sorted(differ.to_dict("records"), key=lambda r: (str(r["trace_id"]), order[r["code"]])):
        confidence = row["confidence_pred"]
        out.append(
            Disagreement(
                trace_id=str(row["trace_id"]),
                code=row["code"],
                name=taxonomy.mode(row["code"]).name,
                pred=bool(row["present_pred"]),
                gold=bool(row["present_gold"]),
                kind="FP" if row["present_pred"] else "FN",
                pred_confidence=None if pd.isna(confidence) else float(confidence),
                pred_evidence=str(row["evidence_pred"] or ""),
                gold_evidence=str(row["evidence_gold"] or ""),
                gold_votes=_votes(row["votes_gold"]),
                pred_votes=_votes(row["votes_pred"]),
            )
        )
    return out


def _votes(value: object) -> str | None:
    """Keep vote counts only where several annotators voted."""
    if not isinstance(value, str) or value.endswith("/1"):
        return None
    return value


def _some(ids: pd.Series, shown: int = 3) -> str:
    """A few of the ids of one side, to compare with the other's."""
    unique = sorted(map(str, ids.unique()))
    more = f", ... ({len(unique)} in all)" if len(unique) > shown else ""
    return ", ".join(unique[:shown]) + more if unique else "none"
