"""The result contract: a :class:`Diagnosis` per trace, as written to ``results.jsonl``.

Field names are a contract other tools read; change them only with a new ``schema_version``.
``present: null`` always means "not assessed", never "absent".
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from mast.taxonomy import Taxonomy

DIAGNOSIS_SCHEMA_VERSION: Final = "mast-diagnosis/1"

DiagnosisStatus = Literal["judged", "unjudgeable", "error"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class Evidence(_Model):
    """A quote from the trace supporting a verdict."""

    step: int | None = None
    """The ``[S<n>]`` step the quote comes from."""
    quote: str = ""
    """Verbatim text from that step."""
    verified: bool = False
    """True when the quote was found in the cited step (whitespace-insensitive)."""


class ModeVerdict(_Model):
    """The judge's verdict on one failure mode."""

    code: str
    """Mode code (``1.3``)."""
    name: str
    """Mode name from the taxonomy."""
    category: str
    """Category id (``FC1``)."""
    present: bool | None = None
    """True: the failure occurs; False: it does not; None: not assessed."""
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    """How sure the judge is (0..1), when it says."""
    evidence: list[Evidence] = Field(default_factory=list)
    """Quotes supporting the verdict."""
    explanation: str = ""
    """Why the judge decided so."""


class FirstFailure(_Model):
    """Where the run first went wrong, and who was responsible."""

    step: int | None = None
    """Step index of the decisive error."""
    agent: str | None = None
    """Agent responsible."""
    code: str | None = None
    """Failure mode of that error, when one applies."""
    explanation: str = ""
    """What went wrong there."""


class JudgeInfo(_Model):
    """Which judge produced a diagnosis, with everything that changes its answer."""

    kind: str = "llm"
    """``llm``, ``detectors``, ``both``..."""
    model: str | None = None
    """Model string (litellm form) for LLM judges."""
    prompt_version: str | None = None
    """Version of the prompt template."""
    prompt_hash: str | None = None
    """sha256 of the static part of the rendered prompt."""
    taxonomy_version: str
    """Taxonomy the verdicts refer to."""
    strategy: str | None = None
    """``single``, ``chunked``, ``rules``..."""
    params: dict[str, Any] = Field(default_factory=dict)
    """Sampling and other parameters that change the answer."""


class SourceRef(_Model):
    """Where the judged trace came from."""

    path: str | None = None
    format: str | None = None
    record: int | None = None


class DiagnosisUsage(_Model):
    """What judging this trace cost."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    """Dollars, from litellm's price table; ``None`` when the model's price is unknown."""
    latency_s: float = 0.0
    """Wall time spent judging."""
    llm_calls: int = 0
    """Calls made, re-asks and chunk windows included (0 when cached)."""
    cached: bool = False
    """True when the answer came from the cache without a call."""
    cached_input_tokens: int = 0
    """Input tokens the provider read from its prompt cache (OpenAI ``cached_tokens``, Anthropic
    ``cache_read_input_tokens``); part of ``input_tokens``, priced at the cached rate."""
    cache_creation_input_tokens: int = 0
    """Input tokens written to the provider's prompt cache (Anthropic ``cache_creation_input_tokens``);
    part of ``input_tokens``, priced at the cache-write rate."""
    list_cost_usd: float | None = None
    """What the same tokens cost at the model's list price, without batch or cache discounts
    (``None`` when the price is unknown or no call was made)."""
    batch_api: bool = False
    """True when the calls went through the provider's batch API (priced at its batch rates)."""


class ErrorInfo(_Model):
    """Why a trace ended in ``error`` or ``unjudgeable``."""

    type: str
    message: str


class Diagnosis(_Model):
    """Why one agent run failed, per the judge."""

    schema_version: Literal["mast-diagnosis/1"] = DIAGNOSIS_SCHEMA_VERSION
    trace_id: str
    """Id of the judged trace."""
    source: SourceRef = Field(default_factory=SourceRef)
    """Where the trace came from."""
    trace_hash: str | None = None
    """Content hash of the judged trace (see :meth:`mast.trace.Trace.content_hash`)."""
    status: DiagnosisStatus = "judged"
    """``judged``; ``unjudgeable`` (could not be judged within limits); ``error`` (a failure)."""
    error: ErrorInfo | None = None
    """Why the status is not ``judged``."""
    judge: JudgeInfo
    """The judge and its configuration."""
    failure_modes: list[ModeVerdict] = Field(default_factory=list)
    """One verdict per mode of the taxonomy, in taxonomy order."""
    task_completed: bool | None = None
    """Whether the run achieved its task, when the judge could tell."""
    first_failure: FirstFailure | None = None
    """Where the run first went wrong."""
    summary: str = ""
    """A short readable account of what went wrong."""
    usage: DiagnosisUsage = Field(default_factory=DiagnosisUsage)
    """Tokens, cost, latency and calls spent on this trace."""
    warnings: list[str] = Field(default_factory=list)
    """Anything the user should know (caps, unverified quotes, redactions...)."""
    redactions: dict[str, int] = Field(default_factory=dict)
    """How many secrets of each kind were replaced before the trace left the process."""

    @property
    def present_codes(self) -> list[str]:
        """Codes of the modes judged present."""
        return [m.code for m in self.failure_modes if m.present]

    def verdict(self, code: str) -> ModeVerdict:
        """The verdict for one mode code."""
        for m in self.failure_modes:
            if m.code == code:
                return m
        raise KeyError(code)


def empty_verdicts(taxonomy: Taxonomy) -> list[ModeVerdict]:
    """One not-assessed verdict per mode, in taxonomy order."""
    return [
        ModeVerdict(code=m.code, name=m.name, category=m.category, present=None)
        for m in taxonomy.modes
    ]
