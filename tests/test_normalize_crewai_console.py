"""CrewAI verbose console output, a framework log added by one module (``_logs_crewai.py``).

The log under ``tests/data/normalize/logs/crewai_console.log`` was written for this test in the layout a
verbose crew prints.
"""

from __future__ import annotations

from pathlib import Path

from mast.normalize import detect_format, load_trace

LOG = Path(__file__).parent / "data" / "normalize" / "logs" / "crewai_console.log"


def test_crewai_console_on_its_own() -> None:
    fmt, confidence = detect_format(LOG)
    assert (fmt.name, confidence) == ("framework_log", 0.8)
    trace = load_trace(LOG)
    assert trace.framework == "crewai" and trace.source.variant == "crewai_console" and not trace.warnings
    assert [a.name for a in trace.agents] == ["Market Analyst", "Editor"]
    assert trace.task == "List two risks of launching a bike-sharing service in Lisbon."
    assert trace.final_output == "Hills and narrow streets make a Lisbon bike service costlier than usual."
    call = next(s for s in trace.steps if s.kind == "tool_call").tool_calls[0]
    assert call.name == "Search the internet" and call.arguments == {"search_query": "Lisbon hills cycling difficulty"}
    result = next(s for s in trace.steps if s.kind == "tool_result")
    assert result.tool_results[0].call_id == call.id and result.recipient == "Market Analyst"
    assert [(s.agent, s.recipient) for s in trace.steps if s.agent == "user"] == [("user", "Market Analyst"), ("user", "Editor")]


def test_crewai_console_inside_a_mad_record_gives_the_same_steps() -> None:
    text = LOG.read_text(encoding="utf-8")
    alone = load_trace(LOG)
    record = {"mas_name": "CrewAI", "trace_id": 3, "trace": {"trajectory": text}, "mast_annotation": {}}
    wrapped = load_trace(record)
    assert [(s.kind, s.agent, s.content) for s in wrapped.steps] == [(s.kind, s.agent, s.content) for s in alone.steps]
    assert wrapped.final_output == alone.final_output
