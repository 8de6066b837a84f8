"""How a run ends: 1.5 Unaware of Termination Conditions and 3.1 Premature Termination.

1.5 fires on a run cut off by a turn / step / iteration / time / cost limit (a notice in the last
steps, the trace's error, or a stop reason in its metadata), on "thank you" / "continue"
ping-pong with no work in it, and on a run that keeps going after an agent said ``TERMINATE``.
3.1 fires on a run that ends right after an error nobody resolved, that stops in the middle of a
tool call, whose last agent message announces work that never happens, that idles out in empty
turns, or that a limit stopped before anyone declared the task finished. A run whose last message
asks someone else to act ("please run the code above", a question) is left unassessed: whether the
task was over there is not something a rule can tell.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from mast.judge.detectors._view import StepView, TraceView, error_line
from mast.judge.detectors.report import (
    Finding,
    call_quote,
    evidence,
    inline,
    matching_sentence,
    span,
    step_quote,
)

_LIMIT_NOUN = re.compile(
    r"\bmax(?:imum)?[ _-]?(?:number[ _]of[ _])?(?:turns?|rounds?|iterations?|steps?|messages?|replies|calls"
    r"|(?:consecutive[ _])?auto[ _-]?repl(?:y|ies))\b"
    r"|\b(?:turn|round|iteration|step|recursion|message|reply|time|cost|budget)[ _-]?limit\b"
    r"|\bmax_?(?:turns|rounds|iter(?:ation)?s|steps|messages)\b"
    r"|maxturnsexceeded|graphrecursionerror|\bexit_cost\b",
    re.IGNORECASE,
)
_LIMIT_VERB = re.compile(
    r"\b(?:reached|exceeded|exceeds?|hit|exhausted|ran out|run out|stopped|terminated|ended|reach)\b"
    r"|maxturnsexceeded|graphrecursionerror|\bexit_cost\b|_exceeded\b",
    re.IGNORECASE,
)
_STOP_KEY = re.compile(r"stop|reason|status|exit|terminat|finish", re.IGNORECASE)
"""Metadata keys that may say why a run ended (``stop_reason``, ``exit_status``, ``termination``)."""
TAIL_STEPS = 3
"""How many of the last steps are searched for a limit notice."""

_TERMINATE = re.compile(r"\bTERMINATE\W{0,3}$")
_TERMINATE_TAIL = 20
"""``_TERMINATE`` is anchored at the end: searching the last characters finds it without a scan of the whole text."""


def _ends_with_terminate(text: str) -> bool:
    return bool(_TERMINATE.search(text.rstrip()[-_TERMINATE_TAIL:]))

_DONE = re.compile(
    r"\bterminate\b|\bfinal answer\b|\\boxed\{|\btask complete\b"
    r"|(?<!before the )(?<!until the )\b(?:task|work|job|problem|issue|request)\s+(?:is|has been|was)\s+(?:now\s+)?(?:complete|completed|done|finished|solved|resolved)\b"
    r"|\b(?:approved|marked|considered)\s+(?:as\s+)?(?:complete|completed|done|finished)\b"
    r"|\b(?:cannot|can't|can not|could not|couldn't)\s+be\s+(?:solved|completed|done)\b|\bunsolvable\b"
    r"|\bimpossible to (?:solve|complete)\b",
    re.IGNORECASE,
)
"""An agent saying the task is finished (or cannot be finished)."""
_ANNOUNCE = re.compile(
    r"\b(?:i will|i'll|i am going to|i'm going to|let me(?! know)|let's|let us(?! know)|next,? i|now i|i need to"
    r"|we need to|we will|we'll)\b",
    re.IGNORECASE,
)
_HANDOFF = re.compile(
    r"^(?:please|kindly|could you|can you|would you|let me know|once you|when you)\b"
    r"|\bplease (?:run|execute|try|provide|check|confirm|review|reply|let me know)\b",
    re.IGNORECASE,
)
IDLE_TAIL = 3
"""Empty or filler turns at the very end (with nothing declared finished) that make a run idle out."""
_GIVE_UP = re.compile(
    r"\b(?:unable to|cannot|can't|could not|couldn't|not able to|give up|giving up|stop here|i'll stop)\b", re.IGNORECASE
)
_SUCCESS = re.compile(
    r"\b(?:success(?:fully)?|succeeded|works(?: now| correctly| fine)?|all (?:tests|checks) pass(?:ed)?"
    r"|tests? (?:now )?pass(?:ed|es)?|is (?:now )?(?:complete|done|fixed|resolved|deployed)"
    r"|has been (?:completed|fixed|resolved|deployed|applied)|completed|fixed)\b",
    re.IGNORECASE,
)
_NEGATIVE = re.compile(
    r"\b(?:fail(?:ed|s|ure)?|error|unable|cannot|can't|could not|couldn't|not (?:been )?(?:fixed|resolved|completed))\b",
    re.IGNORECASE,
)
SHORT_MESSAGE_CHARS = 80
"""An agent message shorter than this after an error does not deal with the error."""


def claims_success(text: str) -> bool:
    """True when a message says the work succeeded and mentions no failure."""
    return bool(_SUCCESS.search(text)) and not _NEGATIVE.search(text)


def _strings(value: Any, key: str = "", depth: int = 0) -> Iterator[tuple[str, str]]:
    if depth > 3:
        return
    if isinstance(value, str):
        if len(value) <= 500:
            yield key, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, str(k), depth + 1)
    elif isinstance(value, list):
        for v in value[:20]:
            yield from _strings(v, key, depth + 1)


def _limit_line(text: str) -> str | None:
    for line in text.splitlines():
        if _LIMIT_NOUN.search(line) and _LIMIT_VERB.search(line):
            return line.strip()
    return None


def _bare_limit(value: str) -> bool:
    """A stop reason that is just a limit's name (``max_turns``, ``exit_cost``), not a setting like ``max_turns=10``."""
    value = value.strip()
    return len(value) <= 40 and not any(ch.isdigit() or ch in "=:" for ch in value) and bool(_LIMIT_NOUN.search(value))


