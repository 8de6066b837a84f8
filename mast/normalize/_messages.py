"""Chat messages in every dialect mast meets, read into one shape.

Agent traces carry chat messages in many spellings: OpenAI chat completions, Responses-API items,
Anthropic content blocks, OTel GenAI ``parts``, LangChain message dicts and ``lc`` constructors,
Gemini ``contents``, Vercel AI SDK messages, Pydantic AI histories, and ``role: text`` lines. Each
spelling of a message dict is a dialect in its own ``_dialect_<name>.py`` module, registered in
:mod:`mast.normalize._dialects`; :func:`from_item` and :func:`to_messages` ask that registry.
This module holds what is not one dialect's: message lists, request and response bodies,
:func:`history_messages` (re-sent histories read incrementally), history keys and agent names from
prompts. :class:`mast.normalize._timeline.Timeline` turns messages into ordered steps.

Formats import what they read messages with from here: :class:`Msg`, the shared helpers and each
built-in dialect's reader are re-exported (``import X as X``).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import replace
from itertools import count
from typing import Any

import orjson

from mast.normalize._common import text_of, usage_from
from mast.normalize._dialects import dialect_of, is_message
from mast.normalize._msg_common import CHAT_ROLES as CHAT_ROLES
from mast.normalize._msg_common import ROLE_ALIASES as ROLE_ALIASES
from mast.normalize._msg_common import Msg as Msg
from mast.normalize._msg_common import as_dict as as_dict
from mast.normalize._msg_common import compact as compact
from mast.normalize._msg_common import listed as listed
from mast.normalize._msg_common import maybe_json as maybe_json
from mast.normalize._msg_common import norm_role as norm_role
from mast.normalize._msg_common import parts_text
from mast.normalize._msg_common import result_text as result_text
from mast.normalize._msg_common import type_of as type_of
from mast.normalize.dialects.anthropic import ANTHROPIC_BLOCKS as ANTHROPIC_BLOCKS
from mast.normalize.dialects.anthropic import from_anthropic as from_anthropic
from mast.normalize.dialects.gemini import from_gemini as from_gemini
from mast.normalize.dialects.langchain import LANGCHAIN_TYPES as LANGCHAIN_TYPES
from mast.normalize.dialects.langchain import from_langchain as from_langchain
from mast.normalize.dialects.openai import from_openai as from_openai
from mast.normalize.dialects.otel import from_otel as from_otel
from mast.normalize.dialects.responses import RESPONSES_ITEM_TYPES as RESPONSES_ITEM_TYPES
from mast.normalize.dialects.responses import from_responses as from_responses
from mast.normalize.dialects.vercel import from_vercel as from_vercel
from mast.trace import ToolResult

CREWAI_DELEGATION_TOOLS = frozenset(
    {"delegate_work_to_coworker", "ask_question_to_coworker", "Delegate work to coworker", "Ask question to coworker"}
)
"""CrewAI's built-in delegation tools: their result is what the named coworker agent answered."""

_ROLE_LINE = re.compile(r"^(system|developer|user|assistant|tool|human|ai): ?", re.MULTILINE)
_CREWAI_ROLE = re.compile(r"^You are (?P<name>[^.\n]{1,80})\.")
_NAMED_ROLE = re.compile(r"^You are (?:the )?(?P<name>[A-Z][\w\-]*(?: [A-Z][\w\-]*){0,3})[.,]")


def from_role_lines(text: str) -> list[Msg] | None:
    """``role: text`` lines (how some SDKs print a prompt); ``None`` when the text is not in that form."""
    if not _ROLE_LINE.match(text):
        return None
    marks = list(_ROLE_LINE.finditer(text))
    msgs: list[Msg] = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[mark.end():end].strip()
        role = norm_role(mark.group(1))
        if body == "None":
            body = ""
        if role == "tool":
            msgs.append(Msg(role="tool", tool_results=[ToolResult(output=body)]))
        else:
            msgs.append(Msg(role=role, text=body))
    return msgs


# --- any dialect ---------------------------------------------------------------------------------


def _is_message(item: Any) -> bool:
    """True when ``item`` is a dict some registered dialect counts as a message."""
    return isinstance(item, dict) and is_message(item)


