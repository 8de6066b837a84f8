"""The judge's answer models: what the LLM must send back, generated from the taxonomy.

The pydantic models are the prompt contract. Their JSON Schema goes to the provider (as a
``response_format``, a tool's parameters, or text in JSON mode); the same models parse the answer.
Evidence and rationale come before ``present`` in every verdict so the model writes its reasons
before it commits to a verdict.

Free strings carry a ``maxLength`` in the schema only: with grammar-constrained decoding (llama.cpp)
it stops a small model from rambling until it runs out of tokens, while parsing stays lenient so an
answer from an unconstrained provider that is a little long is not thrown away.

Example:
    >>> from mast.taxonomy import load_taxonomy
    >>> spec = diagnosis_spec(load_taxonomy())
    >>> spec.name, sorted(spec.schema["properties"])
    ('mast_diagnosis', ['failure_modes', 'first_failure', 'summary', 'task_completed'])
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

import json_repair
import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from mast.taxonomy import Taxonomy, normalize_code

DIAGNOSIS_SCHEMA_NAME = "mast_diagnosis"
WINDOW_SCHEMA_NAME = "mast_window_findings"

QUOTE_MAX_CHARS = 300
TEXT_MAX_CHARS = 400
SUMMARY_MAX_CHARS = 600
AGENT_MAX_CHARS = 80
MAX_EVIDENCE = 3
MAX_FINDINGS = 10


@dataclass(frozen=True)
class Limits:
    """Caps written into the answer schema (``maxLength`` / ``maxItems``).

    A server that decodes with the schema as a grammar lets a model write every string up to its
    ``maxLength``; small models do exactly that. :func:`limits_for` sizes the caps so that even
    such an answer ends within the output token budget.
    """

    evidence: int = MAX_EVIDENCE
    """Quotes per mode."""
    quote: int = QUOTE_MAX_CHARS
    """Characters per quote."""
    text: int = TEXT_MAX_CHARS
    """Characters per rationale, note or explanation."""
    summary: int = SUMMARY_MAX_CHARS
    """Characters of the summary."""
    findings: int = MAX_FINDINGS
    """Findings per window."""


FULL_LIMITS = Limits()
# From roomy to tight; (evidence, quote, text, summary, findings).
_TIERS = [
    FULL_LIMITS,
    Limits(2, 200, 300, 500, 8),
    Limits(2, 150, 200, 400, 6),
    Limits(1, 150, 150, 300, 5),
    Limits(1, 100, 100, 240, 4),
    Limits(1, 60, 60, 160, 3),
    Limits(1, 40, 30, 100, 2),
]
# Worst-case token costs, measured on pretty-printed answers: a rambling small model writes about
# 2.5 characters per token, and each verdict object costs ~60 tokens of keys and indentation.
_CHARS_PER_TOKEN = 2.5
_MODE_FRAME_TOKENS = 60
_EVIDENCE_FRAME_TOKENS = 20
_FINDING_FRAME_TOKENS = 45
_ANSWER_FRAME_TOKENS = 90


def worst_case_tokens(limits: Limits, n_modes: int) -> tuple[int, int]:
    """Most tokens a diagnosis answer and a window answer can take under ``limits``."""
    per_mode = (
        _MODE_FRAME_TOKENS
        + (limits.evidence - 1) * _EVIDENCE_FRAME_TOKENS
        + (limits.evidence * limits.quote + limits.text) / _CHARS_PER_TOKEN
    )
    diagnosis = (
        n_modes * per_mode
        + _ANSWER_FRAME_TOKENS
        + (AGENT_MAX_CHARS + limits.text + limits.summary) / _CHARS_PER_TOKEN
    )
    per_finding = _FINDING_FRAME_TOKENS + (limits.quote + limits.text) / _CHARS_PER_TOKEN
    window = limits.findings * per_finding + _ANSWER_FRAME_TOKENS + limits.summary / _CHARS_PER_TOKEN
    return int(diagnosis), int(window)


def limits_for(max_tokens: int, n_modes: int) -> Limits:
    """The roomiest caps whose worst-case answers fit in 90% of ``max_tokens`` (the tightest otherwise)."""
    budget = max_tokens * 0.9
    for tier in _TIERS:
        diagnosis, window = worst_case_tokens(tier, n_modes)
        if diagnosis <= budget and window <= budget:
            return tier
    return _TIERS[-1]


def _limit(chars: int) -> Any:
    return {"maxLength": chars}


class _Answer(BaseModel):
    # Lenient on extra keys: a model adding a field should not cost a re-ask.
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class EvidenceAnswer(_Answer):
    """One quote the judge cites."""

    step: int | None = Field(description="Step number n of the [S<n>] line the quote comes from.")
    quote: str = Field(
        description="Text copied exactly from that step.", json_schema_extra=_limit(QUOTE_MAX_CHARS)
    )


class ModeAnswer(_Answer):
    """The judge's verdict on one mode: evidence, then rationale, then the verdict."""

    evidence: list[EvidenceAnswer] = Field(default_factory=list, json_schema_extra={"maxItems": MAX_EVIDENCE})
    rationale: str = Field(default="", json_schema_extra=_limit(TEXT_MAX_CHARS))
    present: bool
    confidence: float | None = Field(default=None, ge=0.0, le=1.0)


