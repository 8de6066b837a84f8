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


def _unset(value: object) -> bool:
    """True for an added field's ``None``, left out of the output.

    Fields added after ``mast-diagnosis/1`` (``jury``, ``votes``, ``cited_by``, ``hints``...) are written only when
    set: a single judge's result is written exactly as before and stays readable by older readers.
    """
    return value is None


class Evidence(_Model):
    """A quote from the trace supporting a verdict."""

    step: int | None = None
    """The ``[S<n>]`` step the quote comes from."""
    quote: str = ""
    """Verbatim text from that step."""
    verified: bool = False
    """True when the quote was found in the cited step (whitespace-insensitive)."""
    cited_by: list[str] | None = Field(default=None, exclude_if=_unset)
    """Jury results: the jurors who cited this quote (``None`` for a single judge)."""


class ModeVotes(_Model):
    """How the jurors (or samples) of a jury voted on one mode."""

    present: int = 0
    """Votes for present."""
    absent: int = 0
    """Votes for absent."""
    not_assessed: int = 0
    """Jurors that answered but gave no verdict on the mode, or failed."""
    present_by: list[str] = Field(default_factory=list)
    """Names of the jurors that voted present."""
    tie: bool = False
    """True when present and absent votes were equal (see the reducer's tie rule)."""


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
    votes: ModeVotes | None = Field(default=None, exclude_if=_unset)
    """Jury results: the votes behind the verdict (``None`` for a single judge)."""
    hints: list[str] | None = Field(default=None, exclude_if=_unset)
    """What the offline detectors saw that bears on this mode without deciding it (one line each):
    shown beside the verdicts, never counted as one. ``None`` when there is none."""


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
    mast_version: str | None = Field(default=None, exclude_if=_unset)
    """The mast release that wrote the result (``None`` in results written before it was recorded)."""


class SourceRef(_Model):
    """Where the judged trace came from."""

    path: str | None = None
    """The source as the run was given it (relative to where it ran, or a store's URL)."""
    format: str | None = None
    record: int | None = None
    absolute_path: str | None = Field(default=None, exclude_if=_unset)
    """The source file's absolute path when the result was written (a local file only)."""
    results_relative_path: str | None = Field(default=None, exclude_if=_unset)
    """The source file's path relative to the results file's folder, still right when both move together."""


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


class JuryAgreement(_Model):
    """How far the jurors of one trace agree, over the modes every juror assessed."""

    n_jurors: int
    """Jurors whose verdicts were compared."""
    n_modes: int
    """Modes assessed by every one of them."""
    raw: float | None = None
    """Observed agreement: the share of agreeing juror pairs, averaged over those modes (1 = unanimous)."""
    unanimous: float | None = None
    """Share of those modes on which all jurors gave the same verdict."""
    fleiss_kappa: float | None = None
    """Fleiss' kappa over those modes; ``None`` when undefined (e.g. every vote the same)."""


class JurorVerdict(_Model):
    """One juror's (or one sample's) own result, kept whole."""

    name: str
    """The juror's name (its model, or the name given in the jury file; ``@k`` marks sample k)."""
    model: str | None = None
    """The juror's model (``None`` for the offline detectors)."""
    sample: int | None = None
    """Which sample of the juror this is, when it was asked more than once."""
    diagnosis: Diagnosis
    """The juror's full diagnosis (its status says whether it answered)."""


class JuryRecord(_Model):
    """How a jury (several models, or several samples of one) reached a diagnosis."""

    jurors: list[str]
    """Names of every juror asked, in order."""
    reducer: str
    """``majority``, ``any``, ``all`` or ``at_least:N`` (see :mod:`mast.judge.reduce`)."""
    quorum: int
    """Jurors that had to answer for the trace to count as judged."""
    answered: list[str] = Field(default_factory=list)
    """Jurors that gave a verdict."""
    failed: list[str] = Field(default_factory=list)
    """Jurors that ended in error or unjudgeable, each with its reason."""
    agreement: JuryAgreement | None = None
    """Agreement among the jurors that answered."""
    first_failure_note: str = ""
    """Why ``first_failure`` is what it is (e.g. no step named by a majority)."""
    verdicts: list[JurorVerdict] = Field(default_factory=list)
    """Every juror's own diagnosis."""


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
    jury: JuryRecord | None = Field(default=None, exclude_if=_unset)
    """When several jurors or samples judged: who they were, how they voted, how far they agree."""

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

    # -- for people reading results in a REPL or a notebook --

    def _first_failure_text(self) -> str | None:
        first = self.first_failure
        if first is None:
            return None
        step = f"S{first.step}" if first.step is not None else "step ?"
        return f"{step} by {first.agent or '?'}" + (f" ({first.code})" if first.code else "")

    def __str__(self) -> str:
        """``run.json#2: judged, modes 1.3, 3.2; first failure S4 by Coder (1.3)``."""
        where = self.source.path or self.trace_id
        if self.source.path is not None and self.source.record is not None:
            where += f"#{self.source.record}"
        if self.status != "judged":
            reason = f": {self.error.message}" if self.error is not None else ""
            return f"{where}: {self.status}{reason}"
        codes = self.present_codes
        text = f"{where}: judged, " + (f"modes {', '.join(codes)}" if codes else "no failure mode found")
        first = self._first_failure_text()
        return text + (f"; first failure {first}" if first else "")

    def __repr__(self) -> str:
        """Short: id, status, present codes and first failure (``model_dump()`` has everything)."""
        first = self._first_failure_text()
        parts = [f"trace_id={self.trace_id!r}", f"status={self.status!r}", f"present={self.present_codes!r}"]
        if first:
            parts.append(f"first_failure={first!r}")
        if self.error is not None:
            parts.append(f"error={self.error.message!r}")
        return f"Diagnosis({', '.join(parts)})"

    def _repr_html_(self) -> str:
        """A small table for notebooks: the modes found with confidence and explanation."""
        from html import escape

        rows = "".join(
            f"<tr><td>{escape(v.code)}</td><td>{escape(v.name)}</td>"
            f"<td>{'' if v.confidence is None else f'{v.confidence:.2f}'}</td><td>{escape(v.explanation)}</td></tr>"
            for v in self.failure_modes
            if v.present
        )
        table = (
            "<table><thead><tr><th>mode</th><th>name</th><th>conf</th><th>explanation</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
            if rows
            else ""
        )
        summary = f"<p>{escape(self.summary)}</p>" if self.summary else ""
        return f"<div><b>{escape(str(self))}</b>{table}{summary}</div>"


JurorVerdict.model_rebuild()


def empty_verdicts(taxonomy: Taxonomy) -> list[ModeVerdict]:
    """One not-assessed verdict per mode, in taxonomy order."""
    return [
        ModeVerdict(code=m.code, name=m.name, category=m.category, present=None)
        for m in taxonomy.modes
    ]
