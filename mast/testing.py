"""A public test seam: a fake OpenAI-compatible LLM server on 127.0.0.1.

Tests and benchmarks drive mast's real judge path (litellm, retries, parsing, cache) against
:class:`FakeLLMServer` instead of a provider. It serves ``/v1/chat/completions``, ``/v1/models`` and the batch API,
answers hundreds of concurrent connections (aiohttp on its own event loop in a background thread),
and can script answers, inject faults and report what it received.

Example:
    >>> from mast.testing import FakeLLMServer, Reply, judge_answer
    >>> with FakeLLMServer(script=[Reply(status=429, headers={"Retry-After": "0"})]) as server:
    ...     base = server.base_url            # "http://127.0.0.1:<port>/v1"
    ...     # mast.classify(trace, model="openai/fake", api_base=base, api_key="x")

Without a ``responder`` or ``script`` the server answers every judge request with a schema-valid
answer (no mode present, :func:`judge_answer`), a window request of the chunked strategy with
:func:`window_answer`, a ``mast calibrate`` proposal request with :func:`calibration_answer` (a
definition, no examples: every mode keeps a valid proposal, so ``mast calibrate`` runs end to end),
and, when the request carries ``tools``, with a tool call holding that JSON.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import re
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

try:
    from aiohttp import web
except ModuleNotFoundError as exc:  # litellm brings aiohttp today; say what to install if it stops
    raise ModuleNotFoundError("mast.testing needs aiohttp: pip install 'mast-judge[testing]'") from exc

from mast._fake_batches import FakeBatchAPI
from mast.judge.schema import DIAGNOSIS_SCHEMA_NAME, WINDOW_SCHEMA_NAME

__all__ = [
    "CALIBRATION_SCHEMA_NAME",
    "DIAGNOSIS_SCHEMA_NAME",
    "WINDOW_SCHEMA_NAME",
    "FakeLLMServer",
    "FaultPlan",
    "RecordedRequest",
    "Reply",
    "calibration_answer",
    "default_answer",
    "judge_answer",
    "quote_steps",
    "request_kind",
    "request_text",
    "window_answer",
]


FAULT_KINDS = ("429", "500", "hang", "invalid_json", "length")


@dataclass
class Reply:
    """One scripted answer of the fake server.

    ``content`` is the assistant message (a dict or list is sent as JSON text); ``body`` replaces the
    whole HTTP body (a dict is sent as JSON, a str as is). When the request carries ``tools`` and
    ``as_tool`` is not False, the content goes out as the arguments of a tool call.
    """

    status: int = 200
    """HTTP status code."""
    content: str | dict[str, Any] | list[Any] | None = None
    """Assistant message; ``None`` means the default answer for the request."""
    body: dict[str, Any] | str | None = None
    """Raw HTTP body, sent instead of a chat completion when given."""
    headers: dict[str, str] = field(default_factory=dict)
    """Extra response headers (``Retry-After``...)."""
    finish_reason: str = "stop"
    """``stop``, ``length``, ``tool_calls``..."""
    delay: float = 0.0
    """Seconds to wait before answering (on top of the server's ``latency``)."""
    hang: bool = False
    """Never answer: wait until the client gives up (or the server stops)."""
    invalid_json: bool = False
    """Send content that is not valid JSON."""
    usage: tuple[int, int] | None = None
    """``(prompt_tokens, completion_tokens)``; estimated from the text when ``None``."""
    as_tool: bool | None = None
    """Force (True) or refuse (False) a tool-call answer; ``None`` follows the request."""


@dataclass(frozen=True)
class FaultPlan:
    """Random faults injected into a share of requests, reproducibly for a given seed."""

    rate: float = 0.2
    """Share of requests that get a fault (0..1)."""
    kinds: tuple[str, ...] = FAULT_KINDS
    """Faults to draw from: ``429``, ``500``, ``hang``, ``invalid_json``, ``length``."""
    seed: int = 0
    """Seed of the draw."""
    retry_after: str = "0"
    """``Retry-After`` header sent with a 429."""

    def __post_init__(self) -> None:
        unknown = set(self.kinds) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kind(s) {sorted(unknown)}; known: {FAULT_KINDS}")

    def reply(self, kind: str, body: Mapping[str, Any]) -> Reply:
        """The faulty :class:`Reply` for one fault kind."""
        if kind == "429":
            return Reply(status=429, headers={"Retry-After": self.retry_after})
        if kind == "500":
            return Reply(status=500)
        if kind == "hang":
            return Reply(hang=True)
        if kind == "invalid_json":
            return Reply(invalid_json=True)
        return Reply(content='{"failure_modes": {"1.1": {"evidence": [', finish_reason="length")


@dataclass
class RecordedRequest:
    """A request the server received."""

    path: str
    """URL path (``/v1/chat/completions``)."""
    body: dict[str, Any]
    """Parsed JSON body (``{}`` when there was none)."""
    headers: dict[str, str]
    """Request headers."""
    received_at: float
    """``time.monotonic()`` on arrival."""
    fault: str | None = None
    """Injected fault, if any."""

    @property
    def kind(self) -> str:
        """``diagnosis``, ``window`` or ``other``: which answer the request asks for."""
        return request_kind(self.body)

    @property
    def text(self) -> str:
        """All message text of the request, joined."""
        return request_text(self.body)


Responder = Callable[[dict[str, Any]], "Reply | str | dict[str, Any] | None | Awaitable[Reply | str | dict[str, Any] | None]"]


# --- building answers ----------------------------------------------------------------------------


def _codes() -> list[str]:
    from mast.taxonomy import load_taxonomy

    return load_taxonomy().codes


def judge_answer(
    present: Iterable[str] = (),
    *,
    evidence: Mapping[str, Sequence[tuple[int, str]]] | None = None,
    confidence: float = 0.8,
    task_completed: bool | None = False,
    first_failure: Mapping[str, Any] | None = None,
    summary: str = "Scripted verdict from the fake judge.",
    codes: Sequence[str] | None = None,
    omit: Iterable[str] = (),
) -> dict[str, Any]:
    """A valid judge answer (the JSON the model sends) with the given modes present.

    Args:
        present: codes judged present; every other code is judged absent.
        evidence: code -> ``[(step, quote), ...]``.
        confidence: confidence given to every verdict.
        task_completed: the answer's ``task_completed``.
        first_failure: ``{step, agent, code, explanation}``; derived from the first present mode
            with evidence when ``None`` and some mode is present.
        summary: the answer's summary.
        codes: the taxonomy's codes (mast-v3 when ``None``).
        omit: codes left out of the answer (to test incomplete answers).
    """
    wanted = set(present)
    evidence = evidence or {}
    skip = set(omit)
    modes: dict[str, Any] = {}
    for code in codes or _codes():
        if code in skip:
            continue
        quotes = [{"step": step, "quote": quote} for step, quote in evidence.get(code, ())]
        modes[code] = {
            "evidence": quotes,
            "rationale": "present in the trace" if code in wanted else "no sign of it",
            "present": code in wanted,
            "confidence": confidence,
        }
    if first_failure is None and wanted:
        code = next(c for c in modes if c in wanted)
        steps = [step for step, _ in evidence.get(code, ())]
        first_failure = {"step": steps[0] if steps else None, "agent": None, "code": code, "explanation": "first failure"}
    return {
        "failure_modes": modes,
        "task_completed": task_completed,
        "first_failure": dict(first_failure) if first_failure else None,
        "summary": summary,
    }


def window_answer(
    findings: Sequence[Mapping[str, Any]] = (), *, summary: str = "Nothing notable in this window."
) -> dict[str, Any]:
    """A valid answer for one window of the chunked strategy.

    Each finding is ``{code, step, quote, note}``.
    """
    return {"findings": [dict(f) for f in findings], "summary": summary}


def request_text(body: Mapping[str, Any]) -> str:
    """All text of a chat request's messages, joined by blank lines."""
    parts: list[str] = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return "\n\n".join(parts)


def _schema_name(body: Mapping[str, Any]) -> str | None:
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and isinstance(fmt.get("json_schema"), dict):
        return str(fmt["json_schema"].get("name"))
    for tool in body.get("tools") or []:
        name = (tool.get("function") or {}).get("name")
        if name:
            return str(name)
    return None


CALIBRATION_SCHEMA_NAME = "mast_mode_calibration"
"""The schema ``mast calibrate`` asks its proposals in (:data:`mast.calibration._llm.PROPOSAL_SCHEMA`)."""


def request_kind(body: Mapping[str, Any]) -> str:
    """``diagnosis``, ``window``, ``calibration`` or ``other``: which answer a request asks for."""
    name = _schema_name(body)
    if name is None:
        # JSON mode: the prompt names the schema it wants.
        text = request_text(body)
        if WINDOW_SCHEMA_NAME in text:
            name = WINDOW_SCHEMA_NAME
        elif DIAGNOSIS_SCHEMA_NAME in text:
            name = DIAGNOSIS_SCHEMA_NAME
        elif CALIBRATION_SCHEMA_NAME in text:
            name = CALIBRATION_SCHEMA_NAME
    if name == WINDOW_SCHEMA_NAME:
        return "window"
    if name == DIAGNOSIS_SCHEMA_NAME:
        return "diagnosis"
    if name == CALIBRATION_SCHEMA_NAME:
        return "calibration"
    return "other"


def calibration_answer(definition: str = "The mode, as the fake server words it.") -> dict[str, Any]:
    """A valid ``mast calibrate`` proposal: a definition, no rules, no examples."""
    return {"definition": definition, "when_to_use": "", "when_not_to_use": "", "examples": []}


def default_answer(body: Mapping[str, Any]) -> dict[str, Any]:
    """What the server answers when nothing is scripted: a valid answer of the requested kind."""
    kind = request_kind(body)
    if kind == "window":
        return window_answer()
    if kind == "calibration":
        return calibration_answer()
    return judge_answer(task_completed=None)


# --- the server ----------------------------------------------------------------------------------


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


class FakeLLMServer(FakeBatchAPI):
    """An OpenAI-compatible chat-completions server on 127.0.0.1 for tests and benchmarks.

    It also serves OpenAI's files and batches endpoints (``/v1/files``, ``/v1/batches``; see
    :mod:`mast._fake_batches`): ``batch_delay`` / ``batch_hold`` say when a batch completes,
    ``batch_faults`` fails or expires items, ``batches_submitted`` counts batches created, and
    ``prompt_cache`` reports the system prompt as cached once seen.

    Args:
        responder: ``request body -> Reply | str | dict | None`` (may be async); ``None`` from it
            means the default answer. Called for every request not taken by ``script`` or a fault.
        script: replies served in order to the first requests, before the responder.
        latency: seconds added to every answer.
        faults: random faults for a share of requests.
        models: ids listed by ``/v1/models``.
        hang_limit: the longest a hanging reply waits before giving up on its own.
        port: the port to listen on; 0 (the default) takes a free one. A test that reruns a command
            against "the same server" passes the first server's port: the endpoint is part of the
            answer cache key and the resume fingerprint, so a new port is a different judge.

    Use as a context manager, or call :meth:`start` / :meth:`stop`.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        script: Iterable[Reply] = (),
        latency: float = 0.0,
        faults: FaultPlan | None = None,
        models: Sequence[str] = ("fake-judge",),
        hang_limit: float = 300.0,
        batch_delay: float = 0.0,
        batch_hold: threading.Event | None = None,
        batch_faults: Callable[[dict[str, Any]], str | None] | None = None,
        prompt_cache: bool = False,
        port: int = 0,
    ) -> None:
        self.responder = responder
        self._requested_port = port
        self.script: deque[Reply] = deque(script)
        self.latency = latency
        self.faults = faults
        self.models = list(models)
        self.hang_limit = hang_limit
        self.requests: list[RecordedRequest] = []
        """Every request received, in arrival order."""
        self.max_in_flight = 0
        """Most requests being answered at the same time."""
        self.first_request_at: float | None = None
        """``time.monotonic()`` of the first request."""
        self.last_response_at: float | None = None
        """``time.monotonic()`` when the last answer was sent."""
        self._in_flight = 0
        self._lock = threading.Lock()
        self._rng = random.Random(faults.seed if faults else 0)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None
        self._port: int | None = None
        # -- the batch API (see _FakeBatches) --
        self.batch_delay = batch_delay
        """Seconds after creation before a batch completes."""
        self.batch_hold = batch_hold
        """While given and not set, batches stay ``in_progress`` (a test releases them)."""
        self.batch_faults = batch_faults
        """``request body -> None | "failed" | "expired"``: the fate of one batch item."""
        self.prompt_cache = prompt_cache
        """Report the system prompt as cached (``prompt_tokens_details.cached_tokens``) once seen."""
        self.files: dict[str, dict[str, Any]] = {}
        """Uploaded and produced files by id: ``{"object": <file object>, "content": bytes}``."""
        self.batches: dict[str, dict[str, Any]] = {}
        """Batches by id (OpenAI batch objects)."""
        self.batch_items: list[RecordedRequest] = []
        """Every request answered inside a batch."""
        self.batch_hits: list[str] = []
        """``METHOD path`` of every files/batches call, in order."""
        self._seen_prefixes: set[str] = set()
        self._due: dict[str, float] = {}

    # -- lifecycle --

    @property
    def port(self) -> int:
        """The TCP port the server listens on."""
        if self._port is None:
            raise RuntimeError("FakeLLMServer is not started")
        return self._port

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: the ``api_base`` to give the judge."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def batches_submitted(self) -> int:
        """Batches created (``POST /v1/batches``) since the server started."""
        return len(self.batches)

    @property
    def chat_requests(self) -> list[RecordedRequest]:
        """The requests made to ``/chat/completions``."""
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    def start(self) -> FakeLLMServer:
        """Start serving in a background thread; returns self."""
        if self._thread is not None:
            return self
        ready = threading.Event()
        errors: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._serve_start())
            except BaseException as exc:  # surfaced to the caller of start()
                errors.append(exc)
                ready.set()
                loop.close()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._serve_stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="FakeLLMServer", daemon=True)
        self._thread.start()
        ready.wait(30)
        if errors:
            self._thread = None
            raise RuntimeError(f"FakeLLMServer failed to start: {errors[0]}") from errors[0]
        return self

    def stop(self) -> None:
        """Stop serving; hanging replies are cut off."""
        if self._thread is None or self._loop is None:
            return
        loop = self._loop
        if self._stopping is not None:
            loop.call_soon_threadsafe(self._stopping.set)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(30)
        self._thread = None
        self._loop = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget recorded requests and timings (not the script or responder)."""
        with self._lock:
            self.requests.clear()
            self.max_in_flight = 0
            self.first_request_at = None
            self.last_response_at = None

    async def _serve_start(self) -> None:
        self._stopping = asyncio.Event()
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._list_models)
        app.router.add_get("/models", self._list_models)
        for prefix in ("/v1", ""):
            app.router.add_post(f"{prefix}/files", self._file_create)
            app.router.add_get(f"{prefix}/files/{{file_id}}", self._file_get)
            app.router.add_get(f"{prefix}/files/{{file_id}}/content", self._file_content)
            app.router.add_post(f"{prefix}/batches", self._batch_create)
            app.router.add_get(f"{prefix}/batches", self._batch_list)
            app.router.add_get(f"{prefix}/batches/{{batch_id}}", self._batch_get)
            app.router.add_post(f"{prefix}/batches/{{batch_id}}/cancel", self._batch_cancel)
        # handler_cancellation: a client that gives up (timeout) ends its hanging handler.
        self._runner = web.AppRunner(app, access_log=None, handler_cancellation=True, shutdown_timeout=0.5)
        await self._runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", self._requested_port))
        self._port = sock.getsockname()[1]
        site = web.SockSite(self._runner, sock, backlog=2048)
        await site.start()

    async def _serve_stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    # -- handlers --

    async def _list_models(self, request: web.Request) -> web.Response:
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "mast-testing"} for m in self.models]
        return web.json_response({"object": "list", "data": data})

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        arrived = time.monotonic()
        raw = await request.read()
        try:
            body = orjson.loads(raw) if raw else {}
        except orjson.JSONDecodeError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        record = RecordedRequest(path=request.path, body=body, headers=dict(request.headers), received_at=arrived)
        with self._lock:
            self.requests.append(record)
            if self.first_request_at is None:
                self.first_request_at = arrived
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            reply = await self._choose(body, record)
            wait = self.latency + reply.delay
            if reply.hang:
                wait = self.hang_limit
            if wait > 0:
                await self._sleep(wait)
            response = self._render(body, reply)
            return response
        finally:
            with self._lock:
                self._in_flight -= 1
                self.last_response_at = time.monotonic()

    async def _sleep(self, seconds: float) -> None:
        assert self._stopping is not None
        try:
            await asyncio.wait_for(self._stopping.wait(), timeout=seconds)
        except TimeoutError:
            pass

    async def _choose(self, body: dict[str, Any], record: RecordedRequest) -> Reply:
        with self._lock:
            scripted = self.script.popleft() if self.script else None
            fault = None
            if scripted is None and self.faults and self.faults.kinds and self._rng.random() < self.faults.rate:
                fault = self._rng.choice(self.faults.kinds)
        if scripted is not None:
            return scripted
        if fault is not None and self.faults is not None:
            record.fault = fault
            return self.faults.reply(fault, body)
        if self.responder is None:
            return Reply()
        answer = self.responder(body)
        if inspect.isawaitable(answer):
            answer = await answer
        if answer is None:
            return Reply()
        if isinstance(answer, Reply):
            return answer
        return Reply(content=answer)

    def _render(self, body: dict[str, Any], reply: Reply) -> web.Response:
        headers = dict(reply.headers)
        if reply.body is not None:
            text = reply.body if isinstance(reply.body, str) else orjson.dumps(reply.body).decode()
            return web.Response(status=reply.status, text=text, headers=headers, content_type="application/json")
        if reply.status >= 400:
            error = {"error": {"message": f"fake server error {reply.status}", "type": "fake_error", "code": reply.status}}
            return web.json_response(error, status=reply.status, headers=headers)
        return web.json_response(self._completion_payload(body, reply), status=reply.status, headers=headers)

    def _completion_payload(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        """The chat-completion JSON for a successful reply (online or inside a batch)."""
        content = reply.content if reply.content is not None else default_answer(body)
        if reply.invalid_json:
            text = "Sure! Here is my verdict: {failure_modes: [1.1 present, oops"
        elif isinstance(content, str):
            text = content
        else:
            text = orjson.dumps(content).decode()
        use_tool = reply.as_tool if reply.as_tool is not None else bool(body.get("tools"))
        message: dict[str, Any] = {"role": "assistant", "content": text}
        finish = reply.finish_reason
        if use_tool:
            name = _tool_name(body)
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function", "function": {"name": name, "arguments": text}}
                ],
            }
            if finish == "stop":
                finish = "tool_calls"
        prompt_tokens, completion_tokens = reply.usage or (
            _estimate_tokens(request_text(body)),
            _estimate_tokens(text),
        )
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if self.prompt_cache:
            usage["prompt_tokens_details"] = {"cached_tokens": min(prompt_tokens, self._cached_prefix(body))}
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:16]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": str(body.get("model") or self.models[0]),
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage,
        }

    def _cached_prefix(self, body: Mapping[str, Any]) -> int:
        """Tokens of the leading system messages when this exact prefix was seen before (like a provider cache)."""
        prefix: list[Any] = []
        for message in body.get("messages") or []:
            if message.get("role") != "system":
                break
            prefix.append(message.get("content"))
        if not prefix:
            return 0
        key = orjson.dumps(prefix).decode()
        with self._lock:
            seen = key in self._seen_prefixes
            self._seen_prefixes.add(key)
        return _estimate_tokens(request_text({"messages": [{"content": c} for c in prefix]})) if seen else 0


def _tool_name(body: Mapping[str, Any]) -> str:
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        if name:
            return str(name)
    for tool in body.get("tools") or []:
        name = (tool.get("function") or {}).get("name")
        if name:
            return str(name)
    return "answer"


_STEP_LINE = re.compile(r"^\[S(\d+)\][^:\n]*:\s?(.*)$", re.MULTILINE)


def quote_steps(body: Mapping[str, Any], *, words: int = 6) -> list[tuple[int, str]]:
    """``(step, quote)`` pairs taken verbatim from the ``[S<n>]`` lines of a request's transcript.

    Handy in a responder that must cite real evidence.
    """
    pairs: list[tuple[int, str]] = []
    for match in _STEP_LINE.finditer(request_text(body)):
        quote = " ".join(match.group(2).split()[:words])
        if quote:
            pairs.append((int(match.group(1)), quote))
    return pairs
