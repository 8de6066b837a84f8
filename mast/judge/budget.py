"""The judge's arithmetic: tokens a call takes, how much context there is, what it will cost.

Everything here counts; nothing calls the model.

- :class:`TokenCounter` counts a conversation the way the judge sends it (system prompts and
  answer schemas counted once per model, then remembered).
- :func:`most_tokens` is an upper bound without a tokenizer (a token covers at least one byte).
- :func:`context_of` is the model's context window, or :data:`DEFAULT_CONTEXT_WINDOW` with a
  warning; :func:`usable` is the share of it the judge fills (:data:`CONTEXT_SAFETY`).
- :func:`answer_limits` sizes the answer schema's caps to the output budget on servers that decode
  with a grammar.
- :func:`price` turns tokens into dollars from the backend's price table.
- :func:`estimate` is what judging a trace is expected to take before any call
  (:class:`CostEstimate`; :meth:`mast.judge.Judge.estimate` calls it).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import orjson

from mast.judge.chunking import Window, WindowTooSmall, plan_windows
from mast.judge.config import JudgeConfig, StructuredOutput
from mast.judge.material import Material
from mast.judge.messages import build_aggregate, build_single, build_window, fence_for
from mast.judge.prompt import PromptSet
from mast.judge.protocol import Backend
from mast.judge.schema import FULL_LIMITS, Limits, OutputSpec, limits_for, worst_case_tokens

DEFAULT_CONTEXT_WINDOW = 32_768
"""Context assumed for a model litellm does not know (with a warning); ``--context-window`` overrides."""
CONTEXT_SAFETY = 0.9
"""Share of the context window used: token counts of unknown tokenizers are estimates."""
MIN_WINDOW_TOKENS = 256
"""Below this much room for steps per window, a trace is unjudgeable with this model."""
MESSAGE_OVERHEAD_TOKENS = 16
"""Tokens a chat template adds around each message."""
MAX_TOKEN_SLACK = 8
"""Tokens a tokenizer may add to a message beyond one per UTF-8 byte (special tokens, a leading marker)."""
ANSWER_TOKENS = 1_500
"""Typical tokens of a full diagnosis answer (14 verdicts with evidence and a summary), for estimates."""
WINDOW_ANSWER_TOKENS = 600
"""Typical tokens of one window's findings in the chunked strategy, for estimates."""
NOTE_TOKENS_PER_WINDOW = 200
"""Typical tokens one window's findings add to the aggregation prompt, for estimates."""


@dataclasses.dataclass(frozen=True)
class CostEstimate:
    """What judging one trace is expected to take, before any call (see :meth:`mast.judge.Judge.estimate`)."""

    input_tokens: int
    output_tokens: int
    """Assumes answers of a typical size (:data:`ANSWER_TOKENS`): their real length is known only afterwards."""
    cost_usd: float | None
    """``None`` when the model's price is unknown."""


class TokenCounter:
    """Counts conversations for one judge; texts every judgement sends are counted once per model."""

    def __init__(self, structured_output: StructuredOutput) -> None:
        self.structured_output = structured_output
        self._static: dict[tuple[str, str], int] = {}

    def static(self, backend: Backend, text: str) -> int:
        """Tokens of a text every judgement sends (system prompts, schemas): counted once per model."""
        key = (backend.model, text)
        if key not in self._static:
            self._static[key] = backend.count_tokens(text)
        return self._static[key]

    def messages(self, backend: Backend, messages: list[dict[str, Any]]) -> int:
        """Tokens of a conversation: each message's content plus the chat template's overhead."""
        total = 0
        for message in messages:
            text = str(message.get("content") or "")
            count = self.static(backend, text) if message.get("role") == "system" else backend.count_tokens(text)
            total += count + MESSAGE_OVERHEAD_TOKENS
        return total

    def schema(self, backend: Backend, spec: OutputSpec) -> int:
        """Context the answer schema takes: in the prompt (JSON mode) or as a tool definition."""
        if backend.resolve_mode(self.structured_output) == "json_schema":
            return 0  # a response format (a grammar on llama.cpp) is not part of the prompt
        return self.static(backend, orjson.dumps(spec.schema).decode()) + MESSAGE_OVERHEAD_TOKENS


