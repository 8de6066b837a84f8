"""OpenAI chat completions messages: ``{role, content, tool_calls, tool_call_id, name}``.

This dialect reads whatever no other dialect claims (it is asked last), including Langfuse's ChatML
rendering of LangChain messages and legacy ``function_call`` replies. A message whose content holds
Anthropic blocks or Vercel AI parts is handed to that dialect's reader.
"""

from __future__ import annotations

from typing import Any

from mast.normalize._common import text_of, tool_call
from mast.normalize._dialects import MessageDialect, register_dialect
from mast.normalize._msg_common import (
    CHAT_ROLES,
    Msg,
    call_from_openai,
    has_chat_role,
    listed,
    norm_role,
    parts_text,
    type_of,
)
from mast.normalize.dialects.anthropic import ANTHROPIC_BLOCKS, from_anthropic
from mast.normalize.dialects.vercel import from_vercel
from mast.trace import ToolResult


def from_openai(message: dict[str, Any]) -> list[Msg]:
    """An OpenAI chat-completions message (also Langfuse's ChatML rendering of one)."""
    content = message.get("content")
    if isinstance(content, list) and any(isinstance(p, dict) and type_of(p) in ANTHROPIC_BLOCKS for p in content):
        return from_anthropic(message)
    if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") in ("tool-call", "tool-result") for p in content):
        return from_vercel(message)
    role = norm_role(message.get("role"))
    used = {"role", "content", "tool_calls", "tool_call_id", "name", "function_call", "id"}
    extra = {k: v for k, v in message.items() if k not in used and v not in (None, [], {}, "")}
    message_id = message.get("id") if isinstance(message.get("id"), str) else None
    if message.get("id") is not None and message_id is None:
        extra["id"] = message["id"]
    if role not in CHAT_ROLES and "additional_kwargs" in message and not message.get("tool_calls"):
        # Langfuse renders a LangChain.js ToolMessage with the tool's name as its role.
        extra["raw_role"] = message.get("role")
        return [Msg(role="tool", tool_results=[ToolResult(call_id=message.get("tool_call_id"), name=str(message.get("role")), output=text_of(content))], id=message_id, extra=extra)]
    if role not in CHAT_ROLES:
        extra["raw_role"] = message.get("role")
    if role == "tool":
        if isinstance(content, dict) and content.get("type") == "function" and not message.get("tool_call_id"):
            # Langfuse renders a LangChain call's tool definitions as role=tool messages: not results.
            return []
        result = ToolResult(call_id=message.get("tool_call_id"), name=message.get("name"), output=text_of(content))
        return [Msg(role="tool", tool_results=[result], id=message_id, extra=extra)]
    text, thought = parts_text(content)
    warnings: list[str] = []
    calls = [c for c in (call_from_openai(x) for x in listed(message, "tool_calls", extra, warnings)) if c]
    kwargs = message.get("additional_kwargs")
    if not calls and isinstance(kwargs, dict):
        calls = [c for c in (call_from_openai(x) for x in listed(kwargs, "tool_calls", extra, warnings)) if c]
    legacy = message.get("function_call")
    if isinstance(legacy, dict) and legacy.get("name"):
        calls.append(tool_call(str(legacy["name"]), legacy.get("arguments")))
    name = message.get("name") if isinstance(message.get("name"), str) else None
    return [Msg(role=role if role in CHAT_ROLES else "user", text=text, reasoning=thought, name=name, tool_calls=calls,
                id=message_id, extra=extra, warnings=warnings)]


def _any_dict(item: dict[str, Any]) -> bool:
    return True


register_dialect(MessageDialect(name="openai", matches=_any_dict, read=from_openai, order=100, is_message=has_chat_role))
