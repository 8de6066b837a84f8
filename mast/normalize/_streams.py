"""Streamed model replies (server-sent events) joined into the body the same call returns unstreamed.

A recorded call made with ``stream: true`` holds no response object, only its events. Three
dialects are assembled here, each into the shape its reader already reads:

* OpenAI chat completions: ``chat.completion.chunk`` events; text deltas concatenated, tool calls
  joined by their ``index`` (id, name and argument pieces arrive in different chunks);
* the OpenAI Responses API: ``response.*`` events; the ``response`` of ``response.completed`` (or
  ``incomplete`` / ``failed``) when it holds the output, else the output rebuilt from
  ``response.output_item.*``, ``response.output_text.delta`` and
  ``response.function_call_arguments.delta``;
* Anthropic Messages: ``message_start``, ``content_block_start/delta/stop`` (``text_delta``,
  ``thinking_delta``, ``input_json_delta``) and ``message_delta``.

:func:`assemble_stream` picks the dialect from the events themselves, so every cassette reader
(whatever the URI or body encoding) gets the same reply a non-streamed recording gives.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from mast.normalize._common import as_dict


def is_event_stream(text: Any) -> bool:
    """A server-sent-events body (``data: {...}`` lines), as streamed completions are recorded."""
    return isinstance(text, str) and text.lstrip().startswith(("data:", "event:", ":"))


def _loads(payload: str) -> Any:
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError:
        return None


def sse_events(text: str) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """The ``(event name, JSON data)`` pairs of an SSE body; data that is not a JSON object is skipped.

    Written here rather than taken from an SSE client library: those read a live HTTP response,
    while a cassette holds the whole body as one string. By the SSE rules an event's ``data:`` lines
    are joined with newlines and a blank line ends it; recorders that lost the blank lines are read
    line by line instead, since each chunk of these APIs is one line of JSON.
    """
    name: str | None = None
    data: list[str] = []

    def flush() -> Iterator[tuple[str | None, dict[str, Any]]]:
        joined = "\n".join(data).strip()
        if not joined or joined == "[DONE]":
            return
        value = _loads(joined)
        if isinstance(value, dict):
            yield name, value
            return
        for line in data:  # several events run together without the blank line between them
            one = _loads(line.strip())
            if isinstance(one, dict):
                yield name, one

    for line in text.splitlines():
        if not line.strip():
            yield from flush()
            name, data = None, []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif line.startswith("event:"):
            if data:  # a new event began without a blank line
                yield from flush()
                data = []
            name = line[6:].strip()
    yield from flush()


def chat_completion_from_stream(text: str) -> dict[str, Any] | None:
    """An OpenAI chat-completions stream joined into one ``chat.completion``; ``None`` when it holds no chunk."""
    completion: dict[str, Any] | None = None
    choices: dict[int, dict[str, Any]] = {}
    for _, chunk in sse_events(text):
        if completion is None:
            completion = {k: v for k, v in chunk.items() if k not in ("choices", "object")}
            completion["object"] = "chat.completion"
        if isinstance(chunk.get("usage"), dict):
            completion["usage"] = chunk["usage"]  # sent on the last chunk (stream_options.include_usage)
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict):
                _chat_delta(choices, choice)
    if completion is None:
        return None
    completion["choices"] = [choices[i] for i in sorted(choices)]
    return completion


def _chat_delta(choices: dict[int, dict[str, Any]], choice: dict[str, Any]) -> None:
    index = choice["index"] if isinstance(choice.get("index"), int) else 0
    joined = choices.setdefault(
        index, {"index": index, "message": {"role": "assistant", "content": None}, "finish_reason": None}
    )
    message = joined["message"]
    delta = as_dict(choice.get("delta"))
    if isinstance(delta.get("role"), str):
        message["role"] = delta["role"]
    if isinstance(delta.get("content"), str) and delta["content"]:
        message["content"] = (message["content"] or "") + delta["content"]
    for call in delta.get("tool_calls") or []:
        if not isinstance(call, dict):
            continue
        calls = message.setdefault("tool_calls", [])
        position = call["index"] if isinstance(call.get("index"), int) else len(calls)
        while len(calls) <= position:
            calls.append({"id": None, "type": "function", "function": {"name": "", "arguments": ""}})
        target = calls[position]
        if call.get("id"):
            target["id"] = call["id"]
        function = as_dict(call.get("function"))
        if isinstance(function.get("name"), str):
            target["function"]["name"] += function["name"]
        if isinstance(function.get("arguments"), str):
            target["function"]["arguments"] += function["arguments"]
    if choice.get("finish_reason"):
        joined["finish_reason"] = choice["finish_reason"]


_RESPONSES_END = ("response.completed", "response.incomplete", "response.failed", "response.done")


def responses_from_stream(text: str) -> dict[str, Any] | None:
    """A Responses-API event stream joined into one ``response`` object; ``None`` when it holds none."""
    response: dict[str, Any] | None = None
    items: dict[int, dict[str, Any]] = {}
    for name, event in sse_events(text):
        kind = str(event.get("type") or name or "")
        if isinstance(event.get("response"), dict) and kind.startswith("response."):
            final = dict(event["response"])
            if kind in _RESPONSES_END and final.get("output"):
                return final  # the server's own summary of the whole reply
            response = {**(response or {}), **{k: v for k, v in final.items() if k != "output"}}
            continue
        position = event.get("output_index")
        if not isinstance(position, int):
            continue
        if kind in ("response.output_item.added", "response.output_item.done") and isinstance(
            event.get("item"), dict
        ):
            items[position] = (
                dict(event["item"]) if kind.endswith("done") else {**event["item"], **items.get(position, {})}
            )
        elif kind == "response.output_text.delta" and isinstance(event.get("delta"), str):
            _text_part(items.setdefault(position, {"type": "message", "role": "assistant"}), event)[
                "text"
            ] += event["delta"]
        elif kind == "response.function_call_arguments.delta" and isinstance(event.get("delta"), str):
            item = items.setdefault(position, {"type": "function_call", "arguments": ""})
            item["arguments"] = str(item.get("arguments") or "") + event["delta"]
        elif kind == "response.reasoning_summary_text.delta" and isinstance(event.get("delta"), str):
            item = items.setdefault(position, {"type": "reasoning", "summary": []})
            summary = item.setdefault("summary", [])
            if not summary:
                summary.append({"type": "summary_text", "text": ""})
            summary[-1]["text"] += event["delta"]
    if response is None and not items:
        return None
    out = {"object": "response", **(response or {})}
    out["output"] = [items[i] for i in sorted(items)]
    return out


def _text_part(item: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    content = item.setdefault("content", [])
    index: int = (
        event["content_index"] if isinstance(event.get("content_index"), int) else max(len(content) - 1, 0)
    )
    while len(content) <= index:
        content.append({"type": "output_text", "text": ""})
    part: dict[str, Any] = content[index]
    part.setdefault("text", "")
    return part


def anthropic_from_stream(text: str) -> dict[str, Any] | None:
    """An Anthropic Messages event stream joined into one ``message``; ``None`` without ``message_start``."""
    message: dict[str, Any] | None = None
    blocks: dict[int, dict[str, Any]] = {}
    partial_json: dict[int, str] = {}
    for name, event in sse_events(text):
        kind = event.get("type") or name
        index = event["index"] if isinstance(event.get("index"), int) else 0
        if kind == "message_start":
            message = dict(event.get("message") or {})
        elif kind == "content_block_start":
            blocks[index] = dict(event.get("content_block") or {})
        elif kind == "content_block_delta":
            block = blocks.setdefault(index, {"type": "text", "text": ""})
            delta = as_dict(event.get("delta"))
            if delta.get("type") == "text_delta":
                block["text"] = str(block.get("text") or "") + str(delta.get("text") or "")
            elif delta.get("type") == "thinking_delta":
                block["thinking"] = str(block.get("thinking") or "") + str(delta.get("thinking") or "")
            elif delta.get("type") == "signature_delta":
                block["signature"] = str(block.get("signature") or "") + str(delta.get("signature") or "")
            elif delta.get("type") == "input_json_delta":
                partial_json[index] = partial_json.get(index, "") + str(delta.get("partial_json") or "")
        elif kind == "message_delta" and message is not None:
            message.update(event.get("delta") or {})
            if isinstance(event.get("usage"), dict):
                message["usage"] = {**(message.get("usage") or {}), **event["usage"]}
    if message is None:
        return None
    for index, raw_json in partial_json.items():
        if index in blocks and raw_json:
            parsed = _loads(raw_json)
            blocks[index]["input"] = parsed if isinstance(parsed, dict) else raw_json
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


def assemble_stream(text: str) -> dict[str, Any] | None:
    """The reply a streamed body holds, in its dialect's unstreamed shape; ``None`` when it is no known stream.

    The dialect is read from the first event that names one, not from the URI: proxies and
    compatible endpoints serve every dialect under their own paths.
    """
    for name, event in sse_events(text):
        kind = str(event.get("type") or name or "")
        if kind.startswith("response."):
            return responses_from_stream(text)
        if kind in ("message_start", "content_block_start", "content_block_delta", "ping"):
            if kind != "ping":
                return anthropic_from_stream(text)
            continue
        if "choices" in event or event.get("object") == "chat.completion.chunk":
            return chat_completion_from_stream(text)
    return None
