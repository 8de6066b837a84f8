"""From a model's answer to a :class:`~mast.diagnosis.Diagnosis`: verdicts, verified quotes, first failure.

Reusable on their own, e.g. by a provider batch API that got the raw completion itself::

    diagnosis = diagnosis_from_completion(
        text, spec=diagnosis_spec(judge.taxonomy), trace=trace, material=prepared.material,
        taxonomy=judge.taxonomy, info=judge.info,
    )

- :func:`diagnosis_from_completion` parses and validates raw completion text (one attempt, no
  re-ask) and builds the diagnosis; :func:`diagnosis_from_answer` does the second half for an
  answer already validated (what :func:`mast.judge.structured.ask` returns).
- :func:`verdicts_from_answer` and :func:`first_failure_from_answer` check every cited quote and
  step against the text the judge saw and say in warnings what did not hold.
- :func:`merge_detectors` adds the offline detectors' evidence to the LLM's verdicts (``both``).
- :func:`judge_info` is what a diagnosis records of its judge (model, prompt, taxonomy, params);
  :func:`failed_diagnosis` and :func:`cached_diagnosis` are the other two ways a diagnosis is made.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from mast.__about__ import __version__
from mast.diagnosis import (
    Diagnosis,
    DiagnosisStatus,
    DiagnosisUsage,
    ErrorInfo,
    Evidence,
    FirstFailure,
    JudgeInfo,
    ModeVerdict,
    SourceRef,
    empty_verdicts,
)
from mast.errors import JudgeOutputError
from mast.judge.config import JudgeConfig
from mast.judge.material import Material
from mast.judge.prompt import PromptSet
from mast.judge.protocol import UsageMeter
from mast.judge.schema import AnswerInvalid, OutputSpec, mode_answers, parse_answer
from mast.taxonomy import Taxonomy, normalize_code
from mast.trace import Trace


def judge_info(
    config: JudgeConfig,
    prompts: PromptSet,
    taxonomy: Taxonomy,
    *,
    strategy: str | None = None,
    mode: str | None = None,
    **params: Any,
) -> JudgeInfo:
    """What a diagnosis of this judge records as ``judge``; ``params`` adds per-trace details (windows...)."""
    answer = config.answer_params()
    return JudgeInfo(
        kind=config.kind,
        model=config.model,
        prompt_version=prompts.version,
        prompt_hash=prompts.hash,
        taxonomy_version=taxonomy.version,
        strategy=strategy,
        mast_version=__version__,
        params={
            "temperature": answer["temperature"],
            "seed": answer["seed"],
            "max_output_tokens": answer["max_output_tokens"],
            "structured_output": mode or config.structured_output,
            "hints": config.hints,
            "redact": config.redact,
            "redact_ips": config.redact_ips,
            # Custom patterns change what the judge sees: resume compares them (their fingerprint).
            "redact_patterns": answer["redact_patterns"],
            # Who answered (without credentials) and the extra request options' fingerprint: resume
            # compares them, so results from another endpoint are judged again.
            "endpoint": answer.get("endpoint"),
            "extra": answer.get("extra"),
            **params,
        },
    )


def source_ref(trace: Trace) -> SourceRef:
    """Where the trace came from, as a diagnosis records it."""
    return SourceRef(path=trace.source.path, format=trace.source.format, record=trace.source.record)


def usage_of(meter: UsageMeter | None, started: float) -> DiagnosisUsage:
    """Tokens, dollars and calls of one judgement (``meter``), and the seconds since ``started`` (perf_counter)."""
    meter = meter or UsageMeter()
    return DiagnosisUsage(
        input_tokens=meter.input_tokens,
        output_tokens=meter.output_tokens,
        cost_usd=meter.total_cost,
        latency_s=time.perf_counter() - started,
        llm_calls=meter.calls,
        cached=False,
        cached_input_tokens=meter.cached_input_tokens,
        cache_creation_input_tokens=meter.cache_creation_input_tokens,
        list_cost_usd=meter.total_list_cost,
        batch_api=meter.batch_api,
    )


def diagnosis_from_answer(
    value: BaseModel,
    *,
    trace: Trace,
    material: Material,
    taxonomy: Taxonomy,
    info: JudgeInfo,
    trace_hash: str | None = None,
    usage: DiagnosisUsage | None = None,
    warnings: list[str] | None = None,
) -> Diagnosis:
    """A ``judged`` diagnosis from a validated answer of the diagnosis schema.

    Args:
        value: the answer (a model of :func:`~mast.judge.schema.diagnosis_spec`).
        trace: the trace judged.
        material: the text the judge saw, against which quotes are verified.
        taxonomy: the modes a verdict is expected for (a missing one is "not assessed", with a warning).
        info: the judge (:func:`judge_info`).
        trace_hash: ``trace.content_hash()`` when the caller has it already.
        usage: tokens, cost and latency; zeros when not given.
        warnings: notes gathered before the answer (cuts, re-asks...), put first.
    """
    verdicts, verdict_warnings = verdicts_from_answer(value, taxonomy, material)
    first = first_failure_from_answer(value, material, verdict_warnings, verdicts=verdicts, agents=trace_agents(trace))
    return Diagnosis(
        trace_id=trace.trace_id,
        source=source_ref(trace),
        trace_hash=trace_hash or trace.content_hash(),
        status="judged",
        judge=info,
        failure_modes=verdicts,
        task_completed=getattr(value, "task_completed", None),
        first_failure=first,
        summary=material.scrub(str(getattr(value, "summary", "") or "")),
        usage=usage or DiagnosisUsage(),
        warnings=[*(warnings or []), *verdict_warnings],
        redactions=material.redactions,
    )


def diagnosis_from_completion(
    text: str,
    *,
    spec: OutputSpec,
    trace: Trace,
    material: Material,
    taxonomy: Taxonomy,
    info: JudgeInfo,
    trace_hash: str | None = None,
    usage: DiagnosisUsage | None = None,
    warnings: list[str] | None = None,
) -> Diagnosis:
    """A ``judged`` diagnosis from a raw completion (message text or tool arguments), validated by ``spec``.

    Modes the answer leaves out become "not assessed" (there is no re-ask here).

    Raises:
        JudgeOutputError: the text is not a valid answer (carries the text as ``last_completion``).
    """
    try:
        value, notes = parse_answer(text, spec, taxonomy, require_all=False)
    except AnswerInvalid as exc:
        raise JudgeOutputError(
            f"invalid {spec.name} answer: {exc}", n_attempts=1, last_completion=text
        ) from exc
    return diagnosis_from_answer(
        value,
        trace=trace,
        material=material,
        taxonomy=taxonomy,
        info=info,
        trace_hash=trace_hash,
        usage=usage,
        warnings=[*(warnings or []), *notes],
    )


def verdicts_from_answer(
    value: BaseModel, taxonomy: Taxonomy, material: Material
) -> tuple[list[ModeVerdict], list[str]]:
    """One verdict per mode of ``taxonomy``, each quote verified against ``material``; and the warnings."""
    warnings: list[str] = []
    verdicts: list[ModeVerdict] = []
    answers = mode_answers(value, taxonomy)
    for mode in taxonomy.modes:
        answer = answers.get(mode.code)
        if answer is None:
            warnings.append(f"the judge gave no verdict for {mode.code} ({mode.name}): not assessed")
            verdicts.append(ModeVerdict(code=mode.code, name=mode.name, category=mode.category, present=None))
            continue
        evidence: list[Evidence] = []
        for item in answer.evidence:
            verified = material.verify(item.step, item.quote)
            if not verified and item.quote.strip():
                elsewhere = material.find_quote(item.quote)
                where = f" (it occurs in S{elsewhere})" if elsewhere is not None else ""
                warnings.append(f"{mode.code}: quote cited from S{item.step} not found there{where}")
            # Verified against what the judge read, then redacted like it: a quoted secret is not stored.
            evidence.append(Evidence(step=item.step, quote=material.scrub(item.quote), verified=verified))
        verdicts.append(
            ModeVerdict(
                code=mode.code,
                name=mode.name,
                category=mode.category,
                present=answer.present,
                confidence=answer.confidence,
                evidence=evidence,
                explanation=material.scrub(answer.rationale),
            )
        )
    return verdicts, warnings


_NOT_AGENTS = frozenset({"user", "human", "tool", "system", "environment"})
"""Who speaks in a trace without being one of its agents: a failure is never theirs (unless declared)."""


def trace_agents(trace: Trace) -> list[str]:
    """The agents a trace holds: its declared agents, then those its steps name, in order.

    The user, tools and the system speak in steps but are not agents a failure can be blamed on.
    """
    names = [a.name for a in trace.agents if a.name]
    names += [s.agent for s in trace.steps if s.agent and s.agent.casefold() not in _NOT_AGENTS]
    return list(dict.fromkeys(names))


def first_failure_from_answer(
    value: BaseModel,
    material: Material,
    warnings: list[str],
    *,
    verdicts: list[ModeVerdict] | None = None,
    agents: list[str] | None = None,
) -> FirstFailure | None:
    """The answer's first failure, checked against the rest of the answer and the trace; repairs warned about.

    Like a quote that is not in its step, a first failure that contradicts the verdicts is not
    taken as it is: a code the judge did not find present (or an unknown code) is dropped, a step
    the trace does not have is dropped, an agent that is not in the trace is dropped (a case or
    spacing difference is read as the trace spells it), each with a warning. With ``verdicts``
    given and no mode judged present, there is no first failure at all.
    """
    answer = getattr(value, "first_failure", None)
    if answer is None:
        return None
    present = {v.code for v in verdicts or [] if v.present}
    if verdicts is not None and not present:
        warnings.append("the answer names a first failure but judges no mode present: first failure dropped")
        return None
    code = answer.code
    if code is not None:
        try:
            code = normalize_code(code)
        except ValueError:
            warnings.append(f"first failure names {code!r}, which is not a mode code: code dropped")
            code = None
    if code is not None and verdicts is not None and code not in present:
        warnings.append(f"first failure names {code}, which the judge did not find present: code dropped")
        code = None
    step = answer.step
    if step is not None and material.step_text(step) is None:
        warnings.append(f"first failure cites step S{step}, which the trace does not have: step dropped")
        step = None
    agent = answer.agent
    if agent and agents is not None:
        spelled = {" ".join(name.split()).casefold(): name for name in agents}
        agent_key = " ".join(agent.split()).casefold()
        if agent_key in spelled:
            agent = spelled[agent_key]
        else:
            warnings.append(
                f"first failure names agent {material.scrub(agent)!r}, who is not in the trace: agent dropped"
            )
            agent = None
    return FirstFailure(
        step=step,
        agent=material.scrub(agent) if agent else agent,
        code=code,
        explanation=material.scrub(answer.explanation),
    )


def scrub_diagnosis(diagnosis: Diagnosis, scrub: Callable[[str], str]) -> Diagnosis:
    """Redact the texts of ``diagnosis`` that quote the trace (quotes, explanations, summary, first failure), in place.

    The offline detectors quote the trace as it was read; what is stored is redacted like a prompt.
    """
    for verdict in diagnosis.failure_modes:
        verdict.explanation = scrub(verdict.explanation)
        for evidence in verdict.evidence:
            evidence.quote = scrub(evidence.quote)
    diagnosis.summary = scrub(diagnosis.summary)
    first = diagnosis.first_failure
    if first is not None:
        first.explanation = scrub(first.explanation)
        first.agent = scrub(first.agent) if first.agent else first.agent
    return diagnosis


def merge_detectors(diagnosis: Diagnosis, detectors: Diagnosis) -> None:
    """``both``: keep the LLM's verdicts, add the detectors' evidence where they agree, warn where they differ."""
    by_code = {v.code: v for v in detectors.failure_modes}
    for verdict in diagnosis.failure_modes:
        found = by_code.get(verdict.code)
        if found is None or found.present is not True:
            continue
        if verdict.present:
            known = {(e.step, e.quote) for e in verdict.evidence}
            verdict.evidence.extend(e for e in found.evidence if (e.step, e.quote) not in known)
        else:
            steps = ", ".join(f"S{e.step}" for e in found.evidence if e.step is not None) or "no steps"
            diagnosis.warnings.append(
                f"detectors flagged {verdict.code} ({steps}) but the LLM judged it "
                f"{'absent' if verdict.present is False else 'not assessed'}"
            )


def failed_diagnosis(
    trace: Trace,
    *,
    status: DiagnosisStatus,
    error: ErrorInfo,
    taxonomy: Taxonomy,
    info: JudgeInfo,
    usage: DiagnosisUsage,
    trace_hash: str | None = None,
) -> Diagnosis:
    """An ``error`` or ``unjudgeable`` diagnosis: every mode not assessed, the reason in ``error``."""
    return Diagnosis(
        trace_id=trace.trace_id,
        source=source_ref(trace),
        trace_hash=trace_hash or trace.content_hash(),
        status=status,
        error=error,
        judge=info,
        failure_modes=empty_verdicts(taxonomy),
        usage=usage,
    )


def cached_diagnosis(cached: dict[str, Any], trace: Trace, started: float) -> Diagnosis:
    """A diagnosis answered by the cache, for this trace (its id and source), with zero usage."""
    diagnosis = Diagnosis.model_validate({**cached, "trace_id": trace.trace_id})
    diagnosis.source = source_ref(trace)
    diagnosis.usage = DiagnosisUsage(
        input_tokens=0,
        output_tokens=0,
        cost_usd=0.0,
        latency_s=time.perf_counter() - started,
        llm_calls=0,
        cached=True,
    )
    return diagnosis
