"""The generic reader: conversations and span trees of families no reader knows, read by shape with a warning; the rest refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mast.errors import TraceFormatError
from mast.normalize import detect_format, load_trace


def _write(tmp_path: Path, name: str, data: Any) -> Path:
    path = tmp_path / name
    if name.endswith(".jsonl"):
        path.write_text("".join(json.dumps(r) + "\n" for r in data), encoding="utf-8")
    else:
        path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_a_nested_conversation_of_an_unknown_family_is_read_with_a_warning(tmp_path: Path) -> None:
    data = {
        "session": {
            "id": "s1",
            "meta": {"app": "some chat tool"},
            "history": [
                {"speaker": "human", "utterance": "Plan a 3-day trip to Rome.", "ts": 1},
                {
                    "speaker": "Planner",
                    "utterance": "Day 1 Colosseum, day 2 Vatican, day 3 Trastevere.",
                    "ts": 2,
                },
                {"speaker": "human", "utterance": "Make day 3 cheaper.", "ts": 3},
                {"speaker": "Planner", "utterance": "Day 3: a free walking tour of Trastevere.", "ts": 4},
            ],
        }
    }
    trace = load_trace(_write(tmp_path, "export.json", data))
    assert trace.source.format == "generic" and trace.source.variant == "conversation"
    assert trace.task == "Plan a 3-day trip to Rome."
    assert trace.final_output == "Day 3: a free walking tour of Trastevere."
    assert [s.agent for s in trace.steps] == ["user", "Planner", "user", "Planner"]
    (warning,) = [w for w in trace.warnings if "generically" in w]
    assert "$.session.history" in warning and "'speaker'" in warning and "'utterance'" in warning
    assert trace.steps[0].attributes.get("ts") == 1  # unmapped fields kept


def test_a_jsonl_conversation_with_content_parts_is_read(tmp_path: Path) -> None:
    lines = [
        {"sender": "user", "body": [{"kind": "para", "text": "Summarise the report."}], "seq": 0},
        {"sender": "bot", "body": [{"kind": "para", "text": "The report says sales grew 4%."}], "seq": 1},
    ]
    trace = load_trace(_write(tmp_path, "chat.jsonl", lines))
    assert trace.source.format == "generic"
    assert (trace.task, trace.final_output) == ("Summarise the report.", "The report says sales grew 4%.")
    assert any("'sender'" in w and "'body'" in w for w in trace.warnings)


def test_a_span_tree_of_an_unknown_family_is_read(tmp_path: Path) -> None:
    spans = [
        {
            "uid": 0,
            "span_id": "b",
            "parentSpanId": "a",
            "name": "search",
            "start": "2025-01-01T00:00:01Z",
            "input": "rome hotels",
            "output": "3 found",
        },
        {
            "uid": 1,
            "span_id": "a",
            "parentSpanId": None,
            "name": "agent",
            "start": "2025-01-01T00:00:00Z",
            "input": "Find a hotel in Rome",
            "output": "Hotel Roma, 90 EUR",
        },
        {
            "uid": 2,
            "span_id": "c",
            "parentSpanId": "a",
            "name": "book",
            "start": "2025-01-01T00:00:02Z",
            "input": "Hotel Roma",
            "output": "booked",
        },
    ]
    trace = load_trace(_write(tmp_path, "spans.json", {"export": {"items": spans}}))
    assert trace.source.format == "generic" and trace.source.variant == "span_tree"
    assert (trace.task, trace.final_output) == ("Find a hotel in Rome", "Hotel Roma, 90 EUR")
    assert [s.agent for s in trace.steps] == ["agent", "search", "book"]  # in start order
    assert trace.steps[1].parent_id == "a"
    assert any("span tree of 3 spans" in w and "'parentSpanId'" in w for w in trace.warnings)


@pytest.mark.parametrize(
    "data",
    [
        {
            "name": "pkg",
            "version": "1.0",
            "dependencies": {"a": "1"},
            "authors": [{"name": "x", "email": "y"}, {"name": "z", "email": "w"}],
        },
        [{"role": "engineer", "team": "infra", "salary": 1}, {"role": "manager", "team": "web", "salary": 2}],
        [
            {"author": f"person {n}", "text": f"review {n}"} for n in range(40)
        ],  # a table: every item a different author
        {"items": [{"id": 1, "parent": None}, {"id": 2, "parent": None}]},
    ],
    ids=["package", "staff", "reviews", "no_parent_links"],
)
def test_json_that_is_no_trace_is_refused_with_the_usual_one_line_error(tmp_path: Path, data: Any) -> None:
    path = _write(tmp_path, "data.json", data)
    with pytest.raises(TraceFormatError) as caught:
        detect_format(path)
    message = str(caught.value)
    assert "no known trace format matches" in message and "\n" not in message


def test_a_known_format_is_never_taken_by_the_generic_reader(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert load_trace(_write(tmp_path, "chat.json", messages)).source.format == "openai_chat"
