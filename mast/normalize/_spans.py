"""From a tree of spans (OTLP, Langfuse observations, LangSmith runs) to ordered steps.

Every span-shaped source is first read into :class:`Span` records (one per span / observation /
run); :func:`build_trace` then rebuilds the tree, walks it depth first with siblings in start-time
order, and emits steps through a :class:`~mast.normalize._messages.Timeline`:

* an LLM span adds the *new* messages of its input (history every call re-sends is skipped) and its
  output as ``llm`` steps;
* a tool span adds a tool step, paired with the call an earlier LLM output made;
* agent and chain spans add input messages that their first LLM call does not repeat (a system
  prompt given to the agent, say), and after their children any output message nobody emitted;
* an LLM span that wraps other LLM spans (Vercel's ``ai.generateText`` around ``doGenerate``,
  Agno's ``invoke`` around the client call) is a wrapper: its children are the calls.

Spans that produce no step keep their name, kind and unmapped fields in the trace's metadata.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mast.normalize._build import assemble_trace
from mast.normalize._common import sum_usage, text_of
from mast.normalize._messages import Msg, name_from_system_prompt, to_messages
from mast.normalize._timeline import Timeline
from mast.trace import Agent, SourceInfo, Trace, Usage

SpanKind = str
"""``llm``, ``tool``, ``agent``, ``chain`` or ``other``."""

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_OUTPUT_KEYS = ("final_output", "output", "raw", "content", "result", "answer", "text", "response", "final_result")


@dataclass
class Span:
    """One span of a trace tree, already interpreted (messages read, kind decided)."""

    id: str
    parent_id: str | None = None
    name: str = ""
    kind: SpanKind = "other"
    start: datetime | None = None
    end: datetime | None = None
    agent: str | None = None
    """Agent identity the span itself declares (``gen_ai.agent.name``, an AGENT span's name...)."""
    agent_description: str | None = None
    model: str | None = None
    usage: Usage | None = None
    input_messages: list[Msg] | None = None
    output_messages: list[Msg] | None = None
    input: Any = None
    """The span's input, decoded, when it is not messages (tool arguments, a task, a state dict)."""
    output: Any = None
    """The span's output, decoded, when it is not messages."""
    tool_name: str | None = None
    tool_call_id: str | None = None
    error: str | None = None
    status: str | None = None
    """``ok`` or ``error`` when the source says so explicitly."""
    framework: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    """Unmapped fields, kept on the step this span becomes."""
    order: int = 0
    children: list[Span] = field(default_factory=list)

    def sort_key(self) -> tuple[bool, datetime, int]:
        return (self.start is None, self.start or _EPOCH, self.order)


def output_text(value: Any) -> str | None:
    """Readable text of a run's output: the answer inside common wrappers, else compact JSON."""
    if value is None or value == "":
        return None
    msgs = to_messages(value) if not isinstance(value, str) else None
    if msgs:
        for msg in reversed(msgs):
            if msg.role == "assistant" and msg.text.strip():
                return msg.text
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in _OUTPUT_KEYS:
            inner = value.get(key)
            if isinstance(inner, str) and inner.strip():
                return inner
            if isinstance(inner, dict | list) and inner:
                found = output_text(inner)
                if found:
                    return found
    return text_of(value) or None


def _descendants(span: Span) -> Iterable[Span]:
    for child in span.children:
        yield child
        yield from _descendants(child)


def _first_llm(span: Span) -> Span | None:
    for child in _descendants(span):
        if child.kind == "llm":
            return child
    return None


def _outermost_output(root: Span) -> Any:
    """The output of the shallowest agent/chain span that has one (a wrapper root often has none)."""
    level = [root]
    while level:
        for span in level:
            if span.kind not in ("llm", "tool") and span.output not in (None, "", {}, []):
                return span.output
        level = [c for s in level for c in sorted(s.children, key=Span.sort_key)]
    return None


def _unwrap_llm_wrappers(spans: Iterable[Span]) -> None:
    """An LLM span around other LLM spans is a wrapper; a lone inner call borrows what it lacks."""
    for span in spans:
        if span.kind != "llm":
            continue
        inner = [d for d in _descendants(span) if d.kind == "llm"]
        if not inner:
            continue
        span.kind = "chain"
        if len(inner) == 1:
            call = inner[0]
            if not call.output_messages and call.output in (None, "") and (span.output_messages or span.output not in (None, "")):
                call.output_messages, call.output = span.output_messages, span.output
                span.output_messages, span.output = None, None
            if not call.input_messages and span.input_messages:
                call.input_messages = span.input_messages
            call.usage = call.usage or span.usage
            call.model = call.model or span.model
            call.agent = call.agent or span.agent


class _Walk:
    def __init__(self, default_agent: str) -> None:
        self.timeline = Timeline(default_agent=default_agent, assistant_kind="llm")
        self.unrendered: list[dict[str, Any]] = []
        self.no_output: int = 0
        self.agents: dict[str, Agent] = {}

    def fields(self, span: Span) -> dict[str, Any]:
        return {"started_at": span.start, "ended_at": span.end, "source_ref": f"span:{span.id}", "parent_id": span.parent_id}

    def note_agent(self, span: Span) -> None:
        if span.agent and span.agent not in self.agents:
            self.agents[span.agent] = Agent(name=span.agent, role=span.agent_description)

    def visit(self, span: Span, agent: str | None) -> None:
        here = span.agent or agent
        self.note_agent(span)
        before = len(self.timeline.steps)
        if span.kind == "llm":
            self.llm(span, here)
        elif span.kind == "tool":
            name = span.tool_name or span.name or "tool"
            self.timeline.add_tool(name, call_id=span.tool_call_id, arguments=span.input, output=span.output,
                                   is_error=bool(span.error), agent=here, id=span.id, attributes=span.attributes,
                                   error=span.error, **self.fields(span))
        elif span.input_messages:
            first = _first_llm(span)
            msgs = span.input_messages
            if first is not None and first.input_messages:
                repeated = Counter(k for m in first.input_messages for k in Timeline._lookup_keys(m))
                msgs = [m for m in msgs if not any(repeated[k] for k in Timeline._lookup_keys(m))]
            self.timeline.add_new(msgs, agent=here, assistant_kind="message", **self.fields(span))
        for child in sorted(span.children, key=Span.sort_key):
            self.visit(child, here)
        if span.kind not in ("llm", "tool"):
            if span.output_messages:
                self.timeline.add_new(span.output_messages, agent=here, assistant_kind="message", **self.fields(span))
            if span.error:
                self.timeline.add_step(kind="error", agent=here, content=span.error, id=span.id, **self.fields(span))
        if len(self.timeline.steps) == before:
            self.unrendered.append(_summary(span))

    def llm(self, span: Span, agent: str | None) -> None:
        inputs = span.input_messages or []
        who = span.agent or agent
        if who is None:
            prompt = next((m.text for m in inputs if m.role in ("system", "developer") and m.text), None)
            who = name_from_system_prompt(prompt) if prompt else None
        fields = self.fields(span)
        # History in an input was produced by calls not seen here: plain messages, not llm steps.
        self.timeline.add_new(inputs, agent=who, assistant_kind="message", **fields)
        outputs = span.output_messages
        if outputs is None and span.output not in (None, ""):
            text = output_text(span.output)
            outputs = [Msg(role="assistant", text=text or "")]
        outputs = [m for m in outputs or [] if not m.empty]
        attributes = span.attributes  # not copied: add() and Step copy what they keep
        if not outputs:
            self.no_output += 1
            self.timeline.add_step(kind="llm", agent=who or self.timeline.default_agent, role="assistant", content="",
                                   model=span.model, usage=span.usage, error=span.error, id=span.id, attributes=attributes, **fields)
            return
        last_assistant = max((i for i, m in enumerate(outputs) if m.role == "assistant"), default=-1)
        for position, msg in enumerate(outputs):
            if msg.role != "assistant":
                self.timeline.add_new([msg], agent=who, **fields)
                continue
            # the span's model and usage win (passed as fields, which the message's own never override)
            extra: dict[str, Any] = {"model": span.model or msg.model, "id": span.id if position == last_assistant else msg.id, "usage": None}
            if position == last_assistant:
                extra["usage"] = span.usage or msg.usage
                extra["error"] = span.error
                extra["attributes"] = attributes
            self.timeline.add(msg, agent=who, kind="llm", **extra, **fields)


def _summary(span: Span) -> dict[str, Any]:
    summary: dict[str, Any] = {"id": span.id, "name": span.name, "kind": span.kind}
    if span.parent_id:
        summary["parent_id"] = span.parent_id
    if span.input not in (None, "", {}, []):
        summary["input"] = span.input
    if span.output not in (None, "", {}, []):
        summary["output"] = span.output
    if span.attributes:
        summary["attributes"] = span.attributes
    return summary


def link(spans: list[Span]) -> list[Span]:
    """Attach children to parents; the roots (no parent, or a parent not in the list) in time order."""
    by_id = {s.id: s for s in spans}
    roots: list[Span] = []
    for span in spans:
        span.children = []
    for span in spans:
        parent = by_id.get(span.parent_id) if span.parent_id and span.parent_id != span.id else None
        if parent is None or _is_ancestor(span, parent, by_id):
            roots.append(span)
        else:
            parent.children.append(span)
    return sorted(roots, key=Span.sort_key)


def _is_ancestor(span: Span, candidate: Span, by_id: dict[str, Span]) -> bool:
    """True when linking ``span`` under ``candidate`` would close a loop."""
    seen: set[str] = set()
    node: Span | None = candidate
    while node is not None and node.id not in seen:
        if node.id == span.id:
            return True
        seen.add(node.id)
        node = by_id.get(node.parent_id) if node.parent_id else None
    return False


def build_trace(
    spans: list[Span],
    *,
    source: SourceInfo,
    trace_id: str = "",
    framework: str | None = None,
    task: str | None = None,
    final_output: str | None = None,
    metadata: dict[str, Any] | None = None,
    known_agents: Iterable[Agent] = (),
    default_agent: str = "assistant",
    status: str | None = None,
) -> Trace:
    """One :class:`Trace` from the spans of one trace, in any order."""
    roots = link(spans)
    _unwrap_llm_wrappers(spans)
    walk = _Walk(default_agent)
    for top in roots:
        walk.visit(top, None)
    timeline = walk.timeline
    warnings: list[str] = []
    if walk.no_output:
        warnings.append(f"{walk.no_output} LLM call(s) recorded no output (content capture off or truncated)")
    if not any(s.content or s.tool_calls or s.tool_results for s in timeline.steps):
        warnings.append("no message content in any span: only the shape of the run is known")
    root = roots[0] if len(roots) == 1 else None
    if final_output is None and root is not None:
        if root.output_messages:
            final_output = next((m.text for m in reversed(root.output_messages) if m.role == "assistant" and m.text.strip()), None)
        elif root.kind not in ("llm", "tool"):
            final_output = output_text(_outermost_output(root))
    if final_output is None:
        final_output = timeline.final_answer()
    if task is None and root is not None and root.kind not in ("llm", "tool") and isinstance(root.input, str) and root.input.strip():
        task = root.input.strip()
    errors = [s for s in roots if s.error]
    if status is None:
        status = "error" if errors else "ok" if roots and all(s.status == "ok" for s in roots) else "unknown"
    frameworks = Counter(s.framework for s in spans if s.framework)
    meta = dict(metadata or {})
    if walk.unrendered:
        meta["unrendered_spans"] = walk.unrendered
    starts = [s.start for s in spans if s.start]
    ends = [s.end for s in spans if s.end]
    known = list(known_agents)
    names = {a.name for a in known}
    known.extend(a for name, a in walk.agents.items() if name not in names)
    used = {s.agent for s in timeline.steps}
    agents = timeline.agents([a for a in known if a.name in used])
    if not timeline.steps:
        warnings.append("the spans produced no steps")
    warnings.extend(timeline.warnings)
    return assemble_trace(
        timeline.steps,
        source=source,
        known_agents=agents,
        task=task or timeline.task(),
        final_output=final_output,
        usage=sum_usage(timeline.steps),
        derive_task=False,
        derive_final_output=False,
        derive_usage=False,
        derive_agents=False,
        trace_id=trace_id,
        framework=framework or (frameworks.most_common(1)[0][0] if frameworks else None) or next(iter(sorted(timeline.framework_hints)), None),
        status=status,
        error=errors[0].error if errors else None,
        started_at=min(starts) if starts else None,
        ended_at=max(ends) if ends else None,
        metadata=meta,
        warnings=warnings,
    )
