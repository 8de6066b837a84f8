"""ChatDev logs: role-play turns between company roles, phase by phase.

A ChatDev log is a list of entries. In the ``.log`` files (the form MAD stores) each entry opens
with ``[YYYY-DD-MM HH:MM:SS INFO]`` (day before month); the markdown copies have no timestamps and
an entry opens at a ``**[Event]**`` or ``Role: **...**`` line. Entries are:

- a role's turn: ``Programmer: **Programmer<->Code Reviewer on : CodeReview, turn 0**`` followed
  by the echoed role prompt in ``[...]`` and the utterance;
- ``User Role: **[Start Chat]**``: the phase's opening instruction to the assistant role;
- framework events: ``**[Preprocessing]**`` (holds ``**task_prompt**``), ``System: **[chatting]**``
  and ``**[RolePlaying]**`` (tables naming the phase and its two roles), ``**[Seminar Conclusion]**``,
  ``**[Update Codes]**``, ``**[Test Reports]**``, ``**[Software Info]**``...;
- ``**[OpenAI_Usage_Info Receive]**`` token counts, added to the next turn's usage;
- in the earliest layout (June 2023, ``AgentTech Starts``), turns headed ``[0] AI Assistant (Role):``
  or ``[0] AI User (Role):`` and ``... terminated the chat.`` notices;
- noise (``flask app.py did not start for online log``, ``HTTP Request: ...``), counted, not kept.

ChatDev echoes each speaker's whole role prompt before every utterance; it is moved out of the
step's text into ``attributes["role_prompt"]`` so the transcript shows what was said.
"""

from __future__ import annotations

import re
from typing import Any

from mast.normalize._logs_common import (
    FrameworkLog,
    LogParse,
    blocks_between,
    body_text,
    first_line,
    parse_log_time,
    register_log,
)
from mast.trace import Usage

_STAMP = re.compile(r"^\[(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (?P<level>[A-Z]+)\] ?", re.MULTILINE)
_UNSTAMPED_HEAD = re.compile(
    r"^(?:(?:[A-Z][\w .\-]{0,60}): )?\*\*\[[^\]\n]{1,60}\]\*\*"
    r"|^[A-Z][\w .\-]{0,60}: \*\*[^*\n]{1,120}<->[^*\n]{1,120} on : [^,\n]{1,80}, turn \d+\*\*",
    re.MULTILINE,
)
_TURN = re.compile(
    r"^(?P<who>[^:\n*]{1,80}): \*\*(?P<a>[^*\n]{1,120}?)<->(?P<b>[^*\n]{1,120}?) on : (?P<phase>[^,\n]{1,80}), turn (?P<turn>\d+)\*\*"
)
_EARLY_TURN = re.compile(
    r"^(?:\[(?P<turn>\d+)\] )?AI (?P<side>Assistant|User) \((?P<who>[^()\n]{1,80})\)"
    r"(?P<sys> sys message)?(?P<end> terminated the chat\.?)?:?[ \t]*$"
)
"""A turn of the earliest (June-July 2023, "AgentTech") layout: ``[0] AI Assistant (Programmer):``, the
user side's ``AI User (Chief Executive Officer):`` (no turn number), and each side's
``AI User (Programmer) sys message:`` (its role prompt, a ``SystemMessage(...)`` repr)."""
_EARLY_TASK = re.compile(r"^Task prompt:[ \t]*\n?(?P<task>.+)", re.DOTALL)
_NAMESPACE_TASK = re.compile(
    r"""^args: Namespace\(.*?\btask=(?P<q>["'])(?P<task>.+?)(?P=q)(?:,|\))""", re.DOTALL
)
_START_END = re.compile(r"^(?:AgentTech|ChatDev) (?:Starts|Ends) \(\d+\)$|^log_filename: ")
_EVENT = re.compile(r"^(?:(?P<who>[^:\n*]{1,80}): )?\*\*\[(?P<tag>[^\]\n]{1,60})\]\*\*:?")
_TABLE_ROW = re.compile(r"^\| \*\*(?P<key>\w+)\*\* \| (?P<value>.*?) \|$", re.MULTILINE)
_TASK = re.compile(r"\*\*task_prompt\*\*:[ \t]*(?P<task>[^\n]+)")
_USAGE_FIELD = re.compile(
    r"^(?P<key>prompt_tokens|completion_tokens|total_tokens|cost):[ \t]*\$?(?P<value>[\d.]+)", re.MULTILINE
)
_FLASK = "flask app.py did not start for online log"
_NOISE = (_FLASK, "HTTP Request:")
_CONFIG_EVENTS = {"chatting", "RolePlaying"}
_QUIET_EVENTS = {"Execute Detail", "Software Info"}
"""Bookkeeping the framework prints between turns (which phase runs, file counts): kept on the next
step's attributes, not as steps of their own."""