def most_tokens(messages: list[dict[str, Any]]) -> int:
    """An upper bound of :meth:`TokenCounter.messages` without a tokenizer: a token covers at least one UTF-8 byte."""
    return sum(
        len(str(m.get("content") or "").encode("utf-8", "surrogatepass")) + MAX_TOKEN_SLACK + MESSAGE_OVERHEAD_TOKENS
        for m in messages
    )


def context_of(backend: Backend, warnings: list[str] | None = None) -> int:
    """The model's context window; :data:`DEFAULT_CONTEXT_WINDOW` (noted in ``warnings``) when unknown."""
    context = backend.context_window()
    if context is not None:
        return context
    if warnings is not None:
        warnings.append(
            f"context window of {backend.model} unknown: assuming {DEFAULT_CONTEXT_WINDOW} tokens (set --context-window)"
        )
    return DEFAULT_CONTEXT_WINDOW


def usable(context: int) -> int:
    """Tokens of ``context`` the judge fills (prompt and answer together)."""
    return int(context * CONTEXT_SAFETY)


def answer_limits(backend: Backend, out: int, n_modes: int, warnings: list[str]) -> Limits:
    """Schema caps: sized to the output budget when the server decodes with a grammar."""
    if not getattr(backend, "constrained", False):
        return FULL_LIMITS
    limits = limits_for(out, n_modes)
    worst = max(worst_case_tokens(limits, n_modes))
    if worst > out:
        warnings.append(f"max_output_tokens {out} may cut a grammar-constrained answer (up to ~{worst} tokens); raise it")
    return limits


def price(backend: Backend, input_tokens: int, output_tokens: int) -> float | None:
    """Dollars for this many tokens from the backend's price table; ``None`` when it cannot say."""
    if getattr(backend, "free", False):
        return 0.0
    estimate_cost = getattr(backend, "estimate_cost", None)
    if estimate_cost is None:
        return None
    cost = estimate_cost(input_tokens, output_tokens)
    return None if cost is None or math.isnan(cost) else float(cost)


def estimate(
    material: Material, *, backend: Backend, config: JudgeConfig, prompts: PromptSet, counter: TokenCounter,
    answer_tokens: int | None = None,
) -> CostEstimate:
    """Tokens and dollars judging ``material`` is expected to take, without calling the model.

    Mirrors the single / chunked decision of :mod:`mast.judge.strategy` and counts the prompt as
    it would be sent. Answers are assumed to be ``answer_tokens`` long (what this judge's answers
    were, when known), else of a typical size. 0 tokens for a trace too long for the model
    (nothing would be sent).
    """
    fence = fence_for(material)
    out_cap = config.max_output_tokens
    answer = min(answer_tokens or ANSWER_TOKENS, out_cap)
    single = counter.messages(backend, build_single(prompts, material, fence))
    limit = usable(context_of(backend))
    if single + out_cap <= limit:
        return CostEstimate(single, answer, price(backend, single, answer))
    empty = Window(first=0, last=0, text="", tokens=0)
    frame = counter.messages(backend, build_window(prompts, material, fence, empty, 1, 1))
    room = limit - out_cap - frame
    try:
        if room < MIN_WINDOW_TOKENS:
            raise WindowTooSmall("no room")
        windows = plan_windows(material.blocks, backend.count_tokens, budget=room, overlap_tokens=room // 8)
    except WindowTooSmall:
        return CostEstimate(0, 0, 0.0)  # unjudgeable with this model: nothing will be sent
    aggregate = counter.messages(backend, build_aggregate(prompts, material, "", len(windows)))
    aggregate += NOTE_TOKENS_PER_WINDOW * len(windows)
    input_tokens = sum(frame + w.tokens for w in windows) + aggregate
    output_tokens = len(windows) * min(WINDOW_ANSWER_TOKENS, out_cap) + answer
    return CostEstimate(input_tokens, output_tokens, price(backend, input_tokens, output_tokens))
