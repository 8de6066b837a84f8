"""Streamed calls in cassettes read like the same calls recorded unstreamed, in every dialect and body encoding.

Each dialect's conversation is one model call that answers with text and a tool call, then one
that gives the final answer. The streamed recordings are written the way the APIs send them (the
shapes seen in public cassettes): chat chunks with tool-call arguments split over many chunks by
``index``; Responses events with ``output_text`` and ``function_call_arguments`` deltas; Anthropic
``content_block_*`` events with ``input_json_delta`` pieces.
"""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from mast.normalize import load_trace
from mast.normalize._streams import assemble_stream, sse_events
from mast.trace import Trace

TASK = "What is the weather in Paris? Use the tool."
ARGS = '{"city": "Paris", "unit": "celsius"}'
FINAL = "It is 18 degrees and sunny in Paris."


def _sse(events: list[dict[str, Any]], *, named: bool) -> str:
    """Events as an SSE body; ``named`` adds the ``event:`` line Responses and Anthropic send."""
    return "".join((f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}\n\n" for e in events)


def _pieces(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


# --- OpenAI chat completions --------------------------------------------------------------------

CHAT_URI = "https://api.openai.com/v1/chat/completions"
CHAT_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def _chat_requests() -> list[dict[str, Any]]:
    user = {"role": "user", "content": TASK}
    call = {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ARGS}}
        ],
    }
    result = {"role": "tool", "tool_call_id": "call_1", "content": "18C, sunny"}
    base = {"model": "gpt-4o", "tools": CHAT_TOOLS}
    return [{**base, "messages": [user]}, {**base, "messages": [user, call, result]}]


def _chat_replies() -> list[dict[str, Any]]:
    first = {
        "role": "assistant",
        "content": "Checking.",
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": ARGS}}
        ],
    }
    return [
        {
            "id": "c1",
            "object": "chat.completion",
            "model": "gpt-4o",
            "choices": [{"index": 0, "message": first, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
        {
            "id": "c2",
            "object": "chat.completion",
            "model": "gpt-4o",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": FINAL}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
        },
    ]


def _chat_streams() -> list[str]:
    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        return {
            "id": "c",
            "object": "chat.completion.chunk",
            "model": "gpt-4o",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }

    first = [
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Check"}),
        chunk({"content": "ing."}),
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ]
            }
        ),
    ]
    first += [
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}) for piece in _pieces(ARGS)
    ]
    first += [
        chunk({}, "tool_calls"),
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "model": "gpt-4o",
            "choices": [],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
    ]
    second = [chunk({"role": "assistant"})] + [chunk({"content": piece}) for piece in _pieces(FINAL)]
    second += [
        chunk({}, "stop"),
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "model": "gpt-4o",
            "choices": [],
            "usage": {"prompt_tokens": 20, "completion_tokens": 9, "total_tokens": 29},
        },
    ]
    return [_sse(first, named=False) + "data: [DONE]\n\n", _sse(second, named=False) + "data: [DONE]\n\n"]


# --- OpenAI Responses ---------------------------------------------------------------------------

RESPONSES_URI = "https://api.openai.com/v1/responses"


def _responses_requests() -> list[dict[str, Any]]:
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": ARGS,
    }
    said = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]}
    result = {"type": "function_call_output", "call_id": "call_1", "output": "18C, sunny"}
    base = {"model": "gpt-4.1", "instructions": "You are a weather helper."}
    return [
        {**base, "input": TASK},
        {**base, "input": [{"role": "user", "content": TASK}, said, call, result]},
    ]


def _responses_outputs() -> list[list[dict[str, Any]]]:
    said = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Checking.", "annotations": []}],
    }
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "get_weather",
        "arguments": ARGS,
        "status": "completed",
    }
    answer = {
        "type": "message",
        "id": "msg_2",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": FINAL, "annotations": []}],
    }
    return [[said, call], [answer]]


def _responses_replies() -> list[dict[str, Any]]:
    return [
        {
            "id": f"resp_{n}",
            "object": "response",
            "model": "gpt-4.1",
            "status": "completed",
            "output": output,
            "usage": {"input_tokens": 10 * n, "output_tokens": 5, "total_tokens": 10 * n + 5},
        }
        for n, output in enumerate(_responses_outputs(), start=1)
    ]


