"""Inspect AI eval logs: ``.eval`` (a zip of JSON) and ``.json``, one trace per sample and epoch.

Inspect (UK AISI's evaluation framework) writes every sample of a run with its messages, tool calls,
events and scores. A ``.eval`` log is a zip holding ``header.json`` (the eval: task, model, config;
the run's status and results) and ``samples/<id>_epoch_<n>.json`` (one per sample and epoch); a run
still going, or killed, has ``_journal/start.json`` in place of the header. A ``.json`` log is one
object with the same header fields and ``samples: [...]``. Both are read here without
``inspect_ai``: the zip with the standard library, its members compressed with deflate or, as
Inspect writes them since 2025, Zstandard (method 93, read with ``zstandard``).

Each sample becomes one :class:`~mast.trace.Trace`:

* the sample's ``input`` is the task (its user messages, when the input is a message list);
* its ``messages`` are the steps: system, user and assistant messages (reasoning blocks as
  ``<thinking>``), tool calls on the assistant step, tool results (a tool error marks the result);
  the model and token usage of each assistant step come from the ``model`` event that produced it;
* its ``scores`` are the outcome: ``metadata["inspect"]["scores"]``, and the status: ``error`` when
  the sample errored or hit a limit, else what the first score says (``C``/``I``, 1/0, true/false);
* the log's task, model, ids and the sample's id, epoch, target and metadata go to
  ``metadata["inspect"]``.

Large strings Inspect stored once as ``attachment://<hash>`` are put back from the sample's
``attachments``. The same reader turns a running sample's messages into a trace for
:mod:`mast.integrations.inspect` (the scorer), so the judge reads a sample the same way live and
from its log.
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, Literal, cast

import orjson

from mast.caps import MAX_EXPANDED_BYTES_PER_FILE, CapExceeded, charge
from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict, parse_time, text_of, tool_call
from mast.normalize._envelope import status_word
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Agent, SourceInfo, Step, ToolResult, Trace, Usage

ZIP_MAGIC = b"PK\x03\x04"
ZIP_ZSTANDARD = 93
"""Compression method number of Zstandard in zip files (APPNOTE 4.4.5); Inspect writes it."""
MAX_MEMBER_BYTES = MAX_EXPANDED_BYTES_PER_FILE
"""A member larger than this (uncompressed, as stated or as read) is reported, not read."""
_SAMPLE_MEMBER = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")
_ATTACHMENT = "attachment://"
_HEADER_KEYS = ("eval", "plan")
"""Keys every Inspect log header holds (``version`` and ``status`` too)."""

Status = Literal["ok", "error", "unknown"]


# -- reading the zip without inspect_ai ---------------------------------------------------------


_PIECE = 2**20
"""Bytes read from a member's stream at a time, each charged to the file's budget before the next."""


def _read_capped(stream: IO[bytes], name: str) -> bytes:
    """All of ``stream`` (a member being decompressed), charged piece by piece to the file's budget.

    The sizes a zip states are not trusted: a Zstandard member that declares size 0 is read as a
    stream, and stops at :data:`MAX_MEMBER_BYTES` or the file's budget, whichever comes first.
    """
    out = bytearray()
    while piece := stream.read(_PIECE):
        charge(len(piece), f"{name} in the .eval zip")
        out += piece
        if len(out) > MAX_MEMBER_BYTES:
            raise CapExceeded("MAX_EXPANDED_BYTES_PER_FILE", MAX_MEMBER_BYTES, f"{name} in the .eval zip")
    return bytes(out)


def _zstd_stream(data: bytes) -> IO[bytes]:
    """A reader of Zstandard ``data``; ``zstandard`` (a mast dependency) or Python 3.14's ``compression.zstd``."""
    try:
        import zstandard
    except ImportError:  # pragma: no cover - zstandard is a dependency; 3.14 ships its own
        try:
            from compression import zstd  # type: ignore[import-not-found]
        except ImportError as exc:
            raise TraceFormatError("this .eval log is Zstandard-compressed: pip install zstandard") from exc
        return cast("IO[bytes]", zstd.ZstdFile(io.BytesIO(data)))
    # Frames written by a stream compressor may not state their size, and a hostile one may state a
    # false one: always read as a stream.
    return cast("IO[bytes]", zstandard.ZstdDecompressor().stream_reader(data))


