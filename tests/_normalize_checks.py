"""Assertions shared by the chat, OTel and platform normaliser tests (not collected by pytest)."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

from mast.normalize._readable import TERMINAL_TOOLS
from mast.trace import Trace

GOLDEN = Path(__file__).parent / "golden"


def unpaired(trace: Trace) -> tuple[set[str], set[str]]:
    """Call ids without a result, and result ids without a call (a finish/submit call ends the run: it needs none)."""
    terminal = {c.id for s in trace.steps for c in s.tool_calls if c.id and c.name.lower() in TERMINAL_TOOLS}
    calls = {c.id for s in trace.steps for c in s.tool_calls if c.id} - terminal
    results = {r.call_id for s in trace.steps for r in s.tool_results if r.call_id} - terminal
    return calls - results, results - calls


def assert_paired(trace: Trace, expected_calls: int) -> None:
    """Exactly ``expected_calls`` tool calls, each answered by one result with its id (and vice versa)."""
    calls = [c for s in trace.steps for c in s.tool_calls]
    results = [r for s in trace.steps for r in s.tool_results]
    assert len(calls) == expected_calls, [c.name for c in calls]
    assert all(c.id for c in calls), "every call has an id"
    assert unpaired(trace) == (set(), set())
    assert Counter(r.call_id for r in results) == Counter(c.id for c in calls), "one result per call"
    names = {c.id: c.name for c in calls}
    assert all(r.name in (None, names[r.call_id]) for r in results)


def assert_no_repeats(trace: Trace) -> None:
    """No message step (role + text) appears twice: history re-sent by each call was not repeated."""
    seen = Counter((s.role, s.content) for s in trace.steps if s.content and s.role in ("user", "system", "developer"))
    assert all(n == 1 for n in seen.values()), [k for k, n in seen.items() if n > 1]
    results = Counter(r.call_id for s in trace.steps for r in s.tool_results if r.call_id)
    assert all(n == 1 for n in results.values()), results


def canon(value: Any) -> str:
    """Text for comparing across renderings: JSON canonical, other text whitespace-normalised."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return " ".join(value.split())
        if isinstance(value, str):
            return " ".join(value.split())
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def step_view(trace: Trace) -> list[tuple[str, str, tuple[str, ...]]]:
    """Each step as (role, canonical text, tool call ids) for comparison with other renderings."""
    rows = []
    for step in trace.steps:
        if step.role == "tool" or step.tool_results and not step.tool_calls:
            for result in step.tool_results:
                rows.append(("tool", canon(result.output), (result.call_id or "",)))
            continue
        text = re.sub(r"^<thinking>.*?</thinking>\s*", "", step.content, flags=re.S)
        role = "system" if step.role in ("system", "developer") else step.role or "?"
        rows.append((role, canon(text), tuple(c.id or "" for c in step.tool_calls)))
    return rows


def oracle_view(messages: list[dict[str, Any]]) -> list[tuple[str, str, tuple[str, ...]]]:
    """Langfuse ChatML messages as (role, canonical text, tool call ids)."""
    rows = []
    for message in messages:
        if not isinstance(message, dict) or "role" not in message:
            continue
        role = message["role"]
        if role == "tool":
            rows.append(("tool", canon(message.get("content")), (message.get("tool_call_id") or "",)))
            continue
        calls = tuple(c.get("id") or "" for c in message.get("tool_calls") or [])
        rows.append(("system" if role in ("system", "developer") else role, canon(message.get("content") or ""), calls))
    return rows


def is_subsequence(needle: list[Any], haystack: list[Any]) -> bool:
    it = iter(haystack)
    return all(any(item == other for other in it) for item in needle)


def check_golden(trace: Trace, name: str, *, max_step_chars: int = 400) -> None:
    """Compare the judge's view of ``trace`` with ``tests/golden/<name>.transcript.txt``.

    ``MAST_UPDATE_GOLDEN=1`` rewrites the file; review the diff by eye before committing it.
    """
    path = GOLDEN / f"{name}.transcript.txt"
    header = [
        f"format: {trace.source.format} ({trace.source.variant})",
        f"framework: {trace.framework}",
        f"agents: {', '.join(f'{a.name} [{a.model}]' for a in trace.agents)}",
        f"task: {(trace.task or '')[:200]!r}",
        f"final_output: {(trace.final_output or '')[:200]!r}",
        f"status: {trace.status}; usage: {trace.usage.model_dump(exclude_none=True) if trace.usage else None}",
        "---",
    ]
    actual = "\n".join(header) + "\n" + trace.to_transcript(max_step_chars=max_step_chars).text + "\n"
    if os.environ.get("MAST_UPDATE_GOLDEN") == "1":
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.is_file(), f"golden {path.name} missing; run with MAST_UPDATE_GOLDEN=1 once and review it"
    assert actual == path.read_text(encoding="utf-8")
