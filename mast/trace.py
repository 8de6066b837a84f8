"""The normalised trace: one typed shape for every agent run mast reads.

Every source format (OTLP spans, chat message lists, MAD records, framework logs...) is turned into a
:class:`Trace`: an ordered list of :class:`Step` s, who acted in each, what tools were called and what
they returned. The judge only ever sees :meth:`Trace.to_transcript`; ground-truth annotations found
in a source live in :attr:`Trace.labels` and are never rendered.

Example:
    >>> t = Trace(trace_id="t1", steps=[Step(index=0, kind="message", agent="user", content="hi")])
    >>> print(t.to_transcript().text)
    [S0] user: hi
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from typing import Any, Final, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from mast._json import canonical_hash
from mast._render import Transcript, render_transcript

TRACE_SCHEMA_VERSION: Final = "mast-trace/1"

StepKind = Literal[
    "message",
    "llm",
    "tool_call",
    "tool_result",
    "agent",
    "handoff",
    "plan",
    "observation",
    "system",
    "error",
]
"""What a step is. ``message``: an utterance of an agent or user; ``llm``: a model call (its output
is the content); ``tool_call`` / ``tool_result``: a tool invocation and what came back (a step may
carry both when the source records them together); ``agent``: an agent invocation or span;
``handoff``: control passed to another agent; ``plan``: a planning step; ``observation``: what the
environment showed the agent; ``system``: instructions or framework notices; ``error``: a failure
the source recorded."""

Role = Literal["system", "developer", "user", "assistant", "tool"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


# --- lenient fields: what the wild writes never aborts a trace ---------------------------------
#
# A source may hold a list where an id belongs, a number for a name, a date nobody can read. Such a
# value is converted (to text) or dropped (to the field's empty value) instead of failing the whole
# trace, and a note naming the field is collected while a normaliser runs (:func:`field_notes`);
# ``mast.normalize`` adds the notes to the trace's warnings.

_FIELD_NOTES: ContextVar[list[str] | None] = ContextVar("mast_trace_field_notes", default=None)
_DATETIME: TypeAdapter[datetime] = TypeAdapter(datetime)


@contextmanager
def field_notes() -> Iterator[list[str]]:
    """Collect, while the block runs, a note for every field value converted or dropped to fit the schema."""
    notes: list[str] = []
    token = _FIELD_NOTES.set(notes)
    try:
        yield notes
    finally:
        _FIELD_NOTES.reset(token)


def _note(model: str, field: str, got: Any, what: str) -> None:
    notes = _FIELD_NOTES.get()
    if notes is not None:
        message = f"{model}.{field} was {type(got).__name__} {_preview(got)}: {what}"
        if message not in notes and len(notes) < 100:
            notes.append(message)


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _as_text(value: Any) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, bool | int | float):
        return str(value)
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def _text_field(model: str, field: str, value: Any, empty: str | None) -> str | None:
    """``value`` as text: ``None`` stays the field's empty value (``empty``), anything else is written as text."""
    if value is None:
        if empty is not None:
            _note(model, field, value, f"replaced by {empty!r}")
        return empty
    if isinstance(value, str):
        return value if type(value) is str else str(value)  # a str subclass becomes plain text
    _note(model, field, value, "kept as text")
    return _as_text(value)


def text_value(value: Any, where: str) -> str | None:
    """``value`` as text for a reader's own id or name fields (``where``: ``"Span.tool_call_id"``), noted when it was not text."""
    if value is None:
        return None
    if isinstance(value, str) and type(value) is str:  # a str subclass is converted below
        return value
    model, _, field = where.partition(".")
    return _text_field(model, field or where, value, None)


# Each rule: (is the value already fine?, how to fix it). One before-validator per model walks the
# given keys once (a per-field validator costs a Python call per field and slowed Step() by 70 %).
_Rule = tuple[Callable[[Any], bool], Callable[[str, str, Any], Any]]


def _text_rule(empty: str | None = None) -> _Rule:
    if empty is None:
        return (lambda v: v is None or type(v) is str, lambda m, f, v: _text_field(m, f, v, None))
    return (lambda v: type(v) is str, lambda m, f, v: _text_field(m, f, v, empty))


