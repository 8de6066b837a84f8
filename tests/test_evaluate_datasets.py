"""mast.datasets.load_mad: local files, and the real huggingface_hub download path against a local hub.

No test reaches the network: the download test serves the real MAD human-labelled sample from a
server on 127.0.0.1 that answers the way the hub does (``/datasets/<repo>/resolve/<revision>/<file>``
with ``X-Repo-Commit`` and ``ETag`` headers), and points ``load_mad`` at it with ``endpoint=``.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from _data import VALIDATION

from mast.datasets import MAD_FILES, load_mad, sha256_of
from mast.errors import EvaluationError, UsageError

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def sample() -> Path:
    return VALIDATION / "mad-human" / "mad_human_sample_4records.json"


@pytest.fixture
def hub() -> Iterator[tuple[str, list[str]]]:
    """A hub look-alike serving MAD_human_labelled_dataset.json at one commit; yields (url, requested paths)."""
    files = {MAD_FILES["human"]: sample().read_bytes()}
    requested: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _answer(self, with_body: bool) -> None:
            requested.append(f"{self.command} {self.path}")
            parts = self.path.split("?")[0].split("/")
            name = parts[6] if len(parts) == 7 else ""
            if parts[1:5:3] != ["datasets", "resolve"] or name not in files:
                self.send_response(404)
                self.send_header("X-Error-Code", "EntryNotFound")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = files[name]
            self.send_response(200)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if with_body:
                self.wfile.write(data)

        def do_HEAD(self) -> None:  # noqa: N802 (http.server's naming)
            self._answer(False)

        def do_GET(self) -> None:  # noqa: N802
            self._answer(True)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", requested
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_local_file_with_checksum() -> None:
    path = sample()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    ds = load_mad(path, sha256=digest)
    assert ds.sha256 == digest == sha256_of(path) and ds.revision is None
    labels = ds.labels(trace_id_prefix="mad-")
    assert labels["trace_id"].nunique() == 4 and len(labels) == 4 * 14 * 3
    assert ds.metadata()["mas_name"].tolist() == ["AG2", "AG2", "MetaGPT", "MetaGPT"]
    with pytest.raises(EvaluationError, match="differs from the expected"):
        load_mad(path, sha256="0" * 64)
    with pytest.raises(UsageError, match="no such MAD file"):
        load_mad(VALIDATION / "nope.json")


def test_environment_variable_points_at_a_local_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_MAD_PATH", str(sample()))
    assert load_mad(file="human").path == sample()


def test_download_path_pins_revision_and_checks_sha256(hub: tuple[str, list[str]], tmp_path: Path) -> None:
    url, requested = hub
    digest = sha256_of(sample())
    ds = load_mad(file="human", revision=COMMIT, sha256=digest, endpoint=url, cache_dir=tmp_path)
    assert ds.revision == COMMIT and ds.repo_id == "mcemri/MAST-Data" and ds.sha256 == digest
    assert ds.path.read_bytes() == sample().read_bytes()
    assert any(f"/datasets/mcemri/MAST-Data/resolve/{COMMIT}/MAD_human_labelled_dataset.json" in r for r in requested)
    assert ds.labels()["trace_id"].nunique() == 4

    # "main" resolves to the commit the hub reports, so a run can be pinned afterwards
    assert load_mad(file="human", endpoint=url, cache_dir=tmp_path / "c2").revision == COMMIT
    with pytest.raises(EvaluationError, match="differs from the expected"):
        load_mad(file="human", sha256="f" * 64, endpoint=url, cache_dir=tmp_path / "c3")
    with pytest.raises(EvaluationError, match="cannot download MAD_full_dataset.json"):
        load_mad(file="full", endpoint=url, cache_dir=tmp_path / "c4")


def test_bad_file_choice() -> None:
    with pytest.raises(UsageError, match="file must be one of"):
        load_mad(file="everything")  # type: ignore[arg-type]
