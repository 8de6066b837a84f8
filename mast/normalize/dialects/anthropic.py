"""Anthropic Messages: ``{role, content: [text | tool_use | tool_result | thinking | ...]}``.

A message whose content holds Anthropic blocks is read here; ``tool_result`` blocks become separate
``tool`` messages placed before the message's own text and calls.
"""

from __future__ import annotations

from typing import Any

from mast.normalize._common import text_of, tool_call, usage_from
from mast.normalize._dialects import MessageDialect, register_dialect
from mast.normalize._msg_common import Msg, has_chat_role, norm_role, parts_text, type_of
from mast.trace import ToolCall, ToolResult

ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result"}
)


def from_anthropic(message: dict[str, Any]) -> list[Msg]:
    """An Anthropic Messages message; ``tool_result`` blocks become separate ``tool`` messages.

    An assistant reply that ran a server tool (``server_tool_use``, then its ``*_tool_result`` and
    the text written after it, all in one response) is split in that order: the call, its result,
    then the answer, so the answer is the reply's last word rather than text before a tool call.
    """
    role = norm_role(message.get("role") or "assistant")
    content = message.get("content")
    if not isinstance(content, list):
        content = [{"type": "text", "text": content}] if isinstance(content, str) else []
    if role == "assistant" and _has_server_results(content):
        return _split_at_results(message, content)
    results: list[Msg] = []
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        if not isinstance(block, dict):
            texts.append(text_of(block))
            continue
        kind = block.get("type")
        if kind in ("tool_use", "server_tool_use"):
            calls.append(tool_call(str(block.get("name") or "?"), block.get("input"), block.get("id")))
        elif kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result")):
            output = block.get("content")
            result = ToolResult(call_id=block.get("tool_use_id"), output=text_of(output), is_error=bool(block.get("is_error")))
            results.append(Msg(role="tool", tool_results=[result]))
        elif kind in ("thinking", "redacted_thinking"):
            thoughts.append(block.get("thinking") or "[redacted thinking]")
        else:
            text, thought = parts_text([block])
            texts.append(text)
            thoughts.append(thought)
    used = {"role", "content", "type", "model", "usage", "id"}
    extra = {k: v for k, v in message.items() if k not in used and v is not None}
    out = results
    body = Msg(
        role=role,
        text="\n".join(t for t in texts if t),
        reasoning="\n".join(t for t in thoughts if t),
        tool_calls=calls,
        id=message.get("id"),
        model=message.get("model"),
        usage=usage_from(message.get("usage")),
        extra=extra,
    )
    if not body.empty or not results:
        out = [*results, body]
    return out


def _has_server_results(content: list[Any]) -> bool:
    """A server tool's result (``web_search_tool_result``, ``bash_code_execution_tool_result``...) inside the reply."""
    return any(isinstance(b, dict) and isinstance(b.get("type"), str) and b["type"].endswith("_tool_result")
               and b["type"] != "tool_result" for b in content)


def _split_at_results(message: dict[str, Any], content: list[Any]) -> list[Msg]:
    """The reply cut at each server tool result: ``[assistant (calls), tool (result), ..., assistant (answer)]``."""
    out: list[Msg] = []
    segment: list[Any] = []
    first = True

    def flush() -> None:
        nonlocal first
        if segment:
            part = {**message, "content": list(segment)} if first else {"role": "assistant", "content": list(segment)}
            out.extend(m for m in from_anthropic(part) if not m.empty)
            first = False
            segment.clear()

    for block in content:
        kind = block.get("type") if isinstance(block, dict) else None
        if isinstance(kind, str) and kind.endswith("_tool_result") and kind != "tool_result":
            flush()
            out.extend(from_anthropic({"role": "user", "content": [block]}))
        else:
            segment.append(block)
    flush()
    return out


def has_anthropic_blocks(item: dict[str, Any]) -> bool:
    """Content given as a list holding at least one Anthropic-only block (``tool_use``, ``thinking``...)."""
    content = item.get("content")
    return isinstance(content, list) and any(isinstance(p, dict) and type_of(p) in ANTHROPIC_BLOCKS for p in content)


register_dialect(MessageDialect(name="anthropic", matches=has_anthropic_blocks, read=from_anthropic, order=70, is_message=has_chat_role))