class EvalZip:
    """The members of a ``.eval`` zip, read one at a time (deflate with :mod:`zipfile`, Zstandard raw).

    :mod:`zipfile` reads the zip's directory and its deflated members; it cannot decompress
    Zstandard (method 93) before Python 3.14, so such a member's bytes are read from its local
    header and decompressed with ``zstandard``. (The ``zipfile-zstd`` package Inspect uses patches
    :mod:`zipfile` for the whole process, which a library must not do.)
    """

    def __init__(self, path: Path, opener: Callable[[], IO[bytes]] | None = None) -> None:
        self.path = path
        # The file's bytes come from ``opener`` (the input's pinned descriptor), never its name again.
        self._open: Callable[[], IO[bytes]] = opener or (lambda: path.open("rb"))
        self._fh = self._open()
        try:
            self.zip = zipfile.ZipFile(self._fh)
        except (zipfile.BadZipFile, OSError) as exc:
            self._fh.close()
            raise TraceFormatError(f"not a readable .eval zip ({exc})", path=str(path)) from exc
        self.names = [info.filename for info in self.zip.infolist()]

    def __enter__(self) -> EvalZip:
        return self

    def __exit__(self, *exc: object) -> None:
        self.zip.close()
        self._fh.close()

    def read(self, name: str) -> bytes:
        """The uncompressed bytes of member ``name``.

        Raises:
            TraceFormatError: a member that is too large, or whose bytes do not decompress (a damaged
                zip): that member only, so the log's other samples are still read.
        """
        try:
            return self._read(name)
        except TraceFormatError:
            raise
        except CapExceeded as exc:
            raise TraceFormatError(f"not read: {exc}", path=str(self.path)) from exc
        except Exception as exc:  # noqa: BLE001 - zlib, zipfile, zstandard and I/O errors of one damaged member
            raise TraceFormatError(
                f"{name} in the .eval zip does not decompress ({type(exc).__name__}: {exc})",
                path=str(self.path),
            ) from exc

    def _read(self, name: str) -> bytes:
        info = self.zip.getinfo(name)
        if info.file_size > MAX_MEMBER_BYTES:
            raise TraceFormatError(
                f"{name} is {info.file_size // 2**20} MiB uncompressed, too large to read",
                path=str(self.path),
            )
        if info.compress_type != ZIP_ZSTANDARD:
            with self.zip.open(info) as member:
                return _read_capped(member, name)
        with self._open() as fh:
            fh.seek(info.header_offset)
            local = fh.read(30)
            if len(local) < 30 or local[:4] != ZIP_MAGIC:
                raise TraceFormatError(f"{name}: broken local header in the zip", path=str(self.path))
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            fh.seek(info.header_offset + 30 + name_len + extra_len)
            data = fh.read(info.compress_size)
        with _zstd_stream(data) as stream:
            return _read_capped(stream, name)

    def json(self, name: str) -> Any:
        """Member ``name`` parsed as JSON."""
        data = self.read(name)
        try:
            return orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            try:  # Inspect writes an unscored sample's value as NaN, which only the stdlib parser reads
                import json

                return json.loads(data)
            except ValueError:
                pass
            raise TraceFormatError(
                f"{name} in the .eval zip is not valid JSON ({exc})", path=str(self.path)
            ) from exc

    def sample_names(self) -> list[str]:
        """``samples/*.json`` members, in the order of ``summaries.json`` when present, else by name."""
        members = [n for n in self.names if _SAMPLE_MEMBER.match(n)]
        order: dict[str, int] = {}
        if "summaries.json" in self.names:
            try:
                summaries = self.json("summaries.json")
            except TraceFormatError:
                summaries = None
            for position, item in enumerate(summaries if isinstance(summaries, list) else []):
                if isinstance(item, dict):
                    order.setdefault(f"samples/{item.get('id')}_epoch_{item.get('epoch')}.json", position)
        return sorted(members, key=lambda n: (order.get(n, len(order)), _natural(n)))


def _natural(name: str) -> tuple[Any, ...]:
    match = _SAMPLE_MEMBER.match(name)
    if not match:
        return (name,)
    sample, epoch = match.group(1), int(match.group(2))
    return (0, int(sample), "", epoch) if sample.isdigit() else (1, 0, sample, epoch)


# -- one sample -> one trace --------------------------------------------------------------------


