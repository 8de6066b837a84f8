"""Reference points to read a judge's agreement against.

* The MAST paper's o1 judge against the human annotators (Cemri et al. 2025, Table 2): figures as
  published, on the paper's own held-out traces, not these.
* mast-lint's judge (an independent MAST judge) on the same AG2 traces, computed here from its
  published per-trace reports beside the same gold.
* The offline detectors on the same traces (added per set by the run: they cost nothing).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from mast.datasets import ValidationSet
from mast.evaluation import evaluate, read_labels
from mast.evaluation.report import EvaluationReport
from mast.validation.models import Reference

PAPER_SOURCE = "Cemri et al. 2025, 'Why Do Multi-Agent LLM Systems Fail?', Table 2"
PAPER_O1: tuple[Reference, ...] = (
    Reference(name="o1 judge (paper)", source=PAPER_SOURCE, scope="the paper's held-out traces",
              kappa=0.58, accuracy=0.89, precision=0.68, recall=0.62, f1=0.64),
    Reference(name="o1 judge, few-shot (paper)", source=PAPER_SOURCE, scope="the paper's held-out traces",
              kappa=0.77, accuracy=0.94, precision=0.833, recall=0.77, f1=0.80),
)

# mast-lint's judge reports on the AG2 runs, before the annotator reviewed them (the adjudicated
# files would flatter it).
MASTLINT_REPORTS = tuple(f"raw_judge_results{s}.json" for s in ("", "_batch2", "_batch3", "_batch4", "_batch5"))


def from_evaluation(name: str, source: str, scope: str, report: EvaluationReport) -> Reference:
    """A reference built from one of mast's own evaluations."""
    pooled = report.pooled
    ci = pooled.ci.get("kappa")
    return Reference(
        name=name, source=source, scope=scope, kappa=pooled.kappa, kappa_low=ci.low if ci else None,
        kappa_high=ci.high if ci else None, accuracy=pooled.accuracy, precision=pooled.precision,
        recall=pooled.recall, f1=pooled.f1,
    )


def references_for(spec: ValidationSet, root: Path | None, *, n_boot: int, seed: int) -> list[Reference]:
    """The reference points computed from other judges' published outputs on one validation set."""
    refs: list[Reference] = []
    if spec.gold and spec.name == "mastlint-ag2":
        folder = spec.root(root)
        files = [folder / name for name in MASTLINT_REPORTS if (folder / name).is_file()]
        if files:
            pred = pd.concat([read_labels(f, role="pred") for f in files], ignore_index=True)
            gold = pd.concat([read_labels(f, role="gold") for f in files], ignore_index=True)
            report = evaluate(pred, gold, n_boot=n_boot, seed=seed)
            refs.append(from_evaluation("mast-lint judge", spec.source, f"{spec.name} ({report.n_traces} traces)", report))
    return refs
