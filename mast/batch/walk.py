"""Which files under the given paths are read as traces, and which are skipped and why.

A folder walk takes names ending in :data:`~mast.normalize.TRACE_SUFFIXES`; ``--include`` globs add
other names (``*.md``, ``*.out``, ``*`` for everything), ``--exclude`` globs take names out. The
results file a run writes (and files named after it: lock, state) is never an
input, so ``mast label . -o out.jsonl`` does not read its own output. Files named on the command
line are always read, except the results file. A symbolic link found in a folder is read only when
its target lies inside that folder (``--follow-symlinks`` reads the others too). What was skipped is counted by reason, so a folder
of ``.md`` files is not silently "0 judged".

The walk is a stream (:func:`walk_files`): ``mast label`` starts judging with the first file found
and holds no list of the files; :func:`select_files` collects the same walk into a list for the
commands that want one.

Example:
    >>> selection = select_files(["runs/"], include=["*.md"], exclude=["*draft*"])  # doctest: +SKIP
    >>> selection.files, selection.skipped_summary()  # doctest: +SKIP
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mast._outputs import terminal_safe
from mast.errors import UsageError
from mast.normalize import TRACE_SUFFIXES, link_leaves

__all__ = ["FileSelection", "no_traces_error", "select_files", "walk_files"]

REASON_SUFFIX = "not a trace file name"
REASON_EXCLUDED = "matched --exclude"
REASON_OUTPUT = "the results file of this run"
REASON_HIDDEN = "hidden"
REASON_LINK_OUT = "a link that leaves the folder"
MAX_LINKS_NAMED = 20
"""Links out of the folder named in the skipped summary; past it, "and N more"."""


@dataclass
class FileSelection:
    """The files to read, and the files skipped, counted by reason.

    :func:`select_files` fills ``files``; :func:`walk_files` leaves it empty and yields the files
    instead, so a walk of a million files holds none of them. Skipped files are counted (with their
    suffixes, for the hint), not listed.
    """

    files: list[Path] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    """Files skipped per reason."""
    found: int = 0
    """Files selected so far."""
    _suffixes: set[str] = field(default_factory=set)
    _links: list[str] = field(default_factory=list)

    def skip(self, path: Path, reason: str) -> None:
        """Note ``path`` as skipped for ``reason``."""
        self.skipped[reason] = self.skipped.get(reason, 0) + 1
        if reason == REASON_SUFFIX:
            self._suffixes.add(path.suffix.lower() or "no extension")
        elif reason == REASON_LINK_OUT and len(self._links) < MAX_LINKS_NAMED:
            self._links.append(terminal_safe(path))

    def skipped_summary(self) -> str | None:
        """``skipped 3 files: 2 not a trace file name (.md, .out), 1 the results file of this run``."""
        total = sum(count for reason, count in self.skipped.items() if reason != REASON_HIDDEN)
        if not total:
            return None
        parts = []
        for reason, count in sorted(self.skipped.items(), key=lambda kv: -kv[1]):
            if reason == REASON_HIDDEN:
                continue  # dot-files (.git, .DS_Store) are never traces; counting them is noise
            detail = ""
            if reason == REASON_SUFFIX:
                suffixes = sorted(self._suffixes)
                detail = f" ({', '.join(suffixes[:6])}{', ...' if len(suffixes) > 6 else ''})"
            elif reason == REASON_LINK_OUT:
                more = f", and {count - len(self._links):,} more" if count > len(self._links) else ""
                detail = f" ({', '.join(self._links)}{more}; --follow-symlinks reads them)"
            parts.append(f"{count} {reason}{detail}")
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
    follow_symlinks: bool = False,
) -> FileSelection:
    """The files to read under ``paths`` (in sorted walk order), and the ones skipped with a reason.

    The whole walk as a list; :func:`walk_files` is the same walk as a stream.

    Args:
        paths: files and folders.
        recursive: walk sub-folders.
        include: extra globs a file name (or path) may match to be read from a folder.
        exclude: globs that take a file out, given or found.
        outputs: results files of this run: never read, nor files named ``<name>.*`` beside them.
        follow_symlinks: read a link found in a folder even when its target is outside that folder
            (by default it is skipped and counted: a trace archive holding a link to
            ``~/.aws/credentials`` must not send that file to the judge).

    Raises:
        UsageError: a path that does not exist.
    """
    selection = FileSelection()
    selection.files.extend(walk_files(paths, selection, recursive=recursive, include=include, exclude=exclude,
                                      outputs=outputs, follow_symlinks=follow_symlinks))
    return selection


def walk_files(
    paths: Iterable[str | os.PathLike[str]],
    selection: FileSelection,
    *,
    recursive: bool = True,
    include: Sequence[str] = (),
    exclude: Sequence[str] = (),
    outputs: Iterable[str | os.PathLike[str]] = (),
    follow_symlinks: bool = False,
) -> Iterator[Path]:
    """The files :func:`select_files` selects, one at a time as the folders are walked.

    What is skipped is counted into ``selection`` as the walk goes (complete once the walk ends);
    ``selection.found`` counts the files yielded. Every path given is checked before the first file
    comes, so a missing one fails at once, not half-way through a run.

    Raises:
        UsageError: a path that does not exist (raised by this call, before iterating).
    """
    given = [Path(p) for p in paths]
    for path in given:
        if not (path.exists() or path.is_symlink()):
            raise UsageError(f"{path}: no such file or folder")
    return _walk(given, selection, recursive, include, exclude, _output_names(outputs), follow_symlinks)


def _walk(paths: list[Path], selection: FileSelection, recursive: bool, include: Sequence[str],
          exclude: Sequence[str], outputs: tuple[set[Path], list[tuple[Path, str]]],
          follow_symlinks: bool = False) -> Iterator[Path]:
    exact, stems = outputs

    def selected(file: Path, *, given: bool) -> bool:
        if _is_output(file, exact, stems):
            selection.skip(file, REASON_OUTPUT)
        elif exclude and _matches(file, exclude):
            selection.skip(file, REASON_EXCLUDED)
        elif given or file.suffix.lower() in TRACE_SUFFIXES or (include and _matches(file, include)):
            selection.found += 1
            return True
        else:
            selection.skip(file, REASON_SUFFIX)
        return False

    for path in paths:
        if not path.is_dir() and (path.is_file() or path.is_symlink() or path.exists()):
            if selected(path, given=True):  # a pipe or a broken link is read, and reported with its reason
                yield path
        elif path.is_dir():
            top = _resolved(path)
            for root, dirs, names in os.walk(path, followlinks=False):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".")) if recursive else []
                for name in sorted(names):
                    file = Path(root) / name
                    if name.startswith("."):
                        selection.skip(file, REASON_HIDDEN)
                    elif not follow_symlinks and link_leaves(file, top):
                        selection.skip(file, REASON_LINK_OUT)
                    elif selected(file, given=False):
                        yield file
        else:  # removed since the check: the same one-line error
            raise UsageError(f"{path}: no such file or folder")


def no_traces_error(paths: Sequence[str], selection: FileSelection) -> UsageError:
    """The error for a run that found no trace at all (exit 2), saying what was skipped."""
    where = ", ".join(paths[:3]) + (", ..." if len(paths) > 3 else "")
    summary = selection.skipped_summary()
    return UsageError(f"no traces found in {where}" + (f" ({summary})" if summary else ""))