def _restore(value: Any, attachments: Mapping[str, Any]) -> Any:
    """``value`` with every ``attachment://<hash>`` string replaced by the attachment's text.

    Each text put back is charged to the file's budget before it is placed, so an attachment
    referenced 20,000 times is refused at the budget instead of expanding first.

    Raises:
        CapExceeded: the texts put back pass the file's budget.
    """
    if not attachments:
        return value
    if isinstance(value, str):
        if value.startswith(_ATTACHMENT):
            found = attachments.get(value[len(_ATTACHMENT) :])
            if not isinstance(found, str):
                return value
            charge(len(found), "attachments put back")
            return found
        return value
    if isinstance(value, list):
        return [_restore(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: _restore(v, attachments) for k, v in value.items()}
    return value


def content_text(content: Any) -> str:
    """Readable text of an Inspect message's content: a string or a list of content blocks.

    Text blocks are joined; reasoning blocks become ``<thinking>...</thinking>`` (a redacted one
    says so); images, audio, video and documents show as ``[image]`` and the like; a tool use or
    data block shows its JSON.
    """
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return text_of(content)
    parts: list[str] = []
    for block in content:
        if not isinstance(block, dict):
            parts.append(text_of(block))
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text") or ""))
        elif kind == "reasoning":
            thought = block.get("summary") if block.get("redacted") else block.get("reasoning")
            parts.append(f"<thinking>{thought or '[redacted reasoning]'}</thinking>")
        elif kind in ("image", "audio", "video", "document"):
            parts.append(f"[{kind}]")
        else:
            parts.append(text_of(block))
    return "\n".join(p for p in parts if p)


def _model_calls(events: Any) -> dict[str, dict[str, Any]]:
    """Assistant message id -> the ``model`` event that produced it (model, usage, time)."""
    calls: dict[str, dict[str, Any]] = {}
    for event in events if isinstance(events, list) else []:
        if not isinstance(event, dict) or event.get("event") != "model":
            continue
        output = event.get("output")
        choices = output.get("choices") if isinstance(output, dict) else None
        for choice in choices if isinstance(choices, list) else []:
            message = choice.get("message") if isinstance(choice, dict) else None
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                calls[message["id"]] = event
    return calls


def _usage(data: Any) -> Usage | None:
    if not isinstance(data, dict):
        return None

    def number(key: str) -> int | None:
        value = data.get(key)
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    cost = data.get("total_cost")
    usage = Usage(
        input_tokens=number("input_tokens"),
        output_tokens=number("output_tokens"),
        total_tokens=number("total_tokens"),
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
    )
    return usage if usage != Usage() else None


def _message_step(message: dict[str, Any], calls: Mapping[str, dict[str, Any]], position: int) -> Step:
    role = message.get("role")
    text = content_text(message.get("content"))
    ref = f"messages/{position}"
    kept = {k: message[k] for k in ("source", "metadata") if message.get(k) not in (None, {}, "")}
    if role == "tool":
        error = message.get("error")
        reason = (
            text_of(error.get("message")) if isinstance(error, dict) else (text_of(error) if error else None)
        )
        name = message.get("function") if isinstance(message.get("function"), str) else None
        result = ToolResult(
            call_id=message.get("tool_call_id"),
            name=name,
            output=text or (reason or ""),
            is_error=bool(error),
        )
        # The error is the result's text when the tool returned none: said once, on the result.
        return Step(
            index=0,
            kind="tool_result",
            id=message.get("id"),
            agent="tool",
            role="tool",
            content="",
            tool_results=[result],
            error=reason if reason and reason != result.output else None,
            source_ref=ref,
            attributes={**kept, **({"tool_error": error} if error else {})},
        )
    if role == "assistant":
        call_event = calls.get(str(message.get("id")), {})
        output = as_dict(call_event.get("output"))
        tool_calls = [
            tool_call(str(c.get("function") or "?"), c.get("arguments"), c.get("id"))
            for c in message.get("tool_calls") or []
            if isinstance(c, dict)
        ]
        return Step(
            index=0,
            kind="message",
            id=message.get("id"),
            agent="assistant",
            role="assistant",
            content=text,
            tool_calls=tool_calls,
            model=message.get("model") or call_event.get("model"),
            usage=_usage(output.get("usage")),
            started_at=parse_time(call_event.get("timestamp")),
            ended_at=parse_time(call_event.get("completed")),
            source_ref=ref,
            attributes=kept,
        )
    if role in ("system", "user"):
        kind = "system" if role == "system" else "message"
        return Step(
            index=0,
            kind=kind,
            id=message.get("id"),
            agent=str(role),
            role=role,
            content=text,
            source_ref=ref,
            attributes=kept,
        )
    return Step(
        index=0,
        kind="message",
        id=message.get("id"),
        agent=str(role or "?"),
        content=text,
        source_ref=ref,
        attributes={**kept, "role": role},
    )


def _input_text(value: Any) -> str | None:
    """The sample's input as the task: its text, or the text of its user messages."""
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, list):
        users = [
            content_text(m.get("content")) for m in value if isinstance(m, dict) and m.get("role") == "user"
        ]
        return "\n\n".join(u for u in users if u.strip()) or None
    return None


