"""A timeline of steps built from messages: no repeated history, tool calls paired with their results.

* **No repeated history.** Every LLM call re-sends the conversation so far. :meth:`Timeline.add_new`
  emits only the messages of an input list that were not emitted before, counting occurrences (a
  message that legitimately appears twice is kept twice). Keys ignore the role on purpose: group
  chats re-send one agent's output to the next agent under the role ``user``.
* **Tool calls paired with results.** Results are matched to calls by id; a result without an id
  (Gemini, some tool spans) takes the earliest unanswered call of the same tool name, and the call
  then receives the id so the pair is explicit.

Messages come from :func:`mast.normalize._messages.to_messages` (any dialect).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from typing import Any

import orjson

from mast.caps import check_more_steps
from mast.normalize._common import parse_arguments
from mast.normalize._messages import (
    CHAT_ROLES,
    CREWAI_DELEGATION_TOOLS,
    History,
    Msg,
    _canon,
    _fresh,
    _norm,
    history_keys,
    result_text,
)
from mast.normalize._readable import TERMINAL_TOOLS
from mast.trace import Agent, Step, ToolCall, ToolResult


@dataclass
class _Call:
    call: ToolCall
    agent: str | None
    answered: bool = False


class Timeline:
    """Builds ordered steps from messages, without repeated history and with tool calls paired.

    Args:
        default_agent: name for assistant messages that carry none.
        assistant_kind: step kind of assistant messages (``message`` for chat lists, ``llm`` for
            model-call spans).
    """

    def __init__(self, *, default_agent: str = "assistant", assistant_kind: str = "message") -> None:
        self.steps: list[Step] = []
        self.default_agent = default_agent
        self.assistant_kind = assistant_kind
        self.system_prompts: dict[str, str] = {}
        self.framework_hints: set[str] = set()
        self.warnings: list[str] = []
        """What could not be read in the messages emitted (each once), for the trace's warnings."""
        self._seen: dict[tuple[Any, ...], int] = {}
        """How many times each history key was emitted (see :func:`~mast.normalize._messages.history_keys`)."""
        self._calls: list[_Call] = []
        self._by_id: dict[str, _Call] = {}
        """The first call with each id: pairing by id without walking every call (runs re-send all results)."""
        self._settled: OrderedDict[int, tuple[int, dict[tuple[Any, ...], int]]] = OrderedDict()
        """Input lists (:class:`History` tokens) whose every message :meth:`add_new` would skip again, as
        (length, occurrences of each key in the list): a list that continues one skips that part unseen."""

    # keys for "was this message emitted before?"
    @staticmethod
    def _lookup_keys(msg: Msg) -> list[tuple[Any, ...]]:
        if msg.keys is None:
            msg.keys = Timeline._compute_keys(msg)
        return msg.keys

    @staticmethod
    def _compute_keys(msg: Msg) -> list[tuple[Any, ...]]:
        return history_keys(msg)

    def _register(self, msg: Msg) -> None:
        keys: list[tuple[Any, ...]] = []
        for result in msg.tool_results:
            if result.call_id:
                keys.append(("tid", result.call_id))
            keys.append(("ttext", _canon(result.output)))
            if result.name:
                keys.append(("tname", result.name))
        if not (msg.role == "tool" and msg.tool_results):
            text = _norm(msg.content)
            if msg.tool_calls:
                if all(c.id for c in msg.tool_calls):
                    keys.append(("m", text, tuple(c.id for c in msg.tool_calls)))
                    keys.append(("cids", tuple(c.id for c in msg.tool_calls)))
                keys.append(("mn", text, tuple(c.name for c in msg.tool_calls)))
            else:
                keys.append(("m", text, ()))
        seen = self._seen
        for key in keys:
            seen[key] = seen.get(key, 0) + 1

    def remember_call(self, call: ToolCall, agent: str) -> None:
        """Record a call a reader found after emitting its step (a text protocol's ``Action:``), so a result can pair with it."""
        self._remember(_Call(call=call, agent=agent))

    def _remember(self, entry: _Call) -> None:
        self._calls.append(entry)
        if entry.call.id:
            self._by_id.setdefault(entry.call.id, entry)

    def _match_call(self, call_id: str | None, name: str | None) -> _Call | None:
        if call_id:
            found = self._by_id.get(call_id)
            if found is not None:
                return found
        for entry in self._calls:
            if entry.answered or (call_id and entry.call.id):
                continue
            if name is None or entry.call.name == name:
                if name is None and sum(1 for e in self._calls if not e.answered) != 1:
                    return None
                return entry
        return None

    def _pair(self, result: ToolResult) -> _Call | None:
        entry = self._match_call(result.call_id, result.name)
        if entry is None:
            return None
        entry.answered = True
        if entry.call.id is None and result.call_id:
            entry.call.id = result.call_id
            self._by_id.setdefault(result.call_id, entry)
        # assigned only when missing: a pydantic model's assignment costs more than the comparison
        if not result.call_id:
            result.call_id = entry.call.id
        if not result.name:
            result.name = entry.call.name
        return entry

    def _delegate(self, entry: _Call | None) -> str | None:
        if entry is None or entry.call.name not in CREWAI_DELEGATION_TOOLS or not isinstance(entry.call.arguments, dict):
            return None
        coworker = entry.call.arguments.get("coworker")
        if isinstance(coworker, str) and coworker.strip():
            self.framework_hints.add("crewai")
            return coworker.strip()
        return None

    def add(
        self, msg: Msg, *, agent: str | None = None, kind: str | None = None, assistant_kind: str | None = None, **fields: Any
    ) -> Step | None:
        """Emit ``msg`` as a step (always; no history check). Returns ``None`` for empty messages."""
        if msg.empty:
            return None
        if msg.shared and (msg.tool_results or any(c.id is None for c in msg.tool_calls)):
            # pairing below may set a result's name and id, or later an id-less call's id: never on the cached copy
            msg = _fresh(msg)
        if msg.warnings:
            self.warnings.extend(w for w in msg.warnings if w not in self.warnings)
        fields["id"] = fields.get("id") or msg.id
        attributes = dict(fields.pop("attributes", None) or {})
        attributes.update({k: v for k, v in msg.extra.items() if k not in attributes})
        if msg.role in ("system", "developer"):
            owner = agent or self.default_agent
            step = Step(index=len(self.steps), kind=kind or "system", agent="system", recipient=owner, role=msg.role,
                        content=msg.content, attributes=attributes, **fields)
            self.system_prompts.setdefault(owner, msg.text)
        elif msg.role == "tool":
            result = msg.tool_results[0]
            entry = self._pair(result)
            coworker = self._delegate(entry)
            step = Step(
                index=len(self.steps),
                kind=kind or "tool_result",
                agent=coworker or "tool",
                role="tool",
                recipient=entry.agent if entry else None,
                content=msg.text,
                tool_results=msg.tool_results,
                error=result.output if result.is_error else None,
                attributes=attributes,
                **fields,
            )
        else:
            if msg.role == "assistant":
                who = msg.name or agent or self.default_agent
            else:
                # A user turn is the user's (or the named author's), never the agent being traced.
                who = msg.name or "user"
            if msg.role == "assistant":
                step_kind = kind or assistant_kind or self.assistant_kind
            else:
                step_kind = kind or "message"
            if msg.model and "model" not in fields:
                fields["model"] = msg.model
            if msg.usage and "usage" not in fields:
                fields["usage"] = msg.usage
            # A user turn is addressed to the agent whose model call (or conversation) it is in.
            recipient = (agent or self.default_agent) if msg.role == "user" and who != (agent or self.default_agent) else None
            step = Step(index=len(self.steps), kind=step_kind, agent=who, recipient=recipient,
                        role=msg.role if msg.role in CHAT_ROLES else None,
                        content=msg.content, tool_calls=msg.tool_calls, attributes=attributes, **fields)
            for call in msg.tool_calls:
                self._remember(_Call(call=call, agent=who))
        check_more_steps(len(self.steps))
        self.steps.append(step)
        self._register(msg)
        return step

    def add_new(
        self, msgs: Iterable[Msg], *, agent: str | None = None, assistant_kind: str | None = None, **fields: Any
    ) -> list[Step]:
        """Emit the messages of an input list that were not emitted before (history is skipped).

        Occurrences are counted: the n-th copy of a message in this list is new only when fewer than
        n copies were emitted so far. Empty messages are never emitted.

        A :class:`History` that continues a list this timeline settled (every message of it would
        be skipped again, whatever is emitted later: counts only grow) starts after that list: each
        model call's input costs its new tail, not the whole conversation again.
        """
        items = msgs if isinstance(msgs, list) else list(msgs)
        start, local = self._resume(items)
        added: list[Step] = []
        checked: list[tuple[Msg, list[tuple[Any, ...]], list[int]]] = []
        seen = self._seen.get
        for msg in islice(items, start, None):
            if msg.empty:
                continue
            keys = self._lookup_keys(msg)
            counts = []
            for key in keys:
                counts.append(local.get(key, 0) + 1)
                local[key] = counts[-1]
            checked.append((msg, keys, counts))
            if any(n <= seen(key, 0) for key, n in zip(keys, counts, strict=True)):
                if msg.role == "tool" and msg.tool_results:
                    result = msg.tool_results[0]
                    known = self._by_id.get(result.call_id) if result.call_id else None
                    if known is None or not known.answered:  # re-sent results of answered calls change nothing
                        self._pair(result.model_copy() if msg.shared else result)
                continue
            step = self.add(msg, agent=agent, assistant_kind=assistant_kind, **dict(fields))
            if step is not None:
                added.append(step)
        if isinstance(items, History) and all(self._settled_message(*entry) for entry in checked):
            self._settled[items.token] = (len(items), local)
            if len(self._settled) > 16:
                self._settled.popitem(last=False)
        return added

    def _resume(self, items: list[Msg]) -> tuple[int, dict[tuple[Any, ...], int]]:
        """Where :meth:`add_new` starts in ``items`` and the key counts of what it skips unseen."""
        if isinstance(items, History) and items.prefix is not None:
            settled = self._settled.get(items.prefix)
            if settled is not None and settled[0] == items.prefix_len <= len(items):
                return settled[0], settled[1].copy()
        return 0, {}

    def _settled_message(self, msg: Msg, keys: list[tuple[Any, ...]], counts: list[int]) -> bool:
        """True when going through ``msg`` again (at the same place in its list) would skip it and change nothing."""
        seen = self._seen.get
        if not any(n <= seen(key, 0) for key, n in zip(keys, counts, strict=True)):
            return False
        if msg.role == "tool" and msg.tool_results:
            call_id = msg.tool_results[0].call_id
            known = self._by_id.get(call_id) if call_id else None
            return known is not None and known.answered
        return True

    def add_tool(
        self,
        name: str,
        *,
        call_id: str | None = None,
        arguments: Any = None,
        output: Any = None,
        is_error: bool = False,
        agent: str | None = None,
        **fields: Any,
    ) -> Step:
        """Emit a tool execution recorded as one event (a tool span): paired with its call if one was emitted."""
        text = result_text(output)
        result = ToolResult(call_id=call_id, name=name, output=text, is_error=is_error)
        entry = self._match_call(call_id, name)
        attributes = dict(fields.pop("attributes", None) or {})
        recorded_error = fields.pop("error", None)
        error = (recorded_error or text) if is_error else recorded_error
        if entry is not None:
            self._pair(result)
            coworker = self._delegate(entry)
            step = Step(index=len(self.steps), kind="tool_result", agent=coworker or "tool", role="tool", recipient=entry.agent,
                        tool_results=[result], error=error, attributes=attributes, **fields)
        else:
            parsed, raw = parse_arguments(arguments)
            call = ToolCall(id=call_id, name=name, arguments=parsed, arguments_raw=raw)
            self._remember(_Call(call=call, agent=agent, answered=True))
            step = Step(index=len(self.steps), kind="tool_call", agent=agent or self.default_agent, tool_calls=[call], tool_results=[result],
                        error=error, attributes=attributes, **fields)
        check_more_steps(len(self.steps))
        self.steps.append(step)
        self._register(Msg(role="tool", tool_results=[result]))
        return step

    def add_step(self, **fields: Any) -> Step:
        """Emit a step that is not a message (an agent span, an error)."""
        step = Step(index=len(self.steps), **fields)
        check_more_steps(len(self.steps))
        self.steps.append(step)
        return step

    # --- what the steps say about the run -------------------------------------------------------

    def agents(self, known: Iterable[Agent] = ()) -> list[Agent]:
        """Agents in order of first appearance, with the model and system prompt seen for each."""
        agents: dict[str, Agent] = {a.name: a for a in known}
        for step in self.steps:
            name = step.agent
            if not name or name.lower() in ("user", "tool", "system", "human", "environment"):
                continue
            if name not in agents:
                agents[name] = Agent(name=name)
            agent = agents[name]
            if agent.model is None and step.model:
                agent.model = step.model
        for name, prompt in self.system_prompts.items():
            if name in agents and agents[name].system_prompt is None:
                agents[name].system_prompt = prompt
        return list(agents.values())

    def first_time(self) -> datetime | None:
        """Start of the earliest timed step."""
        times = [s.started_at for s in self.steps if s.started_at]
        return min(times) if times else None

    def task(self) -> str | None:
        """The first user message: what the run was asked to do."""
        for step in self.steps:
            if step.role == "user" and step.content.strip():
                return step.content.strip()
        return None

    def final_answer(self) -> str | None:
        """The last assistant text, when the conversation ends on the assistant's answer (see :func:`closing_answer`)."""
        return closing_answer(self.steps)


