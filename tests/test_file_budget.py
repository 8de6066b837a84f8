"""One expansion budget per file (issue 34 point 2): zip members, gzip bodies and attachments together.

The bombs are built by ``tests/_bombs.py``; each must fail with one line naming
``MAX_EXPANDED_BYTES_PER_FILE`` while the expansion is still small, not after it happened.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import _bombs
import pytest

from mast.caps import MAX_EXPANDED_BYTES_PER_FILE, CapExceeded, FileBudget, charging, decompress_prefix
from mast.errors import TraceFormatError
from mast.normalize import iter_traces


def _messages(path: Path) -> list[str]:
    try:
        return [str(item) for item in iter_traces(path) if isinstance(item, TraceFormatError)]
    except TraceFormatError as exc:
        return [str(exc)]


def test_decompressed_bodies_count_against_one_budget_for_the_file() -> None:
    body = gzip.compress(b" " * 2**20)
    with charging(FileBudget(limit=3 * 2**20)) as budget:
        for _ in range(3):
            assert len(decompress_prefix(body)[0]) == 2**20  # each body alone is well under the per-body cap
        assert budget is not None and budget.left == 0
        with pytest.raises(CapExceeded, match="MAX_EXPANDED_BYTES_PER_FILE"):
            decompress_prefix(body)
    assert decompress_prefix(body)[0] == b" " * 2**20  # outside a file's reading nothing is charged


def test_forty_gzip_bodies_of_32_mib_in_one_cassette_hit_the_file_budget(tmp_path: Path) -> None:
    messages = _messages(_bombs.gzip_cassette(tmp_path / "cassette.yaml"))
    assert len(messages) == 1 and "MAX_EXPANDED_BYTES_PER_FILE" in messages[0] and "\n" not in messages[0]


def test_an_attachment_referenced_20000_times_is_refused_before_it_expands(tmp_path: Path) -> None:
    for path in (_bombs.attachment_eval(tmp_path / "a.eval"), _bombs.attachment_json(tmp_path / "a.json")):
        messages = _messages(path)
        assert len(messages) == 1 and "MAX_EXPANDED_BYTES_PER_FILE" in messages[0], (path, messages)


def test_a_zstandard_member_declaring_size_0_is_read_as_a_capped_stream(tmp_path: Path) -> None:
    messages = _messages(_bombs.zstd_size_zero_eval(tmp_path / "z.eval"))
    assert len(messages) == 1 and "MAX_EXPANDED_BYTES_PER_FILE" in messages[0], messages


def test_attachments_under_the_budget_are_still_put_back(tmp_path: Path) -> None:
    sample = _bombs._attachment_sample(refs=3, size=1000)
    path = tmp_path / "small.json"
    path.write_text(__import__("json").dumps({**_bombs.HEADER, "samples": [sample]}), encoding="utf-8")
    (trace,) = iter_traces(path)
    assert not isinstance(trace, TraceFormatError)
    assert [s.content for s in trace.steps] == ["x" * 1000] * 3
    assert MAX_EXPANDED_BYTES_PER_FILE == 32 * 2**20  # the figure SECURITY.md documents
