"""Turn the raw ``trajectory`` of a MAD record (or a MAST raw trace) into steps.

MAD stores each run as its framework printed it: a JSON text holding an AG2 message list or a
HyperAgent line list, a MetaGPT ``{prompt, content}`` wrapper, or a plain log (ChatDev, MetaGPT,
AppWorld, Magentic-One, OpenManus, AG2 console or YAML-like dumps). :func:`parse_payload` unwraps
the JSON layers; :func:`parse_log` picks a framework parser: first the one the record's
``mas_name`` names, then any whose markers appear in the text. When none finds a speaker, the
log is split into one step per block (dashed rules, else blank lines) with a warning. A parser
that fails is reported as a warning and the next is tried, so a strange log never stops a batch.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import orjson

from mast.errors import one_line
from mast.normalize._logs_ag2 import looks_like_yaml_chat, parse_messages, parse_yaml_chat
from mast.normalize._logs_appworld import looks_like_appworld, parse_appworld
from mast.normalize._logs_chatdev import looks_like_chatdev, parse_chatdev
from mast.normalize._logs_common import LogParse, body_text, clean
from mast.normalize._logs_console import (
    looks_like_ag2_console,
    looks_like_agentchat_console,
    parse_ag2_console,
    parse_agentchat_console,
)
from mast.normalize._logs_hyperagent import looks_like_hyperagent, parse_hyperagent
from mast.normalize._logs_metagpt import looks_like_metagpt, parse_metagpt
from mast.normalize._logs_openmanus import looks_like_openmanus, parse_openmanus
from mast.trace import Usage

Parser = tuple[Callable[[str], bool], Callable[[str], LogParse]]

PARSERS: dict[str, Parser] = {
    "chatdev": (looks_like_chatdev, parse_chatdev),
    "metagpt": (looks_like_metagpt, parse_metagpt),
    "hyperagent": (looks_like_hyperagent, parse_hyperagent),
    "appworld": (looks_like_appworld, parse_appworld),
    "openmanus": (looks_like_openmanus, parse_openmanus),
    "magentic": (looks_like_agentchat_console, parse_agentchat_console),
    "ag2_console": (looks_like_ag2_console, parse_ag2_console),
    "ag2_yaml": (looks_like_yaml_chat, parse_yaml_chat),
}
"""Framework log parsers, in the order their markers are sniffed when ``mas_name`` does not decide."""

PREFERRED: dict[str, list[str]] = {
    "ag2": ["ag2_yaml", "ag2_console"],
    "autogen": ["ag2_console", "magentic"],
    "chatdev": ["chatdev"],
    "metagpt": ["metagpt"],
    "hyperagent": ["hyperagent"],
    "appworld": ["appworld"],
    "magentic": ["magentic"],
    "magenticone": ["magentic"],
    "openmanus": ["openmanus"],
}
"""Parsers to try first for a framework name (``mas_name`` lower-cased, letters and digits only)."""

_RULE = re.compile(r"^[ \t]*(?:-{5,}|={5,}|\*{5,})[ \t]*$", re.MULTILINE)
_TASK_KEYS = ("problem_statement", "prompt", "question", "task", "instruction", "query")
_LABEL_KEYS = ("note", "other_data")
"""Keys of AG2 trajectory objects that hold annotator notes and the benchmark's answer: labels."""


def framework_name(mas_name: Any) -> str | None:
    """``"HyperAgent"`` -> ``"hyperagent"``, ``"AG2"`` -> ``"ag2"``; ``None`` when absent."""
    if not isinstance(mas_name, str) or not mas_name.strip():
        return None
    return re.sub(r"[^a-z0-9]", "", mas_name.lower()) or None


