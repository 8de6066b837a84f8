r"""smolagents runs: agent memory steps and the benchmark rows smolagents writes (one run per line).

Three shapes of the same memory are accepted:

- memory steps as dicts (``agent.memory.get_full_steps()``): ``{"system_prompt"}``, ``{"task"}``,
  ``{"plan", ...}``, ``{"step_number", "model_output", "tool_calls", "observations", "error", ...}``,
  ``{"output"}`` for the final answer;
- the same steps as Python ``repr()`` strings (``"ActionStep(step_number=0, ...)"``, older GAIA
  submissions), read with :mod:`ast` as literals only, never evaluated;
- memory rendered as chat messages (``write_memory_to_messages()``) with the smolagents roles
  ``tool-call`` (text ``"Calling tools:\\n[{...}]"``) and ``tool-response`` (``"Observation:\\n..."``,
  or ``"Call id: ...\\nError:\\n..."``).

Benchmark rows wrap one of these in ``intermediate_steps`` beside ``question``, ``answer`` /
``prediction`` and the ground truth ``true_answer`` (kept as a label, never shown to a judge).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from typing import Any, Literal

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict, parse_time, text_of, tool_call, usage_from
from mast.normalize._sniff import sniffed_json
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.trace import Agent, SourceInfo, Step, ToolCall, ToolResult, Trace

MESSAGE_ROLES = frozenset({"system", "user", "assistant", "tool-call", "tool-response", "tool_call", "tool_response"})
_STEP_REPR = re.compile(r"^(SystemPromptStep|TaskStep|ActionStep|PlanningStep|FinalAnswerStep)\(")
_CALL_ID = re.compile(r"^Call id: *(\S+)\n")
_ROW_LABELS = ("true_answer",)
_ROW_FIELDS = ("intermediate_steps", "question", "augmented_question", "answer", "prediction", "start_time", "end_time", "token_counts", "agent_name", *_ROW_LABELS)


def _literal(node: ast.AST) -> Any:
    """A repr's syntax tree as plain data: calls become dicts tagged with ``__type__``."""
    if isinstance(node, ast.Call):
        value: dict[str, Any] = {"__type__": ast.unparse(node.func)}
        if node.args:
            value["__args__"] = [_literal(a) for a in node.args]
        for keyword in node.keywords:
            value[keyword.arg or "**"] = _literal(keyword.value)
        return value
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_literal(k) if k is not None else "**": _literal(v) for k, v in zip(node.keys, node.values, strict=True)}
    try:
        return ast.literal_eval(node)
    except ValueError:
        return ast.unparse(node)


def parse_step_repr(text: str) -> dict[str, Any] | None:
    """A memory step from its ``repr()`` (``ActionStep(...)``), or ``None`` when it does not parse."""
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return None
    value = _literal(tree.body)
    return value if isinstance(value, dict) else None


def _step_type(step: dict[str, Any]) -> str:
    tag = step.get("__type__")
    if isinstance(tag, str):
        return tag
    if "step_number" in step:
        return "ActionStep"
    if "system_prompt" in step:
        return "SystemPromptStep"
    if "plan" in step:
        return "PlanningStep"
    if "task" in step:
        return "TaskStep"
    if set(step) == {"output"}:
        return "FinalAnswerStep"
    return "?"


def _is_message(item: Any) -> bool:
    return isinstance(item, dict) and item.get("role") in MESSAGE_ROLES and "content" in item


def _is_step(item: Any) -> bool:
    if isinstance(item, str):
        return bool(_STEP_REPR.match(item))
    return isinstance(item, dict) and _step_type(item) != "?"


def _is_memory(items: Any) -> bool:
    """A list of memory steps or memory messages (what ``intermediate_steps`` holds)."""
    if not isinstance(items, list) or not items:
        return False
    head = items[:5]
    return all(_is_message(i) for i in head) or all(_is_step(i) for i in head)


