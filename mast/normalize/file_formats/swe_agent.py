"""SWE-agent ``.traj`` files: v1.x (function calling), v0.7 (text actions) and history-only demos.

A ``.traj`` is one JSON object. ``history`` is the conversation the model saw (``role``,
``content``, ``agent``, ``message_type`` of ``system_prompt`` / ``observation`` / ``action``, and in
v1.x OpenAI ``tool_calls`` / ``tool_call_ids``); ``trajectory`` is one entry per executed action
(``response``, ``thought``, ``action``, ``observation``, ``state``); ``info`` holds the submission
(the final patch), ``exit_status`` and ``model_stats``.

Steps come from ``history``; actions that ``trajectory`` records beyond the end of the history
(SWE-agent does not append the final observation, e.g. ``submit``) are added from there. v0.7
actions have no call ids, so each action gets one (``action-<n>``) to pair it with the observation
that follows it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

import orjson

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict, leftover, text_of, tool_call
from mast.normalize._readable import TERMINAL_TOOLS
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Agent, SourceInfo, Step, ToolResult, Trace, Usage

_HISTORY_KEYS = ("role", "content", "agent", "message_type", "thought", "action", "tool_calls", "tool_call_ids")


def _is_traj(data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    history = data.get("history")
    if isinstance(history, list) and history and isinstance(history[0], dict) and "message_type" in history[0]:
        return True
    trajectory = data.get("trajectory")
    return (
        isinstance(trajectory, list)
        and bool(trajectory)
        and isinstance(trajectory[0], dict)
        and "observation" in trajectory[0]
        and "action" in trajectory[0]
    )


def _command_name(action: str) -> str:
    """The command word of a text action (``edit 1:1 ...`` -> ``edit``)."""
    words = action.strip().split(None, 1)
    return words[0] if words else "action"


def _text_action_call(action: str, call_id: str) -> Any:
    return tool_call(_command_name(action), {"command": action.strip()}, call_id)


class _TrajBuilder:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.steps: list[Step] = []
        self.pending: list[str] = []
        self.agents: dict[str, Agent] = {}
        self.task: str | None = None
        self.actions_in_history = 0
        self.call_names: dict[str, str] = {}

    def _add(self, step: Step) -> None:
        step.index = len(self.steps)
        self.steps.append(step)

    def history(self, history: list[Any]) -> None:
        for position, entry in enumerate(history):
            if not isinstance(entry, dict):
                continue
            ref = f"/history/{position}"
            role = entry.get("role")
            agent = str(entry.get("agent") or "main")
            text = text_of(entry.get("content"))
            kind = entry.get("message_type")
            extra = leftover(entry, _HISTORY_KEYS)
            if kind == "system_prompt" or role == "system":
                self.agents.setdefault(agent, Agent(name=agent, role="autonomous programmer (SWE-agent)", system_prompt=text))
                self._add(Step(index=0, kind="system", agent="system", role="system", recipient=agent, content=text, source_ref=ref, attributes=extra))
            elif role == "assistant":
                self._action(entry, agent, text, ref, extra)
            elif role == "tool" or (role == "user" and self.pending):
                self._observation(entry, text, ref, extra)
            else:
                if self.task is None and not entry.get("is_demo"):
                    self.task = text
                self._add(Step(index=0, kind="message", agent="user", role="user", recipient=agent, content=text, source_ref=ref, attributes=extra))

    def _action(self, entry: dict[str, Any], agent: str, text: str, ref: str, extra: dict[str, Any]) -> None:
        self.agents.setdefault(agent, Agent(name=agent, role="autonomous programmer (SWE-agent)"))
        calls = []
        for raw_call in entry.get("tool_calls") or []:
            function = raw_call.get("function") or {}
            calls.append(tool_call(str(function.get("name") or "?"), function.get("arguments"), raw_call.get("id")))
        action = entry.get("action")
        if not calls and isinstance(action, str) and action.strip():
            calls.append(_text_action_call(action, f"action-{self.actions_in_history}"))
        self.actions_in_history += 1
        self.pending = [c.id for c in calls if c.id]
        self.call_names.update({c.id: c.name for c in calls if c.id})
        thought = entry.get("thought")
        content = thought if isinstance(thought, str) and thought.strip() else text
        if isinstance(action, str) and entry.get("tool_calls"):
            extra = {**extra, "action": action}
        self._add(Step(index=0, kind="tool_call" if calls else "message", agent=agent, role="assistant", content=content, tool_calls=calls, source_ref=ref, attributes=extra))

    def _observation(self, entry: dict[str, Any], text: str, ref: str, extra: dict[str, Any]) -> None:
        ids = [str(i) for i in entry.get("tool_call_ids") or []] or self.pending[:1]
        results = [ToolResult(call_id=call_id, name=self.call_names.get(call_id), output=text) for call_id in ids] or [ToolResult(output=text)]
        self.pending = [p for p in self.pending if p not in ids]
        self._add(Step(index=0, kind="tool_result", agent="environment", role="tool" if entry.get("role") == "tool" else "user", content="", tool_results=results, source_ref=ref, attributes=extra))

    def trajectory_tail(self, trajectory: list[Any], agent: str) -> None:
        """Add the executed actions the history does not hold (the last one, usually)."""
        last = self.actions_in_history - 1
        if self.pending and 0 <= last < len(trajectory) and isinstance(trajectory[last], dict):
            # The history ends on an action whose observation only the trajectory recorded.
            output = text_of(trajectory[last].get("observation"))
            results = [ToolResult(call_id=call_id, name=self.call_names.get(call_id), output=output) for call_id in self.pending]
            self.pending = []
            self._add(Step(index=0, kind="tool_result", agent="environment", role="tool", tool_results=results, source_ref=f"/trajectory/{last}/observation"))
        for position in range(self.actions_in_history, len(trajectory)):
            entry = trajectory[position]
            if not isinstance(entry, dict):
                continue
            action = str(entry.get("action") or "")
            call = _text_action_call(action, f"trajectory-{position}")
            extra = leftover(entry, ("response", "thought", "action", "observation"))
            self._add(Step(index=0, kind="tool_call", agent=agent, role="assistant", content=text_of(entry.get("thought") or entry.get("response")), tool_calls=[call], source_ref=f"/trajectory/{position}", attributes=extra))
            self._add(Step(index=0, kind="tool_result", agent="environment", role="tool", tool_results=[ToolResult(call_id=call.id, name=call.name, output=text_of(entry.get("observation")))], source_ref=f"/trajectory/{position}/observation"))


def _usage(stats: Any) -> Usage | None:
    if not isinstance(stats, dict) or not stats.get("api_calls"):
        return None  # replayed demonstrations carry all-zero stats: unknown, not free
    cost = stats.get("instance_cost")
    return Usage(input_tokens=stats.get("tokens_sent"), output_tokens=stats.get("tokens_received"), cost_usd=float(cost) if isinstance(cost, int | float) else None)


def _state(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return orjson.loads(value)
        except orjson.JSONDecodeError:
            return value
    return value


def _closing_words(steps: list[Step]) -> str | None:
    """What the agent said with its last action when that action ends the run (``submit``, ``exit``...)."""
    for step in reversed(steps):
        if step.role != "assistant":
            continue
        if step.tool_calls and all(c.name.lower() in TERMINAL_TOOLS for c in step.tool_calls):
            return step.content.strip() or None
        return None
    return None


def parse_traj(data: dict[str, Any], source: SourceInfo) -> Trace:
    """One :class:`Trace` from a parsed ``.traj`` object."""
    builder = _TrajBuilder(data)
    history = data.get("history")
    trajectory: list[Any] = data["trajectory"] if isinstance(data.get("trajectory"), list) else []
    if isinstance(history, list):
        builder.history(history)
    agent = next(iter(builder.agents), "main")
    builder.trajectory_tail(trajectory, agent)
    if not builder.steps:
        raise TraceFormatError("SWE-agent trajectory has neither history messages nor trajectory steps", path=source.path)
    info = as_dict(data.get("info"))
    replay = _state(data.get("replay_config"))  # a JSON string in some versions
    replay = replay if isinstance(replay, dict) else {}
    agent_config = as_dict(replay.get("agent"))
    model_config = as_dict(agent_config.get("model"))
    model = model_config.get("name") if isinstance(model_config.get("name"), str) else None
    agents = list(builder.agents.values()) or [Agent(name=agent, role="autonomous programmer (SWE-agent)")]
    for a in agents:
        a.model = a.model or model
    for step in builder.steps:
        if step.role == "assistant":
            step.model = model
    exit_status = info.get("exit_status")
    status: Literal["ok", "error", "unknown"] = "unknown"
    if isinstance(exit_status, str) and exit_status:
        status = "ok" if exit_status.startswith("submitted") else "error"
    problem = as_dict(replay.get("problem_statement"))
    metadata: dict[str, Any] = leftover(data, ("history", "trajectory", "info"))
    metadata["info"] = leftover(info, ("submission",))
    metadata["states"] = [_state(e.get("state")) for e in trajectory if isinstance(e, dict) and "state" in e]
    submission = info.get("submission")
    final = submission.strip("\n") if isinstance(submission, str) and submission.strip() else None
    closing = _closing_words(builder.steps)
    if closing and final and closing not in final:
        final = f"{closing}\n\n{final}"  # the submit action is the answer: its words, then what it submitted
    elif closing and not final:
        final = closing
    return assemble_trace(
        builder.steps,
        source=source,
        known_agents=agents,
        task=builder.task or (problem.get("text") if isinstance(problem.get("text"), str) else None),
        final_output=final,
        usage=_usage(info.get("model_stats")),
        derive_task=False,
        derive_final_output=False,
        derive_usage=False,
        derive_agents=False,
        trace_id=str(problem.get("id") or ""),
        framework="swe-agent",
        status=status,
        error=exit_status if status == "error" else None,
        metadata=metadata,
    )


class SweAgentTraj(TraceFormat):
    """SWE-agent ``.traj``: one run per file."""

    name = "swe_agent"
    description = "SWE-agent .traj (v1.x function calling, v0.7 text actions, history-only demonstrations)"
    priority = 72
    example = '{"history": [{"role", "content", "message_type"}], "trajectory": [{"action", "observation", "thought"}], "info": {...}} (.traj)'

    def detect(self, raw: RawInput) -> float:
        """Sniff the head, then check the parsed shape."""
        if raw.path is not None:
            head = raw.head.lstrip("\ufeff").lstrip()
            if not head.startswith("{"):
                return 0.0
            if '"message_type"' not in head and '"observation"' not in head:
                return 0.0
        try:
            data = raw.data()
        except TraceFormatError:
            return 0.0
        if not _is_traj(data):
            return 0.0
        return 0.97 if raw.path is not None and raw.path.suffix == ".traj" else 0.9

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the run(s) in ``raw``."""
        data = raw.data()
        if not _is_traj(data):
            raise raw.fail("not a SWE-agent trajectory (needs history[*].message_type or trajectory[*].action/observation)")
        yield parse_traj(data, self.source(raw))


register(SweAgentTraj())
