"""Block's Goose sessions: the JSONL session files of Goose before 1.10, and ``goose session export`` JSON.

A session file opens with a metadata line (``working_dir``, ``description``, ``message_count``,
``total_tokens``...), then one message per line: ``{"id", "role": "user" | "assistant", "created":
<epoch seconds>, "content": [...], "metadata": {"userVisible", "agentVisible"}}``. An exported session
is one object with the same metadata and the messages under ``conversation`` (newer Goose keeps
sessions in SQLite and exports them this way).

Content items: ``text``, ``thinking`` / ``redactedThinking``, ``toolRequest`` (``id``, ``toolCall``) and
``toolResponse`` (``id``, ``toolResult``; it arrives in a ``user`` message, and is a tool step here).
Versions spell a result three ways, all read: ``{"status": "success", "value": [<content>]}`` (early),
``{"status": "success", "value": {"content": [...], "isError": false}}`` (MCP results, later) and the
Rust ``{"Ok": ...}`` / ``{"Err": ...}``. A result is an error when its status is ``error``, it is an
``Err``, or ``isError`` is true. Other items (confirmation requests, notifications) are kept as
system steps.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict, leftover, parse_time, text_of, tool_call
from mast.normalize._messages import Msg
from mast.normalize._sniff import sniffed_json
from mast.normalize._timeline import Timeline
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.trace import Agent, ToolResult, Trace, Usage

AGENT = "goose"
_ITEM_TYPES = frozenset(
    {
        "text",
        "toolRequest",
        "toolResponse",
        "thinking",
        "redactedThinking",
        "image",
        "toolConfirmationRequest",
        "frontendToolRequest",
        "contextLengthExceeded",
        "summarizationRequested",
        "systemNotification",
        "actionRequired",
    }
)
_SESSION_KEYS = frozenset(
    {"working_dir", "description", "message_count", "total_tokens", "schedule_id", "conversation"}
)


def is_message(value: Any) -> bool:
    """A Goose message: a role and a list of typed content items, one at least of Goose's types (newer types are kept)."""
    if not isinstance(value, dict) or str(value.get("role")).lower() not in ("user", "assistant"):
        return False
    content = value.get("content")
    return (
        isinstance(content, list)
        and all(isinstance(i, dict) and isinstance(i.get("type"), str) for i in content)
        and any(i["type"] in _ITEM_TYPES for i in content)
    )


def _goose_only(messages: list[Any]) -> bool:
    """Messages only Goose writes: a camelCase tool item or a ``created`` epoch beside the content."""
    return any(
        isinstance(m, dict)
        and ("created" in m or any(i.get("type") in ("toolRequest", "toolResponse") for i in m["content"]))
        for m in messages
    )


def _outcome(wrapper: Any) -> tuple[Any, str | None]:
    """``(value, error)`` of a ``toolCall`` / ``toolResult`` in any of its spellings."""
    wrapper = as_dict(wrapper)
    if "Ok" in wrapper:
        return wrapper["Ok"], None
    if "Err" in wrapper:
        return None, text_of(wrapper["Err"]) or "error"
    if wrapper.get("status") == "error":
        return None, text_of(wrapper.get("error")) or "error"
    return wrapper.get("value"), None


def _message(message: dict[str, Any], number: int, timeline: Timeline) -> None:
    when = parse_time(message.get("created"))
    ref = f"line {number + 1}"
    fields: dict[str, Any] = {
        "started_at": when,
        "source_ref": ref,
        "attributes": leftover(message, ("id", "role", "created", "content")),
    }
    role = str(message["role"]).lower()
    texts: list[str] = []
    thoughts: list[str] = []
    calls = []
    for item in message["content"]:
        kind = item["type"]
        if kind == "text":
            texts.append(text_of(item.get("text")))
        elif kind in ("thinking", "redactedThinking"):
            thoughts.append(text_of(item.get("thinking")) or "[redacted thinking]")
        elif kind in ("toolRequest", "frontendToolRequest"):
            value, error = _outcome(item.get("toolCall"))
            value = as_dict(value)
            call = tool_call(
                str(value.get("name") or "?"),
                value.get("arguments", {}),
                str(item.get("id")) if item.get("id") else None,
            )
            calls.append(call)
            if error:
                fields["error"] = f"tool call {call.name} could not be read by Goose: {error}"
        elif kind == "toolResponse":
            value, error = _outcome(item.get("toolResult", item.get("tool_result")))
            failed = error is not None or bool(as_dict(value).get("isError"))
            output = (
                error
                if error is not None
                else text_of(
                    value.get("content") if isinstance(value, dict) and "content" in value else value
                )
            )
            result = ToolResult(
                call_id=str(item.get("id")) if item.get("id") else None, output=output, is_error=failed
            )
            timeline.add(Msg(role="tool", tool_results=[result]), started_at=when, source_ref=ref)
        elif kind == "image":
            texts.append("[image]")
        else:
            timeline.add_step(
                kind="system",
                agent="system",
                content=text_of({k: v for k, v in item.items() if k != "type"}) or kind,
                started_at=when,
                source_ref=ref,
                attributes={"goose_item": kind},
            )
    if texts or thoughts or calls:
        msg = Msg(
            role=role,
            text="\n".join(t for t in texts if t),
            reasoning="\n".join(thoughts),
            tool_calls=calls,
            id=str(message["id"]) if message.get("id") else None,
        )
        timeline.add(msg, **fields)


