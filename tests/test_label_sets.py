"""Validation sets a user can get: read from ``--data``, or downloaded from their public homes, checked, cached.

The public homes (raw files of mast-lint's and Who&When's repositories at pinned commits) are stood in
for by a real HTTP server on 127.0.0.1 that serves a mirror tree (``<host>/<path>``) built from the
corpus' copies of the same files; ``MAST_DATA_MIRROR`` points mast at it.
"""

from __future__ import annotations

import http.server
import json
import shutil
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest
from _data import LABELS
from click.testing import CliRunner

from mast import datasets
from mast.cli import main
from mast.errors import EvaluationError, UsageError


class _Quiet(http.server.SimpleHTTPRequestHandler):
    requests: list[str]

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the stdlib's name)
        type(self).requests.append(self.path)


class MirrorServer:
    """``http.server`` serving ``root`` on 127.0.0.1 in a thread; records the paths asked for."""

    def __init__(self, root: Path) -> None:
        handler = type("Handler", (_Quiet,), {"requests": []})
        self.handler = handler
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), lambda *a: handler(*a, directory=str(root)))
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    @property
    def requests(self) -> list[str]:
        return self.handler.requests

    def __enter__(self) -> MirrorServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def _mirror_path(root: Path, url: str) -> Path:
    parts = urlsplit(url)
    return root / parts.netloc / unquote(parts.path).lstrip("/")


def _closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"  # closed once the block ends: nothing listens


@pytest.fixture
def no_data_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MAST_VALIDATION_DIR", raising=False)


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[MirrorServer]:
    """A mirror of every pinned file, copied from the corpus."""
    root = tmp_path / "mirror"
    pinned = json.loads(datasets.LABEL_SETS_FILE.read_text())["sets"]
    for folder, files in pinned.items():
        for entry in files:
            target = _mirror_path(root, entry["url"])
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(LABELS / folder / entry["file"], target)
    with MirrorServer(root) as server:
        yield server


def test_every_pinned_file_has_a_commit_pinned_public_home() -> None:
    pinned = json.loads(datasets.LABEL_SETS_FILE.read_text())["sets"]
    assert set(pinned) >= {s.folder for s in datasets.validation_sets()}
    for entries in pinned.values():
        for entry in entries:
            parts = urlsplit(entry["url"])
            assert parts.scheme == "https" and parts.netloc == "raw.githubusercontent.com", entry["url"]
            assert any(len(p) == 40 for p in parts.path.split("/")), f"{entry['url']} is not pinned to a commit"
            assert len(entry["sha256"]) == 64


@pytest.mark.usefixtures("no_data_dir")
def test_validate_downloads_verifies_caches_and_reruns_offline(mirror: MirrorServer, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_DATA_MIRROR", mirror.url)
    out = tmp_path / "v1"
    result = CliRunner().invoke(main, ["validate", "--judge", "detectors", "--set", "mad-human", "-o", str(out),
                                       "--n-boot", "20"])
    assert result.exit_code == 0, result.output
    assert (out / "summary.json").is_file()
    assert any("mast-lint" in r and "mad_human_sample.json" in r for r in mirror.requests), mirror.requests
    asked = len(mirror.requests)
    # Offline now (the mirror's address refuses connections): the cache answers, checked again by sha256.
    monkeypatch.setenv("MAST_DATA_MIRROR", _closed_port_url())
    again = CliRunner().invoke(main, ["validate", "--judge", "detectors", "--set", "mad-human", "-o", str(tmp_path / "v2"),
                                      "--n-boot", "20"])
    assert again.exit_code == 0, again.output
    assert len(mirror.requests) == asked
    first = json.loads((out / "summary.json").read_text())
    second = json.loads((tmp_path / "v2" / "summary.json").read_text())
    assert _find(first["pooled"], "tp") is not None
    for key in ("tp", "fp", "fn", "tn", "kappa"):
        assert _find(first["pooled"], key) == _find(second["pooled"], key)


def _find(tree: Any, key: str) -> Any:
    """The first value under ``key`` anywhere in a JSON tree (the pooled figures, whatever their nesting)."""
    if isinstance(tree, dict):
        if key in tree:
            return tree[key]
        tree = list(tree.values())
    if isinstance(tree, list):
        for item in tree:
            if (found := _find(item, key)) is not None:
                return found
    return None


@pytest.mark.usefixtures("no_data_dir")
def test_a_wrong_checksum_is_refused_in_one_line_and_nothing_is_cached(mirror: MirrorServer, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    (entry,) = datasets.label_set_files("mad-human")
    target = _mirror_path(tmp_path / "mirror", entry.url)  # the fixture's tree (same tmp_path)
    data = bytearray(target.read_bytes())
    data[-1] ^= 1  # the same size, one bit changed: not the published file
    target.write_bytes(bytes(data))
    monkeypatch.setenv("MAST_DATA_MIRROR", mirror.url)
    result = CliRunner().invoke(main, ["validate", "--judge", "detectors", "--set", "mad-human", "-o", str(tmp_path / "v")])
    assert result.exit_code != 0
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "sha256" in lines[0] and "refused" in lines[0], result.output
    cache = tmp_path / "cache-check"
    with pytest.raises(EvaluationError):
        datasets.fetch_label_set("mad-human", cache_dir=cache, mirror=mirror.url)
    assert not [p for p in cache.rglob("*") if p.is_file()], "a refused download left a file in the cache"


@pytest.mark.usefixtures("no_data_dir")
def test_offline_without_a_cache_gives_one_line_with_the_command_to_use_a_copy(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as info:
        datasets.fetch_label_set("mastlint-ag2", cache_dir=tmp_path / "empty", mirror=_closed_port_url())
    message = str(info.value)
    assert "\n" not in message and "could not be downloaded" in message
    assert "mast validate --data /path/to/sets" in message and "mastlint-ag2/" in message


def test_data_dir_is_read_as_given_and_checked(tmp_path: Path) -> None:
    folder = tmp_path / "sets" / "mad-human"
    folder.mkdir(parents=True)
    (entry,) = datasets.label_set_files("mad-human")
    (folder / entry.file).write_text("[]")
    with pytest.raises(EvaluationError, match="sha256 differs"):
        datasets.fetch_label_set("mad-human", data_dir=tmp_path / "sets")
    shutil.copyfile(LABELS / "mad-human" / entry.file, folder / entry.file)
    assert datasets.fetch_label_set("mad-human", data_dir=tmp_path / "sets") == folder