def _is_row(value: Any) -> bool:
    return isinstance(value, dict) and _is_memory(value.get("intermediate_steps"))


def _is_step_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(i, dict) and _is_step(i) for i in value[:5]) and any(_step_type(i) == "ActionStep" for i in value)


def _calls(raw: Any) -> list[ToolCall]:
    calls = []
    for item in raw if isinstance(raw, list) else []:
        if not isinstance(item, dict):
            continue
        function = as_dict(item.get("function")) or item
        calls.append(tool_call(str(function.get("name") or "?"), function.get("arguments"), str(item["id"]) if item.get("id") else None))
    return calls


class _Memory:
    def __init__(self, agent: str) -> None:
        self.agent = agent
        self.steps: list[Step] = []
        self.task: str | None = None
        self.final: str | None = None
        self.system_prompt: str | None = None
        self.pending: list[ToolCall] = []
        self.warnings: list[str] = []

    def _add(self, step: Step) -> None:
        step.index = len(self.steps)
        self.steps.append(step)

    # -- memory steps (dicts or reprs) --------------------------------------------------------

    def steps_from_memory(self, items: list[Any]) -> None:
        for position, item in enumerate(items):
            ref = f"/intermediate_steps/{position}"
            step = parse_step_repr(item) if isinstance(item, str) else item
            if not isinstance(step, dict):
                self.warnings.append(f"step {position} is a repr that does not parse; kept as text")
                self._add(Step(index=0, kind="message", agent=self.agent, content=str(item), source_ref=ref))
                continue
            kind = _step_type(step)
            if kind == "SystemPromptStep":
                self.system_prompt = text_of(step.get("system_prompt"))
                self._add(Step(index=0, kind="system", agent="system", role="system", recipient=self.agent, content=self.system_prompt, source_ref=ref))
            elif kind == "TaskStep":
                text = text_of(step.get("task"))
                self.task = self.task or text
                self._add(Step(index=0, kind="message", agent="user", role="user", recipient=self.agent, content=text, source_ref=ref, attributes=_rest(step, ("task",))))
            elif kind == "PlanningStep":
                self._add(Step(index=0, kind="plan", agent=self.agent, role="assistant", content=text_of(step.get("plan")), usage=usage_from(step.get("token_usage")), source_ref=ref, attributes=_rest(step, ("plan", "model_input_messages", "model_output_message", "token_usage"))))
            elif kind == "ActionStep":
                self._action_step(step, ref)
            elif kind == "FinalAnswerStep":
                self.final = text_of(step.get("output"))
            else:
                self._add(Step(index=0, kind="message", agent=self.agent, content=text_of(step), source_ref=ref))

    def _action_step(self, step: dict[str, Any], ref: str) -> None:
        calls = _calls(step.get("tool_calls"))
        timing = as_dict(step.get("timing")) or step
        started, ended = parse_time(timing.get("start_time")), parse_time(timing.get("end_time"))
        thought = text_of(step.get("model_output") if step.get("model_output") is not None else step.get("llm_output"))
        extra = _rest(step, ("tool_calls", "timing", "start_time", "end_time", "model_output", "llm_output", "observations", "error", "model_input_messages", "model_output_message", "token_usage", "agent_memory"))
        self._add(Step(index=0, kind="tool_call" if calls else "message", agent=self.agent, role="assistant", content=thought, tool_calls=calls, usage=usage_from(step.get("token_usage")), started_at=started, ended_at=ended, source_ref=ref, attributes=extra))
        error = step.get("error")
        error_text = _error_text(error) if error else None
        observations = step.get("observations")
        if observations is not None or error_text:
            output = "\n".join(t for t in (text_of(observations) if observations is not None else "", error_text or "") if t)
            call = calls[0] if calls else None
            if call is None and error_text and observations is None:
                self._add(Step(index=0, kind="error", agent="environment", content=error_text, error=error_text, source_ref=f"{ref}/error"))
            else:
                result = ToolResult(call_id=call.id if call else None, name=call.name if call else None, output=output, is_error=bool(error_text))
                self._add(Step(index=0, kind="tool_result", agent="environment", role="tool", tool_results=[result], error=error_text, source_ref=f"{ref}/observations"))
        if step.get("is_final_answer") or any(c.name == "final_answer" for c in calls):
            if step.get("action_output") is not None:
                self.final = text_of(step["action_output"])

    # -- memory rendered as messages -------------------------------------------------------------

    def steps_from_messages(self, messages: list[Any]) -> None:
        waiting: Step | None = None  # an assistant message that a tool-call message may complete
        for position, message in enumerate(messages):
            ref = f"/intermediate_steps/{position}"
            if not isinstance(message, dict):
                continue
            role = str(message.get("role")).replace("_", "-")
            text = text_of(message.get("content"))
            extra = {k: v for k, v in message.items() if k not in ("role", "content") and v is not None}
            if role == "tool-call":
                calls = self._parse_calls(text, position)
                self.pending = [c for c in calls if c.id] or calls
                if waiting is not None and not waiting.tool_calls:
                    waiting.tool_calls = calls
                    waiting.kind = "tool_call"
                else:
                    self._add(Step(index=0, kind="tool_call", agent=self.agent, role="assistant", tool_calls=calls, source_ref=ref, attributes=extra))
                waiting = None
                continue
            waiting = None
            if role == "system":
                self.system_prompt = self.system_prompt or text
                self._add(Step(index=0, kind="system", agent="system", role="system", recipient=self.agent, content=text, source_ref=ref))
            elif role == "user":
                if self.task is None and text.startswith("New task:"):
                    self.task = text.removeprefix("New task:").strip()
                self._add(Step(index=0, kind="message", agent="user", role="user", recipient=self.agent, content=text, source_ref=ref, attributes=extra))
            elif role == "assistant":
                waiting = Step(index=0, kind="message", agent=self.agent, role="assistant", content=text, usage=usage_from(message.get("token_usage")), source_ref=ref, attributes=extra)
                self._add(waiting)
            else:
                self._tool_response(text, ref)

    def _parse_calls(self, text: str, position: int) -> list[ToolCall]:
        body = text.split("\n", 1)[1] if text.startswith("Calling tools:") and "\n" in text else text
        try:
            value = ast.literal_eval(body.strip())
        except (SyntaxError, ValueError, RecursionError):
            self.warnings.append(f"message {position}: tool-call text is not a readable list; kept as raw arguments")
            return [ToolCall(name="?", arguments_raw=body)]
        return _calls(value)

    def _tool_response(self, text: str, ref: str) -> None:
        call_id = None
        match = _CALL_ID.match(text)
        if match:
            call_id, text = match.group(1), text[match.end():]
        is_error = text.startswith("Error:")
        call = next((c for c in self.pending if c.id == call_id), None) if call_id else (self.pending[0] if len(self.pending) == 1 else None)
        if call is None and call_id is None and not self.pending and is_error:
            # An error with no tool call before it: the model's output could not be parsed.
            self._add(Step(index=0, kind="error", agent="environment", role="tool", content=text, error=text.split("\n", 2)[1] if "\n" in text else text, source_ref=ref))
            return
        if call is not None:
            self.pending.remove(call)
        output = text.removeprefix("Observation:\n")
        result = ToolResult(call_id=call.id if call else call_id, name=call.name if call else None, output=output, is_error=is_error)
        attributes = {"call_ids": [c.id for c in self.pending]} if call is None and self.pending else {}
        if call is None:
            self.pending = []
        self._add(Step(index=0, kind="tool_result", agent="environment", role="tool", tool_results=[result], source_ref=ref, attributes=attributes))
        if call is not None and call.name == "final_answer" and not is_error:
            self.final = output


