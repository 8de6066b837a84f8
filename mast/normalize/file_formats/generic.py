"""The generic reader, last resort for JSON and JSONL: a conversation or a span tree found by its shape.

When no format claims a file, this one looks through it (to :data:`MAX_DEPTH` levels, at most
:data:`MAX_NODES` values) for

* a **conversation**: a list of objects that each have a role-like key (``role``, ``sender``,
  ``speaker``, ``author``, ``from``...) holding a short name, and most of them a content-like key
  (``content``, ``parts``, ``text``, ``message``...);
* a **span tree**: a list of objects that each have an id key (``span_id``, ``id``...) and a parent
  key (``parent_id``, ``parentSpanId``...), at least one parent naming another item's id.

The longest conversation wins, then a span tree. The trace says, in a warning, that it was read
generically and which path and keys were used, and its source names no known format
(``generic``): a guess is never dressed up as a reader. A file with neither is left to the usual
refusal ("no known trace format matches ...").
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize._build import assemble_trace
from mast.normalize._common import as_dict, text_of
from mast.normalize._msg_common import Msg
from mast.normalize._timeline import Timeline
from mast.normalize.base import JsonlLineError, RawInput, TraceFormat, register
from mast.trace import Trace

MAX_DEPTH = 8
"""How deep the search goes: conversations sit a few levels under an envelope, not dozens."""
MAX_NODES = 50_000
"""How many values the search visits at most, so a huge unknown file costs little before refusal."""

ROLE_KEYS = ("role", "sender", "speaker", "author", "from", "agent", "participant", "actor")
CONTENT_KEYS = ("content", "parts", "text", "message", "value", "body", "utterance", "msg")
ID_KEYS = ("span_id", "spanId", "id", "run_id", "observation_id", "uuid")
PARENT_KEYS = (
    "parent_id",
    "parentId",
    "parent_span_id",
    "parentSpanId",
    "parent_run_id",
    "parentObservationId",
    "parent_uuid",
)
NAME_KEYS = ("name", "span_name", "operation", "operationName", "type")
INPUT_KEYS = ("input", "inputs", "prompt", "request", "input.value")
OUTPUT_KEYS = ("output", "outputs", "response", "result", "completion", "output.value")
START_KEYS = ("start_time", "startTime", "started_at", "start", "timestamp", "startTimeUnixNano")

_USER = frozenset({"user", "human", "customer", "client", "person"})
_ASSISTANT = frozenset({"assistant", "ai", "bot", "model", "gpt", "agent", "chatbot"})
_SYSTEM = frozenset({"system", "developer"})
_TOOL = frozenset({"tool", "function", "tool_result", "observation", "ipython", "environment"})
_MAX_ROLE_LENGTH = 60
_MAX_ROLES = 12  # a conversation has few speakers; a list with a distinct "author" per item is a table


@dataclass
class Found:
    """What the search found: a conversation or a span tree, where, and the keys it read."""

    kind: str
    path: str
    items: list[dict[str, Any]]
    keys: dict[str, str]

    def describe(self) -> str:
        """What was found, where and by which keys, for the trace's warning."""
        keys = ", ".join(f"{what} {key!r}" for what, key in self.keys.items())
        noun = "messages" if self.kind == "conversation" else "spans"
        return f"a {self.kind} of {len(self.items)} {noun} at {self.path} ({keys})"


def _share(items: list[dict[str, Any]], test: Any) -> float:
    return sum(1 for item in items if test(item)) / len(items)


def _as_conversation(items: list[dict[str, Any]], path: str) -> Found | None:
    for role_key in ROLE_KEYS:
        roles = [item.get(role_key) for item in items]
        if (
            not all(isinstance(r, str) and 0 < len(r) <= _MAX_ROLE_LENGTH for r in roles)
            or len(set(roles)) > _MAX_ROLES
        ):
            continue
        for content_key in CONTENT_KEYS:
            if (
                content_key != role_key
                and _share(items, lambda i, k=content_key: text_of(i.get(k)).strip() != "") >= 0.6
            ):
                return Found("conversation", path, items, {"role": role_key, "content": content_key})
    return None


def _as_span_tree(items: list[dict[str, Any]], path: str) -> Found | None:
    for id_key in ID_KEYS:
        ids = {item.get(id_key) for item in items}
        if not all(isinstance(i, str | int) for i in ids) or len(ids) != len(items):
            continue
        for parent_key in PARENT_KEYS:
            if _share(items, lambda i, k=parent_key: k in i) < 0.8:
                continue
            if any(item.get(parent_key) in ids for item in items):
                return Found("span tree", path, items, {"id": id_key, "parent": parent_key})
    return None


