"""Offline detectors: cheap, explainable rules that judge a few MAST modes without any model.

Each detector reads the normalised trace, cites steps and verbatim quotes, and says how sure it is.
They judge only what a rule can honestly see:

======  =====================================  ==============================================
mode    assessed by                            absent (``present: false``) means
======  =====================================  ==============================================
1.3     ``step_repetition``                    no action (tool call + arguments, or message)
                                               repeated with nothing new between; paraphrased
                                               repetition is not seen (confidence 0.5)
1.5     ``turn_limit``, ``pingpong``,          no limit notice, no filler ping-pong, no work
        ``after_terminate``, ``loop_until_end``  after ``TERMINATE``, no loop to the end (0.45)
3.1     ``premature_termination``              the run ends on an agent's answer with no
                                               unresolved error before it, or a limit stopped
                                               it after the task was declared finished (0.4);
                                               not assessed when the trace ends on a user
                                               message or tool result (it may be a partial
                                               capture) or on a question or request to
                                               someone else
======  =====================================  ==============================================

Every other mode is ``present: null`` (not assessed). ``error_streak``, ``ignored_error`` and
``restated_task`` are hints for 2.6 / 3.2 / 2.1 / 1.4 that an LLM judge receives in its prompt
(:func:`format_hints`); they never decide a verdict.

Example:
    >>> from mast.trace import Trace, Step, ToolCall, ToolResult
    >>> steps = []
    >>> for _ in range(3):
    ...     steps.append(Step(index=0, kind="tool_call", agent="sre", tool_calls=[ToolCall(name="sh", arguments={"cmd": "kubectl get pods"})]))
    ...     steps.append(Step(index=0, kind="tool_result", agent="tool", role="tool", tool_results=[ToolResult(output="web-1 CrashLoopBackOff")]))
    >>> report = run_detectors(Trace(steps=steps))
    >>> report.present("1.3"), report.present("1.5"), report.present("2.2")
    (True, True, None)
    >>> print(format_hints(report))
    - steps 0, 2 and 4: sre repeats the same tool call `sh {"cmd":"kubectl get pods"}` 3 times and gets the same result each time [1.3 Step Repetition, confidence 0.85]
    - steps 0, 2 and 4: sre keeps repeating the same action until the run ends (3 rounds), never recognising it should stop [1.5 Unaware of Termination Conditions, confidence 0.70]
"""

from __future__ import annotations

import time

from mast.__about__ import __version__
from mast.diagnosis import (
    Diagnosis,
    DiagnosisUsage,
    Evidence,
    FirstFailure,
    JudgeInfo,
    ModeVerdict,
    SourceRef,
)
from mast.judge.detectors._view import TraceView
from mast.judge.detectors.hints import error_streak_findings, ignored_error_findings, restated_task_findings
from mast.judge.detectors.repetition import loop_to_end_findings, repetition_findings
from mast.judge.detectors.report import DetectorReport, Finding, ModeAssessment
from mast.judge.detectors.termination import (
    after_terminate_findings,
    pingpong_findings,
    premature_findings,
    turn_limit_findings,
)
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.trace import Trace

__all__ = [
    "DETECTORS_VERSION",
    "DetectorReport",
    "Finding",
    "ModeAssessment",
    "assessed_codes",
    "detectors_diagnosis",
    "detectors_judge_info",
    "format_hints",
    "run_detectors",
]

DETECTORS_VERSION = "1"
"""Bumped whenever a rule changes what it finds; recorded in every diagnosis the detectors make."""

ABSENT_CONFIDENCE: dict[str, float] = {"1.3": 0.5, "1.5": 0.45, "3.1": 0.4}
"""Confidence of ``present: false`` per assessed mode: low, since rules see only the plain cases."""

# A custom taxonomy may reuse a code for another mode: the detectors judge a code only when the
# taxonomy's name for it still says what they look for.
_NAME_WORDS: dict[str, tuple[str, ...]] = {
    "1.3": ("repet",),
    "1.5": ("terminat", "stop"),
    "3.1": ("terminat", "prematur", "stop"),
    "2.6": ("mismatch", "action"),
    "3.2": ("verif",),
    "2.1": ("reset", "restart"),
    "1.4": ("history", "context"),
}


def _compatible(taxonomy: Taxonomy, code: str) -> bool:
    try:
        name = taxonomy.mode(code).name.lower()
    except KeyError:
        return False
    return any(word in name for word in _NAME_WORDS.get(code, ()))


