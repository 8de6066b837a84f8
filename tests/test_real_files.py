"""Every real file of ``tests/data/real/`` read as its golden says a careful reader reads it.

The goldens (``GOLDEN.yaml`` per folder) were written by someone who had not read mast's code,
before mast was run on the files; they are never edited to match mast's output unless the reader
was wrong (and then the commit says why). Per file: the format auto-detection picks, the number of
steps (a range; the system prompt a run opens with is its set-up, not counted), the agents (those named must be among mast's), the number of tool calls (a range)
and their names, a phrase of the task and of the final answer (``null``: the file states none, not
checked). Comparisons fold case, whitespace and markdown emphasis, as a reader would.
"""

from __future__ import annotations

import hashlib

import pytest
from _real import (
    REAL,
    RealFile,
    agent_names,
    fold,
    folders,
    goldens,
    manifest_rows,
    real_files,
    step_count,
    tool_calls,
)

from mast.errors import TraceFormatError
from mast.normalize import detect_format, load_traces

FILES = real_files()
GOLDEN_FIELDS = {"format", "version", "steps", "agents", "tool_calls", "tool_names", "task", "final", "notes"}


def test_the_corpus_is_there() -> None:
    assert REAL.is_dir() and folders(), "tests/data/real/ holds no folder"
    assert FILES


@pytest.mark.parametrize("folder", [f.name for f in folders()])
def test_every_file_has_a_manifest_row_with_its_sha256_and_a_golden(folder: str) -> None:
    path = REAL / folder
    rows, gold = manifest_rows(path), goldens(path)
    assert (path / "MANIFEST.md").is_file() and (path / "GOLDEN.yaml").is_file()
    present = {f.path.name: f for f in FILES if f.folder == folder}
    problems: list[str] = []
    for name, item in present.items():
        data = item.path.read_bytes()
        if item.row is None:
            problems.append(f"{name}: no MANIFEST row")
        else:
            if item.row.sha256 != hashlib.sha256(data).hexdigest():
                problems.append(f"{name}: sha256 in MANIFEST differs from the file's")
            if item.row.bytes is not None and item.row.bytes != len(data):
                problems.append(f"{name}: MANIFEST says {item.row.bytes} bytes, the file has {len(data)}")
        if item.golden is None:
            problems.append(f"{name}: no GOLDEN entry")
        elif missing := {"format", "steps", "tool_calls"} - set(item.golden):
            problems.append(f"{name}: GOLDEN lacks {sorted(missing)}")
        elif unknown := set(item.golden) - GOLDEN_FIELDS:
            problems.append(f"{name}: GOLDEN has unknown fields {sorted(unknown)}")
    problems += [f"{name}: MANIFEST row for a file not in the folder" for name in rows if name not in present]
    problems += [f"{name}: GOLDEN entry for a file not in the folder" for name in gold if name not in present]
    assert not problems, "\n".join(problems)


def _check(item: RealFile) -> list[str]:
    golden = item.golden
    assert golden is not None, f"{item.id}: no golden"
    problems: list[str] = []
    try:
        fmt, _ = detect_format(item.path)
        traces = load_traces(item.path)
    except TraceFormatError as exc:
        return [f"refused: {exc}"]
    if fmt.name != golden["format"]:
        problems.append(f"format: detected {fmt.name}, golden {golden['format']}")
    steps = sum(step_count(t) for t in traces)
    low, high = golden["steps"]
    if not low <= steps <= high:
        problems.append(f"steps: {steps}, golden [{low}, {high}]")
    names = agent_names(traces)
    if missing := [a for a in golden.get("agents") or [] if fold(a) not in names]:
        problems.append(f"agents: {missing} not among {sorted(names)}")
    calls = tool_calls(traces)
    low, high = golden["tool_calls"]
    if not low <= len(calls) <= high:
        problems.append(f"tool calls: {len(calls)}, golden [{low}, {high}]")
    if golden.get("tool_names") is not None and {fold(n) for n in golden["tool_names"]} != {fold(n) for n in calls}:
        problems.append(f"tool names: {sorted(set(calls))}, golden {sorted(golden['tool_names'])}")
    if golden.get("task") and not any(fold(golden["task"]) in fold(t.task) for t in traces):
        problems.append(f"task: {[(t.task or '')[:160] for t in traces]!r} lacks {golden['task']!r}")
    if golden.get("final") and not any(fold(golden["final"]) in fold(t.final_output) for t in traces):
        problems.append(f"final: {[(t.final_output or '')[-160:] for t in traces]!r} lacks {golden['final']!r}")
    return problems


@pytest.mark.parametrize("item", [f for f in FILES if f.golden is not None], ids=lambda f: f.id)
def test_real_file_reads_as_its_golden(item: RealFile) -> None:
    problems = _check(item)
    assert not problems, f"{item.id}:\n  " + "\n  ".join(problems)
