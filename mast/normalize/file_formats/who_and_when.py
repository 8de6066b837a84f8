"""Who&When records (ICML 2025 failure attribution): failed multi-agent runs with the culprit.

``{history: [{content, role, name?}], question, ground_truth, mistake_agent, mistake_step,
mistake_reason, ...}``. ``mistake_step`` is a 0-based index into ``history``, so step ``i`` of the
trace is ``history[i]``, always, empty messages included.

- *Algorithm-Generated* (AG2 CaptainAgent group chats): the speaker is ``name``; ``role`` is
  receiver-relative and kept as ``raw_role``; ``system_prompt`` gives each expert's instructions.
  ``Computer_terminal`` turns are code-execution output (kind ``observation``).
- *Hand-Crafted* (Magentic-One): no ``name``; the speaker is ``role`` without its ``(...)``
  suffix: ``Orchestrator (thought)`` is a plan step, ``Orchestrator (-> WebSurfer)`` a message to
  WebSurfer, ``Orchestrator (termination condition)`` the stop notice (it may hold ``FINAL ANSWER``).

The culprit, the decisive step, the reason, the correct answer and the outcome go to labels.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mast.errors import TraceFormatError, one_line
from mast.normalize._build import assemble_trace
from mast.normalize._common import text_of
from mast.normalize._sniff import sniffed_json
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Agent, SourceInfo, Step, Trace

_LABEL_KEYS = ("mistake_agent", "mistake_step", "mistake_reason", "mistake_type", "ground_truth",
               "is_correct", "is_corrected", "labels")
_USED = {*_LABEL_KEYS, "history", "question", "system_prompt"}
_ROLE = re.compile(r"^(?P<who>[^()]+?)\s*\((?P<note>[^)]*)\)\s*$")
_FINAL = re.compile(r"^FINAL ANSWER:[ \t]*(?P<answer>[^\n]*)$", re.MULTILINE)
_TERMINALS = {"computer_terminal", "computerterminal"}
_SUBSETS = {"Hand-Crafted": "magentic-one", "Algorithm-Generated": "ag2-captainagent"}


def is_record(obj: Any) -> bool:
    """True for a dict with a ``history`` list and the Who&When label or question fields."""
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("history"), list)
        and ("mistake_agent" in obj or ("question" in obj and ("question_ID" in obj or "ground_truth" in obj)))
    )


def _step(position: int, item: Any) -> Step:
    if not isinstance(item, dict):
        return Step(index=position, content=text_of(item), source_ref=f"history[{position}]")
    raw_role = str(item.get("role") or "")
    name = item.get("name")
    attributes: dict[str, Any] = {"raw_role": raw_role} if raw_role else {}
    attributes.update({k: v for k, v in item.items() if k not in ("content", "role", "name")})
    kind = "message"
    recipient = None
    role = None
    agent: str | None
    if name:
        agent = str(name)
    else:
        parsed = _ROLE.match(raw_role)
        agent = parsed.group("who").strip() if parsed else (raw_role or None)
        note = parsed.group("note").strip() if parsed else ""
        if note.startswith("->"):
            recipient = note[2:].strip()
        elif note == "thought":
            kind = "plan"
        elif note:
            kind = "system"
    if agent and agent.lower() in ("human", "user") and not name:
        role = "user"
    if agent and agent.lower() in _TERMINALS:
        kind = "observation"
    return Step(index=position, kind=kind, agent=agent, role=role, recipient=recipient, content=text_of(item.get("content")),
                source_ref=f"history[{position}]", attributes=attributes)


def _labels(record: dict[str, Any]) -> dict[str, Any]:
    labels = {k: record[k] for k in _LABEL_KEYS if k in record}
    step = labels.get("mistake_step")
    if isinstance(step, str) and step.strip().lstrip("-").isdigit():
        labels["mistake_step"] = int(step)
    return labels


def _framework(record: dict[str, Any], path: Path | None) -> str:
    if path is not None:
        for part in reversed(path.parts):
            if part in _SUBSETS:
                return _SUBSETS[part]
    return "ag2-captainagent" if "system_prompt" in record or any(isinstance(h, dict) and "name" in h for h in record["history"]) else "magentic-one"


def record_to_trace(record: dict[str, Any], raw: RawInput, index: int | None = None) -> Trace:
    """Normalise one Who&When record; ``steps[i]`` is ``history[i]``."""
    steps = [_step(i, item) for i, item in enumerate(record["history"])]
    prompts: dict[str, Any] = record["system_prompt"] if isinstance(record.get("system_prompt"), dict) else {}
    known = [Agent(name=str(n), system_prompt=text_of(p)) for n, p in prompts.items()]
    finals = [m.group("answer").strip() for s in steps for m in _FINAL.finditer(s.content)]
    labels = _labels(record)
    warnings: list[str] = []
    culprit, at = labels.get("mistake_agent"), labels.get("mistake_step")
    if isinstance(at, int) and 0 <= at < len(steps) and culprit and steps[at].agent != culprit:
        warnings.append(f"label mismatch in the source: mistake_agent is {culprit} but step {at} was spoken by {steps[at].agent}")
    path = raw.path
    trace_id = f"{path.parent.name}/{path.stem}" if path is not None and path.parent.name in _SUBSETS else str(record.get("question_ID") or "")
    metadata = {k: v for k, v in record.items() if k not in _USED}
    if path is not None and path.parent.name in _SUBSETS:
        metadata["subset"] = path.parent.name
    return assemble_trace(
        steps, source=SourceInfo(format="who_and_when", path=raw.label, record=index), known_agents=known,
        task=text_of(record.get("question")) or None, final_output=finals[-1] if finals else None,
        derive_task=False, derive_final_output=False,
        trace_id=trace_id, framework=_framework(record, path), labels=labels, metadata=metadata, warnings=warnings,
    )


class WhoAndWhenFormat(TraceFormat):
    """Who&When records, one per file (or a list of them)."""

    name = "who_and_when"
    description = "Who&When failure-attribution records (history + mistake_agent/mistake_step)"
    priority = 20
    example = '{"question": ..., "history": [{"role", "name", "content"}], "mistake_agent": ..., "mistake_step": ...}'

    def detect(self, raw: RawInput) -> float:
        """Sure when the record has ``history`` plus ``mistake_agent`` and ``mistake_step``."""
        data = sniffed_json(raw, '"history"')
        if data is None:
            return 0.0
        first = data[0] if isinstance(data, list) and data else data
        if not is_record(first):
            return 0.0
        return 0.98 if "mistake_agent" in first and "mistake_step" in first else 0.7

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per record; ``steps[i]`` is ``history[i]``."""
        data = raw.data()
        records = data if isinstance(data, list) else [data]
        many = isinstance(data, list)
        for index, record in enumerate(records):
            where = index if many else None
            if not is_record(record):
                yield raw.fail("not a Who&When record: expected an object with a history list and mistake_agent", record=where)
                continue
            try:
                yield record_to_trace(record, raw, where)
            except (TypeError, ValueError, KeyError, AttributeError) as exc:  # one odd record, not the file
                yield raw.fail(f"Who&When record unreadable ({type(exc).__name__}: {one_line(exc)})", record=where)

register(WhoAndWhenFormat())
