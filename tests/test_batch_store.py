"""The results file: whole lines, torn-tail repair, one writer at a time, atomic rewrites."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mast.batch.store import ResultsFile
from mast.diagnosis import Diagnosis, JudgeInfo, empty_verdicts
from mast.errors import UsageError
from mast.taxonomy import load_taxonomy


def _diagnosis(trace_id: str, status: str = "judged") -> Diagnosis:
    verdicts = empty_verdicts(load_taxonomy())
    verdicts[2].present = True
    return Diagnosis(
        trace_id=trace_id,
        trace_hash="h-" + trace_id,
        status=status,  # type: ignore[arg-type]
        judge=JudgeInfo(kind="detectors", taxonomy_version="mast-v3"),
        failure_modes=verdicts,
        summary="line with \"quotes\", a newline\nand unicode: é ✓",
    )


def _ids(path: Path) -> list[str]:
    return [d.trace_id for _, d in ResultsFile.read(path)]


def test_lines_are_whole_and_read_back_equal(tmp_path: Path) -> None:
    path = tmp_path / "out" / "results.jsonl"
    written = [_diagnosis(f"t{i}") for i in range(5)]
    with ResultsFile(path) as out:
        for d in written:
            out.append(d)
    blob = path.read_bytes()
    assert blob.count(b"\n") == 5 and blob.endswith(b"\n")  # the summary's newline is escaped
    assert [d for _, d in ResultsFile.read(path)] == written


def test_torn_last_line_is_cut_on_open(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsFile(path) as out:
        out.append(_diagnosis("t0"))
        out.append(_diagnosis("t1"))
    whole = path.read_bytes()
    # A crash mid-write: half of a third line, no newline.
    line = _diagnosis("t2").model_dump_json().encode()
    path.write_bytes(whole + line[: len(line) // 2])
    assert _ids(path) == ["t0", "t1"]  # readers skip the torn tail
    with ResultsFile(path) as out:
        assert out.repaired is not None and "torn" in out.repaired
        out.append(_diagnosis("t2"))
    assert _ids(path) == ["t0", "t1", "t2"]
    assert path.read_bytes().startswith(whole)


def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(_diagnosis("t0").model_dump_json().encode())  # edited by hand: no final newline
    with ResultsFile(path) as out:
        assert out.repaired is None
        out.append(_diagnosis("t1"))
    assert _ids(path) == ["t0", "t1"]


def test_bad_line_in_the_middle_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(
        _diagnosis("t0").model_dump_json().encode() + b"\n{not json\n" + _diagnosis("t1").model_dump_json().encode() + b"\n"
    )
    with pytest.raises(UsageError, match=r"results.jsonl:2: not JSON"):
        list(ResultsFile.read(path))
    path.write_bytes(b'{"trace_id": "x"}\n' + _diagnosis("t1").model_dump_json().encode() + b"\n")
    with pytest.raises(UsageError, match=r":1: not a mast diagnosis"):
        list(ResultsFile.read(path))


def test_second_writer_is_refused_while_the_first_holds_the_file(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsFile(path) as out:
        out.append(_diagnosis("t0"))
        with pytest.raises(UsageError, match="being written by another mast run"):
            ResultsFile(path).open()
        # Another process is refused too (flock is per open file, across processes).
        code = textwrap.dedent(
            f"""
            from mast.batch.store import ResultsFile
            from mast.errors import UsageError
            try:
                ResultsFile({str(path)!r}).open()
            except UsageError as exc:
                print("refused:", exc)
            """
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
        assert "refused:" in done.stdout, done.stderr
    with ResultsFile(path) as again:  # released on close
        again.append(_diagnosis("t1"))
    assert _ids(path) == ["t0", "t1"]


def test_rewrite_drops_lines_atomically_and_keeps_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsFile(path) as out:
        for i in range(4):
            out.append(_diagnosis(f"t{i}", status="error" if i % 2 else "judged"))
        dropped = out.rewrite_without(lambda d: d.status == "error")
        assert dropped == 2
        with pytest.raises(UsageError, match="another mast run"):
            ResultsFile(path).open()
        out.append(_diagnosis("t9"))  # still appends to the (new) file at the path
    assert _ids(path) == ["t0", "t2", "t9"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_overwrite_starts_empty(tmp_path: Path) -> None:
    path = tmp_path / "results.jsonl"
    with ResultsFile(path) as out:
        out.append(_diagnosis("t0"))
    with ResultsFile(path, overwrite=True) as out:
        out.append(_diagnosis("t1"))
    assert _ids(path) == ["t1"]


def test_output_that_is_a_folder_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is a folder"):
        ResultsFile(tmp_path).open()


def test_lines_from_many_processes_never_interleave(tmp_path: Path) -> None:
    """O_APPEND + one write per line: concurrent appenders (no lock) still produce whole lines."""
    path = tmp_path / "results.jsonl"
    code = textwrap.dedent(
        f"""
        import os, sys
        from mast.diagnosis import Diagnosis, JudgeInfo
        fd = os.open({str(path)!r}, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        big = "x" * 200_000
        for i in range(40):
            d = Diagnosis(trace_id=f"{{sys.argv[1]}}-{{i}}", judge=JudgeInfo(taxonomy_version="v"), summary=big)
            os.write(fd, d.model_dump_json().encode() + b"\\n")
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", code, f"p{n}"]) for n in range(3)]
    assert all(p.wait(timeout=600) == 0 for p in procs)
    ids = _ids(path)
    assert sorted(ids) == sorted(f"p{n}-{i}" for n in range(3) for i in range(40))
    assert os.path.getsize(path) > 3 * 40 * 200_000
