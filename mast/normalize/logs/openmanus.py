"""OpenManus logs: loguru lines from one tool-calling agent (``Manus``) or a planning flow.

Each agent step starts with ``app.agent.base:run:... - Executing step 3/20``. Inside it the agent
thinks (``✨ Manus's thoughts: ...``), picks tools (``🧰 Tools being prepared: ['python_execute']``,
``🔧 Tool arguments: {...}``) and gets results (``🎯 Tool 'python_execute' completed its mission!
Result: ...``). Thoughts become the agent's step, carrying its tool calls; each result becomes a
``tool_result`` step paired with the call it answers (first unanswered call of that tool).
"""

from __future__ import annotations

import re
from typing import Any

from mast.normalize._common import tool_call
from mast.normalize._logs_common import (
    LOGURU,
    FrameworkLog,
    LogParse,
    blocks_between,
    body_text,
    parse_log_time,
    register_log,
)
from mast.normalize._readable import final_from_steps
from mast.trace import Step, ToolResult

_STEP = re.compile(r"Executing step (?P<n>\d+)(?:/(?P<m>\d+))?")
_THOUGHTS = re.compile(r"^\W*(?P<agent>[\w .\-]{1,60}?)'s thoughts:[ \t]*")
_PREPARED = re.compile(r"Tools being prepared:[ \t]*(?P<names>\[.*\])")
_ARGUMENTS = re.compile(r"Tool arguments:[ \t]*")
_DONE = re.compile(r"Tool '(?P<name>[^'\n]+)' completed its mission! Result:[ \t]*")
_REDUNDANT = re.compile(r"selected \d+ tools to use|Activating tool:")
"""Notices that repeat what the tool calls already say; counted, not kept as steps."""
_TIME_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S")


def looks_like_openmanus(text: str) -> bool:
    """True when the text holds OpenManus agent log lines."""
    head = text[:200_000]
    return LOGURU.search(head) is not None and ("app.agent." in head or "'s thoughts:" in head)


def parse_openmanus(text: str) -> LogParse:
    """Split an OpenManus log into thoughts (with tool calls), tool results and notices."""
    out = LogParse(variant="openmanus")
    matches = list(LOGURU.finditer(text))
    if matches and text[:matches[0].start()].strip():
        out.add(kind="system", role="system", content=body_text(text[:matches[0].start()]), attributes={"event": "preamble"})
    step_no: str | None = None
    thinker: Step | None = None
    prepared: list[str] = []
    open_calls: list[tuple[str, str]] = []
    repeated = 0
    for number, (match, rest) in enumerate(blocks_between(text, matches)):
        when = parse_log_time(match.group("ts"), *_TIME_FORMATS)
        message = (match.group("msg") + "\n" + rest).strip()
        ref = f"char:{match.start()}"
        attributes: dict[str, Any] = {"logger": match.group("where").strip()}
        if step_no:
            attributes["agent_step"] = step_no
        if (found := _STEP.search(message)) and "Executing step" in match.group("msg"):
            step_no = found.group("n") + (f"/{found.group('m')}" if found.group("m") else "")
            continue
        if thoughts := _THOUGHTS.match(message):
            thinker = out.add(kind="message", agent=thoughts.group("agent").strip(), role="assistant",
                              content=body_text(message[thoughts.end():]), started_at=when, source_ref=ref, attributes=attributes)
            prepared = []
            continue
        if found := _PREPARED.search(message):
            prepared = re.findall(r"'([^']+)'", found.group("names"))
            continue
        if (found := _ARGUMENTS.search(match.group("msg"))) and thinker is not None:
            name = prepared.pop(0) if prepared else "?"
            call_id = f"openmanus-{number}"
            thinker.tool_calls.append(tool_call(name, message[message.find("Tool arguments:") + len("Tool arguments:"):].strip(), call_id))
            open_calls.append((name, call_id))
            continue
        if found := _DONE.search(message):
            name = found.group("name")
            pending = next((c for c in open_calls if c[0] == name), None)
            if pending:
                open_calls.remove(pending)
            output = body_text(message[found.end():])
            out.add(kind="tool_result", agent=thinker.agent if thinker else None, role="tool", started_at=when,
                    tool_results=[ToolResult(call_id=pending[1] if pending else None, name=name, output=output)],
                    source_ref=ref, attributes=attributes)
            continue
        if _REDUNDANT.search(match.group("msg")):
            repeated += 1
            continue
        level = match.group("level")
        error = level in ("ERROR", "CRITICAL")
        out.add(kind="error" if error else "system", role="system", content=message, error=message if error else None,
                started_at=when, source_ref=ref, attributes={**attributes, "level": level})
    if repeated:
        out.metadata["openmanus_tool_notices_merged"] = repeated
    if out.final_output is None:
        out.final_output = final_from_steps(out.steps)  # the thought that led to 'terminate'
    return out


register_log(FrameworkLog(
    name="openmanus", sniff=looks_like_openmanus, parse=parse_openmanus, framework="openmanus", order=50,
    mas_names={"openmanus": 0}, example="2025-03-07 10:00:00.000 | INFO | app.agent.toolcall:think:53 - ✨ Manus's thoughts: ...",
))
