"""Public data sets: the MAST data set (MAD, Cemri et al. 2025, CC-BY-4.0).

MAD holds 1,642 multi-agent traces labelled by the MAST LLM annotator (``MAD_full_dataset.json``,
about 200 MB) and the human-labelled rounds (``MAD_human_labelled_dataset.json``). It lives on the
Hugging Face hub as ``mcemri/MAST-Data``.

:func:`load_mad` reads a local copy, or downloads the file with ``huggingface_hub`` (extra
``mast-judge[hub]``) at a fixed revision and checks its sha256. Nothing is downloaded implicitly:
only a call with no ``path`` (and no ``MAST_MAD_PATH``) reaches the network.

Pinning: the returned :class:`MadDataset` records the commit the hub resolved and the file's sha256.
Pass both back (``revision=..., sha256=...``) to make a run reproducible; a file whose sha256
differs is refused. :data:`KNOWN_SHA256` holds the digests this package has verified.

Example:
    >>> ds = load_mad("MAD_full_dataset.json")                      # doctest: +SKIP
    >>> ds.labels().groupby("code")["present"].mean()               # doctest: +SKIP
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict

from mast.errors import EvaluationError, UsageError

if TYPE_CHECKING:
    import pandas as pd

    from mast.errors import TraceFormatError
    from mast.trace import Trace

MAD_REPO_ID = "mcemri/MAST-Data"
"""Hugging Face dataset repository of MAD."""

MAD_FILES: dict[str, str] = {"full": "MAD_full_dataset.json", "human": "MAD_human_labelled_dataset.json"}
"""Which file each ``file=`` choice downloads."""

MAD_REVISION = "main"
"""Revision downloaded when none is given. The machines this package was built on could not reach
the hub to read a commit hash, so the default follows ``main``; every :class:`MadDataset` records
the commit actually resolved, and passing it as ``revision=`` pins a run."""

KNOWN_SHA256: dict[tuple[str, str], str] = {}
"""(revision, file name) -> sha256 verified by this package; checked automatically when present."""

HUB_HINT = "downloading MAD needs huggingface_hub: pip install 'mast-judge[hub]' (or pass path= to a local copy)"


class MadDataset(BaseModel):
    """A MAD file on disk, with where it came from and its checksum."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    path: Path
    """The local file."""
    sha256: str
    """sha256 of the file's bytes."""
    filename: str
    """File name in the hub repository."""
    repo_id: str | None = None
    """Hub repository, when downloaded."""
    revision: str | None = None
    """Commit the hub resolved, when downloaded (pass it back as ``revision=`` to pin)."""

    def records(self) -> Iterator[Any]:
        """The raw records, streamed (the full file is never held twice in memory)."""
        from mast.evaluation.labels import iter_json_records

        return iter_json_records(self.path)

    def labels(self, *, trace_id_prefix: str = "", verification: Literal["paper", "mad-layout"] = "paper") -> pd.DataFrame:
        """Label table of the file (LLM labels, or one row per human annotator); see :mod:`mast.evaluation.mad`."""
        from mast.evaluation.mad import labels_from_mad

        return labels_from_mad(self.records(), source=str(self.path), trace_id_prefix=trace_id_prefix,
                               verification=verification)

    def metadata(self, *, trace_id_prefix: str = "") -> pd.DataFrame:
        """One row per record: trace_id, mas_name, llm_name, benchmark_name, round."""
        from mast.evaluation.mad import mad_metadata

        return mad_metadata(self.records(), trace_id_prefix=trace_id_prefix)

    def traces(self) -> Iterator[Trace | TraceFormatError]:
        """The records as normalised traces (mast's MAD normaliser); an unreadable record comes as its error."""
        from mast.normalize import iter_traces

        return iter_traces(self.path)


