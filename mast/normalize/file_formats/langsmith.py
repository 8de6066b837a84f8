"""LangSmith run exports: lists of runs, nested run trees, and ``{"post", "patch"}`` ingestion batches.

A run (``langsmith.schemas.Run``) has ``id, name, run_type (llm | chain | tool | retriever | ...),
start_time, end_time, inputs, outputs, error, extra.metadata, parent_run_id, trace_id,
dotted_order, child_runs``. SDKs send a run twice: created (``post``) and completed (``patch``,
with outputs and end time); the two are merged by ``id`` (by ``dotted_order`` when a JS patch has
no id). Times are ISO text (Python SDK) or epoch milliseconds (JS SDK).

Runs are grouped by ``trace_id`` (one trace each), the tree is rebuilt from ``parent_run_id`` (or
nested ``child_runs``) and walked in start-time order, ``dotted_order`` breaking ties. ``llm`` runs
become ``llm`` steps (their ``inputs.messages`` re-send history, which is not repeated), ``tool``
runs tool steps, and ``chain`` runs the agent level: a LangGraph node (``langgraph_node``) names the
agent of the runs inside it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._common import parse_time, usage_from
from mast.normalize._messages import Msg, as_dict, maybe_json, to_messages
from mast.normalize._sniff import sniffed_json
from mast.normalize._spans import Span, build_trace
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.trace import Trace, Usage

_RUN_KINDS = {"llm": "llm", "tool": "tool", "chain": "chain", "agent": "agent", "prompt": "other", "parser": "other",
              "retriever": "other", "embedding": "other"}
_MAPPED = {"id", "name", "run_type", "start_time", "end_time", "inputs", "outputs", "error", "parent_run_id", "trace_id",
           "dotted_order", "child_runs", "child_run_ids", "prompt_tokens", "completion_tokens", "total_tokens", "total_cost"}


def _is_run(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("run_type"), str) and bool(
        {"inputs", "dotted_order", "child_runs", "parent_run_id", "trace_id"} & set(item)
    )


def _is_patch(item: Any) -> bool:
    return isinstance(item, dict) and bool({"id", "dotted_order"} & set(item)) and bool({"outputs", "end_time", "error"} & set(item))


def is_batch(data: Any) -> bool:
    """A ``{"post": [...], "patch": [...]}`` ingestion batch of runs."""
    if not isinstance(data, dict) or not ({"post", "patch"} & set(data)) or not set(data) <= {"post", "patch"}:
        return False
    posts, patches = data.get("post") or [], data.get("patch") or []
    return isinstance(posts, list) and isinstance(patches, list) and bool(posts or patches) and all(_is_run(r) for r in posts) and all(
        _is_patch(r) or _is_run(r) for r in patches
    )


def is_runs(data: Any) -> bool:
    """A run, a list of runs, ``{"runs": [...]}``, or a post/patch batch."""
    if is_batch(data):
        return True
    if isinstance(data, dict) and isinstance(data.get("runs"), list):
        data = data["runs"]
    if isinstance(data, list):
        return bool(data) and all(_is_run(r) for r in data)
    return _is_run(data)


def _flatten(runs: list[dict[str, Any]], parent: str | None = None) -> list[dict[str, Any]]:
    """Nested ``child_runs`` as a flat list with ``parent_run_id`` set."""
    flat: list[dict[str, Any]] = []
    for run in runs:
        if not isinstance(run, dict):
            continue
        run = dict(run)
        if parent and not run.get("parent_run_id"):
            run["parent_run_id"] = parent
        children = run.pop("child_runs", None) or []
        flat.append(run)
        flat.extend(_flatten(children, str(run.get("id")) if run.get("id") else None))
    return flat


def _merge(data: Any) -> list[dict[str, Any]]:
    """All runs of the input, patches merged onto their posts."""
    if is_batch(data):
        runs = [dict(r) for r in _flatten(data.get("post") or [])]
        by_id = {str(r["id"]): r for r in runs if r.get("id")}
        by_order = {str(r["dotted_order"]): r for r in runs if r.get("dotted_order")}
        for patch in data.get("patch") or []:
            target = by_id.get(str(patch.get("id"))) if patch.get("id") else by_order.get(str(patch.get("dotted_order")))
            if target is None:
                runs.append(dict(patch))
                continue
            for key, value in patch.items():
                if value not in (None, {}, []) or key not in target:
                    target[key] = value
        return runs
    if isinstance(data, dict) and isinstance(data.get("runs"), list):
        data = data["runs"]
    return _flatten(data if isinstance(data, list) else [data])


def _usage(run: dict[str, Any], outputs: Any) -> Usage | None:
    if isinstance(outputs, dict):
        for key in ("usage_metadata", "usage"):
            found = usage_from(outputs.get(key))
            if found:
                return found
        llm_output = outputs.get("llm_output")
        if isinstance(llm_output, dict):
            found = usage_from(llm_output.get("token_usage"))
            if found:
                return found
    found = usage_from(run)
    if found and isinstance(run.get("total_cost"), int | float):
        found.cost_usd = float(run["total_cost"])
    return found


def _llm_inputs(inputs: Any) -> list[Msg] | None:
    if not isinstance(inputs, dict):
        return to_messages(inputs)
    msgs = to_messages(inputs)
    if msgs is not None:
        return msgs
    prompts = inputs.get("prompts") or inputs.get("prompt")
    if isinstance(prompts, str):
        prompts = [prompts]
    if isinstance(prompts, list) and all(isinstance(p, str) for p in prompts):
        return [Msg(role="user", text=p) for p in prompts]
    for key in ("input", "messages"):
        if key in inputs:
            return to_messages(inputs[key])
    return None


def _run_span(run: dict[str, Any], order: int) -> Span:
    extra = as_dict(run.get("extra"))
    meta = as_dict(extra.get("metadata"))
    kind = _RUN_KINDS.get(str(run.get("run_type")), "other")
    inputs = maybe_json(run.get("inputs"))
    outputs = maybe_json(run.get("outputs"))
    error = run.get("error")
    span = Span(
        id=str(run.get("id") or f"run-{order}"),
        parent_id=str(run["parent_run_id"]) if run.get("parent_run_id") else None,
        name=str(run.get("name") or ""),
        kind=kind,
        start=parse_time(run.get("start_time")),
        end=parse_time(run.get("end_time")),
        error=str(error) if error else None,
        status="error" if error else ("ok" if run.get("end_time") and run.get("status") in (None, "success") and outputs not in (None, {}) else None),
        order=order,
    )
    node = meta.get("langgraph_node")
    if isinstance(node, str) and node and not node.startswith("__"):
        span.agent = node
        span.framework = "langgraph"
    if kind == "chain" and isinstance(node, str) and node == span.name:
        span.kind = "agent"
    model = meta.get("ls_model_name")
    if kind == "llm":
        span.input_messages = _llm_inputs(inputs)
        span.output_messages = to_messages(outputs) if outputs not in (None, {}) else None
        if span.input_messages is None:
            span.input = inputs
        if span.output_messages is None and outputs not in (None, {}):
            span.output = outputs
        if span.output_messages:
            model = next((m.model for m in reversed(span.output_messages) if m.model), None) or model
        span.usage = _usage(run, outputs)
    elif kind == "tool":
        span.tool_name = span.name
        value = inputs.get("input", inputs) if isinstance(inputs, dict) and set(inputs) <= {"input", "tool_call_id"} else inputs
        span.input = maybe_json(value)
        result = outputs.get("output", outputs) if isinstance(outputs, dict) and "output" in outputs else outputs
        if isinstance(result, dict) and (result.get("type") == "tool" or result.get("lc")):
            message = result.get("kwargs", result)
            span.tool_call_id = message.get("tool_call_id")
            result = message.get("content", result)
        span.output = result
        if isinstance(inputs, dict) and inputs.get("tool_call_id"):
            span.tool_call_id = str(inputs["tool_call_id"])
    else:
        span.input_messages = to_messages(inputs) if isinstance(inputs, dict | list) and inputs else None
        span.output_messages = to_messages(outputs) if isinstance(outputs, dict | list) and outputs else None
        span.input = inputs if span.input_messages is None else None
        span.output = outputs if span.output_messages is None else None
        if isinstance(span.input, dict) and len(span.input) == 1 and isinstance(next(iter(span.input.values())), str):
            span.input = next(iter(span.input.values()))
    span.model = model if isinstance(model, str) else None
    attributes = {k: v for k, v in run.items() if k not in _MAPPED and k != "extra" and v not in (None, [], {}, "")}
    if extra:
        attributes["extra"] = extra
    span.attributes = attributes
    return span


class LangSmithRuns(TraceFormat):
    """LangSmith runs: one trace per trace id."""

    name = "langsmith"
    description = "LangSmith runs: run lists, nested run trees, or post/patch ingestion batches"
    priority = 51
    example = '[{"run_type": "llm" | "tool" | "chain", "inputs": ..., "outputs": ..., "parent_run_id": ...}]'

    def detect(self, raw: RawInput) -> float:
        """How sure this is the format: cheap sniffing first, then the parsed shape."""
        data = sniffed_json(raw, '"run_type"')
        if data is None:
            return 0.0
        if is_batch(data):
            return 0.95
        return 0.9 if is_runs(data) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """Yield the traces in ``raw``; a broken record yields its error."""
        data = raw.data()
        if raw.kind == "jsonl" and isinstance(data, list):
            for number, record in enumerate(data):
                if isinstance(record, JsonlLineError):
                    yield raw.fail(str(record), record=number)
            data = [d for d in data if not isinstance(d, JsonlLineError)]
        if not is_runs(data):
            raise raw.fail("not LangSmith runs: needs run_type with inputs/dotted_order, or a post/patch batch")
        runs = _merge(data)
        runs.sort(key=lambda r: str(r.get("dotted_order") or ""))
        groups: dict[str, list[Span]] = {}
        parents = {str(r.get("id")): r.get("parent_run_id") for r in runs}
        for order, run in enumerate(runs):
            key = run.get("trace_id") or _root_of(str(run.get("id")), parents)
            groups.setdefault(str(key), []).append(_run_span(run, order))
        variant = "post_patch" if is_batch(data) else "runs"
        for record, (trace_id, spans) in enumerate(groups.items()):
            root = next((s for s in spans if not s.parent_id), None)
            metadata: dict[str, Any] = {}
            session = next((r.get("session_name") or r.get("session_id") for r in runs if r.get("session_name") or r.get("session_id")), None)
            if session:
                metadata["session"] = session
            yield build_trace(
                spans,
                source=self.source(raw, record if len(groups) > 1 else None, variant=variant),
                trace_id=trace_id,
                framework=None if not any(s.framework for s in spans) else "langgraph",
                metadata=metadata,
                status="error" if root and root.error else ("ok" if root and root.status == "ok" else None),
            )


def _root_of(run_id: str, parents: dict[str, Any]) -> str:
    seen: set[str] = set()
    current = run_id
    while parents.get(current) and current not in seen:
        seen.add(current)
        current = str(parents[current])
    return current


register(LangSmithRuns())
