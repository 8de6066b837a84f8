"""Results a user can trust (issue 33, points 4 to 8).

A report row is found by source file, record and id; transcripts are found from any folder; a
first failure that contradicts the verdicts is repaired with a warning; a failed tool's output
is sent once; the detectors' hints are shown in the terminal and the report.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mast import classify
from mast._render import render_step
from mast.cli import main
from mast.diagnosis import FirstFailure
from mast.evaluation.viewer import script_text
from mast.judge.material import prepare
from mast.results import iter_results
from mast.testing import FakeLLMServer, Reply, judge_answer
from mast.trace import Step, ToolResult, Trace

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "data" / "examples"


def _run(*args: str) -> str:
    result = CliRunner().invoke(main, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def _embedded(page: str) -> list[dict[str, Any]]:
    found = re.search(r"<script type='application/json' id='mast-traces'>(.*?)</script>", page, re.S)
    assert found, "the page has no embedded trace data"
    rows: list[dict[str, Any]] = json.loads(found.group(1))
    return rows


def _run_file(path: Path, answer: str) -> None:
    """A small run in the ``wrapped_run`` shape with the trace id ``same-run``."""
    path.write_text(
        json.dumps(
            {
                "id": "same-run",
                "messages": [
                    {"role": "user", "content": "What is 2 + 2?"},
                    {"role": "assistant", "content": answer},
                ],
            }
        )
    )


# -- 4: rows keyed by file, record and id ---------------------------------------------------------


# A page element as the script uses it: a value, text, inner HTML, listeners, a body of rows.
_DOM_STUB = r"""
const els = {};
function el(id){ return els[id] || (els[id] = {id, value: '', textContent: '', innerHTML: '', hidden: true,
  tBodies: [{innerHTML: '', addEventListener(){}}], addEventListener(){}, scrollIntoView(){}}); }
