"""Recorded HTTP (VCR cassettes): one body reader for every encoding recorders write.

Cassettes (vcrpy, pytest-recording, VCR.py forks, Ruby VCR, betamax) store a request's or a
response's body in one of several ways, and a format that reads cassettes must take them all:

* a string: ``body: '{"model": ...}'`` (JSON text, or a server-sent-events stream);
* a mapping holding it: ``body: {string: '...'}``, with ``encoding`` beside it;
* base64: ``body: {base64_string: '...'}`` or ``{encoding: base64, string: '...'}``;
* bytes: YAML ``!!binary`` (often gzip: ``1f 8b`` first, or a ``content-encoding: gzip`` header);
* already parsed: ``parsed_body: {...}`` beside or instead of ``body`` (pydantic-ai's cassettes).

:func:`body_of` returns the parsed JSON value when the body is JSON, else its text. Gzip and
deflate are inflated up to :data:`MAX_DECOMPRESSED_BYTES`; a larger body is cut there, with a note.
A streamed reply (server-sent events) is joined by :mod:`mast.normalize._streams` into the body the
same call returns unstreamed, whatever the dialect.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from mast.caps import (
    MAX_DECOMPRESSED_BYTES,  # the most a compressed body may inflate to: a gzip bomb stops there
    decompress_prefix,
)
from mast.errors import TraceFormatError
from mast.normalize._common import as_dict, usage_from
from mast.normalize._msg_common import Msg
from mast.normalize._streams import assemble_stream, is_event_stream
from mast.normalize._timeline import Timeline

if TYPE_CHECKING:
    from mast.normalize.base import RawInput


def _header(headers: Any, name: str) -> str:
    """A header's value, whatever case and list wrapping the recorder used."""
    if not isinstance(headers, dict):
        return ""
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == name:
            if isinstance(value, list):
                value = value[0] if value else ""
            return str(value).lower()
    return ""


def inflate(blob: bytes, notes: list[str] | None = None, *, limit: int | None = None) -> bytes:
    """Gzip (every member), zlib or raw deflate bytes inflated, at most ``limit`` bytes of them.

    ``limit`` defaults to :data:`MAX_DECOMPRESSED_BYTES`. A note says when the body was cut at the
    cap, or did not inflate (then it is kept as it is).
    """
    limit = MAX_DECOMPRESSED_BYTES if limit is None else limit
    try:
        out, cut = decompress_prefix(blob, limit=limit)
    except zlib.error as exc:
        if notes is not None:
            notes.append(f"a recorded body is compressed but does not inflate ({exc}): kept as it is")
        return blob
    if cut and notes is not None:
        notes.append(
            f"a recorded body inflates to more than {limit // 2**20} MiB: cut there "
            f"(the MAX_DECOMPRESSED_BYTES cap, {limit:,} bytes)"
        )
    return out


def _text(blob: bytes) -> str:
    return blob.decode("utf-8", "replace")


def _b64(text: str) -> bytes | None:
    try:
        return base64.b64decode(text, validate=False)
    except (binascii.Error, ValueError):
        return None


def raw_body(part: Any, notes: list[str] | None = None, where: str = "body") -> Any:
    """The body of a recorded request or response (``part``) as a parsed value, text, or ``None``.

    ``where`` names the field in notes (``request.body``). A body recorded as a list of parts
    (one string, or chunks) is read as those parts joined, with a note: the run is kept.
    """
    if not isinstance(part, dict):
        return None
    if "parsed_body" in part and part["parsed_body"] is not None:
        return part["parsed_body"]
    body = part.get("body", part.get("content"))
    if isinstance(body, list) and body:
        if len(body) == 1 and isinstance(body[0], dict | str | bytes):
            body = body[0]
        elif all(isinstance(p, str) for p in body):
            body = "".join(body)
        elif all(isinstance(p, bytes) for p in body):
            body = b"".join(body)
        else:
            if notes is not None:
                notes.append(f"{where} is a list of {len(body)} mixed values, not a recorded body: dropped")
            return None
        if notes is not None:
            notes.append(f"{where} is a list, not a string or mapping: read as its parts joined")
    headers = part.get("headers")
    compressed = _header(headers, "content-encoding") in ("gzip", "deflate", "x-gzip")
    encoding = ""
    if isinstance(body, dict):
        encoding = str(body.get("encoding") or "").lower()
        if isinstance(body.get("base64_string"), str):
            body, encoding = body["base64_string"], "base64"
        elif "string" in body:
            body = body["string"]
        elif "text" in body:
            body = body["text"]
        else:
            return body or None  # a mapping without a known key: perhaps the body itself
    if isinstance(body, str) and encoding == "base64":
        decoded = _b64(body)
        if decoded is None:
            if notes is not None:
                notes.append("a recorded body marked base64 does not decode: kept as text")
            return body
        body = decoded
    if isinstance(body, bytes | bytearray):
        blob = bytes(body)
        if blob[:2] == b"\x1f\x8b" or (compressed and blob[:1] in (b"\x78", b"\x1f")):
            blob = inflate(blob, notes)
        return _text(blob)
    return body


