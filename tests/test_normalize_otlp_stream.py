"""OTLP JSONL read in two passes: lines indexed by trace id, then one trace built at a time.

The fixtures are written here: agent runs whose spans are spread over several lines, interleaved
with other runs, plus broken lines, so the index must put every span back with its own trace.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mast.errors import TraceFormatError
from mast.normalize import _messages, iter_traces, load_traces
from mast.normalize._messages import history_messages, to_messages
from mast.normalize.base import RawInput
from mast.normalize.file_formats.otlp import _index_lines
from mast.trace import Trace


def _attr(key: str, value: Any) -> dict[str, Any]:
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}
    return {"key": key, "value": {"stringValue": value}}


def _msg(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": text}]}


def _chat(trace: str, span: str, parent: str, history: list[dict[str, Any]], reply: str, at: int) -> dict[str, Any]:
    return {
        "traceId": trace, "spanId": span, "parentSpanId": parent, "name": "chat m", "startTimeUnixNano": str(at),
        "endTimeUnixNano": str(at + 10),
        "attributes": [_attr("gen_ai.operation.name", "chat"), _attr("gen_ai.request.model", "m"),
                       _attr("gen_ai.input.messages", json.dumps(history)),
                       _attr("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": reply}]}]))],
    }


def _root(trace: str, span: str, agent: str, at: int) -> dict[str, Any]:
    return {"traceId": trace, "spanId": span, "name": f"invoke_agent {agent}", "startTimeUnixNano": str(at), "endTimeUnixNano": str(at + 100),
            "attributes": [_attr("gen_ai.operation.name", "invoke_agent"), _attr("gen_ai.agent.name", agent)]}


def _request(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"resource": {"attributes": [_attr("service.name", "crew")]}, "scopeSpans": [{"scope": {"name": "s"}, "spans": list(spans)}]}]}


TA, TB = "a" * 32, "b" * 32


def _runs() -> list[dict[str, Any]]:
    """Two runs, each spread over two lines, the lines interleaved; a span links to the other run."""
    history_a = [_msg("system", "You are Ada."), _msg("user", "Count the apples.")]
    history_b = [_msg("user", "Name a colour.")]
    first_a = _chat(TA, "a1", "a0", history_a, "There are three.", 10)
    first_a["links"] = [{"traceId": TB, "spanId": "b0"}]  # mentions the other run's id: must not mix them
    second_history = [*history_a, {"role": "assistant", "parts": [{"type": "text", "content": "There are three."}]}, _msg("user", "And pears?")]
    return [
        _request(_root(TA, "a0", "Ada", 1), first_a),
        _request(_root(TB, "b0", "Bob", 2), _chat(TB, "b1", "b0", history_b, "Blue.", 20)),
        _request(_chat(TA, "a2", "a0", second_history, "Two pears.", 30)),
    ]


def _write(path: Path, records: list[Any]) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


def test_spans_of_a_run_spread_over_lines_come_back_together(tmp_path: Path) -> None:
    traces = load_traces(_write(tmp_path / "runs.jsonl", _runs()))
    assert [t.trace_id for t in traces] == [TA, TB]  # order of first appearance
    ada, bob = traces
    assert [(s.agent, s.content) for s in ada.steps if s.role != "system"] == [
        ("user", "Count the apples."), ("Ada", "There are three."), ("user", "And pears?"), ("Ada", "Two pears.")]
    assert [(s.agent, s.content) for s in bob.steps] == [("user", "Name a colour."), ("Bob", "Blue.")]
    assert [t.source.record for t in traces] == [0, 1]


def test_broken_and_foreign_lines_are_errors_and_the_runs_still_come(tmp_path: Path) -> None:
    records: list[Any] = [*_runs()]
    records.insert(1, '{"resourceSpans": [ broken')
    records.append({"hello": "world"})
    items = list(iter_traces(_write(tmp_path / "mixed.jsonl", records)))
    errors = [i for i in items if isinstance(i, TraceFormatError)]
    traces = [i for i in items if isinstance(i, Trace)]
    assert [t.trace_id for t in traces] == [TA, TB]
    assert sorted(e.record or 0 for e in errors) == [1, 4]
    assert any("not valid JSON" in str(e) for e in errors) and any("not an OTLP export request" in str(e) for e in errors)


def test_a_line_with_a_broken_tail_after_a_trace_id_is_reported_once(tmp_path: Path) -> None:
    good = _runs()
    broken = json.dumps(good[2])[:-20]  # the trace id is readable, the JSON is not
    items = list(iter_traces(_write(tmp_path / "cut.jsonl", [good[0], good[1], broken])))
    errors = [i for i in items if isinstance(i, TraceFormatError)]
    assert len(errors) == 1 and errors[0].record == 2
    ada = next(i for i in items if isinstance(i, Trace) and i.trace_id == TA)
    assert "Two pears." not in [s.content for s in ada.steps]


def test_the_index_records_byte_offsets_of_each_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "runs.jsonl", _runs())
    index, errors = _index_lines(RawInput(path=path))
    blob = path.read_bytes()
    assert not errors and list(index) == [TA, TB]
    for lines in index.values():
        for number, offset, length in lines:
            assert blob[offset: offset + length].rstrip(b"\n") == blob.splitlines()[number]
    assert [n for n, _, _ in index[TA]] == [0, 2] and [n for n, _, _ in index[TB]] == [0, 1]  # line 0 links to TB


def test_a_file_with_no_final_newline_and_small_chunks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mast.normalize import otlp

    monkeypatch.setattr(otlp, "_CHUNK", 97)  # lines straddle many chunk borders
    path = tmp_path / "runs.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in _runs()), encoding="utf-8")
    traces = load_traces(path)
    assert [t.trace_id for t in traces] == [TA, TB] and traces[0].steps[-1].content == "Two pears."


def test_history_messages_equal_a_full_read() -> None:
    _messages.forget_history()
    history: list[dict[str, Any]] = [_msg("system", "You are Ada.")]
    for turn in range(6):
        history = [*history, _msg("user", f"question {turn}"), {"role": "assistant", "parts": [
            {"type": "text", "content": f"answer {turn}"}, {"type": "tool_call", "id": f"c{turn}", "name": "calc", "arguments": {"n": turn}}]},
            {"role": "tool", "parts": [{"type": "tool_call_response", "id": f"c{turn}", "response": str(turn)}]}]
        text = json.dumps(history)
        fast = history_messages(text)
        full = to_messages(history)
        assert fast is not None and full is not None
        assert [(m.role, m.text, [c.id for c in m.tool_calls], [r.output for r in m.tool_results]) for m in fast] == [
            (m.role, m.text, [c.id for c in m.tool_calls], [r.output for r in m.tool_results]) for m in full]
    # a list that is not an extension (edited history) is read whole, not patched
    edited = json.dumps([_msg("user", "something else"), *history[1:]])
    again = history_messages(edited)
    assert again is not None and again[0].text == "something else"
    _messages.forget_history()
