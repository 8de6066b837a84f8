"""OpenHands Software Agent SDK conversations: the events of ``openhands-sdk`` (V1), each tagged with its ``kind``.

The SDK persists a conversation as one JSON file per event (``events/event-00000-<id>.json``); mast
reads them joined: a JSON list or JSONL of events (``jq -s . events/*.json``, or the fixtures the SDK's
own tests keep), or the agent server's ``{"items": [...]}`` page; a single event file is read as a
trace of that one event, with a warning. Every event has ``id``,
``timestamp``, ``source`` (``user`` / ``agent`` / ``environment``) and ``kind``:

* ``SystemPromptEvent`` (``system_prompt``, ``tools``): the system step;
* ``MessageEvent`` (``llm_message``: role, content parts): a user or agent message;
* ``ActionEvent`` (``thought``, ``reasoning_content``, ``tool_name``, ``tool_call_id``, ``tool_call``
  with JSON ``arguments``, ``action``): a tool call; the ``finish`` tool's message is the final answer;
* ``ObservationEvent`` (``observation`` with ``content`` and ``is_error``), ``AgentErrorEvent``
  (``error``) and ``UserRejectObservation`` (``rejection_reason``): tool results, the last two errors;
* ``ConversationStateUpdateEvent``: ``execution_status`` gives the run's status, the last ``stats`` its
  token usage and cost; ``ConversationErrorEvent`` an error step. Other kinds (condensation, pause,
  hooks, token streams) are counted in ``metadata["not_rendered"]``.

This is not the legacy OpenHands event stream (``action`` / ``observation`` keys): the ``openhands``
format reads that.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any, Literal

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict, parse_time, text_of, tool_call
from mast.normalize._messages import Msg
from mast.normalize._sniff import sniffed_json
from mast.normalize._timeline import Timeline
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.trace import Agent, ToolResult, Trace, Usage

AGENT = "openhands-agent"
_KINDS = frozenset(
    {
        "SystemPromptEvent",
        "MessageEvent",
        "ActionEvent",
        "ObservationEvent",
        "AgentErrorEvent",
        "UserRejectObservation",
        "ConversationStateUpdateEvent",
        "ConversationErrorEvent",
        "Condensation",
        "CondensationRequest",
        "CondensationSummaryEvent",
        "PauseEvent",
        "InterruptEvent",
        "HookExecutionEvent",
        "TokenEvent",
        "LLMCompletionLogEvent",
        "StreamingDeltaEvent",
        "ACPToolCallEvent",
    }
)
_ERROR_HEADER = "[An error occurred during execution.]"


def is_event(value: Any) -> bool:
    """An SDK event: a known ``kind`` beside an ``id`` or ``source``."""
    return isinstance(value, dict) and value.get("kind") in _KINDS and ("source" in value or "id" in value)


def _events_of(data: Any) -> list[Any] | None:
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        data = data["items"]
    if not isinstance(data, list):
        return None
    events = [e for e in data if not isinstance(e, JsonlLineError)]
    known = [e for e in events if is_event(e)]
    return events if known and len(known) * 2 >= len(events) else None


def _stats_usage(value: Any) -> Usage | None:
    """The run's usage from a ``stats`` state update (its per-LLM accumulated metrics, summed)."""
    total: Usage | None = None
    for metrics in as_dict(as_dict(value).get("usage_to_metrics")).values():
        metrics = as_dict(metrics)
        tokens = as_dict(metrics.get("accumulated_token_usage"))
        cost = metrics.get("accumulated_cost")
        part = Usage(
            input_tokens=tokens.get("prompt_tokens")
            if isinstance(tokens.get("prompt_tokens"), int)
            else None,
            output_tokens=tokens.get("completion_tokens")
            if isinstance(tokens.get("completion_tokens"), int)
            else None,
            cost_usd=float(cost) if isinstance(cost, int | float) else None,
        )
        total = part if total is None else total + part
    return total


