"""Reliability under hostile input and failing providers (``-m faults``; runs in CI).

- the normaliser entry point, fuzzed with arbitrary bytes and JSON: only MastErrors escape;
- a corpus of bad files through a real batch subprocess: one line each, the batch goes on, no hang,
  bounded memory;
- mixed provider faults over 100 traces: every trace ends ``judged`` or ``error``, bounded requests;
- ``kill -9`` of ``mast label`` at random points, then resume: every trace exactly once;
- the cache and the results file under concurrent writers.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mast.errors import MastError, TraceFormatError
from mast.normalize import TRACE_SUFFIXES, formats, iter_traces, load_trace
from mast.trace import Trace

pytestmark = pytest.mark.faults

# --- fuzzing the normaliser entry point -------------------------------------------------------

# Keys the registered formats look for, so generated objects reach deep into the parsers instead of
# being rejected by detection at the first glance.
_KEYS = st.sampled_from(
    [
        "role", "content", "messages", "type", "name", "steps", "events", "history", "trajectory",
        "payload", "spans", "attributes", "input", "output", "id", "timestamp", "action", "observation",
        "tool_calls", "function", "arguments", "data", "source", "kind", "parts", "text", "resourceSpans",
        "scopeSpans", "runs", "observations", "trace", "info", "memory", "model_output", "tool_call",
        "step_number", "instance_id", "mast_annotation", "trace_id", "parent_id", "run_type", "inputs",
        "outputs", "child_runs", "metadata", "usage", "item", "call_id", "trace", "mas_name", "llm_name",
        "benchmark_name", "gen_ai.prompt", "gen_ai.completion", "span_id", "startTimeUnixNano",
    ]
) | st.text(max_size=8)
_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30)
)
JSON = st.recursive(
    _LEAVES, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(_KEYS, inner, max_size=6), max_leaves=40
)
FUZZ = settings(max_examples=300, deadline=None, database=None, suppress_health_check=list(HealthCheck))


def _drain(source: Any, format: str = "auto") -> list[Trace | TraceFormatError]:
    """Read everything ``source`` holds; let only MastErrors out (pytest reports anything else)."""
    try:
        return list(iter_traces(source, format))
    except MastError:
        return []


def _assert_readable_or_clean_error(source: Any) -> None:
    """Every item is a Trace or a TraceFormatError, and loading raises nothing but MastErrors.

    (Messages may quote the input, newlines included; the CLI and the batch print them through
    ``one_line``, which the corpus test below checks end to end.)
    """
    for item in _drain(source):
        assert isinstance(item, Trace | TraceFormatError)
    try:
        load_trace(source)
    except MastError:
        pass


@pytest.fixture(scope="module")
def fuzz_dir() -> Iterator[Path]:
    # Hypothesis reruns the test body many times; a module-level folder avoids function-scoped tmp_path.
    with tempfile.TemporaryDirectory(prefix="mast-fuzz-") as folder:
        yield Path(folder)


@FUZZ
@given(obj=JSON)
def test_fuzz_objects_only_raise_mast_errors(obj: Any) -> None:
    _assert_readable_or_clean_error(obj)


@FUZZ
@given(obj=JSON, name=st.sampled_from([f.name for f in formats()]))
def test_fuzz_objects_forced_through_each_format(obj: Any, name: str) -> None:
    for item in _drain(obj, name):
        assert isinstance(item, Trace | TraceFormatError)


@FUZZ
@given(obj=JSON, suffix=st.sampled_from([".json", ".jsonl", ".traj", ".yaml"]), lines=st.booleans())
def test_fuzz_json_files_only_raise_mast_errors(fuzz_dir: Path, obj: Any, suffix: str, lines: bool) -> None:
    import orjson

    path = fuzz_dir / f"trace{suffix}"
    if lines and isinstance(obj, list):
        path.write_bytes(b"\n".join(orjson.dumps(x) for x in obj))
    else:
        path.write_bytes(orjson.dumps(obj))
    _assert_readable_or_clean_error(path)


@FUZZ
@given(blob=st.binary(max_size=2000), suffix=st.sampled_from(sorted(TRACE_SUFFIXES)))
def test_fuzz_bytes_only_raise_mast_errors(fuzz_dir: Path, blob: bytes, suffix: str) -> None:
    path = fuzz_dir / f"blob{suffix}"
    path.write_bytes(blob)
    _assert_readable_or_clean_error(path)


@FUZZ
@given(text=st.text(max_size=3000), suffix=st.sampled_from(sorted(TRACE_SUFFIXES)))
def test_fuzz_text_files_only_raise_mast_errors(fuzz_dir: Path, text: str, suffix: str) -> None:
    path = fuzz_dir / f"text{suffix}"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _assert_readable_or_clean_error(path)


def test_a_parser_bug_becomes_a_trace_format_error_naming_the_format() -> None:
    """The registry boundary: an unexpected exception inside a format's parser is translated once."""
    from mast.normalize.base import RawInput, TraceFormat

    class Broken(TraceFormat):
        name = "broken_for_test"
        description = "raises inside parse"
        priority = 999

        def detect(self, raw: RawInput) -> float:
            return 0.0

        def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
            yield Trace(steps=[])
            raise KeyError("steps")

    from mast.normalize import base

    base._REGISTRY["broken_for_test"] = Broken()
    try:
        items = iter_traces({"x": 1}, format="broken_for_test")
        assert isinstance(next(items), Trace)
        with pytest.raises(TraceFormatError, match=r"broken_for_test: cannot read this input \(KeyError: 'steps'\)") as info:
            next(items)
        assert isinstance(info.value.__cause__, KeyError)
    finally:
        del base._REGISTRY["broken_for_test"]


def test_deep_nesting_is_a_one_line_error_not_a_recursion_crash(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(TraceFormatError) as info:
        load_trace(deep)
    assert "\n" not in str(info.value)
    nested: Any = []
    for _ in range(5_000):
        nested = [nested]
    with pytest.raises(MastError):
        load_trace(nested)