class DiagnosisAnswerBase(_Answer):
    """Common part of the diagnosis answer; ``failure_modes`` is added per taxonomy."""

    task_completed: bool | None = None
    summary: str = Field(default="", json_schema_extra=_limit(SUMMARY_MAX_CHARS))


class WindowAnswerBase(_Answer):
    """Common part of one window's findings; ``findings`` is added per taxonomy."""

    summary: str = Field(default="", json_schema_extra=_limit(SUMMARY_MAX_CHARS))


@dataclass(frozen=True)
class OutputSpec:
    """An answer shape: its name, the pydantic model that parses it, and the JSON Schema sent out."""

    name: str
    """Schema / tool name (``mast_diagnosis``)."""
    model: type[BaseModel]
    """Parses the answer."""
    schema: dict[str, Any]
    """JSON Schema given to the provider: every property required, no extra properties."""
    description: str
    """One line describing the answer (tool description)."""


class AnswerInvalid(ValueError):
    """The model's text is not a valid answer; the message is sent back to it on a re-ask."""


def _codes_literal(taxonomy: Taxonomy) -> Any:
    return Literal[tuple(taxonomy.codes)]


def _field_name(code: str) -> str:
    return "m_" + re.sub(r"\W", "_", code)


def _diagnosis_spec(taxonomy: Taxonomy, limits: Limits) -> OutputSpec:
    codes = _codes_literal(taxonomy)
    modes_fields: dict[str, Any] = {
        _field_name(code): (
            ModeAnswer | None,
            Field(default=None, alias=code, description=taxonomy.mode(code).name),
        )
        for code in taxonomy.codes
    }
    failure_modes = create_model("FailureModes", __base__=_Answer, **modes_fields)
    first_failure = create_model(
        "FirstFailureAnswer",
        __base__=_Answer,
        step=(int | None, Field(default=None, description="Step number of the decisive error.")),
        agent=(str | None, Field(default=None, json_schema_extra=_limit(AGENT_MAX_CHARS))),
        code=(codes | None, Field(default=None)),
        explanation=(str, Field(default="", json_schema_extra=_limit(TEXT_MAX_CHARS))),
    )
    answer = create_model(
        "DiagnosisAnswer",
        __base__=_Answer,
        failure_modes=(failure_modes, Field(description="One verdict per failure-mode code.")),
        task_completed=(bool | None, None),
        first_failure=(first_failure | None, None),
        summary=(str, Field(default="", json_schema_extra=_limit(SUMMARY_MAX_CHARS))),
    )
    schema = strict_schema(answer.model_json_schema(by_alias=True))
    # Every mode is required and must be a verdict object (not null) in what the model is asked for;
    # only parsing tolerates an omitted mode, which then reads "not assessed".
    modes_def = schema["$defs"]["FailureModes"]
    modes_def["properties"] = {code: {"$ref": "#/$defs/ModeAnswer"} for code in taxonomy.codes}
    defs = schema["$defs"]
    defs["EvidenceAnswer"]["properties"]["quote"]["maxLength"] = limits.quote
    defs["ModeAnswer"]["properties"]["evidence"]["maxItems"] = limits.evidence
    defs["ModeAnswer"]["properties"]["rationale"]["maxLength"] = limits.text
    defs["FirstFailureAnswer"]["properties"]["explanation"]["maxLength"] = limits.text
    schema["properties"]["summary"]["maxLength"] = limits.summary
    return OutputSpec(
        name=DIAGNOSIS_SCHEMA_NAME,
        model=answer,
        schema=schema,
        description="The verdict on every MAST failure mode for the run, with evidence.",
    )


