"""Reliability under hostile input and failing providers (``-m faults``; runs in CI).

- the normaliser entry point, fuzzed with arbitrary bytes and JSON: only MastErrors escape;
- a corpus of bad files through a real batch subprocess: one line each, the batch goes on, no hang,
  bounded memory;
- mixed provider faults over 100 traces: every trace ends ``judged`` or ``error``, bounded requests;
- ``kill -9`` of ``mast label`` at random points, then resume: every trace exactly once;
- the cache and the results file under concurrent writers.
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import time
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

    base._REGISTRY.register("broken_for_test", Broken())
    try:
        items = iter_traces({"x": 1}, format="broken_for_test")
        assert isinstance(next(items), Trace)
        with pytest.raises(TraceFormatError, match=r"broken_for_test: cannot read this input \(KeyError: 'steps'\)") as info:
            next(items)
        assert isinstance(info.value.__cause__, KeyError)
    finally:
        base._REGISTRY.unregister("broken_for_test")


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


@pytest.mark.timeout(900)  # a safety net; nothing below is timed
def test_mixed_faults_over_100_traces_end_judged_or_error_within_the_request_bound(
    tmp_path: Path, fast_retries: None
) -> None:
    from mast.batch import classify_many, read_results

    n, max_retries, max_reasks = 100, 2, 1
    plan = FaultPlan(rate=0.2, seed=7, retry_after="0")
    output = tmp_path / "results.jsonl"
    # The client timeout only has to cut off injected hangs (which last hang_limit); healthy answers get
    # 10 s, so a busy machine does not turn them into extra, uninjected timeouts.
    with FakeLLMServer(faults=plan, hang_limit=60) as server:
        results = classify_many(
            numbered_traces(n),
            model="openai/fake-judge",
            api_base=server.base_url,
            api_key="sk-test",
            timeout=10.0,
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


@pytest.mark.timeout(900)
def test_the_cache_stays_consistent_under_concurrent_processes_and_threads(tmp_path: Path) -> None:
    import subprocess
    import sys

    from mast.judge.cache import JudgeCache

    folder = tmp_path / "cache"
    writers = [
        subprocess.Popen([sys.executable, "-c", _CACHE_WRITER, str(folder), str(w)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for w in range(4)
    ]
    outputs = [(p.wait(timeout=600), p.stdout.read().decode() if p.stdout else "") for p in writers]
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
import sys
from mast.batch import ResultsFile
from mast.diagnosis import Diagnosis, JudgeInfo
with ResultsFile(sys.argv[1]) as out:
    for i in range(20):
        out.append(Diagnosis(trace_id=f"held-{i}", judge=JudgeInfo(taxonomy_version="mast-v3")))
    print("holding", flush=True)
    sys.stdin.readline()  # hold the file until the test says it is done (an event, not a sleep)
"""


@pytest.mark.timeout(600)
def test_a_second_writer_of_the_results_file_is_refused_in_one_line(tmp_path: Path) -> None:
    import subprocess
    import sys

    from mast.batch import ResultsFile
    from mast.errors import UsageError

    path = tmp_path / "results.jsonl"
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_RESULTS, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"holding"
        with pytest.raises(UsageError) as info:
            ResultsFile(path).open()
        assert "\n" not in str(info.value)
    finally:
        holder.communicate(b"done\n", timeout=300)
        assert holder.returncode == 0
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


@pytest.mark.timeout(900)
def test_two_processes_sharing_a_cache_agree_and_a_rerun_makes_no_request(tmp_path: Path) -> None:
    import subprocess
    import sys

    from mast.batch import classify_many, read_results

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
            out, err = run.communicate(timeout=600)
            assert run.returncode == 0 and out.strip() == b"30", err.decode()[-2000:]
        first = len(server.chat_requests)
        assert 30 <= first <= 60  # each trace judged at least once, at most once per process
        # A third run, in this process, over the same cache folder (MAST_CACHE_DIR is inherited).
        classify_many(
            numbered_traces(30), model="openai/fake-judge", api_base=server.base_url, api_key="sk-test",
            concurrency=8, output=tmp_path / "run2.jsonl",
        )
        assert len(server.chat_requests) == first  # everything came from the shared cache
    verdicts = [
        {d.trace_id: (d.status, d.present_codes) for d in read_results(tmp_path / f"run{n}.jsonl")} for n in range(3)
    ]
    assert verdicts[0] == verdicts[1] == verdicts[2] and len(verdicts[0]) == 30
    assert all(d.usage.cached for d in read_results(tmp_path / "run2.jsonl"))


