"""Every real sample under tests/data/traces loads, auto-detected as the format of its folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from _data import TRACES, VALIDATION

import mast
from mast.normalize import detect_format

FOLDER_FORMAT = {
    "aegis": "aegis",
    "anthropic_messages": "anthropic_messages",
    "autogen_ag2_chat": "autogen",
    "autogen_core_llm_messages": "autogen_core",
    "codex_rollout": "codex_rollout",
    "crewai": "crewai",
    "langfuse_trace_export": "langfuse",
    "langsmith_runs": "langsmith",
    "mast_raw_traces": "mast_raw",
    "openai_agents_sdk": "openai_agents_sdk",
    "openai_chat_messages": "openai_chat",
    "openhands_trajectory": "openhands",
    "otlp_json": "otlp",
    "smolagents_memory": "smolagents",
    "span_attribute_dicts": "span_attributes",
    "swe_agent_traj": "swe_agent",
    "vercel_ai_sdk_spans": "vercel_ai",
}


def sample_files() -> list[Path]:
    """Sample traces: every file but the manifests and the JSON-schema files."""
    return [
        p for p in sorted((TRACES).rglob("*"))
        if p.is_file() and p.name != "MANIFEST.md" and "schema" not in p.name
    ]


def test_every_sample_folder_has_an_expected_format() -> None:
    folders = {p.name for p in (TRACES).iterdir() if p.is_dir()}
    assert folders == set(FOLDER_FORMAT), "a new sample folder needs an expected format here"


def test_every_sample_normalises_with_the_right_format() -> None:
    files = sample_files()
    assert len(files) >= 55
    for path in files:
        expected = FOLDER_FORMAT[path.parent.name]
        if path.name.endswith(".chatml.expected.json"):
            expected = "langfuse_chatml"
        fmt, confidence = detect_format(path)
        assert fmt.name == expected, f"{path.name}: detected {fmt.name}"
        assert confidence >= 0.5
        traces = mast.load_traces(path)
        assert traces, path
        for trace in traces:
            assert trace.source.format == expected
            assert trace.steps, f"{path.name}: no steps"
            assert trace.source.path == str(path)
            text = trace.to_transcript().text
            assert text.startswith("[S0]")
            # Tool results are paired with calls wherever both carry ids.
            call_ids = {c.id for s in trace.steps for c in s.tool_calls if c.id}
            result_ids = {r.call_id for s in trace.steps for r in s.tool_results if r.call_id}
            assert result_ids <= call_ids or not call_ids, f"{path.name}: results without calls {result_ids - call_ids}"


@pytest.mark.parametrize("name", ["mad-human/mad_human_sample_4records.json", "mastlint-ag2/raw_ag2_records.json"])
def test_mad_label_files_normalise_with_labels_kept_out_of_the_prompt(name: str) -> None:
    traces = mast.load_traces(VALIDATION / name)
    assert traces and all(t.source.format == "mad" for t in traces)
    for trace in traces:
        if name.startswith("mad-human"):
            # The human-labelled records carry three annotators' votes per mode.
            assert trace.labels
            for value in map(str, trace.labels.values()):
                assert value[:40] not in trace.to_transcript().text
        assert "mast_annotation" not in trace.to_transcript().text
