"""OTel GenAI ``ChatMessage``: ``{role, parts: [text | reasoning | tool_call | tool_call_response | ...]}``.

The semantic conventions' message shape (``gen_ai.input.messages`` / ``gen_ai.output.messages``):
every part names its ``type``. Tool call responses become separate ``tool`` messages; Gemini-style
function parts inside are read by the Gemini dialect.
"""

from __future__ import annotations

from typing import Any

from mast.normalize._common import text_of, tool_call
from mast.normalize._dialects import MessageDialect, register_dialect
from mast.normalize._msg_common import CHAT_ROLES, Msg, maybe_json, norm_role, parts_text
from mast.normalize.dialects.gemini import from_gemini, is_parts_message
from mast.trace import ToolCall, ToolResult


def from_otel(message: dict[str, Any]) -> list[Msg]:
    """An OTel GenAI ``ChatMessage``: ``{role, parts: [text | reasoning | tool_call | tool_call_response | ...]}``."""
    role = norm_role(message.get("role"))
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    for part in message.get("parts") or []:
        if not isinstance(part, dict):
            texts.append(text_of(part))
            continue
        kind = part.get("type")
        if kind in ("tool_call", "server_tool_call"):
            calls.append(tool_call(str(part.get("name") or "?"), part.get("arguments"), part.get("id")))
        elif kind in ("tool_call_response", "server_tool_call_response"):
            response = part.get("response", part.get("result"))
            results.append(ToolResult(call_id=part.get("id"), output=text_of(maybe_json(response)) if not isinstance(response, str) else response))
        elif kind == "reasoning":
            thoughts.append(str(part.get("content") or ""))
        elif "function_call" in part or "functionCall" in part or "function_response" in part or "functionResponse" in part:
            gemini = from_gemini({"role": role, "parts": [part]})
            for m in gemini:
                calls.extend(m.tool_calls)
                results.extend(m.tool_results)
                texts.append(m.text)
        elif kind == "text":
            texts.append(text_of(part))  # what parts_text makes of one text part, without its list and joins
        else:
            text, thought = parts_text([part])
            texts.append(text)
            thoughts.append(thought)
    extra = {k: v for k, v in message.items() if k not in ("role", "parts", "name") and v is not None}
    out = [Msg(role="tool", tool_results=[r]) for r in results]
    body = Msg(role=role if role in CHAT_ROLES else "user", text="\n".join(t for t in texts if t), reasoning="\n".join(t for t in thoughts if t),
               tool_calls=calls, name=message.get("name"), extra=extra)
    if not body.empty or not results:
        out.append(body)
    return out


def has_typed_parts(item: dict[str, Any]) -> bool:
    """``parts`` whose every entry is a dict naming its ``type`` (an empty or null list too)."""
    return "parts" in item and all(isinstance(p, dict) and "type" in p for p in item.get("parts") or [])


register_dialect(MessageDialect(name="otel_genai", matches=has_typed_parts, read=from_otel, order=40, is_message=is_parts_message))
