"""The one module that talks to litellm: a narrow backend the judge calls.

The judge needs four things from a model: a completion in a structured-output mode, a token count,
the context window and the price of a call. :class:`Backend` is that protocol; :class:`LiteLLMBackend`
implements it with ``litellm.acompletion``. Everything litellm raises is translated to
:class:`~mast.errors.JudgeAPIError` here, in one place.

Transport retries are classified (tenacity): a 429 waits for its ``Retry-After``, 5xx answers,
timeouts and connection errors back off exponentially with full jitter, every other error fails at
once. litellm's and the OpenAI client's own retries are switched off so the bound is ours.

Example:
    >>> backend = LiteLLMBackend("openai/my-model", api_base="http://127.0.0.1:8080/v1")
    >>> backend.resolve_mode("auto")
    'json_schema'
"""

from __future__ import annotations

import copy
import logging
import random
import warnings
from typing import Any

from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from mast.errors import JudgeAPIError
from mast.judge._litellm_offline import pin_offline, unhook_hub_lookups
from mast.judge.backend_errors import classify_error, retry_after_seconds, setup_failure, translate_error
from mast.judge.config import JudgeConfig, StructuredOutput
from mast.judge.pricing import Prices, call_cost, list_cost, usage_parts
from mast.judge.protocol import Backend, Completion, Mode, UsageMeter, is_constrained
from mast.judge.schema import OutputSpec
from mast.otel import judge_call_span

__all__ = [
    "Backend",
    "Completion",
    "LiteLLMBackend",
    "Mode",
    "UsageMeter",
    "classify_error",
    "setup_failure",
    "translate_error",
]

# Before litellm is imported: its price map, tokenizers and other catalogs come from the copies it ships.
pin_offline()

import litellm  # noqa: E402

unhook_hub_lookups(litellm)

# mast sends no telemetry and prints no litellm banners; callbacks the user set stay untouched.
# litellm builds pydantic adapters for ReadOnly TypedDicts lazily, mid-call; pydantic's note about
# them would surface in the caller's code, so only that message is silenced.
warnings.filterwarnings("ignore", message=r".*using the `ReadOnly` qualifier", category=UserWarning)
litellm.telemetry = False
litellm.suppress_debug_info = True
for _name in ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy", "litellm"):
    logging.getLogger(_name).setLevel(logging.ERROR)

RETRY_INITIAL_WAIT = 1.0
"""Seconds before the first retry of a transient error (doubled per attempt, full jitter)."""
RETRY_MAX_WAIT = 30.0
"""Longest back-off between two transport attempts."""
RETRY_AFTER_MAX = 120.0
"""Longest ``Retry-After`` honoured; a longer one is cut to this."""

_STRICT_PROVIDERS = ("openai", "azure")
# Providers whose model info litellm fetches from the network rather than its bundled table.
_HUB_INFO_PREFIXES = ("huggingface/",)
# Keywords OpenAI's strict structured outputs reject; kept for grammar-based servers (llama.cpp).
_UNSUPPORTED_STRICT = ("maxLength", "minLength")
# Providers whose Claude models take Anthropic's cache_control breakpoints (litellm passes them on).
_CACHE_CONTROL_PROVIDERS = ("anthropic", "vertex_ai", "bedrock")


