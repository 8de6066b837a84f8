"""The registry of span dialects: how the attributes one instrumentation writes on a span are read.

:func:`mast.normalize._otel_attrs.span_from_attributes` reads any span (OTLP, Langfuse
observations, Vercel AI SDK exports, flat attribute dicts). What each instrumentation's attribute
keys mean lives in a module of its own named ``_span_<name>.py`` (imported at start-up by
``mast.normalize``), which registers a :class:`SpanDialect`::

    register_span_dialect(SpanDialect(name="vercel_ai", prefixes=("ai.",), kinds=((40, operation_kind),), ...))

A dialect says which attribute keys mark a span as (partly) written in it (``prefixes``), and then
any of: rules that read the span's kind from a declared attribute (``kinds``), keys whose mere
presence implies a kind (``implies``), readers that turn attributes into input/output messages
(``messages``, and ``late_messages`` asked after the generic input/output values are decoded), and
for each common field (agent, tool name, model, token counts...) the keys that hold it (``fields``).

Ranks, not dialects, decide precedence: for every field the keys of all dialects are tried in
rank order (lower first), and kind rules and message readers are asked in rank order too. A span
is read only by the dialects whose prefixes its keys carry; the choice, the field keys present and
the implied kind are decided once per distinct set of attribute keys (see :class:`SpanPlan`) and
reused, so a dialect costs a span nothing when none of its keys is there.

Ranks of the built-in dialects, to place a new one among them: kind rules OpenInference 10, OTel
GenAI 20, Traceloop 30, LangSmith 35, Vercel 40, ``llm.request.type`` 45; message readers GenAI 10,
OpenLLMetry 20, OpenInference 40, Vercel 50 (then span events); late readers Logfire 5, the generic
input value of an LLM span 10, OpenInference ``llm.prompts`` 20, generic values 30; for fields see
each module (the answered model before the requested one, GenAI token keys before the others...).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mast.normalize._messages import Msg

KindRule = tuple[int, Callable[[dict[str, Any], set[str]], "str | None"]]
"""``(rank, rule)``: the rule returns the span kind an attribute declares (marking what it used), or ``None``."""
Reader = tuple[int, Callable[["SpanReading"], None]]
"""``(rank, reader)``: the reader fills ``inputs``/``outputs`` of a :class:`SpanReading` that are still ``None``."""

FIELDS = (
    "input", "output", "agent", "agent_fallback", "agent_description", "tool_name", "tool_call_id", "tool_arguments",
    "tool_result", "tool_parameters", "model", "input_tokens", "output_tokens", "total_tokens", "cost", "provider", "error",
)
"""What a dialect may name keys for. ``agent_fallback`` is asked for agent spans that name no agent;
``provider`` is read as a framework hint and kept in the step's attributes; every other key read is
mapped and not kept twice."""

KINDS = ("llm", "tool", "agent")
"""Kinds a key's presence may imply, checked in this order (any ``llm`` key first)."""


