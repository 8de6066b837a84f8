"""Cline task files: ``api_conversation_history.json`` from ``.../saoudrizwan.claude-dev/tasks/<task id>/``.

The file is the list of Anthropic messages Cline sent its model: ``{"role", "content": [blocks]}``
(newer versions add ``ts``, ``modelInfo`` and ``metrics`` to a message, kept in its attributes). The
first user message opens with the request in ``<task>...</task>`` and every user turn carries an
``<environment_details>`` block (open files, the working folder): that block is context, kept as a
system step, and never the task.

Cline calls tools two ways, both read:

* **XML in the assistant's text** (most versions): ``<execute_command><command>ls</command>
  </execute_command>``; the result comes back as user text blocks ``[execute_command for 'ls']
  Result:`` then the output. Calls carry no id, and a result pairs with the earliest unanswered call
  of its tool. A result is an error when Cline wrote one of its failure messages (``The tool execution
  failed...``, ``<error>``, the user denied the operation).
* **Native tool use** (``tool_use`` / ``tool_result`` blocks with ids and ``is_error``).

``attempt_completion``'s ``result`` is the final answer. ``ui_messages.json`` (the ask/say events of
the same task) is not read: it repeats the conversation for the chat view.

Detection needs Cline's own marks: the first message is a user message holding ``<task>`` and some
user message holds ``<environment_details>``, or the first user message *opens* with a whole
``<task>...</task>`` (a copied or renamed file without the context blocks), or the file is named
``api_conversation_history.json``, or every message carries Cline's ``ts`` (epoch milliseconds) and
a tool block is among them. Plain Anthropic message lists stay with ``anthropic_messages`` /
``openai_chat``.

The final answer is the latest assistant answer: ``attempt_completion``'s ``result``, a
``plan_mode_respond``'s ``response``, or an assistant text that calls no tool, whichever came last.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict, leftover, parse_time, text_of, tool_call
from mast.normalize._messages import Msg
from mast.normalize._sniff import sniffed_json
from mast.normalize._timeline import Timeline
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Agent, ToolCall, ToolResult, Trace, Usage

AGENT = "cline"
FILE_NAME = "api_conversation_history.json"
TOOLS = (
    "execute_command",
    "read_file",
    "write_to_file",
    "replace_in_file",
    "search_files",
    "list_files",
    "list_code_definition_names",
    "browser_action",
    "use_mcp_tool",
    "access_mcp_resource",
    "ask_followup_question",
    "attempt_completion",
    "new_task",
    "plan_mode_respond",
    "load_mcp_documentation",
    "web_fetch",
    "web_search",
    "condense",
    "summarize_task",
    "new_rule",
    "report_bug",
    "focus_chain",
    "apply_patch",
    "generate_explanation",
)
_XML_CALL = re.compile(r"<(" + "|".join(TOOLS) + r")>(.*?)</\1>", re.S)
_XML_PARAM = re.compile(r"<([a-z_]+)>\n?(.*?)\n?</\1>", re.S)
_RESULT_HEADER = re.compile(r"^\[([a-z_]+)(?: for '(.*?)')?\] Result:\s*", re.S)
_FAILURE = ("The tool execution failed", "<error>", "The user denied this operation", "[ERROR]")
_ENV = "<environment_details>"
_TASK = re.compile(r"<task>\s*(.*?)\s*</task>", re.S)
_ANSWERS = {"attempt_completion": "result", "plan_mode_respond": "response"}
"""Tools whose argument is an answer to the user (the final answer when it is the latest)."""


def _blocks(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def _texts(message: dict[str, Any]) -> list[str]:
    return [
        b["text"]
        for b in _blocks(message)
        if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str)
    ]


def _is_message_list(value: Any) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(
            isinstance(m, dict)
            and m.get("role") in ("user", "assistant")
            and isinstance(m.get("content"), str | list)
            for m in value
        )
    )


def is_history(value: Any) -> bool:
    """A Cline conversation: Anthropic-style messages, the first a ``<task>``, a user turn with ``<environment_details>``."""
    if (
        not _is_message_list(value)
        or value[0].get("role") != "user"
        or not any("<task>" in t for t in _texts(value[0]))
    ):
        return False
    return any(_ENV in t for m in value[:6] if m.get("role") == "user" for t in _texts(m))


def _cline_tool(message: dict[str, Any]) -> bool:
    """Whether a message calls one of Cline's tools (XML or native) or returns one's ``[tool] Result:``."""
    for block in _blocks(message):
        if not isinstance(block, dict):
            continue
        raw = block.get("text")
        text = raw if isinstance(raw, str) else ""
        if message.get("role") == "assistant" and (
            _XML_CALL.search(text) or (block.get("type") == "tool_use" and block.get("name") in TOOLS)
        ):
            return True
        if (
            message.get("role") == "user"
            and (found := _RESULT_HEADER.match(text))
            and found.group(1) in TOOLS
        ):
            return True
    return False


def opens_with_task(value: Any) -> bool:
    """Messages whose first (user) message opens with a whole ``<task>...</task>``, and that use a Cline tool.

    A ``<task>`` alone is not enough (a plain Anthropic list may say it): one of Cline's tools, called
    or answered, must follow.
    """
    if not _is_message_list(value) or value[0].get("role") != "user":
        return False
    texts = _texts(value[0])
    if not (texts and texts[0].lstrip().startswith("<task>") and "</task>" in texts[0]):
        return False
    return any(_cline_tool(m) for m in value)


def _not_cline(data: Any) -> str:
    """Why ``data`` is not a Cline conversation, for the parse error."""
    if not isinstance(data, list) or not data:
        return "not a Cline api_conversation_history.json (needs a JSON list of messages)"
    for n, m in enumerate(data):
        if not (
            isinstance(m, dict)
            and m.get("role") in ("user", "assistant")
            and isinstance(m.get("content"), str | list)
        ):
            return (
                f"not a Cline api_conversation_history.json: message {n} is not an Anthropic-style message "
                "(role user or assistant, content text or a list of blocks)"
            )
    return (
        "not a Cline api_conversation_history.json (needs a first user message opening with <task>...</task>, "
        f"<environment_details> in a user turn, Cline's ts on every message, or the name {FILE_NAME})"
    )


def _stamped(value: Any) -> bool:
    """Anthropic-style messages each stamped with Cline's ``ts`` (epoch milliseconds), a tool block among them."""
    return (
        _is_message_list(value)
        and all(isinstance(m.get("ts"), int) and m["ts"] > 10**11 for m in value)
        and any(
            isinstance(b, dict) and b.get("type") in ("tool_use", "tool_result")
            for m in value
            for b in _blocks(m)
        )
    )


