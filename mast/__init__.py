"""mast: tell why AI agent runs fail.

Read agent traces from the frameworks people use, label them with the MAST failure taxonomy
(Cemri et al. 2025) through any LLM or offline detectors, and measure agreement with humans.

The package is the pipeline; each layer imports only the layers below it (``pyproject.toml``
``[tool.importlinter]`` holds the contract and ``tests/test_layers.py`` checks it)::

    cli                      the command line (nothing imports it)
    report | validation | discovery    one HTML page | a judge against humans | your own failure modes
    calibration              sharper definitions of the modes the judge gets wrong on your gold
    analysis | datasets      prevalence, co-occurrence, first failures | the MAD dataset
    evaluation               agreement with gold labels (never reaches the judge's backend)
    engines                  label(): files and stores -> an engine by name -> results file + sinks
    batch | testing          many traces, resumable, within a budget | FakeLLMServer
    sinks                    where verdicts go besides the results file (Phoenix, MLflow, OTel)
    judge                    one trace -> Diagnosis (judge/backend.py alone imports litellm)
    normalize | redact       source formats -> Trace | secrets out
    diagnosis                the result schema
    taxonomy | trace         the modes as data | the trace schema
    _render                  a trace as the judge's transcript
    _json, errors, ...       canonical JSON and hashes, the error tree

Every public name below is loaded on first use, so ``import mast`` (and ``import mast.trace``, or
any lower layer) loads nothing it does not need.

Example:
    >>> import mast
    >>> trace = mast.load_trace([{"role": "user", "content": "fix the failing test"}])
    >>> len(trace.steps)
    1
"""

from importlib import import_module as _import_module
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

from mast.__about__ import __version__

if _TYPE_CHECKING:  # what the names below resolve to, for type checkers and editors
    from mast import analysis, datasets
    from mast.batch import aclassify_many, classify_many
    from mast.calibration import calibrate
    from mast.diagnosis import Diagnosis
    from mast.discovery import discover
    from mast.engines import label
    from mast.errors import (
        EvaluationError,
        JudgeAPIError,
        JudgeError,
        JudgeOutputError,
        MastError,
        TaxonomyError,
        TraceFormatError,
        UsageError,
    )
    from mast.evaluation import (
        AttributionReport,
        EvaluationReport,
        compare_judges,
        evaluate,
        evaluate_attribution,
        read_labels,
        to_dataframe,
    )
    from mast.judge import Judge, JudgeConfig, aclassify, classify
    from mast.judge.detectors import detectors_diagnosis, run_detectors
    from mast.normalize import iter_traces, load_trace, load_traces
    from mast.redact import redact_text, redact_trace
    from mast.taxonomy import Taxonomy, load_taxonomy
    from mast.trace import Step, Trace

# Every public name is loaded on first use, so `import mast.trace` (or any lower layer) loads
# nothing above it, and `import mast` stays quick: the judge, the batch core and the evaluation
# side (scikit-learn, statsmodels) are imported only when a name from them is asked for.
_LAZY = {
    "AttributionReport": "mast.evaluation",
    "Diagnosis": "mast.diagnosis",
    "EvaluationError": "mast.errors",
    "EvaluationReport": "mast.evaluation",
    "Judge": "mast.judge",
    "JudgeAPIError": "mast.errors",
    "JudgeConfig": "mast.judge",
    "JudgeError": "mast.errors",
    "JudgeOutputError": "mast.errors",
    "MastError": "mast.errors",
    "Step": "mast.trace",
    "Taxonomy": "mast.taxonomy",
    "TaxonomyError": "mast.errors",
    "Trace": "mast.trace",
    "TraceFormatError": "mast.errors",
    "UsageError": "mast.errors",
    "aclassify": "mast.judge",
    "aclassify_many": "mast.batch",
    "analysis": "mast",
    "calibrate": "mast.calibration",
    "classify": "mast.judge",
    "classify_many": "mast.batch",
    "compare_judges": "mast.evaluation",
    "datasets": "mast",
    "detectors_diagnosis": "mast.judge.detectors",
    "discover": "mast.discovery",
    "evaluate": "mast.evaluation",
    "evaluate_attribution": "mast.evaluation",
    "iter_traces": "mast.normalize",
    "label": "mast.engines",
    "load_taxonomy": "mast.taxonomy",
    "load_trace": "mast.normalize",
    "load_traces": "mast.normalize",
    "read_labels": "mast.evaluation",
    "redact_text": "mast.redact",
    "redact_trace": "mast.redact",
    "run_detectors": "mast.judge.detectors",
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


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = [
    "AttributionReport",
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
    "calibrate",
    "classify",
    "classify_many",
    "compare_judges",
    "datasets",
    "detectors_diagnosis",
    "discover",
    "evaluate",
    "evaluate_attribution",
    "iter_traces",
    "label",
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
