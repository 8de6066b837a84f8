"""Reduce the verdicts of several jurors (or several samples of one judge) to one :class:`Diagnosis`.

The rules, per mode (only jurors that answered and assessed the mode vote):

* ``majority`` (default): present when more than half of the votes say present. **Tie rule:** an
  exact tie (2 against 2) is *absent* (a failure must be shown by a majority), and the verdict's
  ``votes.tie`` is set and a warning says so.
* ``any``: present when at least one vote says present.
* ``all``: present when every vote says present.
* ``at_least:N``: present when N or more votes say present.

No vote at all leaves the mode not assessed (``present: null``). ``confidence`` is the **share of
votes for the verdict** (3 of 4 present -> 0.75; 1 of 4 present reduced to absent -> 0.75), not the
jurors' own stated confidences. Evidence is the union of the verified quotes of the jurors who voted
for the verdict, each with ``cited_by`` naming them. ``first_failure`` is the step named by more than
half of the jurors that answered (their agent and code by the same majority rule), else ``None``
with the reason in ``jury.first_failure_note``.

A trace is ``judged`` when at least ``quorum`` jurors answered (default: more than half of them);
otherwise it is ``error`` (``unjudgeable`` when every failure was an unjudgeable trace), naming the
jurors that failed and why. Tokens, cost and calls are summed over every juror.

Example:
    >>> parse_reducer("at_least:2")
    ('at_least', 2)
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from typing import Literal

import numpy as np

from mast.diagnosis import (
    Diagnosis,
    DiagnosisUsage,
    ErrorInfo,
    Evidence,
    FirstFailure,
    JudgeInfo,
    JurorVerdict,
    JuryAgreement,
    JuryRecord,
    ModeVerdict,
    ModeVotes,
    SourceRef,
)
from mast.errors import UsageError
from mast.taxonomy import Taxonomy

ReducerKind = Literal["majority", "any", "all", "at_least"]
_AT_LEAST = re.compile(r"^at_least:(\d+)$")


def parse_reducer(spec: str) -> tuple[ReducerKind, int]:
    """``(kind, n)`` of a reducer spec (``n`` is only used by ``at_least``).

    Raises:
        UsageError: an unknown reducer.
    """
    text = spec.strip().lower().replace("-", "_")
    if text in ("majority", "any", "all"):
        return text, 0  # type: ignore[return-value]
    match = _AT_LEAST.match(text)
    if match and int(match.group(1)) >= 1:
        return "at_least", int(match.group(1))
    raise UsageError(f"unknown reducer {spec!r}: use majority, any, all or at_least:N (N >= 1)")


def default_quorum(n_jurors: int) -> int:
    """More than half of the jurors."""
    return n_jurors // 2 + 1


def decide(kind: ReducerKind, n: int, present: int, absent: int) -> tuple[bool | None, bool]:
    """``(present, tie)`` for ``present`` and ``absent`` votes under a reducer (``None``: no vote)."""
    votes = present + absent
    if votes == 0:
        return None, False
    if kind == "any":
        return present >= 1, False
    if kind == "all":
        return present == votes, False
    if kind == "at_least":
        return present >= n, False
    return present > absent, present == absent


def agreement(ratings: np.ndarray) -> tuple[float | None, float | None, float | None]:
    """``(raw, unanimous, fleiss_kappa)`` of a modes x jurors 0/1 matrix (every cell rated)."""
    if ratings.shape[0] == 0 or ratings.shape[1] < 2:
        return None, None, None
    raters = ratings.shape[1]
    yes = ratings.sum(axis=1)
    counts = np.column_stack([raters - yes, yes])
    # Fleiss: agreement within each item over rater pairs, and chance agreement from the margins.
    per_item = (np.sum(counts**2, axis=1) - raters) / (raters * (raters - 1))
    observed = float(np.mean(per_item))
    shares = counts.sum(axis=0) / counts.sum()
    chance = float(np.sum(shares**2))
    unanimous = float(np.mean((yes == 0) | (yes == raters)))
    kappa = None if np.isclose(chance, 1.0) else (observed - chance) / (1.0 - chance)
    return observed, unanimous, kappa


def reduce_verdicts(
    jurors: Sequence[JurorVerdict],
    *,
    taxonomy: Taxonomy,
    reducer: str,
    quorum: int,
    info: JudgeInfo,
    trace_id: str,
    source: SourceRef,
    trace_hash: str | None,
    latency_s: float,
) -> Diagnosis:
    """One diagnosis from every juror's own (see the module docs for the rules)."""
    kind, n = parse_reducer(reducer)
    answered = [j for j in jurors if j.diagnosis.status == "judged"]
    failed = [j for j in jurors if j.diagnosis.status != "judged"]
    record = JuryRecord(
        jurors=[j.name for j in jurors],
        reducer=reducer,
        quorum=quorum,
        answered=[j.name for j in answered],
        failed=[f"{j.name}: {_reason(j.diagnosis)}" for j in failed],
        verdicts=list(jurors),
    )
    usage = _usage([j.diagnosis for j in jurors], latency_s)
    warnings = [f"juror {line}" for line in record.failed]
    if len(answered) < quorum:
        status = "unjudgeable" if failed and all(j.diagnosis.status == "unjudgeable" for j in failed) else "error"
        message = (
            f"{len(answered)} of {len(jurors)} jurors answered, quorum is {quorum}; failed: " + "; ".join(record.failed)
        )
        return Diagnosis(
            trace_id=trace_id, source=source, trace_hash=trace_hash, status=status,
            error=ErrorInfo(type="JuryQuorum", message=message), judge=info,
            failure_modes=[_verdict(code, [], kind, n, taxonomy, warnings) for code in taxonomy.codes],
            usage=usage, warnings=warnings, jury=record,
        )
    verdicts = [_verdict(code, answered, kind, n, taxonomy, warnings) for code in taxonomy.codes]
    record.agreement = _agreement(answered, taxonomy)
    first, record.first_failure_note = _first_failure(answered)
    completed = Counter(j.diagnosis.task_completed for j in answered if j.diagnosis.task_completed is not None)
    task_completed = None if completed[True] == completed[False] else completed[True] > completed[False]
    present = [v.code for v in verdicts if v.present]
    summary = f"{len(answered)} of {len(jurors)} jurors answered ({reducer}): " + (
        f"present {', '.join(present)}." if present else "no mode present."
    )
    return Diagnosis(
        trace_id=trace_id, source=source, trace_hash=trace_hash, status="judged", judge=info,
        failure_modes=verdicts, task_completed=task_completed, first_failure=first, summary=summary,
        usage=usage, warnings=warnings, redactions=_redactions(answered), jury=record,
    )


