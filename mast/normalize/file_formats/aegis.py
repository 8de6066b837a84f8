"""AEGIS records: multi-agent runs with faults injected into named agents, labelled with MAST codes.

``{id, metadata: {framework, benchmark, model, ...}, input: {query, conversation_history: [{step,
agent_name, agent_role?, content, phase}], final_output?}, output: {faulty_agents: [{agent_name,
error_type, injection_strategy}]}, ground_truth: {correct_answer, injected_agents, is_injection_successful}}``,
one per JSONL line. Labels are per agent, not per step. Label names are sometimes spelled in
another case than the trace (``assistant1`` vs ``Assistant1``); each labelled agent also gets the
trace's spelling as ``trace_agent``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError, one_line
from mast.normalize._build import assemble_trace
from mast.normalize._common import agents_from_steps, text_of
from mast.normalize._sniff import sniffed_json
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.trace import Agent, SourceInfo, Step, Trace

_STEP_KEYS = ("step", "agent_name", "agent_role", "content")


def is_record(obj: Any) -> bool:
    """True for a dict with ``input.conversation_history`` and AEGIS' label blocks."""
    if not isinstance(obj, dict) or not isinstance(obj.get("input"), dict):
        return False
    return isinstance(obj["input"].get("conversation_history"), list) and ("output" in obj or "ground_truth" in obj)


def _faulty(entries: Any, names: dict[str, str]) -> Any:
    if not isinstance(entries, list):
        return entries
    out = []
    for entry in entries:
        if isinstance(entry, dict) and isinstance(entry.get("agent_name"), str):
            entry = {**entry, "trace_agent": names.get(entry["agent_name"].lower())}
        out.append(entry)
    return out


def record_to_trace(record: dict[str, Any], raw: RawInput, index: int | None) -> Trace:
    """Normalise one AEGIS record; steps follow the history's ``step`` order."""
    history = record["input"]["conversation_history"]
    ordered = sorted(enumerate(history), key=lambda item: (item[1].get("step", item[0]) if isinstance(item[1], dict) else item[0], item[0]))
    meta: dict[str, Any] = record["metadata"] if isinstance(record.get("metadata"), dict) else {}
    model = meta.get("model") if isinstance(meta.get("model"), str) else None
    steps: list[Step] = []
    roles: dict[str, str] = {}
    for position, item in ordered:
        if not isinstance(item, dict):
            steps.append(Step(index=len(steps), content=text_of(item), source_ref=f"input.conversation_history[{position}]"))
            continue
        agent = item.get("agent_name")
        if isinstance(agent, str) and isinstance(item.get("agent_role"), str):
            roles.setdefault(agent, item["agent_role"])
        attributes = {k: v for k, v in item.items() if k not in _STEP_KEYS[1:]}
        steps.append(Step(index=len(steps), agent=str(agent) if agent else None, role="assistant", content=text_of(item.get("content")),
                          model=model, source_ref=f"input.conversation_history[{position}]", attributes=attributes))
    known = [Agent(name=n, role=r, model=model) for n, r in roles.items()]
    agents = agents_from_steps(steps, known)  # the label spellings are matched against these names
    names = {a.name.lower(): a.name for a in agents}
    output: dict[str, Any] = record["output"] if isinstance(record.get("output"), dict) else {}
    truth: dict[str, Any] = record["ground_truth"] if isinstance(record.get("ground_truth"), dict) else {}
    labels: dict[str, Any] = {}
    if "faulty_agents" in output:
        labels["faulty_agents"] = _faulty(output["faulty_agents"], names)
    labels.update({k: (_faulty(v, names) if k == "injected_agents" else v) for k, v in truth.items()})
    labels.update({f"output_{k}": v for k, v in output.items() if k != "faulty_agents"})
    metadata = {k: v for k, v in record.items() if k not in ("id", "input", "output", "ground_truth")}
    metadata.update({f"input_{k}": v for k, v in record["input"].items() if k not in ("query", "conversation_history", "final_output")})
    final = record["input"].get("final_output")
    return assemble_trace(
        steps, source=SourceInfo(format="aegis", path=raw.label, record=index), known_agents=known,
        task=text_of(record["input"].get("query")) or None, final_output=text_of(final) if final else None,
        derive_task=False, derive_final_output=False,
        trace_id=str(record.get("id") or ""), framework=str(meta["framework"]) if meta.get("framework") else None,
        labels=labels, metadata=metadata,
    )


class AegisFormat(TraceFormat):
    """AEGIS records, one per JSONL line or in a JSON list."""

    name = "aegis"
    description = "AEGIS error-injected multi-agent records (per-agent MAST codes as labels), JSON or JSONL"
    priority = 25
    example = '{"id", "input": {"query", "conversation_history": [{"step", "agent_name", "content"}]}, "output": {"faulty_agents": [...]}}'

    def detect(self, raw: RawInput) -> float:
        """Sure when the first record has ``input.conversation_history`` and a label block."""
        data = sniffed_json(raw, '"conversation_history"')
        if data is None:
            return 0.0
        first = data[0] if isinstance(data, list) and data else data
        return 0.97 if is_record(first) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per record; a record of another shape yields a per-record error."""
        data = raw.data()
        many = isinstance(data, list)
        for index, record in enumerate(data if many else [data]):
            where = index if many else None
            if isinstance(record, JsonlLineError):
                yield raw.fail(str(record), record=where)
            elif not is_record(record):
                yield raw.fail("not an AEGIS record: expected input.conversation_history and output/ground_truth", record=where)
            else:
                try:
                    yield record_to_trace(record, raw, where)
                except (TypeError, ValueError, KeyError, AttributeError) as exc:  # one odd record, not the file
                    yield raw.fail(f"AEGIS record unreadable ({type(exc).__name__}: {one_line(exc)})", record=where)


register(AegisFormat())
