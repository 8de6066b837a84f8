"""Evaluation: agreement of predictions with gold labels, and failure attribution.

* :func:`evaluate` / :func:`compare_judges`: per-mode and pooled counts, accuracy, precision,
  recall, F1 and Cohen's kappa with bootstrap CIs, majority-vote gold, inter-annotator agreement,
  and a disagreement table (:class:`EvaluationReport`).
* :func:`evaluate_attribution`: who and when the run first went wrong, against Who&When-style gold.
* :func:`read_labels`: every label source (mast results, CSV/JSONL, MAD, mast-lint) as one table.

Example:
    >>> import pandas as pd
    >>> gold = pd.DataFrame({"trace_id": ["t1"], "code": ["FM-2.6"], "present": [True]})
    >>> evaluate(gold, gold, n_boot=0).pooled.accuracy
    1.0
"""

from mast.evaluation.agreement import inter_annotator, majority_vote
from mast.evaluation.attribution import evaluate_attribution, read_attribution_gold, read_who_and_when
from mast.evaluation.core import compare_judges, evaluate
from mast.evaluation.labels import label_table, labels_from_diagnoses, read_diagnoses, read_labels
from mast.evaluation.report import AttributionReport, EvaluationReport
from mast.results import to_dataframe

__all__ = [
    "AttributionReport",
    "EvaluationReport",
    "compare_judges",
    "evaluate",
    "evaluate_attribution",
    "inter_annotator",
    "label_table",
    "labels_from_diagnoses",
    "majority_vote",
    "read_attribution_gold",
    "read_diagnoses",
    "read_labels",
    "read_who_and_when",
    "to_dataframe",
]
