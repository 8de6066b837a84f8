"""Console transcripts printed by AutoGen: AG2 (0.2) chats and AgentChat / Magentic-One runs.

**AG2** prints each message as ``sender (to recipient):``, a blank line, the content and a line of
dashes. Between messages come notices (``Next speaker: X``, ``>>>>>>>> EXECUTING CODE BLOCK 0``);
they are kept on the next step. Tool use prints ``***** Suggested tool call (call_id): name *****``
with the arguments, and ``***** Response from calling tool (call_id) *****`` with the output.

**AgentChat's Console** (and Magentic-One, the form MAD stores for "Magentic") opens each message
with ``---------- source ----------`` or ``---------- MessageType (source) ----------``. Tool calls
and results are printed as Python reprs (``[FunctionCall(id='...', arguments='...', name='...')]``),
read here without evaluating anything. The agbench harness wraps the run between
``SCENARIO.PY STARTING !#!#`` and ``SCENARIO.PY COMPLETE !#!#``; text outside is kept in metadata.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from mast.normalize._common import tool_call
from mast.normalize._logs_common import FrameworkLog, LogParse, blocks_between, body_text, register_log
from mast.normalize._readable import USAGE_LINE, final_from_steps, usage_numbers
from mast.trace import ToolCall, ToolResult, Usage

_AG2_TURN = re.compile(r"^(?P<src>[^\s()\-][^\n()]{0,80}?) \(to (?P<dst>[^\n()]{1,80})\):[ \t]*$", re.MULTILINE)
_AG2_RULE = re.compile(r"^-{40,}[ \t]*$", re.MULTILINE)
_AG2_NOTICE = re.compile(r"^(?:>>>>>>>>[^\n]*|Next speaker:[^\n]*)$", re.MULTILINE)
_SUGGESTED = re.compile(
    r"^\*{5} Suggested (?:tool|function) call(?: \((?P<id>[^)\n]+)\))?: (?P<name>[^\s*]+) \*{5}[ \t]*\n"
    r"(?:Arguments:[ \t]*\n)?(?P<args>.*?)\n\*{10,}[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
_TOOL_RESPONSE = re.compile(
    r"^\*{5} Response from calling (?:tool|function) \((?P<ref>[^)\n]+)\) \*{5}[ \t]*\n(?P<out>.*?)\n\*{10,}[ \t]*$",
    re.MULTILINE | re.DOTALL,
)

_AC_HEADER = re.compile(
    r"^-{10} (?:(?P<type>[A-Z][A-Za-z]+) \((?P<src>[^)\n]{1,80})\)|(?P<plain>[^\s\-][^\n]{0,80}?)) -{10}[ \t]*$",
    re.MULTILINE,
)
_SCENARIO_START = re.compile(r"^[^\n]*SCENARIO\.PY STARTING !#!#[^\n]*$", re.MULTILINE)
_SCENARIO_END = re.compile(r"^[^\n]*SCENARIO\.PY COMPLETE !#!#[^\n]*$", re.MULTILINE)
_FINAL = re.compile(r"^FINAL ANSWER:[ \t]*(?P<answer>[^\n]*)$", re.MULTILINE)
_Q = r"(?P<{0}>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")"
_FUNCTION_CALL = re.compile(
    r"FunctionCall\(id=" + _Q.format("id") + r", arguments=" + _Q.format("args") + r", name=" + _Q.format("name") + r"\)"
)
_FUNCTION_RESULT = re.compile(
    r"FunctionExecutionResult\(content=" + _Q.format("content") + r"(?:, name=" + _Q.format("name") + r")?"
    r", call_id=" + _Q.format("id") + r"(?:, is_error=(?P<err>True|False))?\)"
)
_SUMMARY_TOKENS = re.compile(r"^Total (?P<which>prompt|completion) tokens:[ \t]*(?P<n>\d+)", re.MULTILINE)
_TRANSFER = re.compile(r"Transferred to (?P<target>[\w\-]+)")


def _literal(quoted: str | None) -> str:
    """The text of a Python string literal from a repr (``ast.literal_eval`` only parses literals)."""
    if not quoted:
        return ""
    try:
        value = ast.literal_eval(quoted)
    except (ValueError, SyntaxError):
        return quoted[1:-1]
    return value if isinstance(value, str) else str(value)


def looks_like_ag2_console(text: str) -> bool:
    """True when at least two ``sender (to recipient):`` turns are separated by dashed rules."""
    head = text[:200_000]
    return len(_AG2_TURN.findall(head, 0)) >= 2 and _AG2_RULE.search(head) is not None


def looks_like_agentchat_console(text: str) -> bool:
    """True for AgentChat Console output (``---------- source ----------`` headers) or an agbench run."""
    head = text[:200_000]
    return "SCENARIO.PY STARTING !#!#" in head or len(_AC_HEADER.findall(head)) >= 2


def _pair_results(results: list[ToolResult], calls: list[ToolCall]) -> None:
    """Give results that name a function (legacy AG2) the id of the latest call to it."""
    ids = {c.id for c in calls if c.id}
    for result in results:
        if result.call_id in ids:
            continue
        ref = result.call_id
        match = next((c for c in reversed(calls) if c.name == ref), None)
        result.name = ref
        result.call_id = match.id if match else None


def parse_ag2_console(text: str) -> LogParse:
    """One step per ``sender (to recipient):`` message; tool calls and results read from the banners."""
    out = LogParse(variant="ag2_console")
    matches = list(_AG2_TURN.finditer(text))
    if matches and text[:matches[0].start()].strip():
        out.add(kind="system", role="system", content=body_text(text[:matches[0].start()]), attributes={"event": "preamble"})
    notices: list[str] = []
    calls_so_far: list[ToolCall] = []
    for number, (match, rest) in enumerate(blocks_between(text, matches)):
        rule = _AG2_RULE.search(rest)
        content = rest[: rule.start()] if rule else rest
        after = rest[rule.end():] if rule else ""
        calls = [tool_call(m.group("name"), m.group("args").strip(), m.group("id") or f"ag2-console-{number}-{n}")
                 for n, m in enumerate(_SUGGESTED.finditer(content))]
        results = [ToolResult(call_id=m.group("ref").strip(), output=m.group("out").strip()) for m in _TOOL_RESPONSE.finditer(content)]
        calls_so_far.extend(calls)
        _pair_results(results, calls_so_far)
        said = body_text(_TOOL_RESPONSE.sub("", _SUGGESTED.sub("", content)))
        attributes: dict[str, Any] = {"notices": notices} if notices else {}
        kind = "tool_result" if results and not said else "tool_call" if calls and not said else "message"
        out.add(kind=kind, agent=match.group("src").strip(), recipient=match.group("dst").strip(), content=said,
                tool_calls=calls, tool_results=results, source_ref=f"char:{match.start()}", attributes=attributes)
        notices = [n.group(0).strip() for n in _AG2_NOTICE.finditer(after)]
    if notices:
        out.metadata["ag2_trailing_notices"] = notices
    # The chat opens with the initiator's request: that is the task.
    out.task = next((s.content for s in out.steps if s.kind == "message" and s.agent and s.content), None)
    out.final_output = final_from_steps(out.steps[1:])  # the last reply, "TERMINATE" and usage lines left out
    return out


def parse_agentchat_console(text: str) -> LogParse:
    """One step per Console message block; the agbench harness text goes to metadata."""
    out = LogParse(variant="agentchat_console")
    start = _SCENARIO_START.search(text)
    end = _SCENARIO_END.search(text, start.end() if start else 0)
    core_from = start.end() if start else 0
    core_to = end.start() if end else len(text)
    if start:
        out.variant = "magentic_one"
        out.metadata["harness_preamble"] = text[: start.end()].strip()
    if end:
        out.metadata["harness_epilogue"] = text[end.start():].strip()
    core = text[core_from:core_to]
    matches = list(_AC_HEADER.finditer(core))
    if matches and core[:matches[0].start()].strip():
        out.add(kind="system", role="system", content=body_text(core[:matches[0].start()]), attributes={"event": "preamble"})
    finals = list(_FINAL.finditer(core))
    if finals:
        out.final_output = finals[-1].group("answer").strip()
    for match, rest in blocks_between(core, matches):
        body = body_text(rest)
        source = (match.group("src") or match.group("plain") or "").strip()
        message_type = match.group("type")
        ref = f"char:{core_from + match.start()}"
        attributes: dict[str, Any] = {"message_type": message_type} if message_type else {}
        if not message_type and source == "Summary":
            counts = {m.group("which"): int(m.group("n")) for m in _SUMMARY_TOKENS.finditer(body)}
            usage = Usage(input_tokens=counts.get("prompt"), output_tokens=counts.get("completion"))
            if usage != Usage():
                out.add_usage(usage)
            out.add(kind="system", role="system", content=body, source_ref=ref, attributes={"event": "summary"})
            continue
        calls = [tool_call(_literal(m.group("name")), _literal(m.group("args")), _literal(m.group("id")))
                 for m in _FUNCTION_CALL.finditer(body)]
        results = [
            ToolResult(call_id=_literal(m.group("id")), name=_literal(m.group("name")) or None,
                       output=_literal(m.group("content")), is_error=m.group("err") == "True")
            for m in _FUNCTION_RESULT.finditer(body)
        ]
        user = source.lower() == "user"
        kind = "message"
        prompt_tokens, completion_tokens = usage_numbers(body)
        step_usage = None
        if prompt_tokens is not None:
            # Console(output_stats=True) prints "[Prompt tokens: N, Completion tokens: M]" under a message.
            step_usage = Usage(input_tokens=prompt_tokens, output_tokens=completion_tokens)
            body = USAGE_LINE.sub("", body).strip()
        content = body
        recipient = None
        if calls and message_type in (None, "ToolCallRequestEvent"):
            kind, content = "tool_call", ""
        elif results and message_type in (None, "ToolCallExecutionEvent"):
            kind, content = "tool_result", ""
        elif message_type == "HandoffMessage":
            kind = "handoff"
            transfer = _TRANSFER.search(body)
            recipient = transfer.group("target") if transfer else None
        elif message_type == "StopMessage":
            kind = "system"
        if user and out.task is None and body:
            out.task = body
        out.add(kind=kind, agent=source or None, role="user" if user else "tool" if kind == "tool_result" else "assistant",
                recipient=recipient, content=content, tool_calls=calls if kind == "tool_call" else [],
                tool_results=results if kind == "tool_result" else [], source_ref=ref, attributes=attributes, usage=step_usage)
    if out.final_output is None:
        out.final_output = final_from_steps(out.steps)
    return out


register_log(FrameworkLog(
    name="magentic", sniff=looks_like_agentchat_console, parse=parse_agentchat_console, framework="magentic-one", order=60,
    mas_names={"autogen": 1, "magentic": 0, "magenticone": 0}, standalone=False,  # the autogen_console format reads it
    example="---------- MagenticOneOrchestrator ----------",
))
register_log(FrameworkLog(
    name="ag2_console", sniff=looks_like_ag2_console, parse=parse_ag2_console, framework="autogen", order=70,
    mas_names={"ag2": 1, "autogen": 0}, standalone=False,  # the autogen_console format reads it
    example="user_proxy (to assistant):",
))
