"""OpenAI Responses API items: ``message``, ``reasoning``, ``function_call``, ``function_call_output``...

Items of one model turn arrive as siblings, so a list of them is read as a whole
(:func:`from_responses`, called by the list handling of :mod:`mast.normalize._messages`); a single
item met on its own is read through this dialect.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mast.normalize._common import text_of, tool_call
from mast.normalize._dialects import MessageDialect, register_dialect
from mast.normalize._msg_common import CHAT_ROLES, Msg, compact, maybe_json, norm_role, parts_text, type_of
from mast.trace import ToolResult

RESPONSES_ITEM_TYPES = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "custom_tool_call",
        "custom_tool_call_output",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "local_shell_call_output",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "item_reference",
    }
)


def from_responses(items: Iterable[Any]) -> list[Msg]:
    """Responses-API items; an assistant turn's reasoning, text and calls become one message."""
    out: list[Msg] = []

    def assistant() -> Msg:
        # Items of one model turn (reasoning, message, function calls) arrive as siblings.
        if out and out[-1].role == "assistant":
            return out[-1]
        msg = Msg(role="assistant")
        out.append(msg)
        return msg

    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "message":
            role = norm_role(item.get("role"))
            text, thought = parts_text(item.get("content"))
            if role == "assistant":
                msg = assistant()
                msg.text = "\n".join(t for t in (msg.text, text) if t)
                msg.reasoning = "\n".join(t for t in (msg.reasoning, thought) if t)
                msg.id = msg.id or item.get("id")
            else:
                out.append(Msg(role=role if role in CHAT_ROLES else "user", text=text, reasoning=thought, id=item.get("id")))
        elif kind == "reasoning":
            summary = item.get("summary") or item.get("content") or []
            text, thought = parts_text(summary)
            msg = assistant()
            msg.reasoning = "\n".join(t for t in (msg.reasoning, thought or text) if t)
            if item.get("encrypted_content"):
                msg.extra["encrypted_reasoning"] = True
        elif kind in ("function_call", "custom_tool_call", "mcp_call", "local_shell_call", "computer_call",
                      "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call"):
            name = item.get("name") or kind.removesuffix("_call")
            args = item.get("arguments", item.get("input", item.get("action")))
            call_id = item.get("call_id") or item.get("id")
            assistant().tool_calls.append(tool_call(str(name), args, call_id))
            if "output" in item and item.get("output") is not None:
                out.append(Msg(role="tool", tool_results=[ToolResult(call_id=call_id, name=str(name), output=text_of(item["output"]), is_error=bool(item.get("error")))]))
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output", "computer_call_output"):
            output = maybe_json(item.get("output"))
            out.append(Msg(role="tool", tool_results=[ToolResult(call_id=item.get("call_id"), output=text_of(output) if not isinstance(output, str) else output)]))
        else:
            out.append(Msg(role="system", text=f"[{kind}] {compact(item)}", extra={"item_type": kind}))
    return out


def is_responses_item(item: dict[str, Any]) -> bool:
    """A Responses item type other than ``message`` (a ``message`` item counts when its content is a list)."""
    return type_of(item) in RESPONSES_ITEM_TYPES and (item.get("type") != "message" or isinstance(item.get("content"), list))


def is_responses_non_message(item: dict[str, Any]) -> bool:
    """A Responses item other than a ``message`` (those count as messages by their role)."""
    return type_of(item) in RESPONSES_ITEM_TYPES and item.get("type") != "message"


def _read_item(item: dict[str, Any]) -> list[Msg]:
    return from_responses([item])


register_dialect(MessageDialect(name="responses", matches=is_responses_item, read=_read_item, order=50, is_message=is_responses_non_message))
