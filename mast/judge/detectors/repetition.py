"""1.3 Step Repetition, and loops that run to the end of a trace (1.5).

An *action* is a tool call (tool name + normalised arguments) or a substantive agent message
(20+ normalised characters, not a courtesy or ``continue`` filler). Two consecutive actions of the
same actor repeat each other when they are the same (messages: near-identical, see
:func:`~mast.judge.detectors._view.same_text`) **and nothing new came back between them**: nothing at all came back after the first, or what came back after
the first equals what came back after the second, or both answer the same input (timestamps, ids
and durations masked).

So re-reading a log that keeps changing is not repetition (each read brings new output), a
re-run of the tests after an edit is not repetition (the edit is a different action between),
and "ok" / "thanks" are never actions. Waiting on a running process (``wait``, ``sleep``,
``poll``, empty writes to a process's stdin) is not an action either: its output counts as what
came back to the action that started the process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from mast.judge.detectors._view import StepView, TraceView, may_be_same_text, same_text
from mast.judge.detectors.report import Finding, call_quote, inline, span, step_quote

_WAIT_TOOL = re.compile(r"wait|sleep|poll", re.IGNORECASE)
_STDIN_TOOL = re.compile(r"stdin", re.IGNORECASE)
_DUPLICATE_WINDOW_S = 1.0
"""Two identical messages of one actor less than this apart are one message recorded twice."""
_TEXT_FIRST_RATIO = 4
"""Past this many characters of what came back per character of the two messages, their texts are compared first."""


@dataclass
class _Action:
    view: StepView
    signature: str
    is_call: bool
    back: list[StepView] = field(default_factory=list)
    """Steps that came back before the actor's next action of the same stream."""
    anything_back: bool = False
    """True when any step (result, reply, error) came back before that next action."""
    previous: _Action | None = None
    """The actor's previous action of the same stream."""

    @cached_property
    def observed(self) -> str:
        """Normalised text of what came back (filler left out); computed only when compared."""
        parts = [self.view.outputs] if self.view.step.tool_results else []
        for other in self.back:
            if not other.filler:
                parts.extend(p for p in (other.masked_text, other.outputs) if p)
        return "\n".join(parts)

    @property
    def before(self) -> str:
        """What came back to the actor's previous action: the input this action answers."""
        return self.previous.observed if self.previous is not None else ""


@dataclass
class Chain:
    """Consecutive repeats of one action by one actor."""

    actor: str
    members: list[_Action]
    results_unknown: bool

    @property
    def steps(self) -> list[int]:
        """Indices of the repeated steps."""
        return [m.view.index for m in self.members]


def _is_wait(view: StepView) -> bool:
    calls = view.step.tool_calls
    if not calls:
        return False
    for call in calls:
        args = call.arguments if isinstance(call.arguments, dict) else {}
        if _WAIT_TOOL.search(call.name):
            continue
        if _STDIN_TOOL.search(call.name) and not any(args.get(k) for k in ("chars", "input", "text", "data")):
            continue
        return False
    return True


def _actions(view: TraceView) -> list[_Action]:
    actions: list[_Action] = []
    for v in view.steps:
        if v.is_context or v.is_reasoning:
            continue
        if v.call_signature is not None and not _is_wait(v):
            actions.append(_Action(v, "call:" + v.call_signature, True))
        elif v.message_action:
            actions.append(_Action(v, "msg:" + v.text, False))
    return actions


def _stream(action: _Action) -> tuple[str, bool]:
    """The stream an action belongs to: one actor's tool calls, or that actor's messages.

    Narration between two identical calls ("checking again...") does not break their repetition.
    """
    return action.view.actor, action.is_call