def _responses_streams(*, with_completed_output: bool) -> list[str]:
    """Responses streams; without ``with_completed_output`` the last event carries no output, so the deltas must be joined."""
    bodies = []
    for reply in _responses_replies():
        shell = {k: v for k, v in reply.items() if k != "output"} | {"status": "in_progress", "output": []}
        events: list[dict[str, Any]] = [{"type": "response.created", "response": shell}]
        for position, item in enumerate(reply["output"]):
            if item["type"] == "message":
                events.append(
                    {
                        "type": "response.output_item.added",
                        "output_index": position,
                        "item": {**item, "content": [], "status": "in_progress"},
                    }
                )
                events.append(
                    {
                        "type": "response.content_part.added",
                        "output_index": position,
                        "content_index": 0,
                        "part": {"type": "output_text", "text": ""},
                    }
                )
                text = item["content"][0]["text"]
                events += [
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": position,
                        "content_index": 0,
                        "delta": p,
                    }
                    for p in _pieces(text)
                ]
                events.append(
                    {
                        "type": "response.output_text.done",
                        "item_id": item["id"],
                        "output_index": position,
                        "content_index": 0,
                        "text": text,
                    }
                )
            else:
                events.append(
                    {
                        "type": "response.output_item.added",
                        "output_index": position,
                        "item": {**item, "arguments": "", "status": "in_progress"},
                    }
                )
                events += [
                    {
                        "type": "response.function_call_arguments.delta",
                        "item_id": item["id"],
                        "output_index": position,
                        "delta": p,
                    }
                    for p in _pieces(item["arguments"])
                ]
            if with_completed_output:
                events.append({"type": "response.output_item.done", "output_index": position, "item": item})
        final = reply if with_completed_output else {k: v for k, v in reply.items() if k != "output"}
        events.append({"type": "response.completed", "response": final})
        for number, event in enumerate(events):
            event["sequence_number"] = number
        bodies.append(_sse(events, named=True))
    return bodies


# --- Anthropic Messages -------------------------------------------------------------------------

ANTHROPIC_URI = "https://api.anthropic.com/v1/messages"


def _anthropic_requests() -> list[dict[str, Any]]:
    user = {"role": "user", "content": TASK}
    call = {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": json.loads(ARGS)},
        ],
    }
    result = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C, sunny"}],
    }
    base = {
        "model": "claude-sonnet-4",
        "max_tokens": 1024,
        "system": "You are a weather helper.",
        "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
    }
    return [{**base, "messages": [user]}, {**base, "messages": [user, call, result]}]


def _anthropic_replies() -> list[dict[str, Any]]:
    first = [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": json.loads(ARGS)},
    ]
    return [
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4",
            "content": first,
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
        {
            "id": "msg_2",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4",
            "content": [{"type": "text", "text": FINAL}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 20, "output_tokens": 9},
        },
    ]


def _anthropic_streams(*, named: bool) -> list[str]:
    bodies = []
    for reply in _anthropic_replies():
        start = {k: v for k, v in reply.items() if k not in ("content", "stop_reason")} | {
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": reply["usage"]["input_tokens"], "output_tokens": 1},
        }
        events: list[dict[str, Any]] = [{"type": "message_start", "message": start}, {"type": "ping"}]
        for index, block in enumerate(reply["content"]):
            if block["type"] == "text":
                events.append(
                    {
                        "type": "content_block_start",
                        "index": index,
                        "content_block": {"type": "text", "text": ""},
                    }
                )
                events += [
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": p},
                    }
                    for p in _pieces(block["text"])
                ]
            else:
                events.append(
                    {"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}}
                )
                events += [
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "input_json_delta", "partial_json": p},
                    }
                    for p in _pieces(ARGS)
                ]
            events.append({"type": "content_block_stop", "index": index})
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": reply["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": reply["usage"]["output_tokens"]},
            }
        )
        events.append({"type": "message_stop"})
        bodies.append(_sse(events, named=named))
    return bodies


# --- cassettes ------------------------------------------------------------------------------------


def _encode(text: str, how: str) -> dict[str, Any]:
    """A recorded response part holding ``text`` the way one recorder or another writes it."""
    if how == "plain":
        return {"body": {"string": text}}
    if how == "gzip":  # YAML !!binary, with the header that says so
        return {"headers": {"Content-Encoding": ["gzip"]}, "body": {"string": gzip.compress(text.encode())}}
    if how == "base64":
        return {"body": {"encoding": "utf-8", "base64_string": base64.b64encode(text.encode()).decode()}}
    if how == "list":  # the body kept as the chunks it arrived in
        return {"body": text.splitlines(keepends=True)}
    raise AssertionError(how)