def turn_limit_findings(view: TraceView) -> list[Finding]:
    """1.5: the run was cut off by a turn, step, iteration, time or cost limit."""
    tail = [v for v in view.steps[-TAIL_STEPS:] if v.index > 0]
    for v in reversed(tail):
        texts = [v.step.content, v.step.error or "", *(r.output for r in v.step.tool_results)]
        for text in texts:
            line = _limit_line(text) if text else None
            if line:
                return [
                    Finding(
                        detector="turn_limit",
                        codes=["1.5"],
                        verdict=True,
                        steps=[v.index],
                        at=v.index,
                        evidence=[evidence(v.step, line)],
                        confidence=0.8,
                        message=f"step {v.index}: the run ends at a limit (\"{inline(line, 120)}\"): the agents never stopped on their own",
                        outline=f"step {v.index}: the run ends at a turn, step or time limit: the agents never stopped on their own",
                    )
                ]
    sources: list[tuple[str, str]] = [("error", view.trace.error or "")]
    sources += [(k, s) for k, s in _strings(view.trace.metadata) if _STOP_KEY.search(k)]
    for key, text in sources:
        line = _limit_line(text) or (text.strip() if key != "error" and _bare_limit(text) else None)
        if line:
            last = view.steps[-1].index if view.steps else 0
            return [
                Finding(
                    detector="turn_limit",
                    codes=["1.5"],
                    verdict=True,
                    steps=[last],
                    at=last,
                    confidence=0.7,
                    message=f"the trace's {key} says the run stopped at a limit (\"{inline(line, 120)}\"): the agents never stopped on their own",
                    outline="the trace's own record says a turn, step or time limit stopped the run: the agents never stopped on their own",
                )
            ]
    return []


def _completion(v: StepView) -> bool:
    return bool(_DONE.search(v.step.content))


