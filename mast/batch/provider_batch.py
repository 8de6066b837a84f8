"""The provider-batch engine: the judge's model calls answered through a provider's batch API.

The judge itself is unchanged: :class:`ParkingBackend` stands in for its backend and, instead of
calling the model, *parks* each request (built by the online backend's own request builder) until
an answer comes. :class:`BatchEngine` collects the parked requests of every trace into batch
files, submits them, polls, downloads the answers and hands each parked call its completion, which
the judge then validates exactly as an online answer (and re-asks, windows, aggregation follow).
A chunked trace thus sends its window calls in one round of batches and its aggregation call in
the next.

Durability comes from :mod:`mast.batch.batch_state`: a request's ``custom_id`` is the hash of its
body, so a rerun rebuilds the same requests, finds them in the batches already recorded and waits
for those, or reads their saved answers, instead of submitting them again.

Items a batch reports as failed or expired are asked again, bounded: online
(``retry="online"``: the backend's transport retries) or in a follow-up batch (``retry="batch"``,
at most :data:`MAX_BATCH_ATTEMPTS` batches per request). A re-ask after an invalid answer is
asked online with ``retry="online"`` (one call instead of another day's wait), else batched.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import orjson

from mast._env import batch_poll_seconds
from mast.batch.batch_state import BatchEntry, BatchState, BatchStore, ItemResult
from mast.errors import JudgeAPIError, UsageError
from mast.judge.backend import LiteLLMBackend
from mast.judge.batch_api import BatchInfo, ProviderBatchAPI, batch_body, completion_from_body
from mast.judge.config import StructuredOutput
from mast.judge.pricing import Prices
from mast.judge.protocol import Completion, Mode
from mast.judge.schema import OutputSpec

RetryMode = Literal["online", "batch"]

MAX_BATCH_REQUESTS = 50_000
"""Requests per batch file (OpenAI's limit; Anthropic allows 100,000)."""
MAX_BATCH_BYTES = 190 * 1024 * 1024
"""Bytes per batch file (OpenAI allows 200 MB, Anthropic 256 MB: some room for the upload's framing)."""
MAX_BATCH_ATTEMPTS = 3
"""Batches one request may go through with ``retry="batch"`` before its trace ends in error."""
DEFAULT_POLL_S = 30.0
"""Seconds between two polls of a running batch (``MAST_BATCH_POLL_S``)."""
ONLINE_RETRY_CONCURRENCY = 8
"""Failed items asked online at the same time."""
KILL_ENV = "MAST_BATCH_KILL_AT"
"""Test hook: the process kills itself (SIGKILL) at this named point (see :func:`checkpoint`)."""
KILL_POINTS = ("upload", "create", "submitted", "download", "result")

CURRENT_TRACE: ContextVar[tuple[int, str]] = ContextVar("mast_batch_trace", default=(0, ""))
"""``(judgement number, trace id)`` of the judgement asking: the id is recorded per request in the
state (for ``--batch-status``), the number tells the driver which judgements are parked."""


def checkpoint(point: str) -> None:
    """Die here when ``MAST_BATCH_KILL_AT`` names this point: how tests kill -9 a run at a known step."""
    if os.environ.get(KILL_ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)


def request_key(body: dict[str, Any]) -> str:
    """The ``custom_id`` of a request: a hash of its canonical body (the same request, the same id)."""
    return "mast-" + hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()[:40]


@dataclass
class BatchProgress:
    """What the batches in flight report, for a progress line."""

    batches: int = 0
    submitted: int = 0
    in_progress: int = 0
    completed: int = 0
    failed: int = 0
    elapsed_s: float = 0.0
    eta_s: float | None = None
    """Estimated seconds left, when the provider reports counts and some are done."""


@dataclass
class _Parked:
    body: dict[str, Any]
    messages: list[dict[str, Any]]
    output: OutputSpec
    mode: Mode
    max_tokens: int
    trace_id: str
    futures: list[asyncio.Future[Completion]] = field(default_factory=list)


class ParkingBackend:
    """A judge backend whose calls wait for a provider batch instead of calling the model."""

    window_concurrency = 10_000
    """Every window of a chunked trace asks at once, so all of them go into the same batch."""

    def __init__(self, online: LiteLLMBackend, engine: BatchEngine) -> None:
        self.online = online
        self.engine = engine
        self.model = online.model
        self.constrained = online.constrained
        self.free = online.free

    def resolve_mode(self, requested: StructuredOutput) -> Mode:
        """As the online backend."""
        return self.online.resolve_mode(requested)

    def context_window(self) -> int | None:
        """As the online backend."""
        return self.online.context_window()

    def count_tokens(self, text: str) -> int:
        """As the online backend."""
        return self.online.count_tokens(text)

    def estimate_cost(self, input_tokens: int, output_tokens: int) -> float | None:
        """As the online backend (list price)."""
        return self.online.estimate_cost(input_tokens, output_tokens)

    async def complete(
        self, messages: list[dict[str, Any]], *, output: OutputSpec, mode: Mode, max_tokens: int
    ) -> Completion:
        """The answer from a batch (or online, for re-asks with ``retry="online"``)."""
        return await self.engine.ask(messages, output=output, mode=mode, max_tokens=max_tokens)


class BatchEngine:
    """Parks requests, sends them in provider batches, and answers them; see the module docs.

    Args:
        online: the model's online backend (builds requests, prices answers, asks online retries).
        store: where the batch state lives.
        retry: how failed, expired or invalid items are asked again.
        max_requests: requests per batch file.
        max_bytes: bytes per batch file.
        poll_interval: seconds between polls.
        on_progress: called after every poll with the counts of the batches in flight.
        api: the provider's batch endpoints (built from ``online`` when ``None``).
    """

    def __init__(
        self,
        online: LiteLLMBackend,
        store: BatchStore,
        *,
        retry: RetryMode = "online",
        max_requests: int = MAX_BATCH_REQUESTS,
        max_bytes: int = MAX_BATCH_BYTES,
        poll_interval: float | None = None,
        on_progress: Callable[[BatchProgress], None] | None = None,
        api: ProviderBatchAPI | None = None,
    ) -> None:
        if max_requests < 1 or max_bytes < 1:
            raise UsageError("batch limits must be at least 1 request and 1 byte")
        self.online = online
        self.store = store
        self.api = api or ProviderBatchAPI(online)
        self.retry = retry
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self.poll_interval = (
            poll_interval if poll_interval is not None else batch_poll_seconds(DEFAULT_POLL_S)
        )
        self.on_progress = on_progress
        self.state: BatchState = store.load()
        if self.state.model not in (None, online.model):
            raise UsageError(
                f"{store.path}: holds batches of model {self.state.model}, not {online.model}; "
                "use another output file (or --overwrite)"
            )
        self.state.model = online.model
        self.parked: dict[str, _Parked] = {}
        self.answers: dict[str, ItemResult] = {}
        self.batches_submitted = 0
        """Batches this engine created at the provider (not counting adopted ones)."""
        self.online_calls = 0
        self._started = time.monotonic()
        self._touched: set[str] = set()
        self.activity = 0
        """Bumped whenever a request parks or a parked call resumes (the driver waits for it to settle)."""
        self.waiting: dict[int, int] = {}
        """Parked calls per judgement (see :data:`CURRENT_TRACE`)."""
        for entry in self.state.entries:
            if not entry.open:
                self._load_answers(entry)

    # -- the judge's side --

    async def ask(
        self, messages: list[dict[str, Any]], *, output: OutputSpec, mode: Mode, max_tokens: int
    ) -> Completion:
        """Park one request until its batch answers; see the module docs for re-asks."""
        if self.retry == "online" and any(m.get("role") == "assistant" for m in messages):
            return await self._online(messages, output, mode, max_tokens)
        body = batch_body(self.online, messages, output=output, mode=mode, max_tokens=max_tokens)
        key = request_key(body)
        known = self.answers.get(key)
        if known is not None and known.ok and known.body is not None:
            return completion_from_body(self.online, known.body)
        future: asyncio.Future[Completion] = asyncio.get_running_loop().create_future()
        parked = self.parked.get(key)
        if parked is None:
            parked = _Parked(body, messages, output, mode, max_tokens, CURRENT_TRACE.get()[1])
            self.parked[key] = parked
        parked.futures.append(future)
        judgement = CURRENT_TRACE.get()[0]
        self.waiting[judgement] = self.waiting.get(judgement, 0) + 1
        self.activity += 1
        try:
            return await future
        finally:
            self.activity += 1
            self.waiting[judgement] -= 1
            if not self.waiting[judgement]:
                del self.waiting[judgement]

    async def _online(
        self, messages: list[dict[str, Any]], output: OutputSpec, mode: Mode, max_tokens: int
    ) -> Completion:
        self.online_calls += 1
        return await self.online.complete(messages, output=output, mode=mode, max_tokens=max_tokens)

    # -- one round: every parked request answered, or failed --

    async def run_round(self) -> None:
        """Answer every parked request: from saved answers, batches in flight, new batches or online."""
        while self.parked:
            new: list[str] = []
            retry_online: list[str] = []
            for key in list(self.parked):
                known = self.answers.get(key)
                if known is not None and known.ok:
                    self._resolve(key, known)
                    continue
                if self._open_entry(key) is not None:
                    continue
                tries = self._tries(key)
                if tries == 0:
                    new.append(key)
                elif self.retry == "online":
                    retry_online.append(key)
                elif tries < MAX_BATCH_ATTEMPTS:
                    new.append(key)
                else:
                    self._fail(key, f"no answer after {tries} batches ({self._why(key)})")
            if new:
                self._prepare(new)
            waiting = {e.local_id: e for k in self.parked if (e := self._open_entry(k)) is not None}
            await asyncio.gather(
                *(self._advance(entry) for entry in waiting.values()),
                self._ask_online(retry_online),
            )

    def _resolve(self, key: str, result: ItemResult) -> None:
        parked = self.parked.pop(key)
        assert result.body is not None
        for future in parked.futures:
            if not future.done():
                future.set_result(completion_from_body(self.online, result.body))

    def _fail(self, key: str, reason: str, status: int | None = None) -> None:
        parked = self.parked.pop(key)
        for future in parked.futures:
            if not future.done():
                future.set_exception(
                    JudgeAPIError(f"{self.online.model} (batch): {reason}", status_code=status)
                )

    def _open_entry(self, key: str) -> BatchEntry | None:
        for entry in self.state.entries:
            if entry.open and key in entry.requests:
                return entry
        return None

    def _tries(self, key: str) -> int:
        """Finished batches that held ``key`` and gave it no answer."""
        return sum(1 for e in self.state.entries if not e.open and key in e.requests)

    def _why(self, key: str) -> str:
        known = self.answers.get(key)
        return known.error or "failed" if known is not None else "missing from the batch output"

    async def _ask_online(self, keys: list[str]) -> None:
        gate = asyncio.Semaphore(ONLINE_RETRY_CONCURRENCY)

        async def one(key: str) -> None:
            parked = self.parked[key]
            async with gate:
                try:
                    completion = await self._online(
                        parked.messages, parked.output, parked.mode, parked.max_tokens
                    )
                except JudgeAPIError as exc:
                    self._fail(
                        key, f"batch item failed ({self._why(key)}), then online: {exc}", exc.status_code
                    )
                    return
            self.parked.pop(key)
            for future in parked.futures:
                if not future.done():
                    future.set_result(completion)

        await asyncio.gather(*(one(key) for key in keys))

    # -- batches: prepare, upload, create, poll, download --

    def _prepare(self, keys: list[str]) -> None:
        """Write the request files of new batches (split by the limits) and record them, before any upload."""
        chunk: list[tuple[str, bytes]] = []
        size = 0
        for key in keys:
            parked = self.parked[key]
            line = orjson.dumps(
                {"custom_id": key, "method": "POST", "url": "/v1/chat/completions", "body": parked.body}
            )
            if chunk and (len(chunk) >= self.max_requests or size + len(line) + 1 > self.max_bytes):
                self._record(chunk)
                chunk, size = [], 0
            chunk.append((key, line))
            size += len(line) + 1
        if chunk:
            self._record(chunk)

    def _record(self, chunk: list[tuple[str, bytes]]) -> None:
        local_id = self.state.next_id()
        name, sha, n_bytes = self.store.write_requests(local_id, [line for _, line in chunk])
        requests = {key: self.parked[key].trace_id for key, _ in chunk}
        self.state.entries.append(
            BatchEntry(
                local_id=local_id, request_file=name, request_sha256=sha, n_bytes=n_bytes, requests=requests
            )
        )
        self.store.save(self.state)

    async def _advance(self, entry: BatchEntry) -> None:
        """Take one batch from wherever it is to ``downloaded``; each step recorded before the next."""
        self._touched.add(entry.local_id)
        if entry.phase == "prepared":
            content = self.store.read_requests(entry)
            entry.input_file_id = await self.api.upload(entry.request_file, content)
            checkpoint("upload")
            entry.phase = "uploaded"
            self.store.save(self.state)
        if entry.phase in ("uploaded", "creating"):
            await self._submit(entry)
        while entry.phase == "submitted":
            assert entry.batch_id is not None
            info = await self.api.retrieve(entry.batch_id)
            self._note(entry, info)
            if info.terminal:
                await self._download(entry, info)
                break
            self._report()
            await asyncio.sleep(self.poll_interval)

    async def _submit(self, entry: BatchEntry) -> None:
        assert entry.input_file_id is not None
        info: BatchInfo | None = None
        if entry.phase == "creating":
            # Killed between asking for the batch and writing its id down: it may exist already.
            info = await self.api.find("mast_batch", self._tag(entry))
        if info is None:
            entry.phase = "creating"
            self.store.save(self.state)
            info = await self.api.create(entry.input_file_id, {"mast_batch": self._tag(entry)})
            self.batches_submitted += 1
            checkpoint("create")
        entry.batch_id = info.id
        entry.phase = "submitted"
        entry.submitted_at = datetime.now(UTC)
        self._note(entry, info)
        self.store.save(self.state)
        checkpoint("submitted")

    def _tag(self, entry: BatchEntry) -> str:
        return f"{entry.local_id}:{entry.request_sha256[:16]}"

    def _note(self, entry: BatchEntry, info: BatchInfo) -> None:
        entry.provider_status = info.status
        entry.counts = {
            k: v
            for k, v in (("total", info.total), ("completed", info.completed), ("failed", info.failed))
            if v is not None
        }

    async def _download(self, entry: BatchEntry, info: BatchInfo) -> None:
        output = await self.api.content(info.output_file_id) if info.output_file_id else b""
        errors = await self.api.content(info.error_file_id) if info.error_file_id else b""
        checkpoint("download")
        entry.output_file = (
            self.store.write_result_file(entry, "output", output) if info.output_file_id else None
        )
        entry.error_file = (
            self.store.write_result_file(entry, "errors", errors) if info.error_file_id else None
        )
        entry.phase = "downloaded"
        entry.finished_at = datetime.now(UTC)
        self.store.save(self.state)
        self._load_answers(entry)
        self._report()

    def _load_answers(self, entry: BatchEntry) -> None:
        for item in self.store.results(entry):
            previous = self.answers.get(item.custom_id)
            if previous is None or not previous.ok:
                self.answers[item.custom_id] = item

    def _report(self) -> None:
        if self.on_progress is None:
            return
        progress = BatchProgress(elapsed_s=time.monotonic() - self._started)
        for entry in self.state.entries:
            if entry.local_id not in self._touched or entry.batch_id is None:
                continue
            progress.batches += 1
            total = entry.counts.get("total", len(entry.requests))
            done, failed = entry.counts.get("completed", 0), entry.counts.get("failed", 0)
            progress.submitted += total
            progress.completed += done
            progress.failed += failed
            if entry.open:
                progress.in_progress += max(0, total - done - failed)
        finished = progress.completed + progress.failed
        if finished and progress.in_progress:
            progress.eta_s = progress.elapsed_s / finished * progress.in_progress
        self.on_progress(progress)

    # -- other commands --

    async def cancel(self) -> list[BatchEntry]:
        """Cancel every batch still running at the provider; returns them."""
        cancelled: list[BatchEntry] = []
        for entry in self.state.entries:
            if entry.phase == "submitted" and entry.batch_id:
                info = await self.api.cancel(entry.batch_id)
                self._note(entry, info)
                cancelled.append(entry)
        self.store.save(self.state)
        return cancelled


def batch_prices(
    prices: Prices | None, input_tokens: int, output_tokens: int
) -> tuple[float | None, float | None]:
    """``(batch cost, list cost)`` of this many tokens, no cache assumed (for dry runs)."""
    if prices is None:
        return None, None
    from mast.judge.pricing import call_cost, list_cost

    return (
        call_cost(prices, input_tokens=input_tokens, output_tokens=output_tokens, batch=True),
        list_cost(prices, input_tokens=input_tokens, output_tokens=output_tokens),
    )
