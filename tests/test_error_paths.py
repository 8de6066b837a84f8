"""Credentials and terminal escapes never printed from an error path (issue 34, third pass)."""

from __future__ import annotations

import json
from pathlib import Path

import litellm
import pytest
from click.testing import CliRunner

from mast.cli import main
from mast.errors import MastError
from mast.integrations import hooks
from mast.judge.backend_errors import translate_error
from mast.sources import TraceQuery, open_source, public_url

PASSWORDS = ["p#ss?w0rd", "p?ss#w0rd", "pa/ss#w0rd", "p@ss#w0rd"]


@pytest.mark.parametrize("password", PASSWORDS)
@pytest.mark.parametrize("scheme", ["phoenix", "mlflow"])
def test_a_store_password_with_hash_or_question_mark_is_never_shown(password: str, scheme: str) -> None:
    url = f"{scheme}://admin:{password}@127.0.0.1:9/project"
    shown = public_url(url)
    assert password not in shown and "admin" not in shown and shown.endswith("127.0.0.1:9/project"), shown
    with pytest.raises(MastError) as caught:  # the URL does not parse as given, or the store is not there
        source = open_source(url)
        list(source.roots(TraceQuery()))
    message = str(caught.value)
    assert password not in message and "w0rd" not in message, message
    assert "admin" not in message


@pytest.mark.parametrize("password", PASSWORDS)
def test_push_errors_show_the_url_without_its_password(tmp_path: Path, password: str) -> None:
    results = tmp_path / "r.jsonl"
    results.write_text("")
    url = f"phoenix://admin:{password}@127.0.0.1:9/project"
    result = CliRunner().invoke(main, ["push", str(results), url])
    assert result.exit_code != 0 and "no result read from phoenix://127.0.0.1:9/project" in result.output
    assert password not in result.output and "admin" not in result.output, result.output


def test_an_error_body_echoing_the_authorization_header_is_scrubbed() -> None:
    body = (
        'Invalid request: {"headers": {"Authorization": "Bearer sk-proj-Zx9Qw8Er7Ty6Ui5Op4As3Df", '
        '"x-api-key": "k3y-V4lu3-Echoed", "content-type": "application/json"}} '
        "curl -H 'authorization: Bearer eyJhbGciOiJIUzI1NiJ9.e30.sig1234' api_key=AIzaSyA1234567890abcdefghijklmnopqrstu"
    )
    exc = litellm.BadRequestError(message=body, model="gpt-4o", llm_provider="openai")
    message = str(translate_error(exc, model="openai/gpt-4o", attempts=1, api_base="http://127.0.0.1:1/v1"))
    for secret in (
        "Zx9Qw8Er7Ty6Ui5Op4As3Df",
        "k3y-V4lu3-Echoed",
        "eyJhbGciOiJIUzI1NiJ9",
        "AIzaSyA1234567890",
    ):
        assert secret not in message, message
    assert "Authorization" in message and "application/json" in message  # the rest of the reason stays


HOSTILE = "s1\x1b]0;pwned\x07\x1b[2J\x9b31m\u202egnp.exe"


def test_hook_skipped_lines_neutralise_terminal_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = json.dumps(
        {
            "session_id": HOSTILE,
            "transcript_path": str(tmp_path / f"{HOSTILE}.jsonl"),
            "hook_event_name": "Stop",
        }
    )
    assert hooks.run_main(["--tool", "claude-code", payload]) == 0
    line = capsys.readouterr().err
    assert line.startswith("mast: hook skipped:") and line.count("\n") == 1, line
    for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert raw not in line
    assert "\\x1b]0;pwned\\x07" in line and "\\u202e" in line
    result = CliRunner().invoke(main, ["hooks", "run", "--tool", "claude-code", payload])
    assert "hook skipped" in result.output and "\x1b" not in result.output and "\u202e" not in result.output
