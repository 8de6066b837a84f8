"""Hints for an LLM judge, never verdicts on their own: error streaks, ignored errors, a restated task.

These patterns often go with 2.6 (Reasoning-Action Mismatch), 3.2 (No or Incomplete Verification),
2.1 (Conversation Reset) or 1.4 (Loss of Conversation History), but a rule cannot tell whether
they do; so they are handed to a judge as evidence to weigh, and the modes stay not assessed.
"""

from __future__ import annotations

from mast.judge.detectors._view import TraceView, error_line, same_text
from mast.judge.detectors.report import Finding, evidence, inline, span, step_quote
from mast.judge.detectors.termination import claims_success

STREAK = 3
"""Failed tool results in a row (no success between) that make an error streak."""
MIN_TASK_CHARS = 40


def error_streak_findings(view: TraceView) -> list[Finding]:
    """Three or more tool failures in a row with no successful result between them."""
    outcomes = [v for v in view.live() if v.error or v.step.tool_results or v.is_tool_output]
    findings: list[Finding] = []
    run: list[int] = []
    for v in [*outcomes, None]:
        if v is not None and v.error:
            run.append(v.index)
            continue
        if len(run) >= STREAK:
            first = view.steps[run[0]]
            last = view.steps[run[-1]]
            findings.append(
                Finding(
                    detector="error_streak",
                    codes=["2.6", "3.2"],
                    verdict=False,
                    steps=list(run),
                    at=run[0],
                    evidence=[q for q in (evidence(first.step, error_line(first)), evidence(last.step, error_line(last))) if q.verified],
                    confidence=0.5,
                    message=f"{span(run)}: {len(run)} failed tool calls or code runs in a row, no success between (first: \"{inline(error_line(first), 80)}\")",
                    outline=f"{span(run)}: {len(run)} failed tool calls or code runs in a row, no success between",
                )
            )
        run = []
    return findings


def ignored_error_findings(view: TraceView) -> list[Finding]:
    """An error, then the next agent message claims success before anything else was tried."""
    findings: list[Finding] = []
    live = view.live()
    for position, v in enumerate(live):
        if not v.error:
            continue
        for w in live[position + 1:]:
            if w.step.tool_calls or w.error or (w.is_user and w.message_action):
                break
            if w.is_agent and w.message_action:
                if claims_success(w.step.content):
                    line = next((ln for ln in w.step.content.splitlines() if claims_success(ln)), w.step.content)
                    findings.append(
                        Finding(
                            detector="ignored_error",
                            codes=["2.6", "3.2"],
                            verdict=False,
                            steps=[v.index, w.index],
                            at=w.index,
                            evidence=[q for q in (evidence(v.step, error_line(v)), evidence(w.step, line.strip())) if q.verified],
                            confidence=0.55,
                            message=f"step {w.index}: {w.actor} claims success (\"{inline(line.strip(), 80)}\") right after the error at step {v.index} (\"{inline(error_line(v), 60)}\")",
                            outline=f"step {w.index}: an agent claims success right after the error at step {v.index}",
                        )
                    )
                break
    return findings


def restated_task_findings(view: TraceView) -> list[Finding]:
    """A later step that repeats the opening request almost word for word: the run may have restarted."""
    live = [v for v in view.live() if not v.is_tool_output]
    opening = next((v for v in live if v.text and len(v.text) >= MIN_TASK_CHARS), None)
    if opening is None:
        return []
    for v in live:
        if v.index <= opening.index + 1 or len(v.text) < MIN_TASK_CHARS:
            continue
        if same_text(opening.text, v.text):
            return [
                Finding(
                    detector="restated_task",
                    codes=["2.1", "1.4"],
                    verdict=False,
                    steps=[opening.index, v.index],
                    at=v.index,
                    evidence=[q for q in (step_quote(v.step),) if q.verified],
                    confidence=0.4,
                    message=f"step {v.index}: {v.actor} restates the opening request of step {opening.index} almost word for word, as if starting over",
                    outline=f"step {v.index}: the opening request of step {opening.index} is restated almost word for word, as if starting over",
                )
            ]
    return []
