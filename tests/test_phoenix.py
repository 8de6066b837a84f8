"""mast against a real Arize Phoenix server: read traces, label them, write back, watch, restart.

One ``phoenix serve`` per test run (session fixture, SQLite in the run's tmp dir, telemetry off,
stopped by PID). Runs are sent as OpenInference spans through opentelemetry-sdk's OTLP exporter;
the judge is the real litellm path against :class:`mast.testing.FakeLLMServer`. Each test uses its
own Phoenix project, so the tests do not see each other's traces.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _phoenix import (
    PhoenixServer,
    load_runs,
    otlp_exporter,
    phoenix_server,
    send_run,
    span_count,
    wait_for_spans,
)
from click.testing import CliRunner

from mast.batch.table import read_results
from mast.cli import main
from mast.integrations.phoenix import FIRST_FAILURE_NAME, IDENTIFIER, SUMMARY_NAME, read_annotations
from mast.normalize import iter_traces
from mast.sources import TraceQuery, open_source
from mast.testing import FakeLLMServer, Reply, judge_answer, quote_steps
from mast.trace import Trace

pytestmark = pytest.mark.phoenix


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PhoenixServer]:
    reuse = os.environ.get("PHOENIX_TEST_BASE_URL")  # development only: a server you started yourself
    if reuse:
        yield PhoenixServer(base_url=reuse, pid=-1, log=Path(os.devnull))
        return
    with phoenix_server(tmp_path_factory.mktemp("phoenix")) as server:
        yield server


def _send(server: PhoenixServer, project: str, runs: list[dict[str, Any]], *, first: int = 0) -> list[str]:
    ids = [send_run(otlp_exporter(server), run, project=project, offset=first + i) for i, run in enumerate(runs)]
    wait_for_spans(server, project, ids, sum(span_count(r) for r in runs))
    return ids


def _verification_responder(body: dict[str, Any]) -> Reply:
    """3.2 present with a real quote from the last step; everything else absent."""
    quotes = quote_steps(body)
    step, quote = quotes[-1]
    answer = judge_answer(["3.2"], evidence={"3.2": [(step, quote)]}, confidence=0.9,
                          first_failure={"step": step, "agent": None, "code": "3.2", "explanation": "no check was run"})
    return Reply(content=answer)


def _judge_args(server: FakeLLMServer) -> list[str]:
    return ["--model", "openai/fake", "--api-base", server.base_url, "--api-key", "x"]


def _label(*args: Any) -> Any:
    return CliRunner().invoke(main, ["label", *map(str, args)], catch_exceptions=False)


def test_phoenix_traces_normalise_like_the_otlp_file_export_of_the_same_spans(
    phoenix: PhoenixServer, tmp_path: Path
) -> None:
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace.export import SpanExportResult
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    to_phoenix = otlp_exporter(phoenix)

    class Both(InMemorySpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            memory.export(spans)
            return to_phoenix.export(spans)

    runs = load_runs()[:2]
    ids = [send_run(Both(), run, project="same-steps", offset=i) for i, run in enumerate(runs)]
    wait_for_spans(phoenix, "same-steps", ids, sum(span_count(r) for r in runs))
    export = tmp_path / "export.json"
    export.write_text(MessageToJson(encode_spans(memory.get_finished_spans())))
    from_file = {t.trace_id: t for t in iter_traces(export) if isinstance(t, Trace)}

    source = open_source(phoenix.url("same-steps"))
    from_phoenix = source.read(ids)
    source.close()
    assert set(from_file) == set(from_phoenix) == set(ids)
    for trace_id in ids:
        a, b = from_file[trace_id], from_phoenix[trace_id]
        assert [(s.kind, s.agent, s.role, s.content, s.id) for s in a.steps] == \
               [(s.kind, s.agent, s.role, s.content, s.id) for s in b.steps]
        assert a.task == b.task and a.final_output == b.final_output
        assert a.content_hash() == b.content_hash()
        assert b.source.path == phoenix.url("same-steps") and b.source.format == "phoenix"


def test_filters_select_traces_by_root_name_id_limit_and_time(
    phoenix: PhoenixServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mast.sources.phoenix as reader

    runs = load_runs()
    ids = _send(phoenix, "filters", runs)
    source = open_source(phoenix.url("filters"))
    whole = source.read(ids)
    # Pages of 3 spans and one trace id per request: the cursor is followed to the end.
    monkeypatch.setattr(reader, "PAGE", 3)
    monkeypatch.setattr(reader, "IDS_PER_REQUEST", 1)
    paged = source.read(ids)
    assert {t: x.content_hash() for t, x in paged.items()} == {t: x.content_hash() for t, x in whole.items()}
    assert source.span_counts(ids) == {t: span_count(r) for t, r in zip(ids, runs, strict=True)}
    try:
        assert [r.trace_id for r in source.roots(TraceQuery())] == ids  # the order Phoenix received them
        assert [r.trace_id for r in source.roots(TraceQuery(root_names=["bug-fixer"]))] == [ids[1]]
        assert [r.trace_id for r in source.roots(TraceQuery(trace_ids=[ids[2]]))] == [ids[2]]
        assert [r.trace_id for r in source.roots(TraceQuery(limit=2))] == ids[2:]  # the two newest
        roots = list(source.roots(TraceQuery()))
        assert [r.trace_id for r in source.roots(TraceQuery(since=roots[1].start))] == ids[1:]
        assert [r.trace_id for r in source.roots(TraceQuery(until=roots[1].start))] == ids[:1]
        assert [r.trace_id for r in source.roots(TraceQuery(after=roots[1].position))] == ids[2:]
    finally:
        source.close()


def test_label_write_back_annotations_read_back_and_rerun_updates_in_place(
    phoenix: PhoenixServer, tmp_path: Path
) -> None:
    from phoenix.client import Client

    ids = _send(phoenix, "write-back", load_runs()[:2])
    url = phoenix.url("write-back")
    out = tmp_path / "results.jsonl"
    with FakeLLMServer(_verification_responder) as llm:
        result = _label(url, "-o", out, *_judge_args(llm), "--write-back")
        assert result.exit_code == 0, result.output
        assert len(llm.chat_requests) == 2
    diagnoses = {d.trace_id: d for d in read_results(out)}
    assert set(diagnoses) == set(ids)

    first = read_annotations(url, ids)
    assert len(first) == 2 * 15  # 14 assessed modes + the summary, per trace
    source = open_source(url)
    traces = source.read(ids)
    source.close()
    for trace_id in ids:
        mine = {a["name"]: a for a in first if a["trace_id"] == trace_id}
        diagnosis = diagnoses[trace_id]
        verdict = diagnosis.verdict("3.2")
        mode = mine[f"mast.3.2 {verdict.name}"]
        assert mode["result"]["label"] == "present" and mode["result"]["score"] == pytest.approx(0.9)
        evidence = verdict.evidence[0]
        assert f"[S{evidence.step}]" in mode["result"]["explanation"]
        assert evidence.quote in mode["result"]["explanation"]
        assert mode["annotator_kind"] == "LLM" and mode["identifier"] == IDENTIFIER
        assert mine[f"mast.1.1 {diagnosis.verdict('1.1').name}"]["result"]["label"] == "absent"
        summary = mine[SUMMARY_NAME]
        assert summary["result"]["label"] == "3.2"
        assert summary["metadata"]["judge_model"] == "openai/fake"
        assert summary["metadata"]["prompt_hash"] == diagnosis.judge.prompt_hash
        # The first failure sits on the span its step came from.
        step = traces[trace_id].steps[diagnosis.first_failure.step]  # type: ignore[union-attr]
        span_id = step.id or step.parent_id
        client = Client(base_url=phoenix.base_url)
        on_span = client.spans.get_span_annotations(span_ids=[span_id], project_identifier="write-back")
        assert [(a["name"], a["result"]["label"]) for a in on_span] == [(FIRST_FAILURE_NAME, "3.2")]

    # Pushing again (same verdicts) updates the same annotations: same ids, no duplicates.
    pushed = CliRunner().invoke(main, ["push", str(out), url, "--json"], catch_exceptions=False)
    assert pushed.exit_code == 0, pushed.output
    assert json.loads(pushed.stdout)["trace_annotations"] == 30
    again = read_annotations(url, ids)
    assert sorted(a["id"] for a in again) == sorted(a["id"] for a in first)


def test_detector_verdicts_are_code_annotations_and_unassessed_modes_are_not_written(
    phoenix: PhoenixServer, tmp_path: Path
) -> None:
    ids = _send(phoenix, "detectors", load_runs()[2:3])
    url = phoenix.url("detectors")
    result = _label(url, "-o", tmp_path / "r.jsonl", "--judge", "detectors", "--write-back")
    assert result.exit_code == 0, result.output
    diagnosis = read_results(tmp_path / "r.jsonl")[0]
    assessed = {f"mast.{v.code} {v.name}" for v in diagnosis.failure_modes if v.present is not None}
    assert 0 < len(assessed) < 14
    names = {a["name"] for a in read_annotations(url, ids)}
    assert names == assessed | {SUMMARY_NAME}
    assert {a["annotator_kind"] for a in read_annotations(url, ids)} == {"CODE"}


def _watch_env(llm: FakeLLMServer) -> dict[str, str]:
    return {**os.environ, "MAST_MODEL": "openai/fake", "MAST_API_BASE": llm.base_url, "MAST_API_KEY": "x",
            "MAST_CONCURRENCY": "1"}


def _watch(url: str, out: Path, llm: FakeLLMServer, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mast", "watch", url, "-o", str(out), "--quiet", "0s", "--once",
                           *extra], env=_watch_env(llm), capture_output=True, text=True, timeout=300)


def test_watch_labels_only_the_traces_that_arrived_since(phoenix: PhoenixServer, tmp_path: Path) -> None:
    runs = load_runs()
    url = phoenix.url("watch")
    out = tmp_path / "results.jsonl"
    old = _send(phoenix, "watch", runs[:2])
    with FakeLLMServer() as llm:
        assert _label(url, "-o", out, *_judge_args(llm)).exit_code == 0
        assert len(llm.chat_requests) == 2
        new = _send(phoenix, "watch", runs[2:], first=2)
        done = _watch(url, out, llm)
        assert done.returncode == 0, done.stderr
        assert len(llm.chat_requests) == 4  # the two new traces only
        assert {d.trace_id for d in read_results(out)} == set(old + new)
        judged_now = [r.text for r in llm.chat_requests[2:]]
        for run in runs[2:]:
            assert sum(run["task"] in text for text in judged_now) == 1
        for run in runs[:2]:
            assert not any(run["task"] in text for text in judged_now)
        # Nothing new: the next poll asks nothing.
        assert _watch(url, out, llm).returncode == 0
        assert len(llm.chat_requests) == 4
    lines = [json.loads(line)["trace_id"] for line in out.read_text().splitlines()]
    assert sorted(lines) == sorted(old + new)  # each trace once


def test_watch_killed_mid_run_and_restarted_loses_nothing_and_labels_nothing_twice(
    phoenix: PhoenixServer, tmp_path: Path
) -> None:
    runs = load_runs()
    url = phoenix.url("restart")
    out = tmp_path / "results.jsonl"
    ids = _send(phoenix, "restart", runs)
    calls: list[int] = []

    def third_hangs(body: dict[str, Any]) -> Reply | None:
        calls.append(1)
        return Reply(hang=True) if len(calls) == 3 else None

    with FakeLLMServer(third_hangs, hang_limit=120) as llm:
        port = llm.port
        watcher = subprocess.Popen(
            [sys.executable, "-m", "mast", "watch", url, "-o", str(out), "--quiet", "0s", "--every", "1s"],
            env=_watch_env(llm), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        try:
            deadline = time.monotonic() + 240
            while not (len(llm.chat_requests) >= 3 and out.exists() and len(out.read_text().splitlines()) >= 2):
                assert watcher.poll() is None, watcher.stderr.read().decode() if watcher.stderr else ""
                assert time.monotonic() < deadline, "the watcher never reached the third trace"
                time.sleep(0.1)  # bounded wait on the watcher's progress (its file and the server's log)
        finally:
            os.killpg(watcher.pid, signal.SIGKILL)
            watcher.wait()
        assert len(out.read_text().splitlines()) == 2  # killed while the third was in flight
    with FakeLLMServer(port=port) as llm:  # the restarted watcher talks to the same endpoint
        done = _watch(url, out, llm)
        assert done.returncode == 0, done.stderr
        assert len(llm.chat_requests) == 2  # the one in flight when killed, and the last one
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(d["trace_id"] for d in lines) == sorted(ids)
    assert {d["status"] for d in lines} == {"judged"}


def _gold_events(trace_ids: list[str]) -> list[Any]:
    from mast.gold import GoldEvent, trace_key

    events = []
    for n, trace_id in enumerate(trace_ids):
        key = trace_key("phoenix-run", n, trace_id)
        for reviewer, values in (("ana", ("present", "absent", "unsure")), ("bo", ("absent", "absent", "present"))):
            for code, value in zip(("1.3", "2.6", "3.2"), values, strict=True):
                events.append(GoldEvent(key=key, trace_id=trace_id, field="mode", code=code, value=value,
                                        reviewer=reviewer))
        events.append(GoldEvent(key=key, trace_id=trace_id, field="note", value=f"looked at {n}", reviewer="ana"))
    return events


def _cells(events: Any) -> set[tuple[Any, ...]]:
    from mast.gold import current_cells

    return {(e.trace_id, e.field, e.code, e.value, e.reviewer) for e in current_cells(events).values()}


def test_gold_goes_to_phoenix_as_human_annotations_and_reads_back_as_identical_cells(
    phoenix: PhoenixServer, tmp_path: Path
) -> None:
    from mast.gold import GoldEvent, GoldStore, iter_events

    ids = _send(phoenix, "gold-trip", load_runs()[:2])
    url = phoenix.url("gold-trip")
    gold = tmp_path / "gold.jsonl"
    gone = "ab" * 16  # reviewed, then dropped from the store (retention): its labels cannot go there
    events = _gold_events([*ids, gone])
    # A changed mind: the last value of the cell is the one that goes to Phoenix.
    events.append(GoldEvent(key=events[0].key, trace_id=ids[0], field="mode", code="1.3", value="absent",
                            reviewer="ana"))
    with GoldStore(gold) as store:
        store.append(events)

    for _ in range(2):  # the second export updates in place
        done = CliRunner().invoke(main, ["gold", "export", str(gold), url], catch_exceptions=False)
        assert done.exit_code == 1, done.output  # not every label arrived: a script sees it
        assert f"mast: {gone}: not in {url}; its 6 labels not written" in done.stderr
        assert "wrote 12 human labels on 2 traces" in done.stdout
    rows = read_annotations(url, ids, identifier=None)
    assert len(rows) == 12  # 2 traces x 3 modes x 2 reviewers, no duplicate after the rerun
    assert {r["annotator_kind"] for r in rows} == {"HUMAN"}
    first = [r for r in rows if r["trace_id"] == ids[0] and r["metadata"]["reviewer"] == "ana"]
    assert {r["name"].split(" ")[0]: r["result"]["label"] for r in first} == {
        "mast.1.3": "absent", "mast.2.6": "absent", "mast.3.2": "unsure"}
    assert {r["result"].get("explanation") for r in first} == {"looked at 0"}

    back = tmp_path / "back.jsonl"
    imported = CliRunner().invoke(main, ["gold", "import", url, "-o", str(back)], catch_exceptions=False)
    assert imported.exit_code == 0, imported.output
    assert _cells(iter_events(back)) == {c for c in _cells(iter_events(gold)) if c[0] != gone}
