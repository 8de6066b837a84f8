"""Checks shared by the MAD, research-data and AutoGen normaliser tests."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from mast.normalize._readable import TERMINAL_TOOLS
from mast.trace import Trace

GOLDEN = Path(__file__).parent / "golden"


def speakers(trace: Trace) -> list[str | None]:
    return [s.agent for s in trace.steps]


def unpaired(trace: Trace) -> tuple[set[str], set[str]]:
    """Call ids without a result, and result ids without a call (a finish/submit call ends the run: it needs none)."""
    terminal = {c.id for s in trace.steps for c in s.tool_calls if c.id and c.name.lower() in TERMINAL_TOOLS}
    calls = {c.id for s in trace.steps for c in s.tool_calls if c.id} - terminal
    results = {r.call_id for s in trace.steps for r in s.tool_results if r.call_id} - terminal
    return calls - results, results - calls


def _strings(value: Any) -> list[str]:
    """Every key and string value inside ``value``."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for k, v in value.items() for text in (str(k), *_strings(v))]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return [json.dumps(value)]


def assert_labels_hidden(trace: Trace, *fragments: str) -> None:
    """Labels exist, survive a JSON round trip, and none of ``fragments`` reaches the transcript."""
    assert trace.labels, "expected ground-truth labels"
    text = trace.to_transcript(max_step_chars=10**9).text
    held = _strings(trace.labels)
    for fragment in fragments:
        assert any(fragment in item for item in held), f"{fragment!r} is not in the labels"
        assert fragment not in text, f"label text {fragment!r} leaked into the transcript"
    again = Trace.model_validate_json(trace.to_json())
    assert again.labels == json.loads(json.dumps(trace.labels))


def skeleton(trace: Trace) -> dict[str, Any]:
    return {
        "format": trace.source.format,
        "variant": trace.source.variant,
        "framework": trace.framework,
        "task": (trace.task or "")[:120],
        "final_output": (trace.final_output or "")[:120],
        "agents": [a.name for a in trace.agents],
        "label_keys": sorted(trace.labels),
        "steps": step_skeleton(trace),
    }


def step_skeleton(trace: Trace) -> list[dict[str, Any]]:
    """What golden files pin of each step: its shape, not the source's full text."""
    return [
        {
            "kind": s.kind,
            "agent": s.agent,
            "recipient": s.recipient,
            "role": s.role,
            "calls": [[c.name, c.id] for c in s.tool_calls],
            "results": [[r.call_id, r.is_error] for r in s.tool_results],
            "content_start": s.content[:60],
            "content_chars": len(s.content),
        }
        for s in trace.steps
    ]


def check_golden(trace: Trace, name: str) -> None:
    """Compare the trace's skeleton with ``tests/golden/<name>.steps.json`` (``MAST_UPDATE_GOLDEN=1`` rewrites)."""
    path = GOLDEN / f"{name}.steps.json"
    actual = skeleton(trace)
    if os.environ.get("MAST_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(actual, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert path.is_file(), f"golden {path.name} missing; run with MAST_UPDATE_GOLDEN=1 once and review it"
    assert actual == json.loads(path.read_text(encoding="utf-8"))