def looks_like_chatdev(text: str) -> bool:
    """True when the text carries ChatDev's entry markers."""
    head = text[:200_000]
    return "**[Preprocessing]**" in head or bool(
        _TURN.search(head)
        or re.search(r"<->[^*\n]+ on : \w+, turn \d+\*\*", head)
        or (
            "AgentTech Starts" in head
            and re.search(r"^\[[^\]\n]*\] (?:\[\d+\] )?AI (?:Assistant|User) \(", head, re.MULTILINE)
        )
        # a run that stopped before its first turn: only the start and end lines
        or bool(
            re.match(
                r"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Z]+\] (?:AgentTech|ChatDev) Starts \(\d+\)",
                head.lstrip(),
            )
        )
    )


def _split_prompt(body: str) -> tuple[str, str | None]:
    """Separate the echoed ``[role prompt]`` that opens a turn from what the role said."""
    if body.startswith("["):
        end = body.find("]\n\n")
        if end == -1 and body.endswith("]"):
            end = len(body) - 1
        if end != -1:
            return body[end + 1 :].strip(), body[1:end]
    return body, None


def _same_text(a: str, b: str) -> bool:
    """Whether two texts say the same once ``<INFO>`` markers and whitespace are ignored (one may hold the other)."""

    def squash(text: str) -> str:
        return re.sub(r"\s+|<INFO>", "", text)

    x, y = squash(a), squash(b)
    return bool(x) and (x in y or y in x)


def _usage(block: str) -> Usage:
    values = {m.group("key"): m.group("value") for m in _USAGE_FIELD.finditer(block)}

    def number(key: str) -> int | None:
        return int(float(values[key])) if key in values else None

    return Usage(
        input_tokens=number("prompt_tokens"),
        output_tokens=number("completion_tokens"),
        total_tokens=number("total_tokens"),
        cost_usd=float(values["cost"]) if "cost" in values else None,
    )


