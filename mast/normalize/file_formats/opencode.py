"""sst/opencode sessions: the JSON ``opencode export <session>`` prints, or the message list its server returns.

An export is ``{"info": <session>, "messages": [{"info": <message>, "parts": [...]}]}``; the server's
``GET /session/:id/message`` answers the bare ``messages`` list. A session's ``info`` holds ``id``,
``title``, ``directory``, ``version`` and ``time`` (epoch milliseconds). A message's ``info`` holds
``role``, ``time.created``, and for the assistant ``modelID``, ``providerID``, ``mode`` / ``agent`` (the
opencode agent that wrote it, ``build`` or ``plan`` or a subagent: the step's agent),
``tokens`` (``input``, ``output``, ``reasoning``, ``cache``), ``cost`` and an ``error`` when the call
failed.

The CLI prints ``Exporting session: <id>`` before the JSON, on stdout: a redirected export starts with
that line, and it is skipped. Parts, in order: ``text`` and ``reasoning`` (the message's words), ``tool`` (one call and its result:
``callID``, ``tool``, ``state`` with ``status`` ``completed`` / ``error`` / ``running`` / ``pending``,
``input``, ``output`` or ``error``): a call step, then a tool step, marked as an error when the status
is ``error``. ``step-start`` / ``step-finish`` (per-call usage), ``snapshot`` and ``patch`` parts are
bookkeeping (counted in ``metadata``); ``file`` and ``agent`` parts are kept as text placeholders.

opencode's storage folder (``storage/session``, ``storage/message``, ``storage/part``: one JSON file per
record) is not read: ``opencode export`` assembles it into the JSON above.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import orjson

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict, leftover, parse_time, text_of, tool_call
from mast.normalize._messages import Msg
from mast.normalize._sniff import sniffed_json
from mast.normalize._timeline import Timeline
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Agent, ToolResult, Trace, Usage

AGENT = "opencode"
_BANNER = "Exporting session:"
"""The line ``opencode export`` prints before the JSON (on stdout, so a redirected export starts with it)."""


def _is_message(value: Any) -> bool:
    info = value.get("info") if isinstance(value, dict) else None
    return (
        isinstance(info, dict)
        and info.get("role") in ("user", "assistant")
        and isinstance(value.get("parts"), list)
    )


def _messages_of(data: Any) -> list[Any] | None:
    """The message list of an export or of a bare server answer, else ``None``."""
    if (
        isinstance(data, dict)
        and isinstance(data.get("info"), dict)
        and isinstance(data.get("messages"), list)
    ):
        messages = data["messages"]
    elif isinstance(data, list):
        messages = data
    else:
        return None
    return messages if messages and all(_is_message(m) for m in messages[:5]) else None


def _usage(info: dict[str, Any]) -> Usage | None:
    tokens = as_dict(info.get("tokens"))
    cost = info.get("cost")
    if not tokens and not isinstance(cost, int | float):
        return None
    cache = as_dict(tokens.get("cache"))
    read, reasoning = cache.get("read"), tokens.get("reasoning")
    given, output = tokens.get("input"), tokens.get("output")
    # opencode counts cache reads apart from input, and reasoning apart from output
    return Usage(
        input_tokens=given + (read if isinstance(read, int) else 0) if isinstance(given, int) else None,
        output_tokens=output + (reasoning if isinstance(reasoning, int) else 0)
        if isinstance(output, int)
        else None,
        cost_usd=float(cost) if isinstance(cost, int | float) and cost else None,
    )


class _Reader:
    def __init__(self) -> None:
        self.timeline = Timeline(default_agent=AGENT)
        self.other: Counter[str] = Counter()
        self.models: list[str] = []
        self.errors: list[str] = []
        self.agents: dict[str, str | None] = {}

    def message(self, position: int, message: dict[str, Any]) -> None:
        info = message["info"]
        role = info["role"]
        when = parse_time(as_dict(info.get("time")).get("created"))
        ref = f"/messages/{position}"
        model = info.get("modelID") if isinstance(info.get("modelID"), str) else None
        if model and model not in self.models:
            self.models.append(model)
        agent = str(
            info.get("agent") or info.get("mode") or AGENT
        )  # opencode's agent: build, plan, a subagent...
        if role == "assistant":
            self.agents.setdefault(agent, model)
        base: dict[str, Any] = {
            "attributes": leftover(info, ("id", "role", "time", "tokens", "cost", "sessionID", "parentID"))
        }
        usage = _usage(info) if role == "assistant" else None
        texts: list[str] = []
        thoughts: list[str] = []

        latest = when

        def flush(calls: list[Any], number: int, start: Any = None) -> None:
            nonlocal usage, texts, thoughts
            msg = Msg(
                role=role,
                text="\n".join(t for t in texts if t),
                reasoning="\n".join(thoughts),
                tool_calls=calls,
                model=model,
                usage=usage,
                id=str(info["id"]) if info.get("id") else None,
            )
            if not msg.empty:
                self.timeline.add(
                    msg,
                    agent=agent,
                    source_ref=f"{ref}/parts/{number}",
                    **{**base, "started_at": start or when},
                )
                usage = None  # the message's usage once, on its first step
            texts, thoughts = [], []

        for number, part in enumerate(message["parts"]):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                if not part.get("synthetic") or role == "assistant":
                    texts.append(text_of(part.get("text")))
            elif kind == "reasoning":
                thoughts.append(text_of(part.get("text")))
            elif kind == "tool":
                state = as_dict(part.get("state"))
                call_id = str(part["callID"]) if part.get("callID") else None
                call = tool_call(str(part.get("tool") or "?"), state.get("input", {}), call_id)
                flush([call], number, parse_time(as_dict(state.get("time")).get("start")))
                # hand-written exports leave status out: an output (or error) says the call ran
                status = state.get("status") or (
                    "error" if "error" in state else "completed" if "output" in state else None
                )
                if status in ("completed", "error"):
                    failed = status == "error"
                    output = text_of(state.get("error") if failed else state.get("output"))
                    result = ToolResult(call_id=call_id, output=output, is_error=failed)
                    extra = {k: v for k, v in state.items() if k in ("title", "metadata", "time") and v}
                    self.timeline.add(
                        Msg(role="tool", tool_results=[result]),
                        source_ref=f"{ref}/parts/{number}",
                        started_at=(latest := parse_time(as_dict(state.get("time")).get("end")) or latest),
                        attributes=extra,
                    )
                else:
                    self.other[f"tool call left {status or 'unfinished'}"] += 1
            elif kind == "file":
                texts.append(f"[file: {part.get('filename') or part.get('url') or part.get('mime') or '?'}]")
            elif kind in ("agent", "subtask"):
                texts.append(
                    f"[{kind}: {text_of(part.get('name') or part.get('prompt') or part.get('description'))}]"
                )
            else:
                self.other[str(kind)] += 1
        flush([], len(message["parts"]), latest)  # words after the last tool call come after its result
        error = as_dict(info.get("error"))
        if error:
            detail = (
                text_of(as_dict(error.get("data")).get("message")) or text_of(error.get("name")) or "error"
            )
            self.errors.append(detail)
            self.timeline.add_step(
                kind="error",
                agent=AGENT,
                content=detail,
                error=detail,
                started_at=when,
                source_ref=f"{ref}/info/error",
                attributes={"error": error},
            )


def _trace(data: Any, messages: list[Any], raw: RawInput, fmt: TraceFormat) -> Trace:
    reader = _Reader()
    for position, message in enumerate(messages):
        if not _is_message(message):
            raise raw.fail(
                f"message {position} is not an opencode message (needs info.role and a parts list)"
            )
        reader.message(position, message)
    if not reader.timeline.steps:
        raise raw.fail("opencode session holds no messages with text or tool calls")
    session = as_dict(data.get("info")) if isinstance(data, dict) else {}
    times = [s.started_at for s in reader.timeline.steps if s.started_at]
    metadata: dict[str, Any] = {"session": session} if session else {}
    if reader.other:
        metadata["not_rendered"] = dict(reader.other)
    if reader.models[1:]:
        metadata["models"] = reader.models
    return assemble_trace(
        reader.timeline.steps,
        source=fmt.source(raw, variant="export" if session else "messages"),
        timeline=reader.timeline,
        known_agents=[
            Agent(name=name, role="coding agent (opencode)", model=model)
            for name, model in reader.agents.items()
        ],
        trace_id=str(session.get("id") or ""),
        framework="opencode",
        status="error" if reader.errors else "unknown",
        error=reader.errors[-1] if reader.errors else None,
        started_at=min(times) if times else None,
        ended_at=max(times) if times else None,
        metadata=metadata,
    )


def _document(raw: RawInput) -> Any:
    """The parsed JSON of ``raw``, past the ``Exporting session: <id>`` line the CLI prints first; ``None`` if it is not JSON."""
    if raw.head.lstrip().startswith(_BANNER):
        try:
            _, _, rest = raw.text().lstrip().partition("\n")
            return orjson.loads(rest)
        except (TraceFormatError, orjson.JSONDecodeError):
            return None
    data = sniffed_json(raw, '"parts"')
    return data if raw.kind == "json" else None


class OpencodeFormat(TraceFormat):
    """opencode session export (``opencode export``) or its server's message list."""

    name = "opencode"
    description = "sst/opencode sessions (opencode export JSON: info + messages with parts)"
    priority = 24
    example = '{"info": {"id": "ses_...", "title": "..."}, "messages": [{"info": {"role": "user", ...}, "parts": [{"type": "text", "text": "..."}]}]}'

    def detect(self, raw: RawInput) -> float:
        """0.96 for an export (with or without the CLI's banner line), 0.9 for a bare list of ``{info, parts}`` messages."""
        data = _document(raw)
        if _messages_of(data) is None:
            return 0.0
        return 0.96 if isinstance(data, dict) else 0.9

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per session."""
        data = _document(raw)
        if data is None:
            data = raw.data()  # raises the reason the input does not parse
        messages = _messages_of(data)
        if messages is None:
            raise raw.fail(
                "not an opencode session (needs info and messages of {info, parts}, as opencode export prints)"
            )
        yield _trace(data, messages, raw, self)


register(OpencodeFormat())
