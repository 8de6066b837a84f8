"""AppWorld logs: a Supervisor agent working with one agent per app (Spotify, Venmo, ...).

The log is plain text without timestamps. A banner ``***** Task N/M (id) *****`` is followed by
the task instruction; after it, bare header lines (indented by nesting depth) open each block:

- ``Response from <X> Agent`` / ``Reply from <X> Agent``: what agent X wrote (usually code);
- ``Message to <X> Agent``: a message sent to X by the agent currently acting;
- ``Code Execution Output`` / ``Response from send_message API``: what the environment returned;
- ``Entering <X> Agent message loop`` / ``Exiting ...``: control moves into or out of X (no body).

App names are spelled both ``spotify`` and ``Spotify``; lower-case names get a capital so one app
is one agent.
"""

from __future__ import annotations

import re

from mast.normalize._logs_common import FrameworkLog, LogParse, blocks_between, body_text, register_log

_BANNER = re.compile(r"^[ \t]*\*{5,}[ \t]*Task (?P<n>\d+)/(?P<m>\d+) \((?P<id>[^)\n]*)\)[ \t]*\*{5,}[ \t]*$", re.MULTILINE)
_HEADER = re.compile(
    r"^[ \t]*(?:(?P<verb>Response|Reply) from (?P<resp>[^\n]{1,60}?) Agent"
    r"|Message to (?P<to>[^\n]{1,60}?) Agent"
    r"|(?P<loop>Entering|Exiting) (?P<loop_agent>[^\n]{1,60}?) Agent message loop"
    r"|(?P<api>Response from (?P<api_name>\w+) API)"
    r"|(?P<exec>Code Execution Output))[ \t]*:?[ \t]*$",
    re.MULTILINE,
)


def looks_like_appworld(text: str) -> bool:
    """True when the text holds AppWorld's supervisor/app-agent headers."""
    head = text[:200_000]
    return bool(re.search(r"^[ \t]*(?:Response from Supervisor Agent|Code Execution Output)[ \t]*$", head, re.MULTILINE))


def app_agent(name: str) -> str:
    """``spotify`` -> ``Spotify``; mixed-case names (``SimpleNote``) unchanged."""
    name = name.strip()
    return name[:1].upper() + name[1:] if name.islower() else name


def parse_appworld(text: str) -> LogParse:
    """Split an AppWorld log into agent turns and environment outputs."""
    out = LogParse(variant="appworld")
    matches = list(_HEADER.finditer(text))
    banner = _BANNER.search(text)
    if banner:
        out.metadata["appworld_task_id"] = banner.group("id")
        first = matches[0].start() if matches else len(text)
        out.task = body_text(text[banner.end():first]) or None
    elif matches and text[:matches[0].start()].strip():
        out.add(kind="system", role="system", content=body_text(text[:matches[0].start()]), attributes={"event": "preamble"})
    stack: list[str] = ["Supervisor"]
    for match, rest in blocks_between(text, matches):
        body = body_text(rest)
        ref = f"char:{match.start()}"
        if match.group("loop"):
            agent = app_agent(match.group("loop_agent"))
            if match.group("loop") == "Entering":
                stack.append(agent)
            elif len(stack) > 1 and stack[-1] == agent:
                stack.pop()
            if body:
                out.add(kind="system", role="system", content=body, source_ref=ref, attributes={"event": match.group(0).strip()})
            continue
        if match.group("resp"):
            agent = app_agent(match.group("resp"))
            out.add(kind="message", agent=agent, role="assistant", content=body, source_ref=ref,
                    attributes={"header": match.group(0).strip()})
        elif match.group("to"):
            target = app_agent(match.group("to"))
            sender = next((a for a in reversed(stack) if a != target), "Supervisor")
            out.add(kind="message", agent=sender, role="assistant", recipient=target, content=body, source_ref=ref,
                    attributes={"header": match.group(0).strip()})
        else:
            out.add(kind="observation", agent=None, role="tool", content=body, source_ref=ref,
                    attributes={"header": match.group(0).strip(), "active_agent": stack[-1]})
    return out


register_log(FrameworkLog(
    name="appworld", sniff=looks_like_appworld, parse=parse_appworld, framework="appworld", order=40,
    mas_names={"appworld": 0}, example="Response from Supervisor Agent ... / Message to Spotify Agent ...",
))