def from_item(item: dict[str, Any]) -> list[Msg]:
    """One message-like dict, read by the first registered dialect that claims it (OpenAI chat when none does)."""
    dialect = dialect_of(item)
    return dialect.read(item) if dialect is not None else from_openai(item)


def _from_list(items: list[Any], parsed: bool = False, cache: bool = True) -> list[Msg] | None:
    """Messages of a list whose every item is a message.

    ``parsed``: the items were just read from JSON text. ``cache=False``: the messages are converted
    (shared, history keys computed) but not looked up or kept by their JSON bytes.
    """
    if not items or not all(_is_message(i) for i in items):
        return None
    if any(isinstance(i, dict) and type_of(i) in RESPONSES_ITEM_TYPES for i in items) and not any(
        isinstance(i, dict) and ("lc" in i or "parts" in i) for i in items
    ):
        return from_responses(items)
    out: list[Msg] = []
    for item in items:
        if isinstance(item, dict) and not cache:
            out.extend(_shared(from_item(item if parsed else orjson.loads(orjson.dumps(item)))))
        elif isinstance(item, dict):
            # Every model call re-sends the conversation: convert each distinct message once.
            out.extend(_cached_item(orjson.dumps(item), item if parsed else None))
        else:
            out.extend(from_item(item))
    return out


_ITEMS: dict[bytes, tuple[Msg, ...]] = {}
"""Converted messages by their JSON bytes (see :func:`_cached_item`); the oldest goes when full."""
_MAX_ITEMS = 8192


def _cached_item(blob: bytes, item: dict[str, Any] | None = None) -> tuple[Msg, ...]:
    """:func:`from_item` of a message given as JSON bytes, history keys computed; never handed out as is.

    ``item``, when given, is the message the bytes were written from and holds nothing JSON cannot
    (it was just parsed from JSON text): it is read as it is instead of parsing the bytes back.
    """
    known = _ITEMS.get(blob)
    if known is None:
        known = _shared(from_item(orjson.loads(blob) if item is None else item))
        if len(_ITEMS) >= _MAX_ITEMS:
            del _ITEMS[next(iter(_ITEMS))]
        _ITEMS[blob] = known
    return known


def _shared(msgs: list[Msg]) -> tuple[Msg, ...]:
    """Converted messages marked as handed out to several lists (copied before a change), history keys computed."""
    for msg in msgs:
        msg.keys = history_keys(msg)
        msg.shared = True
    return tuple(msgs)


def _fresh(msg: Msg) -> Msg:
    """A copy of a cached message that pairing may mutate (tool call ids) without touching the cache."""
    return replace(
        msg,
        tool_calls=[c.model_copy() for c in msg.tool_calls],
        tool_results=[r.model_copy() for r in msg.tool_results],
        extra=dict(msg.extra),
        shared=False,
    )


class History(list[Msg]):
    """A message list read by :func:`history_messages`, which says what it continues.

    ``token`` names this list; when ``prefix`` is not ``None``, the first ``prefix_len`` messages
    are, object for object, those of the list named ``prefix`` (the call before re-sent them). A
    timeline that already went through that list skips them without looking (see
    :meth:`mast.normalize._timeline.Timeline.add_new`). Appending keeps that true; do not insert.
    """

    __slots__ = ("prefix", "prefix_len", "token")

    def __init__(self, msgs: list[Msg], token: int, prefix: int | None = None, prefix_len: int = 0) -> None:
        super().__init__(msgs)
        self.token = token
        self.prefix = prefix
        self.prefix_len = prefix_len


_TOKENS = count()
"""Names of the lists :func:`history_messages` reads (never reused, even after :func:`forget_history`)."""
_HISTORIES: deque[tuple[str, list[Msg], int]] = deque(maxlen=8)
"""Recently read message lists as (JSON text without its closing bracket, messages, token): see :func:`history_messages`."""


