"""Envelope fields: the id, task and outcome a record states around the run it wraps.

Many tools store a run as ``{"trace_id": ..., "task": ..., "messages": [...], "outcome": {...}}``
(AdaMAST's example traces, evaluation harnesses, hand-written fixtures). :func:`read_envelope` maps
the common spellings to the trace's fields, so they are not buried in ``metadata``:

* id: ``trace_id``, ``id``, ``run_id``, ``session_id``;
* task: ``task``, ``goal``, ``instruction``, ``question``, ``query``, ``problem_statement``, ``prompt``
  (text, or an object holding one of those keys or ``description``);
* outcome: ``outcome`` (an object with ``status``/``success``/``score``/``result``, or text),
  ``status``, ``success``, ``score``, ``result``; the final output from ``final_output``,
  ``answer``, ``final_answer``, ``output`` or ``response`` when they are text.

Every envelope field is also kept, as given, in the trace's metadata (``envelope``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

ID_KEYS = ("trace_id", "id", "run_id", "session_id")
TASK_KEYS = ("task", "goal", "instruction", "question", "query", "problem_statement", "prompt")
OUTCOME_KEYS = ("outcome", "status", "success", "score", "result")
OUTPUT_KEYS = ("final_output", "final_answer", "answer", "output", "response")
_OK = frozenset({"ok", "success", "succeeded", "successful", "pass", "passed", "completed", "complete", "done", "resolved", "solved", "true"})
_BAD = frozenset({"error", "failure", "failed", "fail", "errored", "unresolved", "unsolved", "incorrect", "false", "timeout", "crashed"})

Status = Literal["ok", "error", "unknown"]


@dataclass
class Envelope:
    """What a wrapping record says about its run."""

    trace_id: str | None = None
    task: str | None = None
    status: Status | None = None
    error: str | None = None
    final_output: str | None = None
    fields: dict[str, Any] = field(default_factory=dict)
    """The envelope keys read, as given (for ``metadata["envelope"]``)."""

    @property
    def empty(self) -> bool:
        """True when the record stated none of the envelope fields."""
        return not self.fields


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return "\n".join(value).strip() or None
    if isinstance(value, dict):
        for key in (*TASK_KEYS, "description", "text", "content"):
            found = _text(value.get(key))
            if found:
                return found
    return None


def status_word(value: Any) -> Status | None:
    """``ok``/``error`` from a status word, a success flag or a score in 0..1; ``None`` when unclear."""
    if isinstance(value, bool):
        return "ok" if value else "error"
    if isinstance(value, int | float):
        return "ok" if value >= 1 else "error" if value <= 0 else None
    if isinstance(value, str):
        word = value.strip().lower()
        return "ok" if word in _OK else "error" if word in _BAD else None
    return None


def _outcome(record: dict[str, Any]) -> tuple[Status | None, str | None]:
    """Status (and error) from the first outcome key that says clearly how the run ended."""
    for key in OUTCOME_KEYS:
        value = record.get(key)
        error = None
        if isinstance(value, dict):
            error = _text(value.get("error")) or _text(value.get("reason"))
            candidates = [value.get(k) for k in ("status", "success", "passed", "result", "score")]
        else:
            candidates = [value]
        for candidate in candidates:
            status = status_word(candidate)
            if status is not None:
                return status, error if status == "error" else None
    return None, None


def read_envelope(record: dict[str, Any], *, skip: frozenset[str] = frozenset()) -> Envelope:
    """The envelope fields of ``record``; keys in ``skip`` belong to the wrapped format and are left alone."""
    env = Envelope()
    for key in ID_KEYS:
        value = record.get(key)
        if key not in skip and isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
            env.trace_id = str(value).strip()
            break
    for key in TASK_KEYS:
        found = _text(record.get(key)) if key not in skip else None
        if found:
            env.task = found
            break
    env.status, env.error = _outcome({k: v for k, v in record.items() if k not in skip})
    for key in OUTPUT_KEYS:
        value = record.get(key)
        if key not in skip and isinstance(value, str) and value.strip():
            env.final_output = value.strip()
            break
    env.fields = {k: record[k] for k in (*ID_KEYS, *TASK_KEYS, *OUTCOME_KEYS, *OUTPUT_KEYS) if k in record and k not in skip}
    return env


ENVELOPE_KEYS = frozenset((*ID_KEYS, *TASK_KEYS, *OUTCOME_KEYS, *OUTPUT_KEYS))
"""Every key :func:`read_envelope` may read."""
