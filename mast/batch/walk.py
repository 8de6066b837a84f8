"""Which files under the given paths are read as traces, and which are skipped and why.

A folder walk takes names ending in :data:`~mast.normalize.TRACE_SUFFIXES`; ``--include`` globs add
other names (``*.md``, ``*.out``, ``*`` for everything), ``--exclude`` globs take names out. The
results file a run writes (and files named after it: lock, state) is never an
input, so ``mast label . -o out.jsonl`` does not read its own output. Files named on the command
line are always read, except the results file. What was skipped is counted by reason, so a folder
of ``.md`` files is not silently "0 judged".

Example:
    >>> selection = select_files(["runs/"], include=["*.md"], exclude=["*draft*"])  # doctest: +SKIP
    >>> selection.files, selection.skipped_summary()  # doctest: +SKIP
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mast.errors import UsageError
from mast.normalize import TRACE_SUFFIXES

__all__ = ["FileSelection", "no_traces_error", "select_files"]

REASON_SUFFIX = "not a trace file name"
REASON_EXCLUDED = "matched --exclude"
REASON_OUTPUT = "the results file of this run"
REASON_HIDDEN = "hidden"


@dataclass
class FileSelection:
    """The files to read, and the files skipped, grouped by reason."""

    files: list[Path] = field(default_factory=list)
    skipped: dict[str, list[Path]] = field(default_factory=dict)

    def skip(self, path: Path, reason: str) -> None:
        """Note ``path`` as skipped for ``reason``."""
        self.skipped.setdefault(reason, []).append(path)

    def skipped_summary(self) -> str | None:
        """``skipped 3 files: 2 not a trace file name (.md, .out), 1 the results file of this run``."""
        total = sum(len(paths) for reason, paths in self.skipped.items() if reason != REASON_HIDDEN)
        if not total:
            return None
        parts = []
        for reason, paths in sorted(self.skipped.items(), key=lambda kv: -len(kv[1])):
            if reason == REASON_HIDDEN:
                continue  # dot-files (.git, .DS_Store) are never traces; counting them is noise
            detail = ""
            if reason == REASON_SUFFIX:
                suffixes = sorted({p.suffix.lower() or "no extension" for p in paths})
                detail = f" ({', '.join(suffixes[:6])}{', ...' if len(suffixes) > 6 else ''})"
            parts.append(f"{len(paths)} {reason}{detail}")
        noun = "file" if total == 1 else "files"
        hint = "; --include GLOB reads other names" if REASON_SUFFIX in self.skipped else ""
        return f"skipped {total} {noun}: {', '.join(parts)}{hint}"


def _matches(path: Path, globs: Sequence[str]) -> bool:
    """A glob matches the file name, or the path as given (``logs/*.out``)."""
    text = path.as_posix()
    return any(fnmatch.fnmatch(path.name, g) or fnmatch.fnmatch(text, g) for g in globs)


def _output_names(outputs: Iterable[str | os.PathLike[str]]) -> tuple[set[Path], list[tuple[Path, str]]]:
    """The results files (resolved), and ``(folder, name)`` of each, to skip ``name.*`` beside them."""
    exact: set[Path] = set()
    stems: list[tuple[Path, str]] = []
    for output in outputs:
        resolved = _resolved(Path(output))
        exact.add(resolved)
        stems.append((resolved.parent, resolved.name))
    return exact, stems


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symbolic link loop: read (and reported) as the path it is
        return path.absolute()


def _is_output(path: Path, exact: set[Path], stems: list[tuple[Path, str]]) -> bool:
    resolved = _resolved(path)
    if resolved in exact:
        return True
    # results.jsonl.lock, results.jsonl.state: files a results store keeps beside its output.
    return any(resolved.parent == folder and resolved.name.startswith(f"{stem}.") for folder, stem in stems)


def select_files(
    paths: Iterable[str | os.PathLike[str]],
    *,
    recursive: bool = True,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    outputs: Iterable[str | os.PathLike[str]] = (),
) -> FileSelection:
    """The files to read under ``paths`` (in sorted walk order), and the ones skipped with a reason.

    Args:
        paths: files and folders.
        recursive: walk sub-folders.
        include: extra globs a file name (or path) may match to be read from a folder.
        exclude: globs that take a file out, given or found.
        outputs: results files of this run: never read, nor files named ``<name>.*`` beside them.

    Raises:
        UsageError: a path that does not exist.
    """
    exact, stems = _output_names(outputs)
    selection = FileSelection()

    def consider(file: Path, *, given: bool) -> None:
        if _is_output(file, exact, stems):
            selection.skip(file, REASON_OUTPUT)
        elif exclude and _matches(file, exclude):
            selection.skip(file, REASON_EXCLUDED)
        elif given or file.suffix.lower() in TRACE_SUFFIXES or (include and _matches(file, include)):
            selection.files.append(file)
        else:
            selection.skip(file, REASON_SUFFIX)

    for given in paths:
        path = Path(given)
        if path.is_file() or path.is_symlink() or (path.exists() and not path.is_dir()):
            consider(path, given=True)  # a pipe or a broken link is read, and reported with its reason
        elif path.is_dir():
            for root, dirs, names in os.walk(path, followlinks=False):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if recursive else []
                for name in sorted(names):
                    file = Path(root) / name
                    if name.startswith("."):
                        selection.skip(file, REASON_HIDDEN)
                    else:
                        consider(file, given=False)
        else:
            raise UsageError(f"{path}: no such file or folder")
    return selection


def no_traces_error(paths: Sequence[str], selection: FileSelection) -> UsageError:
    """The error for a run that found no trace at all (exit 2), saying what was skipped."""
    where = ", ".join(paths[:3]) + (", ..." if len(paths) > 3 else "")
    summary = selection.skipped_summary()
    return UsageError(f"no traces found in {where}" + (f" ({summary})" if summary else ""))
