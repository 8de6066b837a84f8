"""LangChain messages: ``messages_to_dict`` entries (``{type, data}``), plain dumps and ``lc`` constructors.

A dict is read here when it is an ``lc`` constructor, or names a LangChain message type with
``content`` and no ``role`` (a dict with a role is a chat message read by its content's dialect).
"""

from __future__ import annotations

from typing import Any

from mast.normalize._common import text_of, usage_from
from mast.normalize._dialects import MessageDialect, register_dialect
from mast.normalize._msg_common import Msg, as_dict, call_from_openai, listed, norm_role, parts_text, type_of
from mast.normalize.dialects.anthropic import ANTHROPIC_BLOCKS, from_anthropic
from mast.trace import ToolResult

LANGCHAIN_TYPES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "tool",
    "chat": "user",
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "tool",
    "ChatMessage": "user",
    "HumanMessageChunk": "user",
    "AIMessageChunk": "assistant",
}


def from_langchain(message: dict[str, Any]) -> list[Msg]:
    """A LangChain message: a ``messages_to_dict`` entry, a plain dump, or an ``lc`` constructor."""
    if message.get("lc") and isinstance(message.get("kwargs"), dict):
        kind = str((message.get("id") or ["", "HumanMessage"])[-1])
        data = dict(message["kwargs"])
    elif isinstance(message.get("data"), dict) and "type" in message:
        kind, data = str(message["type"]), dict(message["data"])
    else:
        kind, data = str(message.get("type")), dict(message)
    role = LANGCHAIN_TYPES.get(kind) or norm_role(data.get("role"))
    content = data.get("content")
    meta = as_dict(data.get("response_metadata"))
    usage = usage_from(data.get("usage_metadata")) or usage_from(meta.get("token_usage"))
    used = {"content", "type", "tool_calls", "tool_call_id", "name", "additional_kwargs", "invalid_tool_calls", "usage_metadata", "id", "example", "role"}
    extra = {k: v for k, v in data.items() if k not in used and v not in (None, [], {}, "")}
    if role == "tool":
        result = ToolResult(call_id=data.get("tool_call_id"), name=data.get("name"), output=text_of(content), is_error=data.get("status") == "error")
        return [Msg(role="tool", tool_results=[result], extra=extra)]
    if isinstance(content, list) and any(isinstance(p, dict) and type_of(p) in ANTHROPIC_BLOCKS for p in content):
        msgs = from_anthropic({"role": role, "content": content})
        text, thought = "", ""
    else:
        msgs = []
        text, thought = parts_text(content)
    warnings: list[str] = []
    calls = [c for c in (call_from_openai(x) for x in listed(data, "tool_calls", extra, warnings)) if c]
    kwargs = data.get("additional_kwargs")
    if not calls and isinstance(kwargs, dict):
        calls = [c for c in (call_from_openai(x) for x in listed(kwargs, "tool_calls", extra, warnings)) if c]
    name = data.get("name") if isinstance(data.get("name"), str) else None
    model = meta.get("model_name") if isinstance(meta.get("model_name"), str) else None
    if msgs:
        msgs[-1].tool_calls.extend(c for c in calls if c.id not in {x.id for x in msgs[-1].tool_calls})
        msgs[-1].name, msgs[-1].model, msgs[-1].usage = name, model, usage
        msgs[-1].warnings.extend(warnings)
        return msgs
    return [Msg(role=role, text=text, reasoning=thought, tool_calls=calls, name=name, id=data.get("id"), model=model, usage=usage,
                extra=extra, warnings=warnings)]


def is_langchain_read(item: dict[str, Any]) -> bool:
    """An ``lc`` constructor, or a LangChain ``type`` with ``content`` and no ``role``."""
    return bool(item.get("lc")) or (type_of(item) in LANGCHAIN_TYPES and "role" not in item and "content" in item)


def is_langchain_message(item: dict[str, Any]) -> bool:
    """An ``lc`` constructor with its ``kwargs``, or a LangChain ``type`` with ``content``."""
    return bool(item.get("lc") and isinstance(item.get("kwargs"), dict)) or (type_of(item) in LANGCHAIN_TYPES and "content" in item)


register_dialect(MessageDialect(name="langchain", matches=is_langchain_read, read=from_langchain, order=20, is_message=is_langchain_message))
