"""Turn the raw ``trajectory`` of a MAD record (or a MAST raw trace) into steps.

MAD stores each run as its framework printed it: a JSON text holding an AG2 message list or a
HyperAgent line list, a MetaGPT ``{prompt, content}`` wrapper, or a plain log (ChatDev, MetaGPT,
AppWorld, Magentic-One, OpenManus, AG2 console or YAML-like dumps). :func:`parse_payload` unwraps
the JSON layers; :func:`parse_log` picks a framework parser: first the one the record's
``mas_name`` names, then any whose markers appear in the text (parsers come from the registry
in :mod:`mast.normalize._logs_common`). When none finds a speaker, the
log is split into one step per block (dashed rules, else blank lines) with a warning. A parser
that fails is reported as a warning and the next is tried, so a strange log never stops a batch.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from mast.errors import one_line
from mast.normalize._logs_common import (
    FRAMEWORK_LOGS,
    LogParse,
    body_text,
    clean,
    framework_logs,
    preferred_logs,
)
from mast.normalize._payload import decode_text, literal_allowed, literal_failure
from mast.normalize.logs.ag2 import parse_messages
from mast.trace import Usage

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
    preferred = preferred_logs(framework)
    warnings: list[str] = []
    for name in [*preferred, *(log.name for log in framework_logs() if log.name not in preferred)]:
        log = FRAMEWORK_LOGS[name]
        if name not in preferred and not log.sniff(text):
            continue
        try:
            result = log.parse(text)
        except Exception as exc:  # noqa: BLE001 - a parser bug must degrade to a warning, not stop a batch
            warnings.append(f"{name} log parser failed ({type(exc).__name__}: {one_line(exc)}); tried the next")
            continue
        # A parser that knew the log but found no turn in it says so (metadata "no_content"): that
        # beats splitting the log into anonymous blocks.
        if any(step.agent for step in result.steps) or result.metadata.get("no_content"):
            result.warnings[:0] = warnings
            result.framework = result.framework or log.framework
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
        decoded = decode_text(payload)
        if decoded is not None and isinstance(decoded[0], dict | list):
            result = parse_payload(decoded[0], framework)
            result.metadata.setdefault("trajectory_encoding", decoded[1])
            return result
        result = parse_log(payload, framework)
        opens = payload.strip()[:1] in ("{", "[")
        if decoded is None and opens and (result.variant == "blocks" or not literal_allowed(payload.strip())):
            result.warnings.insert(0, f"the trajectory text opens like a list or object but is {literal_failure(payload)}: read as plain text")
        return result
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
