"""mast._files: a file is opened as it was checked, or not at all (issue 34, link races)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mast._files import check_file, open_checked
from mast.errors import TraceFormatError
from mast.normalize import load_trace
from mast.normalize.base import RawInput

TRACE = '[{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]'


def test_a_link_a_fifo_and_another_file_are_refused_and_nothing_blocks(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    run.write_text(TRACE)
    check = check_file(run, size=True)
    os.close(open_checked(run, check))  # the file checked: opened
    secret = tmp_path / "passwd.json"
    secret.write_text(TRACE.replace("hello", "root:x:0:0"))
    run.rename(tmp_path / "kept.json")  # kept: its inode is not free to be reused below
    run.symlink_to(secret)
    with pytest.raises(TraceFormatError, match="symbolic link"):
        open_checked(run, check)
    with pytest.raises(TraceFormatError, match="symbolic link"):
        open_checked(run)  # no check: a link is still refused unless followed on purpose
    os.close(open_checked(run, follow=True))  # a name the user gave: the link is followed
    run.unlink()
    other = tmp_path / "other.json"
    other.write_text(TRACE)
    other.replace(run)  # the same name, another inode (renamed over it)
    with pytest.raises(TraceFormatError, match="another file"):
        open_checked(run, check)
    grown = check_file(run, size=True)
    run.write_text(TRACE + " ")
    with pytest.raises(TraceFormatError, match="changed after it was checked"):
        open_checked(run, grown)
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    with pytest.raises(TraceFormatError, match="not a regular file"):
        open_checked(fifo)  # O_NONBLOCK: refused at once, no writer needed


def test_a_raw_input_reads_the_descriptor_it_opened_not_the_name(tmp_path: Path) -> None:
    run = tmp_path / "run.json"
    run.write_text(TRACE)
    raw = RawInput.from_path(run, check_file(run))
    outside = tmp_path / "outside.json"
    outside.write_text(TRACE.replace("hello", "LEAKED"))
    run.unlink()
    run.symlink_to(outside)  # swapped after it was opened: the bytes still come from the file opened
    trace = load_trace(raw)
    assert "LEAKED" not in trace.model_dump_json() and "hello" in trace.model_dump_json()
    assert raw.head.startswith("[") and raw.size == len(TRACE)
