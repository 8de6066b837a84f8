"""The project's own promises: public API, README/CI agreement, schema, transcript caps, CLI manners."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import mast
from mast.errors import TraceFormatError
from mast.taxonomy import load_taxonomy, normalize_code
from mast.trace import Step, ToolCall, ToolResult, Trace

REPO = Path(__file__).resolve().parent.parent


def quick_start_lines() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Quick start", 1)[1]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line.strip()]


def test_readme_quick_start_is_two_lines_that_ci_runs_verbatim() -> None:
    lines = quick_start_lines()
    assert len(lines) == 2
    ci = (REPO / ".ci" / "run").read_text()
    for line in lines:
        assert line in ci.splitlines(), f".ci/run does not run: {line}"
    assert "pytest" in lines[1]
    assert "data/examples" in lines[0]


def test_public_api_is_curated() -> None:
    assert mast.__all__ == sorted(mast.__all__)
    for name in mast.__all__:
        assert getattr(mast, name) is not None, name
    public = {n for n in vars(mast) if not n.startswith("_")}
    # Submodules become attributes when imported; everything else public must be listed.
    modules = {n for n in public if type(getattr(mast, n)).__name__ == "module"} - set(mast.__all__)
    assert public - modules == set(mast.__all__) - {"__version__"}
    with pytest.raises(AttributeError):
        mast.not_a_name  # noqa: B018


def test_import_mast_does_not_load_the_evaluation_stack() -> None:
    code = "import sys, mast; print('sklearn' in sys.modules, 'litellm' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_taxonomy_pins_paper_v3_names() -> None:
    tax = load_taxonomy()
    assert tax.version == "mast-v3"
    assert tax.codes == ["1.1", "1.2", "1.3", "1.4", "1.5", "2.1", "2.2", "2.3", "2.4", "2.5", "2.6", "3.1", "3.2", "3.3"]
    assert tax.mode("3.2").name == "No or Incomplete Verification"
    assert tax.mode("FM-3.3").name == "Incorrect Verification"
    assert tax.categories == {"FC1": "System Design Issues", "FC2": "Inter-Agent Misalignment", "FC3": "Task Verification"}


@pytest.mark.parametrize("raw", ["FM-1.3", "1.3", "1_3", "fm 1.3", "FM1.3", " 1.3 "])
def test_codes_normalise(raw: str) -> None:
    assert normalize_code(raw) == "1.3"


def test_code_normalisation_rejects_text() -> None:
    with pytest.raises(ValueError):
        normalize_code("step repetition")


def test_trace_fills_ids_and_indices_and_keeps_labels_out_of_transcript() -> None:
    steps = [
        Step(index=7, agent="planner", recipient="coder", content="write fib"),
        Step(index=9, kind="tool_call", agent="coder", tool_calls=[ToolCall(id="c1", name="run", arguments={"cmd": "pytest"})]),
        Step(index=3, kind="tool_result", agent="tool", tool_results=[ToolResult(call_id="c1", output="1 failed", is_error=True)]),
    ]
    trace = Trace(steps=steps, labels={"1.3": 1, "secret_gold": "ANSWER-XYZ"}, task="write fib")
    assert [s.index for s in trace.steps] == [0, 1, 2]
    assert trace.trace_id.startswith("sha256:")
    text = trace.to_transcript().text
    assert text.splitlines()[0] == "[S0] planner → coder: write fib"
    assert "<tool_result error>1 failed</tool_result>" in text
    assert "ANSWER-XYZ" not in text
    # Same content read from elsewhere (different source/labels) hashes the same.
    again = Trace(steps=[s.model_copy() for s in steps], task="write fib", labels={})
    assert again.content_hash() == trace.content_hash()


def test_transcript_caps_are_visible_and_warned() -> None:
    trace = Trace(steps=[Step(index=i, agent="a", content="x" * 1000 + str(i)) for i in range(10)])
    out = trace.to_transcript(max_step_chars=300, max_total_chars=1500)
    assert "chars cut ...]" in out.text
    assert "more steps (S" in out.text
    assert any("step S0" in w for w in out.warnings)
    assert any("transcript capped" in w for w in out.warnings)
    uncapped = trace.to_transcript(max_step_chars=10_000)
    assert uncapped.warnings == [] and "cut" not in uncapped.text


def test_timestamps_become_utc() -> None:
    from datetime import datetime, timedelta, timezone

    step = Step(index=0, started_at=datetime(2025, 1, 1, 12, tzinfo=timezone(timedelta(hours=2))))
    assert step.started_at is not None and step.started_at.utcoffset() == timedelta(0)
    assert step.started_at.hour == 10


def test_bad_inputs_give_one_line_trace_format_errors(tmp_path: Path) -> None:
    cases = {
        "empty.json": b"",
        "binary.json": b"\x00\x01\x02garbage",
        "truncated.json": b'{"resourceSpans": [{"scopeSpans": [',
        "unknown.json": b'{"hello": "world", "n": 3}',
        "double.json": b'"{\\"messages\\": []}"',
    }
    for name, blob in cases.items():
        path = tmp_path / name
        path.write_bytes(blob)
        with pytest.raises(TraceFormatError) as info:
            mast.load_trace(path)
        message = str(info.value)
        assert "\n" not in message and name in message, message
    with pytest.raises(TraceFormatError, match="no such file"):
        mast.load_trace(tmp_path / "missing.json")
    # Bytes that are not UTF-8 are replaced, with a warning, never a refused file.
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("caf\xe9 au lait".encode("latin-1"))
    trace = mast.load_trace(latin)
    assert trace.steps[0].content == "caf\ufffd au lait"
    assert any("not valid UTF-8" in w and "byte 3" in w for w in trace.warnings)


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mast", *args], capture_output=True, text=True, timeout=600)


def test_cli_version_help_and_one_line_errors(tmp_path: Path) -> None:
    assert re.match(r"mast, version \d+\.\d+", run_cli("--version").stdout)
    assert "normalize" in run_cli("-h").stdout
    bad = tmp_path / "bad.json"
    bad.write_text('{"nothing": "known"}')
    result = run_cli("normalize", str(bad))
    assert result.returncode == 2
    assert len(result.stderr.strip().splitlines()) == 1 and "no known trace format" in result.stderr
    missing = run_cli("normalize", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    debug = run_cli("--debug", "normalize", str(tmp_path / "nope"))
    assert "Traceback" in debug.stderr
