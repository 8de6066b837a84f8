"""A read-only view of a trace that every detector shares: who acted, what they did, what came back.

Built once per trace (:class:`TraceView`) so each detector reads pre-normalised text instead of
re-parsing steps. Normalisation is deliberately simple: lower case, volatile tokens (timestamps,
uuids, hex ids, durations) masked, whitespace collapsed. Two outputs that differ only by a
timestamp or a request id count as the same; outputs that differ by anything else count as new
information.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import cached_property

import orjson

from mast.trace import Step, Trace

NEAR_IDENTICAL = 0.9
"""difflib ratio from which two agent messages count as the same message."""
MIN_MESSAGE_CHARS = 20
"""Normalised messages shorter than this (``ok``, ``done``...) are never treated as actions."""
_COMPARE_CHARS = 2_000
"""Only this much of each message is compared, to keep the check linear in trace length."""

# Every alternative starts on a hex digit: the lookahead lets the regex skip other characters fast.
_VOLATILE = re.compile(
    r"(?<![0-9a-z])(?=[0-9a-f])(?:"
    r"\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?"  # ISO timestamps
    r"|\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b"  # clock times
    r"|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"  # uuids
    r"|(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{6,}\b"  # hex ids and hashes
    r"|\d+(?:\.\d+)?\s?(?:ms|s|secs?|seconds?)\b)"  # durations
)
_DIGIT = re.compile(r"\d")
LONG_TEXT = 8_000
"""Texts longer than this are compared by head, tail, length and a hash of the middle."""
_EDGE = 3_000

_USERS = frozenset({"user", "human"})
_NOT_AGENTS = frozenset({"user", "human", "tool", "system", "environment"})

# Courtesy, "continue" and sign-off phrases: a message made only of these carries no work.
_FILLER_PHRASE = re.compile(
    r"thank(?:s| you)(?: (?:very|so) much| again| a lot)?(?: for [^.!?\n]{0,60})?|many thanks|cheers"
    r"|you(?:'| a)?re (?:very |most )?welcome|no problem|my pleasure|any ?time|happy to help"
    r"|glad (?:i|to|we) (?:could |can )?(?:help|assist|be of help)"
    r"|(?:please )?(?:continue|proceed|go on|go ahead|keep going)|ok(?:ay)?|sure|great|perfect|awesome"
    r"|sounds good|got it|understood|noted|yes|done|terminate|bye|goodbye|good luck"
    r"|have a (?:great|nice|good|wonderful) (?:day|one)"
    r"|(?:let me|let us) know if (?:you|there) (?:need|have|is) anything(?: else)?"
    r"|feel free to (?:ask|reach out)(?: if you (?:have|need) (?:any )?(?:more|other|further)? ?(?:questions|help))?"
    r"|if you have any (?:more |other |further )?questions,? feel free to ask"
)
_FILLER_RESIDUE = re.compile(r"[\W_]+")
_CONTINUE_NUDGE = re.compile(r"^(?:please )?(?:continue|keep going|go on|proceed)\b")
MAX_FILLER_CHARS = 200
MAX_NUDGE_CHARS = 300

# What a failing tool or command prints. Matched on tool outputs and code-execution replies only,
# never on an agent's own prose (agents talk about errors all the time).
_ERROR_TEXT = re.compile(
    r"traceback \(most recent call last\)"
    r"|^[ \t]*(?:[\w.]{0,60}(?:error|exception)|fatal|err!?)(?:\[[^\]\n]{0,40}\])?:"
    r"|\bexit(?:ed)?\s*(?:with\s*)?(?:code|status)\s*[:=]?\s*-?[1-9]\d*"
    r"|\bexitcode:\s*-?[1-9]"
    r"|\bnon-zero exit|\bcommand not found|\bpermission denied|\bno such file or directory"
    r"|\bsegmentation fault|\btimed out\b|\b[1-9]\d*\s+(?:failed|errors?)\b"
    r"|\b[45]\d\d\s+(?:bad request|unauthorized|forbidden|not found|internal server error|bad gateway"
    r"|service unavailable|gateway timeout|too many requests)",
    re.IGNORECASE | re.MULTILINE,
)
_ERROR_CAPS = re.compile(r"\bFAILED\b|^ERROR\b", re.MULTILINE)
_EXEC_REPLY = re.compile(r"^\s*exitcode:\s*(-?\d+)", re.IGNORECASE)


def normalize(text: str) -> str:
    """Lower case, volatile tokens masked, whitespace collapsed.

    A very long text keeps its head and tail, with its length and a hash of the (unmasked) middle
    between them: equal texts stay equal, and masking stays linear in what is compared.
    """
    if len(text) > LONG_TEXT:
        middle = f" <{len(text)} chars, middle {hash(text[_EDGE:-_EDGE]) & 0xFFFFFFFF:x}> "
        return _mask(text[:_EDGE]) + middle + _mask(text[-_EDGE:])
    return _mask(text)


def _mask(text: str) -> str:
    lowered = text.lower()
    # Every volatile token holds a digit: text without one needs no regex pass.
    if not _DIGIT.search(lowered):
        return " ".join(lowered.split())
    return " ".join(_VOLATILE.sub("#", lowered).split())


def flatten(text: str) -> str:
    """Lower case and whitespace collapsed (no masking): cheap, for messages and length checks."""
    if len(text) > LONG_TEXT:
        middle = f" <{len(text)} chars, middle {hash(text[_EDGE:-_EDGE]) & 0xFFFFFFFF:x}> "
        return " ".join(text[:_EDGE].lower().split()) + middle + " ".join(text[-_EDGE:].lower().split())
    return " ".join(text.lower().split())


def same_text(a: str, b: str) -> bool:
    """True when two normalised texts are identical or near-identical (difflib ratio >= 0.9)."""
    if a == b:
        return True
    if not a or not b:
        return False
    short, long = sorted((len(a), len(b)))
    # ratio = 2 * matches / (len(a) + len(b)) cannot reach the threshold below this length ratio.
    if short / long < NEAR_IDENTICAL / (2 - NEAR_IDENTICAL):
        return False
    # autojunk off: with it, long texts made of common characters (code) score near zero.
    matcher = SequenceMatcher(None, a[:_COMPARE_CHARS], b[:_COMPARE_CHARS], autojunk=False)
    return matcher.quick_ratio() >= NEAR_IDENTICAL and matcher.ratio() >= NEAR_IDENTICAL


def is_filler(text: str) -> bool:
    """True for a message made only of courtesy, ``continue`` or sign-off phrases (or nothing)."""
    if len(text) > MAX_NUDGE_CHARS:
        return False
    if _CONTINUE_NUDGE.match(text):
        return True
    if len(text) > MAX_FILLER_CHARS:
        return False
    return not _FILLER_RESIDUE.sub("", _FILLER_PHRASE.sub(" ", text))


# Every failure pattern contains one of these words: a fast literal scan finds the few lines
# worth the full patterns.
_ERROR_WORD = re.compile(
    r"traceback|error|exception|fatal|err!|exit|non-zero|not found|denied|no such file|segmentation"
    r"|timed out|failed|bad request|unauthorized|forbidden|unavailable|bad gateway|timeout|too many requests"
)
_ERROR_WORDS = tuple(_ERROR_WORD.pattern.split("|"))
_ERROR_EDGE = 2_000
"""Failures show at the start or the end of an output: only that much of each end is searched."""
_MAX_CANDIDATE_LINES = 40


def _edges(text: str) -> str:
    if len(text) <= 2 * _ERROR_EDGE:
        return text
    return text[:_ERROR_EDGE] + "\n" + text[-_ERROR_EDGE:]


def error_lines(text: str) -> Iterator[str]:
    """Lines of tool or command output that read like a failure (traceback, non-zero exit...)."""
    edges = _edges(text)
    lowered = edges.lower()
    # A plain substring test per word runs at C speed; most outputs hold none of them.
    if not any(word in lowered for word in _ERROR_WORDS):
        return
    seen: set[int] = set()
    for match in _ERROR_WORD.finditer(lowered):
        start = lowered.rfind("\n", 0, match.start()) + 1
        if start in seen:
            continue
        seen.add(start)
        if len(seen) > _MAX_CANDIDATE_LINES:
            return
        end = lowered.find("\n", match.end())
        line = edges[start : end if end >= 0 else len(edges)]
        if _ERROR_TEXT.search(line) or _ERROR_CAPS.search(line):
            yield line.strip()


def error_in_output(text: str) -> bool:
    """True when tool or command output reads like a failure (traceback, non-zero exit...)."""
    return next(error_lines(text), None) is not None


def exec_reply_failed(text: str) -> bool | None:
    """For an AG2-style code-execution reply (``exitcode: N ...``): whether it failed; else None."""
    match = _EXEC_REPLY.match(text)
    if not match:
        return None
    return int(match.group(1)) != 0


def error_line(view: StepView) -> str:
    """The line of a step's error that shows the failure best (the matching line, else the first)."""
    text = view.error or ""
    found = next(error_lines(text), None)
    return found if found is not None else next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


