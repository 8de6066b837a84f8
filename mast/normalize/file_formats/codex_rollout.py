"""OpenAI Codex CLI rollout JSONL: the session files Codex writes, and IBM IT-Bench SRE trajectories.

Each line is ``{"timestamp", "type", "payload"}`` with ``type`` one of ``session_meta`` (run id,
cwd, CLI version, the agent's instructions), ``turn_context`` (model and sandbox of a turn),
``response_item`` (a Responses-API item: ``message``, ``reasoning``, ``function_call``,
``function_call_output``, ``custom_tool_call``, ``web_search_call``...) or ``event_msg`` (UI events:
``user_message``, ``agent_message``, ``exec_command_end``, ``token_count``, ``task_complete``...).

The same utterance is often written twice, once as a ``response_item`` and once as an
``event_msg``; the response item wins and the event is only used when it has no twin (some
rollouts hold the user's messages only as events). Context Codex injects into the conversation
(``AGENTS.md`` instructions, ``<environment_context>``, developer permission notes) becomes
``system`` steps, never the task. Where the rollout has ``user_message`` events, the first one
names the task (user items before it are blocks Codex wrote, whatever their markers); else the
first user item that is not injected context does. Command exit codes from ``exec_command_end`` events and from the
tool output text mark failed calls as errors.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from datetime import datetime
from typing import Any, Literal

import orjson

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict, parse_time, text_of, tool_call
from mast.normalize._readable import with_instructions
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.trace import Agent, Step, ToolResult, Trace, Usage

LINE_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
AGENT = "codex"

_FIRST_LINE = re.compile(r'^\{\s*(?:"timestamp"\s*:\s*"[^"]*"\s*,\s*)?"type"\s*:\s*"(session_meta|turn_context|response_item|event_msg)"')
_INJECTED_TAG = re.compile(r"^<([A-Za-z_][\w \-]*)>.*</\1>$", re.DOTALL)
_EXIT_CODE = re.compile(r"(?:Process exited with code|Exit code:?)\s*(-?\d+)")


def _is_injected(text: str) -> bool:
    """True for context Codex adds to the conversation rather than words the user typed."""
    stripped = text.strip()
    return stripped.startswith("# AGENTS.md instructions") or bool(_INJECTED_TAG.match(stripped))


def _is_user_instructions(text: str) -> bool:
    """True for the AGENTS.md or user-instructions block Codex injects (what the user asked the agent to follow)."""
    stripped = text.lstrip()
    return stripped.startswith(("# AGENTS.md instructions", "<user_instructions>"))


def _unwrap_output(output: Any) -> tuple[str, int | None, dict[str, Any]]:
    """Tool output as text, its exit code when it states one, and any extra metadata.

    Older Codex versions wrap shell output as a JSON string ``{"output", "metadata": {"exit_code"}}``;
    newer ones write plain text with a ``Process exited with code N`` line.
    """
    extra: dict[str, Any] = {}
    if isinstance(output, dict):
        if isinstance(output.get("success"), bool):
            extra["success"] = output["success"]
        text = text_of(output.get("content", output))
        return text, None if extra.get("success", True) else 1, extra
    if not isinstance(output, str):
        return text_of(output), None, extra
    if output.startswith("{") and '"output"' in output[:200]:
        try:
            wrapped = orjson.loads(output)
        except orjson.JSONDecodeError:
            wrapped = None
        if isinstance(wrapped, dict) and isinstance(wrapped.get("output"), str):
            meta = as_dict(wrapped.get("metadata"))
            extra.update(meta)
            code = meta.get("exit_code")
            return wrapped["output"], code if isinstance(code, int) else None, extra
    match = _EXIT_CODE.search(output[:1000])
    return output, int(match.group(1)) if match else None, extra


class _Rollout:
    """Builds one :class:`Trace` from the lines of a rollout, in two passes."""

    def __init__(self, lines: list[tuple[int, dict[str, Any]]], warnings: list[str]) -> None:
        self.lines = lines
        self.warnings = warnings
        self.steps: list[Step] = []
        self.skipped: Counter[str] = Counter()
        self.meta: dict[str, Any] = {}
        self.turn_contexts: list[dict[str, Any]] = []
        self.model: str | None = None
        self.call_names: dict[str, str] = {}
        self.task: str | None = None
        self.instructions: list[str] = []
        """AGENTS.md / user-instruction blocks Codex injected into the conversation."""
        self.final_output: str | None = None
        self.last_agent_message: str | None = None
        self.usage: Usage | None = None
        self.status: Literal["ok", "error", "unknown"] = "unknown"
        self.error: str | None = None
        # Filled by the first pass: what the response items already say, and command outcomes.
        self.item_texts: set[tuple[str, str]] = set()
        self.reasoning_texts: set[str] = set()
        self.command_ends: dict[str, dict[str, Any]] = {}
        self.first_prompt: str | None = None
        """The first ``user_message`` event's text: what the user typed, where Codex writes such events."""

    def build(self, source: Any) -> Trace:
        self._index()
        for number, line in self.lines:
            kind = line.get("type")
            payload = line.get("payload")
            when = parse_time(line.get("timestamp"))
            ref = f"line:{number + 1}"
            if not isinstance(payload, dict):
                self.skipped[f"{kind}:no-payload"] += 1
            elif kind == "session_meta":
                self._session_meta(payload)
            elif kind == "turn_context":
                self._turn_context(payload)
            elif kind == "response_item":
                self._response_item(payload, when, ref)
            elif kind == "event_msg":
                self._event(payload, when, ref)
            elif kind == "compacted":
                self._add(Step(index=0, kind="system", agent=AGENT, content=text_of(payload.get("message")) or "[conversation history compacted]", started_at=when, source_ref=ref, attributes={"compacted": True}))
            else:
                self.skipped[f"line:{kind}"] += 1
        return self._trace(source)

    # -- first pass -------------------------------------------------------------------------

    def _index(self) -> None:
        for _, line in self.lines:
            payload = line.get("payload")
            if not isinstance(payload, dict):
                continue
            kind, sub = line.get("type"), payload.get("type")
            if kind == "response_item" and sub == "message":
                self.item_texts.add((str(payload.get("role")), text_of(payload.get("content")).strip()))
            elif kind == "response_item" and sub == "reasoning":
                self.reasoning_texts.add(text_of(payload.get("summary")).strip())
            elif kind == "event_msg" and sub in ("exec_command_end", "patch_apply_end") and payload.get("call_id"):
                self.command_ends[str(payload["call_id"])] = payload
            elif kind == "event_msg" and sub == "user_message" and self.first_prompt is None:
                text = text_of(payload.get("message")).strip()
                if text and not _is_injected(text):
                    self.first_prompt = text

    # -- line handlers ----------------------------------------------------------------------

    def _add(self, step: Step) -> None:
        step.index = len(self.steps)
        self.steps.append(step)

    def _session_meta(self, payload: dict[str, Any]) -> None:
        self.meta.update(payload)

    def _turn_context(self, payload: dict[str, Any]) -> None:
        if isinstance(payload.get("model"), str):
            self.model = payload["model"]
        if payload not in self.turn_contexts:
            self.turn_contexts.append(payload)

    def _response_item(self, item: dict[str, Any], when: datetime | None, ref: str) -> None:
        sub = item.get("type")
        if sub == "message":
            self._message(item, when, ref)
        elif sub == "reasoning":
            text = "\n".join(t for t in (text_of(item.get("summary")), text_of(item.get("content"))) if t)
            if text.strip():
                self._add(Step(index=0, kind="plan", agent=AGENT, role="assistant", content=text, model=self.model, started_at=when, source_ref=ref, attributes={"reasoning": True}))
            else:
                self.skipped["reasoning (encrypted, no summary)"] += 1
        elif sub in ("function_call", "custom_tool_call", "local_shell_call"):
            self._call(item, when, ref)
        elif sub in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
            self._output(item, when, ref)
        elif sub == "web_search_call":
            action = item.get("action")
            call = tool_call("web_search", action if action is not None else {}, None)
            self._add(Step(index=0, kind="tool_call", agent=AGENT, role="assistant", tool_calls=[call], model=self.model, started_at=when, source_ref=ref, attributes={k: v for k, v in item.items() if k not in ("type", "action")}))
        else:
            self.skipped[f"response_item:{sub}"] += 1

    def _message(self, item: dict[str, Any], when: datetime | None, ref: str) -> None:
        role = str(item.get("role") or "user")
        text = text_of(item.get("content"))
        extra = {k: v for k, v in item.items() if k not in ("type", "role", "content")}
        if role == "user" and _is_user_instructions(text):
            self.instructions.append(text.strip())
        if role in ("developer", "system") or (role == "user" and _is_injected(text)):
            self._add(Step(index=0, kind="system", agent="system", role="developer" if role == "developer" else ("system" if role == "system" else "user"), content=text, started_at=when, source_ref=ref, attributes={"injected_context": True, **extra}))
        elif role == "assistant":
            self._assistant(text, when, ref, extra)
        else:
            self._user(text, when, ref, extra)

    def _user(self, text: str, when: datetime | None, ref: str, extra: dict[str, Any]) -> None:
        # Newer rollouts carry user items Codex wrote itself before the prompt (context blocks whose
        # markers vary by version); the user_message event is what was typed, so it names the task.
        if self.task is None and (self.first_prompt is None or text.strip() == self.first_prompt):
            self.task = text
        self._add(Step(index=0, kind="message", agent="user", role="user", recipient=AGENT, content=text, started_at=when, source_ref=ref, attributes=extra))

    def _assistant(self, text: str, when: datetime | None, ref: str, extra: dict[str, Any]) -> None:
        self.final_output = text
        self._add(Step(index=0, kind="message", agent=AGENT, role="assistant", content=text, model=self.model, started_at=when, source_ref=ref, attributes=extra))

    def _call(self, item: dict[str, Any], when: datetime | None, ref: str) -> None:
        call_id = item.get("call_id") or item.get("id")
        name = str(item.get("name") or item.get("type", "tool").removesuffix("_call"))
        arguments = item.get("arguments", item.get("input", item.get("action")))
        if call_id:
            self.call_names[str(call_id)] = name
        extra = {k: v for k, v in item.items() if k not in ("type", "name", "arguments", "input", "call_id")}
        self._add(Step(index=0, kind="tool_call", agent=AGENT, role="assistant", tool_calls=[tool_call(name, arguments, call_id)], model=self.model, started_at=when, source_ref=ref, attributes=extra))

    def _output(self, item: dict[str, Any], when: datetime | None, ref: str) -> None:
        call_id = str(item.get("call_id")) if item.get("call_id") else None
        text, code, extra = _unwrap_output(item.get("output"))
        end = self.command_ends.get(call_id or "")
        if end is not None:
            if isinstance(end.get("exit_code"), int):
                code = end["exit_code"]
            if end.get("success") is False:
                code = code or 1
            extra.update({k: end[k] for k in ("exit_code", "duration", "status", "success") if k in end})
        failed = code is not None and code != 0
        result = ToolResult(call_id=call_id, name=self.call_names.get(call_id or ""), output=text, is_error=failed)
        self._add(Step(index=0, kind="tool_result", agent="tool", role="tool", tool_results=[result], started_at=when, source_ref=ref, error=f"exit code {code}" if failed else None, attributes=extra))

    def _event(self, event: dict[str, Any], when: datetime | None, ref: str) -> None:
        sub = event.get("type")
        if sub == "user_message":
            text = text_of(event.get("message"))
            if ("user", text.strip()) in self.item_texts:
                self.skipped["event_msg:user_message (duplicate of a response item)"] += 1
            elif _is_injected(text):
                self._add(Step(index=0, kind="system", agent="system", role="user", content=text, started_at=when, source_ref=ref, attributes={"injected_context": True}))
            else:
                self._user(text, when, ref, {"from_event": True})
        elif sub == "agent_message":
            text = text_of(event.get("message"))
            if ("assistant", text.strip()) in self.item_texts:
                self.skipped["event_msg:agent_message (duplicate of a response item)"] += 1
            else:
                self._assistant(text, when, ref, {"from_event": True, **{k: v for k, v in event.items() if k not in ("type", "message")}})
        elif sub == "agent_reasoning":
            text = text_of(event.get("text"))
            if text.strip() in self.reasoning_texts:
                self.skipped["event_msg:agent_reasoning (duplicate of a response item)"] += 1
            else:
                self._add(Step(index=0, kind="plan", agent=AGENT, role="assistant", content=text, model=self.model, started_at=when, source_ref=ref, attributes={"reasoning": True, "from_event": True}))
        elif sub == "token_count":
            info = event.get("info")
            total = info.get("total_token_usage") if isinstance(info, dict) else None
            if isinstance(total, dict):
                self.usage = Usage(input_tokens=total.get("input_tokens"), output_tokens=total.get("output_tokens"), total_tokens=total.get("total_tokens"))
            self.skipped["event_msg:token_count (summed into usage)"] += 1
        elif sub == "task_started":
            self.status = "unknown"
            self.skipped["event_msg:task_started"] += 1
        elif sub == "task_complete":
            self.status = "ok"
            if isinstance(event.get("last_agent_message"), str):
                self.last_agent_message = event["last_agent_message"]
            self.skipped["event_msg:task_complete"] += 1
        elif sub in ("error", "stream_error", "turn_aborted"):
            message = text_of(event.get("message") or event.get("reason") or sub)
            self._add(Step(index=0, kind="error", agent=AGENT, content=message, error=message, started_at=when, source_ref=ref, attributes={"event": sub}))
            if sub != "stream_error":
                self.status, self.error = "error", message
        elif sub in ("exec_command_end", "patch_apply_end"):
            self.skipped[f"event_msg:{sub} (merged into its tool result)"] += 1
        else:
            self.skipped[f"event_msg:{sub}"] += 1

    # -- assembly ---------------------------------------------------------------------------

    def _trace(self, source: Any) -> Trace:
        instructions = self.meta.pop("instructions", None)
        base = self.meta.pop("base_instructions", None)
        system_prompt = text_of(base) if base else (instructions if isinstance(instructions, str) else None)
        # Session instructions (the user's AGENTS.md in older rollouts) and injected AGENTS.md blocks.
        given = [instructions.strip()] if isinstance(instructions, str) and instructions.strip() else []
        given += [text for text in self.instructions if text not in given]
        model = self.model or next((s.model for s in self.steps if s.model), None)
        metadata: dict[str, Any] = {"session": self.meta}
        if self.turn_contexts:
            metadata["turn_contexts"] = self.turn_contexts
        if self.skipped:
            metadata["not_rendered"] = dict(self.skipped)
        if not self.steps:
            raise TraceFormatError("Codex rollout holds no messages, tool calls or events to rebuild a run from", path=source.path)
        run_id = self.meta.get("id")
        return assemble_trace(
            self.steps,
            source=source,
            known_agents=[Agent(name=AGENT, role="coding agent (OpenAI Codex CLI)", model=model, system_prompt=system_prompt)],
            task=with_instructions(self.task, given, "session instructions / AGENTS.md"),
            final_output=self.final_output if self.final_output is not None else self.last_agent_message,
            usage=self.usage,
            derive_task=False,
            derive_final_output=False,
            derive_usage=False,
            derive_agents=False,
            trace_id=str(run_id) if run_id else "",
            framework="codex",
            status=self.status,
            error=self.error,
            started_at=parse_time(self.meta.get("timestamp")) or next((s.started_at for s in self.steps if s.started_at), None),
            ended_at=parse_time(self.lines[-1][1].get("timestamp")) if self.lines else None,
            metadata=metadata,
            warnings=self.warnings,
        )


