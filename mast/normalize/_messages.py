"""Chat messages in every dialect mast meets, read into one shape.

Agent traces carry chat messages in many spellings: OpenAI chat completions, Responses-API items,
Anthropic content blocks, OTel GenAI ``parts``, LangChain message dicts and ``lc`` constructors,
Gemini ``contents``, Vercel AI SDK messages, and ``role: text`` lines. :func:`to_messages` reads any
of them into :class:`Msg` objects; dialects registered in :mod:`mast.normalize._dialects` (one
``_dialect_<name>.py`` module each, e.g. Pydantic AI) are asked first. :func:`history_messages`
reads re-sent histories incrementally. :class:`mast.normalize._timeline.Timeline` turns messages
into ordered steps.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

import orjson

from mast._json import canonical
from mast.normalize._common import text_of, tool_call, usage_from
from mast.normalize._dialects import dialect_of
from mast.trace import ToolCall, ToolResult, Usage

ROLE_ALIASES = {
    "human": "user",
    "ai": "assistant",
    "model": "assistant",
    "bot": "assistant",
    "function": "tool",
    "ipython": "tool",
    "chat": "user",
}
CHAT_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
RESPONSES_ITEM_TYPES = frozenset(
    {
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "custom_tool_call",
        "custom_tool_call_output",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "code_interpreter_call",
        "image_generation_call",
        "local_shell_call",
        "local_shell_call_output",
        "mcp_call",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "item_reference",
    }
)
LANGCHAIN_TYPES = {
    "human": "user",
    "ai": "assistant",
    "system": "system",
    "tool": "tool",
    "function": "tool",
    "chat": "user",
    "HumanMessage": "user",
    "AIMessage": "assistant",
    "SystemMessage": "system",
    "ToolMessage": "tool",
    "FunctionMessage": "tool",
    "ChatMessage": "user",
    "HumanMessageChunk": "user",
    "AIMessageChunk": "assistant",
}
ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result"}
)
CREWAI_DELEGATION_TOOLS = frozenset(
    {"delegate_work_to_coworker", "ask_question_to_coworker", "Delegate work to coworker", "Ask question to coworker"}
)
"""CrewAI's built-in delegation tools: their result is what the named coworker agent answered."""

_ROLE_LINE = re.compile(r"^(system|developer|user|assistant|tool|human|ai): ?", re.MULTILINE)
_CREWAI_ROLE = re.compile(r"^You are (?P<name>[^.\n]{1,80})\.")
_NAMED_ROLE = re.compile(r"^You are (?:the )?(?P<name>[A-Z][\w\-]*(?: [A-Z][\w\-]*){0,3})[.,]")


@dataclass
class Msg:
    """One chat message, whatever dialect it was written in."""

    role: str
    text: str = ""
    name: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    tool_results: list[ToolResult] = field(default_factory=list)
    reasoning: str = ""
    id: str | None = None
    model: str | None = None
    usage: Usage | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    keys: list[tuple[Any, ...]] | None = field(default=None, repr=False, compare=False)
    """History-lookup keys, computed once (see :func:`history_keys`)."""
    shared: bool = field(default=False, repr=False, compare=False)
    """True for a cached conversion: copied before anything may change it (see :func:`_fresh`)."""
    warnings: list[str] = field(default_factory=list, compare=False)
    """Fields that could not be read as what they should be (kept in ``extra``), for the trace's warnings."""

    @property
    def empty(self) -> bool:
        """True when the message says nothing: no text, reasoning, tool call or result."""
        return not (self.text.strip() or self.reasoning.strip() or self.tool_calls or self.tool_results)

    @property
    def content(self) -> str:
        """Text for a step: the reasoning (marked) followed by the text."""
        if self.reasoning.strip():
            thought = f"<thinking>\n{self.reasoning.strip()}\n</thinking>"
            return f"{thought}\n\n{self.text}" if self.text else thought
        return self.text


def norm_role(role: Any) -> str:
    """A chat role in the five-role vocabulary (``human`` -> ``user``, ``model`` -> ``assistant``...)."""
    text = str(role or "").strip().lower()
    return ROLE_ALIASES.get(text, text) or "user"


