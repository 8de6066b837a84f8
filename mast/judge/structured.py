"""Ask for a structured answer and re-ask, bounded, until it validates.

One :func:`ask` sends the messages in a structured-output mode, parses the answer with the output
model and, when the answer is not valid (bad JSON, wrong shape, modes left out, cut off at the token
limit), sends the validation error back and asks again, at most ``max_reasks`` times. In ``auto``
mode a provider that rejects the mode itself (HTTP 400) is asked again in the next mode:
``json_schema`` -> ``tool`` -> ``json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from mast.errors import JudgeAPIError, JudgeOutputError
from mast.judge.config import StructuredOutput
from mast.judge.protocol import Backend, Completion, Mode, UsageMeter
from mast.judge.schema import AnswerInvalid, OutputSpec, parse_answer
from mast.taxonomy import Taxonomy

_FALLBACKS: dict[Mode, list[Mode]] = {"json_schema": ["tool", "json"], "tool": ["json"], "json": []}
_MODE_REJECTED = (400, 422)
REASK_ECHO_MAX_CHARS = 2_000
"""A previous answer longer than this is not repeated in the re-ask (it would crowd the context)."""


@dataclass
class Answer:
    """A validated answer and how it was obtained."""

    value: BaseModel
    """The parsed answer."""
    mode: Mode
    """The structured-output mode that produced it."""
    attempts: int
    """Answered calls made for it (re-asks included)."""
    notes: list[str] = field(default_factory=list)
    """What was tolerated or retried, for the diagnosis' warnings."""


def _reask_messages(
    messages: list[dict[str, Any]], completion: Completion, problem: str, output: OutputSpec
) -> list[dict[str, Any]]:
    previous = completion.answer
    if len(previous) > REASK_ECHO_MAX_CHARS:
        previous = f"(an answer of {len(previous)} characters, not repeated here)"
    return [
        *messages,
        {"role": "assistant", "content": previous or "(empty answer)"},
        {
            "role": "user",
            "content": f"Your previous answer was not valid: {problem}. Reply again with the complete "
            f"JSON object of the schema `{output.name}` and nothing else. Keep text fields short.",
        },
    ]


async def ask(
    backend: Backend,
    messages: list[dict[str, Any]],
    *,
    output: OutputSpec,
    taxonomy: Taxonomy,
    structured_output: StructuredOutput,
    max_reasks: int,
    max_tokens: int,
    meter: UsageMeter,
    max_tokens_cap: int | None = None,
) -> Answer:
    """Get one valid answer of shape ``output``.

    Args:
        backend: the model.
        messages: the conversation (static system part first, trace part last).
        output: the expected answer.
        taxonomy: for code normalisation while parsing.
        structured_output: requested mode; ``auto`` may fall back to other modes.
        max_reasks: re-asks allowed after the first answer.
        max_tokens: output token limit of the first call.
        meter: receives the usage of every answered call.
        max_tokens_cap: the most tokens a re-ask after a cut-off answer may ask for.

    Raises:
        JudgeOutputError: no valid answer after the re-asks (carries attempts and the last answer).
        JudgeAPIError: the provider failed.
    """
    mode: Mode = backend.resolve_mode(structured_output)
    fallbacks = list(_FALLBACKS[mode]) if structured_output == "auto" else []
    conversation = messages
    tokens = max_tokens
    notes: list[str] = []
    last: Completion | None = None
    problem = ""
    answered_in_mode = 0
    attempt = 0
    while attempt <= max_reasks:
        try:
            completion = await backend.complete(conversation, output=output, mode=mode, max_tokens=tokens)
        except JudgeAPIError as exc:
            if answered_in_mode == 0 and fallbacks and exc.status_code in _MODE_REJECTED:
                notes.append(f"{mode} output rejected by the provider (HTTP {exc.status_code}); using {fallbacks[0]}")
                mode = fallbacks.pop(0)
                continue
            raise
        meter.add(completion)
        answered_in_mode += 1
        last = completion
        final_try = attempt == max_reasks
        if completion.finish_reason == "length":
            problem = f"it was cut off at the output limit of {tokens} tokens (finish_reason length); be briefer"
            if max_tokens_cap:
                tokens = min(max_tokens_cap, int(tokens * 1.5))
        else:
            try:
                value, parse_notes = parse_answer(completion.answer, output, taxonomy, require_all=not final_try)
            except AnswerInvalid as exc:
                problem = str(exc)
            else:
                if attempt:
                    notes.append(f"valid answer after {attempt} re-ask{'s' if attempt > 1 else ''}")
                return Answer(value=value, mode=mode, attempts=attempt + 1, notes=notes + parse_notes)
        notes.append(f"answer {attempt + 1} invalid: {problem}")
        conversation = _reask_messages(messages, completion, problem, output)
        attempt += 1
    raise JudgeOutputError(
        f"{backend.model}: no valid {output.name} answer after {attempt} attempt{'s' if attempt != 1 else ''}; "
        f"last problem: {problem}",
        n_attempts=attempt,
        last_completion=last.answer if last else None,
    )