def history_messages(text: str) -> list[Msg] | None:
    """:func:`to_messages` of JSON text holding a message list, reading only what an earlier list did not hold.

    Every model call re-sends the conversation so far, so the input of call *k+1* is, byte for byte,
    the input of call *k* with more messages before the closing bracket. The messages of the common
    part are taken from the earlier result and only the new tail is parsed: linear in the run's
    length instead of quadratic. Lists that are read as a whole (Responses items) are not reused.
    The result is a :class:`History` that names the list it continues.
    """
    if not (text.startswith("[") and text.endswith("]")):
        return to_messages(text)
    for body, earlier, token in reversed(_HISTORIES):
        if len(text) > len(body) + 1 and text[len(body)] == "," and text.startswith(body):
            new = _tail_messages(text[len(body) + 1:])
            if new is None:
                break
            msgs = [*earlier, *new]
            mine = next(_TOKENS)
            _HISTORIES.append((text[:-1], msgs, mine))
            return History(msgs, mine, token, len(earlier))
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return to_messages(text)
    whole = to_messages(value)
    if whole is not None and isinstance(value, list) and value and _per_item(value):
        mine = next(_TOKENS)
        _HISTORIES.append((text[:-1], whole, mine))
        return History(whole, mine)
    return whole


def _tail_messages(rest: str) -> list[Msg] | None:
    """The messages of a re-sent list's new part (``rest``: its JSON text after the comma, closing bracket included).

    The part usually starts with the reply of the call before, read already by :func:`reply_messages`:
    when its text is there byte for byte, up to a comma or the end, its messages are taken as they
    are and only what follows is parsed. ``None`` when the part is not a list of messages.
    """
    known: tuple[Msg, ...] = ()
    for inner, replied in reversed(_REPLIES):
        if rest.startswith(inner) and len(rest) > len(inner) and rest[len(inner)] in ",]":
            if rest[len(inner)] == "]":
                return list(replied) if len(rest) == len(inner) + 1 else None
            known, rest = replied, rest[len(inner) + 1:]
            break
    try:
        tail = orjson.loads("[" + rest)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(tail, list) or not _per_item(tail):
        return None
    new = _from_list(tail, parsed=True)
    return None if new is None else [*known, *new]


_REPLIES: deque[tuple[str, tuple[Msg, ...]]] = deque(maxlen=4)
"""Recent model replies as (JSON text between the list's brackets, messages): see :func:`reply_messages`."""


def reply_messages(text: str) -> list[Msg] | None:
    """:func:`to_messages` of JSON text holding a model call's reply, remembered for the next call's input.

    The next call re-sends the reply inside its history; :func:`history_messages` then takes its
    messages from here instead of parsing, serialising and looking them up again. Only a plain
    ``[...]`` list whose every item is a message read on its own is remembered.
    """
    value = maybe_json(text)
    if not (isinstance(value, list) and value and text[:1] == "[" and text[-1:] == "]" and _per_item(value)):
        return to_messages(value)
    # what to_messages does with a list of message dicts; not cached by bytes: the next input takes them from here
    msgs = _from_list(value, parsed=True, cache=False)
    if msgs is not None:
        _REPLIES.append((text[1:-1], tuple(msgs)))
    return msgs


def forget_history() -> None:
    """Drop the message caches (call between independent traces: a run's messages never recur in the next)."""
    _HISTORIES.clear()
    _REPLIES.clear()
    _ITEMS.clear()


def _per_item(items: list[Any]) -> bool:
    """True when each item of a message list is read on its own (no list-level dialect decision)."""
    return all(isinstance(i, dict) and type_of(i) not in RESPONSES_ITEM_TYPES for i in items)


