"""How each format is proven: the real files from public repositories its reader is tested on.

The numbers come from the goldens of the real-file corpus (``tests/golden/real/<format>/GOLDEN.yaml``:
what a reader sees in each file and the file's source repository, path, commit and sha256; the files
themselves are kept beside the repository). An installed wheel has no tests, so the counts travel as ``mast/data/format_coverage.json``, written by
``MAST_UPDATE_GOLDEN=1 pytest tests/test_real_files.py`` and checked to be current by that test.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

COVERAGE_FILE = Path(__file__).resolve().parent.parent / "data" / "format_coverage.json"
DOCUMENTATION_ONLY = "from documentation only"


@dataclass(frozen=True)
class Coverage:
    """The real files one format is tested on."""

    files: int
    repositories: tuple[str, ...]
    versions: tuple[str, ...]

    @property
    def summary(self) -> str:
        """``tested on 4 real files from 2 repositories``."""
        files = f"{self.files} real file{'s' if self.files != 1 else ''}"
        repos = f"{len(self.repositories)} repositor{'ies' if len(self.repositories) != 1 else 'y'}"
        return f"tested on {files} from {repos}"


@lru_cache(maxsize=1)
def format_coverage() -> dict[str, Coverage]:
    """Coverage per format name; a format absent here is read from its documentation only."""
    try:
        data = json.loads(COVERAGE_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    out: dict[str, Coverage] = {}
    for name, entry in (data.get("formats") or {}).items():
        if isinstance(entry, dict):
            out[name] = Coverage(int(entry.get("files") or 0), tuple(entry.get("repositories") or ()), tuple(entry.get("versions") or ()))
    return out


def coverage_summary(name: str) -> str:
    """One line for ``mast formats``: how many real files from how many repositories, or documentation only."""
    entry = format_coverage().get(name)
    return entry.summary if entry is not None and entry.files else DOCUMENTATION_ONLY
