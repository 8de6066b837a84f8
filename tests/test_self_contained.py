"""The repository stands on its own: nothing it runs reads a ``shared`` folder beside the checkout,
and its third-party data stays small and documented."""

from __future__ import annotations

import re
from pathlib import Path

from _data import REPO, TRACES, VALIDATION

REAL = REPO / "tests" / "data" / "real"
NOT_DATA = {"MANIFEST.md", "GOLDEN.yaml"}  # a folder's own record of its data, not data

SCANNED = ("tests", "notebooks", "benchmarks", "mast")
# Ways code has pointed outside the repository at the developers' sample folder: a relative path to it,
# its environment variable, a Path joined with its name (REPO.parent / name), or the absolute location on
# the development machines. This file itself is not scanned (it spells the patterns out).
OUTSIDE = re.compile(
    "|".join([
        r"\.\./" + "shared",
        "MAST_" + "SHARED",
        r"/\s*[\"']" + "shared" + r"[\"']",
        r"[\"']" + "shared" + r"[\"']\s*/",
        r"/work/" + "shared",
    ])
)
BUDGET_BYTES = 10_000_000


def scanned_files() -> list[Path]:
    skip = {".ipynb_checkpoints", "__pycache__"}
    return [
        p for top in SCANNED for p in sorted((REPO / top).rglob("*"))
        if p.is_file() and not skip & set(p.parts) and p.suffix not in (".pyc", ".png")
        and p != Path(__file__).resolve()
    ]


def test_nothing_refers_to_a_shared_folder_outside_the_repository() -> None:
    files = scanned_files()
    assert len(files) > 50  # the scan really walked the trees
    hits = []
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        hits += [f"{path.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group()}" for m in OUTSIDE.finditer(text)]
    assert not hits, "files that read a shared folder outside the repository:\n" + "\n".join(hits)


def test_the_pattern_catches_the_ways_it_was_done() -> None:
    for line in ['SHARED = REPO.parent / "shared"', "see ../" "shared/labels", 'os.environ["MAST_' 'SHARED"]',
                 "Path('/work/" "shared/traces')", "root = 'shared' / x"]:
        assert OUTSIDE.search(line), line
    for line in ["from mast.cli._shared import stdout", "stop_shared_servers()", 'cache.put("shared", {})']:
        assert not OUTSIDE.search(line), line


def test_third_party_data_is_small_and_every_folder_has_a_manifest() -> None:
    real = [p for p in REAL.iterdir() if p.is_dir()]
    assert len(real) >= 20  # the real-file corpus (tests/data/real/<format>/) is under the same rules
    folders = [p for p in TRACES.iterdir() if p.is_dir()] + [p for p in VALIDATION.iterdir() if p.is_dir()] + real
    for folder in folders:
        manifest = folder / "MANIFEST.md"
        assert manifest.is_file(), f"{folder} has no MANIFEST.md"
        text = manifest.read_text(encoding="utf-8")
        for path in folder.rglob("*"):
            if path.is_file() and path.name not in NOT_DATA:
                listed = f"`{path.relative_to(folder).as_posix()}`"  # as the MANIFEST tables name files
                assert listed in text, f"{path.relative_to(REPO)} is not listed in its MANIFEST.md"
    size = sum(p.stat().st_size for folder in folders for p in folder.rglob("*") if p.is_file())
    assert size <= BUDGET_BYTES, f"third-party data is {size / 1e6:.1f} MB, over the 10 MB budget"
    listed = (REPO / "THIRD_PARTY_DATA.md").read_text(encoding="utf-8")
    for folder in folders:
        if folder.parent != REAL:  # THIRD_PARTY_DATA.md names tests/data/real/ folders by source, not each one
            assert f"`{folder.relative_to(REPO).as_posix()}/" in listed, f"{folder} missing from THIRD_PARTY_DATA.md"
