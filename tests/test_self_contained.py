"""Third-party files live beside the repository, never in it; the tests reach them only through ``tests/_data.py``."""

from __future__ import annotations

import hashlib
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from _data import CORPUS, GOLDENS, REPO

# Ways code can point at the folder beside the checkout: a relative path to it, the variable naming a
# copy, a Path joined with its name (REPO.parent / name), or its absolute location on the development
# machines. Only tests/_data.py may do so (and this file, which spells the patterns out).
OUTSIDE = re.compile(
    "|".join([
        r"\.\./" + "shared",
        "MAST_" + "TEST_CORPUS",
        "MAST_" + "SHARED",
        r"/\s*[\"']" + "shared" + r"[\"']",
        r"[\"']" + "shared" + r"[\"']\s*/",
        r"/work/" + "shared",
    ])
)
LOCATOR = REPO / "tests" / "_data.py"
SCANNED = ("tests", "notebooks", "benchmarks", "mast", "docs", ".ci")
# Folders that held third-party data before it moved beside the repository; nothing may come back.
RETIRED = ("tests/data/real", "tests/data/traces", "tests/data/traces_golden", "data/validation", "data/reference")


def tracked() -> list[Path]:
    if not (REPO / ".git").exists():
        pytest.skip("not a git checkout (an unpacked sdist, say): no file is tracked here")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    return [REPO / name for name in out.decode().split("\0") if name and (REPO / name).is_file()]


def test_only_the_locator_refers_to_the_folder_beside_the_repository() -> None:
    files = [p for p in tracked() if p.parts[len(REPO.parts)] in SCANNED and p.suffix not in (".png", ".pyc")]
    assert len(files) > 100  # the scan really walked the trees
    hits = []
    for path in files:
        if path in (LOCATOR, Path(__file__).resolve()):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        hits += [f"{path.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group()}" for m in OUTSIDE.finditer(text)]
    assert not hits, "files that reach the third-party corpus other than through tests/_data.py:\n" + "\n".join(hits)


def test_the_pattern_catches_the_ways_it_is_done() -> None:
    for line in ['SHARED = REPO.parent / "shared"', "see ../" "shared/labels", 'os.environ["MAST_' 'TEST_CORPUS"]',
                 "Path('/work/" "shared/traces')", "root = 'shared' / x"]:
        assert OUTSIDE.search(line), line
    for line in ["from mast.cli._shared import stdout", "stop_shared_servers()", 'cache.put("shared", {})']:
        assert not OUTSIDE.search(line), line


def test_no_third_party_data_folder_is_tracked() -> None:
    names = [p.relative_to(REPO).as_posix() for p in tracked()]
    back = [n for n in names if n.startswith(tuple(f"{r}/" for r in RETIRED))]
    assert not back, f"third-party data is tracked again: {back[:5]}"
    # A MANIFEST describes third-party files kept beside the data they describe; none may be tracked.
    assert not [n for n in names if n.endswith("MANIFEST.md")], "a MANIFEST.md is tracked: its data must be beside it"


@pytest.mark.corpus
def test_no_tracked_file_is_byte_identical_to_a_corpus_file() -> None:
    assert CORPUS is not None
    corpus = {hashlib.sha256(p.read_bytes()).hexdigest(): p for p in CORPUS.rglob("*") if p.is_file()}
    # An empty file or a bare `{}` is no one's data; every other byte-identical copy is.
    trivial = {hashlib.sha256(b).hexdigest() for b in (b"", b"{}", b"{}\n", b"[]", b"[]\n")}
    same = [
        f"{p.relative_to(REPO)} == {corpus[d].relative_to(CORPUS)}"
        for p in tracked()
        if (d := hashlib.sha256(p.read_bytes()).hexdigest()) in corpus and d not in trivial
    ]
    assert not same, "tracked files that are copies of third-party files:\n" + "\n".join(same)


def test_every_golden_names_its_file_by_repository_path_commit_and_sha256() -> None:
    goldens = sorted(GOLDENS.glob("*/*/GOLDEN.yaml"))
    assert len(goldens) >= 40
    entries = 0
    for path in goldens:
        for name, golden in (yaml.safe_load(path.read_text(encoding="utf-8")) or {}).items():
            source = golden.get("source") or {}
            missing = [k for k in ("repo", "path", "commit", "sha256") if not source.get(k)]
            assert not missing, f"{path.relative_to(REPO)}: {name} has no source {missing}"
            assert re.fullmatch(r"[0-9a-f]{64}", source["sha256"]), f"{name}: sha256 is not 64 hex digits"
            entries += 1
    assert entries >= 100
