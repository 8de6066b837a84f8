"""A read-only view of a trace that every detector shares: who acted, what they did, what came back.

Built once per trace (:class:`TraceView`) so each detector reads pre-normalised text instead of
re-parsing steps. Normalisation is deliberately simple: lower case, volatile tokens (timestamps,
uuids, hex ids, durations) masked, whitespace collapsed. Two outputs that differ only by a
timestamp or a request id count as the same; outputs that differ by anything else count as new
information.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import cached_property, lru_cache
from operator import mul

import orjson

from mast._json import canonical
from mast.trace import Step, Trace

NEAR_IDENTICAL = 0.9
"""Share of characters two agent messages must have in common, in order, to count as the same message."""
SHARED_WORDS = 0.8
"""Share of characters (whitespace aside) that must lie in words both texts contain, for them to be the same."""
MIN_MESSAGE_CHARS = 20
"""Normalised messages shorter than this (``ok``, ``done``...) are never treated as actions."""
_COMPARE_CHARS = 2_000
"""Only this much of each message is compared, to keep the check linear in trace length."""
_GAP_CHARS = 500
"""Within one differing stretch, at most this many characters of each side are aligned character by character."""
# A word or one punctuation mark, with the whitespace before it: the pieces add up to the text.
_TOKEN = re.compile(r"\s*(?:\w+|[^\w\s])")
_WORD = re.compile(r"\w+|\S")

# A volatile token starts a run of letters and digits, on a hex digit. The pattern consumes that
# first character before anything else (each alternative goes on from its second character), so
# ``re`` skips every other character in its fast scan instead of testing assertions everywhere.
_VOLATILE = re.compile(
    r"[0-9a-f](?<![0-9a-z][0-9a-f])(?:"
    r"(?<=\d)\d{3}-\d{2}-\d{2}[t ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:z|[+-]\d{2}:?\d{2})?"  # ISO timestamps
    r"|(?<=\d)\d?:\d{2}:\d{2}(?:\.\d+)?\b"  # clock times
    r"|[0-9a-f]{7}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"  # uuids
    r"|(?:(?<=\d)|(?=[0-9a-f]*\d))(?:(?<=[a-f])|(?=[0-9a-f]*[a-f]))[0-9a-f]{5,}\b"  # hex ids and hashes
    r"|(?<=\d)\d*(?:\.\d+)?\s?(?:ms|s|secs?|seconds?)\b)"  # durations
)
_DIGIT = re.compile(r"\d")
# An id a tool labels as one (``Chunk ID: 853167``, ``request_id=7731``): masked whatever its
# digits, since an all-digit id escapes the hex-id rule above. Codex prints a new chunk id on
# every command's output.
_LABELLED_ID = re.compile(
    r"\b((?:chunk|request|trace|span|session|call|run|process|job|task|message|event|correlation)[ _-]?id)"
    r"[ \t]{0,3}[:=][ \t]{0,3}[0-9a-z_.-]{1,64}"
)
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
    return " ".join(_LABELLED_ID.sub(r"\1: #", _VOLATILE.sub("#", lowered)).split())


def flatten(text: str) -> str:
    """Lower case and whitespace collapsed (no masking): cheap, for messages and length checks."""
    if len(text) > LONG_TEXT:
        middle = f" <{len(text)} chars, middle {hash(text[_EDGE:-_EDGE]) & 0xFFFFFFFF:x}> "
        return " ".join(text[:_EDGE].lower().split()) + middle + " ".join(text[-_EDGE:].lower().split())
    return " ".join(text.lower().split())


def same_text(a: str, b: str) -> bool:
    """True when two normalised texts are identical or near-identical.

    Near-identical means two things, both computed on the first ``_COMPARE_CHARS`` of each text:

    - they say the same words: at least :data:`SHARED_WORDS` of their words (weighted by length,
      in any order) are found in both. A template whose every number or name changed is a
      different message; and this cheap test spares the alignment below for most pairs;
    - at least :data:`NEAR_IDENTICAL` of the characters of both can be matched in order,
      ``2 * matched / (len(a) + len(b))`` as :class:`difflib.SequenceMatcher` counts it. The
      alignment is made word by word, then character by character only inside the stretches that
      differ, so it stays cheap on long texts.
    """
    if a == b:
        return True
    if not may_be_same_text(a, b):
        return False
    ta, tb = _tokens(a), _tokens(b)
    total = _chars(ta) + _chars(tb)
    need = NEAR_IDENTICAL * total / 2
    # Common head and tail first: the usual case is a message re-sent with a small change.
    n = min(len(ta), len(tb))
    head = 0
    while head < n and ta[head] == tb[head]:
        head += 1
    tail = 0
    while tail < n - head and ta[-1 - tail] == tb[-1 - tail]:
        tail += 1
    ma, mb = ta[head : len(ta) - tail], tb[head : len(tb) - tail]
    matched = _chars(ta[:head]) + _chars(ta[len(ta) - tail :])
    if matched >= need:
        return True
    if matched + min(_chars(ma), _chars(mb)) < need:
        return False
    # autojunk off: with it, frequent words (``the``, brackets in code) would never be matched.
    gaps: list[tuple[str, str]] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, ma, mb, autojunk=False).get_opcodes():
        if tag == "equal":
            matched += _chars(ma[i1:i2])
        elif tag == "replace":
            gaps.append(("".join(ma[i1:i2])[:_GAP_CHARS], "".join(mb[j1:j2])[:_GAP_CHARS]))
    if matched >= need:
        return True
    possible = matched + sum(min(len(x), len(y)) for x, y in gaps)
    for x, y in gaps:
        if possible < need:
            return False
        found = sum(block.size for block in SequenceMatcher(None, x, y, autojunk=False).get_matching_blocks())
        matched += found
        possible -= min(len(x), len(y)) - found
        if matched >= need:
            return True
    return False


def may_be_same_text(a: str, b: str) -> bool:
    """The cheap half of :func:`same_text`: False when lengths or shared words already rule it out."""
    if a == b:
        return True
    if not a or not b:
        return False
    short, long = sorted((len(a), len(b)))
    # ratio = 2 * matches / (len(a) + len(b)) cannot reach the threshold below this length ratio.
    if short / long < NEAR_IDENTICAL / (2 - NEAR_IDENTICAL):
        return False
    wa, wb = _words(a), _words(b)
    common = wa.bag.keys() & wb.bag.keys()
    shared = sum(map(min, map(wa.bag.__getitem__, common), map(wb.bag.__getitem__, common)))
    return 2 * shared >= SHARED_WORDS * (wa.weight + wb.weight)


@dataclass(frozen=True)
class _Words:
    bag: dict[str, int]
    """Each word or punctuation mark -> its characters in the text (length x occurrences)."""
    weight: int
    """Characters of the text outside whitespace (the bag's total)."""


# Cached: an action's text is compared with the one before it and the one after it.
@lru_cache(maxsize=256)
def _words(text: str) -> _Words:
    counts = Counter(_WORD.findall(text, 0, _COMPARE_CHARS))
    # Built with map and zip rather than a loop: this runs once for every message of a long chat.
    bag = dict(zip(counts, map(mul, counts.values(), map(len, counts)), strict=True))
    return _Words(bag, sum(bag.values()))


@lru_cache(maxsize=64)
def _tokens(text: str) -> tuple[str, ...]:
    """Words and punctuation marks, each with the whitespace before it: they add up to the text."""
    return tuple(_TOKEN.findall(text, 0, _COMPARE_CHARS))


def _chars(tokens: tuple[str, ...]) -> int:
    return sum(map(len, tokens))


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


# Free-text arguments a coding agent writes for the reader, not the tool: Claude Code's ``Bash``
# takes a ``description`` it rewords on every call, other tools a ``reason`` or ``comment``. Two
# calls that run the same command are the same action whatever they say about it, so these keys
# are left out of the call's signature (unless they are all the call has).
NARRATIVE_ARGUMENTS = frozenset({
    "description", "comment", "comments", "reason", "reasoning", "explanation", "thought", "thoughts",
    "rationale", "justification", "purpose", "intent",
})


# How long to wait and how much output to keep: Codex's ``exec_command`` sets ``yield_time_ms`` and
# ``max_output_tokens`` anew on each call, Claude Code's ``Bash`` a ``timeout``. The same command
# with another limit is the same action.
EXECUTION_LIMITS = frozenset({
    "timeout", "timeout_ms", "timeout_s", "timeout_sec", "timeout_seconds", "yield_time_ms",
    "max_output_tokens", "max_output_chars", "max_output_length", "max_tokens",
})


def _arguments(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        ignored = NARRATIVE_ARGUMENTS | EXECUTION_LIMITS
        meaningful = {k: v for k, v in value.items() if str(k).lower() not in ignored}
        if meaningful:
            value = meaningful
    return canonical(value)


_JSON_ERROR_STATUS = frozenset({"error", "errored", "failed", "failure", "fail"})
_EXIT_KEYS = ("exit_code", "exitcode", "exit_status", "returncode", "return_code", "status_code_exit")


def json_error(text: str) -> str | None:
    """The failure a tool reports as a JSON object, else ``None``.

    ``{"status": "error", "message": ...}``, ``{"error": ...}`` (a non-empty value),
    ``{"success": false}`` / ``{"ok": false}``, or a non-zero ``exit_code`` / ``returncode``:
    what API wrappers and MCP tools return instead of raising. Returns the message when there is one.
    """
    stripped = text.strip()
    if not stripped.startswith("{") or len(stripped) > LONG_TEXT:
        return None
    try:
        value = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict):
        return None
    keys = {str(k).lower(): v for k, v in value.items()}
    message = next((str(keys[k]) for k in ("message", "error_message", "detail", "reason") if keys.get(k)), None)
    status = keys.get("status")
    failed = (isinstance(status, str) and status.lower() in _JSON_ERROR_STATUS) or keys.get("success") is False \
        or keys.get("ok") is False
    error = keys.get("error")
    if error not in (None, False, "", {}, []):
        failed = True
        message = message or (error if isinstance(error, str) else canonical(error))
    for key in _EXIT_KEYS:
        code = keys.get(key)
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            failed = True
            message = message or f"{key} {code}"
    if not failed:
        return None
    return message or stripped[:200]


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
        if error_in_output(result.output) or json_error(result.output) is not None:
            return result.output, False
    if step.role == "tool" or step.kind in ("tool_result", "observation"):
        if step.content and (error_in_output(step.content) or json_error(step.content) is not None):
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
