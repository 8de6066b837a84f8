"""CrewAI verbose console output (``Crew(verbose=True)``): ``# Agent:`` blocks with ``## Task:``, tools and answers.

A verbose crew prints, for every agent turn, a block headed ``# Agent: <role>`` followed by sections:
``## Task:`` (the task the crew handed to the agent), ``## Thought:``, ``## Using tool:`` with
``## Tool Input:`` and ``## Tool Output:``, and ``## Final Answer:``. The task of the run is the
first task handed out, the final output the last final answer. Each tool call gets an id
(``crewai-<n>``) so its output is paired with it.
"""

from __future__ import annotations

import json
import re

from mast.normalize._common import tool_call
from mast.normalize._logs_common import FrameworkLog, LogParse, body_text, register_log
from mast.trace import ToolResult

_AGENT = re.compile(r"^[ \t]*#[ \t]+Agent:[ \t]*(?P<name>[^\n]+?)[ \t]*$", re.MULTILINE)
_SECTION = re.compile(r"^[ \t]*##[ \t]+(?P<label>Task|Thought|Using tool|Tool Input|Tool Output|Final Answer):[ \t]*", re.MULTILINE)
CREW = "user"
"""Who hands out tasks: the person who set up the crew (not one of its agents)."""


def looks_like_crewai_console(text: str) -> bool:
    """True when ``# Agent:`` headers are followed by ``## Task:`` / ``## Final Answer:`` sections."""
    head = text[:200_000]
    return _AGENT.search(head) is not None and re.search(r"^[ \t]*##[ \t]+(?:Task|Final Answer):", head, re.MULTILINE) is not None


def parse_crewai_console(text: str) -> LogParse:
    """One step per section of each ``# Agent:`` block; tool inputs and outputs paired by a generated id."""
    out = LogParse(variant="crewai_console")
    agents = list(_AGENT.finditer(text))
    calls = 0
    for number, header in enumerate(agents):
        end = agents[number + 1].start() if number + 1 < len(agents) else len(text)
        agent = header.group("name").strip()
        block = text[header.end():end]
        sections = list(_SECTION.finditer(block))
        pending: str | None = None
        tool_name = ""
        for position, section in enumerate(sections):
            stop = sections[position + 1].start() if position + 1 < len(sections) else len(block)
            label = section.group("label")
            body = body_text(block[section.end():stop])
            ref = f"char:{header.end() + section.start()}"
            if label == "Task":
                out.task = out.task or body
                out.add(kind="message", agent=CREW, role="user", recipient=agent, content=body, source_ref=ref)
            elif label == "Thought":
                out.add(kind="message", agent=agent, role="assistant", content=body, source_ref=ref)
            elif label == "Using tool":
                tool_name = body.splitlines()[0].strip() if body else "?"
            elif label == "Tool Input":
                calls += 1
                pending = f"crewai-{calls}"
                out.add(kind="tool_call", agent=agent, role="assistant", tool_calls=[tool_call(tool_name, _unquote(body), pending)],
                        source_ref=ref)
            elif label == "Tool Output":
                out.add(kind="tool_result", agent="tool", role="tool", recipient=agent, source_ref=ref,
                        tool_results=[ToolResult(call_id=pending, name=tool_name or None, output=body)])
                pending = None
            else:
                out.final_output = body
                out.add(kind="message", agent=agent, role="assistant", content=body, source_ref=ref,
                        attributes={"final_answer": True})
    return out


def _unquote(text: str) -> str:
    """CrewAI prints tool input as a quoted JSON string (``"{\\"query\\": ...}"``): unwrap one level."""
    stripped = text.strip()
    if len(stripped) >= 2 and stripped[0] == stripped[-1] == '"':
        try:
            inner = json.loads(stripped)
        except json.JSONDecodeError:
            return stripped
        return inner if isinstance(inner, str) else stripped
    return stripped


register_log(FrameworkLog(
    name="crewai_console", sniff=looks_like_crewai_console, parse=parse_crewai_console, framework="crewai", order=55,
    mas_names={"crewai": 0}, example="# Agent: Senior Researcher\n## Task: Find three sources on ...\n## Final Answer: ...",
))
