"""Honest cost (issue 14): cached input tokens recorded and priced, batch rates, Anthropic cache breakpoints."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import mast
from mast.judge.backend import LiteLLMBackend
from mast.judge.pricing import BATCH_FACTOR, CACHE_READ_FACTOR, Prices, call_cost, list_cost, usage_parts
from mast.judge.schema import diagnosis_spec
from mast.taxonomy import load_taxonomy
from mast.testing import FakeLLMServer

DATA = Path(__file__).parent / "data" / "batch_api"
# gpt-4.1-mini in litellm's bundled table: $0.40 / $1.60 per million, cached input $0.10, batch half.
GPT41_MINI = Prices(input=4e-07, output=1.6e-06, cache_read=1e-07, batch_input=2e-07, batch_output=8e-07)


def test_usage_parts_reads_openai_and_anthropic_cache_fields() -> None:
    openai = {"prompt_tokens": 3000, "completion_tokens": 400, "prompt_tokens_details": {"cached_tokens": 2048}}
    assert usage_parts(openai) == (3000, 400, 2048, 0)
    # Anthropic's own shape: input_tokens leaves out what was read from or written to the cache.
    anthropic = {"input_tokens": 50, "output_tokens": 300, "cache_read_input_tokens": 1800, "cache_creation_input_tokens": 0}
    assert usage_parts(anthropic) == (1850, 300, 1800, 0)
    first = {"input_tokens": 50, "output_tokens": 300, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 1800}
    assert usage_parts(first) == (1850, 300, 0, 1800)
    # litellm's mix for Claude: prompt_tokens already counts the cache, details repeat the read.
    mixed = {"prompt_tokens": 1850, "completion_tokens": 300, "cache_read_input_tokens": 1800,
             "prompt_tokens_details": {"cached_tokens": 1800}}
    assert usage_parts(mixed) == (1850, 300, 1800, 0)


def test_cached_and_batch_tokens_are_priced_at_their_rates() -> None:
    cost = call_cost(GPT41_MINI, input_tokens=3000, output_tokens=400, cached_input_tokens=2048)
    assert cost == pytest.approx(952 * 4e-07 + 2048 * 1e-07 + 400 * 1.6e-06)
    assert list_cost(GPT41_MINI, input_tokens=3000, output_tokens=400) == pytest.approx(3000 * 4e-07 + 400 * 1.6e-06)
    batch = call_cost(GPT41_MINI, input_tokens=3000, output_tokens=400, batch=True)
    assert batch == pytest.approx(3000 * 2e-07 + 400 * 8e-07)
    # No batch price for cached tokens in the table: the cached rate at the batch factor.
    both = call_cost(GPT41_MINI, input_tokens=3000, output_tokens=400, cached_input_tokens=2048, batch=True)
    assert both == pytest.approx(952 * 2e-07 + 2048 * 1e-07 * BATCH_FACTOR + 400 * 8e-07)
    # Without any cached or batch price: the documented factors.
    bare = Prices(input=1e-06, output=2e-06)
    assert call_cost(bare, input_tokens=1000, output_tokens=0, cached_input_tokens=1000) == pytest.approx(1000 * 1e-06 * CACHE_READ_FACTOR)
    # Anthropic's cache writes cost more than plain input.
    claude = Prices.from_model_info(
        {"input_cost_per_token": 3e-06, "output_cost_per_token": 1.5e-05, "cache_read_input_token_cost": 3e-07,
         "cache_creation_input_token_cost": 3.75e-06}
    )
    assert claude is not None
    assert call_cost(claude, input_tokens=1850, output_tokens=0, cache_creation_input_tokens=1800) == pytest.approx(
        50 * 3e-06 + 1800 * 3.75e-06
    )


def test_backend_prices_come_from_litellms_table() -> None:
    prices = LiteLLMBackend("openai/gpt-4.1-mini").prices()
    assert prices is not None
    assert (prices.input, prices.cache_read, prices.batch_input) == (4e-07, 1e-07, 2e-07)
    assert LiteLLMBackend("openai/no-such-model-anywhere").prices() is None


def test_user_prices_win_over_the_table_and_get_the_documented_batch_and_cache_rates() -> None:
    backend = LiteLLMBackend("openai/gpt-4.1-mini", price_input=2.0, price_output=8.0)  # $ per million tokens
    prices = backend.prices()
    assert prices is not None and (prices.input, prices.output) == (2e-06, 8e-06)
    assert backend.estimate_cost(1_000_000, 1_000_000) == pytest.approx(10.0)
    batch = call_cost(prices, input_tokens=1_000_000, output_tokens=0, cached_input_tokens=500_000, batch=True)
    assert batch == pytest.approx((500_000 * 2e-06 + 500_000 * 2e-06 * CACHE_READ_FACTOR) * BATCH_FACTOR)
    assert LiteLLMBackend("openai/no-such-model-anywhere", price_input=1.0, price_output=1.0).prices() is not None


def test_online_run_records_cached_input_tokens_and_prices_them(tmp_path: Path) -> None:
    with FakeLLMServer(prompt_cache=True) as server:
        results = mast.classify_many(
            sorted(DATA.glob("*.json")), model="openai/gpt-4.1-mini", api_base=server.base_url, api_key="fake",
            cache=False, concurrency=1,
        )
    first, *later = results
    assert first.usage.cached_input_tokens == 0  # the provider had not seen the prefix yet
    for diagnosis in later:
        usage = diagnosis.usage
        assert 0 < usage.cached_input_tokens < usage.input_tokens
        expected = call_cost(
            GPT41_MINI, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            cached_input_tokens=usage.cached_input_tokens,
        )
        assert usage.cost_usd == pytest.approx(expected)
        assert usage.cost_usd is not None and usage.list_cost_usd is not None
        assert usage.cost_usd < usage.list_cost_usd
        assert not usage.batch_api


def _request(model: str) -> dict[str, Any]:
    backend = LiteLLMBackend(model)
    messages = [{"role": "system", "content": "static instructions"}, {"role": "user", "content": "the trace"}]
    return backend._request(messages, diagnosis_spec(load_taxonomy()), "json", 1000)


def test_anthropic_requests_mark_the_static_prefix_for_caching() -> None:
    claude = _request("anthropic/claude-sonnet-4-5")["messages"]
    # JSON mode adds the schema as a second system message: the breakpoint goes after it, before the trace.
    assert [m["role"] for m in claude] == ["system", "system", "user"]
    assert claude[0]["content"] == "static instructions"
    assert claude[1]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert claude[2]["content"] == "the trace"
    # OpenAI caches a repeated prefix by itself: its request stays plain text.
    assert all(isinstance(m["content"], str) for m in _request("openai/gpt-4.1-mini")["messages"])


def test_batch_api_for_a_provider_litellm_cannot_batch_is_a_one_line_usage_error() -> None:
    from mast.errors import UsageError
    from mast.judge.batch_api import ProviderBatchAPI, batch_providers

    supported = batch_providers()
    assert supported is not None and "openai" in supported
    ProviderBatchAPI(LiteLLMBackend("openai/gpt-4.1-mini"))  # accepted
    if "anthropic" not in supported:
        with pytest.raises(UsageError, match="no batch API for provider 'anthropic'"):
            ProviderBatchAPI(LiteLLMBackend("anthropic/claude-sonnet-4-5"))