def find(data: Any) -> Found | None:
    """The longest conversation in ``data``, else its largest span tree; ``None`` when there is neither.

    Breadth first, so of two equally long lists the shallower one wins.
    """
    best: Found | None = None
    tree: Found | None = None
    queue: list[tuple[Any, str, int]] = [(data, "$", 0)]
    visited = 0
    while queue and visited < MAX_NODES:
        value, path, depth = queue.pop(0)
        visited += 1
        if isinstance(value, dict):
            children: list[tuple[str, Any]] = [(f"{path}.{k}", v) for k, v in value.items()]
        elif isinstance(value, list):
            dicts = [v for v in value if isinstance(v, dict)]
            if len(dicts) >= 2 and len(dicts) == len(value):
                conversation = _as_conversation(dicts, path)
                if conversation and (best is None or len(conversation.items) > len(best.items)):
                    best = conversation
                spans = _as_span_tree(dicts, path) if conversation is None else None
                if spans and (tree is None or len(spans.items) > len(tree.items)):
                    tree = spans
            children = [(f"{path}[{n}]", v) for n, v in enumerate(value)]
        else:
            continue
        if depth < MAX_DEPTH:
            queue.extend(
                (child, where, depth + 1) for where, child in children if isinstance(child, dict | list)
            )
    return best or tree


def _role(value: str) -> tuple[str, str | None]:
    """A speaker's label as a chat role, and the agent's name when the label is a name, not a role."""
    folded = value.strip().lower()
    for roles, role in ((_USER, "user"), (_ASSISTANT, "assistant"), (_SYSTEM, "system"), (_TOOL, "tool")):
        if folded in roles:
            return role, None
    return "assistant", value.strip()


def _conversation_trace(found: Found, raw: RawInput, warning: str) -> Trace:
    role_key, content_key = found.keys["role"], found.keys["content"]
    timeline = Timeline(assistant_kind="message")
    for position, item in enumerate(found.items):
        role, name = _role(str(item[role_key]))
        msg = Msg(role=role, text=text_of(item.get(content_key)), name=name)
        extra = {k: v for k, v in item.items() if k not in (role_key, content_key)}
        timeline.add(msg, source_ref=f"{found.path}[{position}]", attributes=extra)
    if not timeline.steps:
        raise raw.fail(f"{found.describe()}: its messages hold no text")
    return assemble_trace(
        timeline.steps,
        source=GENERIC.source(raw, variant="conversation"),
        timeline=timeline,
        warnings=[warning],
    )


def _first_text(item: dict[str, Any], keys: tuple[str, ...]) -> str:
    places = [
        item,
        as_dict(item.get("attributes")),
    ]  # OpenInference-style spans keep input.value in attributes
    for place in places:
        for key in keys:
            if key in place and place[key] not in (None, "", [], {}):
                return text_of(place[key])
    return ""


def _span_trace(found: Found, raw: RawInput, warning: str) -> Trace:
    id_key, parent_key = found.keys["id"], found.keys["parent"]
    ids = {item.get(id_key) for item in found.items}
    start_key = next(
        (
            k
            for k in START_KEYS
            if _share(found.items, lambda i, k=k: isinstance(i.get(k), str | int | float)) == 1.0
        ),
        None,
    )
    spans = sorted(found.items, key=lambda i: str(i[start_key]).zfill(40)) if start_key else found.items
    timeline = Timeline(assistant_kind="message")
    roots = [s for s in spans if s.get(parent_key) not in ids]
    for position, span in enumerate(spans):
        name = next((str(span[k]) for k in NAME_KEYS if isinstance(span.get(k), str)), "span")
        text = "\n\n".join(t for t in (_first_text(span, INPUT_KEYS), _first_text(span, OUTPUT_KEYS)) if t)
        parent = span.get(parent_key)
        timeline.add_step(
            kind="agent",
            agent=name,
            content=text or name,
            id=str(span[id_key]),
            parent_id=str(parent) if parent in ids else None,
            source_ref=f"{found.path}[{position}]",
        )
    root = roots[0] if roots else spans[0]
    return assemble_trace(
        timeline.steps,
        source=GENERIC.source(raw, variant="span_tree"),
        timeline=timeline,
        warnings=[warning],
        task=_first_text(root, INPUT_KEYS) or None,
        final_output=_first_text(root, OUTPUT_KEYS) or None,
    )


class Generic(TraceFormat):
    """Any JSON or JSONL holding a conversation or a span tree, read by shape when nothing else reads it."""

    name = "generic"
    description = "Last resort for JSON/JSONL: a conversation (role + content) or a span tree (id + parent id) found by shape, with a warning"
    priority = 950
    example = (
        '{"anything": {"history": [{"speaker": "user", "text": "..."}, {"speaker": "bot", "text": "..."}]}}'
    )

    def detect(self, raw: RawInput) -> float:
        """Just above the refusal threshold, below every real reader (and above plain text), when a shape is found."""
        try:
            data = raw.data()
        except TraceFormatError:
            return 0.0
        if raw.kind not in ("json", "jsonl"):
            return 0.0
        return 0.32 if find(_records(data)) is not None else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace: the conversation or span tree the search found, with a warning that says how."""
        found = find(_records(raw.data()))
        if found is None:
            raise raw.fail(
                "the generic reader found no conversation (role + content) and no span tree (id + parent id)"
            )
        warning = f"read generically (no known format matched): {found.describe()}; check the task and the final output"
        yield (
            _conversation_trace(found, raw, warning)
            if found.kind == "conversation"
            else _span_trace(found, raw, warning)
        )


def _records(data: Any) -> Any:
    """A JSONL file's good lines (its broken ones cannot hold a message)."""
    return [r for r in data if not isinstance(r, JsonlLineError)] if isinstance(data, list) else data


GENERIC = register(Generic())