def type_of(value: dict[str, Any]) -> str | None:
    """``value["type"]`` when it is text; a list or object there names no dialect (and is unhashable)."""
    kind = value.get("type")
    return kind if isinstance(kind, str) else None


def listed(value: dict[str, Any], key: str, extra: dict[str, Any], warnings: list[str]) -> list[Any]:
    """``value[key]`` when it is a list (or absent); any other value is kept in ``extra`` and noted."""
    got = value.get(key)
    if isinstance(got, list):
        return got
    if isinstance(got, tuple):
        return list(got)
    if got in (None, "", {}, False):
        return []
    extra.setdefault(key, got)
    warnings.append(f"a message's {key} is a {type(got).__name__}, not a list: kept in the step's attributes")
    return []


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a dict, else an empty dict (for optional nested objects)."""
    return value if isinstance(value, dict) else {}


def maybe_json(value: Any, depth: int = 3) -> Any:
    """Decode JSON held in a string, repeatedly (sources double-encode), up to ``depth`` times."""
    for _ in range(depth):
        if not isinstance(value, str):
            return value
        stripped = value.strip()
        if not stripped or stripped[0] not in '{["' or stripped in ("null",):
            return value
        try:
            value = orjson.loads(stripped)
        except orjson.JSONDecodeError:
            return value
    return value


def compact(value: Any) -> str:
    """Short, stable JSON text for a value that has no better rendering."""
    if isinstance(value, str):
        return value
    return canonical(value)


def result_text(value: Any) -> str:
    """A tool's output as text: strings as they are, text-bearing wrappers flattened, other data as JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and any(isinstance(value.get(k), str | list) for k in ("content", "text", "output")):
        return text_of(value)
    if isinstance(value, list) and value and all(isinstance(p, dict) and p.get("type") in ("text", "output_text") for p in value):
        return text_of(value)
    return compact(value)


# --- content parts --------------------------------------------------------------------------


def _parts_text(content: Any) -> tuple[str, str]:
    """Text and reasoning from a content value (string, list of parts, dict)."""
    if content is None:
        return "", ""
    if isinstance(content, str):
        return content, ""
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return text_of(content), ""
    texts: list[str] = []
    thoughts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, dict):
            texts.append(compact(part))
            continue
        kind = part.get("type")
        if kind in ("thinking", "reasoning", "reasoning_text", "summary_text"):
            thoughts.append(str(part.get("thinking") or part.get("text") or part.get("content") or ""))
        elif kind == "redacted_thinking":
            thoughts.append("[redacted thinking]")
        elif kind == "refusal":
            texts.append(f"[refusal] {part.get('refusal') or ''}".strip())
        elif kind in ("image_url", "image", "input_image", "blob", "uri", "file", "input_file", "document", "input_audio", "audio"):
            texts.append(f"[{kind}]")
        else:
            text = text_of(part)
            if text:
                texts.append(text)
    return "\n".join(t for t in texts if t), "\n".join(t for t in thoughts if t)


def _call_from_openai(call: Any) -> ToolCall | None:
    """A tool call in OpenAI (``function: {name, arguments}``), flat or LangChain (``args``) form."""
    if not isinstance(call, dict):
        return None
    fn = as_dict(call.get("function"))
    name = fn.get("name") or call.get("name") or call.get("toolName")
    if name is None:
        return None
    if "arguments" in fn:
        args = fn.get("arguments")
    elif "arguments" in call:
        args = call.get("arguments")
    elif "args" in call:
        args = call.get("args")
    else:
        args = call.get("input")
    return tool_call(str(name), args, call.get("id") or call.get("toolCallId"))


# --- one dialect each -------------------------------------------------------------------------