def sha256_of(path: str | os.PathLike[str]) -> str:
    """sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_mad(
    path: str | os.PathLike[str] | None = None,
    *,
    file: Literal["full", "human"] = "full",
    repo_id: str = MAD_REPO_ID,
    revision: str = MAD_REVISION,
    sha256: str | None = None,
    endpoint: str | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
) -> MadDataset:
    """Open MAD from a local file, or download it from the Hugging Face hub.

    Args:
        path: a local MAD JSON file. Without it, ``MAST_MAD_PATH`` is used when set; otherwise the
            file is downloaded.
        file: ``full`` (LLM-labelled, 1,642 traces) or ``human`` (the human-labelled rounds).
        repo_id: hub dataset repository.
        revision: branch, tag or commit to download; a commit hash pins the data.
        sha256: expected sha256 of the file; a mismatch raises. Defaults to :data:`KNOWN_SHA256`.
        endpoint: hub URL (default huggingface.co, or ``HF_ENDPOINT``): a mirror, or a local server.
        cache_dir: where huggingface_hub caches downloads.

    Raises:
        UsageError: no such local file, or huggingface_hub missing for a download.
        EvaluationError: the download failed, or the checksum differs.
    """
    if file not in MAD_FILES:
        raise UsageError(f"file must be one of {', '.join(MAD_FILES)}, not {file!r}")
    filename = MAD_FILES[file]
    local = path if path is not None else os.environ.get("MAST_MAD_PATH") or None
    if local is not None:
        where = Path(local)
        if not where.is_file():
            raise UsageError(f"{where}: no such MAD file")
        return _checked(where, filename=Path(where).name, expected=sha256)
    downloaded = _download(repo_id, filename, revision=revision, endpoint=endpoint, cache_dir=cache_dir)
    resolved = _commit_of(downloaded) or revision
    expected = sha256 or KNOWN_SHA256.get((resolved, filename)) or KNOWN_SHA256.get((revision, filename))
    return _checked(downloaded, filename=filename, expected=expected, repo_id=repo_id, revision=resolved)


def _download(
    repo_id: str, filename: str, *, revision: str, endpoint: str | None, cache_dir: str | os.PathLike[str] | None
) -> Path:
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError
    except ImportError as exc:
        raise UsageError(HUB_HINT) from exc
    try:
        local = hf_hub_download(
            repo_id, filename, repo_type="dataset", revision=revision, endpoint=endpoint,
            cache_dir=str(cache_dir) if cache_dir is not None else None,
        )
    except (OSError, EntryNotFoundError, ValueError) as exc:
        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
        raise EvaluationError(
            f"cannot download {filename} from {repo_id}@{revision}: {reason}; pass path= to a local copy"
        ) from exc
    return Path(str(local))


def _commit_of(downloaded: Path) -> str | None:
    """The commit hash of a file in huggingface_hub's cache (``.../snapshots/<commit>/<file>``)."""
    parent = downloaded.parent
    if parent.parent.name == "snapshots" and len(parent.name) == 40:
        return parent.name
    return None


def _checked(
    path: Path, *, filename: str, expected: str | None, repo_id: str | None = None, revision: str | None = None
) -> MadDataset:
    digest = sha256_of(path)
    if expected is not None and digest != expected.lower():
        raise EvaluationError(
            f"{path}: sha256 {digest[:16]}… differs from the expected {expected[:16]}…; the file is not the pinned MAD"
        )
    return MadDataset(path=path, sha256=digest, filename=filename, repo_id=repo_id, revision=revision)


# --- validation sets --------------------------------------------------------------------------------
# Human-labelled traces a judge can be validated on (``mast validate``). mast ships none of them: each
# file has a public home (mast-lint's repository, Who&When's repository; MAD records on the hub via
# mast-lint), pinned by commit and sha256 in ``mast/data/label_sets.json``. A set is read from
# ``--data DIR`` (or ``MAST_VALIDATION_DIR``) when given, else from the per-user cache, downloading what
# is missing there; every file is checked against its pinned sha256 before it is used.

VALIDATION_DIR_ENV = "MAST_VALIDATION_DIR"
MIRROR_ENV = "MAST_DATA_MIRROR"
"""Base URL of a mirror of the sets' public homes: ``https://host/path`` is fetched as ``<mirror>/host/path``
(a team's internal copy, or the tests' server on 127.0.0.1)."""
LABEL_SETS_FILE = Path(__file__).resolve().parent / "data" / "label_sets.json"
DOWNLOAD_TIMEOUT_S = 60.0


class LabelSetFile(BaseModel):
    """One file of a label set: its name in the set's folder and where it is published."""

    model_config = ConfigDict(frozen=True)

    file: str
    """Path relative to the set's folder."""
    url: str
    """The public home of the file (a commit-pinned raw URL)."""
    sha256: str
    bytes: int | None = None
    licence: str = ""


def label_set_files(folder: str) -> tuple[LabelSetFile, ...]:
    """The pinned files of one label-set folder (``mast/data/label_sets.json``)."""
    import json

    data = json.loads(LABEL_SETS_FILE.read_text(encoding="utf-8"))
    entries = data["sets"].get(folder)
    if entries is None:
        raise UsageError(f"no label set folder {folder!r}; known: {', '.join(sorted(data['sets']))}")
    return tuple(LabelSetFile.model_validate(e) for e in entries)


def _host(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).netloc or url