el('f-sort').value = 'modes';
globalThis.document = {getElementById: (id) => id === 'mast-traces' ? {textContent: DATA} : el(id)};
globalThis.location = {hash: HASH};
globalThis.history = {replaceState(){}};
globalThis.window = {addEventListener(){}};
"""


def _open_in_page(page: str, fragment: str) -> str:
    """The trace detail the page's own script draws for ``#trace=<fragment>`` (run by node)."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the page's script cannot be run (apt-get install nodejs)")
    data = re.search(r"<script type='application/json' id='mast-traces'>(.*?)</script>", page, re.S)
    assert data is not None
    program = (
        f"const DATA = {json.dumps(data.group(1))}; const HASH = {json.dumps('#trace=' + fragment)};"
        + _DOM_STUB
        + script_text()
        + "\nprocess.stdout.write(el('trace-detail').innerHTML);"
    )
    done = subprocess.run([node, "-e", program], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_two_files_with_one_trace_id_open_their_own_transcripts(tmp_path: Path) -> None:
    _run_file(tmp_path / "a.json", "It is 4 (answer from file A).")
    _run_file(tmp_path / "b.json", "It is 5 (answer from file B).")
    results, report = tmp_path / "results.jsonl", tmp_path / "report.html"
    _run(
        "label",
        str(tmp_path / "a.json"),
        str(tmp_path / "b.json"),
        "-o",
        str(results),
        "--judge",
        "detectors",
    )
    assert [d.trace_id for d in iter_results(results)] == ["same-run", "same-run"]
    _run("report", str(results), "-o", str(report), "--n-boot", "0")
    page = report.read_text()
    rows = _embedded(page)
    keys = [row["key"] for row in rows]
    assert len(set(keys)) == 2 and all(key.endswith("#same-run") for key in keys)
    by_file = {Path(row["source"]).name: row for row in rows}
    assert "file A" in " ".join(s["text"] for s in by_file["a.json"]["steps"])
    assert "file B" in " ".join(s["text"] for s in by_file["b.json"]["steps"])
    # The page's script, run as a browser would: the link to B's row opens B's transcript.
    detail = _open_in_page(page, by_file["b.json"]["key"])
    assert "file B" in detail and "file A" not in detail


# -- 5: transcripts found from another folder --------------------------------------------------


def test_report_from_another_folder_finds_the_transcripts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    (project / "runs").mkdir(parents=True)
    elsewhere.mkdir()
    shutil.copy(EXAMPLES / "sre-pods-repeat.jsonl", project / "runs" / "sre.jsonl")
    monkeypatch.chdir(project)
    _run("label", "runs/sre.jsonl", "-o", "out/results.jsonl", "--judge", "detectors")
    (diagnosis,) = iter_results(project / "out" / "results.jsonl")
    assert diagnosis.source.path == "runs/sre.jsonl"  # as the run was given it: resume keys stay the same
    assert diagnosis.source.absolute_path == str((project / "runs" / "sre.jsonl").resolve())
    assert diagnosis.source.results_relative_path == "../runs/sre.jsonl"

    monkeypatch.chdir(elsewhere)
    _run("report", str(project / "out" / "results.jsonl"), "-o", "report.html", "--n-boot", "0")
    (row,) = _embedded((elsewhere / "report.html").read_text())
    assert row["steps"] and row["note"] is None

    # Both moved together (the absolute path no longer holds): the relative one finds it.
    moved = tmp_path / "moved"
    shutil.move(project, moved)
    _run("report", str(moved / "out" / "results.jsonl"), "-o", "again.html", "--n-boot", "0")
    (row,) = _embedded((elsewhere / "again.html").read_text())
    assert row["steps"]

    # Still hash-checked: a file that changed since is not shown.
    (moved / "runs" / "sre.jsonl").write_text((EXAMPLES / "deploy-log-polling.jsonl").read_text())
    _run("report", str(moved / "out" / "results.jsonl"), "-o", "changed.html", "--n-boot", "0")
    (row,) = _embedded((elsewhere / "changed.html").read_text())
    assert not row["steps"] and "content hash" in row["note"]


# -- 6: a first failure that contradicts the answer --------------------------------------------


def _two_agent_trace() -> Trace:
    return Trace(
        trace_id="t-ff",
        steps=[
            Step(index=0, agent="user", role="user", content="Book a table for two tonight."),
            Step(index=1, agent="planner", content="I will ask the booker to call the restaurant."),
            Step(index=2, agent="booker", content="Booked a table for two at 8pm."),
        ],
    )


def _judged(first_failure: dict[str, Any], present: tuple[str, ...] = ("1.1",)) -> Any:
    answer = judge_answer(
        present, evidence={c: [(1, "ask the booker")] for c in present}, first_failure=first_failure
    )
    with FakeLLMServer(lambda body: Reply(content=answer)) as server:
        return classify(
            _two_agent_trace(),
            model="openai/fake-judge",
            api_base=server.base_url,
            api_key="k",
            hints=False,
            cache=False,
            timeout=60.0,
        )


def test_first_failure_naming_an_absent_mode_loses_the_code_with_a_warning() -> None:
    diagnosis = _judged({"step": 1, "agent": "planner", "code": "1.2", "explanation": "wrong role"})
    assert diagnosis.first_failure is not None
    assert diagnosis.first_failure.code is None and diagnosis.first_failure.step == 1
    assert any("1.2, which the judge did not find present" in w for w in diagnosis.warnings)


def test_first_failure_with_no_mode_present_is_dropped() -> None:
    diagnosis = _judged({"step": 1, "agent": "planner", "code": "1.1", "explanation": "x"}, present=())
    assert diagnosis.first_failure is None
    assert any("judges no mode present" in w for w in diagnosis.warnings)


def test_first_failure_agent_and_step_must_be_in_the_trace() -> None:
    diagnosis = _judged({"step": 9, "agent": "Reviewer", "code": "1.1", "explanation": "x"})
    first = diagnosis.first_failure
    assert first is not None and (first.step, first.agent, first.code) == (None, None, "1.1")
    assert any("S9, which the trace does not have" in w for w in diagnosis.warnings)
    assert any("'Reviewer', who is not in the trace" in w for w in diagnosis.warnings)
    # A difference of case is the trace's agent, spelt as the trace spells it.
    diagnosis = _judged({"step": 1, "agent": "PLANNER", "code": "1.1", "explanation": "x"})
    assert diagnosis.first_failure is not None and diagnosis.first_failure.agent == "planner"
    # The user speaks in the trace but is not one of its agents: a failure is never theirs.
    diagnosis = _judged({"step": 1, "agent": "user", "code": "1.1", "explanation": "x"})
    assert diagnosis.first_failure is not None and diagnosis.first_failure.agent is None
    assert any("'user', who is not in the trace" in w for w in diagnosis.warnings)


def test_report_agent_filter_offers_only_agents_of_the_trace(tmp_path: Path) -> None:
    source = tmp_path / "run.json"
    _run_file(source, "It is 4.")
    results = tmp_path / "results.jsonl"
    _run("label", str(source), "-o", str(results), "--judge", "detectors")
    (diagnosis,) = iter_results(results)
    # An older result, written before first failures were checked, names an agent the trace lacks.
    diagnosis.first_failure = FirstFailure(step=1, agent="ghost-agent", code="1.3")
    results.write_text(diagnosis.model_dump_json() + "\n")
    _run("report", str(results), "-o", str(tmp_path / "r.html"), "--n-boot", "0")
    page = (tmp_path / "r.html").read_text()
    (row,) = _embedded(page)
    assert row["steps"] and "ghost-agent" not in row["agents"]
    assert "<option value='ghost-agent'>" not in page


# -- 7: failed tool output once ----------------------------------------------------------------


def test_failed_tool_output_is_sent_once() -> None:
    failure = "Traceback (most recent call last):\nValueError: no such column 'revenue'"
    step = Step(
        index=1,
        kind="tool_result",
        agent="tool",
        role="tool",
        error=failure,
        tool_results=[ToolResult(output=failure, is_error=True, name="run_python")],
    )
    assert render_step(step).count("no such column") == 1
    trace = Trace(trace_id="t7", steps=[Step(index=0, agent="a", content="run it"), step])
    assert prepare(trace).transcript.count("no such column") == 1
    # An error that says something the output does not still goes with it.
    other = step.model_copy(update={"error": "killed after 30 s"})
    assert "<error>killed after 30 s</error>" in render_step(other)


def test_failed_tool_output_from_a_real_reader_is_in_the_report_once(tmp_path: Path) -> None:
    source = tmp_path / "run.json"
    # Anthropic messages: the reader keeps the failed output in the tool result and in the step's error.
    source.write_text(
        json.dumps(
            {
                "id": "fails",
                "messages": [
                    {"role": "user", "content": "sum the file"},
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "tool_use", "id": "c1", "name": "sh", "input": {"cmd": "python sum.py"}}
                        ],
                    },
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "c1",
                                "is_error": True,
                                "content": "Error: KeyError: 'revenue_eur' in sum.py",
                            }
                        ],
                    },
                    {"role": "assistant", "content": "The file could not be summed."},
                ],
            }
        )
    )
    results = tmp_path / "results.jsonl"
    _run("label", str(source), "-o", str(results), "--judge", "detectors")
    _run("report", str(results), "-o", str(tmp_path / "r.html"), "--n-boot", "0")
    (row,) = _embedded((tmp_path / "r.html").read_text())
    assert " ".join(s["text"] for s in row["steps"]).count("KeyError: 'revenue_eur'") == 1