def _window_spec(taxonomy: Taxonomy, limits: Limits) -> OutputSpec:
    codes = _codes_literal(taxonomy)
    finding = create_model(
        "Finding",
        __base__=_Answer,
        step=(int, Field(description="Step number of the quote.")),
        quote=(
            str,
            Field(
                description="Text copied exactly from that step.", json_schema_extra=_limit(QUOTE_MAX_CHARS)
            ),
        ),
        note=(str, Field(default="", json_schema_extra=_limit(TEXT_MAX_CHARS))),
        code=(codes, Field(description="The failure mode this supports.")),
    )
    answer = create_model(
        "WindowAnswer",
        __base__=_Answer,
        findings=(list[finding], Field(default_factory=list, json_schema_extra={"maxItems": MAX_FINDINGS})),
        summary=(str, Field(default="", json_schema_extra=_limit(SUMMARY_MAX_CHARS))),
    )
    schema = strict_schema(answer.model_json_schema(by_alias=True))
    finding_def = schema["$defs"]["Finding"]["properties"]
    finding_def["quote"]["maxLength"] = limits.quote
    finding_def["note"]["maxLength"] = limits.text
    schema["properties"]["findings"]["maxItems"] = limits.findings
    schema["properties"]["summary"]["maxLength"] = limits.summary
    return OutputSpec(
        name=WINDOW_SCHEMA_NAME,
        model=answer,
        schema=schema,
        description="Findings of failure modes in one window of a long run.",
    )


# Taxonomy holds dicts (unhashable), so specs are memoised by its fingerprint.
_SPECS: dict[tuple[str, str, Limits], OutputSpec] = {}


def _memo(kind: str, taxonomy: Taxonomy, limits: Limits, build: Any) -> OutputSpec:
    key = (kind, taxonomy.fingerprint(), limits)
    if key not in _SPECS:
        _SPECS[key] = build(taxonomy, limits)
    return _SPECS[key]


def diagnosis_spec(taxonomy: Taxonomy, limits: Limits = FULL_LIMITS) -> OutputSpec:
    """The answer of a single call and of the chunked strategy's aggregation."""
    return _memo("diagnosis", taxonomy, limits, _diagnosis_spec)