class _Reader:
    def __init__(self) -> None:
        self.timeline = Timeline(default_agent=AGENT)
        self.final: str | None = None
        self.status: Literal["ok", "error", "unknown"] = "unknown"
        self.error: str | None = None
        self.usage: Usage | None = None
        self.other: Counter[str] = Counter()
        self.skipped = 0
        self.model: str | None = None

    def read(self, position: int, event: Any) -> None:
        if not is_event(event):
            self.skipped += 1
            return
        kind = event["kind"]
        fields: dict[str, Any] = {
            "id": str(event["id"]) if event.get("id") else None,
            "started_at": parse_time(event.get("timestamp")),
            "source_ref": f"/{position}",
        }
        if kind == "SystemPromptEvent":
            tools = [
                as_dict(t).get("name") or as_dict(as_dict(t).get("function")).get("name")
                for t in event.get("tools") or []
            ]
            self.timeline.add(
                Msg(role="system", text=text_of(event.get("system_prompt"))),
                attributes={"tools": [t for t in tools if t]},
                **fields,
            )
        elif kind == "MessageEvent":
            message = as_dict(event.get("llm_message"))
            role = str(message.get("role") or ("user" if event.get("source") == "user" else "assistant"))
            extended = text_of(event.get("extended_content"))
            text = "\n\n".join(t for t in (text_of(message.get("content")), extended) if t)
            reasoning = text_of(message.get("reasoning_content"))
            attributes = {k: event[k] for k in ("activated_skills", "sender") if event.get(k)}
            self.timeline.add(Msg(role=role, text=text, reasoning=reasoning), attributes=attributes, **fields)
        elif kind == "ActionEvent":
            self._action(event, fields)
        elif kind in ("ObservationEvent", "AgentErrorEvent", "UserRejectObservation"):
            self._result(event, kind, fields)
        elif kind == "ConversationStateUpdateEvent":
            key, value = event.get("key"), event.get("value")
            if key == "execution_status" and isinstance(value, str):
                if value == "error":
                    self.status = "error"
                elif value == "finished" and self.status != "error":
                    self.status = "ok"
            elif key == "stats":
                self.usage = _stats_usage(value) or self.usage
                first = next(iter(as_dict(as_dict(value).get("usage_to_metrics")).values()), None)
                self.model = str(as_dict(first).get("model_name") or "") or self.model
            self.other[f"state:{key}"] += 1
        elif kind == "ConversationErrorEvent":
            detail = text_of(event.get("detail")) or text_of(event.get("code")) or "conversation error"
            self.status, self.error = "error", detail
            self.timeline.add_step(
                kind="error",
                agent="environment",
                content=detail,
                error=detail,
                attributes={"code": event.get("code")},
                **fields,
            )
        else:
            self.other[kind] += 1

    def _action(self, event: dict[str, Any], fields: dict[str, Any]) -> None:
        call = as_dict(event.get("tool_call"))
        name = str(event.get("tool_name") or call.get("name") or "?")
        action = as_dict(event.get("action"))
        arguments: Any = (
            call.get("arguments") if "arguments" in call else {k: v for k, v in action.items() if k != "kind"}
        )
        made = tool_call(name, arguments, str(event.get("tool_call_id") or call.get("id") or "") or None)
        thought = text_of(event.get("thought"))
        reasoning = text_of(event.get("reasoning_content"))
        if reasoning and reasoning.strip() in thought:
            reasoning = ""  # the thought already holds it (some models write <think> into the text)
        if action.get("kind") == "FinishAction" or name == "finish":
            self.final = text_of(action.get("message")) or thought or self.final
            if self.status != "error":
                self.status = "ok"
        attributes = {k: event[k] for k in ("security_risk", "summary", "llm_response_id") if event.get(k)}
        if action.get("kind"):
            attributes["action"] = action["kind"]
        self.timeline.add(
            Msg(role="assistant", text=thought, reasoning=reasoning, tool_calls=[made]),
            attributes=attributes,
            **fields,
        )

    def _result(self, event: dict[str, Any], kind: str, fields: dict[str, Any]) -> None:
        call_id = str(event["tool_call_id"]) if event.get("tool_call_id") else None
        attributes: dict[str, Any] = {"event": kind}
        if kind == "ObservationEvent":
            observation = as_dict(event.get("observation"))
            output = text_of(observation.get("content"))
            failed = bool(observation.get("is_error")) or output.startswith(_ERROR_HEADER)
            attributes.update(
                {
                    k: observation[k]
                    for k in ("kind", "exit_code", "command", "path")
                    if observation.get(k) is not None
                }
            )
        elif kind == "AgentErrorEvent":
            output, failed = text_of(event.get("error")), True
        else:
            output, failed = f"rejected: {text_of(event.get('rejection_reason'))}", True
        result = ToolResult(
            call_id=call_id,
            name=str(event["tool_name"]) if event.get("tool_name") else None,
            output=output,
            is_error=failed,
        )
        self.timeline.add(Msg(role="tool", tool_results=[result]), attributes=attributes, **fields)


def _trace(events: list[Any], raw: RawInput, fmt: TraceFormat) -> Trace:
    reader = _Reader()
    for position, event in enumerate(events):
        reader.read(position, event)
    if not reader.timeline.steps:
        raise raw.fail("OpenHands SDK events hold no messages, actions or observations")
    times = [s.started_at for s in reader.timeline.steps if s.started_at]
    metadata: dict[str, Any] = {"not_rendered": dict(reader.other)} if reader.other else {}
    warnings = [f"{reader.skipped} record(s) are not OpenHands SDK events: skipped"] if reader.skipped else []
    return assemble_trace(
        reader.timeline.steps,
        source=fmt.source(raw, variant="events"),
        timeline=reader.timeline,
        known_agents=[Agent(name=AGENT, role="software agent (OpenHands SDK)", model=reader.model)],
        final_output=reader.final,
        usage=reader.usage,
        warnings=warnings,
        framework="openhands-sdk",
        status=reader.status,
        error=reader.error,
        started_at=min(times) if times else None,
        ended_at=max(times) if times else None,
        metadata=metadata,
    )


class OpenHandsSdkFormat(TraceFormat):
    """OpenHands Software Agent SDK events (a list, JSONL, or the agent server's items page)."""

    name = "openhands_sdk"
    description = "OpenHands Software Agent SDK conversation events (kind: MessageEvent / ActionEvent / ObservationEvent...)"
    priority = 27
    example = '[{"kind": "MessageEvent", "source": "user", "llm_message": {...}}, {"kind": "ActionEvent", "tool_name": "terminal", ...}]'

    def detect(self, raw: RawInput) -> float:
        """0.96 for events of the SDK's kinds; 0.9 for a single persisted event file."""
        data = sniffed_json(raw, '"kind"')
        if _events_of(data) is not None:
            return 0.96
        return 0.9 if is_event(data) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per conversation; a single event file is a trace of that one event, said in its warnings."""
        data = raw.data()
        if is_event(data):
            trace = _trace([data], raw, self)
            trace.warnings.append(
                "one OpenHands SDK event, not a whole conversation: join the events folder to read the run (jq -s . events/*.json)"
            )
            yield trace
            return
        events = _events_of(data)
        if events is None:
            raise raw.fail(
                "not OpenHands SDK events (needs a list of events with kind MessageEvent, ActionEvent...)"
            )
        yield _trace(events, raw, self)


register(OpenHandsSdkFormat())
