"""Sources, sinks and engines are registries of the library, and ``mast.label`` drives them (issue 26).

No server here: files and the offline detectors, a sink object that records what it is handed, an
engine registered by name. The stores' own sinks run against real servers in test_phoenix.py and
test_mlflow.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import mast
from mast.diagnosis import Diagnosis
from mast.engines import engine_names, get_engine, register_engine
from mast.errors import UsageError
from mast.sinks import sink_names, write_back_sinks
from mast.sources import TraceNote, TraceQuery, is_source_url, open_source, source_scheme

EXAMPLES = Path(__file__).resolve().parent.parent / "data" / "examples"


class Recorder:
    """A sink that keeps what it is handed."""

    name = "recorder"

    def __init__(self) -> None:
        self.seen: list[tuple[str, bool, TraceNote | None]] = []
        self.closed = 0

    def write(self, diagnosis: Diagnosis, note: TraceNote | None, *, fresh: bool) -> None:
        self.seen.append((diagnosis.trace_id, fresh, note))

    def close(self) -> list[str]:
        self.closed += 1
        return [f"recorded {len(self.seen)}"]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    for name in ("ag2-exchange-loop.json", "clean-sales-total.json", "ignored-build-error.json"):
        shutil.copy(EXAMPLES / name, folder / name)
    return folder


def test_a_sink_gets_every_result_as_written_and_the_rerun_hands_them_again_not_fresh(
    corpus: Path, tmp_path: Path
) -> None:
    out = tmp_path / "results.jsonl"
    first, notices = Recorder(), []
    report = mast.label(corpus, output=out, sinks=[first], judge="detectors", on_notice=notices.append)
    assert report.total == 3 and len(first.seen) == 3 and first.closed == 1
    assert all(fresh for _, fresh, _ in first.seen)
    assert all(note is None for _, _, note in first.seen)  # files carry no store note
    assert "recorded 3" in notices
    lines = out.read_text().splitlines()

    again = Recorder()
    report = mast.label([corpus], output=out, sinks=[again], judge="detectors")
    assert report.resumed == 3
    assert sorted(t for t, _, _ in again.seen) == sorted(t for t, _, _ in first.seen)
    assert not any(fresh for _, fresh, _ in again.seen)  # resumed: an idempotent sink writes them again
    assert out.read_text().splitlines() == lines  # nothing appended, nothing read back whole


def test_engines_are_chosen_by_name_and_a_new_one_registers(corpus: Path, tmp_path: Path) -> None:
    assert {"local", "ray", "batch-api"} <= set(engine_names())
    calls: list[dict[str, Any]] = []
    local = get_engine("local")

    def recording(paths: Any, output: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return local(paths, output, **kwargs)

    register_engine("recording", recording)
    sink = Recorder()
    report = mast.label([corpus], output=tmp_path / "r.jsonl", engine="recording", sinks=[sink], judge="detectors")
    assert report.total == 3 and len(sink.seen) == 3
    assert len(calls) == 1 and callable(calls[0]["on_result"])
    with pytest.raises(UsageError, match="unknown engine 'nope'"):
        mast.label([corpus], output=tmp_path / "r.jsonl", engine="nope", judge="detectors")


def test_sinks_and_sources_by_name_and_scheme() -> None:
    assert {"phoenix", "mlflow", "otel"} <= set(sink_names())
    assert write_back_sinks(["mlflow://h:5000/agents", "runs/", "phoenixs://h/p"]) == ["mlflow", "phoenix"]
    with pytest.raises(UsageError, match="--write-back needs a trace store input"):
        write_back_sinks(["runs/"])
    with pytest.raises(UsageError, match="unknown sink 'nope'"):
        mast.label(["runs/"], output="r.jsonl", sinks=["nope"], judge="detectors")
    assert is_source_url("mlflow+https://host/Shared/agents") and source_scheme("mlflow+https://h/x") == "mlflow"
    source = open_source("mlflow+https://example.com/Shared/agents%20prod")
    assert source.location.base_url == "https://example.com"  # type: ignore[attr-defined]
    assert source.location.experiment == "Shared/agents prod"  # type: ignore[attr-defined]
    source.close()
    with pytest.raises(UsageError, match="expected mlflow://HOST:PORT/EXPERIMENT_NAME"):
        open_source("mlflow://localhost:5000/")
    phoenix = open_source("phoenix://127.0.0.1:1/p")
    with pytest.raises(UsageError, match="Phoenix takes no --filter"):
        list(phoenix.roots(TraceQuery(filter="tags.env = 'x'")))
    phoenix.close()


def test_mlflow_credentials_come_from_mlflows_own_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    from mast.sources.mlflow import http_client

    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "tok")
    with http_client("http://h") as client:
        assert client.headers["authorization"] == "Bearer tok"
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN")
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "ana")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "pw")
    with http_client("http://h") as client:
        assert "authorization" not in client.headers
        request = client.build_request("GET", "/x")
        assert client._auth is not None  # basic auth, sent with every request  # noqa: SLF001
        flow = client._auth.auth_flow(request)  # noqa: SLF001
        assert next(flow).headers["authorization"].startswith("Basic ")


def test_the_cli_feeds_sinks_through_mast_label_and_reads_no_results_file_back() -> None:
    cli = Path(mast.__file__).parent / "cli"
    for path in cli.glob("*.py"):
        if path.name in ("export.py", "push.py", "report.py", "evaluate.py", "diff.py", "validate.py"):
            continue  # commands whose input is a results file
        text = path.read_text()
        assert "read_results" not in text and "after_run" not in text, path.name


def test_a_store_sink_without_a_store_input_is_refused_not_ignored(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    for name in ("mlflow", "phoenix"):
        with pytest.raises(UsageError, match="a sink that writes back to a store needs a store input"):
            mast.label(EXAMPLES / "clean-sales-total.json", output=out, sinks=[name], judge="detectors")
    with pytest.raises(UsageError, match="'mlflow'"):  # a Phoenix input is no MLflow input
        mast.label("phoenix://127.0.0.1:1/p", output=out, sinks=["mlflow"], judge="detectors")
    assert not out.exists()  # refused before anything ran


def test_a_password_in_a_store_url_is_used_to_connect_but_never_printed() -> None:
    import base64

    import httpx

    from mast.errors import SourceError
    from mast.sources import public_url
    from mast.sources.mlflow import MLflowSource, MLflowURL

    url = "mlflow://u:urlpw@127.0.0.1:5731/agents"
    assert public_url(url) == "mlflow://127.0.0.1:5731/agents"
    assert public_url("phoenix://h:6006/p") == "phoenix://h:6006/p"
    sent: list[str] = []

    def refuse(request: httpx.Request) -> httpx.Response:
        sent.append(request.headers.get("authorization", ""))
        return httpx.Response(401)

    base = MLflowURL.parse(url).base_url
    source = MLflowSource(url, client=httpx.Client(base_url=base, transport=httpx.MockTransport(refuse)))
    assert source.url == "mlflow://127.0.0.1:5731/agents"  # what each result's source.path gets
    with pytest.raises(SourceError) as refused:
        list(source.roots(TraceQuery()))
    source.close()
    assert sent == ["Basic " + base64.b64encode(b"u:urlpw").decode()]  # the URL's credentials were sent
    assert "urlpw" not in str(refused.value) and "401" in str(refused.value)
    with pytest.raises(UsageError) as bad:
        open_source("mlflow://u:urlpw@127.0.0.1:5731/")
    assert "urlpw" not in str(bad.value)
    phoenix = open_source("phoenix://u:urlpw@127.0.0.1:6006/p")
    assert phoenix.url == "phoenix://127.0.0.1:6006/p"
    phoenix.close()
