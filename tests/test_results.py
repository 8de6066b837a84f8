"""mast.results: the one reader/writer of results files, streaming, with the line named on errors."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from mast.diagnosis import Diagnosis, JudgeInfo, ModeVerdict
from mast.errors import EvaluationError, ResultsFileError, UsageError
from mast.results import ResultsFile, iter_records, iter_results, read_results, to_dataframe


def diagnosis(trace_id: str, present: bool | None = True, status: str = "judged") -> Diagnosis:
    verdict = ModeVerdict(code="1.1", name="Disobey task specification", category="FC1", present=present)
    return Diagnosis(trace_id=trace_id, status=status, judge=JudgeInfo(taxonomy_version="mast-v3"),  # type: ignore[arg-type]
                     failure_modes=[verdict])


def write(path: Path, *diagnoses: Diagnosis, tail: bytes = b"") -> Path:
    path.write_bytes(b"".join(d.model_dump_json().encode() + b"\n" for d in diagnoses) + tail)
    return path


def test_reader_streams_and_skips_a_torn_last_line(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", diagnosis("a"), diagnosis("b"), tail=b'{"trace_id": "c", "sta')
    stream = iter_results(path)
    assert next(stream).trace_id == "a"  # a generator: the file is read as it is consumed
    assert [d.trace_id for d in stream] == ["b"]
    assert [record["trace_id"] for _, record in iter_records(path)] == ["a", "b"]


def test_a_bad_line_in_the_middle_names_file_and_line_and_is_both_error_kinds(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", diagnosis("a"), tail=b"{oops\n" + diagnosis("b").model_dump_json().encode() + b"\n")
    with pytest.raises(ResultsFileError, match=r"r.jsonl:2: not JSON") as caught:
        read_results(path)
    assert isinstance(caught.value, UsageError) and isinstance(caught.value, EvaluationError)
    assert caught.value.line == 2 and caught.value.path == str(path)
    with pytest.raises(ResultsFileError, match="no such results file"):
        read_results(tmp_path / "missing.jsonl")


def test_a_json_list_of_diagnoses_is_read_too(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_bytes(orjson.dumps([orjson.loads(diagnosis(t).model_dump_json()) for t in ("a", "b")]))
    assert [d.trace_id for d in iter_results(path)] == ["a", "b"]


def test_to_dataframe_takes_a_stream_and_keeps_not_assessed_as_na(tmp_path: Path) -> None:
    path = write(tmp_path / "r.jsonl", diagnosis("a", True), diagnosis("b", None), diagnosis("c", False))
    frame = to_dataframe(iter_results(path))
    assert frame["trace_id"].tolist() == ["a", "b", "c"]
    assert frame["1.1"].tolist()[0] is True and frame["1.1"].isna().tolist() == [False, True, False]
    assert frame["n_modes"].tolist() == [1, 0, 0]


def test_writer_returns_offsets_reads_back_and_drops_lines_atomically(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultsFile(path) as out:
        offsets = [out.append(diagnosis(t)) for t in ("a", "b", "c")]
        assert out.read_at(offsets[1]).trace_id == "b"
        assert out.drop_lines({offsets[0], offsets[2]}) == 2
        out.append(diagnosis("d"))
    assert [d.trace_id for d in iter_results(path)] == ["b", "d"]
    assert not list(tmp_path.glob(".*.tmp"))
