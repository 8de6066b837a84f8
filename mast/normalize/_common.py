"""Small helpers shared by the format modules (text flattening, arguments, timestamps, agents)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import orjson

from mast._json import canonical
from mast.trace import Agent, Step, ToolCall, ToolResult, Usage


def text_of(content: Any) -> str:
    """Flatten message content (a string, a list of parts, a dict) into readable text.

    Handles OpenAI content parts (``{"type": "text", "text": ...}``), Anthropic blocks, OTel GenAI
    parts (``{"type": "text", "content": ...}``) and falls back to compact JSON for anything else.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(t for t in (text_of(part) for part in content) if t)
    if isinstance(content, dict):
        for key in ("text", "content", "output_text", "thinking", "value"):
            value = content.get(key)
            if isinstance(value, str):
                return value
            if isinstance(value, list):
                return text_of(value)
        if content.get("type") in ("image_url", "image", "input_image"):
            return "[image]"
    return canonical(content)


def parse_arguments(value: Any) -> tuple[Any, str | None]:
    """Tool-call arguments parsed from JSON when they are a string: ``(arguments, raw_if_unparsed)``."""
    if isinstance(value, str):
        try:
            return orjson.loads(value), None
        except orjson.JSONDecodeError:
            return None, value
    return value, None


def tool_call(name: str, arguments: Any, call_id: str | None = None) -> ToolCall:
    """A :class:`ToolCall` with its arguments parsed."""
    parsed, raw = parse_arguments(arguments)
    return ToolCall(id=call_id, name=name or "?", arguments=parsed, arguments_raw=raw)


def tool_result(output: Any, call_id: str | None = None, *, name: str | None = None, is_error: bool = False) -> ToolResult:
    """A :class:`ToolResult` with its output flattened to text."""
    return ToolResult(call_id=call_id, name=name, output=text_of(output), is_error=is_error)


def parse_time(value: Any) -> datetime | None:
    """A UTC datetime from ISO text, epoch seconds/milliseconds/nanoseconds, or ``None``."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, int | float) or (isinstance(value, str) and value.isdigit()):
        number = float(value)
        if number > 1e17:
            number /= 1e9
        elif number > 1e14:
            number /= 1e6
        elif number > 1e11:
            number /= 1e3
        return datetime.fromtimestamp(number, tz=UTC)
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            return None
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return None


def usage_from(data: Any) -> Usage | None:
    """Token usage from the common spellings (OpenAI, Anthropic, OTel GenAI)."""
    if not isinstance(data, dict):
        return None
    def first(*keys: str) -> Any:
        for key in keys:
            value = data.get(key)
            if isinstance(value, int | float):
                return int(value)
        return None
    usage = Usage(
        input_tokens=first("input_tokens", "prompt_tokens", "gen_ai.usage.input_tokens", "promptTokens", "input"),
        output_tokens=first("output_tokens", "completion_tokens", "gen_ai.usage.output_tokens", "completionTokens", "output"),
        total_tokens=first("total_tokens", "totalTokens", "total"),
    )
    return usage if usage != Usage() else None


def agents_from_steps(steps: Iterable[Step], known: Iterable[Agent] = ()) -> list[Agent]:
    """Agents in order of first appearance: the ``known`` ones first, then any other step author.

    ``user``, ``tool`` and ``system`` authors are not agents.
    """
    agents = {a.name: a for a in known}
    for step in steps:
        name = step.agent
        if name and name not in agents and name.lower() not in ("user", "tool", "system", "human", "environment"):
            agents[name] = Agent(name=name, model=step.model)
    return list(agents.values())


def sum_usage(steps: Iterable[Step]) -> Usage | None:
    """Total usage over steps, or ``None`` when no step recorded any."""
    used = [step.usage for step in steps if step.usage is not None]
    if len(used) <= 1:
        return used[0] if used else None
    # what folding with Usage.__add__ gives, without building a model per step
    sums: list[Any] = [None, None, None, None]
    for usage in used:
        for position, value in enumerate((usage.input_tokens, usage.output_tokens, usage.total_tokens, usage.cost_usd)):
            if value is not None:
                sums[position] = value if sums[position] is None else sums[position] + value
    return Usage(input_tokens=sums[0], output_tokens=sums[1], total_tokens=sums[2], cost_usd=sums[3])


def leftover(data: dict[str, Any], used: Iterable[str]) -> dict[str, Any]:
    """The fields of ``data`` not in ``used``: what goes into ``metadata`` / ``attributes``."""
    skip = set(used)
    return {k: v for k, v in data.items() if k not in skip}


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a dict, else an empty one: for optional nested objects in source JSON."""
    return value if isinstance(value, dict) else {}
