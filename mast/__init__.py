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

# litellm downloads its model price map at import unless told to use the copy it ships.
_os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from mast.__about__ import __version__  # noqa: E402
from mast.diagnosis import Diagnosis  # noqa: E402
from mast.errors import (  # noqa: E402
    EvaluationError,
    JudgeAPIError,
    JudgeError,
    JudgeOutputError,
    MastError,
    TraceFormatError,
    UsageError,
)
from mast.normalize import iter_traces, load_trace, load_traces  # noqa: E402
from mast.taxonomy import Taxonomy, load_taxonomy  # noqa: E402
from mast.trace import Step, Trace  # noqa: E402

__all__ = [
    "Diagnosis",
    "EvaluationError",
    "JudgeAPIError",
    "JudgeError",
    "JudgeOutputError",
    "MastError",
    "Step",
    "Taxonomy",
    "Trace",
    "TraceFormatError",
    "UsageError",
    "__version__",
    "iter_traces",
    "load_taxonomy",
    "load_trace",
    "load_traces",
]