def assessed_codes(taxonomy: Taxonomy | None = None) -> list[str]:
    """The codes of ``taxonomy`` the detectors can judge present or absent (every other is ``null``).

    The modes of :data:`ABSENT_CONFIDENCE` whose name in ``taxonomy`` still says what the rules look
    for; ``mast classify/label --fail-on`` refuses a code outside them when the detectors judge.
    """
    taxonomy = taxonomy or load_taxonomy()
    return [mode.code for mode in taxonomy.modes if mode.code in ABSENT_CONFIDENCE and _compatible(taxonomy, mode.code)]


def run_detectors(trace: Trace, taxonomy: Taxonomy | None = None) -> DetectorReport:
    """Run every detector over ``trace``: findings (verdicts and hints) and the modes judged.

    Args:
        trace: a normalised trace.
        taxonomy: the taxonomy to judge against (MAST v3 by default). A mode whose code is missing
            from it, or whose name there no longer matches what a detector looks for, is skipped
            with a warning.
    """
    taxonomy = taxonomy or load_taxonomy()
    view = TraceView(trace)
    findings: list[Finding] = []
    repeated, chains = repetition_findings(view)
    findings += repeated
    limits = turn_limit_findings(view)
    findings += limits
    findings += pingpong_findings(view)
    findings += after_terminate_findings(view)
    findings += loop_to_end_findings(view, chains)
    limit_step = limits[0].at if limits else None
    premature, premature_assessed, premature_note = premature_findings(view, limit_step=limit_step)
    findings += premature
    findings += error_streak_findings(view)
    findings += ignored_error_findings(view)
    findings += restated_task_findings(view)

    live = view.live()
    n_actions = sum(1 for v in live if (v.call_signature or v.message_action) and not v.is_reasoning)
    assessments = [
        ModeAssessment(
            code="1.3",
            assessed=n_actions >= 2,
            note="actions compared: tool calls with their arguments and agent messages" if n_actions >= 2 else "fewer than two agent actions",
        ),
        ModeAssessment(
            code="1.5",
            assessed=len(live) >= 2,
            note="looked for limit notices, filler ping-pong, work after TERMINATE, loops to the end" if len(live) >= 2 else "fewer than two steps",
        ),
        ModeAssessment(code="3.1", assessed=premature_assessed or bool(premature), note=premature_note),
    ]
    targeted = {c for f in findings for c in f.codes} | {a.code for a in assessments}
    dropped = {code for code in targeted if not _compatible(taxonomy, code)}
    warnings = [
        f"taxonomy {taxonomy.version} has no mode {code} of the kind the detectors look for; their findings for it are left out"
        for code in sorted(dropped)
    ]
    findings = [f.model_copy(update={"codes": [c for c in f.codes if c not in dropped]}) for f in findings]
    # Stable sort: at equal first steps, verdict detectors (run first) stay ahead of hints.
    findings = sorted((f for f in findings if f.codes), key=lambda f: f.steps[0] if f.steps else -1)
    assessments = [a for a in assessments if a.code not in dropped]
    return DetectorReport(trace_id=trace.trace_id, findings=findings, assessments=assessments, warnings=warnings)


def format_hints(report: DetectorReport, taxonomy: Taxonomy | None = None, *, quotes: bool = True) -> str:
    """The findings as short lines for an LLM judge's prompt (empty text when there are none).

    Each line says what was seen and where, then the mode it bears on and whether it is a
    detector verdict or only a hint, e.g.
    ``- steps 14-17: agent repeats the same tool call `sh {"cmd":"kubectl get pods"}` 4 times ...``.

    Args:
        report: what :func:`run_detectors` found.
        taxonomy: names the modes (MAST v3 by default).
        quotes: include short quotes, agent and tool names from the trace. With ``False`` the
            lines hold only step numbers, counts and the detectors' own words: use that when the
            hints sit outside the fenced transcript of a prompt, since trace text may carry
            injected instructions.
    """
    taxonomy = taxonomy or load_taxonomy()
    lines: list[str] = []
    for finding in report.findings:
        names = []
        for code in finding.codes:
            try:
                names.append(f"{code} {taxonomy.mode(code).name}")
            except KeyError:
                names.append(code)
        kind = f"confidence {finding.confidence:.2f}" if finding.verdict else "hint only"
        text = finding.message if quotes else (finding.outline or finding.message)
        lines.append(f"- {text} [{'; '.join(names)}, {kind}]")
    return "\n".join(lines)


