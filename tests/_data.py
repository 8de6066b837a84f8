"""Where the tests' third-party data lives: beside the repository, never in it.

Files taken from public repositories and data sets (the real-file corpus, the sample traces, the
human-labelled sets, reference copies) are kept in a folder beside the checkout, ``../shared``, which
developer machines and CI have (read-only); ``MAST_TEST_CORPUS`` names another folder holding the same
layout. This module is the one place that locates it (``tests/test_self_contained.py`` checks that):

- ``REAL``: the real-file corpus, ``real/<format>/`` (files byte for byte, with their MANIFEST tables);
- ``TRACES``: the sample traces, ``traces/<folder>/``;
- ``LABELS``: the human-labelled sets, ``labels/<set>/``; ``VALIDATION`` holds exactly the files each set
  pins (``mast/data/label_sets.json``), copied from there and sha256-checked once per test run, laid out
  as ``mast validate --data`` reads them;
- ``REFERENCE``: reference copies (``reference/``).

On a clone with nothing beside it, ``CORPUS`` is ``None``, every path above points at a folder that does
not exist, and the tests that use them are skipped with :data:`SKIP_REASON` (``tests/conftest.py`` marks
them and prints the count once). The goldens, the project's own writing, stay in ``tests/golden/``;
each names the file it describes by repository, path, commit and sha256, which :func:`verified` checks.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CORPUS_ENV = "MAST_TEST_CORPUS"


def _locate() -> Path | None:
    named = os.environ.get(CORPUS_ENV)
    candidate = Path(named) if named else REPO.parent / "shared"
    return candidate.resolve() if (candidate / "real").is_dir() else None


CORPUS: Path | None = _locate()
"""The third-party corpus folder, or ``None`` when it is not beside the checkout."""
_BASE = CORPUS if CORPUS is not None else REPO.parent / "shared"
REAL = _BASE / "real"
TRACES = _BASE / "traces"
LABELS = _BASE / "labels"
VALIDATION = Path(tempfile.gettempdir()) / f"mast-test-label-sets-{os.getpid()}"
REFERENCE = _BASE / "reference"
GOLDENS = REPO / "tests" / "golden"
SKIP_REASON = (
    f"third-party corpus not found beside the checkout ({REPO.parent / 'shared'}; "
    f"or set {CORPUS_ENV} to a copy): real-file, sample-trace and label-set tests skipped"
)
CORPUS_NAMES = ("REAL", "TRACES", "LABELS", "VALIDATION", "REFERENCE", "real_files", "sample_files")
"""Names whose use in a test (or a fixture it requests) marks it as needing the corpus."""


class CorpusMismatch(AssertionError):
    """A corpus file whose bytes are not the ones its golden names."""


@cache
def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def verified(path: Path, sha256: str) -> Path:
    """``path``, after checking its bytes are the ones a golden or MANIFEST names (a changed corpus fails loudly)."""
    got = sha256_of(path)
    if got != sha256.lower():
        raise CorpusMismatch(f"{path}: sha256 {got[:16]}… is not the {sha256[:16]}… its golden names")
    return path


def build_label_sets() -> Path:
    """Fill :data:`VALIDATION` with each set's pinned files from the corpus, each sha256-checked; the folder.

    The corpus' label folders may hold more than a set pins (all 184 Who&When records, say); the tests
    measure what ``mast validate`` measures, so they read exactly the pinned files.
    """
    pinned = json.loads((REPO / "mast" / "data" / "label_sets.json").read_text(encoding="utf-8"))["sets"]
    for folder, files in pinned.items():
        for entry in files:
            target = VALIDATION / folder / entry["file"]
            if target.is_file():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(verified(LABELS / folder / entry["file"], entry["sha256"]), target)
    return VALIDATION


def remove_label_sets() -> None:
    shutil.rmtree(VALIDATION, ignore_errors=True)
