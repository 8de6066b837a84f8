"""OpenHands event streams: exported trajectories and evaluation / resolver ``output.jsonl`` records.

A trajectory is a list of events. An *action* (``{"action": "run", "args": {...}, "source": "agent"}``)
is something the user or agent did; an *observation* (``{"observation": "run", "content": ...,
"extras": {...}, "cause": <action id>}``) is what came back. Function-calling agents add
``tool_call_metadata`` (``function_name``, ``tool_call_id`` and the raw LiteLLM ``model_response``),
which pairs an observation with its action; older events have neither ids nor ``args`` (their
fields sit at the top level), and are paired in order.

Resolver and evaluation outputs hold one run per JSON line: ``instruction``, ``history`` (the event
list), the final ``git_patch`` and grading fields (``success``, ``result_explanation``,
``test_result``), which are kept as labels so they never reach a judge.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any, Literal

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict, parse_time, sum_usage, text_of, tool_call, usage_from
from mast.normalize._sniff import sniffed_json
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.trace import Agent, SourceInfo, Step, ToolCall, ToolResult, Trace, Usage

_EVENT_KEYS = ("id", "timestamp", "source", "message", "action", "observation", "args", "extras", "content", "cause", "tool_call_metadata", "llm_metrics")
_QUIET_OBSERVATIONS = frozenset({"null", "agent_state_changed", "recall"})
_GRADES = ("success", "result_explanation", "comment_success", "test_result", "report", "resolved")


def _is_event(value: Any) -> bool:
    return isinstance(value, dict) and ("action" in value or "observation" in value)


def _is_event_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_is_event(v) for v in value[:5])


def _is_run_record(value: Any) -> bool:
    return isinstance(value, dict) and _is_event_list(value.get("history"))


def _args(event: dict[str, Any]) -> dict[str, Any]:
    """The action's arguments (``args``, or the loose top-level fields of older events)."""
    if isinstance(event.get("args"), dict):
        return as_dict(event["args"])
    return {k: v for k, v in event.items() if k not in _EVENT_KEYS}


def _extras(event: dict[str, Any]) -> dict[str, Any]:
    if isinstance(event.get("extras"), dict):
        return as_dict(event["extras"])
    return {k: v for k, v in event.items() if k not in _EVENT_KEYS}


def _exit_code(extras: dict[str, Any]) -> int | None:
    meta = extras.get("metadata")
    for value in (extras.get("exit_code"), meta.get("exit_code") if isinstance(meta, dict) else None):
        if isinstance(value, int) and value != -1:
            return value
    return None