def _reason(diagnosis: Diagnosis) -> str:
    error = diagnosis.error
    return f"{diagnosis.status} ({error.type}: {error.message})" if error else diagnosis.status


def _verdict(
    code: str, answered: Sequence[JurorVerdict], kind: ReducerKind, n: int, taxonomy: Taxonomy, warnings: list[str]
) -> ModeVerdict:
    mode = taxonomy.mode(code)
    votes = ModeVotes()
    cast: list[tuple[JurorVerdict, ModeVerdict]] = []
    for juror in answered:
        own = next((v for v in juror.diagnosis.failure_modes if v.code == code), None)
        if own is None or own.present is None:
            votes.not_assessed += 1
            continue
        cast.append((juror, own))
        if own.present:
            votes.present += 1
            votes.present_by.append(juror.name)
        else:
            votes.absent += 1
    present, votes.tie = decide(kind, n, votes.present, votes.absent)
    if votes.tie:
        warnings.append(f"{code}: jurors tied {votes.present}-{votes.absent}; a tie counts as absent")
    if present is None:
        return ModeVerdict(code=code, name=mode.name, category=mode.category, present=None, votes=votes)
    total = votes.present + votes.absent
    confidence = (votes.present if present else votes.absent) / total
    backing = [(j, v) for j, v in cast if v.present == present]
    explanation = f"{votes.present} of {total} votes present ({kind if kind != 'at_least' else f'at_least:{n}'})"
    if backing and backing[0][1].explanation:
        explanation += f"; {backing[0][0].name}: {backing[0][1].explanation}"
    return ModeVerdict(
        code=code, name=mode.name, category=mode.category, present=present, confidence=confidence,
        evidence=_evidence(backing), explanation=explanation, votes=votes,
    )


