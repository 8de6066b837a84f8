"""mast: tell why AI agent runs fail.

Read agent traces from the frameworks people use, label them with the MAST failure taxonomy
(Cemri et al. 2025) through any LLM or offline detectors, and measure agreement with humans.

Example:
    >>> import mast
    >>> trace = mast.load_trace([{"role": "user", "content": "fix the failing test"}])
    >>> len(trace.steps)
    1
"""

import os as _os
from importlib import import_module as _import_module
from typing import Any as _Any

# litellm downloads its model price map at import unless told to use the copy it ships.
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mast.__about__ import __version__  # noqa: E402
from mast.batch import aclassify_many, classify_many  # noqa: E402
from mast.diagnosis import Diagnosis  # noqa: E402
from mast.errors import (  # noqa: E402
    BudgetExceeded,
    EvaluationError,
    JudgeAPIError,
    JudgeError,
    JudgeOutputError,
    MastError,
    TaxonomyError,
    TraceFormatError,
    UsageError,
)
from mast.judge import Judge, JudgeConfig, aclassify, classify  # noqa: E402
from mast.judge.detectors import detectors_diagnosis, run_detectors  # noqa: E402
from mast.normalize import iter_traces, load_trace, load_traces  # noqa: E402
from mast.redact import redact_text, redact_trace  # noqa: E402
from mast.taxonomy import Taxonomy, load_taxonomy  # noqa: E402
from mast.trace import Step, Trace  # noqa: E402

# The evaluation side pulls in scikit-learn and statsmodels (~1.5 s); load it on first use so
# `mast label` and `import mast` stay quick.
_LAZY = {
    "AttributionReport": "mast.evaluation",
    "EvaluationReport": "mast.evaluation",
    "analysis": "mast",
    "compare_judges": "mast.evaluation",
    "datasets": "mast",
    "evaluate": "mast.evaluation",
    "evaluate_attribution": "mast.evaluation",
    "read_labels": "mast.evaluation",
    "to_dataframe": "mast.evaluation",
    "validate": "mast.validation",
}


def __getattr__(name: str) -> _Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mast' has no attribute {name!r}")
    value = _import_module(f"mast.{name}") if module == "mast" else getattr(_import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "AttributionReport",
    "BudgetExceeded",
    "Diagnosis",
    "EvaluationError",
    "EvaluationReport",
    "Judge",
    "JudgeAPIError",
    "JudgeConfig",
    "JudgeError",
    "JudgeOutputError",
    "MastError",
    "Step",
    "Taxonomy",
    "TaxonomyError",
    "Trace",
    "TraceFormatError",
    "UsageError",
    "__version__",
    "aclassify",
    "aclassify_many",
    "analysis",
    "classify",
    "classify_many",
    "compare_judges",
    "datasets",
    "detectors_diagnosis",
    "evaluate",
    "evaluate_attribution",
    "iter_traces",
    "load_taxonomy",
    "load_trace",
    "load_traces",
    "read_labels",
    "redact_text",
    "redact_trace",
    "run_detectors",
    "to_dataframe",
    "validate",
]
