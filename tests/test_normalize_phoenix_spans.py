"""Phoenix span exports read from files: nested spans, JSONL of two traces, and the client's dataframe as JSON.

Written for mast from Phoenix's span shape (``name``, ``context``, ``span_kind``, ``parent_id``,
``start_time``, ``status_code``, OpenInference ``attributes``); no real export was found to commit.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize import iter_traces, load_trace, load_traces
from mast.trace import Trace

TASK = "Book a table for two in Lyon tonight."
FINAL = "Booked: Le Bouchon, 20:00, two people."


def _spans(trace_id: str = "t1") -> list[dict[str, Any]]:
    def span(
        span_id: str, parent: str | None, name: str, kind: str, second: int, attributes: dict[str, Any]
    ) -> dict[str, Any]:
        return {
            "name": name,
            "context": {"trace_id": trace_id, "span_id": f"{trace_id}-{span_id}"},
            "span_kind": kind,
            "parent_id": f"{trace_id}-{parent}" if parent else None,
            "start_time": f"2025-05-01T10:00:0{second}+00:00",
            "end_time": f"2025-05-01T10:00:0{second + 1}+00:00",
            "status_code": "OK",
            "status_message": "",
            "attributes": attributes,
            "events": [],
        }

    return [
        span("a", None, "concierge", "AGENT", 0, {"input": {"value": TASK}, "output": {"value": FINAL}}),
        span(
            "b",
            "a",
            "ChatCompletion",
            "LLM",
            1,
            {
                "llm": {
                    "model_name": "gpt-4o",
                    "input_messages": [{"message": {"role": "user", "content": TASK}}],
                    "output_messages": [
                        {
                            "message": {
                                "role": "assistant",
                                "content": "",
                                "tool_calls": [
                                    {
                                        "tool_call": {
                                            "id": "c1",
                                            "function": {
                                                "name": "book_table",
                                                "arguments": '{"city": "Lyon", "people": 2}',
                                            },
                                        }
                                    }
                                ],
                            }
                        }
                    ],
                },
            },
        ),
        span(
            "c",
            "a",
            "book_table",
            "TOOL",
            3,
            {
                "tool": {"name": "book_table"},
                "input": {"value": '{"city": "Lyon", "people": 2}'},
                "output": {"value": "Le Bouchon 20:00"},
            },
        ),
        span(
            "d",
            "a",
            "ChatCompletion",
            "LLM",
            5,
            {
                "llm": {
                    "model_name": "gpt-4o",
                    "input_messages": [{"message": {"role": "user", "content": TASK}}],
                    "output_messages": [{"message": {"role": "assistant", "content": FINAL}}],
                },
            },
        ),
    ]


def _dataframe_records(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What ``client.get_spans_dataframe().reset_index().to_json(orient="records")`` writes: flat columns."""
    rows = []
    columns: set[str] = set()
    for span in spans:
        row = {k: v for k, v in span.items() if k not in ("context", "attributes")}
        row |= {f"context.{k}": v for k, v in span["context"].items()}
        attrs = span["attributes"]
        for top, inner in attrs.items():
            for key, value in inner.items():
                if key in (
                    "input_messages",
                    "output_messages",
                ):  # the dataframe keeps message lists as lists of flat dicts
                    value = [{f"message.{k}": v for k, v in m["message"].items()} for m in value]
                row[f"attributes.{top}.{key}"] = value
        rows.append(row)
        columns |= set(row)
    return [
        {c: row.get(c) for c in sorted(columns)} for row in rows
    ]  # every column in every row, None where empty


def _skeleton(trace: Trace) -> list[tuple[Any, ...]]:
    return [(s.kind, s.agent, s.content, [(c.name, c.arguments) for c in s.tool_calls]) for s in trace.steps]


def test_a_span_list_reads_task_tool_calls_and_final_output(tmp_path: Path) -> None:
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(_spans()), encoding="utf-8")
    trace = load_trace(path)
    assert trace.source.format == "phoenix_spans"
    assert trace.task is not None and TASK in trace.task
    assert trace.final_output == FINAL
    assert [(c.name, c.arguments) for s in trace.steps for c in s.tool_calls] == [
        ("book_table", {"city": "Lyon", "people": 2})
    ]


def test_the_dataframe_as_json_reads_like_the_span_list(tmp_path: Path) -> None:
    nested, flat = tmp_path / "spans.json", tmp_path / "dataframe.json"
    nested.write_text(json.dumps(_spans()), encoding="utf-8")
    flat.write_text(json.dumps(_dataframe_records(_spans())), encoding="utf-8")
    from_rows = load_trace(flat)
    assert from_rows.source.format == "phoenix_spans" and from_rows.source.variant == "dataframe"
    assert _skeleton(from_rows) == _skeleton(load_trace(nested))


def test_a_jsonl_export_of_two_traces_gives_two_traces_and_a_broken_line_its_error(tmp_path: Path) -> None:
    path = tmp_path / "spans.jsonl"
    lines = [json.dumps(s) for s in _spans("t1") + _spans("t2")]
    path.write_text("\n".join([*lines[:3], "{not json", *lines[3:]]) + "\n", encoding="utf-8")
    items = list(iter_traces(path))
    traces = [t for t in items if isinstance(t, Trace)]
    assert [t.metadata["phoenix"]["trace_id"] for t in traces] == ["t1", "t2"]
    assert all(t.final_output == FINAL for t in traces)
    assert sum(isinstance(i, TraceFormatError) for i in items) == 1
    clean = tmp_path / "clean.jsonl"
    clean.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert len(load_traces(clean)) == 2
