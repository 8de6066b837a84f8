"""AG2 (AutoGen 0.2) conversations: message lists, and the same lists dumped as YAML-like text.

AG2 records each message as an OpenAI chat dict plus ``name`` (the speaker). The ``role`` is
relative to the agent that stored the history (other agents' turns show as ``user``), so the
speaker is ``name``, never ``role``; the raw role is kept in ``attributes["raw_role"]``.
"""

from __future__ import annotations

import re
from typing import Any

from mast.normalize._common import text_of, tool_call, tool_result
from mast.normalize._logs_common import FrameworkLog, LogParse, body_text, register_log
from mast.trace import Step, ToolCall, ToolResult

_BOXED = "\\boxed{"
_MESSAGE_KEYS = {"content", "role", "name", "tool_calls", "function_call", "tool_responses", "tool_call_id"}


def message_calls(msg: dict[str, Any]) -> list[ToolCall]:
    """Tool calls of an OpenAI-style message (``tool_calls`` or the legacy ``function_call``)."""
    calls: list[ToolCall] = []
    for call in msg.get("tool_calls") or []:
        if isinstance(call, dict):
            function: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else call
            calls.append(tool_call(str(function.get("name") or "?"), function.get("arguments"), call.get("id")))
    legacy = msg.get("function_call")
    if isinstance(legacy, dict):
        calls.append(tool_call(str(legacy.get("name") or "?"), legacy.get("arguments")))
    return calls


def message_results(msg: dict[str, Any]) -> list[ToolResult]:
    """Tool results a message delivers (``tool_responses``, or a ``tool``/``function`` role message)."""
    results: list[ToolResult] = []
    for item in msg.get("tool_responses") or []:
        if isinstance(item, dict):
            results.append(tool_result(item.get("content"), item.get("tool_call_id"), name=item.get("name")))
    if not results and msg.get("role") in ("tool", "function"):
        results.append(tool_result(msg.get("content"), msg.get("tool_call_id"), name=msg.get("name")))
    return results


def parse_messages(messages: list[Any], *, variant: str = "ag2_messages") -> LogParse:
    """One step per AG2 message; speakers from ``name``; tool calls and results kept.

    In a two-party chat each message's recipient is the other party.
    """
    out = LogParse(variant=variant)
    names = {m.get("name") for m in messages if isinstance(m, dict) and m.get("name")}
    pair = sorted(str(n) for n in names) if len(names) == 2 else None
    for position, msg in enumerate(messages):
        if not isinstance(msg, dict):
            out.add(kind="message", content=text_of(msg), source_ref=f"trajectory[{position}]")
            out.warnings.append(f"message {position} is a {type(msg).__name__}, kept as text")
            continue
        name = msg.get("name")
        raw_role = msg.get("role")
        calls = message_calls(msg)
        results = message_results(msg)
        raw_content = msg.get("content")
        if isinstance(raw_content, list) and all(isinstance(line, str) for line in raw_content):
            # MAD stores AG2 message text as a list of lines; blank lines are paragraph breaks.
            raw_content = "\n".join(raw_content)
        content = "" if results and raw_role in ("tool", "function") else text_of(raw_content)
        kind = "message"
        if results and not content:
            kind = "tool_result"
        elif calls and not content:
            kind = "tool_call"
        agent = str(name) if name else (str(raw_role) if raw_role else None)
        recipient = None
        if pair and name:
            recipient = pair[1] if pair[0] == name else pair[0]
        attributes: dict[str, Any] = {"raw_role": raw_role} if raw_role else {}
        attributes.update({k: v for k, v in msg.items() if k not in _MESSAGE_KEYS})
        out.add(
            kind=kind,
            agent=agent,
            role="tool" if raw_role in ("tool", "function") else None,
            recipient=recipient,
            content=content,
            tool_calls=calls,
            tool_results=results,
            source_ref=f"trajectory[{position}]",
            attributes=attributes,
        )
    out.final_output = boxed_answer(out.steps)
    return out


def boxed_answer(steps: list[Step]) -> str | None:
    r"""The last message holding a ``\boxed{}`` answer (the MathChat convention), if any."""
    for step in reversed(steps):
        if _BOXED in step.content:
            return step.content
    return None


# --- the same conversation dumped as YAML-like text (full MAD AG2 trajectories) ---------------

_TRAJECTORY = re.compile(r"^trajectory:[ \t]*$", re.MULTILINE)
_CONTENT_KEY = re.compile(r"^(?P<indent>[ \t]*)(?P<dash>- )?content:[ \t]*(?P<first>[^\n]*)$", re.MULTILINE)
_PROBLEM = re.compile(r"^problem_statement:[ \t]*(?P<first>[^\n]*)\n(?P<rest>(?:[ \t]+[^\n]*\n|[ \t]*-[^\n]*\n)*)", re.MULTILINE)


def _yaml_scalar(lines: str) -> str:
    """Best-effort text of a YAML value: block scalars dedented, list items and quotes unwrapped."""
    text = body_text(lines)
    if text.startswith(("|", ">")):
        text = body_text(text.split("\n", 1)[1] if "\n" in text else "")
    items = text.split("\n")
    if items and all(line.startswith("- ") or not line.strip() for line in items):
        items = [line[2:] for line in items]
    unquoted = [line[1:-1] if len(line) > 1 and line[0] == line[-1] and line[0] in "'\"" else line for line in items]
    return "\n".join(unquoted).strip()


def looks_like_yaml_chat(text: str) -> bool:
    """True for text holding ``content:`` blocks followed by ``role:`` and ``name:`` keys."""
    head = text[:200_000]
    return (
        _CONTENT_KEY.search(head) is not None
        and re.search(r"^[ \t]*role:[ \t]*\S", head, re.MULTILINE) is not None
        and re.search(r"^[ \t]*name:[ \t]*\S", head, re.MULTILINE) is not None
    )


def parse_yaml_chat(text: str) -> LogParse:
    """Read ``content: ... role: ... name: ...`` blocks, one step each, speaker from ``name``."""
    out = LogParse(variant="ag2_yaml")
    problem = _PROBLEM.search(text)
    if problem:
        out.task = _yaml_scalar(problem.group("first") + "\n" + problem.group("rest")) or None
    anchor = _TRAJECTORY.search(text)
    start = anchor.end() if anchor else 0
    matches = list(_CONTENT_KEY.finditer(text, start))
    messages: list[dict[str, Any]] = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        width = len(match.group("indent")) + (2 if match.group("dash") else 0)
        key_line = re.compile(rf"^[ \t]{{{width}}}(?P<key>role|name):[ \t]*(?P<value>[^\n]*)$", re.MULTILINE)
        block = text[match.end():end]
        keys = list(key_line.finditer(block))
        cut = keys[0].start() if keys else len(block)
        fields = {k.group("key"): k.group("value").strip().strip("'\"") for k in keys}
        messages.append({"content": _yaml_scalar(match.group("first") + block[:cut]), **fields})
    parsed = parse_messages(messages, variant="ag2_yaml")
    parsed.task = out.task
    return parsed


register_log(FrameworkLog(
    name="ag2_yaml", sniff=looks_like_yaml_chat, parse=parse_yaml_chat, framework="ag2", order=80, mas_names={"ag2": 0},
    standalone=False,  # YAML-like dumps are only met inside MAD records
    example="- content: ...\n  role: user\n  name: Agent_Expert",
))
