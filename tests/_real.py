"""The real-file corpus (``real/<format>/`` beside the checkout): its MANIFESTs, its goldens, and what a trace shows.

Each corpus folder holds files found in public repositories, byte for byte, with a ``MANIFEST.md`` table
(file, bytes, source repo, path in repo, commit, licence, sha256); it lives outside the repository
(``tests/_data.py`` finds it). The goldens, what a careful reader sees in each file, written without
reading mast's code, are the project's own and live in ``tests/golden/real/<format>/GOLDEN.yaml``; each
entry names its file's ``source`` (repo, path, commit, sha256, licence), checked against the bytes read.
``tests/test_real_files.py`` checks mast against the goldens; ``tests/test_real_mutations.py`` mutates
the files; the coverage that ``mast formats`` shows (``mast/data/format_coverage.json``) is computed
from the goldens alone, so it is the same with or without the corpus.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from _data import GOLDENS, REAL, REPO, TRACES, verified

from mast.trace import Trace

REAL_GOLDEN = GOLDENS / "real"
TRACES_GOLDEN = GOLDENS / "traces"
"""Goldens for the real files of the older sample folders (``traces/<folder>/`` of the corpus)."""
COVERAGE_FILE = REPO / "mast" / "data" / "format_coverage.json"
KEEP = {"MANIFEST.md", "GOLDEN.yaml"}
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
        rows[cells[0]] = ManifestRow(cells[0], int(size) if size.isdigit() else None, cells[2], cells[3], cells[4], cells[5], cells[6].lower())
    return rows


def goldens(folder: Path) -> dict[str, dict[str, Any]]:
    path = folder / "GOLDEN.yaml"
    if not path.is_file():
        return {}
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {str(k): v for k, v in data.items() if isinstance(v, dict)}


def folders() -> list[Path]:
    return sorted(p for p in REAL.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))) if REAL.is_dir() else []


def _checked(path: Path, golden: dict[str, Any] | None) -> Path:
    source = (golden or {}).get("source") or {}
    return verified(path, str(source["sha256"])) if source.get("sha256") else path


def real_files() -> list[RealFile]:
    """Every data file of the corpus (everything in a folder but its MANIFEST), each checked against its golden's sha256."""
    found: list[RealFile] = []
    for folder in folders():
        rows, gold = manifest_rows(folder), goldens(REAL_GOLDEN / folder.name)
        for path in sorted(folder.iterdir()):
            if path.is_file() and path.name not in KEEP and not path.name.startswith("."):
                golden = gold.get(path.name)
                found.append(RealFile(folder.name, _checked(path, golden), rows.get(path.name), golden))
    return found


def golden_entries() -> list[tuple[str, str, dict[str, Any]]]:
    """(folder, file name, golden) for every golden of the real corpus and the sample folders; no corpus needed."""
    entries: list[tuple[str, str, dict[str, Any]]] = []
    for root, prefix in ((REAL_GOLDEN, ""), (TRACES_GOLDEN, "traces/")):
        for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []:
            entries += [(prefix + folder.name, name, golden) for name, golden in sorted(goldens(folder).items())]
    return entries


def sample_files() -> list[RealFile]:
    """The files of the corpus' ``traces/<folder>/`` that have a golden in ``tests/golden/traces/<folder>/``."""
    found: list[RealFile] = []
    if not TRACES_GOLDEN.is_dir() or not TRACES.is_dir():
        return found
    for golden_dir in sorted(p for p in TRACES_GOLDEN.iterdir() if p.is_dir()):
        folder = TRACES / golden_dir.name
        rows = manifest_rows(folder)
        for name, golden in sorted(goldens(golden_dir).items()):
            path = folder / name
            found.append(RealFile(f"traces/{golden_dir.name}", _checked(path, golden) if path.is_file() else path,
                                  rows.get(name), golden))
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
    return sum(1 for s in trace.steps if not (s.role in ("system", "developer") and s.kind == "system" and not s.attributes.get("event")))


def tool_calls(traces: list[Trace]) -> list[str]:
    return [c.name for t in traces for s in t.steps for c in s.tool_calls]


def coverage(entries: list[tuple[str, str, dict[str, Any]]] | None = None) -> dict[str, dict[str, Any]]:
    """Per format: real files, source repositories and framework versions, read from the goldens' ``source``."""
    out: dict[str, dict[str, Any]] = {}
    for _folder, _name, golden in entries if entries is not None else golden_entries():
        source = golden.get("source") or {}
        repo = str(source.get("repo") or "")
        if not repo or WRITTEN_FOR_MAST in repo.lower() or not golden.get("format"):
            continue  # a file written for mast, or no trace (its golden names no format), proves no reader
        fmt = str(golden["format"])
        entry = out.setdefault(fmt, {"files": 0, "repositories": [], "versions": []})
        entry["files"] += 1
        if repo not in entry["repositories"]:
            entry["repositories"].append(repo)
        version = str(golden.get("version") or "").strip()
        if version and version not in entry["versions"]:
            entry["versions"].append(version)
    for entry in out.values():
        entry["repositories"] = sorted(entry["repositories"])
        entry["versions"] = sorted(entry["versions"])
    return dict(sorted(out.items()))


README_START = "<!-- format-coverage: written by MAST_UPDATE_GOLDEN=1 pytest tests/test_real_files.py -->"
README_END = "<!-- /format-coverage -->"


def coverage_document(entries: list[tuple[str, str, dict[str, Any]]] | None = None) -> dict[str, Any]:
    """What ``mast/data/format_coverage.json`` holds (no dates: it changes only when the corpus does)."""
    return {
        "schema": "mast-format-coverage/1",
        "source": "tests/golden/{real,traces}/<folder>/GOLDEN.yaml (each entry's source repository, format and version)",
        "formats": coverage(entries),
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