def from_openai(message: dict[str, Any]) -> list[Msg]:
    """An OpenAI chat-completions message (also Langfuse's ChatML rendering of one)."""
    content = message.get("content")
    if isinstance(content, list) and any(isinstance(p, dict) and type_of(p) in ANTHROPIC_BLOCKS for p in content):
        return from_anthropic(message)
    if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") in ("tool-call", "tool-result") for p in content):
        return from_vercel(message)
    role = norm_role(message.get("role"))
    used = {"role", "content", "tool_calls", "tool_call_id", "name", "function_call", "id"}
    extra = {k: v for k, v in message.items() if k not in used and v not in (None, [], {}, "")}
    message_id = message.get("id") if isinstance(message.get("id"), str) else None
    if message.get("id") is not None and message_id is None:
        extra["id"] = message["id"]
    if role not in CHAT_ROLES and "additional_kwargs" in message and not message.get("tool_calls"):
        # Langfuse renders a LangChain.js ToolMessage with the tool's name as its role.
        extra["raw_role"] = message.get("role")
        return [Msg(role="tool", tool_results=[ToolResult(call_id=message.get("tool_call_id"), name=str(message.get("role")), output=text_of(content))], id=message_id, extra=extra)]
    if role not in CHAT_ROLES:
        extra["raw_role"] = message.get("role")
    if role == "tool":
        if isinstance(content, dict) and content.get("type") == "function" and not message.get("tool_call_id"):
            # Langfuse renders a LangChain call's tool definitions as role=tool messages: not results.
            return []
        result = ToolResult(call_id=message.get("tool_call_id"), name=message.get("name"), output=text_of(content))
        return [Msg(role="tool", tool_results=[result], id=message_id, extra=extra)]
    text, thought = _parts_text(content)
    warnings: list[str] = []
    calls = [c for c in (_call_from_openai(x) for x in listed(message, "tool_calls", extra, warnings)) if c]
    kwargs = message.get("additional_kwargs")
    if not calls and isinstance(kwargs, dict):
        calls = [c for c in (_call_from_openai(x) for x in listed(kwargs, "tool_calls", extra, warnings)) if c]
    legacy = message.get("function_call")
    if isinstance(legacy, dict) and legacy.get("name"):
        calls.append(tool_call(str(legacy["name"]), legacy.get("arguments")))
    name = message.get("name") if isinstance(message.get("name"), str) else None
    return [Msg(role=role if role in CHAT_ROLES else "user", text=text, reasoning=thought, name=name, tool_calls=calls,
                id=message_id, extra=extra, warnings=warnings)]


def from_anthropic(message: dict[str, Any]) -> list[Msg]:
    """An Anthropic Messages message; ``tool_result`` blocks become separate ``tool`` messages."""
    role = norm_role(message.get("role") or "assistant")
    content = message.get("content")
    if not isinstance(content, list):
        content = [{"type": "text", "text": content}] if isinstance(content, str) else []
    results: list[Msg] = []
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        if not isinstance(block, dict):
            texts.append(text_of(block))
            continue
        kind = block.get("type")
        if kind in ("tool_use", "server_tool_use"):
            calls.append(tool_call(str(block.get("name") or "?"), block.get("input"), block.get("id")))
        elif kind == "tool_result" or (isinstance(kind, str) and kind.endswith("_tool_result")):
            output = block.get("content")
            result = ToolResult(call_id=block.get("tool_use_id"), output=text_of(output), is_error=bool(block.get("is_error")))
            results.append(Msg(role="tool", tool_results=[result]))
        elif kind in ("thinking", "redacted_thinking"):
            thoughts.append(block.get("thinking") or "[redacted thinking]")
        else:
            text, thought = _parts_text([block])
            texts.append(text)
            thoughts.append(thought)
    used = {"role", "content", "type", "model", "usage", "id"}
    extra = {k: v for k, v in message.items() if k not in used and v is not None}
    out = results
    body = Msg(
        role=role,
        text="\n".join(t for t in texts if t),
        reasoning="\n".join(t for t in thoughts if t),
        tool_calls=calls,
        id=message.get("id"),
        model=message.get("model"),
        usage=usage_from(message.get("usage")),
        extra=extra,
    )
    if not body.empty or not results:
        out = [*results, body]
    return out


