"""Label the validation sets with one judge configuration and evaluate the verdicts against the humans.

Each set gets its own ``<output>/<set>/results.jsonl``, written by the batch engine, so a killed run
resumes where it stopped and a rerun with the same judge makes no call; the judge's answer cache
serves repeated traces. The figures are written next to them: ``summary.json`` (everything),
``per_mode.csv``, ``disagreements.csv``, ``verdict.txt`` and ``report.html``.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from mast._sync import run_sync
from mast.batch import aclassify_many
from mast.datasets import ValidationSet, validation_root, validation_sets
from mast.diagnosis import Diagnosis
from mast.errors import EvaluationError, TraceFormatError
from mast.evaluation import evaluate, evaluate_attribution, majority_vote
from mast.evaluation.agreement import inter_annotator
from mast.evaluation.report import EvaluationReport
from mast.judge import Judge, JudgeConfig
from mast.normalize import iter_traces
from mast.taxonomy import Taxonomy
from mast.trace import Trace
from mast.validation.models import (
    Reference,
    SetPlan,
    SetResult,
    ValidationPlan,
    ValidationReport,
)
from mast.validation.references import PAPER_O1, from_evaluation, references_for
from mast.validation.verdict import mode_findings, verdict_text
from mast.validation.write import write_outputs


def validate(**options: Any) -> ValidationReport | ValidationPlan:
    """Blocking :func:`avalidate`; inside a running event loop (a notebook) it runs in a worker thread."""
    return run_sync(avalidate(**options))


async def avalidate(
    *,
    sets: Sequence[str] | None = None,
    output: str | os.PathLike[str] = "validation",
    limit: int | None = None,
    data_dir: str | os.PathLike[str] | None = None,
    dry_run: bool = False,
    budget_usd: float | None = None,
    concurrency: int = 8,
    n_boot: int = 1000,
    seed: int = 0,
    k: int = 1,
    config: JudgeConfig | None = None,
    **options: Any,
) -> ValidationReport | ValidationPlan:
    """Label the chosen validation sets with this judge, evaluate, and write the figures to ``output``.

    Args:
        sets: names from :func:`mast.datasets.validation_sets` (default: all).
        output: folder for the per-set results and the figures.
        limit: label at most this many traces per set (the first ones, in file order).
        data_dir: folder holding the sets (default: ``MAST_VALIDATION_DIR``, else the per-user cache,
            downloading the sets' pinned files from their public homes on first use).
        dry_run: count traces and estimate tokens and cost; call nothing, write nothing.
        budget_usd: stop starting traces once this much has been spent, over all sets.
        concurrency: traces judged at the same time.
        n_boot: bootstrap resamples for the CIs.
        seed: seed of the bootstrap.
        k: tolerance in steps of the "within ±k" localisation accuracy.
        config: the judge's configuration; built from ``options`` and ``MAST_*`` variables when ``None``.
        **options: judge options (``model=``, ``api_base=``, ``judge=``, ...), as for :func:`mast.classify`.
    """
    chosen = validation_sets(list(sets) if sets else None)
    root = validation_root(data_dir)
    judge = Judge(config, **options) if config is not None or options else Judge()
    inputs = {s.name: _traces(s, root, limit) for s in chosen}
    info = judge.info.model_dump(mode="json")
    if dry_run:
        async with judge:
            return ValidationPlan(judge=info, sets=[_plan(judge, name, traces) for name, traces in inputs.items()])

    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    spent = 0.0
    results: list[SetResult] = []
    labelled: dict[str, list[Diagnosis]] = {}
    for spec in chosen:
        remaining = None if budget_usd is None else max(0.0, budget_usd - spent)
        path = out / spec.name / "results.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        diagnoses = await aclassify_many(
            inputs[spec.name], config=judge.config, output=path, concurrency=concurrency, budget_usd=remaining
        )
        spent += sum(d.usage.cost_usd or 0.0 for d in diagnoses if not d.usage.cached)
        labelled[spec.name] = diagnoses
        results.append(await _evaluate_set(spec, root, diagnoses, path, judge, n_boot=n_boot, seed=seed, k=k))

    pooled, human = _pooled(chosen, root, labelled, n_boot=n_boot, seed=seed, taxonomy=judge.taxonomy)
    modes = mode_findings(pooled, human) if pooled is not None else []
    references: list[Reference] = [*PAPER_O1]
    for spec, result in zip(chosen, results, strict=True):
        references += references_for(spec, root, n_boot=n_boot, seed=seed)
        if result.detectors is not None:
            references.append(from_evaluation("offline detectors", "mast.judge.detectors",
                                              f"{spec.name} (same traces)", result.detectors))
    report = ValidationReport(
        judge=info, data_dir=str(root) if root is not None else "", output_dir=str(out), sets=results, pooled=pooled, modes=modes,
        references=references,
    )
    report.verdict = verdict_text(report)
    write_outputs(report, out)
    return report


def _traces(spec: ValidationSet, root: Path | None, limit: int | None) -> list[Trace]:
    traces: list[Trace] = []
    for path in spec.trace_paths(root):
        for trace in iter_traces(path):
            if isinstance(trace, TraceFormatError):
                raise EvaluationError(f"validation set {spec.name}: {trace}")
            if limit is not None and len(traces) >= limit:
                return traces
            traces.append(trace)
    return traces


def _plan(judge: Judge, name: str, traces: list[Trace]) -> SetPlan:
    estimates = [judge.estimate(t) for t in traces]
    costs = [e.cost_usd for e in estimates]
    return SetPlan(
        name=name,
        n_traces=len(traces),
        input_tokens=sum(e.input_tokens for e in estimates),
        output_tokens=sum(e.output_tokens for e in estimates),
        cost_usd=None if any(c is None for c in costs) else float(sum(c for c in costs if c is not None)),
    )


async def _evaluate_set(
    spec: ValidationSet, root: Path | None, diagnoses: list[Diagnosis], path: Path, judge: Judge, *, n_boot: int, seed: int, k: int
) -> SetResult:
    judged = [d for d in diagnoses if d.status == "judged"]
    result = SetResult(
        name=spec.name, description=spec.description, licence=spec.licence, n_traces=len(diagnoses),
        n_judged=len(judged), n_errors=sum(d.status == "error" for d in diagnoses), results=str(path),
        mapping_note=spec.mapping_note,
    )
    if not judged:
        return result
    ids = {d.trace_id for d in diagnoses}
    if spec.gold:
        gold = spec.gold_labels(root)
        result.unmapped_cells = int(gold.attrs.get("unmapped_cells", 0))
        gold = gold[gold["trace_id"].isin(ids)]
        # The judge's taxonomy may extend MAST-14 (mast discover): the gold's cells are the 14 modes.
        result.evaluation = evaluate(judged, gold, taxonomy=judge.taxonomy, n_boot=n_boot, seed=seed)
        if judge.config.kind != "detectors":
            # The detectors on the same traces: the floor any LLM judge should beat. They cost nothing.
            floor = await aclassify_many(_same_traces(spec, root, ids), judge="detectors")
            result.detectors = evaluate([d for d in floor if d.status == "judged"], gold, n_boot=n_boot, seed=seed)
    if spec.attribution:
        gold_attr = spec.attribution_gold(root)
        gold_attr = gold_attr[gold_attr["trace_id"].isin(ids)]
        result.attribution = evaluate_attribution(judged, gold_attr, k=k, n_boot=n_boot, seed=seed)
    return result


def _same_traces(spec: ValidationSet, root: Path | None, ids: set[str]) -> list[Trace]:
    return [t for t in _traces(spec, root, None) if t.trace_id in ids]


def _pooled(
    chosen: Sequence[ValidationSet], root: Path | None, labelled: dict[str, list[Diagnosis]], *, n_boot: int, seed: int,
    taxonomy: Taxonomy | None = None,
) -> tuple[EvaluationReport | None, dict[str, float | None]]:
    """All mode-labelled sets in one evaluation (ids prefixed by set, since sets may reuse ids)."""
    preds: list[Diagnosis] = []
    golds: list[pd.DataFrame] = []
    voters: list[pd.DataFrame] = []
    for spec in chosen:
        if not spec.gold:
            continue
        judged = [d for d in labelled[spec.name] if d.status == "judged"]
        ids = {d.trace_id for d in judged}
        preds += [d.model_copy(update={"trace_id": f"{spec.name}:{d.trace_id}"}) for d in judged]
        gold = spec.gold_labels(root)
        gold = gold[gold["trace_id"].isin(ids)].copy()
        gold["trace_id"] = spec.name + ":" + gold["trace_id"].astype(str)
        if spec.annotators > 1:
            # Sets differ in how many people labelled them: pool their majorities, and measure the
            # humans' own agreement on the sets that have several annotators.
            voters.append(gold)
            gold = majority_vote(gold)[["trace_id", "code", "present"]]
        golds.append(gold)
    if not preds:
        return None, {}
    gold_all = pd.concat(golds, ignore_index=True)
    report = evaluate(preds, gold_all, taxonomy=taxonomy, n_boot=n_boot, seed=seed)
    human: dict[str, float | None] = {}
    if voters:
        agreement = inter_annotator(pd.concat(voters, ignore_index=True))
        if agreement is not None:
            human = {m.code: m.fleiss_kappa for m in agreement.per_mode}
            human["pooled"] = agreement.pooled.fleiss_kappa
    return report, human