class _Events:
    """Turns an event list into steps, pairing each observation with its action."""

    def __init__(self, agent_name: str) -> None:
        self.agent_name = agent_name
        self.steps: list[Step] = []
        self.task: str | None = None
        self.final: str | None = None
        self.status: Literal["ok", "error", "unknown"] = "unknown"
        self.error: str | None = None
        self.models: list[str] = []
        self.system_prompt: str | None = None
        self.skipped: Counter[str] = Counter()
        self.call_of_action: dict[Any, ToolCall] = {}
        self.pending: list[ToolCall] = []
        self.responses_seen: set[str] = set()

    def _add(self, step: Step) -> None:
        step.index = len(self.steps)
        self.steps.append(step)

    def read(self, events: list[Any], prefix: str) -> None:
        for position, event in enumerate(events):
            ref = f"{prefix}/{position}"
            if not isinstance(event, dict):
                self.skipped["not an event"] += 1
            elif "action" in event:
                self._action(event, ref, position)
            elif "observation" in event:
                self._observation(event, ref)

    def _llm(self, event: dict[str, Any]) -> tuple[str | None, Usage | None, dict[str, Any] | None]:
        """Model, usage (once per model response) and the raw tool call of a function-calling event."""
        meta = event.get("tool_call_metadata")
        if not isinstance(meta, dict):
            return None, None, None
        response = as_dict(meta.get("model_response"))
        model = response.get("model") if isinstance(response.get("model"), str) else None
        if model and model not in self.models:
            self.models.append(model)
        usage = None
        response_id = str(response.get("id") or "")
        if response_id and response_id not in self.responses_seen:
            self.responses_seen.add(response_id)
            usage = usage_from(response.get("usage"))
        raw_call = None
        for choice in response.get("choices") or []:
            for call in (choice.get("message") or {}).get("tool_calls") or []:
                if isinstance(call, dict) and call.get("id") == meta.get("tool_call_id"):
                    raw_call = call
        return model, usage, raw_call

    def _action(self, event: dict[str, Any], ref: str, position: int) -> None:
        action = str(event.get("action"))
        args = _args(event)
        source = str(event.get("source") or ("user" if action == "message" and not self.steps else "agent"))
        who = "user" if source == "user" else (self.agent_name if source == "agent" else source)
        when = parse_time(event.get("timestamp"))
        model, usage, raw_call = self._llm(event)
        meta = as_dict(event.get("tool_call_metadata"))
        thought = text_of(args.get("thought")) if args.get("thought") else ""
        extra = {k: v for k, v in args.items() if k not in ("thought", "content")}
        common: dict[str, Any] = {"id": str(event["id"]) if "id" in event else None, "agent": who, "started_at": when, "model": model, "usage": usage, "source_ref": ref}
        if action == "message":
            text = text_of(args.get("content") or event.get("content")) or text_of(event.get("message"))
            if who == "user" and self.task is None:
                self.task = text
            self._add(Step(index=0, kind="message", role="user" if who == "user" else "assistant", content=text, attributes=extra, **common))
        elif action == "system":
            text = text_of(args.get("content")) or text_of(event.get("message"))
            self.system_prompt = self.system_prompt or text
            self._add(Step(index=0, kind="system", role="system", content=text, attributes=extra, **common))
        elif action == "finish":
            text = text_of(args.get("final_thought")) or thought or text_of(event.get("message")) or text_of(args.get("outputs"))
            self.final = text
            self.status = "ok"
            # The finish action is the agent's last tool call (function calling names it) and its answer.
            arguments = {k: v for k, v in args.items() if k in ("final_thought", "message", "outputs", "task_completed") and v not in (None, "", {})}
            call = tool_call(str(meta.get("function_name") or "finish"), arguments, str(meta.get("tool_call_id") or f"event-{event.get('id', position)}"))
            self._add(Step(index=0, kind="message", role="assistant", content=text, tool_calls=[call],
                           attributes={"action": "finish", "tool_call_id": meta.get("tool_call_id"), **extra}, **common))
        elif action == "think":
            self._add(Step(index=0, kind="plan", role="assistant", content=thought or text_of(event.get("message")), attributes=extra, **common))
        elif action in ("recall", "change_agent_state", "null"):
            self.skipped[f"action:{action}"] += 1
        else:
            self._tool_action(event, action, args, meta, raw_call, thought, extra, common, position)

    def _tool_action(self, event: dict[str, Any], action: str, args: dict[str, Any], meta: dict[str, Any], raw_call: dict[str, Any] | None, thought: str, extra: dict[str, Any], common: dict[str, Any], position: int) -> None:
        name = str(meta.get("function_name") or action)
        if raw_call is not None:
            arguments: Any = (raw_call.get("function") or {}).get("arguments")
        else:
            arguments = {k: v for k, v in extra.items() if k not in ("is_confirmed", "action_risk", "keep_prompt", "impl_source", "security_risk", "kernel_init_code", "confirmation_state")}
        call = tool_call(name, arguments, str(meta.get("tool_call_id") or f"event-{event.get('id', position)}"))
        self.call_of_action[event.get("id", position)] = call
        self.pending.append(call)
        kind = "handoff" if action == "delegate" else "tool_call"
        recipient = str(args.get("agent")) if action == "delegate" and args.get("agent") else None
        content = thought or (text_of(event.get("message")) if event.get("message") and kind == "handoff" else "")
        self._add(Step(index=0, kind=kind, role="assistant", recipient=recipient, content=content, tool_calls=[call], attributes={"action": action, **extra}, **common))

    def _observation(self, event: dict[str, Any], ref: str) -> None:
        kind = str(event.get("observation"))
        extras = _extras(event)
        if kind in _QUIET_OBSERVATIONS:
            state = extras.get("agent_state")
            if state == "error":
                self.status, self.error = "error", text_of(extras.get("reason")) or "agent entered the error state"
            elif state in ("finished", "stopped") and self.status != "error":
                self.status = "ok"
            self.skipped[f"observation:{kind}"] += 1
            return
        meta = as_dict(event.get("tool_call_metadata"))
        call = self._match(meta.get("tool_call_id"), event.get("cause"))
        output = text_of(event.get("content")) or text_of(event.get("message"))
        code = _exit_code(extras)
        failed = kind == "error" or (code is not None and code != 0)
        detail = {k: v for k, v in extras.items() if k not in ("content", "screenshot")}
        if "screenshot" in extras:
            detail["screenshot"] = "<omitted: base64 image>"
        when = parse_time(event.get("timestamp"))
        step_id = str(event["id"]) if "id" in event else None
        if call is None and kind == "error":
            self._add(Step(index=0, kind="error", id=step_id, agent="environment", content=output, error=output, started_at=when, source_ref=ref, attributes={"observation": kind, **detail}))
            return
        result = ToolResult(call_id=call.id if call else None, name=call.name if call else kind, output=output, is_error=failed)
        self._add(Step(index=0, kind="tool_result", id=step_id, parent_id=str(event["cause"]) if event.get("cause") is not None else None, agent="environment", role="tool", tool_results=[result], started_at=when, error=f"exit code {code}" if code else (output if kind == "error" else None), source_ref=ref, attributes={"observation": kind, **detail}))

    def _match(self, tool_call_id: Any, cause: Any) -> ToolCall | None:
        call = None
        if tool_call_id:
            call = next((c for c in self.pending if c.id == tool_call_id), None)
        if call is None and cause is not None:
            call = self.call_of_action.get(cause)
        if call is None and self.pending:
            call = self.pending[0]  # old events: the oldest unanswered action
        if call is not None and call in self.pending:
            self.pending.remove(call)
        return call


