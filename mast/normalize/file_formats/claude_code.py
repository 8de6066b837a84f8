"""Claude Code session transcripts: the JSONL files under ``~/.claude/projects/<project>/<session>.jsonl``.

Each line is one event of the session: ``{"type": "user" | "assistant" | "system" | "summary", "uuid",
"parentUuid", "sessionId", "timestamp", "cwd", "version", "message": <Anthropic message>, ...}``.
Assistant turns are written one content block per line (several lines share ``message.id``), so
usage is counted once per message id. ``tool_result`` blocks in user lines are paired with the
``tool_use`` they answer. Lines marked ``isMeta`` (caveats, slash-command output) become system
steps, never the task; lines of a subagent (``isSidechain``) are attributed to ``subagent``.
``summary`` lines (session titles) and session fields (cwd, branch, version) go to ``metadata``.

Example:
    >>> from mast.normalize import load_trace
    >>> t = load_trace([
    ...   {"type": "user", "sessionId": "s1", "uuid": "u1", "message": {"role": "user", "content": "List the files"}},
    ...   {"type": "assistant", "sessionId": "s1", "uuid": "a1", "parentUuid": "u1",
    ...    "message": {"id": "m1", "role": "assistant", "model": "claude-sonnet-4", "content": [{"type": "text", "text": "Done."}]}}])
    >>> t.source.format, t.task, t.final_output, [s.agent for s in t.steps]
    ('claude_code', 'List the files', 'Done.', ['user', 'claude-code'])
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import parse_time
from mast.normalize._messages import from_anthropic
from mast.normalize._readable import strip_trailers
from mast.normalize._sniff import sniffed_json
from mast.normalize._timeline import Timeline, strip_thinking
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Agent, Trace

AGENT = "claude-code"
SUBAGENT = "subagent"
LINE_TYPES = frozenset({"user", "assistant", "system", "summary", "file-history-snapshot"})
NON_MESSAGE_TYPES = frozenset({
    "progress", "file-history-snapshot", "queue-operation", "system", "summary", "custom-title", "agent-name",
    "tag", "last-prompt", "pr-link",
})
"""Record types Claude Code writes beside the conversation (hook progress, file snapshots, the input
queue, local-command notices, titles): counted in ``metadata["non_message_records"]``, never warned."""
_SESSION_KEYS = ("sessionId", "cwd", "version", "gitBranch", "userType")
_COMMAND_TAGS = ("<command-name>", "<command-message>", "<local-command-stdout>", "<command-args>", "Caveat:")


def is_line(value: Any) -> bool:
    """A Claude Code session event: a known ``type`` with a ``message``, or a ``summary`` line."""
    if not isinstance(value, dict) or not isinstance(value.get("type"), str) or value["type"] not in LINE_TYPES:
        return False
    if value["type"] in ("summary", "file-history-snapshot"):
        return "leafUuid" in value or "messageId" in value
    return isinstance(value.get("message"), dict) and ("sessionId" in value or "uuid" in value)


def _retyped(line: Any) -> tuple[Any, str | None]:
    """A line whose ``type`` is not a string, read as the known type it holds, with a note naming the field.

    A list or number in ``type`` is read as the first known type inside it, else the one its
    ``message.role`` implies; other lines come back as they are.
    """
    if not isinstance(line, dict) or isinstance(line.get("type"), str) or "type" not in line:
        return line, None
    value = line["type"]
    found = [v for v in (value if isinstance(value, list) else [value]) if isinstance(v, str) and v in LINE_TYPES]
    role = line.get("message", {}).get("role") if isinstance(line.get("message"), dict) else None
    chosen = found[0] if found else (role if role in ("user", "assistant") else None)
    if chosen is None:
        return line, None
    return {**line, "type": chosen}, f"type is a {type(value).__name__}, not a string: read as {chosen!r}"


def _injected(line: dict[str, Any], text: str) -> bool:
    return bool(line.get("isMeta")) or text.lstrip().startswith(_COMMAND_TAGS)


_COMMAND_NAME = re.compile(r"<command-name>\s*([^<]{1,200}?)\s*</command-name>")
_COMMAND_ARGS = re.compile(r"<command-args>([^<]{1,20000})</command-args>")


def _typed_command(text: str) -> str | None:
    """A slash command the user typed with arguments (``/orchestrator create a TODO app``): a request.

    Without arguments (``/clear``, ``/model``) it only sets the session up, and is not taken as the task.
    """
    args = _COMMAND_ARGS.search(text)
    if args is None or not args.group(1).strip():
        return None
    name = _COMMAND_NAME.search(text)
    return f"{name.group(1) if name else ''} {args.group(1).strip()}".strip()


_DISPATCH_TOOLS = frozenset({"Task", "Agent"})
"""Tools that start a subagent with a ``prompt`` (Claude Code's ``Task``, later ``Agent``)."""


def _last_words(steps: list[Any]) -> str | None:
    """The last text the main agent wrote (beside a tool call or not; thinking is not text); a subagent's only when the main agent wrote none."""
    for agent in (AGENT, SUBAGENT):
        for step in reversed(steps):
            if step.role == "assistant" and step.agent == agent and (words := strip_thinking(step.content)):
                return words
    return None


class _Session:
    def __init__(self) -> None:
        self.timeline = Timeline(default_agent=AGENT)
        self.session: dict[str, Any] = {}
        self.summaries: list[str] = []
        self.seen_usage: set[str] = set()
        self.task: str | None = None
        self.side_task: str | None = None
        """The first request of a subagent (sidechain) line: the task of a subagent transcript."""
        self.dispatch_task: str | None = None
        """The prompt of the first subagent dispatch (``Task`` tool call): the task when no one typed one."""
        self.times: list[Any] = []
        self.model: str | None = None

    def add(self, number: int, line: dict[str, Any]) -> None:
        for key in _SESSION_KEYS:
            if key in line and key not in self.session:
                self.session[key] = line[key]
        when = parse_time(line.get("timestamp"))
        if when:
            self.times.append(when)
        if line["type"] == "summary":
            if isinstance(line.get("summary"), str):
                self.summaries.append(line["summary"])
            return
        if line["type"] == "file-history-snapshot":
            return
        message = line["message"]
        agent = SUBAGENT if line.get("isSidechain") else AGENT
        fields: dict[str, Any] = {"started_at": when, "source_ref": f"line {number + 1}", "id": line.get("uuid"),
                  "parent_id": line.get("parentUuid")}
        msg_id = message.get("id")
        for msg in from_anthropic(message):
            if msg.usage is not None and msg_id:
                if msg_id in self.seen_usage:
                    msg.usage = None  # the same API message split over lines: usage counted once
                else:
                    self.seen_usage.add(msg_id)
            self.model = self.model or msg.model
            if msg.role == "user" and _injected(line, msg.text):
                if not line.get("isSidechain") and (typed := _typed_command(msg.text)):
                    self.task = self.task or typed
                self.timeline.add_step(kind="system", agent="system", role="user", content=msg.text,
                                       attributes={"injected_context": True}, **fields)
                continue
            if msg.role == "user" and msg.text.strip() and not msg.tool_results:
                if not line.get("isSidechain"):
                    self.task = self.task or msg.text.strip()
                else:
                    self.side_task = self.side_task or msg.text.strip()
            for call in msg.tool_calls:
                prompt = call.arguments.get("prompt") if isinstance(call.arguments, dict) else None
                if self.dispatch_task is None and call.name in _DISPATCH_TOOLS and isinstance(prompt, str) and prompt.strip():
                    self.dispatch_task = prompt.strip()
            self.timeline.add(msg, agent=agent, **fields)

    def trace(self, source: Any) -> Trace:
        timeline = self.timeline
        if not timeline.steps:
            raise TraceFormatError("Claude Code session holds no messages", path=source.path)
        # The answer the session closes on; when it ends in tool use (a TodoWrite after the reply, a
        # question pending), the last thing the agent said to the user.
        final = timeline.final_answer() or _last_words(timeline.steps)
        known = [Agent(name=AGENT, role="coding agent (Claude Code)", model=self.model)]
        metadata: dict[str, Any] = {"session": self.session}
        if self.summaries:
            metadata["summaries"] = self.summaries
        return assemble_trace(
            timeline.steps, source=source, timeline=timeline,
            known_agents=[a for a in known if any(s.agent == AGENT for s in timeline.steps)],
            task=self.task or self.side_task or self.dispatch_task, derive_task=False, final_output=strip_trailers(final) if final else None,
            trace_id=str(self.session.get("sessionId") or ""), framework="claude-code",
            started_at=min(self.times) if self.times else None, ended_at=max(self.times) if self.times else None,
            metadata=metadata,
        )


class ClaudeCodeFormat(TraceFormat):
    """Claude Code session JSONL: one session per file."""

    name = "claude_code"
    description = "Claude Code session transcripts (~/.claude/projects/<project>/<session>.jsonl)"
    priority = 19
    example = '{"type": "assistant", "sessionId": "...", "uuid": "...", "message": {"role": "assistant", "content": [...]}}'

    def detect(self, raw: RawInput) -> float:
        """0.95 when most records are session events carrying a ``sessionId``."""
        data = sniffed_json(raw, '"sessionId"', '"leafUuid"')
        records = data if isinstance(data, list) else [data]
        lines = [r for r in records if is_line(r)]
        if not lines or len(lines) * 2 < len(records):
            return 0.0
        return 0.95 if any(isinstance(r, dict) and "sessionId" in r for r in lines) else 0.6

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per session file; lines of other shapes are kept as a warning."""
        data = raw.data()
        records = data if isinstance(data, list) else [data]
        session = _Session()
        skipped: list[int] = []
        retyped: list[str] = []
        other: Counter[str] = Counter()
        for number, record in enumerate(records):
            line, note = _retyped(record)
            if note:
                retyped.append(f"line {number + 1}: {note}")
            if is_line(line):
                session.add(number, line)
                if line["type"] == "file-history-snapshot":
                    other[line["type"]] += 1
            elif isinstance(line, dict) and isinstance(line.get("type"), str) and line["type"] in NON_MESSAGE_TYPES:
                other[line["type"]] += 1
            else:
                skipped.append(number + 1)
        trace = session.trace(self.source(raw))
        if other:
            trace.metadata["non_message_records"] = dict(other)
        trace.warnings.extend(retyped)
        if skipped:
            where = ", ".join(map(str, skipped[:5])) + (", ..." if len(skipped) > 5 else "")
            trace.warnings.append(f"{len(skipped)} line(s) are not Claude Code session events (unparseable or another shape; line {where}): skipped")
        yield trace


register(ClaudeCodeFormat())