def _looks_like_line(value: Any) -> bool:
    # A type that is a list or object is no rollout line (and could not be looked up in a set).
    return isinstance(value, dict) and isinstance(value.get("type"), str) and value["type"] in LINE_TYPES and "payload" in value


class CodexRollout(TraceFormat):
    """Codex CLI rollout JSONL: one run per file."""

    name = "codex_rollout"
    description = "OpenAI Codex CLI rollout JSONL (session_meta/response_item/event_msg lines; IT-Bench SRE)"
    priority = 70
    example = '{"timestamp": ..., "type": "session_meta" | "response_item" | "event_msg", "payload": {...}}'

    def detect(self, raw: RawInput) -> float:
        """Sniff the head, then check the parsed shape."""
        if raw.path is None:
            data = raw.data() if raw.obj is not None and not isinstance(raw.obj, str | bytes) else None
            if isinstance(data, list) and data and all(_looks_like_line(x) for x in data[:5]):
                return 0.95
            return 0.0
        head = raw.head.lstrip("\ufeff")
        if not head.startswith("{"):
            return 0.0
        lines = head.split("\n", 6)
        complete = [ln for ln in lines[:-1] if ln.strip()][:5]
        parsed = 0
        for line in complete:
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                return 0.0
            if not _looks_like_line(value):
                return 0.0
            parsed += 1
        if parsed:
            return 0.95
        # A first line longer than the sniffed head (big session_meta): trust its opening keys.
        return 0.9 if _FIRST_LINE.match(head) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the run(s) in ``raw``."""
        lines: list[tuple[int, dict[str, Any]]] = []
        warnings: list[str] = []
        for number, value in raw.records():
            if isinstance(value, JsonlLineError):
                warnings.append(f"skipped {value} (a truncated or broken line)")
            elif _looks_like_line(value):
                lines.append((number, value))
            else:
                warnings.append(f"skipped line {number + 1}: not a rollout line (no type/payload)")
        if not lines:
            raise raw.fail("no Codex rollout lines ({type, payload} with type session_meta/response_item/event_msg)")
        yield _Rollout(lines, warnings).build(self.source(raw))


register(CodexRollout())