def parse_log(text: str, framework: str | None = None) -> LogParse:
    """Steps from a framework log; the named framework's parser first, then any whose markers match."""
    text = clean(text)
    preferred = PREFERRED.get(framework or "", [])
    warnings: list[str] = []
    for name in [*preferred, *(n for n in PARSERS if n not in preferred)]:
        sniff, parse = PARSERS[name]
        if name not in preferred and not sniff(text):
            continue
        try:
            result = parse(text)
        except Exception as exc:  # noqa: BLE001 - a parser bug must degrade to a warning, not stop a batch
            warnings.append(f"{name} log parser failed ({type(exc).__name__}: {one_line(exc)}); tried the next")
            continue
        if any(step.agent for step in result.steps):
            result.warnings[:0] = warnings
            return result
    result = parse_blocks(text)
    expected = f"{framework} " if framework else ""
    result.warnings[:0] = [
        *warnings,
        f"no {expected}log markers recognised: split into {len(result.steps)} blocks by "
        f"{result.metadata.get('split_by', 'paragraphs')}; speakers unknown",
    ]
    return result


def parse_blocks(text: str) -> LogParse:
    """The fallback: one step per block between dashed rules, else per blank-line paragraph."""
    out = LogParse(variant="blocks")
    rules = list(_RULE.finditer(text))
    if rules:
        out.metadata["split_by"] = "separator lines"
        edges = [0, *(m.end() for m in rules)]
        ends = [*(m.start() for m in rules), len(text)]
        pieces = [(start, text[start:end]) for start, end in zip(edges, ends, strict=True)]
    else:
        out.metadata["split_by"] = "blank lines"
        pieces = []
        position = 0
        for piece in re.split(r"(\n[ \t]*\n)", text):
            pieces.append((position, piece))
            position += len(piece)
    for start, piece in pieces:
        if piece.strip():
            out.add(kind="message", content=body_text(piece), source_ref=f"char:{start}")
    return out


def _text_lines(items: list[Any]) -> str:
    return "\n".join(item if isinstance(item, str) else orjson.dumps(item, default=str).decode() for item in items)


def task_of(obj: dict[str, Any]) -> str | None:
    """The task an unwrapped trajectory object states (``problem_statement``, ``prompt``...)."""
    for key in _TASK_KEYS:
        value = obj.get(key)
        if isinstance(value, list) and all(isinstance(v, str) for v in value) and value:
            return "\n".join(value).strip() or None
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def parse_payload(payload: Any, framework: str | None = None) -> LogParse:
    """Steps, task, labels and leftovers from a trajectory: JSON text, an object, a list or a log.

    Raises:
        ValueError: when the trajectory is an object with nothing that holds the run.
    """
    if isinstance(payload, str):
        stripped = payload.strip()
        if stripped[:1] in ("{", "["):
            try:
                decoded = orjson.loads(stripped)
            except orjson.JSONDecodeError:
                decoded = None
            if isinstance(decoded, dict | list):
                result = parse_payload(decoded, framework)
                result.metadata.setdefault("trajectory_encoding", "json text")
                return result
        return parse_log(payload, framework)
    if isinstance(payload, list):
        if payload and all(isinstance(item, dict) for item in payload):
            return parse_messages(payload)
        return parse_log(_text_lines(payload), framework)
    if not isinstance(payload, dict):
        raise ValueError(f"trajectory is a {type(payload).__name__}, expected text, a list or an object")
    used: set[str] = set(_TASK_KEYS) | set(_LABEL_KEYS)
    if "trajectory" in payload:
        result = parse_payload(payload["trajectory"], framework)
        used.add("trajectory")
    elif isinstance(payload.get("messages"), list):
        result = parse_messages(payload["messages"])
        used.add("messages")
    elif isinstance(payload.get("content"), str):
        result = parse_log(payload["content"], framework or "metagpt")
        used.add("content")
        cost = payload.get("cost")
        if isinstance(cost, int | float) and not isinstance(cost, bool):
            result.add_usage(Usage(cost_usd=float(cost)))
    else:
        keys = ", ".join(list(map(str, payload))[:8])
        raise ValueError(f"trajectory object holds no trajectory, messages or content (keys: {keys})")
    result.task = task_of(payload) or result.task
    result.labels.update({key: payload[key] for key in _LABEL_KEYS if key in payload})
    extra = {k: v for k, v in payload.items() if k not in used}
    if extra:
        result.metadata.setdefault("trajectory_fields", {}).update(extra)
    return result
