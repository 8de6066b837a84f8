"""Property: no detected format hands the judge one step holding the whole input without saying so.

Hypothesis writes inputs in the shapes formats look for (message lists, MAD records, wrapped runs,
framework-log-like text) with random payloads. Whatever format detection picks, a trace that is one
step whose content is the whole payload must carry a warning; and nothing but a
:class:`TraceFormatError` may escape.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mast.errors import TraceFormatError
from mast.normalize import iter_traces
from mast.trace import Trace

KEYS = ["role", "content", "name", "messages", "trajectory", "raw_trajectory", "trace", "mas_name", "type", "parts", "kind",
        "part_kind", "task", "outcome", "trace_id", "id", "payload", "text", "tool_calls", "problem_statement"]
WORDS = st.sampled_from(["user", "assistant", "system", "tool", "message", "request", "response", "text", "AG2", "ChatDev",
                         "TERMINATE", "---------- writer ----------", "planner (to coder):", "- content: hi", "[{'a': 1"])
TEXT = st.one_of(st.text(max_size=200), WORDS, st.lists(WORDS, min_size=1, max_size=6).map("\n".join))
JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-5, 5), TEXT),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=5)),
    max_leaves=12,
)
CONTAINERS = st.one_of(
    TEXT.map(lambda t: ({"mas_name": "AG2", "trace_id": 1, "trace": {"trajectory": t}, "mast_annotation": {}}, t)),
    TEXT.map(lambda t: ({"mas_name": "SomeSystem", "trace_id": 2, "trace": t, "mast_annotation": {}}, t)),
    TEXT.map(lambda t: ({"trace_id": "w", "task": "do it", "raw_trajectory": t}, t)),
    TEXT.map(lambda t: ({"run_id": "w", "goal": "do it", "trajectory": t, "outcome": "failed"}, t)),
)


def _check(source: Any, whole: str | None) -> None:
    """Read ``source``; when ``whole`` is the payload text, one step holding all of it must come with a warning."""
    try:
        items = list(iter_traces(source))
    except TraceFormatError:
        return
    for item in items:
        if isinstance(item, TraceFormatError):
            continue
        assert isinstance(item, Trace)
        if whole and whole.strip() and len(item.steps) == 1 and item.steps[0].content.strip() == whole.strip():
            assert item.warnings, f"{item.source.format} made one step of the whole input without a warning"


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CONTAINERS)
def test_containers_with_random_payloads(case: tuple[Any, str]) -> None:
    _check(*case)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(TEXT)
def test_random_text_documents(text: str) -> None:
    _check(text if "\n" in text else text + "\n", text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON.filter(lambda v: isinstance(v, dict | list)))  # a bare string would be taken for a path
def test_random_json_never_escapes_as_anything_but_a_format_error(value: Any) -> None:
    _check(value, None)
