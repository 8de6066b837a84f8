"""Validate a judge: label human-labelled traces with it and report how far to trust it, mode by mode.

:func:`validate` labels the shipped validation sets (:func:`mast.datasets.validation_sets`) with exactly
the judge configuration given (resumable, cached, budget-capped), evaluates the verdicts against the
human gold with bootstrap CIs, sets them beside reference points (the paper's o1 judge, mast-lint's
judge, the offline detectors) and the humans' own agreement, and writes a plain-words verdict.
:func:`compare_validations` puts two validation runs side by side with paired bootstrap differences.

Example:
    >>> report = validate(model="openai/gpt-4.1-mini", output="validation/")   # doctest: +SKIP
    >>> print(report.verdict)                                                   # doctest: +SKIP
"""

from mast.validation.compare import compare_validations
from mast.validation.models import ModeFinding, Reference, SetResult, ValidationPlan, ValidationReport
from mast.validation.run import avalidate, validate

__all__ = [
    "ModeFinding",
    "Reference",
    "SetResult",
    "ValidationPlan",
    "ValidationReport",
    "avalidate",
    "compare_validations",
    "validate",
]
