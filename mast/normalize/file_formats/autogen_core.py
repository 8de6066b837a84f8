"""AutoGen (0.4+) typed message lists: autogen-core ``LLMMessage`` s and AgentChat messages.

- **autogen-core** model context (``{"messages": [...]}`` or a bare list): ``SystemMessage``,
  ``UserMessage`` and ``AssistantMessage`` (with ``source``, the agent), whose ``content`` may be a
  list of ``FunctionCall{id, name, arguments}``, and ``FunctionExecutionResultMessage`` holding
  ``FunctionExecutionResult{call_id, name, content, is_error}``. A call to a ``transfer_to_*`` tool
  is a handoff: its step has kind ``handoff`` and the agent control went to as recipient.
- **AgentChat** messages and events (``TaskResult.messages``): ``TextMessage``, ``HandoffMessage``,
  ``ToolCallRequestEvent``, ``ToolCallExecutionEvent``, ``StopMessage``... each with ``source``,
  ``models_usage`` and ``created_at``. Streaming chunks are counted, not kept.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import parse_time, text_of, tool_call, usage_from
from mast.normalize._logs_common import LogParse
from mast.normalize._sniff import json_head
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Step, ToolCall, ToolResult, Trace

LLM_TYPES = frozenset({"SystemMessage", "UserMessage", "AssistantMessage", "FunctionExecutionResultMessage"})
AGENTCHAT_TYPES = frozenset({
    "TextMessage", "MultiModalMessage", "StopMessage", "HandoffMessage", "ToolCallSummaryMessage", "StructuredMessage",
    "ToolCallRequestEvent", "ToolCallExecutionEvent", "ThoughtEvent", "CodeGenerationEvent", "CodeExecutionEvent",
    "MemoryQueryEvent", "SelectSpeakerEvent", "SelectorEvent", "UserInputRequestedEvent", "ModelClientStreamingChunkEvent",
})
_HANDOFF_TOOL = "transfer_to_"
_TRANSFERRED = re.compile(r"Transferred to (?P<target>[\w\-]+)")
_SKIPPED = {"ModelClientStreamingChunkEvent"}
_OWN_KEYS = {"type", "source", "content", "thought", "models_usage", "created_at", "id", "target", "metadata"}


def _calls(items: Any) -> list[ToolCall]:
    return [tool_call(str(c.get("name") or "?"), c.get("arguments"), c.get("id")) for c in items if isinstance(c, dict)] if isinstance(items, list) else []


def _results(items: Any) -> list[ToolResult]:
    if not isinstance(items, list):
        return []
    return [
        ToolResult(call_id=r.get("call_id"), name=r.get("name"), output=text_of(r.get("content")), is_error=bool(r.get("is_error")))
        for r in items
        if isinstance(r, dict)
    ]


def is_typed_message(obj: Any) -> bool:
    """True for an autogen-core or AgentChat message dict."""
    return isinstance(obj, dict) and isinstance(obj.get("type"), str) and obj["type"] in LLM_TYPES | AGENTCHAT_TYPES


def message_list(data: Any) -> list[Any] | None:
    """The typed message list of ``data`` (a bare list or ``{"messages": [...]}``), else ``None``."""
    messages = data.get("messages") if isinstance(data, dict) else data
    if isinstance(messages, list) and messages and all(is_typed_message(m) for m in messages):
        return messages
    return None


def add_typed_messages(out: LogParse, messages: list[Any], ref: str = "messages") -> None:
    """Append one step per typed message to ``out`` and resolve handoff recipients."""
    skipped = 0
    for position, msg in enumerate(messages):
        kind_name = msg.get("type")
        if kind_name in _SKIPPED:
            skipped += 1
            continue
        source = msg.get("source")
        content = msg.get("content")
        fields: dict[str, Any] = {
            "agent": str(source) if source else None,
            "id": str(msg["id"]) if msg.get("id") else None,
            "usage": usage_from(msg.get("models_usage")),
            "started_at": parse_time(msg.get("created_at")),
            "source_ref": f"{ref}[{position}]",
            "attributes": {"message_type": kind_name, **{k: v for k, v in msg.items() if k not in _OWN_KEYS}},
        }
        if isinstance(msg.get("metadata"), dict) and msg["metadata"]:
            fields["attributes"]["metadata"] = msg["metadata"]
        calls = _calls(content) if kind_name in ("AssistantMessage", "ToolCallRequestEvent") else []
        results = _results(content) if kind_name in ("FunctionExecutionResultMessage", "ToolCallExecutionEvent") else []
        thought = msg.get("thought") if isinstance(msg.get("thought"), str) else None
        text = "" if calls or results else text_of(content)
        if thought:
            text = f"{thought}\n\n{text}".strip()
            fields["attributes"]["thought"] = True
        if kind_name == "SystemMessage":
            out.add(kind="system", role="system", content=text, **{**fields, "agent": None})
        elif kind_name == "UserMessage" or (source == "user" and not calls and not results):
            out.add(kind="message", role="user", content=text, **fields)
        elif calls:
            handoff = any(c.name.startswith(_HANDOFF_TOOL) for c in calls)
            out.add(kind="handoff" if handoff else "tool_call", role="assistant", content=text, tool_calls=calls, **fields)
        elif results:
            out.add(kind="tool_result", role="tool", tool_results=results, **fields)
        elif kind_name == "HandoffMessage":
            out.add(kind="handoff", role="assistant", recipient=str(msg.get("target") or "") or None, content=text, **fields)
        elif kind_name in ("StopMessage", "SelectSpeakerEvent", "SelectorEvent", "UserInputRequestedEvent"):
            out.add(kind="system", role="assistant", content=text, **fields)
        else:
            out.add(kind="message", role="assistant", content=text, **fields)
    if skipped:
        out.metadata["streaming_chunks_skipped"] = skipped
    _resolve_handoffs(out.steps)


def _resolve_handoffs(steps: list[Step]) -> None:
    """Name the agent each ``transfer_to_*`` call handed control to: from its result, else the next speaker."""
    results = {r.call_id: r for s in steps for r in s.tool_results if r.call_id}
    for position, step in enumerate(steps):
        if step.kind != "handoff" or step.recipient:
            continue
        for call in step.tool_calls:
            result = results.get(call.id) if call.id else None
            found = _TRANSFERRED.search(result.output) if result else None
            if found:
                step.recipient = found.group("target")
                break
        if not step.recipient:
            step.recipient = next((s.agent for s in steps[position + 1:] if s.role == "assistant" and s.agent and s.agent != step.agent), None)


class AutogenCoreFormat(TraceFormat):
    """Typed AutoGen message lists (autogen-core LLMMessages, AgentChat messages)."""

    name = "autogen_core"
    description = "AutoGen 0.4+ typed messages: autogen-core LLMMessage lists and AgentChat TaskResult messages"
    priority = 61
    example = '[{"type": "AssistantMessage", "source": "coder", "content": [{"id", "name", "arguments"}]}, {"type": "FunctionExecutionResultMessage", ...}]'

    def detect(self, raw: RawInput) -> float:
        """Sure when every message carries a known AutoGen ``type``."""
        if not json_head(raw, '"type"'):
            return 0.0
        try:
            data = raw.data()
        except TraceFormatError:
            return 0.0
        return 0.95 if message_list(data) is not None else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace for the message list."""
        data = raw.data()
        messages = message_list(data)
        if messages is None:
            raise raw.fail("not an AutoGen message list: expected messages with type UserMessage, AssistantMessage, TextMessage...")
        out = LogParse(variant="agentchat" if any(m.get("type") in AGENTCHAT_TYPES for m in messages) else "llm_messages")
        add_typed_messages(out, messages)
        task = next((s.content for s in out.steps if s.role == "user" and s.content), None)
        last = next((s for s in reversed(out.steps) if s.role == "assistant" and s.kind == "message" and s.content), None)
        metadata = {k: v for k, v in data.items() if k != "messages"} if isinstance(data, dict) else {}
        # The first user text unstripped, and an answer only when AgentChat says the run stopped.
        yield assemble_trace(
            out.steps,
            source=self.source(raw, variant=out.variant),
            task=task,
            derive_task=False,
            final_output=last.content if last is not None and isinstance(data, dict) and "stop_reason" in data else None,
            derive_final_output=False,
            warnings=out.warnings,
            framework="autogen",
            metadata={**metadata, **out.metadata},
        )


register(AutogenCoreFormat())