# --- kill -9 of `mast label`, then resume --------------------------------------------------------

MAST = Path(sys.executable).parent / "mast"


def write_trace_folder(folder: Path, count: int) -> list[str]:
    """``count`` chat-message files whose text carries ``TRACE-<n>``; returns their trace ids."""
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        messages = [
            {"role": "user", "content": f"TRACE-{i:03d}: sort the list [3, 1, 2]"},
            {"role": "assistant", "content": f"sorted: [1, 2, 3] (run {i})"},
        ]
        (folder / f"run-{i:03d}.json").write_text(orjson.dumps(messages).decode())
    return [trace.trace_id for path in sorted(folder.iterdir()) for trace in [load_trace(path)]]


def valid_lines(path: Path) -> list[dict[str, Any]]:
    """The results file's whole lines (a torn last line, if any, is left out)."""
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")
    whole = lines[:-1]  # after the last newline comes either nothing or a torn line
    return [orjson.loads(line) for line in whole if line.strip()]


def trace_of(line: dict[str, Any]) -> int:
    return int(Path(line["source"]["path"]).stem.split("-")[1])


@pytest.mark.timeout(900)
def test_kill_9_at_random_points_then_resume_judges_every_trace_exactly_once(tmp_path: Path) -> None:
    rng = random.Random(20250611)
    count = 60
    folder = tmp_path / "runs"
    ids = write_trace_folder(folder, count)
    output = tmp_path / "results.jsonl"
    # 60 traces x 0.3 s / 2 at a time: about 9 s of work, so four kills land mid-batch.
    with FakeLLMServer(latency=0.3) as server:
        command = [
            str(MAST), "label", str(folder), "-o", str(output), "--model", "openai/fake-judge",
            "--api-base", server.base_url, "--api-key", "sk-test", "--no-cache", "--no-hints", "-j", "2",
        ]
        frozen: dict[int, int] = {}  # trace -> requests it had when its line was already on disk
        kills = 0
        for round_ in range(4):
            before = len(server.chat_requests)
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            # Kill at a random moment: some rounds before any request (start-up, reading), most mid-batch.
            # Round 0 first waits for a line on disk, so some trace is surely done before a kill however
            # slow the machine is (bounded waits on events; the random part only moves the kill).
            deadline = time.monotonic() + 300
            if round_ != 1:
                while len(server.chat_requests) == before and process.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.02)
            if round_ == 0:
                while not valid_lines(output) and process.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.02)
            time.sleep(rng.uniform(0.0, 1.2))
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
                kills += 1
            process.wait(timeout=300)
            per_trace = requests_per_trace(server)
            for line in valid_lines(output):
                frozen.setdefault(trace_of(line), per_trace[trace_of(line)])
            if round_ == 2:
                # Also a torn last line, as a power cut in the middle of a write would leave.
                with output.open("ab") as fh:
                    fh.write(b'{"schema_version": "mast-diagnosis/1", "trace_id": "torn')
        assert kills == 4
        assert 0 < len(frozen) < count  # the kills really interrupted the work
        final = subprocess.run(command, capture_output=True, timeout=600)
        assert final.returncode == 0, final.stderr.decode()[-2000:]
        per_trace = requests_per_trace(server)
    # Valid JSONL: every line parses, the file ends with a newline, no torn tail is left.
    raw = output.read_bytes()
    assert raw.endswith(b"\n")
    lines = [orjson.loads(line) for line in raw.splitlines()]
    # Every trace exactly once, judged.
    assert sorted(line["trace_id"] for line in lines) == sorted(ids)
    assert all(line["status"] == "judged" for line in lines)
    # Traces already on disk at a kill were never sent again.
    for trace, requests in frozen.items():
        assert per_trace[trace] == requests, f"trace {trace} was judged again after it was written"
    assert set(per_trace) == set(range(count))


# --- a corpus of bad inputs through `mast label` ------------------------------------------------

MEMORY_BOUND_MB = 1536
"""Peak RSS allowed for `mast label` over the bad-input corpus, whose largest file is a 50 MB line."""