def from_otel(message: dict[str, Any]) -> list[Msg]:
    """An OTel GenAI ``ChatMessage``: ``{role, parts: [text | reasoning | tool_call | tool_call_response | ...]}``."""
    role = norm_role(message.get("role"))
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    for part in message.get("parts") or []:
        if not isinstance(part, dict):
            texts.append(text_of(part))
            continue
        kind = part.get("type")
        if kind in ("tool_call", "server_tool_call"):
            calls.append(tool_call(str(part.get("name") or "?"), part.get("arguments"), part.get("id")))
        elif kind in ("tool_call_response", "server_tool_call_response"):
            response = part.get("response", part.get("result"))
            results.append(ToolResult(call_id=part.get("id"), output=text_of(maybe_json(response)) if not isinstance(response, str) else response))
        elif kind == "reasoning":
            thoughts.append(str(part.get("content") or ""))
        elif "function_call" in part or "functionCall" in part or "function_response" in part or "functionResponse" in part:
            gemini = from_gemini({"role": role, "parts": [part]})
            for m in gemini:
                calls.extend(m.tool_calls)
                results.extend(m.tool_results)
                texts.append(m.text)
        else:
            text, thought = _parts_text([part])
            texts.append(text)
            thoughts.append(thought)
    extra = {k: v for k, v in message.items() if k not in ("role", "parts", "name") and v is not None}
    out = [Msg(role="tool", tool_results=[r]) for r in results]
    body = Msg(role=role if role in CHAT_ROLES else "user", text="\n".join(t for t in texts if t), reasoning="\n".join(t for t in thoughts if t),
               tool_calls=calls, name=message.get("name"), extra=extra)
    if not body.empty or not results:
        out.append(body)
    return out


def from_langchain(message: dict[str, Any]) -> list[Msg]:
    """A LangChain message: a ``messages_to_dict`` entry, a plain dump, or an ``lc`` constructor."""
    if message.get("lc") and isinstance(message.get("kwargs"), dict):
        kind = str((message.get("id") or ["", "HumanMessage"])[-1])
        data = dict(message["kwargs"])
    elif isinstance(message.get("data"), dict) and "type" in message:
        kind, data = str(message["type"]), dict(message["data"])
    else:
        kind, data = str(message.get("type")), dict(message)
    role = LANGCHAIN_TYPES.get(kind) or norm_role(data.get("role"))
    content = data.get("content")
    meta = as_dict(data.get("response_metadata"))
    usage = usage_from(data.get("usage_metadata")) or usage_from(meta.get("token_usage"))
    used = {"content", "type", "tool_calls", "tool_call_id", "name", "additional_kwargs", "invalid_tool_calls", "usage_metadata", "id", "example", "role"}
    extra = {k: v for k, v in data.items() if k not in used and v not in (None, [], {}, "")}
    if role == "tool":
        result = ToolResult(call_id=data.get("tool_call_id"), name=data.get("name"), output=text_of(content), is_error=data.get("status") == "error")
        return [Msg(role="tool", tool_results=[result], extra=extra)]
    if isinstance(content, list) and any(isinstance(p, dict) and type_of(p) in ANTHROPIC_BLOCKS for p in content):
        msgs = from_anthropic({"role": role, "content": content})
        text, thought = "", ""
    else:
        msgs = []
        text, thought = _parts_text(content)
    warnings: list[str] = []
    calls = [c for c in (_call_from_openai(x) for x in listed(data, "tool_calls", extra, warnings)) if c]
    kwargs = data.get("additional_kwargs")
    if not calls and isinstance(kwargs, dict):
        calls = [c for c in (_call_from_openai(x) for x in listed(kwargs, "tool_calls", extra, warnings)) if c]
    name = data.get("name") if isinstance(data.get("name"), str) else None
    model = meta.get("model_name") if isinstance(meta.get("model_name"), str) else None
    if msgs:
        msgs[-1].tool_calls.extend(c for c in calls if c.id not in {x.id for x in msgs[-1].tool_calls})
        msgs[-1].name, msgs[-1].model, msgs[-1].usage = name, model, usage
        msgs[-1].warnings.extend(warnings)
        return msgs
    return [Msg(role=role, text=text, reasoning=thought, tool_calls=calls, name=name, id=data.get("id"), model=model, usage=usage,
                extra=extra, warnings=warnings)]