def to_messages(value: Any) -> list[Msg] | None:
    """Messages from any chat-shaped value; ``None`` when ``value`` does not look like messages.

    Accepts message lists of every dialect, a single message, request bodies (``messages``,
    ``system``/``instructions``, Gemini ``contents``), response bodies (``choices``, Responses
    ``output``, Anthropic ``type: message``, LangChain ``generations``), and ``role: text`` lines.
    """
    value = maybe_json(value)
    if isinstance(value, str):
        return from_role_lines(value)
    if isinstance(value, list):
        if value and all(isinstance(v, list) for v in value):
            # LangChain batches: [[message, ...]] for one prompt
            flat = [m for batch in value for m in batch]
            return to_messages(flat)
        return _from_list(value)
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("messages"), list):
        msgs = _from_list(value["messages"]) if value["messages"] else []
        if msgs is None:
            return None
        system = value.get("system") or value.get("instructions")
        if system and isinstance(system, str | list):
            text, _ = parts_text(system)
            msgs.insert(0, Msg(role="system", text=text))
        return msgs
    if isinstance(value.get("contents"), list):
        out: list[Msg] = []
        config = as_dict(value.get("config"))
        system = config.get("system_instruction") or value.get("system_instruction")
        if system:
            out.append(Msg(role="system", text=text_of(system)))
        for content in value["contents"]:
            if isinstance(content, dict):
                out.extend(from_gemini(content))
        return out
    if isinstance(value.get("choices"), list):
        out = []
        for choice in value["choices"]:
            if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
                out.extend(from_openai({"role": "assistant", **choice["message"]}))
            elif isinstance(choice, dict) and isinstance(choice.get("text"), str):
                out.append(Msg(role="assistant", text=choice["text"]))
        if out:
            out[-1].model = value.get("model")
            out[-1].usage = usage_from(value.get("usage")) or usage_from(value.get("usage_metadata"))
            out[-1].id = value.get("id")
        return out
    if (value.get("object") == "response" or "previous_response_id" in value) and isinstance(value.get("output"), list):
        out = from_responses(value["output"])
        if out:
            out[-1].model = value.get("model")
            out[-1].usage = usage_from(value.get("usage"))
        return out
    if value.get("type") == "message" and isinstance(value.get("content"), list) and "role" in value:
        return from_anthropic(value)
    if isinstance(value.get("generations"), list):
        out = []
        for gen in value["generations"]:
            for g in gen if isinstance(gen, list) else [gen]:
                if isinstance(g, dict) and isinstance(g.get("message"), dict):
                    out.extend(from_langchain(g["message"]))
                elif isinstance(g, dict) and isinstance(g.get("text"), str):
                    out.append(Msg(role="assistant", text=g["text"]))
        return out
    if isinstance(value.get("content"), dict) and isinstance(value["content"].get("parts"), list):
        return from_gemini(value["content"])  # a Google ADK event / LlmResponse
    if _is_message(value):
        return from_item(value)
    return None


# --- agent names from prompts ---------------------------------------------------------------------


def name_from_system_prompt(text: str) -> str | None:
    """The agent's name when its system prompt introduces it (CrewAI's ``You are {role}.``, ``You are Ada.``)."""
    text = text.lstrip()
    if "Your personal goal is:" in text:
        match = _CREWAI_ROLE.match(text)
        if match:
            return match.group("name").strip()
    match = _NAMED_ROLE.match(text)
    return match.group("name") if match else None


# --- history keys -----------------------------------------------------------------------------


def _norm(text: str) -> str:
    # Exact text (ends stripped): re-sent history is byte-identical, and normalising inner
    # whitespace of every long message would cost more than all the rest of the lookup.
    return text.strip()


def _canon(text: str) -> str:
    """Tool output text for comparison: JSON re-serialised canonically, other text whitespace-normalised."""
    value = maybe_json(text, depth=2)
    if isinstance(value, dict | list):
        return compact(value)
    return _norm(text)


def history_keys(msg: Msg) -> list[tuple[Any, ...]]:
    """The keys under which a message counts as already emitted (see :class:`~mast.normalize._timeline.Timeline`)."""
    if msg.role == "tool" and msg.tool_results:
        result = msg.tool_results[0]
        if result.call_id:
            return [("tid", result.call_id)]
        keys: list[tuple[Any, ...]] = [("ttext", _canon(result.output))]
        if result.name:
            keys.append(("tname", result.name))
        return keys
    text = _norm(msg.content)
    if msg.tool_calls and all(c.id for c in msg.tool_calls):
        # Call ids are unique: a replay that drops or rewrites the text around the calls is the same message.
        # A provider that returned no id has its call re-sent under an id the client made up: same names, same text.
        ids = tuple(c.id for c in msg.tool_calls)
        return [("m", text, ids), ("cids", ids), ("mn", text, tuple(c.name for c in msg.tool_calls))]
    if msg.tool_calls:
        return [("mn", text, tuple(c.name for c in msg.tool_calls))]
    return [("m", text, ())]


def apply_prompt_names(msgs: list[Msg]) -> str | None:
    """The agent name a chat list's first system prompt introduces, if any (see :func:`name_from_system_prompt`)."""
    for msg in msgs:
        if msg.role in ("system", "developer") and msg.text:
            return name_from_system_prompt(msg.text)
        if msg.role != "system":
            break
    return None