class LiteLLMBackend:
    """A :class:`Backend` on ``litellm.acompletion``: any model string litellm accepts."""

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        temperature: float = 0.0,
        seed: int | None = None,
        timeout: float = 120.0,
        max_retries: int = 4,
        extra: dict[str, Any] | None = None,
        context_window: int | None = None,
        free: bool = False,
        price_input: float | None = None,
        price_output: float | None = None,
    ) -> None:
        self.model = model
        self.api_base = api_base
        self.api_key = api_key
        self.temperature = temperature
        self.seed = seed
        self.timeout = timeout
        self.max_retries = max_retries
        self.extra = dict(extra or {})
        self._context_window = context_window
        self._info: dict[str, Any] | None = None
        self._info_known = False
        self.free = free
        """True for a local model: every call costs 0."""
        self.user_prices = (
            Prices(input=price_input / 1_000_000, output=price_output / 1_000_000)
            if price_input is not None and price_output is not None
            else None
        )
        """List prices given by the user (``--price-input``/``--price-output``, dollars per million
        tokens); they win over litellm's table, cache and batch rates derived by the documented factors."""
        # A self-hosted OpenAI-compatible server (llama.cpp, vLLM) turns json_schema into a grammar.
        self.constrained = is_constrained(model, api_base, free=free)

    @classmethod
    def from_config(cls, config: JudgeConfig, **overrides: Any) -> LiteLLMBackend:
        """The backend for a :class:`JudgeConfig` (``overrides`` win, e.g. a local server's address)."""
        values: dict[str, Any] = {
            "model": config.model,
            "api_base": config.api_base,
            "api_key": config.api_key.get_secret_value() if config.api_key else None,
            "temperature": config.temperature,
            "seed": config.seed,
            "timeout": config.timeout,
            "max_retries": config.max_retries,
            "extra": config.extra,
            "context_window": config.context_window,
            "price_input": config.price_input,
            "price_output": config.price_output,
        }
        values.update(overrides)
        model = values.pop("model")
        if not model:
            raise JudgeAPIError("no model configured for the LLM judge")
        return cls(model, **values)

    # -- model facts --

    def provider(self) -> str:
        """The provider litellm routes this model to (``openai``, ``anthropic``, ``azure``...)."""
        return self._provider() or "openai"

    def _provider(self) -> str | None:
        try:
            return str(litellm.get_llm_provider(self.model, api_base=self.api_base)[1])
        except Exception:  # unknown provider prefix: litellm raises its own BadRequestError
            return None

    def _model_info(self) -> dict[str, Any] | None:
        # Looked up once per backend: the judge asks for it on every call (context window, price).
        if not self._info_known:
            if self.model.startswith(_HUB_INFO_PREFIXES):
                # litellm would download the model's config.json from the Hugging Face hub for it; mast
                # lets litellm reach the network only for the model call (--context-window sets it).
                self._info_known = True
                return None
            try:
                self._info = dict(litellm.get_model_info(self.model))
            except Exception:  # litellm raises when the model is not in its table
                self._info = None
            self._info_known = True
        return self._info

    def resolve_mode(self, requested: StructuredOutput) -> Mode:
        """The mode for ``requested``; ``auto`` picks the strongest the model supports.

        ``json_schema`` for an ``openai/`` model behind a custom ``api_base`` (llama.cpp, vLLM...) or a
        model litellm says supports response schemas; else ``tool`` when it supports function
        calling; else ``json``.
        """
        if requested != "auto":
            return requested
        if self.api_base and self.model.startswith("openai/"):
            return "json_schema"
        if self.model.startswith(_HUB_INFO_PREFIXES):
            return "json"  # litellm would ask the Hugging Face hub what the model supports
        try:
            if litellm.supports_response_schema(model=self.model):
                return "json_schema"
            if litellm.supports_function_calling(model=self.model):
                return "tool"
        except Exception:  # unknown model: litellm cannot tell, JSON mode works everywhere
            pass
        return "json"

    def context_window(self) -> int | None:
        """The configured context window, else litellm's ``max_input_tokens`` for the model."""
        if self._context_window:
            return self._context_window
        info = self._model_info()
        if info:
            value = info.get("max_input_tokens") or info.get("max_tokens")
            if isinstance(value, int) and value > 0:
                return value
        return None

    def count_tokens(self, text: str) -> int:
        """Litellm's token counter (the model's tokenizer when litellm knows it, else tiktoken)."""
        if self.model.startswith(_HUB_INFO_PREFIXES):
            return len(text) // 3 + 1  # litellm would download the model's tokenizer from the hub
        try:
            return int(litellm.token_counter(model=self.model, text=text))
        except Exception:  # a tokenizer litellm cannot load: about 4 characters per token
            return len(text) // 3 + 1

    def prices(self) -> Prices | None:
        """The model's per-token rates (list, cached, batch): the user's, else litellm's table; ``None`` when unknown."""
        if self.free:
            return Prices(input=0.0, output=0.0)
        if self.user_prices is not None:
            return self.user_prices
        return Prices.from_model_info(self._model_info())

    def _cost(self, response: Any, usage: tuple[int, int, int, int]) -> tuple[float | None, float | None]:
        """``(cost, list cost)`` of an online answer: cache discounts from the table's rates."""
        prices = self.prices()
        if prices is not None:
            tokens_in, tokens_out, read, write = usage
            cost = call_cost(
                prices,
                input_tokens=tokens_in,
                output_tokens=tokens_out,
                cached_input_tokens=read,
                cache_creation_input_tokens=write,
            )
            return cost, list_cost(prices, input_tokens=tokens_in, output_tokens=tokens_out)
        known = self._litellm_cost(response)
        return known, known

    def _litellm_cost(self, response: Any) -> float | None:
        if self._model_info() is None:
            return None
        # litellm prices every response it returns (``_hidden_params["response_cost"]``, from the
        # same table); asking completion_cost again would repeat that work on every call.
        hidden = getattr(response, "_hidden_params", None)
        known = hidden.get("response_cost") if isinstance(hidden, dict) else None
        if isinstance(known, int | float) and not isinstance(known, bool):
            return float(known)
        try:
            return float(litellm.completion_cost(completion_response=response, model=self.model))
        except Exception:  # price not in litellm's table
            return None

    def estimate_cost(self, input_tokens: int, output_tokens: int) -> float | None:
        """Dollars a call of this many tokens would cost: 0 for a local model, ``None`` when the price is unknown.

        Used before anything is sent (dry runs, ``--budget-usd``), from the prices given
        (``--price-input``/``--price-output``), else litellm's price table.
        """
        if self.free:
            return 0.0
        if self.user_prices is not None:
            return list_cost(self.user_prices, input_tokens=input_tokens, output_tokens=output_tokens)
        if self._model_info() is None:
            return None
        try:
            prompt, completion = litellm.cost_per_token(
                model=self.model, prompt_tokens=input_tokens, completion_tokens=output_tokens
            )
        except Exception:  # price not in litellm's table
            return None
        return float(prompt) + float(completion)

    # -- the call --

    def _schema_for_provider(self, output: OutputSpec) -> tuple[dict[str, Any], bool]:
        """The schema as this provider takes it, and whether to ask for strict decoding."""
        provider = self._provider()
        if self.api_base is None and provider in _STRICT_PROVIDERS:
            return _strip_keywords(output.schema, _UNSUPPORTED_STRICT), True
        return output.schema, False

    def request_kwargs(
        self, messages: list[dict[str, Any]], output: OutputSpec, mode: Mode, max_tokens: int
    ) -> dict[str, Any]:
        """The keyword arguments of one ``litellm.acompletion`` call (e.g. a provider batch API's request).

        Messages, sampling parameters, and the answer schema as the structured-output ``mode`` asks.
        """
        return self._request(messages, output, mode, max_tokens)

    def _request(
        self, messages: list[dict[str, Any]], output: OutputSpec, mode: Mode, max_tokens: int
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": max_tokens,
            "timeout": self.timeout,
            # The retry bound is ours (tenacity below): no hidden retries in litellm or the SDK.
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": True,
        }
        if self.seed is not None:
            kwargs["seed"] = self.seed
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        schema, strict = self._schema_for_provider(output)
        if mode == "json_schema":
            spec: dict[str, Any] = {"name": output.name, "schema": schema}
            if strict:
                spec["strict"] = True
            kwargs["response_format"] = {"type": "json_schema", "json_schema": spec}
        elif mode == "tool":
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": output.name,
                        "description": output.description,
                        "parameters": schema,
                    },
                }
            ]
            kwargs["tool_choice"] = {"type": "function", "function": {"name": output.name}}
        else:
            kwargs["response_format"] = {"type": "json_object"}
            kwargs["messages"] = _with_schema_message(messages, output)
        kwargs.update(self.extra)
        if self._wants_cache_control():
            kwargs["messages"] = _with_cache_breakpoint(kwargs["messages"])
        return kwargs

    def _wants_cache_control(self) -> bool:
        """Anthropic caches a prefix only where the request marks it (OpenAI caches on its own)."""
        provider = self._provider()
        if provider == "anthropic":
            return True
        return provider in _CACHE_CONTROL_PROVIDERS and "claude" in self.model.lower()

    async def complete(
        self, messages: list[dict[str, Any]], *, output: OutputSpec, mode: Mode, max_tokens: int
    ) -> Completion:
        """One completion with classified transport retries.

        Raises:
            JudgeAPIError: a fatal error, or retries exhausted (with the attempt count).
        """
        kwargs = self._request(messages, output, mode, max_tokens)
        attempts = 0
        # An OTel GenAI span per call when the user turned judge spans on (mast.otel; off by default).
        with judge_call_span(self.model, max_tokens=max_tokens) as call_span:
            try:
                async for attempt in AsyncRetrying(
                    stop=stop_after_attempt(self.max_retries + 1),
                    wait=_wait,
                    retry=retry_if_exception(lambda exc: classify_error(exc) != "fatal"),
                    reraise=True,
                ):
                    with attempt:
                        attempts += 1
                        response = await litellm.acompletion(**kwargs)
            except Exception as exc:
                raise translate_error(
                    exc,
                    model=self.model,
                    attempts=attempts,
                    api_base=self.api_base,
                    api_key_given=bool(self.api_key),
                ) from exc
            completion = self._completion(response, attempts)
            call_span.finish(
                input_tokens=completion.input_tokens,
                output_tokens=completion.output_tokens,
                finish_reason=completion.finish_reason,
                attempts=attempts,
            )
        return completion

    def _completion(self, response: Any, attempts: int) -> Completion:
        choice = response.choices[0]
        message = choice.message
        tool_args = None
        tool_calls = getattr(message, "tool_calls", None)
        if tool_calls:
            tool_args = tool_calls[0].function.arguments
        usage = usage_parts(getattr(response, "usage", None))
        try:
            raw = response.model_dump()
        except Exception:  # a provider object without model_dump: keep what can be kept
            raw = None
        cost, list_price = self._cost(response, usage)
        return Completion(
            text=message.content,
            tool_args=tool_args,
            finish_reason=choice.finish_reason,
            input_tokens=usage[0],
            output_tokens=usage[1],
            cost_usd=cost,
            cached_input_tokens=usage[2],
            cache_creation_input_tokens=usage[3],
            list_cost_usd=list_price,
            raw=raw,
            attempts=attempts,
        )