def _fix_datetime(model: str, field: str, value: Any) -> Any:
    try:
        return _DATETIME.validate_python(value)
    except ValidationError:
        _note(model, field, value, "not a readable time: dropped")
        return None


_DATETIME_RULE: _Rule = (lambda v: v is None or isinstance(v, datetime), _fix_datetime)


def _choice_rule(choices: tuple[Any, ...], fallback: Any) -> _Rule:
    def fix(model: str, field: str, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() in choices:
            return value.strip().lower()
        _note(model, field, value, f"not one of {', '.join(map(str, choices))}: {fallback!r} used")
        return fallback

    return (lambda v: v is None or v in choices, fix)


def _fix_int(model: str, field: str, value: Any) -> Any:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    _note(model, field, value, "not a whole number: dropped")
    return None


def _fix_float(model: str, field: str, value: Any) -> Any:
    try:
        return float(value)
    except (TypeError, ValueError):
        _note(model, field, value, "not a number: dropped")
        return None


def _fix_dict(model: str, field: str, value: Any) -> Any:
    if value is None:
        return {}
    _note(model, field, value, "not a mapping: kept under 'value'")
    return {"value": value}


def _fix_list(model: str, field: str, value: Any) -> Any:
    if value is None:
        return []
    if isinstance(value, tuple):
        return list(value)
    if isinstance(value, BaseModel | dict):
        return [value]
    _note(model, field, value, "not a list: dropped")
    return []


def _fix_bool(model: str, field: str, value: Any) -> Any:
    return bool(value)


_INT_RULE: _Rule = (lambda v: v is None or (type(v) is int), _fix_int)
_FLOAT_RULE: _Rule = (lambda v: v is None or (type(v) in (int, float)), _fix_float)
_DICT_RULE: _Rule = (lambda v: type(v) is dict, _fix_dict)
_LIST_RULE: _Rule = (lambda v: type(v) is list, _fix_list)
_BOOL_RULE: _Rule = (lambda v: type(v) is bool, _fix_bool)


def _lenient(rules: dict[str, _Rule]) -> Any:
    """A model before-validator applying ``rules`` to the fields given (see :data:`_Rule`)."""

    def fix(cls: type[BaseModel], data: Any) -> Any:
        if type(data) is not dict:
            return data
        fixed = None
        for key, value in data.items():
            rule = rules.get(key)
            if rule is not None and not rule[0](value):
                if fixed is None:
                    fixed = dict(data)
                fixed[key] = rule[1](cls.__name__, key, value)
        return data if fixed is None else fixed

    return model_validator(mode="before")(classmethod(fix))  # type: ignore[arg-type]


class Usage(_Model):
    """Token counts and cost, for one step or summed over a trace."""

    input_tokens: int | None = None
    """Prompt tokens."""
    output_tokens: int | None = None
    """Completion tokens."""
    total_tokens: int | None = None
    """Total as the source reported it (may include cached or reasoning tokens)."""
    cost_usd: float | None = None
    """Cost in US dollars when the source recorded it; ``None`` when unknown, never 0 by default."""

    _fields = _lenient(
        {
            "input_tokens": _INT_RULE,
            "output_tokens": _INT_RULE,
            "total_tokens": _INT_RULE,
            "cost_usd": _FLOAT_RULE,
        }
    )

    def __add__(self, other: Usage) -> Usage:
        def add(a: float | int | None, b: float | int | None) -> Any:
            if a is None:
                return b
            if b is None:
                return a
            return a + b

        return Usage(
            input_tokens=add(self.input_tokens, other.input_tokens),
            output_tokens=add(self.output_tokens, other.output_tokens),
            total_tokens=add(self.total_tokens, other.total_tokens),
            cost_usd=add(self.cost_usd, other.cost_usd),
        )


class ToolCall(_Model):
    """A tool or function the agent asked to run."""

    id: str | None = None
    """The call id the source gave, used to pair the call with its result."""
    name: str
    """Tool or function name."""
    arguments: Any = None
    """Arguments, parsed from JSON when the source held them as a string."""
    arguments_raw: str | None = None
    """The arguments exactly as written, when they were a string that did not parse as JSON."""

    _fields = _lenient({"id": _text_rule(), "arguments_raw": _text_rule(), "name": _text_rule("?")})


class ToolResult(_Model):
    """What a tool returned."""

    call_id: str | None = None
    """Id of the :class:`ToolCall` this answers, when known."""
    name: str | None = None
    """Tool name, when the source records it beside the result."""
    output: str = ""
    """The result as readable text."""
    is_error: bool = False
    """True when the source marks the result as a failure (exception, non-zero exit, error flag)."""

    _fields = _lenient(
        {"call_id": _text_rule(), "name": _text_rule(), "output": _text_rule(""), "is_error": _BOOL_RULE}
    )


class Agent(_Model):
    """An agent (or the user) taking part in the run."""

    name: str
    """Name as it appears in steps' ``agent`` field."""
    role: str | None = None
    """Role or description (``Planner``, ``QA engineer``, the system prompt's first line...)."""
    model: str | None = None
    """Model the agent ran on, when known."""
    system_prompt: str | None = None
    """The agent's instructions, when the source has them."""

    _fields = _lenient(
        {"role": _text_rule(), "model": _text_rule(), "system_prompt": _text_rule(), "name": _text_rule("?")}
    )


class Step(_Model):
    """One ordered event of the run: a message, a model call, a tool call or its result..."""

    index: int
    """Position in :attr:`Trace.steps`; the ``[S<index>]`` number the judge cites."""
    kind: StepKind = "message"
    """What this step is; see :data:`StepKind`."""
    id: str | None = None
    """Source id of the event (span id, message id, run id)."""
    parent_id: str | None = None
    """Source id of the enclosing event, when the source is a tree."""
    agent: str | None = None
    """Who acted: the agent, ``user``, a tool or the environment."""
    role: Role | None = None
    """Chat role of the emitted message, normalised."""
    recipient: str | None = None
    """Who the message was addressed to, when the source says."""
    content: str = ""
    """Readable text of the step."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tools the agent asked for in this step."""
    tool_results: list[ToolResult] = Field(default_factory=list)
    """Tool results delivered in this step."""
    model: str | None = None
    """Model that produced this step."""
    usage: Usage | None = None
    """Tokens and cost of this step."""
    started_at: datetime | None = None
    """When the step began (UTC)."""
    ended_at: datetime | None = None
    """When the step ended (UTC)."""
    error: str | None = None
    """Error the source recorded for this step."""
    source_ref: str | None = None
    """Where the step came from in the original file (JSON pointer, line number, span id)."""
    attributes: dict[str, Any] = Field(default_factory=dict)
    """Source fields of this step that have no field above, kept rather than dropped."""

    _fields = _lenient(
        {
            **dict.fromkeys(
                ("id", "parent_id", "agent", "recipient", "model", "error", "source_ref"), _text_rule()
            ),
            "content": _text_rule(""),
            "kind": _choice_rule(get_args(StepKind), "message"),
            "role": _choice_rule(get_args(Role), None),
            "started_at": _DATETIME_RULE,
            "ended_at": _DATETIME_RULE,
            "attributes": _DICT_RULE,
            "tool_calls": _LIST_RULE,
            "tool_results": _LIST_RULE,
        }
    )

    @field_validator("started_at", "ended_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return _to_utc(value)


class SourceInfo(_Model):
    """Where a trace came from and how it was recognised."""

    format: str
    """Name of the normaliser that read it (see ``mast formats``)."""
    path: str | None = None
    """File it was read from; ``None`` for in-memory objects."""
    record: int | None = None
    """Index of the record within a file holding many traces."""
    confidence: float | None = None
    """How sure auto-detection was (0..1); ``None`` when the format was given explicitly."""
    variant: str | None = None
    """Sub-format inside the source, e.g. the framework log inside a MAD record."""


class Trace(_Model):
    """One agent run, normalised."""

    schema_version: Literal["mast-trace/1"] = TRACE_SCHEMA_VERSION
    """Version of this schema, written to disk with every trace."""
    trace_id: str = ""
    """The source's id for the run, else a hash of the content (filled in automatically)."""
    source: SourceInfo = Field(default_factory=lambda: SourceInfo(format="object"))
    """Where the trace came from."""
    framework: str | None = None
    """Agent framework or system (``ag2``, ``chatdev``, ``crewai``, ``codex``...)."""
    task: str | None = None
    """The initial request or problem statement."""
    agents: list[Agent] = Field(default_factory=list)
    """The agents taking part, in order of first appearance."""
    steps: list[Step] = Field(default_factory=list)
    """Ordered events; ``steps[i].index == i``."""
    final_output: str | None = None
    """The run's answer or deliverable, when the source has one."""
    status: Literal["ok", "error", "unknown"] = "unknown"
    """How the run ended, as the source says."""
    error: str | None = None
    """Error that ended the run, when the source records one."""
    usage: Usage | None = None
    """Totals over the run, as recorded or summed from steps."""
    started_at: datetime | None = None
    """When the run began (UTC)."""
    ended_at: datetime | None = None
    """When the run ended (UTC)."""
    labels: dict[str, Any] = Field(default_factory=dict)
    """Ground-truth annotations found in the source (MAD ``mast_annotation``, Who&When's
    ``mistake_agent``...). Kept apart so they can never reach a judge prompt."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Source fields with no place above: kept, never silently dropped."""
    warnings: list[str] = Field(default_factory=list)
    """What the normaliser had to guess, skip or cap."""

    _fields = _lenient(
        {
            **dict.fromkeys(("framework", "task", "final_output", "error"), _text_rule()),
            "trace_id": _text_rule(""),
            "status": _choice_rule(("ok", "error", "unknown"), "unknown"),
            "started_at": _DATETIME_RULE,
            "ended_at": _DATETIME_RULE,
            "labels": _DICT_RULE,
            "metadata": _DICT_RULE,
        }
    )

    @field_validator("started_at", "ended_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return _to_utc(value)

    @model_validator(mode="after")
    def _fill_derived(self) -> Trace:
        for position, step in enumerate(self.steps):
            step.index = position
        if not self.trace_id:
            self.trace_id = "sha256:" + self.content_hash()[:16]
        return self

    def content_hash(self) -> str:
        """Hash of what the judge would read (task, agents, steps, output): stable across runs.

        Source location, labels and metadata are left out, so the same run read from two places
        hashes the same, and a changed label never invalidates a cached verdict.
        """
        payload = {
            "task": self.task,
            "agents": [a.model_dump(mode="json") for a in self.agents],
            "steps": [
                s.model_dump(mode="json", exclude={"attributes", "source_ref", "id", "parent_id"})
                for s in self.steps
            ],
            "final_output": self.final_output,
        }
        return canonical_hash(payload)

    def to_transcript(self, *, max_step_chars: int = 4_000, max_total_chars: int | None = None) -> Transcript:
        """Render the trace for the judge with stable step numbers.

        Each step becomes ``[S<index>] agent → recipient: content`` (plus tool calls and results).
        A step longer than ``max_step_chars`` keeps its head and tail around a visible
        ``[... N chars cut ...]`` marker; past ``max_total_chars`` the remaining steps are replaced by
        one marker line. Every cut adds a warning to the returned :class:`Transcript`; nothing is
        cut silently. Labels and metadata are never rendered.
        """
        return render_transcript(self, max_step_chars=max_step_chars, max_total_chars=max_total_chars)

    def to_json(self) -> str:
        """The trace as one line of JSON (what ``mast normalize --json`` prints)."""
        return self.model_dump_json(exclude_none=False)


def _to_utc(value: datetime | None) -> datetime | None:
    # Runs twice for every step built: UTC imported once, and a UTC time (the common case) is returned as is
    if value is None or value.tzinfo is UTC:
        return value
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)