def _observe(view: TraceView, actions: list[_Action]) -> None:
    """Fill in what came back to each action before its actor's next action of the same stream."""
    next_of: dict[int, int] = {}
    last_in_stream: dict[tuple[str, bool], _Action] = {}
    for action in actions:
        previous = last_in_stream.get(_stream(action))
        if previous is not None:
            next_of[previous.view.index] = action.view.index
        last_in_stream[_stream(action)] = action
    for action in actions:
        start = action.view.index
        stop = next_of.get(start, len(view))
        indices: set[int] = set()
        for call in action.view.step.tool_calls:
            if call.id:
                indices.update(i for i in view.results_of.get(call.id, []) if i != start)
        for k in range(start + 1, stop):
            other = view.steps[k]
            if other.is_context or (other.actor == action.view.actor and not other.step.tool_results):
                continue
            indices.add(k)
        action.back = [view.steps[k] for k in sorted(indices)]
        action.anything_back = bool(action.view.step.tool_results or indices)
    previous_of: dict[tuple[str, bool], _Action] = {}
    for action in actions:
        action.previous = previous_of.get(_stream(action))
        previous_of[_stream(action)] = action


def _recorded_twice(a: _Action, b: _Action) -> bool:
    """The same message written twice by the source (two event types, a span and its child)."""
    if a.is_call or a.anything_back:
        return False
    sa, sb = a.view.step, b.view.step
    if sa.kind != sb.kind or (sb.parent_id and sb.parent_id == sa.id) or (sa.parent_id and sa.parent_id == sb.id):
        return True
    if sa.started_at and sb.started_at:
        return abs((sb.started_at - sa.started_at).total_seconds()) < _DUPLICATE_WINDOW_S
    return False


def _nothing_new(a: _Action, b: _Action) -> bool:
    """Same answer after ``a`` as after ``b``, or the same input before both: nothing new came in."""
    return not a.anything_back or a.observed == b.observed or bool(a.before) and a.before == b.before


def _linked(a: _Action, b: _Action) -> bool:
    if a.signature == b.signature:
        return not _recorded_twice(a, b) and _nothing_new(a, b)
    if a.is_call or b.is_call or _recorded_twice(a, b):
        return False
    # Two messages: both tests must pass, and the cheaper runs first, since it usually settles it.
    # What came back is normalised in full (timestamps masked); the texts are compared on at most
    # their first ``_COMPARE_CHARS``. Long tool output in between: the texts first.
    if _back_chars(a) + _back_chars(b) <= _TEXT_FIRST_RATIO * (len(a.signature) + len(b.signature)):
        return _nothing_new(a, b) and same_text(a.signature, b.signature)
    return may_be_same_text(a.signature, b.signature) and _nothing_new(a, b) and same_text(a.signature, b.signature)


def _back_chars(action: _Action) -> int:
    return sum(len(v.step.content) + sum(len(r.output) for r in v.step.tool_results) for v in action.back)


def find_chains(view: TraceView) -> list[Chain]:
    """Every run of 2+ consecutive repeats of one action by one actor with nothing new between."""
    actions = _actions(view)
    _observe(view, actions)
    by_stream: dict[tuple[str, bool], list[_Action]] = {}
    for action in actions:
        by_stream.setdefault(_stream(action), []).append(action)
    chains: list[Chain] = []
    for (actor, _), own in by_stream.items():
        run: list[_Action] = [own[0]] if own else []
        for a, b in zip(own, own[1:], strict=False):
            if _linked(a, b):
                run.append(b)
                continue
            if len(run) >= 2:
                chains.append(_chain(actor, run))
            run = [b]
        if len(run) >= 2:
            chains.append(_chain(actor, run))
    chains.sort(key=lambda c: c.steps[0])
    return [c for c in chains if not c.results_unknown or len(c.members) >= 3]


def _chain(actor: str, members: list[_Action]) -> Chain:
    unknown = all(m.is_call and not m.anything_back for m in members)
    return Chain(actor=actor, members=list(members), results_unknown=unknown)