def _trace(events: list[Any], source: SourceInfo, record: dict[str, Any] | None = None) -> Trace:
    record = record or {}
    meta = as_dict(record.get("metadata"))
    agent_name = str(meta.get("agent_class") or "agent")
    builder = _Events(agent_name)
    builder.read(events, "/history" if record else "")
    if not builder.steps:
        raise TraceFormatError("OpenHands event list holds no actions or observations to rebuild a run from", path=source.path, record=source.record)
    llm_config = as_dict(meta.get("llm_config"))
    model = builder.models[0] if builder.models else (llm_config.get("model") if isinstance(llm_config.get("model"), str) else None)
    metrics = as_dict(record.get("metrics"))
    usage = sum_usage(builder.steps)
    cost = metrics.get("accumulated_cost")
    if isinstance(cost, int | float):
        usage = (usage or Usage()) + Usage(cost_usd=float(cost))
    issue = as_dict(record.get("issue"))
    run_id = record.get("instance_id") or (f"{issue.get('owner')}/{issue.get('repo')}#{issue.get('number')}" if issue.get("number") is not None else "")
    patch = record.get("git_patch")
    status = builder.status
    error = builder.error
    if record.get("error"):
        status, error = "error", text_of(record["error"])
    metadata: dict[str, Any] = {k: v for k, v in record.items() if k not in ("history", "instruction", "git_patch", *_GRADES)}
    if builder.skipped:
        metadata["not_rendered"] = dict(builder.skipped)
    if builder.models[1:]:
        metadata["models"] = builder.models
    return assemble_trace(
        builder.steps,
        source=source,
        known_agents=[Agent(name=agent_name, role="OpenHands software agent", model=model, system_prompt=builder.system_prompt)],
        task=text_of(record["instruction"]) if record.get("instruction") else builder.task,
        final_output=patch if isinstance(patch, str) and patch.strip() else builder.final,
        usage=usage,
        derive_task=False,
        derive_final_output=True,  # no finish action: the agent's closing message, when the run ends on one
        derive_usage=False,
        derive_agents=False,
        trace_id=str(run_id),
        framework="openhands",
        status=status,
        error=error,
        started_at=next((s.started_at for s in builder.steps if s.started_at), None),
        ended_at=next((s.started_at for s in reversed(builder.steps) if s.started_at), None),
        labels={k: record[k] for k in _GRADES if k in record},
        metadata=metadata,
    )


class OpenHands(TraceFormat):
    """OpenHands event list (one run) or output.jsonl (one run per line)."""

    name = "openhands"
    description = "OpenHands event stream (actions/observations, tool_call_metadata) and resolver/eval output.jsonl"
    priority = 74
    example = '[{"id": 1, "source": "agent", "action": "run", "args": {"command": "ls"}}, {"observation": "run", "content": ..., "cause": 1}]'

    def detect(self, raw: RawInput) -> float:
        """Sniff the head, then check the parsed shape."""
        data = sniffed_json(raw, '"action"', '"observation"')
        if data is None:
            return 0.0
        if _is_event_list(data):
            return 0.95
        good = (data if isinstance(data, list) else [data])[:5]
        if good and all(_is_run_record(r) for r in good):
            return 0.93
        return 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the run(s) in ``raw``."""
        data = raw.data()
        if _is_event_list(data):
            yield _trace(data, self.source(raw))
            return
        records = data if isinstance(data, list) else [data]
        for number, record in enumerate(records):
            if isinstance(record, JsonlLineError):
                yield raw.fail(str(record), record=number)
            elif not _is_run_record(record):
                yield raw.fail("not an OpenHands run record (no history of actions/observations)", record=number)
            else:
                try:
                    yield _trace(record["history"], self.source(raw, record=number, variant="output.jsonl"), record)
                except TraceFormatError as exc:
                    yield exc


register(OpenHands())