def _mirrored(url: str, mirror: str | None) -> str:
    """``url`` as fetched: unchanged, or rewritten under a mirror's base URL."""
    from urllib.parse import urlsplit

    if not mirror:
        return url
    parts = urlsplit(url)
    return f"{mirror.rstrip('/')}/{parts.netloc}{parts.path}"


def _download_pinned(url: str, target: Path, expected_sha256: str, expected_bytes: int | None = None) -> None:
    """Fetch ``url`` into ``target`` atomically, refusing bytes whose sha256 (or size) is not the pinned one."""
    import tempfile

    import httpx

    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, httpx.stream("GET", url, timeout=DOWNLOAD_TIMEOUT_S, follow_redirects=True) as response:
            if response.status_code != 200:
                raise OSError(f"HTTP {response.status_code}")
            written = 0
            for block in response.iter_bytes(1 << 16):
                written += len(block)
                if expected_bytes is not None and written > expected_bytes:  # a server that never stops fills no disk
                    raise EvaluationError(f"{url}: more than the pinned {expected_bytes:,} bytes; refused (nothing was cached)")
                digest.update(block)
                out.write(block)
        got = digest.hexdigest()
        if got != expected_sha256:
            raise EvaluationError(
                f"{url}: sha256 {got[:16]}… differs from the pinned {expected_sha256[:16]}…; refused (nothing was cached)"
            )
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def fetch_label_set(
    folder: str,
    *,
    data_dir: str | os.PathLike[str] | None = None,
    cache_dir: str | os.PathLike[str] | None = None,
    mirror: str | None = None,
) -> Path:
    """The folder holding one label set's files, each checked against its pinned sha256.

    With ``data_dir`` (or ``MAST_VALIDATION_DIR``) the set is read from ``<data_dir>/<folder>/`` and
    nothing is downloaded. Otherwise it is read from ``<cache>/label-sets/<folder>/``, downloading
    the files missing there from their public homes (or ``mirror`` / ``MAST_DATA_MIRROR``).

    Raises:
        UsageError: a file is missing and cannot be downloaded (offline, say): the message gives the
            command that points ``--data`` at a copy.
        EvaluationError: a file's bytes differ from its pinned sha256.
    """
    import httpx

    files = label_set_files(folder)
    chosen = data_dir or os.environ.get(VALIDATION_DIR_ENV)
    if chosen:
        root = Path(chosen) / folder
        for entry in files:
            path = root / entry.file
            if not path.is_file():
                raise UsageError(
                    f"validation set folder {root} lacks {entry.file}; point --data at the folder that holds "
                    f"{folder}/ with the files docs/reference/validation-sets.md lists"
                )
            if sha256_of(path) != entry.sha256:
                raise EvaluationError(f"{path}: sha256 differs from the pinned {entry.sha256[:16]}…; not the published file")
        return root
    if cache_dir is None:
        from mast.judge.cache import default_cache_dir

        cache_dir = default_cache_dir()
    root = Path(cache_dir) / "label-sets" / folder
    mirror = mirror if mirror is not None else os.environ.get(MIRROR_ENV)
    for entry in files:
        path = root / entry.file
        if path.is_file() and sha256_of(path) == entry.sha256:
            continue
        url = _mirrored(entry.url, mirror)
        try:
            _download_pinned(url, path, entry.sha256, entry.bytes)
        except (httpx.HTTPError, OSError) as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise UsageError(
                f"validation set folder {folder!r} is not in the cache ({root}) and {entry.file} could not be "
                f"downloaded from {_host(url)} ({reason}); with a copy of the sets, run: "
                f"mast validate --data /path/to/sets (the folder that holds {folder}/)"
            ) from None
    return root