def _with_schema_message(messages: list[dict[str, Any]], output: OutputSpec) -> list[dict[str, Any]]:
    """JSON mode: put the schema in a system message right after the static one (before the trace)."""
    import orjson

    note = {
        "role": "system",
        "content": f"Reply with one JSON object valid against this JSON Schema (`{output.name}`):\n"
        + orjson.dumps(output.schema).decode(),
    }
    position = 1 if messages and messages[0].get("role") == "system" else 0
    return [*messages[:position], note, *messages[position:]]


def _with_cache_breakpoint(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Mark the end of the static prefix (the leading system messages) as an Anthropic cache breakpoint.

    Everything before the trace (taxonomy, instructions, examples, the schema in JSON mode) is
    byte-identical across traces, so the provider serves it from its cache after the first call.
    """
    last_static = -1
    for index, message in enumerate(messages):
        if message.get("role") != "system":
            break
        last_static = index
    if last_static < 0 or not isinstance(messages[last_static].get("content"), str):
        return messages
    marked = dict(messages[last_static])
    marked["content"] = [{"type": "text", "text": marked["content"], "cache_control": {"type": "ephemeral"}}]
    return [*messages[:last_static], marked, *messages[last_static + 1 :]]


def _strip_keywords(schema: dict[str, Any], keywords: tuple[str, ...]) -> dict[str, Any]:
    def walk(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: walk(v) for k, v in node.items() if k not in keywords}
        if isinstance(node, list):
            return [walk(v) for v in node]
        return node

    result: dict[str, Any] = walk(copy.deepcopy(schema))
    return result


def _wait(state: RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome else None
    if exc is not None and classify_error(exc) == "rate_limit":
        asked = retry_after_seconds(exc)
        if asked is not None:
            return min(asked, RETRY_AFTER_MAX)
    ceiling = min(RETRY_MAX_WAIT, RETRY_INITIAL_WAIT * 2 ** (state.attempt_number - 1))
    return random.uniform(0, ceiling)
