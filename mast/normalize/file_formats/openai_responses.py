"""OpenAI Responses API: item lists, request bodies and response objects.

Items are ``{"type": "message", "role", "content": [{"type": "input_text" | "output_text", "text"}]}``,
``{"type": "function_call", "call_id", "name", "arguments"}``, ``{"type": "function_call_output",
"call_id", "output"}``, ``{"type": "reasoning", "summary": [...]}`` and hosted-tool items
(``web_search_call``, ``computer_call``, ``mcp_call``...). This is what ``RunResult.to_input_list()``
of the OpenAI Agents SDK and Responses-based sessions store.

Accepted shapes: an item list (JSON array or JSONL, one item per line); a request body
``{"model", "instructions", "input": [...] | "text"}``; a response object ``{"object": "response",
"output": [...], "usage"}``; or a pair ``{"request", "response"}``. The reasoning, text and calls of
one model turn become one step; ``function_call_output`` items are paired by ``call_id``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import usage_from
from mast.normalize._messages import RESPONSES_ITEM_TYPES, Msg, from_responses, type_of
from mast.normalize._sniff import sniffed_json
from mast.normalize._timeline import Timeline
from mast.normalize._vcr import is_cassette_of, rebuild_conversation, recorded_calls, yaml_cassette_score
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.trace import Agent, Trace

_PART_TYPES = frozenset({"input_text", "output_text", "input_image", "input_file", "refusal", "input_audio"})


def _is_item(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    kind = item.get("type")
    if kind == "message" or (kind is None and "role" in item):
        content = item.get("content")
        if isinstance(content, str):
            return True  # EasyInputMessage: {"role", "content": "text"}
        return isinstance(content, list) and all(isinstance(p, dict) and type_of(p) in _PART_TYPES for p in content)
    return type_of(item) in RESPONSES_ITEM_TYPES


def is_item_list(data: Any) -> bool:
    """A list of Responses items with at least one typed item (plain chat lists are openai_chat's)."""
    return (
        isinstance(data, list)
        and bool(data)
        and all(_is_item(i) for i in data)
        and any(isinstance(i, dict) and "type" in i for i in data)
    )


def is_response(data: Any) -> bool:
    """A Responses-API response object."""
    return isinstance(data, dict) and data.get("object") == "response" and isinstance(data.get("output"), list)


def is_request(data: Any) -> bool:
    """A Responses-API request body (``input`` items or text, plus a model or instructions)."""
    if not isinstance(data, dict) or "input" not in data or not ({"model", "instructions"} & set(data)):
        return False
    value = data["input"]
    return isinstance(value, str) or (isinstance(value, list) and all(_is_item(i) for i in value))


RESPONSES_PATH = "/responses"
"""What a Responses-API call's URI holds."""


def _input_msgs(body: dict[str, Any]) -> list[Msg]:
    msgs: list[Msg] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions.strip():
        msgs.append(Msg(role="system", text=instructions))
    items = body.get("input")
    if isinstance(items, str):
        msgs.append(Msg(role="user", text=items))
    elif isinstance(items, list):
        msgs.extend(from_responses(items))
    return msgs


def _output_msgs(body: Any) -> list[Msg]:
    return from_responses(body.get("output") or []) if isinstance(body, dict) and isinstance(body.get("output"), list) else []


class OpenAIResponses(TraceFormat):
    """OpenAI Responses API items, requests and response objects."""

    name = "openai_responses"
    description = "OpenAI Responses API: item lists (message/function_call/function_call_output/reasoning), requests, responses"
    priority = 31
    example = '{"object": "response", "output": [{"type": "function_call", ...}]} or a list of Responses input items'

    def detect(self, raw: RawInput) -> float:
        """How sure this is the format: cheap sniffing first, then the parsed shape."""
        cassette = yaml_cassette_score(raw, RESPONSES_PATH)
        if cassette is not None:
            return cassette
        data = sniffed_json(raw, '"type"', '"role"')
        if data is None:
            return 0.0
        if is_cassette_of(data, RESPONSES_PATH):
            return 0.9
        if raw.kind == "jsonl" and isinstance(data, list):
            if is_item_list(data):
                return 0.85
            return 0.85 if data and all(is_response(r) or is_request(r) for r in data) else 0.0
        if isinstance(data, dict) and set(data) >= {"request", "response"} and is_response(data["response"]):
            return 0.95
        if is_response(data):
            return 0.95
        if is_request(data):
            return 0.85
        return 0.9 if is_item_list(data) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the traces in ``raw``; a broken record yields its error."""
        data = raw.data()
        if raw.kind == "jsonl" and isinstance(data, list):
            good = [r for r in data if not isinstance(r, JsonlLineError)]
            if not is_item_list(good):
                for number, record in enumerate(data):
                    if isinstance(record, JsonlLineError):
                        yield raw.fail(str(record), record=number)
                    else:
                        yield self._one(record, raw, number)
                return
            trace = self._one(good, raw, None)
            trace.warnings.extend(f"{r} (skipped)" for r in data if isinstance(r, JsonlLineError))
            yield trace
            return
        yield self._one(data, raw, None)

    def _cassette(self, data: Any, raw: RawInput) -> Trace:
        """A VCR cassette of Responses calls, rebuilt as one conversation (each call re-sends the history)."""
        notes: list[str] = []
        calls, other = recorded_calls(data, RESPONSES_PATH, notes=notes)
        timeline = Timeline(assistant_kind="message")
        facts = rebuild_conversation(calls, request_msgs=_input_msgs, response_msgs=_output_msgs, timeline=timeline)
        if not timeline.steps:
            raise raw.fail("the cassette's Responses calls hold no messages with content")
        model = next((c["model"] for c in facts["calls"] if isinstance(c.get("model"), str)), None)
        known = [Agent(name="assistant", model=model)] if any(s.agent == "assistant" for s in timeline.steps) else []
        metadata: dict[str, Any] = {"cassette_version": data.get("version") if isinstance(data, dict) else None, "llm_calls": facts["calls"]}
        if other:
            metadata["other_interactions"] = other
        return assemble_trace(
            timeline.steps, source=self.source(raw, variant="vcr_cassette"), timeline=timeline, known_agents=known,
            status="error" if facts["errors"] else "ok", error=facts["errors"][-1] if facts["errors"] else None,
            metadata=metadata, warnings=dict.fromkeys(notes),
        )

    def _one(self, data: Any, raw: RawInput, record: int | None) -> Trace:
        if record is None and is_cassette_of(data, RESPONSES_PATH):
            return self._cassette(data, raw)
        request: dict[str, Any] = {}
        response: dict[str, Any] | None = None
        if isinstance(data, dict) and set(data) >= {"request", "response"}:
            request, response = dict(data["request"] or {}), data["response"]
        elif is_response(data):
            response = data
        elif is_request(data):
            request = dict(data)
        elif isinstance(data, list):
            request = {"input": data}
        else:
            raise raw.fail("openai_responses needs an item list, a request body or a response object", record=record)
        items = request.pop("input", [])
        msgs: list[Msg] = []
        instructions = request.pop("instructions", None) or (response or {}).get("instructions")
        if isinstance(instructions, str) and instructions.strip():
            msgs.append(Msg(role="system", text=instructions))
        if isinstance(items, str):
            msgs.append(Msg(role="user", text=items))
        else:
            msgs.extend(from_responses(items))
        timeline = Timeline(assistant_kind="message")
        for position, msg in enumerate(msgs):
            timeline.add(msg, source_ref=f"input[{position}]")
        metadata: dict[str, Any] = {}
        if request:
            metadata["request"] = request
        usage = None
        model = request.get("model")
        if response is not None:
            for position, msg in enumerate(from_responses(response.get("output") or [])):
                timeline.add(msg, kind="llm" if msg.role == "assistant" else None, model=response.get("model"), source_ref=f"output[{position}]")
            usage = usage_from(response.get("usage"))
            model = response.get("model") or model
            metadata["response"] = {k: v for k, v in response.items() if k not in ("output", "instructions")}
        if not timeline.steps:
            raise raw.fail("the Responses items hold no messages with content", record=record)
        status = "unknown"
        if response is not None:
            status = "error" if response.get("error") or response.get("status") == "failed" else "ok"
        known = [Agent(name="assistant", model=model if isinstance(model, str) else None)] if any(s.agent == "assistant" for s in timeline.steps) else []
        return assemble_trace(
            timeline.steps,
            source=self.source(raw, record),
            timeline=timeline,
            known_agents=known,
            usage=usage,
            derive_usage=False,
            trace_id=str((response or {}).get("id") or ""),
            status=status,
            error=str((response or {}).get("error")) if (response or {}).get("error") else None,
            metadata=metadata,
        )


register(OpenAIResponses())
