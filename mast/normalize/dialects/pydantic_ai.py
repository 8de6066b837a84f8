"""Pydantic AI message history: what ``ModelMessagesTypeAdapter`` dumps (``result.all_messages_json()``).

A history is a list of ``{"kind": "request" | "response", "parts": [...]}``. Request parts are
``system-prompt``, ``user-prompt``, ``tool-return`` and ``retry-prompt`` (a validation error sent
back to the model); response parts are ``text``, ``tool-call``, ``thinking`` and the built-in tool
parts. Each part names its kind in ``part_kind``. A response carries ``model_name`` and ``usage``
(``input_tokens``/``output_tokens``, or the older ``request_tokens``/``response_tokens``).
"""

from __future__ import annotations

from typing import Any

from mast.normalize._common import text_of, tool_call, usage_from
from mast.normalize._dialects import MessageDialect, register_dialect
from mast.normalize._msg_common import Msg
from mast.trace import ToolCall, ToolResult, Usage

REQUEST_PARTS = frozenset({"system-prompt", "user-prompt", "tool-return", "retry-prompt", "builtin-tool-return"})
RESPONSE_PARTS = frozenset({"text", "tool-call", "thinking", "builtin-tool-call", "builtin-tool-return", "file"})


def is_model_message(item: dict[str, Any]) -> bool:
    """A ``ModelRequest`` or ``ModelResponse`` dump: ``kind`` plus parts that name a ``part_kind``."""
    parts = item.get("parts")
    return (
        item.get("kind") in ("request", "response")
        and isinstance(parts, list)
        and all(isinstance(p, dict) and isinstance(p.get("part_kind"), str) for p in parts)
    )


def _usage(value: Any) -> Usage | None:
    """``input_tokens``/``output_tokens`` (current releases) or ``request_tokens``/``response_tokens`` (older ones)."""
    if isinstance(value, dict) and ("request_tokens" in value or "response_tokens" in value):
        def number(key: str) -> int | None:
            found = value.get(key)
            return found if isinstance(found, int) and not isinstance(found, bool) else None

        return Usage(input_tokens=number("request_tokens"), output_tokens=number("response_tokens"), total_tokens=number("total_tokens"))
    return usage_from(value)


def _retry_text(part: dict[str, Any]) -> str:
    content = part.get("content")
    if isinstance(content, list):  # validation errors: [{"type", "loc", "msg", "input"}]
        lines = [f"{'.'.join(map(str, e.get('loc') or []))}: {e.get('msg')}" if isinstance(e, dict) else str(e) for e in content]
        content = "\n".join(lines)
    return f"{text_of(content)}\n\nFix the errors and try again.".strip()


def read_model_message(item: dict[str, Any]) -> list[Msg]:
    """The messages one ``ModelRequest`` / ``ModelResponse`` holds, in part order."""
    parts = [p for p in item.get("parts") or [] if isinstance(p, dict)]
    if item.get("kind") == "response":
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[ToolCall] = []
        results: list[Msg] = []
        for part in parts:
            kind = part.get("part_kind")
            if kind in ("tool-call", "builtin-tool-call"):
                calls.append(tool_call(str(part.get("tool_name") or "?"), part.get("args"), part.get("tool_call_id")))
            elif kind == "thinking":
                thoughts.append(text_of(part.get("content")))
            elif kind == "builtin-tool-return":
                results.append(Msg(role="tool", tool_results=[ToolResult(call_id=part.get("tool_call_id"), name=part.get("tool_name"),
                                                                          output=text_of(part.get("content")))]))
            else:
                texts.append(text_of(part.get("content")))
        extra = {k: v for k, v in item.items() if k in ("provider_name", "finish_reason", "provider_response_id", "vendor_id") and v is not None}
        reply = Msg(role="assistant", text="\n".join(t for t in texts if t), reasoning="\n".join(t for t in thoughts if t),
                    tool_calls=calls, model=item.get("model_name") if isinstance(item.get("model_name"), str) else None,
                    usage=_usage(item.get("usage")), extra=extra)
        return [reply, *results]
    out: list[Msg] = []
    instructions = item.get("instructions")
    if isinstance(instructions, str) and instructions.strip():
        out.append(Msg(role="system", text=instructions))
    for part in parts:
        kind = part.get("part_kind")
        if kind == "system-prompt":
            out.append(Msg(role="system", text=text_of(part.get("content"))))
        elif kind == "user-prompt":
            out.append(Msg(role="user", text=text_of(part.get("content"))))
        elif kind in ("tool-return", "builtin-tool-return"):
            result = ToolResult(call_id=part.get("tool_call_id"), name=part.get("tool_name"), output=text_of(part.get("content")))
            out.append(Msg(role="tool", tool_results=[result]))
        elif kind == "retry-prompt":
            text = _retry_text(part)
            if part.get("tool_name"):
                result = ToolResult(call_id=part.get("tool_call_id"), name=part.get("tool_name"), output=text, is_error=True)
                out.append(Msg(role="tool", tool_results=[result]))
            else:
                out.append(Msg(role="user", text=text, extra={"retry_prompt": True}))
    return out


register_dialect(MessageDialect(name="pydantic_ai", matches=is_model_message, read=read_model_message, order=10))
