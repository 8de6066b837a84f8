"""Re-sent histories: a timeline skips the part of an input it already went through, with the same steps as a full pass."""

from __future__ import annotations

import orjson
import pytest

from mast.normalize._messages import History, forget_history, history_messages, reply_messages, to_messages
from mast.normalize._timeline import Timeline
from mast.trace import Step


def _otel(role: str, text: str = "", **part: object) -> dict[str, object]:
    parts: list[dict[str, object]] = [{"type": "text", "content": text}] if text else []
    if part:
        parts.append(dict(part))
    return {"role": role, "parts": parts}


def _conversation(tool_ids: bool) -> list[list[dict[str, object]]]:
    """The inputs of five model calls of one run: each re-sends the one before plus new messages."""
    history: list[dict[str, object]] = [_otel("system", "You are Ada."), _otel("user", "Count the files.")]
    inputs = [list(history)]
    for turn in range(4):
        call_id = f"call_{turn}" if tool_ids else None
        call: dict[str, object] = {"type": "tool_call", "name": "ls", "arguments": {"path": "."}}
        response: dict[str, object] = {"type": "tool_call_response", "response": f"{turn} files"}
        if call_id:
            call["id"] = call_id
            response["id"] = call_id
        history += [{"role": "assistant", "parts": [{"type": "text", "content": "Looking."}, call]},  # the same text every turn
                    {"role": "tool", "parts": [response]}]
        if turn == 2:
            history.append(_otel("user", "Count the files."))  # a repeated message: counted, not merged
        inputs.append(list(history))
    return inputs


def _steps(inputs: list[list[dict[str, object]]], resume: bool) -> tuple[list[Step], int]:
    """Steps of the inputs read as re-sent histories; ``resume=False`` hands the timeline plain lists."""
    forget_history()
    timeline = Timeline(assistant_kind="llm")
    looked = 0
    original = Timeline._lookup_keys

    def counting(msg):  # type: ignore[no-untyped-def]
        nonlocal looked
        looked += 1
        return original(msg)

    Timeline._lookup_keys = staticmethod(counting)  # type: ignore[method-assign]
    try:
        for number, messages in enumerate(inputs):
            msgs = history_messages(orjson.dumps(messages).decode())
            assert isinstance(msgs, History)
            timeline.add_new(msgs if resume else list(msgs), agent="Ada", id=f"in-{number}")
            # the call's own answer, emitted the way an LLM span's output is
            timeline.add_tool("ls", output=f"{number} files", agent="Ada", id=f"tool-{number}")
    finally:
        Timeline._lookup_keys = staticmethod(original)  # type: ignore[method-assign]
        forget_history()
    return timeline.steps, looked


@pytest.mark.parametrize("tool_ids", [True, False])
def test_resumed_history_gives_the_steps_of_a_full_pass(tool_ids: bool) -> None:
    inputs = _conversation(tool_ids)
    full, _ = _steps(inputs, resume=False)
    resumed, _ = _steps(inputs, resume=True)
    assert [s.model_dump() for s in resumed] == [s.model_dump() for s in full]
    assert any(s.role == "user" for s in full[2:])  # the repeated user turn came out a second time


def test_only_the_new_tail_is_looked_at_when_ids_pair_every_result() -> None:
    inputs = _conversation(tool_ids=True)
    _, full = _steps(inputs, resume=False)
    _, resumed = _steps(inputs, resume=True)
    assert full == sum(len(i) for i in inputs)
    assert resumed == len(inputs[-1])  # each message once: every input only adds its tail


def test_results_without_ids_keep_the_full_pass() -> None:
    """A re-sent result without an id may pair a call emitted later: a list holding one is gone through again."""
    inputs = _conversation(tool_ids=False)
    _, full = _steps(inputs, resume=False)
    _, resumed = _steps(inputs, resume=True)
    assert resumed == full - len(inputs[0])  # only the first input (no tool result yet) is skipped unseen


def test_a_reply_resent_in_the_next_input_reads_as_a_fresh_list() -> None:
    forget_history()
    first = [_otel("system", "You are Ada."), _otel("user", "Count the files.")]
    reply = [{"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "ls", "arguments": {}}], "finish_reason": "tool_calls"}]
    result = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "3 files"}]}
    history_messages(orjson.dumps(first).decode())
    replied = reply_messages(orjson.dumps(reply).decode())
    for following in ([*first, *reply, result], [*first, *reply]):
        text = orjson.dumps(following).decode()
        msgs = history_messages(text)
        assert msgs is not None and replied is not None
        assert msgs[len(first):len(first) + 1] == replied  # the reply's messages, taken as they are
        fresh = to_messages(orjson.loads(text))
        forget_history()
        assert msgs == fresh
        history_messages(orjson.dumps(first).decode())
        reply_messages(orjson.dumps(reply).decode())
    broken = orjson.dumps([*first, *reply]).decode()[:-1] + ",]"  # a trailing comma: not JSON, read as it would be alone
    assert history_messages(broken) == to_messages(broken)
    forget_history()
