"""mast against a real MLflow tracking server: read traces, label them, write feedback back, rerun, watch.

One ``mlflow server`` per test run (session fixture, SQLite in the run's tmp dir, job execution off,
one worker, stopped by PID). Runs are logged by MLflow's own tracing API in a separate process, as
a user's agent would (``tests/_mlflow_agent.py``), and feedback is read back with MLflow's client in
the same way; the judge is the real litellm path against :class:`mast.testing.FakeLLMServer`. Each
test uses its own experiment.
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

import httpx
import pytest
from _mlflow import MLflowServer, feedback, log_runs, mlflow_server
from _phoenix import load_runs, span_count
from click.testing import CliRunner

import mast
from mast.batch.table import read_results
from mast.cli import main
from mast.integrations.mlflow import FIRST_FAILURE_NAME, SUMMARY_NAME
from mast.normalize import iter_traces
from mast.sources import TraceQuery, open_source
from mast.testing import FakeLLMServer, Reply, judge_answer, quote_steps
from mast.trace import Trace

pytestmark = pytest.mark.mlflow


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MLflowServer]:
    reuse = os.environ.get("MLFLOW_TEST_BASE_URL")  # development only: a server you started yourself
    if reuse:
        yield MLflowServer(base_url=reuse, pid=-1, log=Path(os.devnull))
        return
    with mlflow_server(tmp_path_factory.mktemp("mlflow")) as started:
        yield started


def _responder(code: str) -> Any:
    """``code`` present with a real quote from the last step; everything else absent."""
    def respond(body: dict[str, Any]) -> Reply:
        step, quote = quote_steps(body)[-1]
        return Reply(content=judge_answer([code], evidence={code: [(step, quote)]}, confidence=0.9, first_failure={
            "step": step, "agent": None, "code": code, "explanation": "no check was run"}))
    return respond


def _judge_args(llm: FakeLLMServer) -> list[str]:
    return ["--model", "openai/fake", "--api-base", llm.base_url, "--api-key", "x"]


def _label(*args: Any) -> Any:
    return CliRunner().invoke(main, ["label", *map(str, args)], catch_exceptions=False)


def _by_name(entries: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for entry in entries:
        out.setdefault(entry["assessment_name"], []).append(entry)
    return out


def _mast_only(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in entries if str(e["source"]["source_id"]).startswith("mast/")]


def test_mlflow_traces_normalise_like_the_otlp_export_and_filters_select(
    server: MLflowServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mast.sources.mlflow as reader

    runs = load_runs()
    export = tmp_path / "export.json"
    prod = log_runs(server, "same-steps", runs[:2], tags={"env": "prod"}, otlp=export)
    other = log_runs(server, "same-steps", runs[2:3])
    ids = prod + other
    url = server.url("same-steps")

    from_file = [t for t in iter_traces(export) if isinstance(t, Trace)]
    source = open_source(url)
    try:
        from_mlflow = source.read(prod)
        assert list(from_mlflow) == prod
        for a, trace_id in zip(from_file, prod, strict=True):
            b = from_mlflow[trace_id]
            assert [(s.kind, s.agent, s.role, s.content, s.id) for s in a.steps] == \
                   [(s.kind, s.agent, s.role, s.content, s.id) for s in b.steps]
            assert len(b.steps) > 5 and {"llm", "tool_call"} <= {s.kind for s in b.steps}
            assert a.task == b.task and a.final_output == b.final_output
            assert a.content_hash() == b.content_hash()
            assert b.source.path == url and b.source.format == "mlflow" and b.trace_id.startswith("tr-")

        # Filters: MLflow's own, by id, by name, the newest N, by start time, after a position.
        assert [r.trace_id for r in source.roots(TraceQuery())] == ids
        assert [r.trace_id for r in source.roots(TraceQuery(filter="tags.env = 'prod'"))] == prod
        assert [r.trace_id for r in source.roots(TraceQuery(trace_ids=[ids[1]]))] == [ids[1]]
        assert [r.trace_id for r in source.roots(TraceQuery(root_names=[runs[2]["name"]]))] == other
        assert [r.trace_id for r in source.roots(TraceQuery(limit=2))] == ids[1:]
        roots = list(source.roots(TraceQuery()))
        assert [r.trace_id for r in source.roots(TraceQuery(since=roots[1].start))] == ids[1:]
        assert [r.trace_id for r in source.roots(TraceQuery(until=roots[1].start))] == ids[:1]
        assert [r.trace_id for r in source.roots(TraceQuery(after=roots[0].position))] == ids[1:]
        assert source.span_counts(ids[:2]) == {t: span_count(r) for t, r in zip(ids[:2], runs[:2], strict=True)}

        # A page of one trace and one id per request: the page token is followed to the end.
        monkeypatch.setattr(reader, "PAGE", 1)
        monkeypatch.setattr(reader, "IDS_PER_REQUEST", 1)
        assert [r.trace_id for r in source.roots(TraceQuery())] == ids
        paged = source.read(ids)
        assert {t: x.content_hash() for t, x in paged.items() if t in prod} == \
               {t: x.content_hash() for t, x in from_mlflow.items()}
    finally:
        source.close()
    # Input errors, exit 2 both: an experiment the server lacks, a trace id the experiment lacks.
    bad = _label(server.url("no-such-experiment"), "-o", tmp_path / "r.jsonl", "--judge", "detectors")
    assert bad.exit_code == 2 and "no experiment 'no-such-experiment'" in bad.output
    missing = _label(url, "-o", tmp_path / "r.jsonl", "--judge", "detectors", "--trace-id", "tr-doesnotexist")
    assert missing.exit_code == 2, missing.output
    assert "tr-doesnotexist" in missing.output and "not found in" in missing.output and url in missing.output
    assert "mast normalize" not in missing.output
    assert not (tmp_path / "r.jsonl").exists() or (tmp_path / "r.jsonl").read_text() == ""


def test_write_back_one_feedback_per_mode_idempotent_and_updated_in_place(
    server: MLflowServer, tmp_path: Path
) -> None:
    ids = log_runs(server, "write-back", load_runs()[:2])
    url = server.url("write-back")
    out = tmp_path / "results.jsonl"
    with FakeLLMServer(_responder("3.2")) as llm:
        port = llm.port
        result = _label(url, "-o", out, *_judge_args(llm), "--write-back")
        assert result.exit_code == 0, result.output
        assert len(llm.chat_requests) == 2
    assert "wrote feedback for 2 traces" in result.output
    diagnoses = {d.trace_id: d for d in read_results(out)}
    assert set(diagnoses) == set(ids)

    first = feedback(server, ids)  # read back with MLflow's own client
    source = open_source(url)
    traces = source.read(ids)
    source.close()
    for trace_id in ids:
        mine = _by_name(first[trace_id])
        diagnosis = diagnoses[trace_id]
        assert len(mine) == 14 + 2 and all(len(v) == 1 for v in mine.values())  # 14 modes, summary, first failure
        verdict = diagnosis.verdict("3.2")
        mode = mine[f"mast.3.2 {verdict.name}"][0]
        assert mode["feedback"]["value"] is True
        assert mode["source"] == {"source_type": "LLM_JUDGE", "source_id": "mast/openai/fake"}
        evidence = verdict.evidence[0]
        assert f"[S{evidence.step}]" in mode["rationale"] and evidence.quote in mode["rationale"]
        assert mode["metadata"]["confidence"] == "0.9"
        assert mode["metadata"]["prompt_hash"] == diagnosis.judge.prompt_hash
        assert mode["metadata"]["taxonomy_version"] == diagnosis.judge.taxonomy_version
        assert mode["metadata"]["model"] == "openai/fake"
        assert mine[f"mast.1.1 {diagnosis.verdict('1.1').name}"][0]["feedback"]["value"] is False
        assert mine[SUMMARY_NAME][0]["feedback"]["value"] == "3.2"
        # The first failure sits on the span its step came from.
        step = traces[trace_id].steps[diagnosis.first_failure.step]  # type: ignore[union-attr]
        on_span = mine[FIRST_FAILURE_NAME][0]
        assert on_span["span_id"] == (step.id or step.parent_id) and on_span["feedback"]["value"] == "3.2"

    # Someone's own feedback on the trace is never touched.
    human = {"assessment": {"assessment_name": "helpful", "trace_id": ids[0], "feedback": {"value": True},
                            "source": {"source_type": "HUMAN", "source_id": "ana@example.com"}}}
    httpx.post(f"{server.base_url}/api/3.0/mlflow/traces/{ids[0]}/assessments", json=human).raise_for_status()

    # The same command again (the same endpoint): nothing judged, nothing added, every entry the same one.
    with FakeLLMServer(_responder("3.2"), port=port) as llm:
        again = _label(url, "-o", out, *_judge_args(llm), "--write-back")
        assert again.exit_code == 0, again.output
        assert llm.chat_requests == []
    second = feedback(server, ids)
    for trace_id in ids:
        assert sorted(e["assessment_id"] for e in _mast_only(second[trace_id])) == \
               sorted(e["assessment_id"] for e in first[trace_id])
    assert [e["assessment_name"] for e in second[ids[0]] if e["source"]["source_type"] == "HUMAN"] == ["helpful"]

    # mast.label in Python, another verdict (1.1 instead of 3.2): the same entries, updated in place.
    with FakeLLMServer(_responder("1.1")) as llm:
        report = mast.label(url, output=tmp_path / "other.jsonl", sinks=["mlflow"], model="openai/fake", cache=False,
                            api_base=llm.base_url, api_key="x")
    assert report.statuses["judged"] == 2 and report.total == 2
    third = feedback(server, ids)
    for trace_id in ids:
        names = _by_name(_mast_only(third[trace_id]))
        assert sorted(e["assessment_id"] for v in names.values() for e in v) == \
               sorted(e["assessment_id"] for e in first[trace_id])
        assert names[SUMMARY_NAME][0]["feedback"]["value"] == "1.1"
        assert next(v for k, v in names.items() if k.startswith("mast.1.1 "))[0]["feedback"]["value"] is True
        assert next(v for k, v in names.items() if k.startswith("mast.3.2 "))[0]["feedback"]["value"] is False

    # mast push from the first results file: the 3.2 verdicts again, in the same entries.
    pushed = CliRunner().invoke(main, ["push", str(out), url, "--json"], catch_exceptions=False)
    assert pushed.exit_code == 0, pushed.output
    assert json.loads(pushed.stdout)["traces"] == 2 and json.loads(pushed.stdout)["created"] == 0
    fourth = feedback(server, ids)
    for trace_id in ids:
        names = _by_name(_mast_only(fourth[trace_id]))
        assert names[SUMMARY_NAME][0]["feedback"]["value"] == "3.2"
        assert sorted(e["assessment_id"] for v in names.values() for e in v) == \
               sorted(e["assessment_id"] for e in first[trace_id])

    # The offline detectors: CODE feedback; modes they do not assess are no longer claimed.
    detectors = _label(url, "-o", tmp_path / "detectors.jsonl", "--judge", "detectors", "--write-back")
    assert detectors.exit_code == 0, detectors.output
    diagnosis = {d.trace_id: d for d in read_results(tmp_path / "detectors.jsonl")}[ids[0]]
    assessed = {f"mast.{v.code} {v.name}" for v in diagnosis.failure_modes if v.present is not None}
    assert 0 < len(assessed) < 14
    entries = feedback(server, ids[:1])[ids[0]]
    mine = [e for e in entries if e["source"]["source_id"] == "mast/detectors"]
    assert {e["assessment_name"] for e in mine} - {FIRST_FAILURE_NAME} == assessed | {SUMMARY_NAME}
    assert {e["source"]["source_type"] for e in mine} == {"CODE"}
    # Ownership is exact: the LLM judge's entries stay next to the detectors' ones.
    judge = [e for e in entries if e["source"]["source_id"] == "mast/openai/fake"]
    assert sorted(e["assessment_id"] for e in judge) == sorted(e["assessment_id"] for e in first[ids[0]])

    # Another tool whose source id merely starts with mast/ is never touched by a rerun.
    other = {"assessment": {"assessment_name": SUMMARY_NAME, "trace_id": ids[0], "feedback": {"value": "x"},
                            "source": {"source_type": "CODE", "source_id": "mast/other-tool"}}}
    httpx.post(f"{server.base_url}/api/3.0/mlflow/traces/{ids[0]}/assessments", json=other).raise_for_status()
    with FakeLLMServer(_responder("3.2")) as llm:
        rerun = _label(url, "-o", tmp_path / "fresh.jsonl", *_judge_args(llm), "--write-back")
        assert rerun.exit_code == 0, rerun.output
    last = feedback(server, ids[:1])[ids[0]]
    assert [e["feedback"]["value"] for e in last if e["source"]["source_id"] == "mast/other-tool"] == ["x"]
    assert len([e for e in last if e["source"]["source_id"] == "mast/detectors"]) == len(mine)
    assert len([e for e in last if e["source"]["source_id"] == "mast/openai/fake"]) == 16


def _written(out: Path) -> list[str]:
    """Trace ids of the results file so far (a line being written is not one yet)."""
    found: list[str] = []
    for line in out.read_text().splitlines() if out.exists() else []:
        try:
            found.append(json.loads(line)["trace_id"])
        except ValueError:
            pass  # the line being written
    return found


def _rest_feedback(server: MLflowServer, trace_id: str) -> list[dict[str, Any]]:
    """The trace's assessments straight from the REST API (cheap enough to poll)."""
    info = httpx.get(f"{server.base_url}/api/3.0/mlflow/traces/{trace_id}").raise_for_status().json()
    return list(info["trace"]["trace_info"].get("assessments") or [])


