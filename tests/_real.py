"""The real-file corpus (``tests/data/real/<format>/``): its MANIFESTs, its goldens, and what a trace shows.

Each folder holds files found in public repositories, byte for byte, a ``MANIFEST.md`` table (file,
bytes, source repo, path in repo, commit, licence, sha256) and a ``GOLDEN.yaml`` of what a careful
reader sees in each file, written without reading mast's code. ``tests/test_real_files.py`` checks
mast against the goldens; ``tests/test_real_mutations.py`` mutates the files; the coverage that
``mast formats`` shows (``mast/data/format_coverage.json``) is computed here.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from _data import REPO

from mast.trace import Trace

REAL = REPO / "tests" / "data" / "real"
TRACES = REPO / "tests" / "data" / "traces"
TRACES_GOLDEN = REPO / "tests" / "data" / "traces_golden"
"""Goldens for the real files of the older sample folders (``tests/data/traces/<folder>/``), kept apart
because the sample-corpus test reads every file in those folders as a trace."""
COVERAGE_FILE = REPO / "mast" / "data" / "format_coverage.json"
KEEP = {"MANIFEST.md", "GOLDEN.yaml"}
UNTRACKED = REPO / "tests" / "untracked" / "real"
"""Real files kept out of git (third-party bytes): ``tests/untracked/real/<format>/``, else the shared corpus."""
SHARED = REPO.parent / "shared" / "real"
UNTRACKED_GOLDENS = REPO / "tests" / "goldens"
"""Goldens (our writing, committed) of the untracked real files, with each file's repository, path, commit and sha256."""
WRITTEN_FOR_MAST = "written for mast"
_CELL_CODE = re.compile(r"^`(.*)`$")


@dataclass
class ManifestRow:
    """One row of a folder's MANIFEST table."""

    file: str
    bytes: int | None
    repo: str
    path: str
    commit: str
    licence: str
    sha256: str


@dataclass
class RealFile:
    """A file of the corpus with its folder's manifest row (if any) and golden (if any)."""

    folder: str
    path: Path
    row: ManifestRow | None
    golden: dict[str, Any] | None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.folder}/{self.path.name}"


def _cell(text: str) -> str:
    text = text.strip()
    match = _CELL_CODE.match(text)
    return match.group(1) if match else text


def manifest_rows(folder: Path) -> dict[str, ManifestRow]:
    """The rows of ``folder/MANIFEST.md``'s table, by file name (the header and rule rows skipped)."""
    path = folder / "MANIFEST.md"
    rows: dict[str, ManifestRow] = {}
    if not path.is_file():
        return rows
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            continue
        cells = [_cell(c) for c in line.strip().strip("|").split("|")]
        if len(cells) < 7 or cells[0] in ("file", "") or set(cells[0]) <= set("-: "):
            continue
        size = cells[1].replace(",", "").strip()
        rows[cells[0]] = ManifestRow(
            cells[0],
            int(size) if size.isdigit() else None,
            cells[2],
            cells[3],
            cells[4],
            cells[5],
            cells[6].lower(),
        )
    return rows


def goldens(folder: Path) -> dict[str, dict[str, Any]]:
    path = folder / "GOLDEN.yaml"
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {str(k): v for k, v in data.items() if isinstance(v, dict)}


def untracked_file(folder: str, name: str) -> Path | None:
    """A real file kept out of git, from ``tests/untracked/real/`` or ``../shared/real/``; ``None`` when neither has it."""
    for root in (UNTRACKED, SHARED):
        path = root / folder / name
        if path.is_file():
            return path
    return None


def untracked_goldens(folder: str) -> dict[str, dict[str, Any]]:
    """The goldens of ``tests/goldens/<folder>/GOLDEN.yaml``, by file name."""
    return goldens(UNTRACKED_GOLDENS / folder)


def untracked_real_files() -> list[RealFile]:
    """The files ``tests/goldens/`` describes, present or not: their goldens say where each came from.

    Coverage counts them either way (it must not change with what one checkout happens to hold);
    ``tests/test_real_untracked.py`` checks each one where it is present.
    """
    found: list[RealFile] = []
    folders = (
        sorted(p for p in UNTRACKED_GOLDENS.iterdir() if p.is_dir()) if UNTRACKED_GOLDENS.is_dir() else []
    )
    for folder in folders:
        for name, golden in sorted(goldens(folder).items()):
            row = ManifestRow(
                name,
                None,
                str(golden.get("repo")),
                str(golden.get("path")),
                str(golden.get("commit")),
                str(golden.get("licence")),
                str(golden.get("sha256")),
            )
            path = untracked_file(folder.name, name) or UNTRACKED / folder.name / name
            found.append(RealFile(folder.name, path, row, golden))
    return found


