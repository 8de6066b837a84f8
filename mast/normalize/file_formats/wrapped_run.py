"""A run wrapped in a record of its own: ``{trace_id, task, messages | trajectory | raw_trajectory, outcome}``.

Evaluation harnesses and AdaMAST's example traces store a run as a message list (any dialect) or a
trajectory (a list, JSON text, a Python ``repr`` or a framework log) inside a record that states the
run's id, task and outcome. Those envelope fields become the trace's ``trace_id``, ``task`` and
``status`` (see :mod:`mast.normalize._envelope`); everything else is kept in ``metadata``.

Example:
    >>> from mast.normalize import load_trace
    >>> t = load_trace({"trace_id": "demo-1", "task": "Return the final calculation",
    ...     "messages": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}],
    ...     "outcome": {"status": "failure", "score": 0.0}})
    >>> t.trace_id, t.task, t.status, t.final_output
    ('demo-1', 'Return the final calculation', 'error', '4')
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError, one_line
from mast.normalize._envelope import ENVELOPE_KEYS, OUTCOME_KEYS, TASK_KEYS, read_envelope
from mast.normalize._logs_common import LogParse
from mast.normalize._mad_logs import parse_payload
from mast.normalize._messages import apply_prompt_names, to_messages
from mast.normalize._payload import decode_text
from mast.normalize._sniff import sniffed_json
from mast.normalize._timeline import Timeline
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.trace import Trace

RUN_KEYS = ("messages", "trajectory", "raw_trajectory")
"""Where the run sits, in the order they are looked for."""
_NOT_OURS = frozenset({"mas_name", "resourceSpans", "log_file", "choices", "object", "model"})
"""Keys that mark another format's record (MAD, OTLP, MAST raw, chat bodies)."""


_TRIGGERS = (set(TASK_KEYS) | set(OUTCOME_KEYS)) - {"problem_statement", "prompt"}
"""Envelope keys that make a record surely a wrapped run (AG2 ``problem_statement`` payloads belong to ``autogen``)."""


def run_key(record: Any) -> str | None:
    """The key holding the run, when ``record`` is a wrapped run."""
    if not isinstance(record, dict) or _NOT_OURS & set(record):
        return None
    key = next((k for k in RUN_KEYS if record.get(k) not in (None, "", [], {})), None)
    if key is None or not isinstance(record[key], str | list | dict):
        return None
    return key


def confidence(record: Any) -> float:
    """0.9 with a task or outcome beside the run (request bodies have neither), 0.55 with only an id; else 0."""
    if run_key(record) is None:
        return 0.0
    keys = set(record)
    if keys & _TRIGGERS:
        return 0.9
    return 0.55 if keys & ENVELOPE_KEYS else 0.0


def read_run(payload: Any) -> LogParse:
    """Steps from a message list in any dialect, else from a trajectory (text, literal, log)."""
    value = payload
    encoding = None
    if isinstance(payload, str):
        decoded = decode_text(payload)
        if decoded is not None:
            value, encoding = decoded
    msgs = to_messages(value)  # text: "role: text" lines
    if msgs:
        timeline = Timeline(default_agent=apply_prompt_names(msgs) or "assistant")
        for position, msg in enumerate(msgs):
            timeline.add(msg, source_ref=f"messages[{position}]")
        out = LogParse(steps=timeline.steps, variant="messages", task=timeline.task(), final_output=timeline.final_answer(),
                       warnings=list(timeline.warnings))
    else:
        out = parse_payload(value)
    if encoding:
        out.metadata.setdefault("trajectory_encoding", encoding)
    return out


def record_to_trace(record: dict[str, Any], source: Any) -> Trace:
    """The trace of one wrapped run."""
    key = run_key(record)
    if key is None:
        raise ValueError("no messages, trajectory or raw_trajectory to read")
    parsed = read_run(record[key])
    env = read_envelope(record, skip=frozenset(RUN_KEYS))
    parsed.task = env.task or parsed.task
    parsed.final_output = env.final_output or parsed.final_output
    leftovers = {k: v for k, v in record.items() if k != key and k not in env.fields}
    own = leftovers.pop("metadata", None)
    if isinstance(own, dict):
        leftovers = {**own, **leftovers}  # the record's own metadata, flattened
    elif own is not None:
        leftovers["metadata"] = own
    metadata = {**leftovers, "envelope": env.fields, "run_key": key}
    source.variant = key
    trace = parsed.to_trace(source, parsed.framework, metadata=metadata)
    if env.trace_id:
        trace.trace_id = env.trace_id
    if env.status:
        trace.status = env.status
        trace.error = trace.error or env.error
    return trace


class WrappedRunFormat(TraceFormat):
    """Records holding a run plus its id, task and outcome (AdaMAST traces, harness dumps)."""

    name = "wrapped_run"
    description = "A run wrapped with its own id, task and outcome (AdaMAST traces, harness dumps); JSON, list or JSONL"
    priority = 28
    example = '{"trace_id": "demo-1", "task": "...", "messages" | "trajectory" | "raw_trajectory": ..., "outcome": {"status": "failure"}}'

    def detect(self, raw: RawInput) -> float:
        """How sure this is the format: a wrapped run (or a list / JSONL of them)."""
        data = sniffed_json(raw, '"messages"', '"trajectory"', '"raw_trajectory"')
        if data is None:
            return 0.0
        if isinstance(data, list):
            records = [r for r in data if not isinstance(r, JsonlLineError)]
            scores = [confidence(r) for r in records]
            return min(scores) if scores and min(scores) > 0 else 0.0
        return confidence(data)

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per wrapped run."""
        data = raw.data()
        records = data if isinstance(data, list) else [data]
        several = isinstance(data, list)
        for number, record in enumerate(records):
            index = number if several else None
            if isinstance(record, JsonlLineError):
                yield raw.fail(str(record), record=index)
                continue
            try:
                yield record_to_trace(record, self.source(raw, index))
            except (ValueError, TypeError) as exc:
                yield raw.fail(f"wrapped run unreadable: {one_line(exc)}", record=index)


register(WrappedRunFormat())