def from_gemini(content: dict[str, Any]) -> list[Msg]:
    """A Gemini / Google ADK ``Content``: ``{role: user|model, parts: [{text} | {function_call} | {function_response}]}``."""
    role = norm_role(content.get("role") or "user")
    texts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    thoughts: list[str] = []
    for part in content.get("parts") or []:
        if not isinstance(part, dict):
            continue
        call = part.get("function_call") or part.get("functionCall")
        response = part.get("function_response") or part.get("functionResponse")
        if isinstance(call, dict):
            calls.append(tool_call(str(call.get("name") or "?"), call.get("args") or {}, call.get("id")))
        elif isinstance(response, dict):
            results.append(ToolResult(call_id=response.get("id"), name=response.get("name"), output=text_of(response.get("response"))))
        elif part.get("thought") and isinstance(part.get("text"), str):
            thoughts.append(part["text"])
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
        else:
            texts.append(text_of(part))
    out = [Msg(role="tool", tool_results=[r]) for r in results]
    body = Msg(role=role, text="\n".join(t for t in texts if t), reasoning="\n".join(thoughts), tool_calls=calls)
    if not body.empty or not results:
        out.append(body)
    return out


def from_vercel(message: dict[str, Any]) -> list[Msg]:
    """A Vercel AI SDK message: content parts ``text``, ``reasoning``, ``tool-call``, ``tool-result``."""
    role = norm_role(message.get("role"))
    content = message.get("content")
    if not isinstance(content, list):
        return [Msg(role=role, text=text_of(content))]
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[ToolCall] = []
    results: list[ToolResult] = []
    for part in content:
        if not isinstance(part, dict):
            continue
        kind = part.get("type")
        if kind == "tool-call":
            calls.append(tool_call(str(part.get("toolName") or "?"), part.get("input", part.get("args")), part.get("toolCallId")))
        elif kind == "tool-result":
            output = part.get("output", part.get("result"))
            if isinstance(output, dict) and "value" in output and output.get("type") in ("text", "json", "error-text", "error-json"):
                output = output["value"]
            results.append(ToolResult(call_id=part.get("toolCallId"), name=part.get("toolName"), output=text_of(output), is_error=bool(part.get("isError"))))
        elif kind == "reasoning":
            thoughts.append(str(part.get("text") or ""))
        else:
            text, _ = _parts_text([part])
            texts.append(text)
    out = [Msg(role="tool", tool_results=[r]) for r in results]
    body = Msg(role=role, text="\n".join(t for t in texts if t), reasoning="\n".join(thoughts), tool_calls=calls)
    if not body.empty or not results:
        out.append(body)
    return out


