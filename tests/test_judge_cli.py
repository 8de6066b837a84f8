"""`mast classify` and `mast cache` through the CLI, against mast.testing.FakeLLMServer."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from mast.cli import main
from mast.diagnosis import Diagnosis
from mast.testing import FakeLLMServer, Reply, judge_answer

ANSWER = judge_answer(
    ["1.3"],
    evidence={"1.3": [(2, "I will run ls -la ./logs now")]},
    first_failure={"step": 2, "agent": "assistant", "code": "1.3", "explanation": "says the same thing again"},
    summary="The assistant repeated itself and never listed the files.",
)


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.json"
    messages = [
        {"role": "user", "content": "List the files in ./logs"},
        {"role": "assistant", "content": "I will run ls -la ./logs now"},
        {"role": "assistant", "content": "I will run ls -la ./logs now"},
    ]
    path.write_bytes(orjson.dumps(messages))
    return path


def run(*args: object, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], env=env, catch_exceptions=False)


def llm_args(server: FakeLLMServer) -> list[str]:
    return ["--model", "openai/fake-judge", "--api-base", server.base_url, "--api-key", "k", "--no-hints"]


def test_json_output_is_one_valid_diagnosis_per_trace(trace_file: Path) -> None:
    with FakeLLMServer(lambda body: ANSWER) as server:
        result = run("classify", trace_file, *llm_args(server), "--json")
    assert result.exit_code == 0, result.output
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    diagnosis = Diagnosis.model_validate_json(lines[0])
    assert diagnosis.status == "judged" and diagnosis.present_codes == ["1.3"]
    assert diagnosis.source.path == str(trace_file)


def test_table_shows_present_modes_evidence_and_first_failure(trace_file: Path) -> None:
    with FakeLLMServer(lambda body: ANSWER) as server:
        result = run("classify", trace_file, *llm_args(server))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "1.3" in out and "Step Repetition" in out and "0.80" in out
    assert "S2 ✓" in out and "I will run ls -la ./logs now" in out
    assert "first failure: S2 by assistant (1.3)" in out
    assert "summary: The assistant repeated itself" in out
    assert "Conversation Reset" not in out  # modes judged absent are not listed


def test_options_come_from_mast_environment_variables(trace_file: Path) -> None:
    with FakeLLMServer(lambda body: ANSWER) as server:
        env = {
            "MAST_MODEL": "openai/fake-judge",
            "MAST_API_BASE": server.base_url,
            "MAST_API_KEY": "k",
            "MAST_TEMPERATURE": "0.3",
            "MAST_STRUCTURED_OUTPUT": "tool",
        }
        result = run("classify", trace_file, "--json", env=env)
        body = server.chat_requests[0].body
    assert result.exit_code == 0, result.output
    assert body["temperature"] == 0.3 and body["tools"][0]["function"]["name"] == "mast_diagnosis"
    assert body["model"] == "fake-judge"


def test_without_a_model_the_detectors_judge_and_say_so(trace_file: Path) -> None:
    result = run("classify", trace_file)
    assert result.exit_code == 0, result.output
    assert "no model configured: using the offline detectors" in result.stderr
    assert "judge: detectors" in result.stdout


def test_a_failed_judgement_is_one_line_and_exit_1(trace_file: Path) -> None:
    with FakeLLMServer(lambda body: Reply(status=401)) as server:
        result = run("classify", trace_file, *llm_args(server), "--max-retries", "0")
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("mast:")]
    assert len(errors) == 1 and "HTTP 401" in errors[0]
    assert "Traceback" not in result.output


def test_unreadable_file_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = run("classify", bad, "--judge", "detectors")
    assert result.exit_code == 2
    assert "bad.json" in result.stderr


def test_bad_option_values_are_usage_errors(trace_file: Path) -> None:
    result = run("classify", trace_file, "--structured-output", "xml")
    assert result.exit_code == 2


def test_cache_info_clear_and_no_cache(trace_file: Path, tmp_path: Path) -> None:
    env = {"MAST_CACHE_DIR": str(tmp_path / "cache")}
    with FakeLLMServer(lambda body: ANSWER) as server:
        assert run("classify", trace_file, *llm_args(server), "--json", env=env).exit_code == 0
        again = run("classify", trace_file, *llm_args(server), "--json", env=env)
        assert len(server.chat_requests) == 1
        run("classify", trace_file, *llm_args(server), "--json", "--no-cache", env=env)
        assert len(server.chat_requests) == 2
    assert Diagnosis.model_validate_json(again.stdout.strip()).usage.cached is True
    info = run("cache", "info", env=env)
    assert info.exit_code == 0 and "1 cached judgements" in info.stdout
    assert str(tmp_path / "cache") in info.stdout
    cleared = run("cache", "clear", env=env)
    assert "1 cached judgements removed" in cleared.stdout
    assert "0 cached judgements" in run("cache", "info", env=env).stdout


def test_fail_on_a_mode_the_detectors_never_assess_is_refused_up_front(trace_file: Path) -> None:
    refused = run("classify", trace_file, "--judge", "detectors", "--fail-on", "2.6")
    assert refused.exit_code == 2
    assert "--fail-on '2.6' can never fire" in refused.stderr and "1.3, 1.5, 3.1" in refused.stderr
    assert "no model configured" not in refused.stderr  # refused before any notice or judging
    from_env = run("classify", trace_file, env={"MAST_FAIL_ON": "1.3,2.*"})
    assert from_env.exit_code == 2 and "MAST_FAIL_ON='1.3,2.*': '2.*' can never fire" in from_env.stderr
    # A pattern that reaches one assessed mode is kept (1.* holds 1.3 and 1.5).
    assert run("classify", trace_file, "--fail-on", "1.*").exit_code in (0, 3)
    # An LLM judge assesses every mode: the same gate is accepted and fires.
    answer = judge_answer(["2.6"], evidence={"2.6": [(2, "I will run ls -la ./logs now")]})
    with FakeLLMServer(lambda body: answer) as server:
        fired = run("classify", trace_file, *llm_args(server), "--no-cache", "--fail-on", "2.6")
    assert fired.exit_code == 3, fired.output
    assert "--fail-on: found 2.6" in fired.stderr


def test_mast_jury_naming_no_model_is_said_of_the_variable(trace_file: Path, tmp_path: Path) -> None:
    refused = run("classify", trace_file, env={"MAST_JURY": ",,"})
    assert refused.exit_code == 2 and "MAST_JURY=',,' names no model" in refused.stderr, refused.output
    assert "--jury" not in refused.stderr
    label = run("label", trace_file, "-o", tmp_path / "r.jsonl", env={"MAST_JURY": ",,"})
    assert label.exit_code == 2 and "MAST_JURY=',,' names no model" in label.stderr
    assert "progress" not in label.stderr and not (tmp_path / "r.jsonl").exists()  # refused before the run


def test_a_cache_folder_that_cannot_be_created_is_one_line_before_the_run(trace_file: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    bad = str(blocker / "cache")
    with FakeLLMServer(lambda body: ANSWER) as server:
        args = ["--model", "openai/fake-judge", "--api-base", server.base_url, "--api-key", "k"]
        refused = run("classify", trace_file, trace_file, *args, env={"MAST_CACHE_DIR": bad})
        assert refused.exit_code == 2, refused.output
        (line,) = [x for x in refused.stderr.splitlines() if x.strip()]
        assert line.startswith(f"mast: MAST_CACHE_DIR {bad!r}: the answer cache folder cannot be created")
        flag = run("label", trace_file, "-o", tmp_path / "r.jsonl", *args, "--cache-dir", bad)
        assert flag.exit_code == 2 and f"--cache-dir {bad!r}" in flag.stderr
        assert not (tmp_path / "r.jsonl").exists() and server.requests == []
        assert run("classify", trace_file, *args, "--no-cache", env={"MAST_CACHE_DIR": bad}).exit_code == 0