def detectors_judge_info(taxonomy: Taxonomy | None = None) -> JudgeInfo:
    """What every diagnosis of the detectors records as its ``judge``."""
    taxonomy = taxonomy or load_taxonomy()
    return JudgeInfo(
        kind="detectors",
        taxonomy_version=taxonomy.version,
        strategy="rules",
        mast_version=__version__,
        params={"detectors_version": DETECTORS_VERSION},
    )


def detectors_diagnosis(trace: Trace, taxonomy: Taxonomy | None = None, *, report: DetectorReport | None = None) -> Diagnosis:
    """Judge ``trace`` with the detectors alone: a :class:`~mast.diagnosis.Diagnosis` with every mode.

    Modes the detectors assess are ``present`` true or false; every other mode is ``null``, with any
    hint the detectors have for it in its explanation.

    Args:
        trace: a normalised trace.
        taxonomy: the taxonomy to judge against (MAST v3 by default).
        report: what :func:`run_detectors` already found for this trace and taxonomy (saves running
            them again).
    """
    started = time.perf_counter()
    taxonomy = taxonomy or load_taxonomy()
    report = report if report is not None else run_detectors(trace, taxonomy)
    notes = {a.code: a.note for a in report.assessments}
    verdicts: list[ModeVerdict] = []
    for mode in taxonomy.modes:
        verdict_findings = report.findings_for(mode.code, verdicts_only=True)
        hints = [f for f in report.findings_for(mode.code) if not f.verdict]
        present = report.present(mode.code)
        if present:
            confidence = max(f.confidence for f in verdict_findings)
            explanation = " ".join(f.message + "." for f in verdict_findings)
            quotes = _unique([e for f in verdict_findings for e in f.evidence if e.verified])
        elif present is False:
            confidence = ABSENT_CONFIDENCE.get(mode.code, 0.4)
            explanation = f"Not found by the offline detectors ({notes.get(mode.code, '')})."
            quotes = []
        else:
            confidence = None
            explanation = "Not assessed: no offline rule can judge this mode." if mode.code not in notes else f"Not assessed: {notes[mode.code]}."
            quotes = []
        if hints:
            explanation += " Hint: " + " ".join(f.message + "." for f in hints)
        verdicts.append(
            ModeVerdict(
                code=mode.code,
                name=mode.name,
                category=mode.category,
                present=present,
                confidence=confidence,
                evidence=quotes,
                explanation=explanation,
                hints=[f.message for f in hints] or None,
            )
        )
    decisive = [f for f in report.findings if f.verdict]
    first = min(decisive, key=lambda f: (f.at if f.at is not None else f.steps[0]), default=None)
    first_failure = None
    if first is not None:
        step = first.at if first.at is not None else first.steps[0]
        agent = trace.steps[step].agent if 0 <= step < len(trace.steps) else None
        first_failure = FirstFailure(step=step, agent=agent, code=first.codes[0], explanation=first.message)
    ended_badly = any(f.detector in ("turn_limit", "premature_termination") and f.confidence >= 0.6 for f in decisive)
    return Diagnosis(
        trace_id=trace.trace_id,
        source=SourceRef(path=trace.source.path, format=trace.source.format, record=trace.source.record),
        trace_hash=trace.content_hash(),
        status="judged",
        judge=detectors_judge_info(taxonomy),
        failure_modes=verdicts,
        task_completed=False if ended_badly else None,
        first_failure=first_failure,
        summary=_summary(report, taxonomy),
        usage=DiagnosisUsage(latency_s=round(time.perf_counter() - started, 6), llm_calls=0),
        # What the normaliser could not read (a body cut at a cap) stays with the verdict, as with an LLM judge.
        warnings=[*(f"trace: {w}" for w in trace.warnings), *report.warnings],
    )


def _unique(items: list[Evidence]) -> list[Evidence]:
    seen: set[tuple[int | None, str]] = set()
    out: list[Evidence] = []
    for item in items:
        if (item.step, item.quote) not in seen:
            seen.add((item.step, item.quote))
            out.append(item)
    return out


def _summary(report: DetectorReport, taxonomy: Taxonomy) -> str:
    present = [c for c in report.assessed if report.present(c)]
    assessed = ", ".join(report.assessed) or "none"
    if not present:
        text = f"The offline detectors found no failure among the modes they can judge ({assessed}); other modes were not assessed."
    else:
        parts = []
        for code in present:
            first = report.findings_for(code, verdicts_only=True)[0]
            parts.append(f"{code} {taxonomy.mode(code).name}: {first.message}")
        text = "Offline detectors: " + "; ".join(parts) + "."
    hints = [f for f in report.findings if not f.verdict]
    if hints:
        text += f" {len(hints)} hint(s) for modes they cannot judge."
    return text