def from_responses(items: Iterable[Any]) -> list[Msg]:
    """Responses-API items; an assistant turn's reasoning, text and calls become one message."""
    out: list[Msg] = []

    def assistant() -> Msg:
        # Items of one model turn (reasoning, message, function calls) arrive as siblings.
        if out and out[-1].role == "assistant":
            return out[-1]
        msg = Msg(role="assistant")
        out.append(msg)
        return msg

    for item in items:
        if not isinstance(item, dict):
            continue
        kind = item.get("type") or ("message" if "role" in item else None)
        if kind == "message":
            role = norm_role(item.get("role"))
            text, thought = _parts_text(item.get("content"))
            if role == "assistant":
                msg = assistant()
                msg.text = "\n".join(t for t in (msg.text, text) if t)
                msg.reasoning = "\n".join(t for t in (msg.reasoning, thought) if t)
                msg.id = msg.id or item.get("id")
            else:
                out.append(Msg(role=role if role in CHAT_ROLES else "user", text=text, reasoning=thought, id=item.get("id")))
        elif kind == "reasoning":
            summary = item.get("summary") or item.get("content") or []
            text, thought = _parts_text(summary)
            msg = assistant()
            msg.reasoning = "\n".join(t for t in (msg.reasoning, thought or text) if t)
            if item.get("encrypted_content"):
                msg.extra["encrypted_reasoning"] = True
        elif kind in ("function_call", "custom_tool_call", "mcp_call", "local_shell_call", "computer_call",
                      "web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call"):
            name = item.get("name") or kind.removesuffix("_call")
            args = item.get("arguments", item.get("input", item.get("action")))
            call_id = item.get("call_id") or item.get("id")
            assistant().tool_calls.append(tool_call(str(name), args, call_id))
            if "output" in item and item.get("output") is not None:
                out.append(Msg(role="tool", tool_results=[ToolResult(call_id=call_id, name=str(name), output=text_of(item["output"]), is_error=bool(item.get("error")))]))
        elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output", "computer_call_output"):
            output = maybe_json(item.get("output"))
            out.append(Msg(role="tool", tool_results=[ToolResult(call_id=item.get("call_id"), output=text_of(output) if not isinstance(output, str) else output)]))
        else:
            out.append(Msg(role="system", text=f"[{kind}] {compact(item)}", extra={"item_type": kind}))
    return out


def from_role_lines(text: str) -> list[Msg] | None:
    """``role: text`` lines (how some SDKs print a prompt); ``None`` when the text is not in that form."""
    if not _ROLE_LINE.match(text):
        return None
    marks = list(_ROLE_LINE.finditer(text))
    msgs: list[Msg] = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[mark.end():end].strip()
        role = norm_role(mark.group(1))
        if body == "None":
            body = ""
        if role == "tool":
            msgs.append(Msg(role="tool", tool_results=[ToolResult(output=body)]))
        else:
            msgs.append(Msg(role=role, text=body))
    return msgs


# --- any dialect ---------------------------------------------------------------------------------


def _is_message(item: Any) -> bool:
    if not isinstance(item, dict):
        return False
    if dialect_of(item) is not None:
        return True
    if "parts" in item and ("role" in item or isinstance(item.get("parts"), list)):
        return True
    if item.get("lc") and isinstance(item.get("kwargs"), dict):
        return True
    if type_of(item) in RESPONSES_ITEM_TYPES and item.get("type") != "message":
        return True
    if "toolCallId" in item and "toolName" in item:
        return True
    if isinstance(item.get("role"), str) and ("content" in item or "tool_calls" in item):
        return True
    return type_of(item) in LANGCHAIN_TYPES and "content" in item


def from_item(item: dict[str, Any]) -> list[Msg]:
    """One message-like dict in whichever dialect it is written (registered dialects are asked first)."""
    registered = dialect_of(item)
    if registered is not None:
        return registered.read(item)
    if item.get("lc") or (type_of(item) in LANGCHAIN_TYPES and "role" not in item and "content" in item):
        return from_langchain(item)
    if "toolCallId" in item and "toolName" in item and "role" not in item:
        args = item.get("input", item.get("args"))
        return [Msg(role="assistant", tool_calls=[tool_call(str(item["toolName"]), args, item["toolCallId"])])]
    if "parts" in item:
        parts = item.get("parts") or []
        if all(isinstance(p, dict) and "type" in p for p in parts):
            return from_otel(item)
        return from_gemini(item)
    if type_of(item) in RESPONSES_ITEM_TYPES and (item.get("type") != "message" or isinstance(item.get("content"), list)):
        return from_responses([item])
    content = item.get("content")
    if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") in ("tool-call", "tool-result", "reasoning") for p in content):
        return from_vercel(item)
    if isinstance(content, list) and any(isinstance(p, dict) and type_of(p) in ANTHROPIC_BLOCKS for p in content):
        return from_anthropic(item)
    return from_openai(item)


