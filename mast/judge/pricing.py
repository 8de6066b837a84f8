"""What a call costs: list price, prompt-cache rates and batch-API rates, from one price record.

Providers discount two things mast can use. Their batch APIs (OpenAI Batch, Anthropic Message
Batches) charge about half for the same tokens, and a prompt prefix the provider has cached is
read at a fraction of the input price (OpenAI's automatic caching; Anthropic's ``cache_control``,
which also charges a premium for writing the cache). :class:`Prices` holds a model's per-token
rates, taken from litellm's price table by the backend where the table has them, else derived
with the documented factors below; :func:`call_cost` prices one call's usage.

The input tokens a provider reports *include* the cached ones: ``cached_input_tokens`` and
``cache_creation_input_tokens`` say how many of them were read from or written to the cache.

Example:
    >>> p = Prices(input=4e-07, output=1.6e-06, cache_read=1e-07)
    >>> round(call_cost(p, input_tokens=2000, output_tokens=500, cached_input_tokens=1024, batch=True), 8)
    0.0006464
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

BATCH_FACTOR = 0.5
"""Batch price as a share of list price when the table has no batch price: both OpenAI's Batch API
and Anthropic's Message Batches are documented at 50% of the standard price."""
CACHE_READ_FACTOR = 0.5
"""Cached-input price as a share of the input price when the table has none. OpenAI's cached
inputs cost 25-50% of list depending on the model, Anthropic's cache reads 10%: 50% never
overstates the saving."""
CACHE_WRITE_FACTOR = 1.25
"""Cache-write price as a share of the input price when the table has none (Anthropic's
five-minute cache)."""


@dataclass(frozen=True)
class Prices:
    """Dollars per token for one model; ``None`` where the table has no specific rate."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    batch_input: float | None = None
    batch_output: float | None = None
    batch_cache_read: float | None = None
    batch_cache_write: float | None = None

    @classmethod
    def from_model_info(cls, info: Mapping[str, Any] | None) -> Prices | None:
        """Rates from a litellm model-info record; ``None`` without input and output prices."""
        if not info:
            return None

        def rate(key: str) -> float | None:
            value = info.get(key)
            return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

        base_in, base_out = rate("input_cost_per_token"), rate("output_cost_per_token")
        if base_in is None or base_out is None:
            return None
        return cls(
            input=base_in,
            output=base_out,
            cache_read=rate("cache_read_input_token_cost"),
            cache_write=rate("cache_creation_input_token_cost"),
            batch_input=rate("input_cost_per_token_batches"),
            batch_output=rate("output_cost_per_token_batches"),
            batch_cache_read=rate("cache_read_input_token_cost_batches"),
            batch_cache_write=rate("cache_creation_input_token_cost_batches"),
        )

    def rates(self, *, batch: bool) -> tuple[float, float, float, float]:
        """``(input, output, cache_read, cache_write)`` per token, online or through the batch API.

        Batch and cache discounts stack (Anthropic documents it; a batch rate missing from the
        table is the online rate times :data:`BATCH_FACTOR`).
        """
        cache_read = self.cache_read if self.cache_read is not None else self.input * CACHE_READ_FACTOR
        cache_write = self.cache_write if self.cache_write is not None else self.input * CACHE_WRITE_FACTOR
        if not batch:
            return self.input, self.output, cache_read, cache_write
        return (
            self.batch_input if self.batch_input is not None else self.input * BATCH_FACTOR,
            self.batch_output if self.batch_output is not None else self.output * BATCH_FACTOR,
            self.batch_cache_read if self.batch_cache_read is not None else cache_read * BATCH_FACTOR,
            self.batch_cache_write if self.batch_cache_write is not None else cache_write * BATCH_FACTOR,
        )


def call_cost(
    prices: Prices,
    *,
    input_tokens: int,
    output_tokens: int,
    cached_input_tokens: int = 0,
    cache_creation_input_tokens: int = 0,
    batch: bool = False,
) -> float:
    """Dollars for one call's usage (cached and cache-written tokens are part of ``input_tokens``)."""
    read = max(0, min(cached_input_tokens, input_tokens))
    write = max(0, min(cache_creation_input_tokens, input_tokens - read))
    plain = input_tokens - read - write
    rate_in, rate_out, rate_read, rate_write = prices.rates(batch=batch)
    return plain * rate_in + read * rate_read + write * rate_write + output_tokens * rate_out


def list_cost(prices: Prices, *, input_tokens: int, output_tokens: int) -> float:
    """Dollars for the same tokens at list price: online, nothing cached."""
    return input_tokens * prices.input + output_tokens * prices.output


def usage_parts(usage: Any) -> tuple[int, int, int, int]:
    """``(input, output, cache_read, cache_write)`` tokens from a provider's usage, object or dict.

    Understands OpenAI's ``prompt_tokens`` with ``prompt_tokens_details.cached_tokens`` (cached
    tokens included in the prompt count) and Anthropic's ``input_tokens`` with
    ``cache_read_input_tokens`` / ``cache_creation_input_tokens`` (not included: added here), as
    well as litellm's mix of both (``prompt_tokens`` already holding Anthropic's cache tokens).
    """
    if usage is None:
        return 0, 0, 0, 0

    def get(obj: Any, key: str) -> Any:
        return obj.get(key) if isinstance(obj, Mapping) else getattr(obj, key, None)

    def number(value: Any) -> int:
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0

    details = get(usage, "prompt_tokens_details")
    read = max(number(get(details, "cached_tokens")) if details is not None else 0, number(get(usage, "cache_read_input_tokens")))
    write = number(get(usage, "cache_creation_input_tokens"))
    prompt = get(usage, "prompt_tokens")
    if prompt is not None:
        return number(prompt), number(get(usage, "completion_tokens")), read, write
    # Anthropic's own shape: input_tokens counts only what was neither read from nor written to the cache.
    return number(get(usage, "input_tokens")) + read + write, number(get(usage, "output_tokens")), read, write
