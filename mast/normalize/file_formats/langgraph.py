"""LangGraph state and checkpoint dumps: the ``messages`` channel of a graph, with the node that wrote each message.

Accepted shapes (JSON; lists of checkpoints may also be JSONL):

* a state: ``graph.get_state(config).values`` / the result of ``graph.invoke`` dumped as
  ``{"messages": [<LangChain message>...], ...other channels}``;
* a snapshot: ``{"values": {"messages": [...]}, "next", "config", "metadata": {"step", "writes"}, ...}``;
* a checkpoint: ``{"v", "id", "ts", "channel_values": {"messages": [...]}, "channel_versions", ...}``
  or a checkpoint tuple ``{"config", "checkpoint": {...}, "metadata": {...}, "parent_config"}``;
* a list of snapshots / tuples (``get_state_history``, ``checkpointer.list``), newest first or not.

Messages may be plain dumps (``{"type": "ai", "content", "tool_calls", "name"}``),
``messages_to_dict`` entries (``{"type", "data"}``) or serializer constructors (``{"lc": 1, "id":
[..., "AIMessage"], "kwargs"}``). The conversation is the ``messages`` channel of the latest state
(highest ``step``); each AI message is attributed to the node whose ``metadata.writes`` produced it
(matched by message id, else by text), so a multi-agent graph keeps its agents.

Example:
    >>> from mast.normalize import load_trace
    >>> t = load_trace({"messages": [{"type": "human", "content": "Summarise the memo"},
    ...                              {"type": "ai", "content": "It asks for a budget cut.", "name": "writer"}],
    ...                 "remaining_steps": 24})
    >>> t.source.format, [s.agent for s in t.steps], t.final_output
    ('langgraph', ['user', 'writer'], 'It asks for a budget cut.')
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict
from mast.normalize._messages import LANGCHAIN_TYPES, from_langchain
from mast.normalize._sniff import sniffed_json
from mast.normalize._timeline import Timeline
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.trace import Trace


def is_langchain_message(item: Any) -> bool:
    """A LangChain message in any of its dump shapes."""
    if not isinstance(item, dict):
        return False
    if item.get("lc") and isinstance(item.get("kwargs"), dict):
        return isinstance(item.get("id"), list) and str(item["id"][-1]).endswith(("Message", "MessageChunk"))
    kind = item.get("type")
    return isinstance(kind, str) and kind in LANGCHAIN_TYPES and ("content" in item or isinstance(item.get("data"), dict))


def _state(record: Any) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]] | None:
    """``(channel values, metadata, config)`` of a state, snapshot, checkpoint or checkpoint tuple."""
    if not isinstance(record, dict):
        return None
    metadata, config = as_dict(record.get("metadata")), as_dict(record.get("config"))
    for values in (record.get("values"), as_dict(record.get("checkpoint")).get("channel_values"), record.get("channel_values"), record):
        if isinstance(values, dict) and isinstance(values.get("messages"), list) and values["messages"] and all(
            is_langchain_message(m) for m in values["messages"]
        ):
            return values, metadata, config
    return None


def states_of(data: Any) -> list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] | None:
    """Every state in ``data`` (one, or a list / JSONL of them); ``None`` unless all records are states."""
    records = [r for r in data if not isinstance(r, JsonlLineError)] if isinstance(data, list) else [data]
    states = [_state(r) for r in records]
    if not states or any(s is None for s in states):
        return None
    return [s for s in states if s is not None]


def _writers(states: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]) -> tuple[dict[str, str], dict[str, str]]:
    """Which node wrote which message: by message id and by message text."""
    by_id: dict[str, str] = {}
    by_text: dict[str, str] = {}
    for _, metadata, _ in states:
        for node, update in as_dict(metadata.get("writes")).items():
            written = as_dict(update).get("messages")
            for message in written if isinstance(written, list) else [written] if isinstance(written, dict) else []:
                if not is_langchain_message(message):
                    continue
                for msg in from_langchain(message):
                    if msg.id:
                        by_id[msg.id] = node
                    if msg.text.strip():
                        by_text[msg.text.strip()] = node
    return by_id, by_text


def _step(state: tuple[dict[str, Any], dict[str, Any], dict[str, Any]]) -> int:
    step = state[1].get("step")
    return step if isinstance(step, int) else -1


class LangGraphFormat(TraceFormat):
    """A LangGraph state, snapshot, checkpoint, or a history of them."""

    name = "langgraph"
    description = "LangGraph state / checkpoint dumps: the messages channel, each AI message attributed to the node that wrote it"
    priority = 44
    example = '{"values": {"messages": [{"type": "human", "content": ...}, {"type": "ai", ...}]}, "metadata": {"step": 3, "writes": {"agent": {...}}}}'

    def detect(self, raw: RawInput) -> float:
        """0.85 when every record holds a ``messages`` channel of LangChain messages."""
        data = sniffed_json(raw, '"messages"')
        return 0.85 if data is not None and states_of(data) is not None else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace: the latest state's conversation."""
        states = states_of(raw.data())
        if not states:
            raise raw.fail("not a LangGraph state: expected a messages channel of LangChain messages")
        values, metadata, config = max(states, key=_step)
        by_id, by_text = _writers(states)
        timeline = Timeline(default_agent="agent")
        for position, message in enumerate(values["messages"]):
            for msg in from_langchain(message):
                if msg.role == "assistant" and not msg.name:
                    msg.name = by_id.get(msg.id or "") or by_text.get(msg.text.strip())
                timeline.add(msg, source_ref=f"messages[{position}]")
        configurable = as_dict(config.get("configurable"))
        others = {k: v for k, v in values.items() if k != "messages"}
        meta: dict[str, Any] = {"channels": others} if others else {}
        if metadata:
            meta["checkpoint_metadata"] = {k: v for k, v in metadata.items() if k != "writes"}
        yield assemble_trace(
            timeline.steps, source=self.source(raw, variant="history" if len(states) > 1 else "state"), timeline=timeline,
            trace_id=str(configurable.get("thread_id") or ""), framework="langgraph", metadata=meta,
        )


register(LangGraphFormat())
