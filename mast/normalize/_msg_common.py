"""What every message dialect shares: the :class:`Msg` shape and the helpers that read its fields.

Each dialect module (``_dialect_<name>.py``) reads one spelling of chat messages into :class:`Msg`
objects with these helpers; :mod:`mast.normalize._messages` re-exports them for the formats.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from mast._json import canonical
from mast.normalize._common import text_of, tool_call
from mast.trace import ToolCall, ToolResult, Usage

ROLE_ALIASES = {
    "human": "user",
    "ai": "assistant",
    "model": "assistant",
    "bot": "assistant",
    "function": "tool",
    "ipython": "tool",
    "chat": "user",
}
CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})


@dataclass
class Msg:
    """One chat message, whatever dialect it was written in."""

    role: str
    text: str = ""
    name: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    reasoning: str = ""
    id: str | None = None
    model: str | None = None
    usage: Usage | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    keys: list[tuple[Any, ...]] | None = field(default=None, repr=False, compare=False)
    """History-lookup keys, computed once (see :func:`history_keys`)."""
    shared: bool = field(default=False, repr=False, compare=False)
    """True for a cached conversion: copied before anything may change it (see :func:`_fresh`)."""
    warnings: list[str] = field(default_factory=list, compare=False)
    """Fields that could not be read as what they should be (kept in ``extra``), for the trace's warnings."""

    @property
    def empty(self) -> bool:
        """True when the message says nothing: no text, reasoning, tool call or result."""
        return not (_says(self.text) or _says(self.reasoning) or self.tool_calls or self.tool_results)

    @property
    def content(self) -> str:
        """Text for a step: the reasoning (marked) followed by the text."""
        if _says(self.reasoning):
            thought = f"<thinking>\n{self.reasoning.strip()}\n</thinking>"
            return f"{thought}\n\n{self.text}" if self.text else thought
        return self.text


def _says(text: str) -> bool:
    """``bool(text.strip())`` without copying a long text: true when some character is not blank."""
    return bool(text) and not text.isspace()


def norm_role(role: Any) -> str:
    """A chat role in the five-role vocabulary (``human`` -> ``user``, ``model`` -> ``assistant``...)."""
    text = str(role or "").strip().lower()
    return ROLE_ALIASES.get(text, text) or "user"


def type_of(value: dict[str, Any]) -> str | None:
    """``value["type"]`` when it is text; a list or object there names no dialect (and is unhashable)."""
    kind = value.get("type")
    return kind if isinstance(kind, str) else None


def listed(value: dict[str, Any], key: str, extra: dict[str, Any], warnings: list[str]) -> list[Any]:
    """``value[key]`` when it is a list (or absent); any other value is kept in ``extra`` and noted."""
    got = value.get(key)
    if isinstance(got, list):
        return got
    if isinstance(got, tuple):
        return list(got)
    if got in (None, "", {}, False):
        return []
    extra.setdefault(key, got)
    warnings.append(f"a message's {key} is a {type(got).__name__}, not a list: kept in the step's attributes")
    return []


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a dict, else an empty dict (for optional nested objects)."""
    return value if isinstance(value, dict) else {}


def maybe_json(value: Any, depth: int = 3) -> Any:
    """Decode JSON held in a string, repeatedly (sources double-encode), up to ``depth`` times."""
    for _ in range(depth):
        if not isinstance(value, str):
            return value
        first = value[:1]
        if first and not first.isspace() and not value[-1].isspace():
            # nothing to strip at either end: no copy of a long text to read its first character
            if first not in '{["':
                return value
            stripped = value
        else:
            stripped = value.strip()
        if not stripped or stripped[0] not in '{["' or stripped in ("null",):
            return value
        try:
            value = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            return value
    return value


def compact(value: Any) -> str:
    """Short, stable JSON text for a value that has no better rendering."""
    if isinstance(value, str):
        return value
    return canonical(value)


def result_text(value: Any) -> str:
    """A tool's output as text: strings as they are, text-bearing wrappers flattened, other data as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and any(isinstance(value.get(k), str | list) for k in ("content", "text", "output")):
        return text_of(value)
    if isinstance(value, list) and value and all(isinstance(p, dict) and p.get("type") in ("text", "output_text") for p in value):
        return text_of(value)
    return compact(value)


# --- content parts --------------------------------------------------------------------------


def parts_text(content: Any) -> tuple[str, str]:
    """Text and reasoning from a content value (string, list of parts, dict)."""
    if content is None:
        return "", ""
    if isinstance(content, str):
        return content, ""
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return text_of(content), ""
    texts: list[str] = []
    thoughts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            texts.append(compact(part))
            continue
        kind = part.get("type")
        if kind in ("thinking", "reasoning", "reasoning_text", "summary_text"):
            thoughts.append(str(part.get("thinking") or part.get("text") or part.get("content") or ""))
        elif kind == "redacted_thinking":
            thoughts.append("[redacted thinking]")
        elif kind == "refusal":
            texts.append(f"[refusal] {part.get('refusal') or ''}".strip())
        elif kind in ("image_url", "image", "input_image", "blob", "uri", "file", "input_file", "document", "input_audio", "audio"):
            texts.append(f"[{kind}]")
        else:
            text = text_of(part)
            if text:
                texts.append(text)
    return "\n".join(t for t in texts if t), "\n".join(t for t in thoughts if t)


def call_from_openai(call: Any) -> ToolCall | None:
    """A tool call in OpenAI (``function: {name, arguments}``), flat or LangChain (``args``) form."""
    if not isinstance(call, dict):
        return None
    fn = as_dict(call.get("function"))
    name = fn.get("name") or call.get("name") or call.get("toolName")
    if name is None:
        return None
    if "arguments" in fn:
        args = fn.get("arguments")
    elif "arguments" in call:
        args = call.get("arguments")
    elif "args" in call:
        args = call.get("args")
    else:
        args = call.get("input")
    return tool_call(str(name), args, call.get("id") or call.get("toolCallId"))


def has_chat_role(item: dict[str, Any]) -> bool:
    """A dict with a textual ``role`` and ``content`` or ``tool_calls``: a chat message in most dialects."""
    return isinstance(item.get("role"), str) and ("content" in item or "tool_calls" in item)