_MEASURE = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], capture_output=True)
sys.stdout.buffer.write(done.stdout)
sys.stderr.buffer.write(done.stderr)
print(f"\\nPEAK_RSS_KB={resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}", file=sys.stderr)
sys.exit(done.returncode)
"""


def write_bad_corpus(root: Path) -> dict[str, str]:
    """Hostile files beside good ones; returns ``name -> words expected in its error``."""
    root.mkdir(parents=True)
    good = [{"role": "user", "content": "sort [3, 1, 2]"}, {"role": "assistant", "content": "[1, 2, 3]"}]
    (root / "good.json").write_text(orjson.dumps(good).decode())
    (root / "truncated.json").write_text(orjson.dumps(good).decode()[:30])
    (root / "binary.json").write_bytes(bytes(range(256)) * 40)
    (root / "empty.json").write_bytes(b"")
    (root / "blank.jsonl").write_text("\n\n   \n")
    (root / "wrong_shape.json").write_text('{"hello": "world", "n": [1, 2, 3]}')
    (root / "numbers.json").write_text("[1, 2, 3]")
    (root / "invalid_utf8.json").write_bytes(b'[{"role": "user", "content": "caf\xe9 \xff\xfe"}]')
    (root / "deep_lists.json").write_text("[" * 100_000 + "]" * 100_000)
    (root / "deep_objects.json").write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    # A YAML alias bomb: 9^9 references if anything walked it naively.
    bomb = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(8):
        prev, name = chr(97 + i), chr(98 + i)
        bomb.append(f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]")
    (root / "alias_bomb.yaml").write_text("\n".join(bomb) + "\n")
    # One 50 MB line: a valid message list whose first message is enormous.
    with open(root / "huge_line.jsonl", "wb") as fh:
        fh.write(b'[{"role": "user", "content": "')
        chunk = b"lorem ipsum dolor sit amet " * 40_000
        for _ in range(50 * 2**20 // len(chunk) + 1):
            fh.write(chunk)
        fh.write(b'"}, {"role": "assistant", "content": "done"}]')
    loops = root / "loops"
    loops.mkdir()
    os.symlink("..", loops / "up")  # folder loops: never followed
    os.symlink(loops, loops / "self")
    os.symlink("b.json", loops / "a.json")  # a file symlink loop
    os.symlink("a.json", loops / "b.json")
    os.mkfifo(root / "pipe.json")  # reading it would block forever
    return {
        "truncated.json": "does not parse",
        "binary.json": "binary",
        "empty.json": "empty",
        "blank.jsonl": "whitespace",
        "wrong_shape.json": "no known trace format",
        "numbers.json": "no known trace format",
        "deep_lists.json": "",
        "deep_objects.json": "",
        "alias_bomb.yaml": "",
        "loops/a.json": "symbolic link",
        "loops/b.json": "symbolic link",
        "pipe.json": "not a regular file",
    }


@pytest.mark.timeout(900)
def test_bad_inputs_each_give_one_line_and_the_batch_goes_on_within_memory(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    expected = write_bad_corpus(root)
    output = tmp_path / "results.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(MAST), "label", str(root), "-o", str(output), "--no-progress"],
        capture_output=True,
        timeout=850,
    )
    stderr = done.stderr.decode()
    assert "Traceback" not in stderr
    assert done.returncode == 2, stderr[-3000:]  # input files that could not be read
    lines = stderr.splitlines()
    for name, words in expected.items():
        mentions = [line for line in lines if f"{root}/{name}:" in line]
        assert len(mentions) == 1, (name, mentions)
        assert words in mentions[0], (name, mentions[0])
    # The good traces were judged anyway, the 50 MB one included; so was the file with bytes that are
    # not UTF-8 (read with replacement characters and a warning, never skipped).
    judged = {Path(line["source"]["path"]).name for line in valid_lines(output) if line["status"] == "judged"}
    assert {"good.json", "huge_line.jsonl", "invalid_utf8.json"} <= judged
    assert not any("invalid_utf8.json:" in line for line in lines)
    peak_mb = int(stderr.rsplit("PEAK_RSS_KB=", 1)[1].split()[0]) / 1024
    assert peak_mb < MEMORY_BOUND_MB, f"peak RSS {peak_mb:.0f} MB"
