"""The narrow seam between the judge and a model: what a backend returns and what it must do.

Kept apart from :mod:`mast.judge.backend` so that importing the judge does not import litellm
(slow); only starting an LLM judge does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from mast.judge.config import StructuredOutput
from mast.judge.schema import OutputSpec

Mode = Literal["json_schema", "tool", "json"]
"""How the answer's shape is enforced: JSON Schema response format, a forced tool call, or JSON mode."""


@dataclass
class Completion:
    """One answered call: the text or tool arguments, why it stopped, and what it cost."""

    text: str | None
    """The assistant message's content."""
    tool_args: str | None = None
    """Arguments of the first tool call (tool mode)."""
    finish_reason: str | None = None
    """``stop``, ``length``, ``tool_calls``..."""
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    """Dollars from litellm's price table; ``None`` when the model's price is unknown."""
    cached_input_tokens: int = 0
    """Of ``input_tokens``, those read from the provider's prompt cache."""
    cache_creation_input_tokens: int = 0
    """Of ``input_tokens``, those written to the provider's prompt cache (Anthropic)."""
    list_cost_usd: float | None = None
    """Dollars at list price (no batch or cache discount); ``None`` when unknown."""
    batch_api: bool = False
    """Answered through the provider's batch API."""
    raw: dict[str, Any] | None = None
    """The provider's response, as a dict."""
    attempts: int = 1
    """HTTP attempts made for this completion (transport retries included)."""

    @property
    def answer(self) -> str:
        """The text holding the structured answer: tool arguments when present, else the content."""
        if self.tool_args:
            return self.tool_args
        return self.text or ""


@dataclass
class UsageMeter:
    """Usage summed over every answered call of one judgement (re-asks and windows included)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None
    calls: int = 0
    price_unknown: bool = False
    cached_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    list_cost_usd: float | None = None
    batch_api: bool = False
    completions: list[Completion] = field(default_factory=list)

    def add(self, completion: Completion) -> None:
        """Count one answered call."""
        self.calls += 1
        self.input_tokens += completion.input_tokens
        self.output_tokens += completion.output_tokens
        self.cached_input_tokens += completion.cached_input_tokens
        self.cache_creation_input_tokens += completion.cache_creation_input_tokens
        self.batch_api = self.batch_api or completion.batch_api
        list_cost = completion.list_cost_usd if completion.list_cost_usd is not None else completion.cost_usd
        if list_cost is not None:
            self.list_cost_usd = (self.list_cost_usd or 0.0) + list_cost
        if completion.cost_usd is None:
            self.price_unknown = True
        else:
            self.cost_usd = (self.cost_usd or 0.0) + completion.cost_usd
        self.completions.append(completion)

    @property
    def total_cost(self) -> float | None:
        """Dollars spent, or ``None`` when any call's price was unknown (never a misleading 0)."""
        return None if self.price_unknown else self.cost_usd

    @property
    def total_list_cost(self) -> float | None:
        """Dollars at list price (no batch or cache discount), ``None`` when any call's price was unknown."""
        return None if self.price_unknown else self.list_cost_usd


SELF_HOSTED_PREFIXES = ("openai/", "hosted_vllm/", "llamafile/", "llama_cpp/")
"""Model prefixes that, behind a custom ``api_base``, are a self-hosted OpenAI-compatible server."""


def is_constrained(model: str, api_base: str | None, *, free: bool = False) -> bool:
    """True when the server turns ``json_schema`` into a grammar (llama.cpp, vLLM behind ``api_base``)."""
    return free or (api_base is not None and model.startswith(SELF_HOSTED_PREFIXES))


class Backend(Protocol):
    """What the judge needs from a model."""

    model: str
    constrained: bool
    """True when the server decodes with the answer schema as a grammar (llama.cpp, vLLM): a model
    then fills strings up to their ``maxLength``, so the judge sizes the caps to the output budget."""

    def resolve_mode(self, requested: StructuredOutput) -> Mode:
        """The structured-output mode to use first for ``requested`` (``auto`` resolved)."""
        ...

    def context_window(self) -> int | None:
        """Input tokens the model accepts, when known."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` for this model (an estimate when the tokenizer is unknown)."""
        ...

    async def complete(
        self, messages: list[dict[str, Any]], *, output: OutputSpec, mode: Mode, max_tokens: int
    ) -> Completion:
        """One completion, transport retries included.

        Raises:
            JudgeAPIError: the provider failed and retries could not help.
        """
        ...