def body_of(part: Any, notes: list[str] | None = None, where: str = "body") -> Any:
    """Like :func:`raw_body`, with a body that is JSON text parsed (text that is not JSON stays text)."""
    body = raw_body(part, notes, where)
    if isinstance(body, str):
        stripped = body.strip()
        if stripped[:1] in ("{", "["):
            try:
                return orjson.loads(stripped)
            except orjson.JSONDecodeError:
                return body
    return body


def body_text(part: Any, notes: list[str] | None = None) -> str | None:
    """The body as text: text as recorded, a parsed body as JSON text."""
    body = raw_body(part, notes)
    if body is None or isinstance(body, str):
        return body
    return orjson.dumps(body, default=str).decode()


# --- a conversation rebuilt from a cassette's model calls ---------------------------------------


@dataclass
class RecordedCall:
    """One recorded model call of a cassette: where it went, what was sent and what came back."""

    index: int
    uri: str
    request: dict[str, Any]
    response: Any
    status: int | None


def interactions(data: Any) -> list[dict[str, Any]] | None:
    """A cassette's ``interactions`` list (each with a ``request``), else ``None``."""
    items = data.get("interactions") if isinstance(data, dict) else None
    if (
        isinstance(items, list)
        and items
        and all(isinstance(i, dict) and isinstance(i.get("request"), dict) for i in items)
    ):
        return items
    return None


def recorded_calls(
    data: Any, *paths: str, notes: list[str] | None = None
) -> tuple[list[RecordedCall], list[dict[str, Any]]]:
    """The interactions whose URI contains one of ``paths`` (``/chat/completions``...), and the others (where they went)."""
    calls: list[RecordedCall] = []
    other: list[dict[str, Any]] = []
    for number, interaction in enumerate(interactions(data) or []):
        request = interaction["request"]
        uri = str(request.get("uri") or "")
        body = body_of(request, notes)
        if not any(p in uri for p in paths) or not isinstance(body, dict):
            other.append({"index": number, "method": request.get("method"), "uri": uri})
            continue
        response = as_dict(interaction.get("response"))
        status = as_dict(response.get("status"))
        code = status.get("code") if isinstance(status.get("code"), int) else None
        reply = body_of(response, notes)
        if is_event_stream(reply):
            # stream: true, recorded as server-sent events: joined into the reply an unstreamed call gets
            reply = assemble_stream(reply) or reply
        calls.append(RecordedCall(number, uri, body, reply, code))
    return calls, other


def is_cassette_of(data: Any, *paths: str) -> bool:
    """A cassette with at least one interaction to one of ``paths`` whose request body is readable."""
    items = interactions(data)
    return items is not None and any(
        any(p in str(i["request"].get("uri") or "") for p in paths)
        and isinstance(body_of(i["request"]), dict)
        for i in items
    )


def yaml_cassette_score(raw: RawInput, *paths: str) -> float | None:
    """How surely a YAML file is a cassette of calls to ``paths``; ``None`` when it is no YAML cassette.

    The chat-completions and Responses readers both ask this first; CrewAI claims its own cassettes
    with a higher score, so 0.9 here leaves those to it.
    """
    if raw.path is None or raw.path.suffix not in (".yaml", ".yml") or "interactions:" not in raw.head:
        return None
    try:
        data = raw.data()
    except TraceFormatError:
        return 0.0
    return 0.9 if is_cassette_of(data, *paths) else 0.0


def rebuild_conversation(
    calls: list[RecordedCall],
    *,
    request_msgs: Callable[[dict[str, Any]], list[Msg]],
    response_msgs: Callable[[Any], list[Msg]],
    timeline: Timeline,
) -> dict[str, Any]:
    """Every call's new input (history re-sent by later calls skipped) and its reply, in order; returns facts for metadata.

    A call whose response is missing or an error adds an ``error`` step; usage is per reply.
    """
    facts: dict[str, Any] = {"calls": [], "errors": []}
    for call in calls:
        ref = f"interactions[{call.index}]"
        timeline.add_new(request_msgs(call.request), source_ref=f"{ref}.request")
        response = call.response
        facts["calls"].append(
            {"index": call.index, "uri": call.uri, "status": call.status, "model": call.request.get("model")}
        )
        error = None
        if (
            isinstance(response, dict)
            and response.get("error")
            and not (response.get("choices") or response.get("output") or response.get("content"))
        ):
            error = str(
                response["error"].get("message") if isinstance(response["error"], dict) else response["error"]
            )
        elif not isinstance(response, dict) or (call.status is not None and call.status >= 400):
            error = f"HTTP {call.status}: no reply recorded" if call.status else "no reply recorded"
        if error:
            facts["errors"].append(error)
            timeline.add_step(
                kind="error",
                agent=timeline.default_agent,
                content=error,
                error=error,
                source_ref=f"{ref}.response",
            )
            continue
        assert isinstance(response, dict)
        usage = usage_from(response.get("usage"))
        for msg in response_msgs(response):
            extra: dict[str, Any] = {}
            if msg.role == "assistant":
                extra["kind"] = "llm"
                if isinstance(response.get("model"), str):
                    extra["model"] = response["model"]
                if usage is not None and msg.usage is None:
                    extra["usage"], usage = usage, None  # one reply's usage, on its first message
            timeline.add(msg, source_ref=f"{ref}.response", **extra)
    return facts
