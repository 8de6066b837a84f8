"""AutoGen / AG2 conversation records that are not typed message lists.

- **AgentEval results** (AutoGen 0.2 MathChat): ``{problem, messages: [{content, role}], response_with_ans,
  correct_ans, solution, check_result, is_correct, ...}``. Messages carry no speaker names: the
  ``user`` side is the user proxy (it relays the problem and runs code), ``assistant`` the solver.
  The problem is the task, ``response_with_ans`` the final output; the reference answer, the
  solution and the checker's verdict are labels.
- **AG2 histories**: ``ChatResult``-like ``{chat_history, summary, cost}``, an AG2 trajectory object
  ``{problem_statement, trajectory: [{content, role, name}]}``, or a bare message list whose
  messages all carry ``name`` plus AG2's own keys (``tool_responses``...). Speakers are ``name``.
- **autogen-ext replay sessions**: ``[{mode: "create", messages: [LLMMessage...], response:
  {content, usage, finish_reason, ...}}]``, the record of every model call. Each call re-sends its
  history; messages already seen are not repeated, and each response becomes an ``llm`` step.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from mast.errors import TraceFormatError, one_line
from mast.normalize._common import text_of, usage_from
from mast.normalize._logs_common import LogParse
from mast.normalize._mad_logs import parse_payload
from mast.normalize._sniff import json_head
from mast.normalize.base import RawInput, TraceFormat, register
from mast.normalize.file_formats.autogen_core import add_typed_messages, is_typed_message
from mast.normalize.logs.ag2 import parse_messages
from mast.trace import Trace

_AGENTEVAL_KEYS = frozenset({"problem", "response_with_ans", "check_result", "correct_ans", "is_correct", "solution", "trial", "problem_id"})
_AGENTEVAL_LABELS = ("correct_ans", "solution", "check_result", "is_correct")
_AG2_ONLY_KEYS = frozenset({"tool_responses", "context"})
_CHAT_RESULT_KEYS = frozenset({"chat_history", "summary", "cost", "chat_id", "human_input"})
_PROXY = "user_proxy"


def _is_chat_messages(data: dict[str, Any]) -> bool:
    """AutoGen 0.2's ``agent.chat_messages``: ``{partner name: [{role, content}, ...]}``, one list per partner."""
    return 0 < len(data) <= 16 and all(
        isinstance(k, str) and isinstance(v, list) and v and all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and ("content" in m or "tool_calls" in m or "function_call" in m)
            for m in v)
        for k, v in data.items())


def _chat_messages(data: dict[str, Any]) -> LogParse:
    """Each partner's chat as the dumping agent saw it: ``user`` turns are the partner's, ``assistant`` turns its own."""
    named = [{**m, "name": m.get("name") or (partner if m.get("role") == "user" else "assistant")}
             for partner, messages in data.items() for m in messages]
    out = parse_messages(named, variant="chat_messages")
    out.warnings.append("chat_messages dump: the dumping agent's own name is not recorded; its turns are named assistant")
    return out


def _shape(data: Any) -> tuple[str, float] | None:
    """Which AutoGen record ``data`` is, and how sure: ``(variant, confidence)``."""
    if isinstance(data, dict):
        if isinstance(data.get("messages"), list) and len(_AGENTEVAL_KEYS & set(data)) >= 2:
            return "agenteval", 0.95
        if isinstance(data.get("chat_history"), list) and len(_CHAT_RESULT_KEYS & set(data)) >= 2:
            return "chat_result", 0.9
        trajectory = data.get("trajectory")
        if "problem_statement" in data and isinstance(trajectory, list) and trajectory and all(
            isinstance(m, dict) and "name" in m for m in trajectory
        ):
            return "ag2_trajectory", 0.9
        if _is_chat_messages(data):
            return "chat_messages", 0.85
        return None
    if isinstance(data, list) and data and all(isinstance(item, dict) for item in data):
        if all({"mode", "messages", "response"} <= set(item) for item in data):
            return "replay_session", 0.95
        if all("name" in m and "role" in m and "type" not in m for m in data):
            if any(_AG2_ONLY_KEYS & set(m) for m in data):
                return "ag2_messages", 0.9
            if len({m["name"] for m in data}) >= 2:
                # Plain named chat lists are also OpenAI chat lists; stay below that format.
                return "ag2_messages", 0.45
    return None