def _score_status(scores: Any) -> Status:
    """How the first score judged the sample: ``C``/``I`` (Inspect's CORRECT/INCORRECT), 1/0, true/false."""
    if not isinstance(scores, dict):
        return "unknown"
    for score in scores.values():
        value = score.get("value") if isinstance(score, dict) else None
        if value in ("C", "I"):
            return "ok" if value == "C" else "error"
        found = status_word(value) if isinstance(value, bool | int | float) else None
        return found or "unknown"
    return "unknown"


def sample_trace(
    sample: Mapping[str, Any],
    *,
    eval_info: Mapping[str, Any] | None = None,
    source: SourceInfo,
    log_status: str | None = None,
) -> Trace:
    """One Inspect sample (a log's sample JSON, or a running sample's fields) as a :class:`Trace`.

    Args:
        sample: ``{id, epoch, input, messages, output, scores, metadata, events, error, limit, ...}``
            as Inspect writes a sample; only ``messages`` is needed.
        eval_info: the log's ``eval`` object (task, model, ids), when known.
        source: where the sample was read.
        log_status: the log's ``status`` (``success``, ``error``, ``cancelled``, ``started``).
    """
    attachments = as_dict(sample.get("attachments"))
    messages = _restore(sample.get("messages"), attachments)
    if not isinstance(messages, list):
        raise TraceFormatError("Inspect sample holds no message list", path=source.path, record=source.record)
    calls = _model_calls(_restore(sample.get("events"), attachments))
    steps = [_message_step(m, calls, n) for n, m in enumerate(messages) if isinstance(m, dict)]
    info = dict(eval_info or {})
    warnings: list[str] = []
    if len(steps) < len(messages):
        warnings.append(f"{len(messages) - len(steps)} message(s) that are not objects were skipped")
    status: Status = "unknown"
    error = None
    sample_error = sample.get("error")
    limit = sample.get("limit")
    if isinstance(sample_error, dict) and sample_error.get("message"):
        status, error = "error", text_of(sample_error.get("message"))
    elif isinstance(limit, dict) and limit.get("type"):
        status, error = "error", f"{limit.get('type')} limit reached ({limit.get('limit')})"
    else:
        status = _score_status(sample.get("scores"))
    model_usage = sample.get("model_usage")
    usage = None
    if isinstance(model_usage, dict) and model_usage:
        for item in model_usage.values():
            part = _usage(item)
            if part is not None:
                usage = part if usage is None else usage + part
    output = as_dict(sample.get("output"))
    completion = output.get("completion")
    sample_id, epoch = sample.get("id"), sample.get("epoch")
    task_name = info.get("task")
    run = info.get("eval_id") or info.get("run_id") or info.get("task_id")
    trace_id = "/".join(str(p) for p in (run, sample_id) if p not in (None, "")) or ""
    if trace_id and epoch is not None:
        trace_id += f"#{epoch}"
    model = info.get("model") or output.get("model")
    inspect_meta = {
        "task": task_name,
        "task_id": info.get("task_id"),
        "eval_id": info.get("eval_id"),
        "run_id": info.get("run_id"),
        "model": model,
        "created": info.get("created"),
        "log_status": log_status,
        "sample_id": sample_id,
        "epoch": epoch,
        "target": sample.get("target"),
        "scores": sample.get("scores"),
        "metadata": sample.get("metadata"),
        "model_usage": model_usage,
        "total_time": sample.get("total_time"),
        "working_time": sample.get("working_time"),
        "limit": limit,
        "error": sample_error,
        "dataset": info.get("dataset"),
    }
    return assemble_trace(
        steps,
        source=source,
        known_agents=[Agent(name="assistant", model=model if isinstance(model, str) else None)],
        task=_input_text(_restore(sample.get("input"), attachments)),
        final_output=completion.strip() if isinstance(completion, str) and completion.strip() else None,
        usage=usage,
        warnings=warnings,
        trace_id=trace_id,
        framework="inspect_ai",
        status=status,
        error=error,
        started_at=parse_time(sample.get("started_at")),
        ended_at=parse_time(sample.get("completed_at")),
        metadata={"inspect": {k: v for k, v in inspect_meta.items() if v not in (None, {}, [])}},
    )