def _from_list(items: list[Any]) -> list[Msg] | None:
    if not items or not all(_is_message(i) for i in items):
        return None
    if any(isinstance(i, dict) and type_of(i) in RESPONSES_ITEM_TYPES for i in items) and not any(
        isinstance(i, dict) and ("lc" in i or "parts" in i) for i in items
    ):
        return from_responses(items)
    out: list[Msg] = []
    for item in items:
        if isinstance(item, dict):
            # Every model call re-sends the conversation: convert each distinct message once.
            out.extend(_cached_item(orjson.dumps(item)))
        else:
            out.extend(from_item(item))
    return out


@lru_cache(maxsize=8192)
def _cached_item(blob: bytes) -> tuple[Msg, ...]:
    """:func:`from_item` of a message given as JSON bytes, history keys computed; never handed out as is."""
    msgs = tuple(from_item(orjson.loads(blob)))
    for msg in msgs:
        msg.keys = history_keys(msg)
        msg.shared = True
    return msgs


def _fresh(msg: Msg) -> Msg:
    """A copy of a cached message that pairing may mutate (tool call ids) without touching the cache."""
    return replace(
        msg,
        tool_calls=[c.model_copy() for c in msg.tool_calls],
        tool_results=[r.model_copy() for r in msg.tool_results],
        extra=dict(msg.extra),
        shared=False,
    )


_HISTORIES: deque[tuple[str, list[Msg]]] = deque(maxlen=8)
"""Recently read message lists as (JSON text without its closing bracket, messages): see :func:`history_messages`."""


def history_messages(text: str) -> list[Msg] | None:
    """:func:`to_messages` of JSON text holding a message list, reading only what an earlier list did not hold.

    Every model call re-sends the conversation so far, so the input of call *k+1* is, byte for byte,
    the input of call *k* with more messages before the closing bracket. The messages of the common
    part are taken from the earlier result and only the new tail is parsed: linear in the run's
    length instead of quadratic. Lists that are read as a whole (Responses items) are not reused.
    """
    if not (text.startswith("[") and text.endswith("]")):
        return to_messages(text)
    for body, earlier in reversed(_HISTORIES):
        if len(text) > len(body) + 1 and text[len(body)] == "," and text.startswith(body):
            try:
                tail = orjson.loads("[" + text[len(body) + 1:])
            except orjson.JSONDecodeError:
                break
            if not isinstance(tail, list) or not _per_item(tail):
                break
            new = _from_list(tail)
            if new is None:
                break
            msgs = [*earlier, *new]
            _HISTORIES.append((text[:-1], msgs))
            return list(msgs)
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return to_messages(text)
    whole = to_messages(value)
    if whole is not None and isinstance(value, list) and value and _per_item(value):
        _HISTORIES.append((text[:-1], whole))
        return list(whole)
    return whole


def forget_history() -> None:
    """Drop the message caches (call between independent traces: a run's messages never recur in the next)."""
    _HISTORIES.clear()
    _cached_item.cache_clear()


def _per_item(items: list[Any]) -> bool:
    """True when each item of a message list is read on its own (no list-level dialect decision)."""
    return all(isinstance(i, dict) and type_of(i) not in RESPONSES_ITEM_TYPES for i in items)