def _rest(step: dict[str, Any], used: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in step.items() if k not in used and k != "__type__" and v is not None}


def _error_text(error: Any) -> str:
    if isinstance(error, dict):
        if isinstance(error.get("message"), str):
            return f"{error.get('type') or error.get('__type__') or 'Error'}: {error['message']}"
        args = error.get("__args__")
        if isinstance(args, list) and args:
            return f"{error.get('__type__', 'Error')}: {text_of(args[0])}"
    return text_of(error)


def _agent_name(row: dict[str, Any]) -> str:
    if isinstance(row.get("agent_name"), str):
        return str(row["agent_name"])
    return {"code": "CodeAgent", "tool-calling": "ToolCallingAgent"}.get(str(row.get("agent_action_type")), "agent")


def build_trace(memory: list[Any], source: SourceInfo, row: dict[str, Any] | None = None) -> Trace:
    """One :class:`Trace` from smolagents memory (steps, step reprs or messages) and its row."""
    row = row or {}
    builder = _Memory(_agent_name(row))
    if all(_is_message(m) for m in memory[:5]):
        builder.steps_from_messages(memory)
    else:
        builder.steps_from_memory(memory)
    if not builder.steps:
        raise TraceFormatError("smolagents memory holds no steps", path=source.path, record=source.record)
    answer = row.get("answer", row.get("prediction"))
    final = text_of(answer) if answer is not None else builder.final
    model = row.get("model_id") if isinstance(row.get("model_id"), str) else None
    for step in builder.steps:
        if step.role == "assistant":
            step.model = model
    status: Literal["ok", "error", "unknown"] = "error" if row.get("agent_error") else ("ok" if final is not None else "unknown")
    question = row.get("question")
    return assemble_trace(
        builder.steps,
        source=source,
        known_agents=[Agent(name=builder.agent, role=f"smolagents {row.get('agent_action_type') or 'agent'}", model=model, system_prompt=builder.system_prompt)],
        task=text_of(question) if question else builder.task,
        final_output=final,
        usage=usage_from(row.get("token_counts")),
        derive_task=False,
        derive_final_output=False,
        derive_usage=False,
        derive_agents=False,
        framework="smolagents",
        status=status,
        error=text_of(row["agent_error"]) if row.get("agent_error") else None,
        started_at=parse_time(row.get("start_time")),
        ended_at=parse_time(row.get("end_time")),
        labels={k: row[k] for k in _ROW_LABELS if k in row},
        metadata={k: v for k, v in row.items() if k not in _ROW_FIELDS or k in ("augmented_question", "start_time", "end_time")},
        warnings=builder.warnings,
    )