def parse_chatdev(text: str) -> LogParse:
    """Split a ChatDev log into turns and framework events (see the module docstring)."""
    out = LogParse(variant="chatdev")
    stamps = list(_STAMP.finditer(text))
    entries = (
        blocks_between(text, stamps)
        if len(stamps) >= 2
        else blocks_between(text, list(_UNSTAMPED_HEAD.finditer(text)))
    )
    if len(stamps) < 2:
        # Without timestamps the header line is part of the entry: re-attach it.
        entries = [(m, m.group(0) + rest) for m, rest in entries]
    if entries and text[: entries[0][0].start()].strip():
        out.add(
            kind="system",
            role="system",
            content=body_text(text[: entries[0][0].start()]),
            source_ref="char:0",
            attributes={"event": "preamble"},
        )
    roles: dict[str, str] = {}
    pending: Usage | None = None
    carried: dict[str, Any] = {}
    noise = repeats = bookends = 0
    namespace_task: str | None = None
    for match, raw_entry in entries:
        entry = raw_entry.strip("\n")
        when = (
            parse_log_time(match.group("ts"), "%Y-%d-%m %H:%M:%S", "%Y-%m-%d %H:%M:%S")
            if "ts" in match.groupdict() and match.group("ts")
            else None
        )
        head = first_line(entry)
        if head.startswith(_NOISE) or not entry.strip():
            noise += 1
            continue
        if _FLASK in entry:
            lines = [ln for ln in entry.split("\n") if ln.strip() != _FLASK]
            noise += entry.count("\n") + 1 - len(lines)
            entry = "\n".join(lines)
        attributes: dict[str, Any] = dict(carried)
        if roles.get("phase_name"):
            attributes["phase"] = roles["phase_name"]
        turn = _TURN.match(head)
        if turn:
            who = turn.group("who").strip()
            a, b = turn.group("a").strip(), turn.group("b").strip()
            said, prompt = _split_prompt(body_text(entry[turn.end() :]))
            attributes.update(phase=turn.group("phase").strip(), turn=int(turn.group("turn")))
            if prompt:
                attributes["role_prompt"] = prompt
            out.add(
                kind="message",
                agent=who,
                role="assistant",
                recipient=b if who == a else a,
                content=said,
                started_at=when,
                usage=pending,
                source_ref=f"char:{match.start()}",
                attributes=attributes,
            )
            pending, carried = None, {}
            continue
        early = _EARLY_TURN.match(head)
        if early and early.group("sys"):
            attributes.update(event="sys message", event_kind="sys message", side=early.group("side").lower())
            out.add(
                kind="system",
                role="system",
                agent=early.group("who").strip(),
                content=body_text(entry[early.end() :]),
                started_at=when,
                source_ref=f"char:{match.start()}",
                attributes=attributes,
            )
            carried = {}
            continue
        if early and not early.group("end"):
            if early.group("turn"):
                attributes["turn"] = int(early.group("turn"))
            attributes["side"] = early.group("side").lower()
            out.add(
                kind="message",
                agent=early.group("who").strip(),
                role="assistant",
                content=body_text(entry[early.end() :]),
                started_at=when,
                usage=pending,
                source_ref=f"char:{match.start()}",
                attributes=attributes,
            )
            pending, carried = None, {}
            continue
        early_task = _EARLY_TASK.match(entry)
        if early_task:
            task = body_text(early_task.group("task"))
            if not out.task:
                out.task = task
            if task == out.task:
                repeats += 1  # each phase repeats the task prompt: the trace's task, said once
                continue
        named = _NAMESPACE_TASK.match(entry)
        if named and not namespace_task:
            namespace_task = named.group("task").strip()
        if _START_END.match(head):
            bookends += 1
        event = _EVENT.match(head)
        tag = event.group("tag").strip() if event else None
        rest = body_text(entry[event.end() :]) if event else body_text(entry)
        if tag and tag.startswith("OpenAI_Usage_Info"):
            usage = _usage(rest)
            out.add_usage(usage)
            pending = usage if pending is None else pending + usage
            continue
        if tag == "Preprocessing":
            task_prompt = _TASK.search(rest)
            if task_prompt and not out.task:
                out.task = task_prompt.group("task").strip()
        if tag in _CONFIG_EVENTS:
            roles.update({m.group("key"): m.group("value").strip() for m in _TABLE_ROW.finditer(rest)})
            continue  # the phase and its roles: on the steps that follow (attributes "phase"), not a step
        if tag in _QUIET_EVENTS:
            carried[tag.lower().replace(" ", "_")] = rest
            if tag == "Software Info":
                out.metadata["chatdev_software_info"] = rest
            continue
        previous = out.steps[-1] if out.steps else None
        if (
            tag == "Seminar Conclusion"
            and previous is not None
            and previous.kind == "message"
            and _same_text(rest, previous.content)
        ):
            previous.attributes["seminar_conclusion"] = True  # the phase's conclusion repeats its last turn
            continue
        if tag == "Start Chat" and event is not None and event.group("who"):
            said, prompt = _split_prompt(rest)
            if prompt:
                attributes["role_prompt"] = prompt
            who = event.group("who").strip()
            out.add(
                kind="message",
                agent=who,
                role="user",
                recipient=roles.get("assistant_role_name"),
                content=said,
                started_at=when,
                source_ref=f"char:{match.start()}",
                attributes=attributes,
            )
            carried = {}
            continue
        content = rest if tag else entry.strip()
        key = tag or "log"
        if (
            previous is not None
            and previous.kind == "system"
            and previous.attributes.get("event_kind") == key
        ):
            # A run of the same event (twelve "Update Codes", retried rate-limit lines) is one step.
            previous.content = f"{previous.content}\n{content}"
            previous.attributes["repeated"] = previous.attributes.get("repeated", 1) + 1
            continue
        attributes.update(event=tag or head[:80], event_kind=key)
        out.add(
            kind="system",
            role="system",
            content=content,
            started_at=when,
            source_ref=f"char:{match.start()}",
            attributes=attributes,
        )
        carried = {}
    if noise:
        out.metadata["chatdev_noise_lines_dropped"] = noise
    if repeats > 1:
        out.metadata["chatdev_task_prompt_repeats"] = repeats
    if not out.task and namespace_task:
        out.task = namespace_task.replace("\\n", "\n")
    if bookends and not any(step.kind == "message" for step in out.steps):
        # ChatDev's own start/end lines and nothing between: a ChatDev run that logged no turn.
        out.warnings.append(
            "ChatDev log with no content: only its start and end lines, no turn of any role was logged"
        )
        out.metadata["no_content"] = True
    return out


register_log(
    FrameworkLog(
        name="chatdev",
        sniff=looks_like_chatdev,
        parse=parse_chatdev,
        framework="chatdev",
        order=10,
        mas_names={"chatdev": 0},
        example="[2025-17-01 10:00:00 INFO] Chief Product Officer: **[Start Chat]** ...",
    )
)