# -- the format -----------------------------------------------------------------------------------


def _is_log_header(data: Any) -> bool:
    return (
        isinstance(data, dict)
        and all(isinstance(data.get(k), dict) for k in _HEADER_KEYS)
        and "version" in data
    )


class InspectLog(TraceFormat):
    """Inspect AI eval logs (``.eval`` zip or ``.json``): one trace per sample and epoch."""

    name = "inspect_log"
    description = (
        "Inspect AI eval logs (.eval zip or .json): one trace per sample and epoch, scores as outcome"
    )
    example = 'logs/2025-01-01T00-00-00_task_abc.eval, or {"version": 2, "status": "success", "eval": {...}, "plan": {...}, "samples": [...]}'
    priority = 85

    def detect(self, raw: RawInput) -> float:
        """1.0 for a zip named ``.eval``; 0.95 for JSON holding a log header (``version``, ``eval``, ``plan``)."""
        if raw.path is not None:
            with raw.open() as fh:
                magic = fh.read(4)
            if magic == ZIP_MAGIC:
                return 1.0 if raw.path.suffix.lower() == ".eval" else 0.0
        head = raw.head.lstrip()
        if raw.path is not None and not head.startswith("{"):
            return 0.0
        if raw.path is not None and '"eval"' not in head:
            return 0.0
        try:
            data = raw.data()
        except TraceFormatError:
            return 0.0
        return 0.95 if _is_log_header(data) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per sample and epoch; a broken sample yields its error, the others still come."""
        if raw.path is not None:
            with raw.open() as fh:
                zipped = fh.read(4) == ZIP_MAGIC
            if zipped:
                yield from self._parse_zip(raw)
                return
        data = raw.data()
        if not _is_log_header(data):
            raise raw.fail("not an Inspect eval log (no eval and plan objects)")
        samples = data.get("samples")
        if not isinstance(samples, list) or not samples:
            raise raw.fail("Inspect log holds no samples (run with log_samples=True, or read the .eval log)")
        for number, sample in enumerate(samples):
            source = SourceInfo(format=self.name, path=raw.label, record=number, variant="json")
            if not isinstance(sample, dict):
                yield raw.fail("sample is not an object", record=number)
                continue
            try:
                yield sample_trace(
                    sample, eval_info=data["eval"], source=source, log_status=data.get("status")
                )
            except TraceFormatError as exc:
                yield exc
            except CapExceeded as exc:
                yield raw.fail(f"not read: {exc}", record=number)

    def _parse_zip(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        assert raw.path is not None
        path = raw.path
        with EvalZip(path, raw.open) as log:
            header_name = "header.json" if "header.json" in log.names else "_journal/start.json"
            if header_name not in log.names:
                raise TraceFormatError(
                    "a .eval zip without header.json or _journal/start.json", path=str(path)
                )
            header = log.json(header_name)
            eval_info = header.get("eval") if isinstance(header, dict) else None
            if not isinstance(eval_info, dict):
                raise TraceFormatError(f"{header_name} holds no eval object", path=str(path))
            status = header.get("status") if header_name == "header.json" else "started"
            names = log.sample_names()
            if not names:
                raise TraceFormatError("Inspect log holds no samples", path=str(path))
            for number, name in enumerate(names):
                source = SourceInfo(format=self.name, path=str(path), record=number, variant="eval")
                try:
                    sample = log.json(name)
                    if not isinstance(sample, dict):
                        raise TraceFormatError(f"{name} is not an object", path=str(path), record=number)
                    yield sample_trace(sample, eval_info=eval_info, source=source, log_status=status)
                except TraceFormatError as exc:
                    yield exc
                except CapExceeded as exc:
                    yield TraceFormatError(f"{name}: not read: {exc}", path=str(path), record=number)


register(InspectLog())