def _named(raw: RawInput) -> bool:
    return raw.path is not None and raw.path.name.endswith(FILE_NAME)


def _xml_calls(text: str) -> tuple[str, list[ToolCall]]:
    """The assistant's words without its XML tool calls, and the calls (parameters as arguments)."""
    calls = [
        tool_call(m.group(1), {p.group(1): p.group(2) for p in _XML_PARAM.finditer(m.group(2))})
        for m in _XML_CALL.finditer(text)
    ]
    return _XML_CALL.sub("", text).strip(), calls


class _Reader:
    def __init__(self) -> None:
        self.timeline = Timeline(default_agent=AGENT)
        self.task: str | None = None
        self.final: str | None = None
        self.models: list[str] = []

    def user(self, blocks: list[Any], fields: dict[str, Any]) -> None:
        words: list[str] = []
        result: tuple[str, list[str]] | None = None  # (tool name, output texts)

        def say() -> None:
            said = "\n".join(w for w in words if w.strip()).strip()
            words.clear()
            if said:
                if self.task is None:
                    found = _TASK.search(said)
                    self.task = found.group(1) if found else said
                self.timeline.add(Msg(role="user", text=said), **fields)

        def close() -> None:
            nonlocal result
            say()
            if result is not None:
                output = "\n".join(result[1]).strip()
                failed = output.startswith(_FAILURE) or "The tool execution failed" in output[:300]
                tool = ToolResult(name=result[0], output=output, is_error=failed)
                self.timeline.add(Msg(role="tool", tool_results=[tool]), **fields)
                result = None

        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            text = text_of(block.get("text"))
            if kind == "tool_result":
                close()
                tool = ToolResult(
                    call_id=block.get("tool_use_id"),
                    output=text_of(block.get("content")),
                    is_error=bool(block.get("is_error")),
                )
                self.timeline.add(Msg(role="tool", tool_results=[tool]), **fields)
            elif kind == "text" and (header := _RESULT_HEADER.match(text)):
                close()
                result = (header.group(1), [text[header.end() :]])
            elif kind == "text" and _ENV in text:
                before, _, after = text.partition(_ENV)
                if before.strip():  # the request (or output) and the context in one block (some versions)
                    (result[1] if result is not None else words).append(before)
                close()
                text = _ENV + after
                context = {**fields, "attributes": {**fields["attributes"], "injected_context": True}}
                self.timeline.add_step(kind="system", agent="system", role="user", content=text, **context)
            elif result is not None:
                result[1].append(text if kind == "text" else text_of(block))
            else:
                words.append(text if kind == "text" else text_of(block))
        close()

    def assistant(self, message: dict[str, Any], blocks: list[Any], fields: dict[str, Any]) -> None:
        texts: list[str] = []
        thoughts: list[str] = []
        calls: list[ToolCall] = []
        for block in blocks:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                words, found = _xml_calls(text_of(block.get("text")))
                texts.append(words)
                calls.extend(found)
            elif kind in ("thinking", "redacted_thinking"):
                thoughts.append(text_of(block.get("thinking")) or "[redacted thinking]")
            elif kind == "tool_use":
                calls.append(tool_call(str(block.get("name") or "?"), block.get("input"), block.get("id")))
        answered = False
        for call in calls:
            key = _ANSWERS.get(call.name)
            if key is not None and isinstance(call.arguments, dict) and call.arguments.get(key):
                self.final = str(call.arguments[key]).strip()
                answered = True
        said = "\n".join(t for t in texts if t).strip()
        if not answered and not calls and said:  # words to the user, no tool called: an answer too
            self.final = said
        info = as_dict(message.get("modelInfo"))
        model = info.get("modelId") if isinstance(info.get("modelId"), str) else None
        if model and model not in self.models:
            self.models.append(model)
        metrics = as_dict(message.get("metrics"))
        tokens = as_dict(metrics.get("tokens"))
        usage = None
        if isinstance(tokens.get("prompt"), int) or isinstance(tokens.get("completion"), int):
            usage = Usage(
                input_tokens=tokens.get("prompt"),
                output_tokens=tokens.get("completion"),
                cost_usd=float(metrics["cost"]) if isinstance(metrics.get("cost"), int | float) else None,
            )
        self.timeline.add(
            Msg(
                role="assistant",
                text="\n".join(t for t in texts if t),
                reasoning="\n".join(thoughts),
                tool_calls=calls,
                model=model,
                usage=usage,
            ),
            **fields,
        )


