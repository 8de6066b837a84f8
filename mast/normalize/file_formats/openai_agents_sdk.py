"""OpenAI Agents SDK: run state snapshots (``RunState.to_json()``) and trace/span exports.

**Run state** (``{"$schemaVersion", "current_agent", "original_input", "generated_items": [...]}``,
written to resume a run after a human approval): each generated item names the agent that produced
it and wraps a Responses-API item: ``message_output_item``, ``tool_call_item`` /
``tool_call_output_item``, ``handoff_call_item`` / ``handoff_output_item`` (``source_agent`` ->
``target_agent``), ``reasoning_item``, ``tool_approval_item`` (a call waiting for approval). The
JavaScript SDK writes the same state in camelCase; both spellings are read.

**Trace export** (what a custom trace processor writes, one JSON object per line, or the
``{"data": [...]}`` ingest payload): ``{"object": "trace", "id", "workflow_name", ...}`` and
``{"object": "trace.span", "id", "trace_id", "parent_id", "started_at", "ended_at", "span_data":
{"type": "agent" | "generation" | "response" | "function" | "handoff" | "guardrail" | "custom" ...},
"error"}``. Spans are ordered by start time; the agent of a span is its nearest ``agent``
ancestor. Generation spans re-send the whole conversation, so only messages not seen before are
emitted. With the default Responses model a ``response`` span exports only the response id, not the
messages; such traces say so in a warning.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from typing import Any, Literal

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict, parse_time, text_of, usage_from
from mast.normalize._messages import Msg, compact, from_openai, from_responses
from mast.normalize._sniff import sniffed_json
from mast.normalize._timeline import Timeline
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.trace import Agent, SourceInfo, Step, Trace

_CAMEL = {
    "currentAgent": "current_agent",
    "originalInput": "original_input",
    "generatedItems": "generated_items",
    "modelResponses": "model_responses",
    "currentTurn": "current_turn",
    "currentStep": "current_step",
    "maxTurns": "max_turns",
    "rawItem": "raw_item",
    "sourceAgent": "source_agent",
    "targetAgent": "target_agent",
    "toolName": "tool_name",
    "callId": "call_id",
    "pendingAgentToolRuns": "pending_agent_tool_runs",
}
_STATE_DUPLICATES = ("generated_items", "session_items", "original_input", "model_responses", "last_model_response", "last_processed_response", "pending_agent_tool_runs")
_MAX_NESTED = 8
"""How deep agents run as tools inside agents are followed (each level is a serialised run state)."""


def _snake(value: Any) -> Any:
    """Rename the JavaScript SDK's camelCase keys (and its item type names) to the Python spelling."""
    if isinstance(value, list):
        return [_snake(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {_CAMEL.get(k, k): _snake(v) for k, v in value.items()}
    if out.get("type") == "function_call_result":
        out["type"] = "function_call_output"
    return out


def _is_state(data: Any) -> bool:
    return isinstance(data, dict) and "$schemaVersion" in data and isinstance(data.get("generated_items", data.get("generatedItems")), list)


def _export_records(data: Any) -> list[Any] | None:
    """The trace/span records of an export, or ``None`` when ``data`` is not one."""
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        data = data["data"]
    records = data if isinstance(data, list) else [data]
    good = [r for r in records if not isinstance(r, JsonlLineError)]
    if not good or not all(isinstance(r, dict) and r.get("object") in ("trace", "trace.span") for r in good[:20]):
        return None
    if not any(r.get("object") == "trace.span" and isinstance(r.get("span_data"), dict) for r in good):
        return None
    return records


def _agent_name(value: Any) -> str | None:
    name = as_dict(value).get("name")
    return str(name) if name else None


# --- run state ------------------------------------------------------------------------------------


def _state_trace(state: dict[str, Any], source: SourceInfo) -> Trace:
    current = _agent_name(state.get("current_agent")) or "agent"
    timeline = Timeline(default_agent=current)
    original = state.get("original_input")
    if isinstance(original, str):
        timeline.add(Msg(role="user", text=original), source_ref="/original_input")
    elif isinstance(original, list):
        for msg in from_responses(original):
            timeline.add(msg, source_ref="/original_input")
    calls: dict[str, Step] = {}
    pending: list[str] = []
    _state_items(timeline, state, "", calls, pending, 0)
    if not timeline.steps:
        raise TraceFormatError("run state holds no input and no generated items", path=source.path)
    usage_data = as_dict(as_dict(state.get("context")).get("usage"))
    usage = usage_from(usage_data) if usage_data.get("requests") else None
    interrupted = as_dict(state.get("current_step")).get("type") == "next_step_interruption"
    trace_info = as_dict(state.get("trace"))
    metadata: dict[str, Any] = {k: v for k, v in state.items() if k not in _STATE_DUPLICATES}
    metadata["model_responses"] = [{k: r.get(k) for k in ("response_id", "request_id", "usage")} for r in state.get("model_responses") or [] if isinstance(r, dict)]
    if pending:
        metadata["pending_approvals"] = pending
    names = [current] + [s.agent for s in timeline.steps if s.agent] + list(as_dict(state.get("tool_use_tracker")))
    known = [Agent(name=n) for n in dict.fromkeys(names) if n.lower() not in ("user", "tool", "system")]
    return assemble_trace(
        timeline.steps, source=source, timeline=timeline, known_agents=known,
        final_output=None, derive_final_output=not interrupted,  # a paused run has given no answer yet
        usage=usage,
        warnings=[f"run paused for human approval of {len(pending)} tool call(s); the trace ends there"] if pending else [],
        trace_id=str(trace_info.get("id") or ""), framework="openai-agents", status="unknown", metadata=metadata,
    )


def _state_items(timeline: Timeline, state: dict[str, Any], ref: str, calls: dict[str, Step], pending: list[str], depth: int) -> None:
    """The state's generated items, then those of each agent it runs as a tool and that is still pending."""
    for position, item in enumerate(state.get("generated_items") or []):
        if isinstance(item, dict):
            _state_item(timeline, item, f"{ref}/generated_items/{position}", calls, pending)
    for key, nested in _nested_states(state, depth):
        _state_items(timeline, nested, f"{ref}/pending_agent_tool_runs/{key}", calls, pending, depth + 1)


def _nested_states(state: dict[str, Any], depth: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """The run states of agents used as tools whose run is paused inside this one (``agent.asTool()``).

    The JavaScript SDK keeps each as its own serialised run state, a JSON string keyed by
    ``tool:call id``; an entry that does not parse as a run state is left in no step.
    """
    runs = state.get("pending_agent_tool_runs")
    if not isinstance(runs, dict) or depth >= _MAX_NESTED:
        return
    for key, value in runs.items():
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                continue
        nested = _snake(value)
        if _is_state(nested):
            yield str(key), nested


def _state_item(timeline: Timeline, item: dict[str, Any], ref: str, calls: dict[str, Step], pending: list[str]) -> None:
    kind = str(item.get("type"))
    agent = _agent_name(item.get("agent")) or timeline.default_agent
    raw = as_dict(item.get("raw_item"))
    extra = {k: v for k, v in item.items() if k not in ("type", "agent", "raw_item", "output", "source_agent", "target_agent")}
    if kind == "tool_approval_item":
        name = item.get("tool_name") or raw.get("name")
        call_id = raw.get("call_id")
        pending.append(str(call_id or name))
        timeline.add_step(kind="system", agent=agent, content=f"tool call {name} ({call_id}) is waiting for human approval", source_ref=ref, attributes={"item_type": kind, **extra})
        return
    if kind == "tool_call_output_item" and "output" not in raw and "output" in item:
        raw = {**raw, "output": item["output"]}
    msgs = from_responses([raw]) if raw else []
    step_kind: str | None = {"reasoning_item": "plan", "tool_call_item": "tool_call", "handoff_call_item": "handoff", "handoff_output_item": "handoff"}.get(kind)
    for msg in msgs:
        step = timeline.add(msg, agent=agent if msg.role != "tool" else None, kind=step_kind, source_ref=ref, attributes={"item_type": kind, **extra})
        if step is None:
            continue
        for call in step.tool_calls:
            if call.id:
                calls[call.id] = step
        if kind == "handoff_output_item":
            source_agent = _agent_name(item.get("source_agent")) or agent
            target = _agent_name(item.get("target_agent"))
            step.agent, step.recipient = source_agent, target
            for result in step.tool_results:
                if result.call_id in calls:
                    calls[result.call_id].recipient = target
    if not msgs:
        timeline.add_step(kind="system", agent=agent, content=f"[{kind}] {compact(raw or item)}", source_ref=ref, attributes={"item_type": kind})


# --- trace export ---------------------------------------------------------------------------------


class _SpanTree:
    def __init__(self, spans: list[dict[str, Any]]) -> None:
        self.by_id = {str(s["id"]): s for s in spans if s.get("id")}

    def depth(self, span: dict[str, Any]) -> int:
        depth, parent, seen = 0, span.get("parent_id"), set()
        while parent and str(parent) in self.by_id and parent not in seen:
            seen.add(parent)
            depth += 1
            parent = self.by_id[str(parent)].get("parent_id")
        return depth

    def agent(self, span: dict[str, Any]) -> str | None:
        current: dict[str, Any] | None = span
        seen: set[str] = set()
        while current is not None:
            data = as_dict(current.get("span_data"))
            if data.get("type") == "agent" and data.get("name"):
                return str(data["name"])
            parent = current.get("parent_id")
            if not parent or str(parent) in seen:
                return None
            seen.add(str(parent))
            current = self.by_id.get(str(parent))
        return None


def _export_trace(trace_id: str, info: dict[str, Any], spans: list[dict[str, Any]], source: SourceInfo) -> Trace:
    tree = _SpanTree(spans)
    ordered = sorted(spans, key=lambda s: (str(s.get("started_at") or ""), tree.depth(s)))
    timeline = Timeline(default_agent="agent", assistant_kind="llm")
    known: dict[str, Agent] = {}
    skipped: Counter[str] = Counter()
    warnings: list[str] = []
    errors: list[str] = []
    for span in ordered:
        data = as_dict(span.get("span_data"))
        kind = str(data.get("type"))
        agent = tree.agent(span) or timeline.default_agent
        error = as_dict(span.get("error"))
        message = text_of(error.get("message")) if error else None
        if message:
            errors.append(message)
        common: dict[str, Any] = {"id": str(span.get("id")) if span.get("id") else None, "parent_id": str(span["parent_id"]) if span.get("parent_id") else None,
                                  "started_at": parse_time(span.get("started_at")), "ended_at": parse_time(span.get("ended_at")), "source_ref": f"span:{span.get('id')}"}
        if kind == "agent":
            name = str(data.get("name") or "agent")
            known.setdefault(name, Agent(name=name))
            tools, handoffs = data.get("tools") or [], data.get("handoffs") or []
            content = "; ".join(p for p in (f"tools: {', '.join(map(str, tools))}" if tools else "", f"handoffs: {', '.join(map(str, handoffs))}" if handoffs else "") if p)
            timeline.add_step(kind="agent", agent=name, content=content, error=message, attributes={k: v for k, v in data.items() if k not in ("type", "name")}, **common)
        elif kind == "generation":
            _generation(timeline, data, agent, message, common)
        elif kind == "function":
            mcp = data.get("mcp_data")
            timeline.add_tool(str(data.get("name") or "?"), arguments=data.get("input"), output=data.get("output"), is_error=bool(error), agent=agent,
                              attributes={"mcp_data": mcp} if mcp else {}, **common)
        elif kind == "response":
            if not warnings:
                warnings.append("response spans export only response ids: the model's messages are not in this trace")
            timeline.add_step(kind="llm", agent=agent, role="assistant", usage=usage_from(data.get("usage")), error=message,
                              attributes={k: v for k, v in data.items() if k not in ("type", "usage")}, **common)
        elif kind == "handoff":
            source_agent, target = data.get("from_agent"), data.get("to_agent")
            timeline.add_step(kind="handoff", agent=str(source_agent or agent), recipient=str(target) if target else None,
                              content=f"hands off to {target}", error=message, **common)
        elif kind == "guardrail":
            verdict = "triggered" if data.get("triggered") else "passed"
            timeline.add_step(kind="system", agent=agent, content=f"guardrail {data.get('name')}: {verdict}", error=message, attributes={"guardrail": data.get("name"), "triggered": bool(data.get("triggered"))}, **common)
        elif kind == "custom" and as_dict(data.get("data")).get("sdk_span_type") in ("task", "turn"):
            skipped[f"custom:{as_dict(data.get('data')).get('sdk_span_type')}"] += 1  # structure only: the run and its turns
        else:
            body = {k: v for k, v in data.items() if k != "type"}
            timeline.add_step(kind="system", agent=agent, content=f"[{kind}] {compact(body)}", error=message, attributes={"span_type": kind}, **common)
    if not timeline.steps:
        raise TraceFormatError(f"trace {trace_id} has no spans with content", path=source.path, record=source.record)
    metadata: dict[str, Any] = {k: v for k, v in info.items() if k not in ("object", "id")}
    if skipped:
        metadata["not_rendered"] = dict(skipped)
    status: Literal["ok", "error", "unknown"] = "error" if errors else ("ok" if known else "unknown")
    final = timeline.final_answer() or next((s.content for s in reversed(timeline.steps) if s.kind == "llm" and s.content and not s.tool_calls), None)
    return assemble_trace(
        timeline.steps, source=source, timeline=timeline, known_agents=known.values(), final_output=final, warnings=warnings,
        trace_id=trace_id, framework="openai-agents", status=status, error=errors[-1] if errors else None,
        started_at=timeline.first_time(), ended_at=max((s.ended_at for s in timeline.steps if s.ended_at), default=None),
        metadata=metadata,
    )


def _generation(timeline: Timeline, data: dict[str, Any], agent: str, error: str | None, common: dict[str, Any]) -> None:
    timeline.default_agent = agent
    inputs = [m for raw in data.get("input") or [] if isinstance(raw, dict) for m in from_openai(raw)]
    timeline.add_new(inputs)
    outputs = [m for raw in data.get("output") or [] if isinstance(raw, dict) for m in from_openai(raw)]
    usage = usage_from(data.get("usage"))
    model = data.get("model") if isinstance(data.get("model"), str) else None
    extra = {k: v for k, v in data.items() if k in ("model_config",) and v}
    fields = {k: v for k, v in common.items() if k != "id"}  # Timeline.add sets the id from the message
    for position, msg in enumerate(outputs):
        if position == 0:
            msg.id = msg.id or common.get("id")
        timeline.add(msg, agent=agent, kind="llm", model=model, usage=usage if position == 0 else None, error=error, attributes=extra, **fields)
    if not outputs:
        timeline.add_step(kind="llm", agent=agent, role="assistant", model=model, usage=usage, error=error, attributes=extra, **common)


# --- the format -----------------------------------------------------------------------------------


class OpenAIAgentsSDK(TraceFormat):
    """OpenAI Agents SDK run state (one run) or trace export (one run per trace id)."""

    name = "openai_agents_sdk"
    description = "OpenAI Agents SDK RunState JSON and trace/span export (object: trace / trace.span)"
    priority = 78
    example = '{"object": "trace", "spans": [{"span_data": {"type": "agent" | "generation" | "function" | "handoff"}}]}'

    def detect(self, raw: RawInput) -> float:
        """Sniff the head, then check the parsed shape."""
        data = sniffed_json(raw, '"$schemaVersion"', '"trace.span"', '"span_data"')
        if data is None:
            return 0.0
        if _is_state(data):
            return 0.97
        return 0.95 if _export_records(data) is not None else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the run in a run state, or one trace per trace id of an export."""
        data = raw.data()
        if _is_state(data):
            yield _state_trace(_snake(data), self.source(raw, variant="run_state"))
            return
        records = _export_records(data)
        if records is None:
            raise raw.fail("neither an Agents SDK RunState ($schemaVersion + generated_items) nor a trace export (object: trace.span)")
        infos: dict[str, dict[str, Any]] = {}
        spans: dict[str, list[dict[str, Any]]] = defaultdict(list)
        order: list[str] = []
        for number, record in enumerate(records):
            if isinstance(record, JsonlLineError):
                yield raw.fail(str(record), record=number)
                continue
            key = str(record.get("id") if record.get("object") == "trace" else record.get("trace_id"))
            if key not in order:
                order.append(key)
            if record.get("object") == "trace":
                infos[key] = record
            else:
                spans[key].append(record)
        for position, key in enumerate(order):
            if not spans.get(key):
                yield raw.fail(f"trace {key} has no spans", record=position)
                continue
            try:
                yield _export_trace(key, infos.get(key, {}), spans[key], self.source(raw, record=position, variant="trace_export"))
            except TraceFormatError as exc:
                yield exc


register(OpenAIAgentsSDK())
