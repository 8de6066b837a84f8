"""Real files kept out of git, checked against goldens that are committed (``tests/goldens/<format>/GOLDEN.yaml``).

The bytes are third-party, so they live in ``tests/untracked/real/<format>/`` (git-ignored) or in the
shared corpus (``../shared/real/<format>/``); each golden names the repository, path, commit and
sha256 of its file. A test skips, saying what to fetch, when its file is absent.
"""

from __future__ import annotations

import hashlib

import pytest
import test_real_files as real_checks  # the module, not its names: pytest must not collect its tests twice
from _real import UNTRACKED_GOLDENS, ManifestRow, RealFile, untracked_file, untracked_goldens


def _cases() -> list[tuple[str, str, dict[str, object]]]:
    folders = (
        sorted(p.name for p in UNTRACKED_GOLDENS.iterdir() if p.is_dir())
        if UNTRACKED_GOLDENS.is_dir()
        else []
    )
    return [
        (folder, name, golden)
        for folder in folders
        for name, golden in sorted(untracked_goldens(folder).items())
    ]


@pytest.mark.parametrize(
    ("folder", "name", "golden"), _cases(), ids=lambda v: v if isinstance(v, str) else ""
)
def test_untracked_real_file_reads_as_its_golden(folder: str, name: str, golden: dict[str, object]) -> None:
    path = untracked_file(folder, name)
    if path is None:
        pytest.skip(
            f"{folder}/{name} is not here: fetch {golden['repo']}:{golden['path']}@{golden['commit']} into tests/untracked/real/{folder}/"
        )
    assert hashlib.sha256(path.read_bytes()).hexdigest() == golden["sha256"], (
        f"{path}: not the bytes the golden was written for"
    )
    row = ManifestRow(
        name,
        None,
        str(golden["repo"]),
        str(golden["path"]),
        str(golden["commit"]),
        str(golden["licence"]),
        str(golden["sha256"]),
    )
    problems = real_checks._check(RealFile(folder, path, row, golden))
    assert not problems, f"{folder}/{name}:\n  " + "\n  ".join(problems)
