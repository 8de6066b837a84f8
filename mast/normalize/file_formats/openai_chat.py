"""OpenAI chat completions: message lists, request bodies, response bodies, and request+response pairs.

Accepted shapes:

* a message list ``[{"role", "content", "tool_calls", "tool_call_id", "name"}, ...]`` (also JSONL,
  one message per line), the lingua franca most frameworks can dump;
* a request body ``{"model", "messages", "tools", ...}``; a JSONL file of request bodies holds one
  conversation per line;
* a response body ``{"object": "chat.completion", "choices": [{"message"}], "usage"}``;
* a pair: ``{"request": <body>, "response": <body>}`` or a two-item list ``[request, response]``.

Agents: a message's ``name`` names its author. Otherwise assistant messages are attributed to the
name the system prompt introduces (CrewAI's ``You are {role}.``), else to ``assistant``. Tool
results are paired with calls by ``tool_call_id``; the result of CrewAI's delegation tools is
attributed to the coworker named in the call.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import usage_from
from mast.normalize._messages import (
    CHAT_ROLES,
    Msg,
    apply_prompt_names,
    as_dict,
    from_item,
    to_messages,
    type_of,
)
from mast.normalize._sniff import sniffed_json
from mast.normalize._timeline import Timeline
from mast.normalize._vcr import (
    is_cassette_of,
    rebuild_conversation,
    recorded_calls,
    yaml_cassette_score,
)
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.trace import Agent, Trace

CHAT_PATH = "/chat/completions"
"""What a chat-completions call's URI holds (OpenAI and every compatible endpoint)."""
_MESSAGE_KEYS = frozenset(
    {
        "role",
        "content",
        "tool_calls",
        "tool_call_id",
        "name",
        "function_call",
        "refusal",
        "audio",
        "annotations",
    }
)
_REQUEST_KEYS = frozenset(
    {
        "messages",
        "model",
        "tools",
        "tool_choice",
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "n",
        "stop",
        "stream",
        "stream_options",
        "response_format",
        "seed",
        "frequency_penalty",
        "presence_penalty",
        "logit_bias",
        "logprobs",
        "top_logprobs",
        "user",
        "parallel_tool_calls",
        "functions",
        "function_call",
        "metadata",
        "store",
        "reasoning_effort",
        "modalities",
        "audio",
        "prediction",
        "service_tier",
        "web_search_options",
        "verbosity",
        "prompt_cache_key",
        "safety_identifier",
    }
)


_OTHER_DIALECT_KEYS = frozenset({"type", "parts", "lc", "kwargs", "source", "sender", "toolCallId"})


def _is_chat_message(item: Any, *, strict: bool = True) -> bool:
    """An OpenAI chat message: a known role and no other dialect's markers.

    ``strict`` also requires that every key is one OpenAI defines; loose messages may carry extra
    keys (ids, timestamps, an author field), which are kept as step attributes.
    """
    if not isinstance(item, dict) or not isinstance(item.get("role"), str):
        return False
    if item["role"] not in CHAT_ROLES and item["role"] != "function":
        return False
    if "content" not in item and "tool_calls" not in item:
        return False
    if strict and not set(item) <= _MESSAGE_KEYS:
        return False
    if not strict and set(item) & _OTHER_DIALECT_KEYS:
        return False
    content = item.get("content")
    if isinstance(content, list):
        # Anthropic blocks and Vercel parts belong to their own formats.
        kinds = {type_of(p) for p in content if isinstance(p, dict)}
        if kinds & {"tool_use", "tool_result", "thinking", "redacted_thinking", "tool-call", "tool-result"}:
            return False
    return True


def is_chat_list(data: Any, *, strict: bool = True) -> bool:
    """A non-empty list whose items are all OpenAI chat messages."""
    return isinstance(data, list) and bool(data) and all(_is_chat_message(m, strict=strict) for m in data)


def is_request(data: Any) -> bool:
    """A chat-completions request body: ``messages`` of chat messages, and no Anthropic-only keys."""
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list) or not data["messages"]:
        return False
    if "system" in data or "thinking" in data or "anthropic_version" in data:
        return False
    tools = data.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
        return False
    return all(_is_chat_message(m) for m in data["messages"])


