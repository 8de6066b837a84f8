"""Harbor's Agent Trajectory Interchange Format (ATIF): the ``trajectory.json`` a Harbor / Terminal-Bench run writes.

One JSON object: ``schema_version`` (``"ATIF-v1.x"``), ``session_id``, ``agent`` (``name``, ``version``,
``model_name``), ``steps`` and optional ``final_metrics``, ``notes`` and ``extra``. Each step has a
``step_id``, a ``source`` (``system`` / ``user`` / ``agent``), a ``message`` (text, or content parts
from v1.6), and for agent steps ``reasoning_content``, ``tool_calls`` (``tool_call_id``,
``function_name``, ``arguments``), ``observation.results`` (``source_call_id``, ``content``) and
``metrics`` (``prompt_tokens``, ``completion_tokens``, ``cost_usd``). A step's results follow its
message as tool steps, paired with the calls by ``source_call_id`` (in order when a writer left it out
and gave one result per call).

ATIF has no error flag on a result: one is marked as an error only when its writer says so
(``is_error`` on the result, or ``is_error`` / ``status: "error"`` in its ``extra``).

Example:
    >>> from mast.normalize import load_trace
    >>> t = load_trace({"schema_version": "ATIF-v1.6", "session_id": "s1", "agent": {"name": "terminus-2", "version": "2"},
    ...   "steps": [{"step_id": 1, "source": "user", "message": "Count the files"},
    ...             {"step_id": 2, "source": "agent", "message": "There are 3."}]})
    >>> t.source.format, t.task, t.final_output, [s.agent for s in t.steps]
    ('atif', 'Count the files', 'There are 3.', ['user', 'terminus-2'])
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict, leftover, parse_time, text_of, tool_call
from mast.normalize._messages import Msg
from mast.normalize._sniff import sniffed_json
from mast.normalize._timeline import Timeline
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Agent, ToolResult, Trace, Usage

_SOURCES = frozenset({"system", "user", "agent"})
_STEP_KEYS = (
    "step_id",
    "timestamp",
    "source",
    "message",
    "reasoning_content",
    "tool_calls",
    "observation",
    "metrics",
    "model_name",
)


def is_trajectory(value: Any) -> bool:
    """An ATIF root: an ``ATIF-`` schema version and a list of steps."""
    if not isinstance(value, dict) or not isinstance(value.get("steps"), list):
        return False
    version = value.get("schema_version")
    return isinstance(version, str) and version.upper().startswith("ATIF-")


def _usage(metrics: Any) -> Usage | None:
    metrics = as_dict(metrics)
    numbers = {k: metrics.get(k) for k in ("prompt_tokens", "completion_tokens", "cost_usd")}
    if all(not isinstance(v, int | float) for v in numbers.values()):
        return None
    prompt, completion, cost = numbers["prompt_tokens"], numbers["completion_tokens"], numbers["cost_usd"]
    return Usage(
        input_tokens=int(prompt) if isinstance(prompt, int | float) else None,
        output_tokens=int(completion) if isinstance(completion, int | float) else None,
        cost_usd=float(cost) if isinstance(cost, int | float) else None,
    )


def _failed(result: dict[str, Any]) -> bool:
    extra = as_dict(result.get("extra"))
    return bool(result.get("is_error") or extra.get("is_error") or extra.get("status") == "error")


def _trace(data: dict[str, Any], raw: RawInput, fmt: TraceFormat) -> Trace:
    agent_info = as_dict(data.get("agent"))
    name = str(agent_info.get("name") or "agent")
    default_model = agent_info.get("model_name") if isinstance(agent_info.get("model_name"), str) else None
    timeline = Timeline(default_agent=name)
    warnings: list[str] = []
    times = []
    for position, step in enumerate(data["steps"]):
        ref = f"/steps/{position}"
        if not isinstance(step, dict) or step.get("source") not in _SOURCES:
            warnings.append(f"step {position}: not an ATIF step (no source system/user/agent): skipped")
            continue
        when = parse_time(step.get("timestamp"))
        if when:
            times.append(when)
        fields: dict[str, Any] = {
            "started_at": when,
            "source_ref": ref,
            "id": str(step["step_id"]) if "step_id" in step else None,
            "attributes": leftover(step, _STEP_KEYS),
        }
        text = text_of(step.get("message"))
        source = step["source"]
        if source != "agent":
            timeline.add(Msg(role=source, text=text), **fields)
            continue
        calls = [
            tool_call(
                str(c.get("function_name") or "?"),
                c.get("arguments"),
                str(c["tool_call_id"]) if c.get("tool_call_id") else None,
            )
            for c in step.get("tool_calls") or []
            if isinstance(c, dict)
        ]
        model = step.get("model_name") if isinstance(step.get("model_name"), str) else default_model
        reasoning = text_of(step.get("reasoning_content"))
        timeline.add(
            Msg(
                role="assistant",
                text=text,
                reasoning=reasoning,
                tool_calls=calls,
                model=model,
                usage=_usage(step.get("metrics")),
            ),
            **fields,
        )
        results = [r for r in as_dict(step.get("observation")).get("results") or [] if isinstance(r, dict)]
        for number, result in enumerate(results):
            call_id = result.get("source_call_id")
            if not call_id and len(results) == len(calls) and calls[number].id:
                call_id = calls[number].id  # no source_call_id: one result per call, in order
            output = ToolResult(
                call_id=str(call_id) if call_id else None,
                output=text_of(result.get("content")),
                is_error=_failed(result),
            )
            extra = leftover(result, ("source_call_id", "content", "is_error"))
            timeline.add(
                Msg(role="tool", tool_results=[output]),
                started_at=when,
                source_ref=f"{ref}/observation/results/{number}",
                attributes=extra,
            )
    if not timeline.steps:
        raise raw.fail("ATIF trajectory holds no steps with a message, tool call or result")
    final = as_dict(data.get("final_metrics"))
    total = None
    if any(
        isinstance(final.get(k), int | float)
        for k in ("total_prompt_tokens", "total_completion_tokens", "total_cost_usd")
    ):
        total = Usage(
            input_tokens=final.get("total_prompt_tokens")
            if isinstance(final.get("total_prompt_tokens"), int)
            else None,
            output_tokens=final.get("total_completion_tokens")
            if isinstance(final.get("total_completion_tokens"), int)
            else None,
            cost_usd=float(final["total_cost_usd"])
            if isinstance(final.get("total_cost_usd"), int | float)
            else None,
        )
    metadata: dict[str, Any] = {"schema_version": data.get("schema_version"), "agent": agent_info}
    metadata.update(
        {
            k: v
            for k, v in data.items()
            if k in ("notes", "extra", "final_metrics") and v not in (None, {}, "")
        }
    )
    return assemble_trace(
        timeline.steps,
        source=fmt.source(raw, variant=str(data.get("schema_version"))),
        timeline=timeline,
        known_agents=[Agent(name=name, role="agent (ATIF trajectory)", model=default_model)],
        usage=total,
        warnings=warnings,
        trace_id=str(data.get("session_id") or ""),
        framework="harbor",
        started_at=min(times) if times else None,
        ended_at=max(times) if times else None,
        metadata=metadata,
    )


class AtifFormat(TraceFormat):
    """Harbor ATIF trajectory: one run per file."""

    name = "atif"
    description = "Harbor Agent Trajectory Interchange Format (ATIF trajectory.json: Harbor, Terminal-Bench)"
    priority = 22
    example = '{"schema_version": "ATIF-v1.6", "session_id": "...", "agent": {"name": "..."}, "steps": [{"step_id": 1, "source": "user", "message": "..."}]}'

    def detect(self, raw: RawInput) -> float:
        """0.97 for an object with an ``ATIF-`` schema version and a list of steps."""
        data = sniffed_json(raw, '"ATIF-', '"atif-')
        return 0.97 if is_trajectory(data) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per trajectory file."""
        data = raw.data()
        if not is_trajectory(data):
            raise raw.fail("not an ATIF trajectory (needs schema_version 'ATIF-v1.x' and a steps list)")
        yield _trace(data, raw, self)


register(AtifFormat())
