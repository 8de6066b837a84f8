"""The file walk of `mast label` is a stream: files come as folders are read, in the same order (issue 16)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from mast.batch.walk import FileSelection, select_files, walk_files
from mast.cli import main
from mast.errors import UsageError


def chat(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps([{"role": "user", "content": text}, {"role": "assistant", "content": f"done: {text}"}]))
    return path


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "runs"
    for folder in ("b", "a", "a/deep"):
        for name in ("2.json", "1.jsonl", "notes.md", ".hidden.json"):
            chat(root / folder / name, f"{folder}/{name}")
    (root / "a" / "draft-1.json").write_text("[]")
    return root


def test_the_stream_is_the_list_in_the_same_order_with_the_same_counts(tree: Path, tmp_path: Path) -> None:
    include, exclude, outputs = ["*.md"], ["*draft*"], [tree / "b" / "2.json"]
    listed = select_files([tree, tree / "a" / "notes.md"], include=include, exclude=exclude, outputs=outputs)
    streamed = FileSelection()
    files = list(walk_files([tree, tree / "a" / "notes.md"], streamed, include=include, exclude=exclude,
                            outputs=outputs))
    assert files == listed.files and streamed.files == []
    assert files[:4] == [tree / "a" / n for n in ("1.jsonl", "2.json", "notes.md")] + [tree / "a" / "deep" / "1.jsonl"]
    assert streamed.found == len(files) == 9  # 3 folders x 3 names, less the output, plus notes.md given
    assert streamed.skipped == listed.skipped == {"hidden": 3, "matched --exclude": 1, "the results file of this run": 1}
    assert streamed.skipped_summary() == "skipped 2 files: 1 matched --exclude, 1 the results file of this run"


def test_folders_are_read_when_the_walk_gets_there(tree: Path) -> None:
    walk = walk_files([tree], FileSelection())
    assert next(walk) == tree / "a" / "1.jsonl"
    late = chat(tree / "b" / "3.json", "written after the walk started")  # folder b not read yet
    assert late in list(walk)


def test_a_missing_path_fails_before_the_first_file(tree: Path) -> None:
    with pytest.raises(UsageError, match="nowhere: no such file or folder"):
        walk_files([tree, tree / "nowhere"], FileSelection())


def test_label_reports_skipped_files_and_refuses_an_empty_walk_before_writing(tree: Path, tmp_path: Path) -> None:
    (tree / "a" / "draft-1.json").unlink()  # no trace in it: a run with it exits 2
    out = tmp_path / "out" / "results.jsonl"
    done = CliRunner().invoke(main, ["label", str(tree), "-o", str(out), "--judge", "detectors"])
    assert done.exit_code == 0, done.output
    assert "skipped 3 files: 3 not a trace file name (.md)" in done.output
    assert len(out.read_text().splitlines()) == 6  # the .json/.jsonl traces of a, a/deep and b
    empty = tmp_path / "empty"
    (empty / "x").mkdir(parents=True)
    (empty / "x" / "readme.md").write_text("no traces here")
    nothing = tmp_path / "nothing.jsonl"
    refused = CliRunner().invoke(main, ["label", str(empty), "-o", str(nothing), "--judge", "detectors"])
    assert refused.exit_code == 2 and "no traces found" in refused.output and "1 not a trace file name" in refused.output
    assert not nothing.exists()