def _agenteval(data: dict[str, Any]) -> tuple[LogParse, dict[str, Any]]:
    named = [{**m, "name": _PROXY if m.get("role") == "user" else "assistant"} if isinstance(m, dict) else m for m in data["messages"]]
    out = parse_messages(named, variant="agenteval")
    out.warnings.append("AgentEval messages record no speaker names: user turns named user_proxy, assistant turns assistant")
    out.task = text_of(data.get("problem")) or None
    out.final_output = text_of(data.get("response_with_ans")) if "response_with_ans" in data else None  # "": stated empty
    out.labels = {k: data[k] for k in _AGENTEVAL_LABELS if k in data}
    used = {"messages", "problem", "response_with_ans", *_AGENTEVAL_LABELS}
    return out, {k: v for k, v in data.items() if k not in used}


def _replay(calls: list[dict[str, Any]]) -> LogParse:
    out = LogParse(variant="replay_session")
    # Responses carry no speaker; later calls re-send them as AssistantMessages with a source.
    speaker = next(
        (str(m["source"]) for c in calls for m in c.get("messages") or []
         if isinstance(m, dict) and m.get("type") == "AssistantMessage" and m.get("source")),
        "assistant",
    )
    seen: set[bytes] = set()
    for number, call in enumerate(calls):
        fresh = []
        for msg in call.get("messages") or []:
            key = orjson.dumps([msg.get("type"), msg.get("content")], default=str) if isinstance(msg, dict) else b""
            if key not in seen:
                seen.add(key)
                fresh.append(msg)
        typed = [m for m in fresh if is_typed_message(m)]
        if len(typed) != len(fresh):
            out.warnings.append(f"call {number}: {len(fresh) - len(typed)} message(s) of unknown type skipped")
        add_typed_messages(out, typed, ref=f"[{number}].messages")
        response: dict[str, Any] = call["response"] if isinstance(call.get("response"), dict) else {}
        content = response.get("content")
        text = text_of(content) if not isinstance(content, list) else orjson.dumps(content, default=str).decode()
        seen.add(orjson.dumps(["AssistantMessage", content], default=str))
        attributes = {k: v for k, v in response.items() if k not in ("content", "usage") and v is not None}
        out.add(kind="llm", agent=speaker, role="assistant", content=text, usage=usage_from(response.get("usage")),
                source_ref=f"[{number}].response", attributes={"call": number, "mode": call.get("mode"), **attributes})
    return out


class AutogenFormat(TraceFormat):
    """AutoGen/AG2 conversation records (see the module docstring for the shapes)."""

    name = "autogen"
    description = "AutoGen/AG2 chats: AgentEval results, AG2 histories (named messages), autogen-ext replay sessions"
    priority = 60
    example = '{"problem_statement": [...], "trajectory": [{"content", "role", "name"}]} or an AG2 chat_history / ChatResult'

    def detect(self, raw: RawInput) -> float:
        """Sure for AgentEval results, replay sessions and AG2-only keys; unsure (0.45) for plain named chat lists."""
        if not json_head(raw, '"messages"', '"chat_history"', '"trajectory"', '"name"', '"role"'):
            return 0.0
        try:
            data = raw.data()
        except TraceFormatError:
            return 0.0
        shape = _shape(data)
        return shape[1] if shape else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace for the record."""
        data = raw.data()
        shape = _shape(data)
        if shape is None:
            raise raw.fail("not an AutoGen record: expected AgentEval results, an AG2 history or a replay session")
        variant = shape[0]
        metadata: dict[str, Any] = {}
        try:
            if variant == "agenteval":
                out, metadata = _agenteval(data)
            elif variant == "chat_messages":
                out = _chat_messages(data)
            elif variant == "replay_session":
                out = _replay(data)
            elif variant == "chat_result":
                out = parse_messages(data["chat_history"], variant="chat_result")
                out.final_output = text_of(data.get("summary")) if "summary" in data else None  # "": stated empty
                metadata = {k: v for k, v in data.items() if k not in ("chat_history", "summary")}
            else:
                out = parse_payload(data, "ag2")
        except ValueError as exc:
            raise raw.fail(f"AutoGen record unreadable: {one_line(exc)}") from exc
        if out.task is None:
            out.task = next((s.content for s in out.steps if s.content and s.kind != "system"), None)
        framework = "ag2" if variant in ("ag2_trajectory", "ag2_messages", "chat_result") else "autogen"
        yield out.to_trace(self.source(raw, variant=variant), framework, metadata=metadata)


register(AutogenFormat())