def folders() -> list[Path]:
    return (
        sorted(p for p in REAL.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
        if REAL.is_dir()
        else []
    )


def real_files() -> list[RealFile]:
    """Every data file of the corpus (everything in a folder but its MANIFEST and GOLDEN)."""
    found: list[RealFile] = []
    for folder in folders():
        rows, gold = manifest_rows(folder), goldens(folder)
        for path in sorted(folder.iterdir()):
            if path.is_file() and path.name not in KEEP and not path.name.startswith("."):
                found.append(RealFile(folder.name, path, rows.get(path.name), gold.get(path.name)))
    return found


def sample_files() -> list[RealFile]:
    """The files of ``tests/data/traces/<folder>/`` that have a golden in ``tests/data/traces_golden/<folder>/``."""
    found: list[RealFile] = []
    if not TRACES_GOLDEN.is_dir():
        return found
    for golden_dir in sorted(p for p in TRACES_GOLDEN.iterdir() if p.is_dir()):
        folder = TRACES / golden_dir.name
        rows = manifest_rows(folder)
        for name, golden in sorted(goldens(golden_dir).items()):
            found.append(RealFile(f"traces/{golden_dir.name}", folder / name, rows.get(name), golden))
    return found


def is_real(item: RealFile) -> bool:
    """A file found in a public repository (not one written for mast)."""
    return item.row is not None and WRITTEN_FOR_MAST not in item.row.repo.lower()


# -- what a trace shows, compared the way a reader compares ------------------------------------


def fold(text: str | None) -> str:
    """Text compared loosely: NFKC, case folded, whitespace collapsed, markdown emphasis and quotes dropped."""
    text = unicodedata.normalize("NFKC", text or "").casefold()
    text = re.sub(r"[*_`\"'“”‘’]", "", text)
    return re.sub(r"\s+", " ", text).strip()


def agent_names(traces: list[Trace]) -> set[str]:
    names = {a.name for t in traces for a in t.agents} | {s.agent for t in traces for s in t.steps if s.agent}
    return {fold(n) for n in names}


def step_count(trace: Trace) -> int:
    """Steps as a reader counts them: system prompts are an agent's set-up, not steps of the run (framework events are)."""
    return sum(
        1
        for s in trace.steps
        if not (s.role in ("system", "developer") and s.kind == "system" and not s.attributes.get("event"))
    )


def tool_calls(traces: list[Trace]) -> list[str]:
    return [c.name for t in traces for s in t.steps for c in s.tool_calls]


def coverage(files: list[RealFile] | None = None) -> dict[str, dict[str, Any]]:
    """Per format: real files, source repositories and framework versions of the corpus."""
    out: dict[str, dict[str, Any]] = {}
    for item in files if files is not None else [*real_files(), *sample_files(), *untracked_real_files()]:
        if not is_real(item) or item.golden is None or not item.golden.get("format"):
            continue  # a file that is no trace (its golden names no format) proves no reader
        fmt = str(item.golden["format"])
        entry = out.setdefault(fmt, {"files": 0, "repositories": [], "versions": []})
        entry["files"] += 1
        assert item.row is not None
        if item.row.repo not in entry["repositories"]:
            entry["repositories"].append(item.row.repo)
        version = str(item.golden.get("version") or "").strip()
        if version and version not in entry["versions"]:
            entry["versions"].append(version)
    for entry in out.values():
        entry["repositories"] = sorted(entry["repositories"])
        entry["versions"] = sorted(entry["versions"])
    return dict(sorted(out.items()))


README_START = "<!-- format-coverage: written by MAST_UPDATE_GOLDEN=1 pytest tests/test_real_files.py -->"
README_END = "<!-- /format-coverage -->"


def coverage_document(files: list[RealFile] | None = None) -> dict[str, Any]:
    """What ``mast/data/format_coverage.json`` holds (no dates: it changes only when the corpus does)."""
    return {
        "schema": "mast-format-coverage/1",
        "source": "tests/data/real/<format>/MANIFEST.md (files, repositories) and GOLDEN.yaml (versions); tests/goldens/<format>/GOLDEN.yaml for real files kept out of git",
        "formats": coverage(files),
    }


def readme_table(document: dict[str, Any], names: list[str]) -> str:
    """The README's table of formats: real files, repositories, versions; documentation only where none."""
    rows = ["| format | real files | repositories | versions |", "|---|---|---|---|"]
    for name in names:
        entry = document["formats"].get(name)
        if entry is None:
            rows.append(f"| `{name}` | 0 | | from documentation only |")
        else:
            versions = "; ".join(v.replace("|", "/") for v in entry["versions"])
            rows.append(f"| `{name}` | {entry['files']} | {len(entry['repositories'])} | {versions} |")
    return "\n".join([README_START, *rows, README_END])
