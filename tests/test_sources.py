"""Trace-store URLs, auth, time filters and the shape of written-back annotations (no server needed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from mast.cli import main
from mast.cli._source_options import parse_duration, parse_time
from mast.diagnosis import Diagnosis, ErrorInfo, Evidence, FirstFailure, JudgeInfo, ModeVerdict
from mast.errors import UsageError
from mast.integrations.phoenix import SUMMARY_NAME, annotations_for
from mast.sources import is_source_url, open_source
from mast.sources.phoenix import PhoenixSource, PhoenixURL


@pytest.mark.parametrize(("url", "base", "project"), [
    ("phoenix://localhost:6006/default", "http://localhost:6006", "default"),
    ("phoenixs://phoenix.example.com/team-a", "https://phoenix.example.com", "team-a"),
    ("phoenix+https://example.com:8443/prefix/proj", "https://example.com:8443/prefix", "proj"),
])
def test_store_urls_name_the_server_scheme_and_project(url: str, base: str, project: str) -> None:
    assert is_source_url(url)
    assert PhoenixURL.parse(url) == PhoenixURL(base_url=base, project=project)


def test_a_url_without_a_project_or_of_an_unknown_store_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="PROJECT"):
        PhoenixURL.parse("phoenix://localhost:6006")
    assert not is_source_url("runs/trace.json") and not is_source_url("s3://bucket/x")
    with pytest.raises(UsageError, match="not a trace store URL"):
        open_source("s3://bucket/x")


def test_the_api_key_goes_as_a_bearer_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHOENIX_API_KEY", "k-123")
    source = PhoenixSource("phoenixs://example.com/p")
    assert source.client.headers["authorization"] == "Bearer k-123"
    assert str(source.client.base_url).startswith("https://example.com")
    source.close()
    monkeypatch.delenv("PHOENIX_API_KEY")
    plain = PhoenixSource("phoenix://example.com/p")
    assert "authorization" not in plain.client.headers
    plain.close()


def test_times_are_iso_or_ages_and_durations_have_units() -> None:
    assert parse_time("2026-01-31T12:00") == datetime(2026, 1, 31, 12, tzinfo=UTC)
    assert abs(datetime.now(UTC) - timedelta(hours=2) - parse_time("2h")) < timedelta(minutes=1)
    assert parse_duration("90s") == timedelta(seconds=90) and parse_duration("5m") == timedelta(minutes=5)
    assert parse_duration("12") == timedelta(seconds=12)
    with pytest.raises(UsageError):
        parse_time("yesterday")


def _diagnosis(**update: object) -> Diagnosis:
    modes = [
        ModeVerdict(code="1.3", name="Step Repetition", category="FC1", present=True, confidence=0.7,
                    evidence=[Evidence(step=2, quote="again and again", verified=True)], explanation="loops"),
        ModeVerdict(code="3.1", name="Premature Termination", category="FC3", present=False, confidence=0.6),
        ModeVerdict(code="2.4", name="Information Withholding", category="FC2", present=None),
    ]
    base = Diagnosis(trace_id="ab" * 16, judge=JudgeInfo(kind="llm", model="openai/x", prompt_hash="h1",
                                                         taxonomy_version="mast-v3"),
                     failure_modes=modes, first_failure=FirstFailure(step=2, agent="Coder", code="1.3"))
    return base.model_copy(update=update)


def test_annotations_skip_unassessed_modes_and_quote_evidence_with_its_step_and_span() -> None:
    trace_rows, span_rows = annotations_for(_diagnosis(), {2: "00ff00ff00ff00ff"})
    names = [r["name"] for r in trace_rows]
    assert names == ["mast.1.3 Step Repetition", "mast.3.1 Premature Termination", SUMMARY_NAME]
    repetition = trace_rows[0]["result"]
    assert repetition == {"label": "present", "score": 0.7,
                          "explanation": 'loops\n[S2] span 00ff00ff00ff00ff: "again and again"'}
    assert trace_rows[2]["result"]["label"] == "1.3" and trace_rows[2]["metadata"]["prompt_hash"] == "h1"
    assert {r["annotator_kind"] for r in trace_rows} == {"LLM"}
    assert span_rows == [{"span_id": "00ff00ff00ff00ff", "name": "mast.first_failure", "annotator_kind": "LLM",
                          "result": {"label": "1.3", "explanation": "[S2] Coder:"},
                          "metadata": {"step": 2, "agent": "Coder", "code": "1.3", "trace_id": "ab" * 16},
                          "identifier": "mast"}]
    # No span for the step: no span annotation.
    assert annotations_for(_diagnosis(), {})[1] == []


def test_a_failed_trace_gets_only_a_summary_saying_so_and_detectors_write_as_code() -> None:
    failed = _diagnosis(status="error", error=ErrorInfo(type="JudgeAPIError", message="provider down"))
    rows, spans = annotations_for(failed, {2: "00ff00ff00ff00ff"})
    assert [(r["name"], r["result"]["label"], r["result"]["explanation"]) for r in rows] == \
           [(SUMMARY_NAME, "error", "provider down")]
    assert spans == []
    detectors = _diagnosis(judge=JudgeInfo(kind="detectors", taxonomy_version="mast-v3"))
    assert {r["annotator_kind"] for r in annotations_for(detectors)[0]} == {"CODE"}


def test_an_unreachable_store_is_one_line_and_write_back_needs_a_store(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    down = CliRunner().invoke(main, ["label", "phoenix://127.0.0.1:9/p", "-o", str(out), "--judge", "detectors"])
    assert down.exit_code == 1
    assert down.output.strip().splitlines()[-1].startswith("mast: phoenix://127.0.0.1:9/p: cannot reach Phoenix")
    trace = tmp_path / "t.json"
    trace.write_text('[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]')
    refused = CliRunner().invoke(main, ["label", str(trace), "-o", str(out), "--write-back"])
    assert refused.exit_code == 2 and "--write-back needs a trace store input" in refused.output
