"""A provider's batch API through litellm: upload a request file, create, poll, cancel, download.

Part of the litellm seam with :mod:`mast.judge.backend` and :mod:`mast.judge.backend_errors`: its
files/batches functions (``acreate_file``, ``acreate_batch``, ``aretrieve_batch``,
``alist_batches``, ``acancel_batch``, ``afile_content``) serve OpenAI, Azure, Vertex and the other
providers litellm supports there; an unsupported provider fails with litellm's one-line reason. Every
error is translated to :class:`~mast.errors.JudgeAPIError` (transient ones retried, as for calls).

A batch line is the online request minus its transport options (:func:`batch_body`), so a batch
asks exactly what the online path would; an answer line becomes the same
:class:`~mast.judge.protocol.Completion` an online call gives (:func:`completion_from_body`),
priced at the batch rates.
"""

from __future__ import annotations

import inspect
import re
import typing
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

from mast.errors import UsageError
from mast.judge.backend import LiteLLMBackend, _wait, classify_error, translate_error

# isort: off
# After mast.judge.backend, which pins litellm offline before its first import (mast.judge._litellm_offline).
import litellm

# isort: on
from mast.judge.pricing import call_cost, list_cost, usage_parts
from mast.judge.protocol import Completion, Mode
from mast.judge.schema import OutputSpec

# litellm's afile_content now and then leaves an inner coroutine of its OpenAI files client
# unawaited (seen when it is garbage-collected, after the content was returned), and the HTTP
# client under it a connection attempt still pending when its loop closes. Python prints both as
# "coroutine ... was never awaited" to a user of --batch-api, who can do nothing about them; the
# download itself succeeded. Only these two messages are silenced.
for _leftover in ("OpenAIFilesAPI.afile_content", "connect_tcp.<locals>.try_connect"):
    warnings.filterwarnings(
        "ignore", message=f"coroutine '{re.escape(_leftover)}' was never awaited", category=RuntimeWarning
    )

ENDPOINT = "/v1/chat/completions"
COMPLETION_WINDOW = "24h"
# Arguments of a call that are transport, not part of the request a batch file holds.
_TRANSPORT_KEYS = ("timeout", "num_retries", "max_retries", "drop_params", "api_base", "api_key")
# Batch states after which nothing more will happen at the provider.
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled", "ended"})

T = TypeVar("T")


@dataclass
class BatchInfo:
    """What the provider says about one batch."""

    id: str
    status: str
    """``validating``, ``in_progress``, ``finalizing``, ``completed``, ``failed``, ``expired``,
    ``cancelling``, ``cancelled`` (litellm maps other providers' states onto these)."""
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    total: int | None = None
    completed: int | None = None
    failed: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def terminal(self) -> bool:
        """Nothing more will happen to this batch."""
        return self.status in TERMINAL


def batch_body(
    backend: LiteLLMBackend,
    messages: list[dict[str, Any]],
    *,
    output: OutputSpec,
    mode: Mode,
    max_tokens: int,
) -> dict[str, Any]:
    """The body of a call as one line of a batch file: the online request minus transport options."""
    # The backend's own request builder: a batch must ask exactly what the online path asks.
    kwargs = backend._request(messages, output, mode, max_tokens)  # noqa: SLF001
    for key in _TRANSPORT_KEYS:
        kwargs.pop(key, None)
    try:
        kwargs["model"] = str(litellm.get_llm_provider(backend.model, api_base=backend.api_base)[0])
    except Exception:  # an unknown prefix: send the model string as given
        kwargs["model"] = backend.model
    return kwargs