def to_messages(value: Any) -> list[Msg] | None:
    """Messages from any chat-shaped value; ``None`` when ``value`` does not look like messages.

    Accepts message lists of every dialect, a single message, request bodies (``messages``,
    ``system``/``instructions``, Gemini ``contents``), response bodies (``choices``, Responses
    ``output``, Anthropic ``type: message``, LangChain ``generations``), and ``role: text`` lines.
    """
    value = maybe_json(value)
    if isinstance(value, str):
        return from_role_lines(value)
    if isinstance(value, list):
        if value and all(isinstance(v, list) for v in value):
            # LangChain batches: [[message, ...]] for one prompt
            flat = [m for batch in value for m in batch]
            return to_messages(flat)
        return _from_list(value)
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("messages"), list):
        msgs = _from_list(value["messages"]) if value["messages"] else []
        if msgs is None:
            return None
        system = value.get("system") or value.get("instructions")
        if system and isinstance(system, str | list):
            text, _ = _parts_text(system)
            msgs.insert(0, Msg(role="system", text=text))
        return msgs
    if isinstance(value.get("contents"), list):
        out: list[Msg] = []
        config = as_dict(value.get("config"))
        system = config.get("system_instruction") or value.get("system_instruction")
        if system:
            out.append(Msg(role="system", text=text_of(system)))
        for content in value["contents"]:
            if isinstance(content, dict):
                out.extend(from_gemini(content))
        return out
    if isinstance(value.get("choices"), list):
        out = []
        for choice in value["choices"]:
            if isinstance(choice, dict) and isinstance(choice.get("message"), dict):
                out.extend(from_openai({"role": "assistant", **choice["message"]}))
            elif isinstance(choice, dict) and isinstance(choice.get("text"), str):
                out.append(Msg(role="assistant", text=choice["text"]))
        if out:
            out[-1].model = value.get("model")
            out[-1].usage = usage_from(value.get("usage")) or usage_from(value.get("usage_metadata"))
            out[-1].id = value.get("id")
        return out
    if (value.get("object") == "response" or "previous_response_id" in value) and isinstance(value.get("output"), list):
        out = from_responses(value["output"])
        if out:
            out[-1].model = value.get("model")
            out[-1].usage = usage_from(value.get("usage"))
        return out
    if value.get("type") == "message" and isinstance(value.get("content"), list) and "role" in value:
        return from_anthropic(value)
    if isinstance(value.get("generations"), list):
        out = []
        for gen in value["generations"]:
            for g in gen if isinstance(gen, list) else [gen]:
                if isinstance(g, dict) and isinstance(g.get("message"), dict):
                    out.extend(from_langchain(g["message"]))
                elif isinstance(g, dict) and isinstance(g.get("text"), str):
                    out.append(Msg(role="assistant", text=g["text"]))
        return out
    if isinstance(value.get("content"), dict) and isinstance(value["content"].get("parts"), list):
        return from_gemini(value["content"])  # a Google ADK event / LlmResponse
    if _is_message(value):
        return from_item(value)
    return None


# --- agent names from prompts ---------------------------------------------------------------------


def name_from_system_prompt(text: str) -> str | None:
    """The agent's name when its system prompt introduces it (CrewAI's ``You are {role}.``, ``You are Ada.``)."""
    text = text.lstrip()
    if "Your personal goal is:" in text:
        match = _CREWAI_ROLE.match(text)
        if match:
            return match.group("name").strip()
    match = _NAMED_ROLE.match(text)
    return match.group("name") if match else None


# --- history keys -----------------------------------------------------------------------------


def _norm(text: str) -> str:
    # Exact text (ends stripped): re-sent history is byte-identical, and normalising inner
    # whitespace of every long message would cost more than all the rest of the lookup.
    return text.strip()


def _canon(text: str) -> str:
    """Tool output text for comparison: JSON re-serialised canonically, other text whitespace-normalised."""
    value = maybe_json(text, depth=2)
    if isinstance(value, dict | list):
        return compact(value)
    return _norm(text)


def history_keys(msg: Msg) -> list[tuple[Any, ...]]:
    """The keys under which a message counts as already emitted (see :class:`~mast.normalize._timeline.Timeline`)."""
    if msg.role == "tool" and msg.tool_results:
        result = msg.tool_results[0]
        if result.call_id:
            return [("tid", result.call_id)]
        keys: list[tuple[Any, ...]] = [("ttext", _canon(result.output))]
        if result.name:
            keys.append(("tname", result.name))
        return keys
    text = _norm(msg.content)
    if msg.tool_calls and all(c.id for c in msg.tool_calls):
        return [("m", text, tuple(c.id for c in msg.tool_calls))]
    if msg.tool_calls:
        return [("mn", text, tuple(c.name for c in msg.tool_calls))]
    return [("m", text, ())]


def apply_prompt_names(msgs: list[Msg]) -> str | None:
    """The agent name a chat list's first system prompt introduces, if any (see :func:`name_from_system_prompt`)."""
    for msg in msgs:
        if msg.role in ("system", "developer") and msg.text:
            return name_from_system_prompt(msg.text)
        if msg.role != "system":
            break
    return None