@dataclass(frozen=True)
class SpanDialect:
    """The attribute keys of one instrumentation (OpenInference, OTel GenAI, Vercel AI SDK...)."""

    name: str
    prefixes: tuple[str, ...]
    """Attribute keys (or their beginnings) that mark a span as written, at least partly, in this dialect."""
    kinds: tuple[KindRule, ...] = ()
    implies: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Kind (``llm``, ``tool``, ``agent``) -> keys whose presence implies it; a key ending in ``.`` is a prefix."""
    messages: tuple[Reader, ...] = ()
    late_messages: tuple[Reader, ...] = ()
    """Asked after the generic input/output values are decoded (``SpanReading.decoded_in``/``decoded_out``)."""
    fields: Mapping[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)
    """Field -> ``((rank, key), ...)``: where the field is found; the first present, non-empty key of all dialects wins."""
    consumed: tuple[str, ...] = ()
    """Keys mapped away when present although nothing is read from them (mime types, say)."""
    framework: str | None = None
    """The framework a span is credited to when this dialect reads it and no other hint names one."""
    framework_keys: tuple[str, ...] = ()
    """Beginnings of keys whose names point at a framework (``pydantic_ai.all_messages``: Pydantic AI)."""
    flat_markers: tuple[str, ...] = ()
    """Keys that show a flat dict (no OTLP envelope) holds span attributes: the key itself or ``key.*``."""
    flat_prefixes: tuple[str, ...] = ()
    """Beginnings of keys counted as span attributes when a flat dict is recognised (most of its keys must be)."""


@dataclass(slots=True)
class SpanReading:
    """One span being read: what readers see and fill in (``attrs`` is read, never changed)."""

    attrs: dict[str, Any]
    name: str
    kind: str
    used: set[str]
    """Keys mapped to a field or message (they are not kept again in the step's attributes)."""
    inputs: list[Msg] | None = None
    outputs: list[Msg] | None = None
    system: Any = None
    """System instructions given beside the input messages; put first in ``inputs`` once all readers ran."""
    decoded_in: Any = None
    decoded_out: Any = None
    late_inputs: bool = False
    """True when no reader had found input messages before the generic values were read."""

    def take(self, *keys: str) -> Any:
        """The first of ``keys`` present with a value (marked used), else ``None``."""
        attrs = self.attrs
        for key in keys:
            value = attrs.get(key)
            if value is not None and value != "":
                self.used.add(key)
                return value
        return None

    def use_prefix(self, prefix: str) -> None:
        """Mark every key starting with ``prefix`` as used (a flattened list that was read)."""
        self.used.update(k for k in self.attrs if k.startswith(prefix))


_DIALECTS: dict[str, SpanDialect] = {}
_ORDERED: list[SpanDialect] = []
_PLANS: dict[tuple[str, ...], SpanPlan] = {}
"""Plans by a span's attribute keys (in order); emptied when the registry changes."""


def register_span_dialect(dialect: SpanDialect) -> SpanDialect:
    """Add a span dialect (module import time)."""
    if dialect.name in _DIALECTS:
        raise ValueError(f"span dialect {dialect.name!r} registered twice")
    unknown = set(dialect.fields) - set(FIELDS)
    if unknown:
        raise ValueError(f"span dialect {dialect.name!r} names unknown fields: {sorted(unknown)}")
    wrong = set(dialect.implies) - set(KINDS)
    if wrong:
        raise ValueError(f"span dialect {dialect.name!r} implies unknown kinds: {sorted(wrong)}")
    _DIALECTS[dialect.name] = dialect
    _changed()
    return dialect


def unregister_span_dialect(name: str) -> None:
    """Remove a span dialect (tests that register one of their own)."""
    del _DIALECTS[name]
    _changed()


def _changed() -> None:
    _ORDERED[:] = sorted(_DIALECTS.values(), key=lambda d: d.name)
    _PLANS.clear()
    _FLAT.clear()


@dataclass(frozen=True)
class FlatKeys:
    """What recognises a flat span-attribute dict, over all registered dialects."""

    markers: tuple[str, ...]
    prefixes: tuple[str, ...]
    sniffs: tuple[str, ...]
    """Text a file's head must contain: each marker's first segment with its dot (``gen_ai.``)."""


_FLAT: list[FlatKeys] = []


def flat_keys() -> FlatKeys:
    """Markers and prefixes of flat span-attribute dicts, gathered from the registry (once per change)."""
    if not _FLAT:
        markers = tuple(dict.fromkeys(m for d in _ORDERED for m in d.flat_markers))
        prefixes = tuple(dict.fromkeys(p for d in _ORDERED for p in d.flat_prefixes))
        sniffs = tuple(dict.fromkeys(m.split(".", 1)[0] + "." for m in markers))
        _FLAT.append(FlatKeys(markers, prefixes, sniffs))
    return _FLAT[0]


def span_dialects() -> list[SpanDialect]:
    """Registered span dialects, by name."""
    return list(_ORDERED)


# --- plans: which dialects read a span, decided once per set of keys ------------------------------

_MAX_PLANS = 4096


@dataclass(frozen=True, slots=True)
class SpanPlan:
    """How spans with one set of attribute keys are read: decided once, reused for every such span."""

    kind_rules: tuple[Callable[[dict[str, Any], set[str]], str | None], ...]
    implied_kind: str | None
    """The kind the keys imply when no rule declares one (a message key makes an ``llm`` span...)."""
    readers: tuple[Callable[[SpanReading], None], ...]
    late_readers: tuple[Callable[[SpanReading], None], ...]
    keys: dict[str, tuple[str, ...]]
    """Field -> the keys present that may hold it, best first."""
    consumed: tuple[str, ...]
    framework_keys: tuple[str, ...]
    framework: str | None


def _ranked(pairs: Iterable[tuple[int, Any]]) -> tuple[Any, ...]:
    return tuple(item for _, item in sorted(pairs, key=lambda pair: pair[0]))


def _marks(marker: str, keys: tuple[str, ...], present: set[str]) -> bool:
    return any(k.startswith(marker) for k in keys) if marker.endswith(".") else marker in present


def _make_plan(keys: tuple[str, ...], generic: SpanDialect) -> SpanPlan:
    registered = span_dialects()
    everyone = [*registered, generic]
    active = [d for d in registered if any(k.startswith(d.prefixes) for k in keys)] + [generic]
    present = set(keys)
    hints = tuple(prefix for d in everyone for prefix in d.framework_keys)
    fields: dict[str, tuple[str, ...]] = {}
    for name in FIELDS:
        ranked = _ranked(pair for d in everyone for pair in d.fields.get(name, ()))
        fields[name] = tuple(dict.fromkeys(k for k in ranked if k in present))
    implied = next((kind for kind in KINDS if any(_marks(m, keys, present) for d in everyone for m in d.implies.get(kind, ()))), None)
    return SpanPlan(
        kind_rules=_ranked(rule for d in active for rule in d.kinds),
        implied_kind=implied,
        readers=_ranked(reader for d in active for reader in d.messages),
        late_readers=_ranked(reader for d in active for reader in d.late_messages),
        keys=fields,
        consumed=tuple(k for d in everyone for k in d.consumed if k in present),
        framework_keys=tuple(k for k in keys if k.startswith(hints)),
        framework=next((d.framework for d in active if d.framework), None),
    )


def plan_for(keys: tuple[str, ...], generic: SpanDialect) -> SpanPlan:
    """The plan for spans with these attribute keys (in their order), made on first sight.

    ``generic`` is what the span reader itself reads from every span (always asked, never registered).
    """
    plan = _PLANS.get(keys)
    if plan is None:
        if len(_PLANS) >= _MAX_PLANS:
            _PLANS.clear()
        plan = _PLANS[keys] = _make_plan(keys, generic)
    return plan
