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

from mast.__about__ import __version__ as __version__

# The one declaration of mast's public names: type checkers read these imports, and _LAZY and
# __all__ below are built from them at run time.
if _TYPE_CHECKING:
    from mast import analysis as analysis
    from mast import datasets as datasets
    from mast.batch import aclassify_many as aclassify_many
    from mast.batch import classify_many as classify_many
    from mast.calibration import calibrate as calibrate
    from mast.diagnosis import Diagnosis as Diagnosis
    from mast.discovery import discover as discover
    from mast.engines import label as label
    from mast.errors import EvaluationError as EvaluationError
    from mast.errors import JudgeAPIError as JudgeAPIError
    from mast.errors import JudgeError as JudgeError
    from mast.errors import JudgeOutputError as JudgeOutputError
    from mast.errors import MastError as MastError
    from mast.errors import TaxonomyError as TaxonomyError
    from mast.errors import TraceFormatError as TraceFormatError
    from mast.errors import UsageError as UsageError
    from mast.evaluation import AttributionReport as AttributionReport
    from mast.evaluation import EvaluationReport as EvaluationReport
    from mast.evaluation import compare_judges as compare_judges
    from mast.evaluation import evaluate as evaluate
    from mast.evaluation import evaluate_attribution as evaluate_attribution
    from mast.evaluation import read_labels as read_labels
    from mast.evaluation import to_dataframe as to_dataframe
    from mast.judge import Judge as Judge
    from mast.judge import JudgeConfig as JudgeConfig
    from mast.judge import aclassify as aclassify
    from mast.judge import classify as classify
    from mast.judge.detectors import detectors_diagnosis as detectors_diagnosis
    from mast.judge.detectors import run_detectors as run_detectors
    from mast.normalize import iter_traces as iter_traces
    from mast.normalize import load_trace as load_trace
    from mast.normalize import load_traces as load_traces
    from mast.redact import redact_text as redact_text
    from mast.redact import redact_trace as redact_trace
    from mast.taxonomy import Taxonomy as Taxonomy
    from mast.taxonomy import load_taxonomy as load_taxonomy
    from mast.trace import Step as Step
    from mast.trace import Trace as Trace
    from mast.validation import validate as validate


def _declared() -> dict[str, str]:
    """Each public name and the module it comes from, read from the ``_TYPE_CHECKING`` block above.

    The names are declared once, as imports a type checker reads; at run time they are read back
    from this file's text, one ``from M import N as N`` line each, so the type checker's view, the
    lazy table and ``__all__`` cannot drift apart (tests/test_public_names.py checks the reading
    against the file's syntax tree). A regular expression, not :mod:`ast`: importing ``ast`` would
    cost ``import mast`` more than the rest of it does.
    """
    import re
    from pathlib import Path

    text = Path(__file__).read_text(encoding="utf-8")
    block = text[text.index("if _TYPE_CHECKING:") :].split("\n\n", 1)[0]
    return {
        name: module for module, name in re.findall(r"^    from ([\w.]+) import (\w+) as \2$", block, re.M)
    }


# Every public name is loaded on first use, so `import mast.trace` (or any lower layer) loads
# nothing above it, and `import mast` stays quick: the judge, the batch core and the evaluation
# side (scikit-learn, statsmodels) are imported only when a name from them is asked for.
_LAZY = _declared()


def __getattr__(name: str) -> _Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mast' has no attribute {name!r}")
    value = _import_module(f"mast.{name}") if module == "mast" else getattr(_import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


__all__ = sorted(["__version__", *_LAZY])  # built from the one declaration above
