"""Gemini / Google ADK ``Content``: ``{role: user|model, parts: [{text} | {function_call} | {function_response}]}``.

Any dict with ``parts`` that the OTel GenAI dialect does not claim (its parts are not all typed) is
read here; function responses become separate ``tool`` messages.
"""

from __future__ import annotations

from typing import Any

from mast.normalize._common import text_of, tool_call
from mast.normalize._dialects import MessageDialect, register_dialect
from mast.normalize._msg_common import Msg, norm_role
from mast.trace import ToolCall, ToolResult


def from_gemini(content: dict[str, Any]) -> list[Msg]:
    """A Gemini / Google ADK ``Content``: ``{role: user|model, parts: [{text} | {function_call} | {function_response}]}``."""
    role = norm_role(content.get("role") or "user")
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    thoughts: list[str] = []
    for part in content.get("parts") or []:
        if not isinstance(part, dict):
            continue
        call = part.get("function_call") or part.get("functionCall")
        response = part.get("function_response") or part.get("functionResponse")
        if isinstance(call, dict):
            calls.append(tool_call(str(call.get("name") or "?"), call.get("args") or {}, call.get("id")))
        elif isinstance(response, dict):
            results.append(ToolResult(call_id=response.get("id"), name=response.get("name"), output=text_of(response.get("response"))))
        elif part.get("thought") and isinstance(part.get("text"), str):
            thoughts.append(part["text"])
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
        else:
            texts.append(text_of(part))
    out = [Msg(role="tool", tool_results=[r]) for r in results]
    body = Msg(role=role, text="\n".join(t for t in texts if t), reasoning="\n".join(thoughts), tool_calls=calls)
    if not body.empty or not results:
        out.append(body)
    return out


def has_parts(item: dict[str, Any]) -> bool:
    """A dict with ``parts`` (read as Gemini when the OTel GenAI dialect did not claim it)."""
    return "parts" in item


def is_parts_message(item: dict[str, Any]) -> bool:
    """``parts`` with a role, or a ``parts`` list: a message of the Gemini or OTel GenAI kind."""
    return "parts" in item and ("role" in item or isinstance(item.get("parts"), list))


register_dialect(MessageDialect(name="gemini", matches=has_parts, read=from_gemini, order=45, is_message=is_parts_message))