def _env(llm: FakeLLMServer) -> dict[str, str]:
    return {**os.environ, "MAST_MODEL": "openai/fake", "MAST_API_BASE": llm.base_url, "MAST_API_KEY": "x",
            "MAST_CONCURRENCY": "1"}


def test_kill_9_during_write_back_loses_nothing_and_the_rerun_adds_no_duplicate(
    server: MLflowServer, tmp_path: Path
) -> None:
    ids = log_runs(server, "killed", load_runs())
    url = server.url("killed")
    out = tmp_path / "results.jsonl"
    calls: list[int] = []
    verdict = _responder("3.2")

    def third_hangs(body: dict[str, Any]) -> Reply:
        calls.append(1)
        return Reply(hang=True) if len(calls) == 3 else verdict(body)

    with FakeLLMServer(third_hangs, hang_limit=120) as llm:
        port = llm.port
        run = subprocess.Popen([sys.executable, "-m", "mast", "label", url, "-o", str(out), "--write-back"],
                               env=_env(llm), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
        try:
            deadline = time.monotonic() + 240
            while not (len(llm.chat_requests) >= 3 and len(_written(out)) >= 2
                       and all(len(_rest_feedback(server, t)) == 16 for t in _written(out))):
                assert run.poll() is None, run.stderr.read().decode() if run.stderr else ""
                assert time.monotonic() < deadline, "the run never reached the third trace"
                time.sleep(0.2)  # bounded wait on the run's progress (its file and the server)
        finally:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    written = _written(out)
    assert len(written) == 2  # killed while the third was in flight
    before = {t: _rest_feedback(server, t) for t in ids}
    assert {t: len(before[t]) for t in ids} == {t: 16 if t in written else 0 for t in ids}
    # A duplicate of one entry, as a writer that only ever adds would leave after a crash.
    copy = {k: v for k, v in before[written[0]][0].items() if k in ("assessment_name", "trace_id", "source",
                                                                    "feedback", "rationale", "metadata", "span_id")}
    httpx.post(f"{server.base_url}/api/3.0/mlflow/traces/{written[0]}/assessments",
               json={"assessment": copy}).raise_for_status()
    assert len(_rest_feedback(server, written[0])) == 17

    with FakeLLMServer(_responder("3.2"), port=port) as llm:  # the rerun goes to the same endpoint
        done = subprocess.run([sys.executable, "-m", "mast", "label", url, "-o", str(out), "--write-back"],
                              env=_env(llm), capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        assert len(llm.chat_requests) == 2  # the one in flight when killed, and the last one
    after = feedback(server, ids)
    for trace_id in ids:
        names = _by_name(after[trace_id])
        assert len(names) == 16 and all(len(v) == 1 for v in names.values()), trace_id
    assert {e["assessment_id"] for e in after[written[1]]} == {e["assessment_id"] for e in before[written[1]]}


def test_watch_labels_only_new_traces_and_writes_their_feedback(server: MLflowServer, tmp_path: Path) -> None:
    runs = load_runs()
    url = server.url("watch")
    out = tmp_path / "results.jsonl"
    old = log_runs(server, "watch", runs[:2])
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with FakeLLMServer(_responder("3.2")) as llm:
            args = ["watch", url, "-o", str(out), "--quiet", "0s", "--once", "--write-back", *_judge_args(llm)]
            first = CliRunner().invoke(main, args, catch_exceptions=False)
            assert first.exit_code == 0, first.output
            assert len(llm.chat_requests) == 2
            new = log_runs(server, "watch", runs[2:3])
            # A long run: started an hour ago, before everything above, logged when it ended just now.
            new += log_runs(server, "watch", runs[3:4], started_s_ago=3600)
            second = CliRunner().invoke(main, args, catch_exceptions=False)
            assert second.exit_code == 0, second.output
            assert len(llm.chat_requests) == 4  # the two new traces only
            judged_now = " ".join(r.text for r in llm.chat_requests[2:])
            assert runs[2]["turns"][0]["output"] in judged_now and runs[3]["turns"][0]["output"] in judged_now
            third = CliRunner().invoke(main, args, catch_exceptions=False)
            assert third.exit_code == 0 and len(llm.chat_requests) == 4  # nothing new: nothing asked
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    assert sorted(d.trace_id for d in read_results(out)) == sorted(old + new)
    written = feedback(server, old + new)
    assert all(len(_by_name(written[t])) == 16 for t in old + new)
    assert new[1] in json.loads((tmp_path / "results.jsonl.watch.json").read_text())["position"]


def test_a_password_in_the_url_is_kept_out_of_results_and_output_and_write_back_still_works(
    server: MLflowServer, tmp_path: Path
) -> None:
    ids = log_runs(server, "userinfo", load_runs()[:1])
    plain = server.url("userinfo")
    url = plain.replace("mlflow://", "mlflow://u:urlpw@")
    out = tmp_path / "r.jsonl"
    result = _label(url, "-o", out, "--judge", "detectors", "--write-back")
    assert result.exit_code == 0, result.output
    assert "urlpw" not in result.output and f"wrote feedback for 1 traces to {plain}" in result.output
    assert "urlpw" not in out.read_text()
    assert [d.source.path for d in read_results(out)] == [plain]
    assert SUMMARY_NAME in _by_name(_mast_only(feedback(server, ids)[ids[0]]))
    watched = CliRunner().invoke(main, ["watch", url, "-o", str(tmp_path / "w.jsonl"), "--once", "--quiet", "0s",
                                        "--judge", "detectors", "--write-back"], catch_exceptions=False)
    assert watched.exit_code == 0, watched.output
    assert "urlpw" not in watched.output and "urlpw" not in (tmp_path / "w.jsonl.watch.json").read_text()
    assert [d.source.path for d in read_results(tmp_path / "w.jsonl")] == [plain]


def test_watch_counts_the_quiet_period_from_the_end_time_mlflow_gives(server: MLflowServer, tmp_path: Path) -> None:
    import asyncio
    from datetime import timedelta

    from mast.batch import ResultsFile, configured_judge
    from mast.batch.watch import Watcher
    from mast.judge.config import JudgeConfig

    ids = log_runs(server, "quiet", load_runs()[:1])
    url = server.url("quiet")
    judge = configured_judge(JudgeConfig.from_options(judge="detectors"))
    later = time.time() + 60  # the watcher first looks a minute after the trace ended
    with ResultsFile(tmp_path / "r.jsonl") as results:
        watcher = Watcher(url, results, judge, state_path=tmp_path / "state.json", quiet=timedelta(seconds=30),
                          clock=lambda: later)
        try:
            report = asyncio.run(watcher.poll())
        finally:
            watcher.close()
    assert report.new == 1 and [d.trace_id for d in report.labelled] == ids and report.pending == 0


def test_gold_goes_to_mlflow_as_human_feedback_and_reads_back_as_identical_cells(
    server: MLflowServer, tmp_path: Path
) -> None:
    from mast.gold import GoldEvent, GoldStore, current_cells, iter_events, trace_key

    ids = log_runs(server, "gold-trip", load_runs()[:2])
    url = server.url("gold-trip")
    gold = tmp_path / "gold.jsonl"
    gone = "tr-" + "ab" * 16  # reviewed, then deleted from the experiment: its labels cannot go there
    events = []
    for n, trace_id in enumerate([*ids, gone]):
        key = trace_key("mlflow-run", n, trace_id)
        for reviewer, values in (("ana", ("present", "absent", "unsure")), ("bo", ("absent", "absent", "present"))):
            for code, value in zip(("1.3", "2.6", "3.2"), values, strict=True):
                events.append(GoldEvent(key=key, trace_id=trace_id, field="mode", code=code, value=value,
                                        reviewer=reviewer))
        events.append(GoldEvent(key=key, trace_id=trace_id, field="note", value=f"looked at {n}", reviewer="ana"))
    with GoldStore(gold) as store:
        store.append(events)

    for _ in range(2):
        done = CliRunner().invoke(main, ["gold", "export", str(gold), url], catch_exceptions=False)
        assert done.exit_code == 1, done.output  # not every label arrived: a script sees it
        assert f"mast: {gone}: not in {url}; its 6 labels not written" in done.stderr
        assert "wrote 12 human labels on 2 traces" in done.stdout
    seen = feedback(server, ids)
    human = {t: [e for e in entries if e["source"]["source_type"] == "HUMAN"] for t, entries in seen.items()}
    assert [len(human[t]) for t in ids] == [6, 6]  # 3 modes x 2 reviewers; the rerun added none
    ana = {e["assessment_name"].split(" ")[0]: e for e in human[ids[0]] if e["source"]["source_id"] == "ana"}
    assert ana["mast.1.3"]["feedback"]["value"] is True
    assert ana["mast.2.6"]["feedback"]["value"] is False
    assert ana["mast.3.2"]["feedback"]["value"] == "unsure"
    assert ana["mast.1.3"]["rationale"] == "looked at 0"

    # bo changes his mind on one cell: the export updates that entry, adds none.
    with GoldStore(gold) as store:
        store.append([GoldEvent(key=events[0].key, trace_id=ids[0], field="mode", code="3.2", value="absent",
                                reviewer="bo")])
    CliRunner().invoke(main, ["gold", "export", str(gold), url], catch_exceptions=False)
    after = [e for e in feedback(server, ids)[ids[0]] if e["source"]["source_type"] == "HUMAN"]
    assert len(after) == 6
    bo = {e["assessment_name"].split(" ")[0]: e for e in after if e["source"]["source_id"] == "bo"}
    assert bo["mast.3.2"]["feedback"]["value"] is False

    back = tmp_path / "back.jsonl"
    imported = CliRunner().invoke(main, ["gold", "import", url, "-o", str(back)], catch_exceptions=False)
    assert imported.exit_code == 0, imported.output

    def cells(path: Path) -> set[tuple[Any, ...]]:
        return {(e.trace_id, e.field, e.code, e.value, e.reviewer) for e in current_cells(iter_events(path)).values()}

    assert cells(back) == {c for c in cells(gold) if c[0] != gone}