class ValidationSet(BaseModel):
    """One human-labelled set: where its traces and gold are, what it can and cannot measure."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str
    source: str
    """Where the traces and labels come from."""
    licence: str
    folder: str
    """Folder of the set (under ``--data``, or in the cache)."""
    traces: tuple[str, ...]
    """Glob patterns (relative to the folder) of the trace files."""
    gold: tuple[str, ...] = ()
    """Label files (per-mode gold), read with :func:`mast.evaluation.read_labels`."""
    attribution: bool = False
    """Gold names the responsible agent and step (Who&When): localisation accuracy."""
    annotators: int = 1
    mapping_note: str = ""
    """How labels from another taxonomy version were mapped onto the 14 modes."""

    def root(self, data_dir: str | os.PathLike[str] | None = None) -> Path:
        """The set's folder, its files checked (downloaded into the cache when no ``data_dir`` is given)."""
        return fetch_label_set(self.folder, data_dir=data_dir)

    def files(self) -> tuple[LabelSetFile, ...]:
        """The set's pinned files."""
        return label_set_files(self.folder)

    def trace_paths(self, data_dir: str | os.PathLike[str] | None = None) -> list[Path]:
        """The trace files, sorted (only the set's pinned files, whatever else the folder holds)."""
        import fnmatch

        folder = self.root(data_dir)
        names = [f.file for f in self.files() if any(fnmatch.fnmatch(f.file, p) for p in self.traces)]
        return sorted(folder / name for name in names)

    def gold_labels(self, data_dir: str | os.PathLike[str] | None = None) -> pd.DataFrame:
        """Per-mode gold as one long label table (several annotators keep one row each)."""
        import pandas as pd

        from mast.evaluation import read_labels

        folder = self.root(data_dir)
        frames = [read_labels(folder / name) for name in self.gold]
        table = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["trace_id", "code", "present"])
        table.attrs["source"] = f"validation set {self.name}"
        table.attrs["unmapped_cells"] = sum(int(f.attrs.get("unmapped_cells", 0)) for f in frames)
        return table

    def attribution_gold(self, data_dir: str | os.PathLike[str] | None = None) -> pd.DataFrame:
        """Responsible agent and step per trace (Who&When layout), over the set's pinned files only."""
        import pandas as pd

        from mast.evaluation import read_who_and_when

        frames = [read_who_and_when(path) for path in self.trace_paths(data_dir)]
        return pd.concat(frames, ignore_index=True)


VALIDATION_SETS: tuple[ValidationSet, ...] = (
    ValidationSet(
        name="mastlint-ag2",
        description="40 AG2 group chats (Planner, Coder, Tester) with one annotator's blind labels on the 14 modes",
        source="mast-lint (github.com/ajoy-escapingflatland/mast-lint, commit fbd9a8d), evals/dogfood",
        licence="Apache-2.0",
        folder="mastlint-ag2",
        traces=("raw_ag2_records*.json",),
        gold=tuple(f"gold_labels{s}.json" for s in ("", "_batch2", "_batch3", "_batch4", "_batch5")),
    ),
    ValidationSet(
        name="mad-human",
        description="4 MAD records (AG2, MetaGPT) with three annotators' votes from the MAST human rounds",
        source="MAST-Data (Cemri et al. 2025) via mast-lint's fixture tests/fixtures/mad_human_sample.json",
        licence="CC-BY-4.0",
        folder="mad-human",
        traces=("*.json",),
        gold=("mad_human_sample_4records.json",),
        annotators=3,
        mapping_note=("votes from the 18-, 17- and 14-mode rounds mapped to the 14 final modes through mast's crosswalk; "
                      "draft modes with no final counterpart are excluded and counted"),
    ),
    ValidationSet(
        name="who-and-when",
        description="25 Who&When runs (CaptainAgent and hand-crafted systems) with the human-labelled decisive agent and step",
        source="Who&When (github.com/ag2ai/Agents_Failure_Attribution, commit f4d2b6d)",
        licence="MIT",
        folder="who-and-when",
        traces=("Algorithm-Generated/*.json", "Hand-Crafted/*.json"),
        attribution=True,
    ),
)


def validation_root(data_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The folder holding the sets when one is named (``data_dir``, else ``MAST_VALIDATION_DIR``); ``None``: the cache."""
    chosen = data_dir or os.environ.get(VALIDATION_DIR_ENV)
    return Path(chosen) if chosen else None


def validation_sets(names: Sequence[str] | None = None) -> list[ValidationSet]:
    """The registered validation sets (all, or those named), in registry order.

    Raises:
        UsageError: an unknown name (the message lists the known ones).
    """
    if not names:
        return list(VALIDATION_SETS)
    known = {s.name: s for s in VALIDATION_SETS}
    wanted = list(names)
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise UsageError(f"unknown validation set {unknown[0]!r}; known: {', '.join(known)}")
    return [known[n] for n in wanted]


# --- published figures ------------------------------------------------------------------------------

PAPER_NUMBERS_FILE = Path(__file__).resolve().parent / "data" / "paper_numbers.json"


def paper_numbers() -> dict[str, Any]:
    """The published figures mast compares with (MAST paper tables, inter-annotator kappa, IT-Bench), each with its source.

    Numbers are facts, cited with their source inside the file (``mast/data/paper_numbers.json``).
    """
    import json

    data: dict[str, Any] = json.loads(PAPER_NUMBERS_FILE.read_text(encoding="utf-8"))
    return data