def _cassette(
    tmp_path: Path, name: str, uri: str, requests: list[dict[str, Any]], bodies: list[str], how: str
) -> Path:
    interactions = [
        {
            "request": {"method": "POST", "uri": uri, "body": json.dumps(request)},
            "response": {"status": {"code": 200, "message": "OK"}, **_encode(body, how)},
        }
        for request, body in zip(requests, bodies, strict=True)
    ]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"interactions": interactions, "version": 1}), encoding="utf-8")
    return path


def _skeleton(trace: Trace) -> list[tuple[Any, ...]]:
    return [
        (s.kind, s.role, s.agent, s.content, [(c.id, c.name, c.arguments) for c in s.tool_calls])
        for s in trace.steps
    ]


Dialect = tuple[
    str, str, Callable[[], list[dict[str, Any]]], Callable[[], list[dict[str, Any]]], Callable[[], list[str]]
]
DIALECTS: dict[str, Dialect] = {
    "chat": ("openai_chat", CHAT_URI, _chat_requests, _chat_replies, _chat_streams),
    "responses": (
        "openai_responses",
        RESPONSES_URI,
        _responses_requests,
        _responses_replies,
        lambda: _responses_streams(with_completed_output=True),
    ),
    "responses_deltas_only": (
        "openai_responses",
        RESPONSES_URI,
        _responses_requests,
        _responses_replies,
        lambda: _responses_streams(with_completed_output=False),
    ),
    "anthropic": (
        "anthropic_messages",
        ANTHROPIC_URI,
        _anthropic_requests,
        _anthropic_replies,
        lambda: _anthropic_streams(named=True),
    ),
    "anthropic_data_only": (
        "anthropic_messages",
        ANTHROPIC_URI,
        _anthropic_requests,
        _anthropic_replies,
        lambda: _anthropic_streams(named=False),
    ),
}


@pytest.mark.parametrize("how", ["plain", "gzip", "base64", "list"])
@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_a_streamed_cassette_reads_like_the_unstreamed_one(tmp_path: Path, dialect: str, how: str) -> None:
    fmt, uri, requests, replies, streams = DIALECTS[dialect]
    unstreamed = load_trace(
        _cassette(tmp_path, "plain", uri, requests(), [json.dumps(r) for r in replies()], "plain")
    )
    streamed = load_trace(_cassette(tmp_path, "streamed", uri, requests(), streams(), how))
    assert unstreamed.source.format == streamed.source.format == fmt
    assert _skeleton(streamed) == _skeleton(unstreamed)
    assert streamed.task == unstreamed.task and streamed.task is not None and TASK in streamed.task
    assert streamed.final_output == unstreamed.final_output == FINAL
    calls = [(c.name, c.arguments) for s in streamed.steps for c in s.tool_calls]
    assert calls == [("get_weather", {"city": "Paris", "unit": "celsius"})]
    assert streamed.status == "ok" and not any("no reply" in (s.content or "") for s in streamed.steps)
    assert streamed.usage is not None and unstreamed.usage is not None
    assert streamed.usage == unstreamed.usage and streamed.usage.output_tokens


def test_chat_tool_calls_are_joined_by_index_when_two_calls_interleave() -> None:
    def chunk(calls: list[dict[str, Any]]) -> str:
        return (
            "data: "
            + json.dumps(
                {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"tool_calls": calls}}]}
            )
            + "\n\n"
        )

    body = (
        chunk([{"index": 0, "id": "a", "function": {"name": "f", "arguments": '{"x":'}}])
        + chunk([{"index": 1, "id": "b", "function": {"name": "g", "arguments": '{"y":'}}])
        + chunk([{"index": 0, "function": {"arguments": " 1}"}}])
        + chunk([{"index": 1, "function": {"arguments": " 2}"}}])
    )
    joined = assemble_stream(body)
    assert joined is not None
    calls = joined["choices"][0]["message"]["tool_calls"]
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
        ("a", "f", '{"x": 1}'),
        ("b", "g", '{"y": 2}'),
    ]


def test_events_run_together_without_blank_lines_are_still_read() -> None:
    body = 'event: message_start\ndata: {"type": "message_start", "message": {"role": "assistant"}}\nevent: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}\n'
    assert [e["type"] for _, e in sse_events(body)] == ["message_start", "content_block_delta"]
    joined = assemble_stream(body)
    assert joined is not None and joined["content"] == [{"type": "text", "text": "hi"}]


def test_a_body_that_is_no_known_stream_is_not_assembled() -> None:
    assert assemble_stream('data: {"hello": 1}\n\ndata: [DONE]\n\n') is None