# -- 8: detector hints shown -------------------------------------------------------------------


def test_detector_hints_are_shown_in_the_terminal_and_the_report(tmp_path: Path) -> None:
    example = EXAMPLES / "ignored-build-error.json"
    output = _run("classify", str(example))
    assert "hint(s) for modes they cannot judge" in output
    hints = [
        line for line in output.splitlines() if line.startswith("    ") and re.match(r"\s+\d\.\d+ ", line)
    ]
    assert hints, output
    results = tmp_path / "results.jsonl"
    _run("label", str(example), "-o", str(results), "--judge", "detectors")
    (diagnosis,) = iter_results(results)
    hinted = [v for v in diagnosis.failure_modes if v.hints]
    assert hinted and all(v.present is None for v in hinted)
    assert any(v.code in line and (v.hints or [""])[0][:40] in line for v in hinted for line in hints)
    _run("report", str(results), "-o", str(tmp_path / "r.html"), "--n-boot", "0")
    page = (tmp_path / "r.html").read_text()
    (row,) = _embedded(page)
    shown = {m["code"]: m["hints"] for m in row["modes"] if m["hints"]}
    assert shown == {v.code: v.hints for v in hinted}
    detail = _open_in_page(page, row["key"])
    assert "not assessed (hint)" in detail and "hint: " in detail