def pingpong_findings(view: TraceView) -> list[Finding]:
    """1.5: turns of thanks / ``continue`` / sign-offs that carry no work, typically after the end."""
    live = [v for v in view.live() if not v.is_tool_output and not v.is_reasoning]
    findings: list[Finding] = []
    i = 0
    while i < len(live):
        if not live[i].filler:
            i += 1
            continue
        j = i
        while j < len(live) and live[j].filler:
            j += 1
        run = live[i:j]
        actors = {v.actor for v in run}
        after_done = i > 0 and _completion(live[i - 1])
        # Pleasantries between a person and one assistant are manners, not agents failing to stop.
        agents = {v.actor for v in run if not v.is_user}
        if len(actors) >= 2 and len(agents) >= 2 and (len(run) >= 3 or (after_done and len(run) >= 2)):
            steps = [v.index for v in run]
            context = f" after step {live[i - 1].index} declared the task finished" if after_done else ""
            quotes = [step_quote(v.step) for v in run[:3]]
            findings.append(
                Finding(
                    detector="pingpong",
                    codes=["1.5"],
                    verdict=True,
                    steps=steps,
                    at=steps[0],
                    evidence=[q for q in quotes if q.verified],
                    confidence=0.75 if len(run) >= 3 else 0.65,
                    message=f"{span(steps)}: {len(run)} turns of thanks / continue / sign-off between {' and '.join(sorted(actors))} with no work in them{context}",
                    outline=f"{span(steps)}: {len(run)} turns of thanks / continue / sign-off between {len(actors)} agents with no work in them{context}",
                )
            )
        i = j
    return findings


def after_terminate_findings(view: TraceView) -> list[Finding]:
    """1.5: an agent said ``TERMINATE`` but the run went on with more work."""
    live = view.live()
    for position, v in enumerate(live):
        if v.index == 0 or not v.is_agent or not _ends_with_terminate(v.step.content):
            continue
        later = live[position + 1:]
        if any(w.is_user and w.message_action for w in later):
            return []  # the user asked for more: a new request, not a missed stop
        work = [w for w in later if w.is_agent and (w.message_action or w.call_signature)]
        if len(work) >= 2:
            steps = [v.index] + [w.index for w in work]
            return [
                Finding(
                    detector="after_terminate",
                    codes=["1.5"],
                    verdict=True,
                    steps=steps,
                    at=work[0].index,
                    evidence=[q for q in (evidence(v.step, "TERMINATE"), step_quote(work[0].step)) if q.verified],
                    confidence=0.65,
                    message=f"step {v.index}: {v.actor} says TERMINATE, yet the run goes on for {len(work)} more agent turns ({span([w.index for w in work])})",
                    outline=f"step {v.index}: an agent says TERMINATE, yet the run goes on for {len(work)} more agent turns ({span([w.index for w in work])})",
                )
            ]
        return []
    return []


def _last_sentence(text: str) -> str:
    stripped = text.strip()
    return stripped[-200:]


def _hands_over(text: str) -> bool:
    """The message ends by asking someone else to act or answer (a question, "please run...")."""
    stripped = text.strip()
    if stripped.endswith("?"):
        return True
    last = matching_sentence(stripped[-400:], re.compile(r"\S")) or ""
    return bool(_HANDOFF.search(last))


def _finding(step: StepView, confidence: float, message: str, quote: str | None = None, outline: str | None = None) -> Finding:
    ev = evidence(step.step, quote) if quote else step_quote(step.step)
    return Finding(
        detector="premature_termination",
        codes=["3.1"],
        verdict=True,
        steps=[step.index],
        at=step.index,
        evidence=[ev] if ev.verified else [],
        confidence=confidence,
        message=message,
        outline=outline or message,
    )