def window_spec(taxonomy: Taxonomy, limits: Limits = FULL_LIMITS) -> OutputSpec:
    """The answer for one window of the chunked strategy."""
    return _memo("window", taxonomy, limits, _window_spec)


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Make every object's properties required and closed, drop titles and defaults.

    Strict structured-output providers require this shape; optional fields stay nullable, so the
    model can still answer ``null``. Parsing remains lenient (omitted modes become "not assessed").
    """

    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            out = {k: walk(v) for k, v in node.items() if k not in ("title", "default")}
            if out.get("type") == "object" and isinstance(out.get("properties"), dict):
                out["required"] = list(out["properties"])
                out["additionalProperties"] = False
            return out
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    result: dict[str, Any] = walk(schema)
    return result


# --- parsing -------------------------------------------------------------------------------------

_MAX_FAILED_STARTS = 256
"""Braces tried as the start of an object before giving up (bounds the work on a hostile reply)."""


def _scan(text: str) -> tuple[list[tuple[int, Any]], list[int]]:
    """The complete top-level ``{`` values in ``text`` with their end offsets, and the braces that failed."""
    decoder = json.JSONDecoder()
    found: list[tuple[int, Any]] = []
    failed: list[int] = []
    at = text.find("{")
    while at >= 0 and len(failed) < _MAX_FAILED_STARTS:
        try:
            value, end = decoder.raw_decode(text, at)
        except (json.JSONDecodeError, RecursionError):
            failed.append(at)
            at = text.find("{", at + 1)
            continue
        found.append((end, value))
        at = text.find("{", end)
    return found, failed


def top_level_objects(text: str) -> list[Any]:
    """Every complete JSON value starting with ``{`` in ``text`` that is not inside another, in order.

    Prose, code fences and a cut-off object around them are skipped: ``raw_decode`` reads one
    value from a brace and reports where it ends, so what is inside an object is never counted
    on its own.
    """
    return [value for _, value in _scan(text)[0]]


# A brace that opens what reads as a JSON object (a key follows, or nothing does): after the answer,
# one that does not parse is a cut-off answer, not prose.
_OBJECT_START = re.compile(r'\{\s*(?:"|$)')


def extract_json(text: str, answer_keys: frozenset[str] = frozenset()) -> Any:
    """The answer in a model's message: the whole text as JSON, else its last top-level object.

    A reply may quote an object before its answer (a verdict forged by the trace, in a code fence):
    the *last* object is taken, never the first; when the last one is cut off (an object that
    starts after the last complete answer and does not parse), the reply is refused so it is asked
    again, never settled on an earlier, quoted one. A reply holding two different objects that each
    look like an answer (any of ``answer_keys``; any object when empty) is refused too. Only when no
    object is complete is a cut-off one repaired.

    Raises:
        AnswerInvalid: when no JSON object can be read, the last one is cut off, or two different
            answers are given.
    """
    stripped = text.strip()
    if not stripped:
        raise AnswerInvalid("the answer was empty")
    try:
        return orjson.loads(stripped)
    except orjson.JSONDecodeError:
        pass
    scanned, failed = _scan(stripped)
    objects = [(end, o) for end, o in scanned if isinstance(o, dict)]
    answers = [(end, o) for end, o in objects if not answer_keys or answer_keys & o.keys()]
    if answers and any(at >= answers[-1][0] and _OBJECT_START.match(stripped, at) for at in failed):
        raise AnswerInvalid(
            "the reply ends in a JSON object that is cut off or malformed; give exactly one complete JSON object"
        )
    if len(answers) > 1 and any(a != answers[-1][1] for _, a in answers[:-1]):
        raise AnswerInvalid(
            f"the reply holds {len(answers)} different answer objects; give exactly one JSON object, nothing quoted"
        )
    if answers:
        return answers[-1][1]
    if objects:
        return objects[-1][1]
    start = stripped.find("{")
    tail = stripped[start:] if start >= 0 else stripped
    repaired = close_json(tail)
    if not (isinstance(repaired, dict) and repaired) and len(tail) <= _MAX_REPAIR_CHARS:
        repaired = json_repair.loads(tail, skip_json_loads=True)
    if isinstance(repaired, dict) and repaired:
        return repaired
    raise AnswerInvalid("the answer is not a JSON object")


_MAX_REPAIR_CHARS = 2_048
"""Longest text given to ``json_repair`` (after :func:`close_json` failed): its string parser takes
time quadratic in hostile text (a reply looping on ``{"``: 32 KB took 40 s of CPU), so it only ever
sees a bounded piece and costs a bounded time."""


def close_json(text: str) -> Any:
    """``text`` read as JSON after the usual damage of a cut-off answer is undone, or None.

    One pass, linear in the text: the open string is closed, a dangling key, ``:``, ``,`` or
    half-written literal at the end is dropped, a comma right before a closing bracket is dropped,
    and every open bracket is closed. Written here rather than left to ``json_repair`` because that
    library is quadratic on hostile replies (see :data:`_MAX_REPAIR_CHARS`); this is what a model's
    cut-off answer needs.

    Example:
        >>> close_json('{"summary": "ran out of tok')
        {'summary': 'ran out of tok'}
        >>> close_json('{"a": [1, 2,], "b": tr')
        {'a': [1, 2]}
    """
    out: list[str] = []
    stack: list[str] = []  # the closers still owed, innermost last
    in_string = escaped = False
    key_at = -1  # where the key string being written or last written starts, -1 once its value began
    for char in text:
        if in_string:
            out.append(char)
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
            continue
        if char == '"':
            in_string = True
            previous = _last_solid(out)
            key_at = len(out) if stack and stack[-1] == "}" and previous in ("{", ",") else -1
        elif char in "{[":
            stack.append("}" if char == "{" else "]")
            key_at = -1
        elif char in "}]":
            if not stack or stack[-1] != char:
                return None  # a closer that matches nothing: not damage a cut-off explains
            stack.pop()
            _strip_end(out)
            if out and out[-1] == ",":
                out.pop()
            key_at = -1
        elif char == ":":
            key_at = -1
        out.append(char)
        if not stack and char in "}]":
            break  # the first complete value: what follows is prose
    if not stack:
        return _loads_or_none("".join(out))
    if in_string:
        if escaped:
            out.pop()  # a cut-off escape
        out.append('"')
    if key_at >= 0:
        del out[key_at:]  # a key without its value
    _strip_end(out)
    # a literal cut off mid-word ("tr", "nul"): the bare word goes
    at = len(out)
    while at and out[at - 1].isalpha():
        at -= 1
    if at < len(out) and "".join(out[at:]) not in ("true", "false", "null"):
        del out[at:]
        _strip_end(out)
    if out and out[-1] == ":":
        out.pop()
        _strip_end(out)
        if out and out[-1] == '"':
            # the key before the colon: back to its opening quote
            at = len(out) - 1
            while at > 0 and not (out[at - 1] == '"' and (at < 2 or out[at - 2] != "\\")):
                at -= 1
            del out[max(0, at - 1) :]
            _strip_end(out)
    if out and out[-1] == ",":
        out.pop()
    out.extend(reversed(stack))
    return _loads_or_none("".join(out))


def _last_solid(out: list[str]) -> str:
    """The last character of ``out`` that is not white space ("" if none); looks back a bounded way."""
    for char in reversed(out[-64:]):
        if not char.isspace():
            return char
    return ""


def _strip_end(out: list[str]) -> None:
    while out and out[-1].isspace():
        out.pop()


def _loads_or_none(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _normalise_modes(data: dict[str, Any], taxonomy: Taxonomy) -> list[str]:
    """Accept the verdicts as a list or with codes spelled differently; return notes on what was dropped."""
    notes: list[str] = []
    modes = data.get("failure_modes")
    if isinstance(modes, list):
        as_dict: dict[str, Any] = {}
        for item in modes:
            if isinstance(item, dict) and "code" in item:
                as_dict[str(item["code"])] = item
        modes = as_dict
    if not isinstance(modes, dict):
        return notes
    fixed: dict[str, Any] = {}
    for key, value in modes.items():
        try:
            code = normalize_code(key.split()[0] if isinstance(key, str) and key.split() else key)
        except ValueError:
            notes.append(f"ignored verdict for unknown code {key!r}")
            continue
        if code not in taxonomy.codes:
            notes.append(f"ignored verdict for unknown code {key!r}")
            continue
        fixed[code] = value
    data["failure_modes"] = fixed
    return notes


def _validation_message(exc: ValidationError, limit: int = 8) -> str:
    parts = []
    for error in exc.errors()[:limit]:
        where = ".".join(str(p) for p in error["loc"]) or "(top level)"
        parts.append(f"{where}: {error['msg']}")
    more = len(exc.errors()) - limit
    if more > 0:
        parts.append(f"... and {more} more")
    return "; ".join(parts)


def parse_answer(
    text: str, spec: OutputSpec, taxonomy: Taxonomy, *, require_all: bool = True
) -> tuple[BaseModel, list[str]]:
    """Parse and validate a model's answer; return it with notes on what was tolerated.

    Args:
        text: the model's message (or tool arguments).
        spec: the expected answer.
        taxonomy: the taxonomy the codes belong to.
        require_all: reject a diagnosis that leaves modes out (so it can be re-asked); when False,
            omitted modes are accepted and become "not assessed". An answer with no verdict at
            all is always rejected.

    Raises:
        AnswerInvalid: when the answer cannot be read or does not validate (message fit for a re-ask).
    """
    data = extract_json(text, frozenset(spec.model.model_fields))
    if not isinstance(data, dict):
        raise AnswerInvalid("the answer must be a JSON object")
    notes = _normalise_modes(data, taxonomy) if spec.name == DIAGNOSIS_SCHEMA_NAME else []
    if spec.name == WINDOW_SCHEMA_NAME and isinstance(data.get("findings"), list):
        for finding in data["findings"]:
            if isinstance(finding, dict) and "code" in finding:
                try:
                    finding["code"] = normalize_code(finding["code"])
                except ValueError:
                    pass
    try:
        answer = spec.model.model_validate(data)
    except ValidationError as exc:
        raise AnswerInvalid(_validation_message(exc)) from exc
    if spec.name == DIAGNOSIS_SCHEMA_NAME:
        verdicts = mode_answers(answer, taxonomy)
        missing = [code for code, verdict in verdicts.items() if verdict is None]
        if len(missing) == len(verdicts):
            raise AnswerInvalid(
                "failure_modes holds no verdict; give one object per code: " + ", ".join(taxonomy.codes)
            )
        if missing and require_all:
            raise AnswerInvalid("failure_modes lacks a verdict for: " + ", ".join(missing))
    return answer, notes


def mode_answers(answer: BaseModel, taxonomy: Taxonomy) -> dict[str, ModeAnswer | None]:
    """Code -> the model's verdict (``None`` when the answer left the mode out)."""
    modes: Any = getattr(answer, "failure_modes")  # noqa: B009 - a field of a model built at run time
    return {code: getattr(modes, _field_name(code)) for code in taxonomy.codes}