def _describe(chain: Chain) -> str:
    first = chain.members[0]
    n = len(chain.members)
    where = span(chain.steps)
    if first.is_call:
        call = first.view.step.tool_calls[0]
        quote = call_quote(first.view.step).quote
        what = f"the same tool call `{call.name} {inline(quote, 100)}`" if quote and quote != call.name else f"the same tool call `{call.name}`"
        if chain.results_unknown:
            back = "(no results recorded)"
        elif not first.observed:
            back = "with nothing coming back in between"
        else:
            back = "and gets the same result each time"
        return f"{where}: {chain.actor} repeats {what} {n} times {back}"
    quote = step_quote(first.view.step).quote
    back = "with nothing new in between" if not first.observed else "and gets the same reply each time"
    return f"{where}: {chain.actor} sends the same message {n} times {back}: \"{inline(quote, 100)}\""


def _outline(chain: Chain) -> str:
    first = chain.members[0]
    what = "tool call" if first.is_call else "message"
    if chain.results_unknown:
        back = "(no results recorded)"
    elif not first.observed:
        back = "with nothing coming back in between"
    else:
        back = "with the same result each time" if first.is_call else "with the same reply each time"
    return f"{span(chain.steps)}: the same {what} by one agent, {len(chain.members)} times {back}"


def repetition_findings(view: TraceView) -> tuple[list[Finding], list[Chain]]:
    """1.3 findings, one per chain; the chains are returned too for the loop check."""
    findings: list[Finding] = []
    chains = find_chains(view)
    for chain in chains:
        n = len(chain.members)
        confidence = 0.55 if chain.results_unknown else (0.85 if n >= 3 else 0.7)
        quote = call_quote if chain.members[0].is_call else step_quote
        quotes = [quote(chain.members[0].view.step), quote(chain.members[-1].view.step)]
        findings.append(
            Finding(
                detector="step_repetition",
                codes=["1.3"],
                verdict=True,
                steps=chain.steps,
                at=chain.steps[1],
                evidence=[q for q in quotes if q.verified],
                confidence=confidence,
                message=_describe(chain),
                outline=_outline(chain),
            )
        )
    return findings, chains


def loop_to_end_findings(view: TraceView, chains: list[Chain]) -> list[Finding]:
    """1.5: the run ends inside a loop of 3+ identical rounds (the agents never stopped it).

    The loop is the span of the last chain of 3+ repeats; the run never left it when every action
    after that span repeats (near-identically) an action inside it.
    """
    long_chains = [c for c in chains if len(c.members) >= 3]
    if not long_chains:
        return []
    last = max(long_chains, key=lambda c: c.steps[-1])
    first, end = last.steps[0], last.steps[-1]
    actions = _actions(view)
    inside = [a for a in actions if first <= a.view.index <= end]
    after = [a for a in actions if a.view.index > end]
    # Each distinct action inside the loop once: a loop repeats a few actions many times.
    known = {a.signature for a in inside}
    if any(a.signature not in known and not any(same_text(a.signature, b) for b in known) for a in after):
        return []
    actors = sorted({a.view.actor for a in inside + after if not a.view.is_user})
    steps = [a.view.index for a in inside + after]
    who = f"{' and '.join(actors)} keep repeating the same exchange" if len(actors) > 1 else f"{actors[0]} keeps repeating the same action"
    return [
        Finding(
            detector="loop_until_end",
            codes=["1.5"],
            verdict=True,
            steps=steps,
            at=last.steps[2],
            evidence=[q for q in (step_quote(view.steps[steps[0]].step), step_quote(view.steps[steps[-1]].step)) if q.verified],
            confidence=0.7,
            message=f"{span(steps)}: {who} until the run ends ({len(last.members)} rounds), never recognising it should stop",
            outline=f"{span(steps)}: the same {'exchange' if len(actors) > 1 else 'action'} repeats until the run ends ({len(last.members)} rounds), never recognised as a reason to stop",
        )
    ]