_HANDOFF_TOOL = re.compile(r"^(?:transfer_to|transfer_back|handoff|hand_off)", re.IGNORECASE)


def is_handoff_tool(name: str) -> bool:
    """A tool that passes control to another agent (ADK ``transfer_to_agent``, Agents SDK ``transfer_to_x``)."""
    return bool(_HANDOFF_TOOL.match(name or ""))


def closing_answer(steps: Sequence[Step]) -> str | None:
    """The run's last substantive assistant message, when no explicit answer exists.

    A closing finish / submit / output-tool call is the answer (its words, else its arguments).
    Otherwise the last assistant text is: system notes, a user request that got no reply, wordless
    tool calls and their results after it, and a wordless hand-off back to a coordinator are passed
    over; a delegated coworker's reply (the result of a delegation tool) is an agent's message (a transcript saved mid-tool-use, or with the next question pending, still has its last
    words). ``None`` when the run holds no assistant text after its last user request.
    """
    results_after = False
    for step in reversed(steps):
        if step.role in ("system", "developer"):
            continue
        if step.tool_results and not step.tool_calls and (step.role == "tool" or not step.content.strip()):
            delegated = [r.output.strip() for r in step.tool_results if r.name in CREWAI_DELEGATION_TOOLS and r.output.strip()]
            if delegated:
                return delegated[-1]  # what a delegated coworker answered is an agent's words, the last ones said
            results_after = True  # decided by the call it answers, further back
            continue
        if step.tool_calls and not step.content.strip() and all(is_handoff_tool(c.name) for c in step.tool_calls):
            results_after = False  # a hand-off with no words (ADK's transfer back): the answer came before it
            continue
        if step.role == "assistant" and step.tool_calls and all(c.name.lower() in TERMINAL_TOOLS for c in step.tool_calls):
            # A finish / submit / output-tool call is the answer: its words, else what it was called with.
            words = _strip_thinking(step.content.strip())
            return words or "\n".join(_call_text(c) for c in step.tool_calls) or None
        # Thinking is not output: a step that only thought is wordless, like one that only called a tool.
        words = strip_thinking(step.content) if step.role == "assistant" else step.content.strip()
        if results_after and step.role == "assistant" and not words:
            continue  # tool use after the last words: the words are still the last thing said
        if step.role == "user" and step.kind == "message" and step.content.strip() and not step.tool_results and not step.tool_calls:
            continue
        if step.role == "assistant" and words:
            return words
        if step.role == "assistant" or step.role == "tool" or step.tool_results:
            continue
        return None
    return None


def _call_text(call: ToolCall) -> str:
    if isinstance(call.arguments, str):
        return call.arguments
    if call.arguments in (None, {}, []):
        return call.arguments_raw or ""
    return orjson.dumps(call.arguments, default=str).decode()


def strip_thinking(text: str) -> str:
    """A step's text without the ``<thinking>...</thinking>`` block that opens it; ``""`` when it only thought."""
    text = text.strip()
    if text.startswith("<thinking>") and "</thinking>" in text:
        return text.split("</thinking>", 1)[1].strip()
    return text


_strip_thinking = strip_thinking


