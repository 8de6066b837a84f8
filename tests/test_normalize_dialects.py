"""Message dialects are a registry: every spelling is one ``_dialect_<name>.py`` module, and what it registers decides.

The built-in dialects are checked by the dict each one claims; a dialect registered by a test
extends what counts as a message and overrides the built-in reading of a shape it claims first.
"""

from __future__ import annotations

import pkgutil
from collections.abc import Iterator
from typing import Any

import pytest

import mast.normalize.dialects as normalize_dialects
from mast.normalize import load_trace
from mast.normalize._dialects import (
    MessageDialect,
    dialect_of,
    dialects,
    register_dialect,
    unregister_dialect,
)
from mast.normalize._messages import forget_history, from_item, to_messages
from mast.normalize._msg_common import Msg

BUILT_IN: dict[str, dict[str, Any]] = {
    "openai": {"role": "user", "content": "Summarise the report."},
    "anthropic": {"role": "assistant", "content": [{"type": "tool_use", "id": "tu_1", "name": "grep", "input": {"q": "x"}}]},
    "otel_genai": {"role": "assistant", "parts": [{"type": "text", "content": "Done."}]},
    "gemini": {"role": "model", "parts": [{"text": "Done."}]},
    "langchain": {"type": "human", "content": "Summarise the report."},
    "vercel_ai": {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "grep", "input": {}}]},
    "vercel_ai_tool_call": {"toolCallId": "c1", "toolName": "grep", "input": {"q": "x"}},
    "responses": {"type": "function_call", "call_id": "c1", "name": "grep", "arguments": "{}"},
    "pydantic_ai": {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "Summarise the report."}]},
}


@pytest.fixture
def registered() -> Iterator[list[str]]:
    """Names of dialects this test registers; they are removed, and the conversion caches dropped, afterwards."""
    names: list[str] = []
    forget_history()
    yield names
    for name in names:
        unregister_dialect(name)
    forget_history()


def _add(names: list[str], dialect: MessageDialect) -> None:
    register_dialect(dialect)
    names.append(dialect.name)
    forget_history()  # conversions are cached: a dialect added later reads what it claims from now on


def test_every_dialect_module_registers_and_openai_reads_what_no_other_claims() -> None:
    modules = [m.name for m in pkgutil.iter_modules(normalize_dialects.__path__)]
    assert len(modules) >= 8
    names = [d.name for d in dialects()]
    assert set(BUILT_IN) <= set(names)
    assert names[-1] == "openai"
    fallback = dialect_of({"anything": 1})
    assert fallback is not None and fallback.name == "openai"


@pytest.mark.parametrize("name", sorted(BUILT_IN))
def test_each_built_in_spelling_is_claimed_by_its_dialect(name: str) -> None:
    message = BUILT_IN[name]
    chosen = dialect_of(message)
    assert chosen is not None and chosen.name == name
    msgs = to_messages([message])
    assert msgs is not None and msgs and not all(m.empty for m in msgs)


def _speaker_said(item: dict[str, Any]) -> bool:
    return isinstance(item.get("speaker"), str) and isinstance(item.get("said"), str)


def _read_speaker(item: dict[str, Any]) -> list[Msg]:
    speaker = item["speaker"]
    return [Msg(role="user" if speaker == "customer" else "assistant", name=None if speaker == "customer" else speaker, text=item["said"])]


def test_a_registered_dialect_extends_what_counts_as_messages(registered: list[str]) -> None:
    turns = [{"speaker": "customer", "said": "My order is late."}, {"speaker": "support", "said": "It ships tomorrow."}]
    assert to_messages(turns) is None  # nobody's spelling yet
    _add(registered, MessageDialect(name="speaker_said", matches=_speaker_said, read=_read_speaker, order=15))
    msgs = to_messages(turns)
    assert msgs is not None
    assert [(m.role, m.name, m.text) for m in msgs] == [("user", None, "My order is late."), ("assistant", "support", "It ships tomorrow.")]
    # Every format that reads messages now understands it: a wrapped run of such turns.
    trace = load_trace({"trace_id": "run-9", "messages": turns})
    assert (trace.trace_id, trace.task, trace.final_output) == ("run-9", "My order is late.", "It ships tomorrow.")
    assert [a.name for a in trace.agents] == ["support"]
    unregister_dialect("speaker_said")
    registered.remove("speaker_said")
    forget_history()
    assert to_messages(turns) is None


def test_a_dialect_asked_earlier_overrides_the_built_in_reading(registered: list[str]) -> None:
    narrated = {"role": "narrator", "content": "Meanwhile, the build breaks."}
    before = from_item(narrated)
    assert [(m.role, m.extra.get("raw_role")) for m in before] == [("user", "narrator")]  # OpenAI's fallback
    _add(registered, MessageDialect(
        name="narrator_is_system",
        matches=lambda item: item.get("role") == "narrator",
        read=lambda item: [Msg(role="system", text=str(item["content"]))],
        order=99,  # before OpenAI (100), after every other built-in
    ))
    assert [(m.role, m.text) for m in from_item(narrated)] == [("system", "Meanwhile, the build breaks.")]
    assert [m.role for m in to_messages([narrated, BUILT_IN["openai"]]) or []] == ["system", "user"]


def test_membership_and_reading_are_separate_questions(registered: list[str]) -> None:
    # A dialect may count dicts as messages without reading them (here: OpenAI reads them).
    tagged = [{"author": "planner", "content": "Step 1", "role": 3}]
    assert to_messages(tagged) is None
    _add(registered, MessageDialect(name="authored", matches=lambda item: False, read=lambda item: [], order=95,
                                    is_message=lambda item: isinstance(item.get("author"), str)))
    msgs = to_messages(tagged)
    assert msgs is not None and [(m.role, m.text) for m in msgs] == [("user", "Step 1")]


def test_a_name_registers_once() -> None:
    with pytest.raises(ValueError, match="registered twice"):
        register_dialect(MessageDialect(name="openai", matches=lambda item: True, read=lambda item: []))
