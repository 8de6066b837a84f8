"""Vercel AI SDK messages: content parts ``text``, ``reasoning``, ``tool-call``, ``tool-result``.

Also the SDK's flat tool calls (``{toolCallId, toolName, input}`` outside a message, as a step's
``toolCalls`` lists them), read as an assistant message making that call.
"""

from __future__ import annotations

from typing import Any

from mast.normalize._common import text_of, tool_call
from mast.normalize._dialects import MessageDialect, register_dialect
from mast.normalize._msg_common import Msg, has_chat_role, norm_role, parts_text
from mast.trace import ToolCall, ToolResult

VERCEL_PARTS = ("tool-call", "tool-result", "reasoning")
"""Content part types that mark a message as the SDK's (``text`` parts are everyone's)."""


def from_vercel(message: dict[str, Any]) -> list[Msg]:
    """A Vercel AI SDK message: content parts ``text``, ``reasoning``, ``tool-call``, ``tool-result``."""
    role = norm_role(message.get("role"))
    content = message.get("content")
    if not isinstance(content, list):
        return [Msg(role=role, text=text_of(content))]
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "tool-call":
            calls.append(tool_call(str(part.get("toolName") or "?"), part.get("input", part.get("args")), part.get("toolCallId")))
        elif kind == "tool-result":
            output = part.get("output", part.get("result"))
            if isinstance(output, dict) and "value" in output and output.get("type") in ("text", "json", "error-text", "error-json"):
                output = output["value"]
            results.append(ToolResult(call_id=part.get("toolCallId"), name=part.get("toolName"), output=text_of(output), is_error=bool(part.get("isError"))))
        elif kind == "reasoning":
            thoughts.append(str(part.get("text") or ""))
        else:
            text, _ = parts_text([part])
            texts.append(text)
    out = [Msg(role="tool", tool_results=[r]) for r in results]
    body = Msg(role=role, text="\n".join(t for t in texts if t), reasoning="\n".join(thoughts), tool_calls=calls)
    if not body.empty or not results:
        out.append(body)
    return out


def has_vercel_parts(item: dict[str, Any]) -> bool:
    """Content given as a list holding a ``tool-call``, ``tool-result`` or ``reasoning`` part."""
    content = item.get("content")
    return isinstance(content, list) and any(isinstance(p, dict) and p.get("type") in VERCEL_PARTS for p in content)


def is_flat_tool_call(item: dict[str, Any]) -> bool:
    """``{toolCallId, toolName, ...}`` without a role: one tool call on its own."""
    return "toolCallId" in item and "toolName" in item and "role" not in item


def from_flat_tool_call(item: dict[str, Any]) -> list[Msg]:
    """The assistant message making one flat tool call."""
    args = item.get("input", item.get("args"))
    return [Msg(role="assistant", tool_calls=[tool_call(str(item["toolName"]), args, item["toolCallId"])])]


def _names_tool_call(item: dict[str, Any]) -> bool:
    return "toolCallId" in item and "toolName" in item


register_dialect(MessageDialect(name="vercel_ai_tool_call", matches=is_flat_tool_call, read=from_flat_tool_call, order=30,
                                is_message=_names_tool_call))
register_dialect(MessageDialect(name="vercel_ai", matches=has_vercel_parts, read=from_vercel, order=60, is_message=has_chat_role))
