"""HyperAgent logs: a Planner delegating to Navigator, Editor and Executor interns.

Every entry opens with ``HyperAgent_<instance> - INFO - `` (in MAD's YAML-like dumps the line may be
indented or start with ``- ``) and runs until the next such line. The message then says who spoke:

- ``Planner's Response: ...``: the Planner's thought, often ending with ``Intern Name: Codebase
  Navigator`` and ``Subgoal: ...`` (the delegation; the intern becomes the recipient);
- ``Inner-Navigator-Assistant's Response: ...``: the intern's own reasoning and actions
  (``Action:`` followed by python calling ``<tool>._run(...)``);
- ``Navigator->Planner: ...``: the intern reporting back;
- ``Initialized ...``: start-up notices, merged into one system step.

``Inner-Navigator-Assistant`` and ``Navigator`` are the same actor, so both become ``Navigator``.
"""

from __future__ import annotations

import re
from typing import Any

from mast.normalize._common import tool_call
from mast.normalize._logs_common import FrameworkLog, LogParse, blocks_between, body_text, register_log
from mast.trace import ToolCall

_ENTRY = re.compile(r"^[ \t]*(?:- )?[\"']?HyperAgent_(?P<instance>\S+) - (?P<level>[A-Z]+) - ", re.MULTILINE)
_RESPONSE = re.compile(r"^(?P<label>[\w\- ]{1,60}?)'s Response:[ \t]*")
_REPORT = re.compile(r"^(?P<src>[\w\- ]{1,60}?)->(?P<dst>[\w\- ]{1,60}?):[ \t]*")
_INTERN = re.compile(r"^Intern Name:[ \t]*(?P<name>[^\n]+)$", re.MULTILINE)
_SUBGOAL = re.compile(r"^Subgoal:[ \t]*(?P<goal>[^\n]*)", re.MULTILINE)
_TOOL_RUN = re.compile(r"(?P<name>[A-Za-z_]\w*)\._run\((?P<args>[^\n]*)\)")
_FINAL = re.compile(r"Final Answer:[ \t]*(?P<answer>.+)", re.DOTALL)
_INTERNS = {"codebase navigator": "Navigator", "codebase editor": "Editor", "executor": "Executor"}


def looks_like_hyperagent(text: str) -> bool:
    """True when the text holds HyperAgent entry headers."""
    return _ENTRY.search(text[:200_000]) is not None


def actor(label: str) -> str:
    """``Inner-Navigator-Assistant`` -> ``Navigator``; other labels unchanged."""
    name = label.strip()
    if name.startswith("Inner-"):
        name = name[len("Inner-"):]
    if name.endswith("-Assistant"):
        name = name[: -len("-Assistant")]
    return name


def _calls(body: str, entry: int) -> list[ToolCall]:
    if "Action" not in body:
        return []
    return [tool_call(m.group("name"), m.group("args"), f"hyperagent-{entry}-{n}") for n, m in enumerate(_TOOL_RUN.finditer(body))]


def parse_hyperagent(text: str) -> LogParse:
    """Split a HyperAgent log into agent turns (see the module docstring)."""
    out = LogParse(variant="hyperagent")
    matches = list(_ENTRY.finditer(text))
    boot: list[str] = []
    for number, (match, rest) in enumerate(blocks_between(text, matches)):
        out.metadata.setdefault("hyperagent_instance", match.group("instance").rstrip(":"))
        entry = rest.rstrip().rstrip("'\"")
        first, _, more = entry.partition("\n")
        message = first + ("\n" + body_text(more) if more.strip() else "")
        ref = f"char:{match.start()}"
        if message.startswith("Initialized"):
            boot.append(message.strip())
            continue
        if boot:
            out.add(kind="system", role="system", content="\n".join(boot), attributes={"event": "initialization"})
            boot = []
        response = _RESPONSE.match(message)
        report = _REPORT.match(message)
        attributes: dict[str, Any] = {}
        if response:
            label = response.group("label")
            body = message[response.end():].strip()
            attributes["speaker_label"] = label
            recipient = None
            intern = _INTERN.search(body)
            if actor(label) == "Planner" and intern:
                recipient = _INTERNS.get(intern.group("name").strip().lower(), intern.group("name").strip())
                goal = _SUBGOAL.search(body)
                if goal:
                    attributes["subgoal"] = goal.group("goal").strip()
            calls = _calls(body, number)
            out.add(kind="message", agent=actor(label), role="assistant", recipient=recipient, content=body,
                    tool_calls=calls, source_ref=ref, attributes=attributes)
            final = _FINAL.search(body) if actor(label) == "Planner" else None
            if final:
                out.final_output = final.group("answer").strip()
        elif report:
            body = message[report.end():].strip()
            attributes["speaker_label"] = f"{report.group('src')}->{report.group('dst')}"
            out.add(kind="message", agent=actor(report.group("src")), role="assistant", recipient=actor(report.group("dst")),
                    content=body, source_ref=ref, attributes=attributes)
        else:
            level = match.group("level")
            out.add(kind="error" if level == "ERROR" else "system", role="system", content=message.strip(),
                    source_ref=ref, attributes={"level": level})
    if boot:
        out.add(kind="system", role="system", content="\n".join(boot), attributes={"event": "initialization"})
    return out


register_log(FrameworkLog(
    name="hyperagent", sniff=looks_like_hyperagent, parse=parse_hyperagent, framework="hyperagent", order=30,
    mas_names={"hyperagent": 0}, example="HyperAgent_<repo> - INFO - Planner's Response: ...",
))