def _evidence(backing: Sequence[tuple[JurorVerdict, ModeVerdict]]) -> list[Evidence]:
    """Verified quotes of the jurors behind a verdict, each once, with who cited it."""
    merged: dict[tuple[int | None, str], Evidence] = {}
    for juror, verdict in backing:
        for item in verdict.evidence:
            if not item.verified:
                continue
            key = (item.step, " ".join(item.quote.split()))
            found = merged.setdefault(key, Evidence(step=item.step, quote=item.quote, verified=True, cited_by=[]))
            if found.cited_by is not None and juror.name not in found.cited_by:
                found.cited_by.append(juror.name)
    return sorted(merged.values(), key=lambda e: (e.step is None, e.step or 0))


def _agreement(answered: Sequence[JurorVerdict], taxonomy: Taxonomy) -> JuryAgreement:
    rows = []
    for code in taxonomy.codes:
        row = []
        for juror in answered:
            own = next((v.present for v in juror.diagnosis.failure_modes if v.code == code), None)
            row.append(own)
        if all(value is not None for value in row):
            rows.append([1.0 if value else 0.0 for value in row])
    ratings = np.array(rows, dtype=float).reshape(len(rows), len(answered))
    raw, unanimous, kappa = agreement(ratings)
    return JuryAgreement(n_jurors=len(answered), n_modes=len(rows), raw=raw, unanimous=unanimous, fleiss_kappa=kappa)


def _first_failure(answered: Sequence[JurorVerdict]) -> tuple[FirstFailure | None, str]:
    steps = [j.diagnosis.first_failure.step if j.diagnosis.first_failure else None for j in answered]
    counted = Counter(steps)
    step, count = counted.most_common(1)[0]
    if count * 2 <= len(answered):
        named = ", ".join(f"S{s}" if s is not None else "none" for s in steps)
        return None, f"no step named by a majority of the {len(answered)} jurors (they named {named})"
    if step is None:
        return None, f"{count} of {len(answered)} jurors named no first failure step"
    picked = [j.diagnosis.first_failure for j in answered if j.diagnosis.first_failure and j.diagnosis.first_failure.step == step]
    agent = _most_common([f.agent for f in picked if f])
    code = _most_common([f.code for f in picked if f])
    explanation = next((f.explanation for f in picked if f and f.explanation), "")
    note = f"{count} of {len(answered)} jurors named S{step}"
    return FirstFailure(step=step, agent=agent, code=code, explanation=explanation), note


def _most_common(values: Sequence[str | None]) -> str | None:
    """The value more than half of ``values`` share, else ``None``."""
    if not values:
        return None
    value, count = Counter(values).most_common(1)[0]
    return value if count * 2 > len(values) else None


def _usage(diagnoses: Sequence[Diagnosis], latency_s: float) -> DiagnosisUsage:
    calls = sum(d.usage.llm_calls for d in diagnoses)
    # A price unknown for any juror that made calls makes the total unknown (never a misleading sum).
    unknown = any(d.usage.cost_usd is None and d.usage.llm_calls for d in diagnoses)
    return DiagnosisUsage(
        input_tokens=sum(d.usage.input_tokens for d in diagnoses),
        output_tokens=sum(d.usage.output_tokens for d in diagnoses),
        cost_usd=None if unknown else sum(d.usage.cost_usd or 0.0 for d in diagnoses),
        latency_s=latency_s,
        llm_calls=calls,
        cached=calls == 0 and any(d.usage.cached for d in diagnoses),
        cached_input_tokens=sum(d.usage.cached_input_tokens for d in diagnoses),
        cache_creation_input_tokens=sum(d.usage.cache_creation_input_tokens for d in diagnoses),
        list_cost_usd=None if unknown else sum(
            (d.usage.list_cost_usd if d.usage.list_cost_usd is not None else d.usage.cost_usd) or 0.0 for d in diagnoses
        ),
        batch_api=any(d.usage.batch_api for d in diagnoses),
    )


def _redactions(answered: Sequence[JurorVerdict]) -> dict[str, int]:
    """The most redactions of each kind any juror's prompt had (they all saw the same trace)."""
    out: dict[str, int] = {}
    for juror in answered:
        for kind, count in juror.diagnosis.redactions.items():
            out[kind] = max(out.get(kind, 0), count)
    return out
