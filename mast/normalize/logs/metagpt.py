"""MetaGPT logs, in the two shapes MAD holds.

- **loguru log** (ProgramDev runs, also wrapped as ``{run_id, prompt, content, ...}``): each turn
  opens with ``<time> | INFO | metagpt.roles.role:_act:391 - Alice(SimpleCoder): to do
  SimpleWriteCode(SimpleWriteCode)`` and its output (often a fenced code block) follows.
- **communication log**: ``=== ... ===`` banners, then ``[time] FROM: Human TO: {...}`` /
  ``ACTION:`` / ``CONTENT:`` for the requirement and ``[time] NEW MESSAGES:`` followed by
  ``SimpleCoder: ...`` for each reply, blocks separated by dashed lines.

Both name agents by their profile (``SimpleCoder``); the persona (``Alice``) is kept as an attribute.
"""

from __future__ import annotations

import re
from typing import Any

from mast.normalize._logs_common import (
    LOGURU,
    FrameworkLog,
    LogParse,
    blocks_between,
    body_text,
    parse_log_time,
    register_log,
)

_ACT = re.compile(r"^(?P<persona>[\w .\-]{1,60}?)\((?P<profile>[\w .\-]{1,60})\): (?:to do|ready to) (?P<action>\w+)")
_STAMP = re.compile(r"^\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] (?P<rest>[^\n]*)$", re.MULTILINE)
_FROM = re.compile(r"^FROM: (?P<who>\S+) TO: (?P<to>[^\n]*)$")
_SPEAKER = re.compile(r"^(?P<who>[A-Za-z_][\w .\-]{0,60}):[ \t]*")
_RULE = re.compile(r"^(?:-{20,}|=== .* ===)[ \t]*$", re.MULTILINE)
_TIME_FORMATS = ("%Y-%m-%d %H:%M:%S.%f", "%Y-%m-%d %H:%M:%S")


def looks_like_metagpt(text: str) -> bool:
    """True when the text carries MetaGPT loguru role lines or its communication-log markers."""
    head = text[:200_000]
    return "| metagpt." in head or "MetaGPT Agent Communication Log" in head or bool(
        re.search(r"_act:\d+ - [\w .\-]+\([\w .\-]+\): to do ", head)
    ) or ("NEW MESSAGES:" in head and "FROM: " in head)


def parse_metagpt(text: str) -> LogParse:
    """Parse either MetaGPT log shape; no steps when neither shape's markers are present."""
    if LOGURU.search(text):
        return _parse_loguru(text)
    return _parse_communication_log(text)


def _parse_loguru(text: str) -> LogParse:
    out = LogParse(variant="metagpt_log")
    matches = list(LOGURU.finditer(text))
    if matches and text[:matches[0].start()].strip():
        out.add(kind="system", role="system", content=body_text(text[:matches[0].start()]), attributes={"event": "preamble"})
    personas: dict[str, str] = {}
    for match, rest in blocks_between(text, matches):
        when = parse_log_time(match.group("ts"), *_TIME_FORMATS)
        message = match.group("msg")
        act = _ACT.match(message)
        attributes: dict[str, Any] = {"logger": match.group("where").strip()}
        if act:
            profile = act.group("profile").strip()
            personas[profile] = act.group("persona").strip()
            attributes.update(persona=personas[profile], action=act.group("action"))
            out.add(kind="message", agent=profile, role="assistant", content=body_text(rest), started_at=when,
                    source_ref=f"char:{match.start()}", attributes=attributes)
            continue
        level = match.group("level")
        content = body_text(message + "\n" + rest)
        out.add(kind="error" if level in ("ERROR", "CRITICAL") else "system", role="system", content=content,
                started_at=when, error=content if level in ("ERROR", "CRITICAL") else None,
                source_ref=f"char:{match.start()}", attributes={**attributes, "level": level})
    if personas:
        out.metadata["metagpt_personas"] = personas
    return out


def _parse_communication_log(text: str) -> LogParse:
    out = LogParse(variant="metagpt_comm_log")
    banners = [m.group(0).strip() for m in _RULE.finditer(text) if m.group(0).startswith("===")]
    if banners:
        out.metadata["metagpt_banners"] = banners
    for match, rest in blocks_between(text, list(_STAMP.finditer(text))):
        when = parse_log_time(match.group("ts"), *_TIME_FORMATS)
        block = _RULE.sub("", rest)
        header = match.group("rest").strip()
        sender = _FROM.match(header)
        if sender:
            fields, _, content = block.partition("CONTENT:")
            action = re.search(r"^ACTION:[ \t]*(?P<a>[^\n]*)", fields, re.MULTILINE)
            targets = re.findall(r"'([^']*)'", sender.group("to"))
            who = sender.group("who")
            attributes: dict[str, Any] = {"to": sender.group("to").strip()}
            if action:
                attributes["action"] = action.group("a").strip()
            human = who.lower() in ("human", "user")
            said = body_text(content if "CONTENT:" in block else block)
            if human and out.task is None:
                out.task = said
            out.add(kind="message", agent=who, role="user" if human else "assistant",
                    recipient=", ".join(t for t in targets if t != "<all>") or None, content=said,
                    started_at=when, source_ref=f"char:{match.start()}", attributes=attributes)
        elif header.startswith("NEW MESSAGES"):
            said = body_text(block)
            speaker = _SPEAKER.match(said)
            who = speaker.group("who").strip() if speaker else None
            out.add(kind="message", agent=who, role="assistant", content=said[speaker.end():].strip() if speaker else said,
                    started_at=when, source_ref=f"char:{match.start()}")
        else:
            out.add(kind="system", role="system", content=body_text(header + "\n" + block), started_at=when,
                    source_ref=f"char:{match.start()}")
    return out


register_log(FrameworkLog(
    name="metagpt", sniff=looks_like_metagpt, parse=parse_metagpt, framework="metagpt", order=20, mas_names={"metagpt": 0},
    example="2025-01-01 10:00:00.000 | INFO | metagpt.roles.role:_act:391 - Alice(Product Manager): to do WritePRD",
))
