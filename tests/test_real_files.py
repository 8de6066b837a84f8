"""Every real file of the corpus (``real/<format>/`` beside the checkout) read as its golden says a careful reader reads it.

The goldens (``tests/golden/real/<format>/GOLDEN.yaml``) were written by someone who had not read mast's code,
before mast was run on the files; they are never edited to match mast's output unless the reader
was wrong (and then the commit says why). Per file: the format auto-detection picks, the number of
steps (a range; the system prompt a run opens with is its set-up, not counted), the agents (those named must be among mast's), the number of tool calls (a range)
and their names, a phrase of the task and of the final answer (``null``: the file states none, not
checked). Comparisons fold case, whitespace and markdown emphasis, as a reader would.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

import pytest
from _real import (
    COVERAGE_FILE,
    REAL,
    REAL_GOLDEN,
    RealFile,
    agent_names,
    coverage_document,
    fold,
    folders,
    manifest_rows,
    real_files,
    sample_files,
    step_count,
    tool_calls,
)

from mast.errors import TraceFormatError
from mast.normalize import detect_format, formats, load_traces

FILES = real_files()
SAMPLES = sample_files()

NOT_YET = {
    # Files whose golden mast does not meet yet, each with what is missing. strict: a fix must remove its line.
    "plain_text/claude_code_spotter_tool_heavy.terminal.txt": "task: the shell command line above the screen is taken, not the first prompt typed at ❯",
}


def _known(items: list[RealFile]) -> list[Any]:
    return [pytest.param(f, id=f.id, marks=pytest.mark.xfail(reason=NOT_YET[f.id], strict=True)) if f.id in NOT_YET else
            pytest.param(f, id=f.id) for f in items]
GOLDEN_FIELDS = {"format", "version", "steps", "agents", "tool_calls", "tool_names", "task", "final", "notes"}


@pytest.mark.corpus
def test_known_gaps_name_files_that_exist() -> None:
    ids = {f.id for f in [*FILES, *SAMPLES]}
    assert set(NOT_YET) <= ids, sorted(set(NOT_YET) - ids)


def test_the_corpus_is_there() -> None:
    assert REAL.is_dir() and folders(), f"{REAL} holds no folder"
    assert FILES


@pytest.mark.parametrize("folder", [f.name for f in folders()])
def test_every_file_has_a_manifest_row_with_its_sha256_and_a_golden(folder: str) -> None:
    path = REAL / folder
    rows = manifest_rows(path)
    assert (path / "MANIFEST.md").is_file() and (REAL_GOLDEN / folder / "GOLDEN.yaml").is_file()
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
        elif item.row is not None and (src := item.golden.get("source") or {}) and (
            src.get("repo"), src.get("path"), src.get("commit"), src.get("sha256")
        ) != (item.row.repo, item.row.path, item.row.commit, item.row.sha256):
            problems.append(f"{name}: GOLDEN source differs from the MANIFEST row")
        elif missing := {"format", "steps", "tool_calls"} - set(item.golden):
            problems.append(f"{name}: GOLDEN lacks {sorted(missing)}")
        elif unknown := set(item.golden) - GOLDEN_FIELDS - {"source"}:
            problems.append(f"{name}: GOLDEN has unknown fields {sorted(unknown)}")
    problems += [f"{name}: MANIFEST row for a file not in the folder" for name in rows if name not in present]
    # A golden with no file and no MANIFEST row is not a problem: goldens are written before their
    # file is added to the corpus (the closing note lists it for the corpus's keeper), so it is pending.
    assert not problems, "\n".join(problems)


def _check(item: RealFile) -> list[str]:
    golden = item.golden
    assert golden is not None, f"{item.id}: no golden"
    problems: list[str] = []
    try:
        fmt, _ = detect_format(item.path)
        traces = load_traces(item.path)
    except TraceFormatError as exc:
        # format null: the golden reads no run in the file, and a one-line refusal is the reading it asks for
        return [] if golden["format"] is None else [f"refused: {exc}"]
    if item.folder.startswith("traces/"):
        traces = traces[:1]  # tests/golden/traces describes the first run of a file holding several
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


@pytest.mark.parametrize("item", _known([f for f in FILES if f.golden is not None]))
def test_real_file_reads_as_its_golden(item: RealFile) -> None:
    problems = _check(item)
    assert not problems, f"{item.id}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("item", _known(SAMPLES))
def test_real_sample_file_reads_as_its_golden(item: RealFile) -> None:
    """The real files of the older sample folders, against their goldens in tests/golden/traces/."""
    assert item.path.is_file(), f"{item.id}: golden for a file that is not there"
    assert item.golden is not None
    assert (item.golden.get("source") or {}).get("sha256") == hashlib.sha256(item.path.read_bytes()).hexdigest(), \
        f"{item.id}: its golden names another sha256"
    problems = _check(item)
    assert not problems, f"{item.id}:\n  " + "\n  ".join(problems)


def test_format_coverage_data_is_up_to_date() -> None:
    """``mast formats`` reads mast/data/format_coverage.json (wheels have no tests/); it must match the goldens.

    The docs' formats reference is generated from the same file (docs/hooks.py).
    ``MAST_UPDATE_GOLDEN=1`` rewrites it from the goldens (no corpus needed: it holds counts and sources, no data).
    """
    document = coverage_document()
    names = [f.name for f in formats()]
    unknown = set(document["formats"]) - set(names)
    assert not unknown, f"goldens name formats mast does not have: {sorted(unknown)}"
    if os.environ.get("MAST_UPDATE_GOLDEN") == "1":
        COVERAGE_FILE.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    assert json.loads(COVERAGE_FILE.read_text(encoding="utf-8")) == document, "run MAST_UPDATE_GOLDEN=1 pytest tests/test_real_files.py"


def test_mast_formats_shows_coverage_and_documentation_only() -> None:
    from click.testing import CliRunner

    from mast.cli.normalize import formats_command
    from mast.normalize._coverage import format_coverage

    format_coverage.cache_clear()
    out = CliRunner().invoke(formats_command).output
    document = coverage_document()
    for name, entry in document["formats"].items():
        block = out.split(f"\n{name} ", 1)[1] if f"\n{name} " in out else out.split(f"{name} ", 1)[1]
        head = block.split("\n", 3)
        assert any(f"tested on {entry['files']} real file" in line for line in head), (name, head)
        assert entry["versions"][0] in block
    documented = [f.name for f in formats() if f.name not in document["formats"]]
    assert documented and out.count("from documentation only") == len(documented)