def _arguments(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode()


@dataclass
class StepView:
    """What the detectors need to know about one step, computed once."""

    step: Step
    actor: str
    """Who acted: the step's agent, else its role, else its kind."""
    text: str
    """Content lower-cased with whitespace collapsed (see :func:`flatten`)."""
    is_context: bool
    """System or developer instructions, injected context: never an action, never information."""
    is_user: bool
    """Written by the user or a human."""
    is_reasoning: bool
    """A model's private reasoning: the actor thinking, not acting."""
    call_signature: str | None
    """Tool name(s) plus normalised arguments, when the step asks for tools."""
    error: str | None
    """The failure this step reports (explicit flag, error step, or failing command output)."""
    error_explicit: bool
    """True when the source itself marked the failure (not inferred from text)."""
    filler: bool
    """A message with no work in it: courtesy, ``continue``, sign-off, or empty."""

    @property
    def index(self) -> int:
        """The step's index in the trace."""
        return self.step.index

    @cached_property
    def outputs(self) -> str:
        """Normalised text (see :func:`normalize`) of the tool results this step carries."""
        return " | ".join(normalize(r.output) for r in self.step.tool_results)

    @cached_property
    def masked_text(self) -> str:
        """Normalised content (see :func:`normalize`), for comparing what came back to an action."""
        return normalize(self.step.content)

    @property
    def is_agent(self) -> bool:
        """An agent (not the user, a tool or the system) wrote this step."""
        return not self.is_context and self.actor.lower() not in _NOT_AGENTS and self.step.role not in ("tool", "system", "developer")

    @property
    def is_tool_output(self) -> bool:
        """The step only delivers tool results."""
        return bool(self.step.tool_results) and not self.step.tool_calls and not self.step.content.strip()

    @property
    def message_action(self) -> bool:
        """A substantive message: long enough, not filler, not reasoning, not context."""
        return (
            not self.is_context
            and not self.is_reasoning
            and self.call_signature is None
            and self.step.kind in ("message", "llm", "plan")
            and self.step.role not in ("tool",)
            and len(self.text) >= MIN_MESSAGE_CHARS
            and not self.filler
        )


def _view(step: Step) -> StepView:
    actor = step.agent or step.role or step.kind
    text = flatten(step.content)
    is_context = step.kind == "system" or step.role in ("system", "developer")
    calls = None
    if step.tool_calls:
        calls = " | ".join(
            f"{c.name}({normalize(_arguments(c.arguments) or c.arguments_raw or '')})" for c in step.tool_calls
        )
    error, explicit = _step_error(step)
    filler = (
        not is_context
        and calls is None
        and not step.tool_results
        and step.kind == "message"
        and is_filler(text)
    )
    return StepView(
        step=step,
        actor=actor,
        text=text,
        is_context=is_context,
        is_user=actor.lower() in _USERS,
        is_reasoning=bool(step.attributes.get("reasoning")),
        call_signature=calls,
        error=error,
        error_explicit=explicit,
        filler=filler,
    )


def _step_error(step: Step) -> tuple[str | None, bool]:
    if step.kind == "error":
        return (step.error or step.content or "error"), True
    for result in step.tool_results:
        if result.is_error:
            return result.output or step.error or "tool error", True
    if step.error:
        return step.error, True
    for result in step.tool_results:
        if error_in_output(result.output):
            return result.output, False
    if step.role == "tool" or step.kind in ("tool_result", "observation"):
        if step.content and error_in_output(step.content):
            return step.content, False
    elif step.kind == "message" and exec_reply_failed(step.content):
        return step.content, False
    return None, False


@dataclass
class TraceView:
    """Every step's :class:`StepView`, plus the links detectors need (call id -> result steps)."""

    trace: Trace
    steps: list[StepView] = field(init=False)
    results_of: dict[str, list[int]] = field(init=False)
    """Tool-call id -> indices of the steps that carry its results."""

    def __post_init__(self) -> None:
        self.steps = [_view(step) for step in self.trace.steps]
        self.results_of = {}
        for view in self.steps:
            for result in view.step.tool_results:
                if result.call_id:
                    self.results_of.setdefault(result.call_id, []).append(view.index)

    def __len__(self) -> int:
        return len(self.steps)

    def live(self) -> list[StepView]:
        """Steps that are part of the run (injected context and instructions left out)."""
        return [v for v in self.steps if not v.is_context]
