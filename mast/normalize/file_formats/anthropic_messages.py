"""Anthropic Messages: request bodies, response bodies, and VCR cassettes of Messages API calls.

Content blocks: ``text``, ``thinking`` / ``redacted_thinking`` (kept, marked as thinking),
``tool_use`` (assistant's calls), ``tool_result`` (inside a *user* message: re-labelled as tool
steps and paired with the call by ``tool_use_id``), images and documents (placeholders).

A VCR cassette (``interactions: [{request: {uri, body}, response: {body: {string}}}]``, as recorded
by vcrpy / pytest-recording) holds one call per interaction. Each request re-sends the whole
conversation, so the cassette is rebuilt as one conversation: only messages not seen in an earlier
request are added, then the recorded response. Gzip-compressed (``!!binary``) and streamed (SSE)
response bodies are decoded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import text_of, usage_from
from mast.normalize._messages import Msg, apply_prompt_names, as_dict, from_anthropic, maybe_json
from mast.normalize._sniff import json_head
from mast.normalize._streams import assemble_stream, is_event_stream
from mast.normalize._timeline import Timeline
from mast.normalize._vcr import body_of, raw_body
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Agent, Trace, Usage

_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result"}
)


def _has_blocks(messages: list[Any]) -> bool:
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") in _BLOCKS for b in content
        ):
            return True
    return False


def is_request(data: Any) -> bool:
    """An Anthropic Messages request body."""
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list) or not data["messages"]:
        return False
    messages = data["messages"]
    if not all(isinstance(m, dict) and m.get("role") in ("user", "assistant") for m in messages):
        return False
    tools = data.get("tools")
    markers = (
        _has_blocks(messages)
        or "system" in data
        or "thinking" in data
        or str(data.get("model", "")).startswith("claude")
        or (isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools))
    )
    return bool(markers)


def is_response(data: Any) -> bool:
    """An Anthropic Messages response body."""
    return (
        isinstance(data, dict)
        and data.get("type") == "message"
        and data.get("role") == "assistant"
        and isinstance(data.get("content"), list)
    )


def _interaction_request(
    interaction: Any, notes: list[str] | None = None
) -> tuple[dict[str, Any] | None, str]:
    request = interaction.get("request") if isinstance(interaction, dict) else None
    if not isinstance(request, dict):
        return None, ""
    body = body_of(request, notes)
    return (body if isinstance(body, dict) else None), str(request.get("uri") or "")


def is_cassette(data: Any) -> bool:
    """A VCR cassette with at least one Anthropic Messages call."""
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        return False
    for interaction in data["interactions"]:
        body, uri = _interaction_request(interaction)
        if "anthropic.com" in uri or (body is not None and is_request(body) and "/v1/messages" in uri):
            return True
    return False


def _response_body(
    interaction: dict[str, Any], notes: list[str] | None = None
) -> tuple[dict[str, Any] | None, int | None]:
    response = as_dict(interaction.get("response"))
    status = as_dict(response.get("status"))
    code = status.get("code") if isinstance(status.get("code"), int) else None
    body = raw_body(response, notes)
    if is_event_stream(body):
        return assemble_stream(body), code  # stream: true, recorded as server-sent events
    parsed = maybe_json(body) if isinstance(body, str) else body
    return (parsed if isinstance(parsed, dict) else None), code


def _system_msgs(request: dict[str, Any]) -> list[Msg]:
    system = request.get("system")
    if not system:
        return []
    return [Msg(role="system", text=text_of(system) if not isinstance(system, str) else system)]


def _request_msgs(request: dict[str, Any]) -> list[Msg]:
    msgs = _system_msgs(request)
    for message in request.get("messages") or []:
        if isinstance(message, dict):
            msgs.extend(from_anthropic(message))
    return msgs


class AnthropicMessages(TraceFormat):
    """Anthropic Messages bodies and VCR cassettes of Messages calls."""

    name = "anthropic_messages"
    description = "Anthropic Messages API: request/response bodies (tool_use/tool_result/thinking blocks) and VCR cassettes of them"
    priority = 32
    example = '{"model": "claude-...", "system": "...", "messages": [{"role": "assistant", "content": [{"type": "tool_use", ...}]}]}'

    def detect(self, raw: RawInput) -> float:
        """How sure this is the format: cheap sniffing first, then the parsed shape."""
        is_yaml = (
            raw.path is not None and raw.path.suffix in (".yaml", ".yml") and "interactions:" in raw.head
        )
        if not is_yaml and not json_head(raw, '"messages"', '"role"'):
            return 0.0
        try:
            data = raw.data()
        except TraceFormatError:
            return 0.0
        if raw.kind == "yaml" or is_cassette(data):  # a cassette recorded as JSON reads as one in YAML
            return 0.95 if is_cassette(data) else 0.0
        if isinstance(data, dict) and set(data) >= {"request", "response"}:
            return 0.95 if is_request(data["request"]) and is_response(data["response"]) else 0.0
        if is_response(data):
            return 0.95
        if is_request(data):
            return 0.92
        return 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the traces in ``raw``; a broken record yields its error."""
        data = raw.data()
        if raw.kind == "yaml" or is_cassette(data):
            yield self._cassette(data, raw)
            return
        if isinstance(data, dict) and set(data) >= {"request", "response"}:
            yield self._calls([(data["request"], data["response"], None)], raw, variant="pair")
        elif is_response(data):
            yield self._calls([(None, data, None)], raw, variant="response")
        elif is_request(data):
            yield self._calls([(data, None, None)], raw, variant="request")
        else:
            raise raw.fail("anthropic_messages needs a request body, a response body or a VCR cassette")

    def _cassette(self, data: Any, raw: RawInput) -> Trace:
        if not is_cassette(data):
            raise raw.fail("not a VCR cassette of Anthropic Messages calls")
        calls: list[tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None]] = []
        other: list[dict[str, Any]] = []
        notes: list[str] = []  # bodies cut at a cap or kept undecoded: said in the trace's warnings
        for number, interaction in enumerate(data["interactions"]):
            body, uri = _interaction_request(interaction, notes)
            if body is None or not is_request(body):
                request = interaction.get("request") or {}
                other.append({"index": number, "method": request.get("method"), "uri": uri})
                continue
            response, code = _response_body(interaction, notes)
            calls.append((body, response, {"index": number, "uri": uri, "status": code}))
        trace = self._calls(calls, raw, variant="vcr_cassette")
        trace.warnings.extend(dict.fromkeys(notes))
        if other:
            trace.metadata["other_interactions"] = other
        trace.metadata["cassette_version"] = data.get("version")
        return trace

    def _calls(
        self,
        calls: list[tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None]],
        raw: RawInput,
        *,
        variant: str,
    ) -> Trace:
        first_request = next((req for req, _, _ in calls if req), None) or {}
        agent_name = apply_prompt_names(_system_msgs(first_request)) or "assistant"
        timeline = Timeline(default_agent=agent_name, assistant_kind="message")
        usage: Usage | None = None
        requests_meta: list[dict[str, Any]] = []
        error: str | None = None
        model: str | None = None
        missing = False
        for request, response, where in calls:
            ref = f"interactions[{where['index']}]" if where else ""
            if request is not None:
                timeline.add_new(_request_msgs(request), source_ref=f"{ref}.request" if ref else "request")
                requests_meta.append(
                    {k: v for k, v in request.items() if k not in ("messages", "system")} | (where or {})
                )
                model = model or request.get("model")
            if response is None:
                missing = missing or where is not None
                continue
            if response.get("type") == "error" or ("error" in response and not response.get("content")):
                error = text_of(response.get("error"))
                timeline.add_step(
                    kind="error",
                    agent=agent_name,
                    content=error,
                    source_ref=f"{ref}.response" if ref else "response",
                )
                continue
            reply = from_anthropic(response)
            model = response.get("model") or model
            for msg in reply:
                timeline.add(
                    msg,
                    kind="llm",
                    model=response.get("model"),
                    usage=usage_from(response.get("usage")),
                    attributes={
                        k: response[k]
                        for k in ("stop_reason", "stop_sequence")
                        if response.get(k) is not None
                    },
                    source_ref=f"{ref}.response" if ref else "response",
                )
            step_usage = usage_from(response.get("usage"))
            if step_usage:
                usage = step_usage if usage is None else usage + step_usage
        if not timeline.steps:
            raise raw.fail("the Anthropic messages hold no content")
        metadata: dict[str, Any] = {}
        if requests_meta:
            metadata["requests"] = requests_meta
        warnings = []
        if missing:
            warnings.append("a recorded request has no readable response body")
        last_response = next((resp for _, resp, _ in reversed(calls) if resp), None)
        known = (
            [Agent(name=agent_name, model=model)]
            if any(s.agent == agent_name for s in timeline.steps)
            else []
        )
        return assemble_trace(
            timeline.steps,
            source=self.source(raw, variant=variant),
            timeline=timeline,
            known_agents=known,
            usage=usage,  # summed per response: a reply's steps share its usage
            derive_usage=False,
            warnings=warnings,
            trace_id=str((last_response or {}).get("id") or ""),
            framework=next(iter(sorted(timeline.framework_hints)), None),
            status="error" if error else "ok" if last_response else "unknown",
            error=error,
            metadata=metadata,
        )


register(AnthropicMessages())