def _trace(data: list[Any], raw: RawInput, fmt: TraceFormat) -> Trace:
    reader = _Reader()
    for position, message in enumerate(data):
        fields: dict[str, Any] = {
            "source_ref": f"/{position}",
            "started_at": parse_time(message.get("ts")),
            "attributes": leftover(message, ("role", "content", "ts", "modelInfo", "metrics")),
        }
        blocks = _blocks(message)
        if message["role"] == "user":
            reader.user(blocks, fields)
        else:
            reader.assistant(message, blocks, fields)
    if not reader.timeline.steps:
        raise raw.fail("Cline conversation holds no messages")
    times = [s.started_at for s in reader.timeline.steps if s.started_at]
    task_id = raw.path.parent.name if raw.path is not None and raw.path.parent.name.isdigit() else ""
    return assemble_trace(
        reader.timeline.steps,
        source=fmt.source(raw, variant="api_conversation_history"),
        timeline=reader.timeline,
        known_agents=[
            Agent(name=AGENT, role="coding agent (Cline)", model=reader.models[0] if reader.models else None)
        ],
        task=reader.task,
        derive_task=False,
        final_output=reader.final,
        trace_id=task_id,
        framework="cline",
        started_at=min(times) if times else None,
        ended_at=max(times) if times else None,
        metadata={"models": reader.models} if reader.models[1:] else {},
    )


class ClineFormat(TraceFormat):
    """Cline's api_conversation_history.json: one task per file."""

    name = "cline"
    description = "Cline task conversations (api_conversation_history.json: Anthropic messages, <task>, XML or native tool use)"
    priority = 26
    example = '[{"role": "user", "content": [{"type": "text", "text": "<task>\\n...\\n</task>"}, {"type": "text", "text": "<environment_details>..."}]}, ...]'

    def detect(self, raw: RawInput) -> float:
        """0.97 for Cline's marks, 0.95 for a message list named so, 0.9 for one opening with ``<task>``, 0.85 for ``ts``.

        Cline's marks: ``<task>`` opens the first message and ``<environment_details>`` follows.
        """
        data = sniffed_json(raw, "<task>", '"ts"', '"role"')
        if raw.kind != "json":
            return 0.0
        if is_history(data):
            return 0.97
        if _named(raw) and _is_message_list(data):
            return 0.95
        if opens_with_task(data):
            return 0.9
        return 0.85 if _stamped(data) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per task file."""
        data = raw.data()
        if not (
            is_history(data)
            or opens_with_task(data)
            or _stamped(data)
            or (_named(raw) and _is_message_list(data))
        ):
            raise raw.fail(_not_cline(data))
        yield _trace(data, raw, self)


register(ClineFormat())
