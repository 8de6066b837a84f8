"""Calibrate the judge on your reviewed traces: sharpen the modes it gets wrong, kept only when held-out traces agree.

:func:`calibrate` (``mast calibrate GOLD TRACES --results RESULTS -o DIR``) splits the gold that
``mast review`` writes into dev and test (seeded, stratified by trace: the split of ``mast validate
--gold --split``), asks the model once per mode with dev disagreements for a sharper definition,
rules and one or two examples quoted from the dev traces (each verified in its step, else dropped),
then re-judges the test traces with the current taxonomy and with each candidate (only that mode
changed). A change is accepted only when its test kappa improves and the paired bootstrap CI of the
difference (resampling traces) lies above zero; too few test positives is said, not decided.

Outputs in the folder: ``taxonomy.yaml`` (usable as ``mast label --taxonomy``), ``report.json``,
``report.html``; ``work/`` holds what a rerun resumes from (a rerun sends nothing).

Example:
    >>> import mast
    >>> r = mast.calibrate("gold.jsonl", ["runs/"], "calibrated", results="results.jsonl",
    ...                    model="openai/gpt-4.1-mini")                           # doctest: +SKIP
    >>> [(m.code, m.decision) for m in r.modes]                                    # doctest: +SKIP
"""

from mast.calibration.models import CalibrationPlan, CalibrationResult, ModeDecision, Proposal, SplitFigures
from mast.calibration.run import CalibrateOptions, acalibrate, calibrate, plan_calibration

__all__ = [
    "CalibrateOptions",
    "CalibrationPlan",
    "CalibrationResult",
    "ModeDecision",
    "Proposal",
    "SplitFigures",
    "acalibrate",
    "calibrate",
    "plan_calibration",
]