class Smolagents(TraceFormat):
    """smolagents memory (one run) or benchmark rows (one run per line)."""

    name = "smolagents"
    description = "smolagents memory steps (dicts or reprs) and benchmark rows JSONL (intermediate_steps)"
    priority = 76
    example = '[{"task": ...}, {"step_number": 1, "model_output": ..., "tool_calls": [...], "observations": ...}, {"output": ...}]'

    def detect(self, raw: RawInput) -> float:
        """Sniff the head, then check the parsed shape."""
        data = sniffed_json(raw, '"intermediate_steps"', '"step_number"', '"system_prompt"')
        if data is None:
            return 0.0
        if _is_step_list(data):
            return 0.9
        records = (data if isinstance(data, list) else [data])[:5]
        return 0.93 if records and all(_is_row(r) for r in records) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the run(s) in ``raw``."""
        data = raw.data()
        if _is_step_list(data):
            yield build_trace(data, self.source(raw, variant="memory"))
            return
        records = data if isinstance(data, list) else [data]
        for number, row in enumerate(records):
            if isinstance(row, JsonlLineError):
                yield raw.fail(str(row), record=number)
            elif not _is_row(row):
                yield raw.fail("not a smolagents run row (no intermediate_steps of memory steps or messages)", record=number)
            else:
                try:
                    yield build_trace(row["intermediate_steps"], self.source(raw, record=number, variant="benchmark_row"), row)
                except TraceFormatError as exc:
                    yield exc


register(Smolagents())