def completion_from_body(backend: LiteLLMBackend, body: dict[str, Any]) -> Completion:
    """A :class:`Completion` from a chat-completion body a batch returned, priced at batch rates."""
    choice = (body.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    calls = message.get("tool_calls") or []
    tool_args = (calls[0].get("function") or {}).get("arguments") if calls else None
    tokens_in, tokens_out, read, write = usage_parts(body.get("usage"))
    prices = backend.prices()
    cost = list_price = None
    if prices is not None:
        cost = call_cost(
            prices,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cached_input_tokens=read,
            cache_creation_input_tokens=write,
            batch=True,
        )
        list_price = list_cost(prices, input_tokens=tokens_in, output_tokens=tokens_out)
    return Completion(
        text=message.get("content"),
        tool_args=tool_args,
        finish_reason=choice.get("finish_reason"),
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cost_usd=cost,
        cached_input_tokens=read,
        cache_creation_input_tokens=write,
        list_cost_usd=list_price,
        batch_api=True,
        raw=body,
    )


def _litellm_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("litellm")
    except PackageNotFoundError:
        return "(unknown version)"


def _info(batch: Any) -> BatchInfo:
    def get(key: str) -> Any:
        return batch.get(key) if isinstance(batch, dict) else getattr(batch, key, None)

    counts = get("request_counts")

    def count(key: str) -> int | None:
        value = counts.get(key) if isinstance(counts, dict) else getattr(counts, key, None)
        return int(value) if isinstance(value, int) else None

    metadata = get("metadata")
    return BatchInfo(
        id=str(get("id")),
        status=str(get("status") or "unknown"),
        input_file_id=get("input_file_id"),
        output_file_id=get("output_file_id"),
        error_file_id=get("error_file_id"),
        total=count("total"),
        completed=count("completed"),
        failed=count("failed"),
        metadata=dict(metadata) if isinstance(metadata, dict) else {},
    )


def batch_providers() -> tuple[str, ...] | None:
    """The providers the installed litellm can create batches for (``None``: it does not say)."""
    try:
        annotation = inspect.signature(litellm.create_batch).parameters["custom_llm_provider"].annotation
    except (KeyError, TypeError, ValueError):
        return None
    names = typing.get_args(annotation)
    return tuple(str(n) for n in names) or None


class ProviderBatchAPI:
    """The batch endpoints of the provider behind ``backend`` (same model, address and key).

    Raises:
        UsageError: the installed litellm has no batch API for this provider.
    """

    def __init__(self, backend: LiteLLMBackend) -> None:
        self.backend = backend
        self.provider = backend.provider()
        supported = batch_providers()
        if supported is not None and self.provider not in supported:
            raise UsageError(
                f"--batch-api: litellm {_litellm_version()} has no batch API for provider {self.provider!r} "
                f"(it has: {', '.join(supported)}); run without --batch-api"
            )

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {"custom_llm_provider": self.provider, "max_retries": 0}
        if self.backend.api_base:
            params["api_base"] = self.backend.api_base
        if self.backend.api_key:
            params["api_key"] = self.backend.api_key
        return params

    async def _call(self, what: str, call: Callable[[], Awaitable[T]]) -> T:
        attempts = 0
        try:
            async for attempt in AsyncRetrying(
                stop=stop_after_attempt(self.backend.max_retries + 1),
                wait=_wait,
                retry=retry_if_exception(lambda exc: classify_error(exc) != "fatal"),
                reraise=True,
            ):
                with attempt:
                    attempts += 1
                    return await call()
        except Exception as exc:
            raise translate_error(
                exc,
                model=f"{self.backend.model} ({what})",
                attempts=attempts,
                api_base=self.backend.api_base,
                api_key_given=bool(self.backend.api_key),
            ) from exc
        raise AssertionError("unreachable: tenacity either returns or raises")

    async def upload(self, name: str, content: bytes) -> str:
        """Upload a batch request file; returns its file id."""
        created = await self._call(
            "upload",
            lambda: litellm.acreate_file(
                file=(name, content, "application/jsonl"), purpose="batch", **self._params()
            ),
        )
        return str(created.id)

    async def create(self, input_file_id: str, metadata: dict[str, str]) -> BatchInfo:
        """Create (submit) a batch over an uploaded file."""
        batch = await self._call(
            "create batch",
            lambda: litellm.acreate_batch(
                completion_window=COMPLETION_WINDOW,
                endpoint=ENDPOINT,
                input_file_id=input_file_id,
                metadata=metadata,
                **self._params(),
            ),
        )
        return _info(batch)

    async def retrieve(self, batch_id: str) -> BatchInfo:
        """The batch's current state."""
        return _info(
            await self._call(
                "retrieve batch", lambda: litellm.aretrieve_batch(batch_id=batch_id, **self._params())
            )
        )

    async def cancel(self, batch_id: str) -> BatchInfo:
        """Ask the provider to cancel the batch (finished items stay in its output)."""
        return _info(
            await self._call(
                "cancel batch", lambda: litellm.acancel_batch(batch_id=batch_id, **self._params())
            )
        )

    async def find(self, key: str, value: str, *, limit: int = 100) -> BatchInfo | None:
        """The most recent batch whose metadata has ``key: value`` (a batch created before a crash)."""
        page = await self._call("list batches", lambda: litellm.alist_batches(limit=limit, **self._params()))
        data = page.get("data") if isinstance(page, dict) else getattr(page, "data", None)
        for batch in data or []:
            info = _info(batch)
            if str(info.metadata.get(key)) == value:
                return info
        return None

    async def content(self, file_id: str) -> bytes:
        """The bytes of an output or error file."""
        response = await self._call(
            "download", lambda: litellm.afile_content(file_id=file_id, **self._params())
        )
        data = getattr(response, "content", response)
        return data if isinstance(data, bytes) else str(data).encode()
