"""A backend that imports litellm only when the judge needs it: a model call, or a fact only litellm knows.

Importing litellm takes about 4 seconds. On a run whose answers are all in the cache, the judge
asks its backend only two things before it reads the cache: whether the server decodes with a
grammar (known from the model string and the endpoint) and the model's context window (part of
the cache key, because it decides single call or windows). The window litellm gave for a model
and endpoint is remembered in the answer cache under its own key, so the next run with that judge
reads it there and never imports litellm unless a call is made. The remembered value is keyed by
litellm's installed version as well: a new litellm may know the model better.

Example:
    >>> backend = DeferredBackend(config, cache)   # doctest: +SKIP
    >>> backend.context_window()                    # from the cache when known: no import
"""

from __future__ import annotations

import threading
from importlib import metadata
from typing import TYPE_CHECKING, Any

from mast.judge.protocol import Backend, Completion, Mode, is_constrained

if TYPE_CHECKING:
    from mast.judge.cache import JudgeCache
    from mast.judge.config import JudgeConfig, StructuredOutput
    from mast.judge.schema import OutputSpec

__all__ = ["DeferredBackend", "model_facts_key"]


def _litellm_version() -> str:
    try:
        return metadata.version("litellm")
    except metadata.PackageNotFoundError:
        return "absent"


def model_facts_key(model: str, api_base: str | None) -> str:
    """The cache key of what litellm said about ``model`` at ``api_base`` (its installed version included)."""
    from mast.judge.cache import cache_key

    return cache_key({"kind": "model-facts", "model": model, "api_base": api_base, "litellm": _litellm_version()})


class DeferredBackend:
    """A :class:`~mast.judge.protocol.Backend` that builds the litellm backend on first real use.

    ``model`` and ``constrained`` are known without litellm; :meth:`context_window` is read from the
    cache when an earlier run stored it; everything else builds the
    :class:`~mast.judge.backend.LiteLLMBackend` (once, under a lock) and asks it.
    """

    def __init__(self, config: JudgeConfig, cache: JudgeCache | None) -> None:
        self._config = config
        self._cache = cache
        self._real: Backend | None = None
        self._lock = threading.Lock()
        self.model: str = config.model or ""
        self.api_base: str | None = config.api_base
        self.constrained: bool = is_constrained(self.model, config.api_base)

    @property
    def loaded(self) -> bool:
        """True once litellm's backend was built (litellm imported)."""
        return self._real is not None

    def real(self) -> Backend:
        """The litellm backend, built on first use."""
        with self._lock:
            if self._real is None:
                from mast.judge.backend import LiteLLMBackend

                self._real = LiteLLMBackend.from_config(self._config)
            return self._real

    def context_window(self) -> int | None:
        """The configured window, else the one remembered for this model and endpoint, else litellm's."""
        if self._config.context_window:
            return self._config.context_window
        key = model_facts_key(self.model, self.api_base)
        if self._cache is not None and self._real is None:
            facts = self._cache.get(key)
            if facts is not None and "context_window" in facts:
                value = facts["context_window"]
                return value if isinstance(value, int) and value > 0 else None
        value = self.real().context_window()
        if self._cache is not None:
            self._cache.put(key, {"context_window": value})
        return value

    def resolve_mode(self, requested: StructuredOutput) -> Mode:
        """The litellm backend's answer (``auto`` needs its model table)."""
        return self.real().resolve_mode(requested)

    def count_tokens(self, text: str) -> int:
        """The litellm backend's token count."""
        return self.real().count_tokens(text)

    async def complete(
        self, messages: list[dict[str, Any]], *, output: OutputSpec, mode: Mode, max_tokens: int
    ) -> Completion:
        """One completion through the litellm backend."""
        return await self.real().complete(messages, output=output, mode=mode, max_tokens=max_tokens)

    def __getattr__(self, name: str) -> Any:
        # Prices, provider and the other facts of the litellm backend: built on first use. Only
        # names this class does not define reach here; private names never build it.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.real(), name)