def _trace(
    session: dict[str, Any], messages: list[tuple[int, Any]], raw: RawInput, fmt: TraceFormat, variant: str
) -> Trace:
    timeline = Timeline(default_agent=AGENT)
    skipped = []
    for number, message in messages:
        if is_message(message):
            _message(message, number, timeline)
        else:
            skipped.append(number + 1)
    if not timeline.steps:
        raise raw.fail("Goose session holds no messages")
    times = [s.started_at for s in timeline.steps if s.started_at]
    warnings = (
        [f"{len(skipped)} line(s) are not Goose messages (line {', '.join(map(str, skipped[:5]))}): skipped"]
        if skipped
        else []
    )
    metadata = {k: v for k, v in session.items() if k != "conversation"}
    tokens = {k: session.get(k) for k in ("input_tokens", "output_tokens", "total_tokens")}
    usage = (
        Usage(**{k: v for k, v in tokens.items() if isinstance(v, int)})
        if any(isinstance(v, int) for v in tokens.values())
        else None
    )
    # a session file is named by its session id (20250101_120000.jsonl)
    session_id = session.get("id") or (
        raw.path.stem if raw.path is not None and variant == "session.jsonl" else ""
    )
    return assemble_trace(
        timeline.steps,
        source=fmt.source(raw, variant=variant),
        timeline=timeline,
        known_agents=[Agent(name=AGENT, role="coding agent (Goose)")],
        warnings=warnings,
        usage=usage,
        trace_id=str(session_id),
        framework="goose",
        started_at=min(times) if times else None,
        ended_at=max(times) if times else None,
        metadata={"session": metadata} if metadata else {},
    )


def _is_export(data: Any) -> bool:
    conversation = data.get("conversation") if isinstance(data, dict) else None
    if isinstance(conversation, dict):  # some versions wrap the list: {"messages": [...]}
        conversation = conversation.get("messages")
    return (
        isinstance(conversation, list) and bool(conversation) and all(is_message(m) for m in conversation[:5])
    )


def _export_messages(data: dict[str, Any]) -> list[Any]:
    conversation = data["conversation"]
    return list(conversation["messages"] if isinstance(conversation, dict) else conversation)


class GooseFormat(TraceFormat):
    """Goose session: JSONL session file (metadata line, then messages) or exported session JSON."""

    name = "goose"
    description = (
        "Block Goose sessions (session .jsonl: a metadata line then messages; goose session export JSON)"
    )
    priority = 23
    example = '{"working_dir": "...", "description": "..."}\\n{"role": "assistant", "created": 1735689600, "content": [{"type": "toolRequest", ...}]}'

    def detect(self, raw: RawInput) -> float:
        """0.95 for JSONL whose records are Goose messages after an optional metadata line, or an export."""
        data = sniffed_json(raw, '"toolRequest"', '"toolResponse"', '"working_dir"', '"created"')
        if _is_export(data):
            return 0.95
        if not isinstance(data, list) or raw.kind != "jsonl":
            return 0.0
        head = (
            data[1:]
            if data and isinstance(data[0], dict) and set(data[0]) & _SESSION_KEYS and not is_message(data[0])
            else data
        )
        head = head[:20]
        if head and all(is_message(m) for m in head) and (len(head) < len(data) or _goose_only(head)):
            return 0.95
        return 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per session file."""
        data = raw.data()
        if _is_export(data):
            yield _trace(data, list(enumerate(_export_messages(data))), raw, self, "export")
            return
        if not isinstance(data, list):
            raise raw.fail(
                "not a Goose session (needs JSONL messages with content items, or an export with a conversation)"
            )
        records = list(enumerate(data))
        session: dict[str, Any] = {}
        if records and isinstance(records[0][1], dict) and not is_message(records[0][1]):
            session = records.pop(0)[1]
        bad = [n + 1 for n, r in records if isinstance(r, JsonlLineError)]
        records = [(n, r) for n, r in records if not isinstance(r, JsonlLineError)]
        trace = _trace(session, records, raw, self, "session.jsonl")
        if bad:
            trace.warnings.append(f"line(s) {', '.join(map(str, bad[:5]))} are not valid JSON: skipped")
        yield trace


register(GooseFormat())
