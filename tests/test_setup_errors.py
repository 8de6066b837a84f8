"""A judge that cannot work at all (no key, key refused, unknown model, nothing listening) says so
in one line, is not retried, and stops a batch after a few identical failures (issue 13, defect 2)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from mast.batch import read_results
from mast.batch.breaker import CircuitBreaker
from mast.cli import main
from mast.diagnosis import Diagnosis, ErrorInfo, JudgeInfo
from mast.errors import JudgeSetupError
from mast.testing import FakeLLMServer, Reply

MODEL = "openai/gpt-4o-mini"


def traces(path: Path, n: int) -> Path:
    lines = [
        orjson.dumps([
            {"role": "user", "content": f"setup task {i}: rename the config loader"},
            {"role": "assistant", "content": f"setup answer {i}: renamed it and updated the imports"},
        ])
        for i in range(n)
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def cli(*args: Any) -> Result:
    return CliRunner().invoke(main, [*map(str, args)], catch_exceptions=False)


def refused_port() -> int:
    """A port on 127.0.0.1 with nothing listening (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_missing_key_is_named_with_the_variable_to_set_and_not_retried(tmp_path: Path) -> None:
    run = traces(tmp_path / "run.jsonl", 1)
    with FakeLLMServer() as server:
        result = cli("classify", run, "-m", MODEL, "--api-base", server.base_url, "--no-cache", "--max-retries", "4")
        assert server.requests == []  # the client refuses before sending anything
    assert result.exit_code == 1
    assert "no API key for openai: set OPENAI_API_KEY or --api-key" in result.stderr
    assert "HTTP 500" not in result.output + result.stderr and "temporary failure" not in result.stderr


@pytest.mark.parametrize(
    ("status", "words"),
    [(401, "API key rejected by openai (HTTP 401)"), (403, "permission denied by openai (HTTP 403)"),
     (404, "unknown model 'openai/gpt-4o-mini'")],
)
def test_rejected_key_permission_and_unknown_model_fail_at_the_first_attempt(
    tmp_path: Path, status: int, words: str
) -> None:
    run = traces(tmp_path / "run.jsonl", 1)
    with FakeLLMServer(responder=lambda body: Reply(status=status)) as server:
        result = cli("classify", run, "-m", MODEL, "--api-base", server.base_url, "--api-key", "bad",
                     "--no-cache", "--max-retries", "4", "--json")
        assert len(server.chat_requests) == 1  # fatal: no retry
    assert result.exit_code == 1
    diagnosis = Diagnosis.model_validate_json(result.stdout.strip().splitlines()[-1])
    assert diagnosis.error is not None and diagnosis.error.type == "JudgeSetupError"
    assert words in diagnosis.error.message


def test_a_refused_connection_is_named_and_not_retried(tmp_path: Path) -> None:
    import mast

    run = traces(tmp_path / "run.jsonl", 1)
    base = f"http://127.0.0.1:{refused_port()}/v1"
    with pytest.raises(JudgeSetupError) as caught:
        mast.classify(run, model=MODEL, api_base=base, api_key="k", cache=False, max_retries=4)
    assert caught.value.reason == "connection_refused"
    assert caught.value.n_attempts == 1
    assert f"cannot connect to {base}" in str(caught.value) and "connection refused" in str(caught.value)


def test_label_stops_after_identical_401s_and_a_rerun_picks_up_the_rest(tmp_path: Path) -> None:
    runs = traces(tmp_path / "runs.jsonl", 12)
    out = tmp_path / "results.jsonl"
    common = ["-m", MODEL, "--no-cache", "--max-retries", "2", "-j", "1", "--json"]
    with FakeLLMServer(responder=lambda body: Reply(status=401)) as server:
        result = cli("label", runs, "-o", out, "--api-base", server.base_url, "--api-key", "wrong", *common)
        calls = len(server.chat_requests)
        port = server.port
    assert result.exit_code == 1, result.output
    assert "stopped after 3 traces failed the same way: API key rejected by openai (HTTP 401)" in result.stderr
    assert result.stderr.count("API key rejected") == 2  # the first error line and the stop message
    report = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert report["stopped"] == "failed" and report["not_started"] >= 12 - 3 - 2
    written = read_results(out)
    assert calls == len(written) < 12  # one request per started trace, none retried
    assert all(d.status == "error" for d in written)

    with FakeLLMServer(port=port) as good:  # the same endpoint, the key fixed
        again = cli("label", runs, "-o", out, "--api-base", good.base_url, "--api-key", "right", *common)
        assert len(good.chat_requests) == 12  # the errors are retried and the unstarted traces judged
    assert again.exit_code == 0, again.output
    assert [d.status for d in read_results(out)] == ["judged"] * 12


def test_breaker_counts_only_consecutive_identical_setup_errors() -> None:
    def result(kind: str, message: str = "no API key for openai") -> Diagnosis:
        if kind == "ok":
            return Diagnosis(trace_id="t", judge=JudgeInfo(taxonomy_version="mast-v3"))
        return Diagnosis(trace_id="t", judge=JudgeInfo(taxonomy_version="mast-v3"), status="error", error=ErrorInfo(type=kind, message=message))

    breaker = CircuitBreaker(threshold=3)
    assert breaker.record(result("JudgeSetupError")) is None
    assert breaker.record(result("JudgeSetupError")) is None
    assert breaker.record(result("ok")) is None  # a success breaks the run
    assert breaker.record(result("JudgeSetupError")) is None
    assert breaker.record(result("JudgeSetupError", "other")) is None  # a different message starts over
    assert breaker.record(result("JudgeAPIError")) is None  # per-trace errors never trip it
    for _ in range(2):
        assert breaker.record(result("JudgeSetupError")) is None
    message = breaker.record(result("JudgeSetupError"))
    assert message is not None and "stopped after 3 traces failed the same way: no API key for openai" in message
