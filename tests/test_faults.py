"""Reliability under hostile input and failing providers (``-m faults``; runs in CI).

- the normaliser entry point, fuzzed with arbitrary bytes and JSON: only MastErrors escape;
- a corpus of bad files through a real batch subprocess: one line each, the batch goes on, no hang,
  bounded memory;
- mixed provider faults over 100 traces: every trace ends ``judged`` or ``error``, bounded requests;
- ``kill -9`` of ``mast label`` at random points, then resume: every trace exactly once;
- the cache and the results file under concurrent writers.
"""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mast.errors import MastError, TraceFormatError
from mast.normalize import TRACE_SUFFIXES, formats, iter_traces, load_trace
from mast.testing import FakeLLMServer, FaultPlan
from mast.trace import Step, Trace

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


# --- provider faults over a batch ---------------------------------------------------------------

TRACE_MARK = re.compile(r"TRACE-(\d{3})")


def numbered_traces(count: int) -> list[Trace]:
    """Small distinct traces whose task carries a mark, so the server can tell whose request it got."""
    return [
        Trace(
            trace_id=f"t{i:03d}",
            task=f"TRACE-{i:03d}: sort the list",
            steps=[
                Step(index=0, agent="user", content=f"TRACE-{i:03d}: sort [3, 1, 2]"),
                Step(index=1, agent="coder", content=f"sorted: [1, 2, 3] (run {i})"),
            ],
            final_output="[1, 2, 3]",
        )
        for i in range(count)
    ]


def requests_per_trace(server: FakeLLMServer) -> Counter[int]:
    counts: Counter[int] = Counter()
    for request in server.chat_requests:
        marks = set(TRACE_MARK.findall(request.text))
        assert len(marks) == 1, f"a request must concern exactly one trace, got {marks}"
        counts[int(marks.pop())] += 1
    return counts


@pytest.fixture
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Back-off waits of milliseconds instead of seconds; the retry logic itself is unchanged."""
    from mast.judge import backend

    monkeypatch.setattr(backend, "RETRY_INITIAL_WAIT", 0.02)
    monkeypatch.setattr(backend, "RETRY_MAX_WAIT", 0.1)


@pytest.mark.timeout(180)
def test_mixed_faults_over_100_traces_end_judged_or_error_within_the_request_bound(
    tmp_path: Path, fast_retries: None
) -> None:
    from mast.batch import classify_many, read_results

    n, max_retries, max_reasks = 100, 2, 1
    plan = FaultPlan(rate=0.2, seed=7, retry_after="0")
    output = tmp_path / "results.jsonl"
    with FakeLLMServer(faults=plan, hang_limit=10) as server:
        results = classify_many(
            numbered_traces(n),
            model="openai/fake-judge",
            api_base=server.base_url,
            api_key="sk-test",
            timeout=1.0,
            max_retries=max_retries,
            max_reasks=max_reasks,
            cache=False,
            concurrency=16,
            output=output,
        )
        per_trace = requests_per_trace(server)
        faults = Counter(r.fault for r in server.chat_requests if r.fault)
    # Every kind of fault was really injected.
    assert set(faults) == {"429", "500", "hang", "invalid_json", "length"}, faults
    # Every trace ends judged or error, with a reason for each error.
    assert [r.trace_id for r in results] == [f"t{i:03d}" for i in range(n)]
    for result in results:
        assert result.status in ("judged", "error"), result.status
        if result.status == "error":
            assert result.error is not None and result.error.message
    assert sum(r.status == "judged" for r in results) >= 80
    # One line per trace in the results file, valid JSON, no duplicates.
    lines = output.read_text(encoding="utf-8").splitlines()
    assert len(lines) == n
    ids = [orjson.loads(line)["trace_id"] for line in lines]
    assert sorted(ids) == sorted(set(ids)) and len(set(ids)) == n
    assert {d.trace_id: d.status for d in read_results(output)} == {r.trace_id: r.status for r in results}
    # Requests stay bounded: overall, and per trace by (1 + retries) x (1 + re-asks).
    assert set(per_trace) == set(range(n))
    assert sum(per_trace.values()) <= n * (1 + max_retries + max_reasks)
    assert max(per_trace.values()) <= (1 + max_retries) * (1 + max_reasks)


# --- concurrent writers -------------------------------------------------------------------------

REPO = Path(__file__).resolve().parent.parent

_CACHE_WRITER = """
import random, sys, threading
from mast.judge.cache import JudgeCache
cache, writer = JudgeCache(sys.argv[1]), int(sys.argv[2])
errors = []
def work(thread):
    rng = random.Random(writer * 100 + thread)
    for _ in range(60):
        key = f"k{rng.randrange(100):03d}"
        try:
            if rng.random() < 0.6:
                cache.put(key, {"key": key, "writer": writer, "thread": thread, "pad": "x" * rng.randrange(10, 5000)})
            else:
                value = cache.get(key)
                assert value is None or value["key"] == key, value
        except Exception as exc:
            errors.append(repr(exc))
threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
print(len(errors), errors[:3])
sys.exit(1 if errors else 0)
"""


@pytest.mark.timeout(120)
def test_the_cache_stays_consistent_under_concurrent_processes_and_threads(tmp_path: Path) -> None:
    import subprocess
    import sys

    from mast.judge.cache import JudgeCache

    folder = tmp_path / "cache"
    writers = [
        subprocess.Popen([sys.executable, "-c", _CACHE_WRITER, str(folder), str(w)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for w in range(4)
    ]
    outputs = [(p.wait(timeout=100), p.stdout.read().decode() if p.stdout else "") for p in writers]
    assert all(code == 0 for code, _ in outputs), outputs
    cache = JudgeCache(folder)
    info = cache.info()
    keys = [f"k{i:03d}" for i in range(100)]
    stored = {k: cache.get(k) for k in keys}
    present = {k: v for k, v in stored.items() if v is not None}
    assert info.entries == len(present) > 50
    assert all(v["key"] == k and len(v["pad"]) >= 10 for k, v in present.items())


def _result(trace_id: str) -> Any:
    from mast.diagnosis import Diagnosis, JudgeInfo

    return Diagnosis(trace_id=trace_id, judge=JudgeInfo(taxonomy_version="mast-v3"), summary="x" * 3000)


def test_the_results_file_keeps_whole_lines_under_concurrent_threads(tmp_path: Path) -> None:
    import threading

    from mast.batch import ResultsFile

    path = tmp_path / "results.jsonl"
    with ResultsFile(path) as out:

        def work(thread: int) -> None:
            for i in range(100):
                out.append(_result(f"t{thread}-{i}"))

        threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b""
    ids = [orjson.loads(line)["trace_id"] for line in lines[:-1]]
    assert sorted(ids) == sorted(f"t{t}-{i}" for t in range(8) for i in range(100))


_HOLD_RESULTS = """
import sys, time
from mast.batch import ResultsFile
from mast.diagnosis import Diagnosis, JudgeInfo
with ResultsFile(sys.argv[1]) as out:
    for i in range(20):
        out.append(Diagnosis(trace_id=f"held-{i}", judge=JudgeInfo(taxonomy_version="mast-v3")))
    print("holding", flush=True)
    time.sleep(float(sys.argv[2]))
"""


@pytest.mark.timeout(60)
def test_a_second_writer_of_the_results_file_is_refused_in_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    from mast.batch import ResultsFile
    from mast.errors import UsageError

    path = tmp_path / "results.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_RESULTS, str(path), "3"], stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"holding"
        with pytest.raises(UsageError) as info:
            ResultsFile(path).open()
        assert "\n" not in str(info.value)
    finally:
        assert holder.wait(timeout=30) == 0
    with ResultsFile(path) as out:  # free again once the holder is done
        out.append(_result("after"))
    ids = [orjson.loads(line)["trace_id"] for line in path.read_bytes().splitlines()]
    assert ids == [f"held-{i}" for i in range(20)] + ["after"]


_SHARED_CACHE_RUN = """
import sys
from mast.batch import classify_many
sys.path.insert(0, sys.argv[3])
from test_faults import numbered_traces
results = classify_many(numbered_traces(30), model="openai/fake-judge", api_base=sys.argv[1], api_key="sk-test",
                        concurrency=8, output=sys.argv[2])
print(sum(r.status == "judged" for r in results))
"""


@pytest.mark.timeout(180)
def test_two_processes_sharing_a_cache_agree_and_a_rerun_makes_no_request(tmp_path: Path) -> None:
    import subprocess
    import sys

    from mast.batch import read_results

    with FakeLLMServer(latency=0.05) as server:
        runs = [
            subprocess.Popen(
                [sys.executable, "-c", _SHARED_CACHE_RUN, server.base_url, str(tmp_path / f"run{n}.jsonl"), str(REPO / "tests")],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for n in range(2)
        ]
        for run in runs:
            out, err = run.communicate(timeout=150)
            assert run.returncode == 0 and out.strip() == b"30", err.decode()[-2000:]
        first = len(server.chat_requests)
        assert 30 <= first <= 60  # each trace judged at least once, at most once per process
        third = subprocess.run(
            [sys.executable, "-c", _SHARED_CACHE_RUN, server.base_url, str(tmp_path / "run2.jsonl"), str(REPO / "tests")],
            capture_output=True,
            timeout=150,
        )
        assert third.returncode == 0, third.stderr.decode()[-2000:]
        assert len(server.chat_requests) == first  # everything came from the shared cache
    verdicts = [
        {d.trace_id: (d.status, d.present_codes) for d in read_results(tmp_path / f"run{n}.jsonl")} for n in range(3)
    ]
    assert verdicts[0] == verdicts[1] == verdicts[2] and len(verdicts[0]) == 30
    assert all(d.usage.cached for d in read_results(tmp_path / "run2.jsonl"))