def is_response(data: Any) -> bool:
    """A chat-completions response body."""
    if not isinstance(data, dict):
        return False
    if data.get("object") == "chat.completion":
        return True
    choices = data.get("choices")
    return (
        isinstance(choices, list)
        and bool(choices)
        and all(isinstance(c, dict) and isinstance(c.get("message"), dict) for c in choices)
    )


def _pair(data: Any) -> tuple[Any, Any] | None:
    if isinstance(data, dict) and set(data) >= {"request", "response"}:
        request, response = data["request"], data["response"]
    elif isinstance(data, list) and len(data) == 2:
        request, response = data
    else:
        return None
    return (request, response) if is_request(request) and is_response(response) else None


class OpenAIChat(TraceFormat):
    """OpenAI chat completions: one conversation per file (or per JSONL record of request bodies)."""

    name = "openai_chat"
    description = (
        "OpenAI chat completions: message lists, request/response bodies, or a request+response pair"
    )
    priority = 30
    example = '[{"role": "user", "content": "..."}, {"role": "assistant", "tool_calls": [...]}] or {"model", "messages"}'

    def detect(self, raw: RawInput) -> float:
        """How sure this is the format: cheap sniffing first, then the parsed shape."""
        cassette = yaml_cassette_score(raw, CHAT_PATH)
        if cassette is not None:
            return cassette
        data = sniffed_json(raw, '"role"', '"choices"')
        if data is None:
            return 0.0
        if is_cassette_of(data, CHAT_PATH):
            return 0.9
        if raw.kind == "jsonl" and isinstance(data, list):
            records = data
            if is_chat_list(records):
                return 0.8
            if is_chat_list(records, strict=False):
                return 0.6
            if records and all(is_request(r) or is_chat_list(r) for r in records):
                return 0.85
            return 0.0
        if _pair(data) is not None:
            return 0.95
        if is_response(data):
            return 0.95
        if is_request(data):
            # Only a body of known request parameters is surely a request; other objects that
            # merely hold a "messages" list (framework results) are readable, with less certainty.
            if set(data) <= _REQUEST_KEYS:
                return 0.9
            return 0.7 if "model" in data else 0.5
        if is_chat_list(data):
            return 0.8
        if is_chat_list(data, strict=False):
            return 0.6
        return 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the traces in ``raw``; a broken record yields its error."""
        data = raw.data()
        if (
            raw.kind == "jsonl"
            and isinstance(data, list)
            and not is_chat_list([r for r in data if not isinstance(r, JsonlLineError)], strict=False)
        ):
            for number, record in enumerate(data):
                if isinstance(record, JsonlLineError):
                    yield raw.fail(str(record), record=number)
                    continue
                try:
                    yield self._one(record, raw, number)
                except TraceFormatError as exc:
                    yield exc
            return
        if raw.kind == "jsonl" and isinstance(data, list):
            bad = [r for r in data if isinstance(r, JsonlLineError)]
            data = [r for r in data if not isinstance(r, JsonlLineError)]
            trace = self._one(data, raw, None)
            trace.warnings.extend(str(b) + " (skipped)" for b in bad)
            yield trace
            return
        yield self._one(data, raw, None)

    def _cassette(self, data: Any, raw: RawInput) -> Trace:
        """A VCR cassette of chat-completions calls, rebuilt as one conversation."""
        notes: list[str] = []
        calls, other = recorded_calls(data, CHAT_PATH, notes=notes)
        first = (
            [
                m
                for item in calls[0].request.get("messages") or []
                if isinstance(item, dict)
                for m in from_item(item)
            ]
            if calls
            else []
        )
        agent_name = apply_prompt_names(first) or "assistant"
        timeline = Timeline(default_agent=agent_name, assistant_kind="message")

        def request_msgs(body: dict[str, Any]) -> list[Msg]:
            return [
                m for item in body.get("messages") or [] if isinstance(item, dict) for m in from_item(item)
            ]

        def response_msgs(body: Any) -> list[Msg]:
            # a streamed reply arrives here already joined (recorded_calls)
            return (to_messages(body) or []) if isinstance(body, dict) else []

        facts = rebuild_conversation(
            calls, request_msgs=request_msgs, response_msgs=response_msgs, timeline=timeline
        )
        if not timeline.steps:
            raise raw.fail("the cassette's chat-completions calls hold no messages with content")
        model = next((c["model"] for c in facts["calls"] if isinstance(c.get("model"), str)), None)
        known = (
            [Agent(name=agent_name, model=model)]
            if any(s.agent == agent_name for s in timeline.steps)
            else []
        )
        metadata: dict[str, Any] = {
            "cassette_version": as_dict(data).get("version"),
            "llm_calls": facts["calls"],
        }
        if other:
            metadata["other_interactions"] = other
        return assemble_trace(
            timeline.steps,
            source=self.source(raw, variant="vcr_cassette"),
            timeline=timeline,
            known_agents=known,
            framework=next(iter(sorted(timeline.framework_hints)), None),
            status="error" if facts["errors"] else "ok",
            error=facts["errors"][-1] if facts["errors"] else None,
            metadata=metadata,
            warnings=dict.fromkeys(notes),
        )

    def _one(self, data: Any, raw: RawInput, record: int | None) -> Trace:
        if record is None and is_cassette_of(data, CHAT_PATH):
            return self._cassette(data, raw)
        pair = _pair(data)
        request: dict[str, Any] | None = None
        response: dict[str, Any] | None = None
        if pair is not None:
            request, response = pair
        elif is_response(data):
            response = data
        elif is_request(data):
            request = data
        elif isinstance(data, list):
            request = {"messages": data}
        else:
            raise raw.fail(
                "openai_chat needs a message list, a request body or a response body", record=record
            )
        return build_chat_trace(
            request.get("messages", []) if request else [],
            response=response,
            request_extra={k: v for k, v in request.items() if k != "messages"} if request else {},
            source=self.source(
                raw,
                record,
                variant="pair"
                if pair
                else "response"
                if request is None
                else "request"
                if isinstance(data, dict)
                else "messages",
            ),
            raw=raw,
            record=record,
        )


def build_chat_trace(
    messages: list[Any],
    *,
    response: dict[str, Any] | None = None,
    request_extra: dict[str, Any] | None = None,
    source: Any,
    raw: RawInput | None = None,
    record: int | None = None,
) -> Trace:
    """A :class:`Trace` from an OpenAI-style message list and, optionally, the response that followed."""
    msgs: list[Msg] = []
    for position, message in enumerate(messages):
        if not isinstance(message, dict):
            where = f"message {position} is a {type(message).__name__}, not an object"
            raise raw.fail(where, record=record) if raw else TraceFormatError(where)
        msgs.extend(from_item(message))
    request_extra = dict(request_extra or {})
    agent_name = apply_prompt_names(msgs) or "assistant"
    timeline = Timeline(default_agent=agent_name, assistant_kind="message")
    for position, msg in enumerate(msgs):
        timeline.add(msg, source_ref=f"messages[{position}]")
    metadata: dict[str, Any] = {}
    if request_extra:
        metadata["request"] = request_extra
    usage = None
    if response is not None:
        reply = to_messages(response) or []
        for msg in reply:
            timeline.add(msg, kind="llm" if msg.role == "assistant" else None, source_ref="response.choices")
        usage = usage_from(response.get("usage"))
        metadata["response"] = {k: v for k, v in response.items() if k not in ("choices",)}
    model = (response or {}).get("model") or request_extra.get("model")
    known = (
        [Agent(name=agent_name, model=model if isinstance(model, str) else None)]
        if any(s.agent == agent_name for s in timeline.steps)
        else []
    )
    trace = assemble_trace(
        timeline.steps,
        source=source,
        timeline=timeline,
        known_agents=known,
        usage=usage,
        derive_usage=False,
        framework=next(iter(sorted(timeline.framework_hints)), None),
        status="ok" if response is not None else "unknown",
        metadata=metadata,
    )
    if not trace.steps:
        raise (
            raw.fail("the message list holds no messages with content", record=record)
            if raw
            else TraceFormatError("no messages with content")
        )
    return trace


register(OpenAIChat())
