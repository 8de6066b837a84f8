"""Google Agent Development Kit (ADK) events: a session dump or its event list.

ADK records a run as :class:`Event` s: ``{"author": <agent name> | "user", "content": {"role":
"user" | "model", "parts": [{"text"} | {"function_call"} | {"function_response"}]}, "invocation_id",
"id", "timestamp", "actions": {"transfer_to_agent", "escalate", "state_delta", ...},
"usage_metadata", "partial", "branch"}``, in snake_case (``model_dump``) or camelCase (``by_alias``).
A session (``session.model_dump()``) wraps them: ``{"id", "app_name", "user_id", "state", "events"}``.
Accepted: a session, an event list, or JSONL with one event per line.

The author is the agent (a function response is authored by the agent whose tool ran; its step
goes to ``tool``); ``actions.transfer_to_agent`` marks a handoff to the named agent. Streaming
chunks (``partial: true``) are skipped when a complete event follows.

Example:
    >>> from mast.normalize import load_trace
    >>> t = load_trace([{"author": "user", "invocation_id": "e-1", "content": {"role": "user", "parts": [{"text": "Plan a trip"}]}},
    ...                 {"author": "planner", "invocation_id": "e-1", "content": {"role": "model", "parts": [{"text": "Day 1: Porto."}]}}])
    >>> t.source.format, [s.agent for s in t.steps], t.final_output
    ('google_adk', ['user', 'planner'], 'Day 1: Porto.')
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict, parse_time
from mast.normalize._messages import from_gemini
from mast.normalize._sniff import sniffed_json
from mast.normalize._timeline import Timeline
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Trace, Usage

_EVENT_KEYS = ("invocation_id", "invocationId")


def _empty_session(data: Any) -> bool:
    """An ADK session record (``app_name`` + ``user_id`` or ``state``) whose ``events`` list is empty."""
    if not isinstance(data, dict) or data.get("events") != []:
        return False
    named = isinstance(data.get("app_name") or data.get("appName"), str)
    return named and any(k in data for k in ("user_id", "userId", "state", "last_update_time", "lastUpdateTime"))


def is_event(value: Any) -> bool:
    """An ADK event: an author, an invocation id, and content (or actions)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("author"), str)
        and any(k in value for k in _EVENT_KEYS)
        and (isinstance(value.get("content"), dict) or isinstance(value.get("actions"), dict))
    )


def events_of(data: Any) -> tuple[list[dict[str, Any]], dict[str, Any]] | None:
    """``(events, session fields)`` when ``data`` is a session or an event list."""
    session: dict[str, Any] = {}
    if isinstance(data, dict) and isinstance(data.get("events"), list):
        session = {k: v for k, v in data.items() if k != "events"}
        data = data["events"]
    if isinstance(data, list) and data and all(is_event(e) for e in data):
        return data, session
    return None


def _usage(event: dict[str, Any]) -> Usage | None:
    meta = as_dict(event.get("usage_metadata") or event.get("usageMetadata"))
    def number(*keys: str) -> int | None:
        for key in keys:
            if isinstance(meta.get(key), int):
                return int(meta[key])
        return None
    usage = Usage(input_tokens=number("prompt_token_count", "promptTokenCount"),
                  output_tokens=number("candidates_token_count", "candidatesTokenCount"),
                  total_tokens=number("total_token_count", "totalTokenCount"))
    return usage if usage != Usage() else None


def _complete(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events without the streaming chunks that a complete event of the same author and invocation repeats."""
    out: list[dict[str, Any]] = []
    for position, event in enumerate(events):
        if event.get("partial") and any(
            not later.get("partial") and later.get("author") == event.get("author") for later in events[position + 1: position + 50]
        ):
            continue
        out.append(event)
    return out


class GoogleADKFormat(TraceFormat):
    """Google ADK session or events."""

    name = "google_adk"
    description = "Google ADK (Agent Development Kit) events: a session dump or its event list (JSON or JSONL)"
    priority = 21
    example = '{"author": "weather_agent", "invocation_id": "e-..", "content": {"role": "model", "parts": [{"function_call": {...}}]}}'

    def detect(self, raw: RawInput) -> float:
        """0.95 when every record is an ADK event (author + invocation id + content/actions); 0.9 for a session with no events."""
        data = sniffed_json(raw, '"author"', '"app_name"', '"appName"')
        if data is not None and events_of(data) is not None:
            return 0.95
        return 0.9 if _empty_session(data) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per session / event list."""
        data = raw.data()
        if _empty_session(data):
            app = data.get("app_name") or data.get("appName")
            raise raw.fail(f"Google ADK session {str(data.get('id') or '')!r} of app {app!r} holds no events: no run to read")
        found = events_of(data)
        if found is None:
            raise raw.fail("not Google ADK events: expected a session with events or a list of {author, invocation_id, content}")
        events, session = found
        timeline = Timeline(default_agent="agent")
        times = []
        for position, event in enumerate(_complete(events)):
            author = event["author"]
            when = parse_time(event.get("timestamp"))
            if when:
                times.append(when)
            fields: dict[str, Any] = {"started_at": when, "id": event.get("id"), "source_ref": f"events[{position}]"}
            content = event.get("content")
            usage = _usage(event)
            for msg in from_gemini(content) if isinstance(content, dict) else []:
                if msg.role == "user" and author != "user" and not msg.tool_results:
                    msg.name = author  # an agent's words re-sent as user content still belong to that agent
                if msg.role == "assistant" and usage is not None:
                    msg.usage, usage = usage, None
                timeline.add(msg, agent=author if author != "user" else None, **fields)
            actions = as_dict(event.get("actions"))
            target = actions.get("transfer_to_agent") or actions.get("transferToAgent")
            if isinstance(target, str) and target:
                timeline.add_step(kind="handoff", agent=author, recipient=target, content=f"transfer to {target}", **fields)
            if actions.get("escalate"):
                timeline.add_step(kind="system", agent=author, content="escalate", attributes={"event": "escalate"}, **fields)
        if not timeline.steps:
            raise raw.fail("the ADK events hold no content")
        yield assemble_trace(
            timeline.steps, source=self.source(raw), timeline=timeline, trace_id=str(session.get("id") or ""),
            framework="google-adk", started_at=min(times) if times else None, ended_at=max(times) if times else None,
            metadata={"session": session} if session else {},
        )


register(GoogleADKFormat())