def premature_findings(view: TraceView, *, limit_step: int | None) -> tuple[list[Finding], bool, str]:
    """3.1 findings, whether 3.1 could be assessed on this trace, and a note saying what was seen.

    ``limit_step`` is the step where a limit stopped the run (see :func:`turn_limit_findings`), or
    ``None`` when no limit did. A limit that stops a run before anyone declared the task finished
    is 3.1 as well as 1.5: the objectives were not met when it ended.
    """
    live = view.live()
    agents = [v for v in live if v.is_agent and not v.is_reasoning]
    if not agents:
        return [], False, "no agent step in the trace"
    end = limit_step if limit_step is not None else len(view)

    def declared() -> list[StepView]:
        return [v for v in live if 0 < v.index < end and not v.is_user and _completion(v)]

    if limit_step is not None:
        done = declared()
        if done:
            return [], True, f"the task was declared finished (step {done[-1].index}) before the limit stopped the run"
        stop = view.steps[limit_step]
        return [_finding(stop, 0.5, f"step {stop.index}: a limit stopped the run before any agent declared the task finished")], True, ""
    errors = [v for v in live if v.error]
    last_call = max((v.index for v in live if v.step.tool_calls), default=-1)
    if errors and errors[-1].index >= last_call:
        found = _after_error(view, errors[-1])
        if found is not None:
            return [found], True, found.message
    last = live[-1]
    final = agents[-1]
    if final.step.tool_calls and final is last and not view.results_of.keys() & {c.id for c in final.step.tool_calls if c.id}:
        return [_finding(final, 0.7, f"step {final.index}: the run stops in the middle of a tool call by {final.actor}, with no result and no answer", step_quote_text(final), f"step {final.index}: the run stops in the middle of a tool call, with no result and no answer")], True, ""
    tail = _idle_tail(live)
    if len(tail) >= IDLE_TAIL and not any(v.index < tail[0].index for v in declared()):
        return [
            Finding(
                detector="premature_termination",
                codes=["3.1"],
                verdict=True,
                steps=[v.index for v in tail],
                at=tail[0].index,
                confidence=0.5,
                message=f"{span([v.index for v in tail])}: the run ends with {len(tail)} empty or filler turns and no agent ever declared the task finished",
                outline=f"{span([v.index for v in tail])}: the run ends with {len(tail)} empty or filler turns and no agent ever declared the task finished",
            )
        ], True, ""
    content = final.step.content.strip()
    if final is last and content and _hands_over(content):
        return [], False, f"the run ends on {final.actor} asking someone else to act or answer; a rule cannot tell whether the task was over"
    if final is last and content and _ANNOUNCE.search(_last_sentence(content)) and not _ends_with_terminate(content):
        sentence = matching_sentence(content, _ANNOUNCE) or content[-120:]
        return [_finding(final, 0.55, f"step {final.index}: the run ends on {final.actor} announcing more work (\"{inline(sentence, 100)}\") that never happens", sentence, f"step {final.index}: the run ends on an agent announcing more work that never happens")], True, ""
    if view.trace.status == "error" and view.trace.error and not (final.message_action and final is last):
        return [_finding(last, 0.5, f"the run ends with an error (\"{inline(view.trace.error, 100)}\") and no final answer", None, "the run ends with an error the source recorded, and no final answer")], True, ""
    if last is final or view.trace.final_output:
        return [], True, "the run ends with an agent's answer, and no unresolved error before it"
    kind = "a user message" if last.is_user else ("a tool result" if last.is_tool_output else f"a {last.step.kind} step")
    return [], False, f"the trace ends with {kind}: it may be a capture cut before the agent's reply"


def step_quote_text(view: StepView) -> str | None:
    """The text of a step's best quote (its tool call arguments for a call step)."""
    quote = call_quote(view.step)
    return quote.quote or None


def _idle_tail(live: list[StepView]) -> list[StepView]:
    tail: list[StepView] = []
    for v in reversed(live):
        if v.is_tool_output or v.is_reasoning:
            continue
        if not v.filler:
            break
        tail.append(v)
    return tail[::-1]


def _after_error(view: TraceView, error: StepView) -> Finding | None:
    after = [v for v in view.live() if v.index > error.index]
    if any(v.is_user and v.message_action for v in after):
        return None  # a person took over: the conversation did not just stop
    replies = [v for v in after if v.is_agent and v.message_action]
    quote = [q for q in (evidence(error.step, error_line(error)),) if q.verified]
    if not replies:
        return Finding(
            detector="premature_termination",
            codes=["3.1"],
            verdict=True,
            steps=[error.index],
            at=error.index,
            evidence=quote,
            confidence=0.8 if error.error_explicit else 0.65,
            message=f"step {error.index}: the run ends right after this error, which nobody resolved: \"{inline(error_line(error), 100)}\"",
            outline=f"step {error.index}: the run ends right after an error there, which nobody resolved",
        )
    final = replies[-1]
    text = final.step.content
    if claims_success(text):
        why, confidence = "while the last message claims success", 0.55
    elif len(final.text) < SHORT_MESSAGE_CHARS or _ANNOUNCE.search(_last_sentence(text)) or _GIVE_UP.search(text):
        why, confidence = "and the last message does not resolve it", 0.65
    else:
        return None
    return Finding(
        detector="premature_termination",
        codes=["3.1"],
        verdict=True,
        steps=[error.index, final.index],
        at=error.index,
        evidence=quote + [q for q in (step_quote(final.step),) if q.verified],
        confidence=confidence,
        message=f"step {error.index}: the run ends with this error unresolved {why} (step {final.index})",
        outline=f"step {error.index}: the run ends with the error there unresolved {why} (step {final.index})",
    )

