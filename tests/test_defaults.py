"""Issue 33: defaults a user can trust (endpoint in the cache key, strict MAST_* variables,
litellm kept off the network, a lazy provider layer, and the cosmetic fixes)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import click
import orjson
import pytest
from click.testing import CliRunner, Result

import mast
from mast._env import parse_bool
from mast._json import canonical_hash
from mast.cli import main
from mast.diagnosis import Diagnosis
from mast.errors import UsageError
from mast.judge.config import ENV_VARS, JudgeConfig, public_endpoint
from mast.testing import FakeLLMServer, judge_answer

ANSWER = judge_answer(
    ["1.3"],
    evidence={"1.3": [(2, "I will run ls -la ./logs now")]},
    first_failure={
        "step": 2,
        "agent": "assistant",
        "code": "1.3",
        "explanation": "says the same thing again",
    },
    summary="The assistant repeated itself.",
)
ROOT = Path(__file__).resolve().parents[1]


def _clean_env(**extra: str) -> dict[str, str]:
    """The test's environment without litellm's switches (conftest sets one), so mast must set them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


# An audit hook records, then refuses, every name lookup and connection to anything but this machine.
_NETWORK_AUDIT = textwrap.dedent(
    """
    import sys

    LOCAL = {"127.0.0.1", "localhost", "::1", None, ""}
    attempts = []

    def audit(event, args):
        if event == "socket.getaddrinfo" and args[0] not in LOCAL:
            attempts.append(f"resolve {args[0]}")
            raise OSError("network blocked by the test")
        if event == "socket.connect":
            address = args[1]
            if isinstance(address, tuple) and address[0] not in LOCAL:
                attempts.append(f"connect {address}")
                raise OSError("network blocked by the test")

    sys.addaudithook(audit)
    """
)


@pytest.mark.spawns
@pytest.mark.parametrize(
    "first_import",
    [
        "mast.judge.backend_router",
        "mast.judge.batch_api",
        "mast.judge.backend_errors",
        "mast.judge.backend",
        "mast.integrations.inspect",
    ],
)
def test_litellm_never_reaches_the_network_on_import_or_lookups(first_import: str) -> None:
    """Whichever mast module imports litellm first, litellm fetches nothing (price map, tokenizers...)."""
    script = _NETWORK_AUDIT + textwrap.dedent(
        f"""
        import importlib
        importlib.import_module({first_import!r})
        from mast.judge.backend import LiteLLMBackend
        for model in ("openai/gpt-4o-mini", "anthropic/claude-3-5-sonnet-20240620",
                      "huggingface/meta-llama/Meta-Llama-3-8B-Instruct", "cohere/command-r"):
            backend = LiteLLMBackend(model)
            backend.count_tokens("how many tokens is this?")
            backend.context_window()
            backend.prices()
            backend.resolve_mode("auto")
        import litellm
        print("ATTEMPTS", attempts)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ATTEMPTS []" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]


@pytest.mark.spawns
def test_a_whole_call_to_a_hugging_face_model_sends_nothing_but_the_call(tmp_path: Path) -> None:
    """litellm looks a huggingface/ model up on the hub inside every call; only the call may go out."""
    trace = tmp_path / "run.json"
    trace.write_bytes(
        orjson.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    )
    script = _NETWORK_AUDIT + textwrap.dedent(
        f"""
        import mast
        from mast.testing import FakeLLMServer
        with FakeLLMServer() as server:
            diagnosis = mast.classify({str(trace)!r}, model="huggingface/meta-llama/Meta-Llama-3-8B-Instruct",
                                      api_base=server.base_url, api_key="x", cache=False, max_retries=0)
            calls = len(server.chat_requests)
        print("STATUS", diagnosis.status, calls)
        print("ATTEMPTS", attempts)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "STATUS judged 1" in done.stdout and "ATTEMPTS []" in done.stdout, done.stdout[-2000:]


# --- 1. the answer cache and resume know the endpoint ---------------------------------------------


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


def _run(*args: object, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], env=env, catch_exceptions=False)


def _llm(base_url: str) -> list[str]:
    return ["--model", "openai/fake-judge", "--api-base", base_url, "--api-key", "k", "--no-hints", "--json"]


def test_an_answer_from_one_endpoint_is_not_served_for_another(trace_file: Path, tmp_path: Path) -> None:
    env = {"MAST_CACHE_DIR": str(tmp_path / "cache")}
    with FakeLLMServer(lambda body: ANSWER) as first, FakeLLMServer(lambda body: ANSWER) as second:
        assert _run("classify", trace_file, *_llm(first.base_url), env=env).exit_code == 0
        again = _run("classify", trace_file, *_llm(first.base_url), env=env)
        assert Diagnosis.model_validate_json(again.stdout).usage.cached is True  # same endpoint: cached
        other = _run("classify", trace_file, *_llm(second.base_url), env=env)
        assert other.exit_code == 0, other.output
        assert len(second.chat_requests) == 1  # the second server was asked
        assert Diagnosis.model_validate_json(other.stdout).usage.cached is False


def test_a_dead_endpoint_errors_instead_of_printing_a_cached_answer(trace_file: Path, tmp_path: Path) -> None:
    env = {"MAST_CACHE_DIR": str(tmp_path / "cache")}
    with FakeLLMServer(lambda body: ANSWER) as server:
        assert _run("classify", trace_file, *_llm(server.base_url), env=env).exit_code == 0
    dead = _run("classify", trace_file, *_llm("http://127.0.0.1:9/v1"), "--max-retries", "0", env=env)
    assert dead.exit_code != 0
    diagnosis = Diagnosis.model_validate_json(dead.stdout)
    assert diagnosis.status == "error" and not diagnosis.usage.cached
    assert "127.0.0.1:9" in dead.stderr


def test_the_judge_record_holds_the_endpoint_without_credentials(trace_file: Path, tmp_path: Path) -> None:
    with FakeLLMServer(lambda body: ANSWER) as server:
        with_user = server.base_url.replace("http://", "http://alice:hunter2@")
        # The OpenAI client refuses credentials in the URL with a key given: the record is written either way.
        done = _run(
            "classify",
            trace_file,
            *_llm(with_user),
            "--max-retries",
            "0",
            env={"MAST_CACHE_DIR": str(tmp_path)},
        )
    params = Diagnosis.model_validate_json(done.stdout).judge.params
    assert params["endpoint"] == server.base_url.rstrip("/")
    assert "hunter2" not in done.stdout and "alice" not in done.stdout


def test_an_error_never_prints_a_secret_given_in_the_endpoints_query(
    trace_file: Path, tmp_path: Path
) -> None:
    # Nothing listens on port 9: the error names the endpoint, as the results record it.
    dead = _run(
        "classify",
        trace_file,
        *_llm("http://127.0.0.1:9/v1?key=QSECRET1&api-version=1"),
        "--max-retries",
        "0",
        env={"MAST_CACHE_DIR": str(tmp_path)},
    )
    assert dead.exit_code != 0
    assert "127.0.0.1:9" in dead.stderr and "api-version=1" in dead.stderr
    assert "QSECRET1" not in dead.stderr and "QSECRET1" not in dead.stdout


def test_public_endpoint_drops_userinfo_and_secret_query_values() -> None:
    url = "https://me:pw@llm.example:8443/openai/?api-key=s3cret&api-version=2024-06-01&sig=abc&token=t"
    assert public_endpoint(url) == "https://llm.example:8443/openai?api-version=2024-06-01"
    assert public_endpoint(None) is None


def test_cache_keys_keep_runs_without_an_endpoint_and_separate_extra_options() -> None:
    plain = JudgeConfig(model="openai/gpt-4o-mini").answer_params()
    assert "endpoint" not in plain and "extra" not in plain  # keys of runs without them are unchanged
    here = JudgeConfig(model="openai/gpt-4o-mini", api_base="http://127.0.0.1:1/v1").answer_params()
    there = JudgeConfig(model="openai/gpt-4o-mini", api_base="http://127.0.0.1:2/v1").answer_params()
    assert len({canonical_hash(plain), canonical_hash(here), canonical_hash(there)}) == 3
    a = JudgeConfig(model="openai/gpt-4o-mini", extra={"top_p": 0.5}).answer_params()
    b = JudgeConfig(model="openai/gpt-4o-mini", extra={"top_p": 0.9}).answer_params()
    assert a["extra"] != b["extra"] and "0.5" not in str(a)
    # Same server under other credentials is the same endpoint.
    keyed = JudgeConfig(model="openai/x", api_base="http://u:p@127.0.0.1:1/v1", api_key="k1").answer_params()
    assert keyed["endpoint"] == here["endpoint"]


def test_resume_does_not_take_results_from_another_endpoint_as_done(trace_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "results.jsonl"
    env = {"MAST_CACHE_DIR": str(tmp_path / "cache")}
    base = ["--model", "openai/fake-judge", "--api-key", "k", "--no-hints", "-o", out]
    with FakeLLMServer(lambda body: ANSWER) as first, FakeLLMServer(lambda body: ANSWER) as second:
        assert _run("label", trace_file, *base, "--api-base", first.base_url, env=env).exit_code == 0
        again = _run("label", trace_file, *base, "--api-base", second.base_url, env=env)
        # Another endpoint is another judge: its results are not "done" for this one.
        assert again.exit_code == 2 and "another judge or settings" in again.stderr
        fresh = _run(
            "label", trace_file, *base[:-1], tmp_path / "new.jsonl", "--api-base", second.base_url, env=env
        )
        assert fresh.exit_code == 0, fresh.output
        assert len(second.chat_requests) == 1


# --- 2. every MAST_* variable read strictly, with the rules of its flag ---------------------------


@pytest.mark.parametrize(
    ("var", "value"),
    [
        ("MAST_REDACT", "enabled"),
        ("MAST_REDACT", "always"),
        ("MAST_REDACT", "2"),
        ("MAST_HINTS", "maybe"),
        ("MAST_CACHE", "sometimes"),
        ("MAST_REDACT_IPS", "ipv4"),
    ],
)
def test_an_unrecognised_boolean_variable_is_a_one_line_error(trace_file: Path, var: str, value: str) -> None:
    result = _run("classify", trace_file, "--judge", "detectors", env={var: value})
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"{var}='{value}'" in lines[0]
    assert "true" in lines[0] and "false" in lines[0]  # the accepted values


@pytest.mark.parametrize(
    ("var", "value", "flag"),
    [
        ("MAST_TIMEOUT", "0", "--timeout"),
        ("MAST_TIMEOUT", "soon", "--timeout"),
        ("MAST_MAX_OUTPUT_TOKENS", "10", "--max-output-tokens"),
        ("MAST_CONTEXT_WINDOW", "100", "--context-window"),
        ("MAST_MAX_RETRIES", "-1", "--max-retries"),
        ("MAST_TEMPERATURE", "nan", "--temperature"),
        ("MAST_SAMPLES", "0", "--samples"),
    ],
)
def test_a_number_variable_is_refused_where_its_flag_is(
    trace_file: Path, var: str, value: str, flag: str
) -> None:
    by_flag = _run("classify", trace_file, "--judge", "detectors", flag, value)
    by_env = _run("classify", trace_file, "--judge", "detectors", env={var: value})
    assert by_flag.exit_code == 2 and by_env.exit_code == 2
    lines = [line for line in by_env.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and var in lines[0]


def test_boolean_words_are_the_same_everywhere() -> None:
    for word in ("1", "true", "YES", "on", "y", "T"):
        assert parse_bool("MAST_X", word) is True
    for word in ("0", "false", "No", "off", "n", "F"):
        assert parse_bool("MAST_X", word) is False
    with pytest.raises(UsageError, match=r"MAST_X='enabled'"):
        parse_bool("MAST_X", "enabled")


def test_redaction_is_off_only_by_a_recognised_word_and_the_run_says_so(
    trace_file: Path, tmp_path: Path
) -> None:
    with FakeLLMServer(lambda body: ANSWER) as server:
        on = _run("classify", trace_file, *_llm(server.base_url), env={"MAST_REDACT": "Y", "MAST_CACHE": "0"})
        off = _run(
            "classify", trace_file, *_llm(server.base_url), env={"MAST_REDACT": "off", "MAST_CACHE": "0"}
        )
    assert on.exit_code == 0 and "redaction is off" not in on.stderr, on.output
    assert Diagnosis.model_validate_json(on.stdout).judge.params["redact"] is True
    assert off.exit_code == 0, off.output
    assert off.stderr.count("redaction is off") == 1
    assert Diagnosis.model_validate_json(off.stdout).judge.params["redact"] is False


def test_the_detectors_record_redaction_and_a_run_with_it_on_keeps_no_quote_written_without(
    tmp_path: Path,
) -> None:
    trace = tmp_path / "run.json"
    secret = "AKIA" + "Q3EGRN6TZ7WXPY4B"
    trace.write_text(
        orjson.dumps(
            {
                "messages": [
                    {"role": "user", "content": "Deploy the service."},
                    {"role": "assistant", "content": f"Deploying with key {secret}."},
                    {"role": "tool", "content": "Error: permission denied"},
                    {"role": "assistant", "content": f"Deploying with key {secret}."},
                    {"role": "tool", "content": "Error: permission denied"},
                    {"role": "assistant", "content": f"Deploying with key {secret}."},
                ]
            }
        ).decode()
    )
    results = tmp_path / "results.jsonl"
    off = _run("label", trace, "--judge", "detectors", "-o", results, env={"MAST_REDACT": "off"})
    assert off.exit_code == 0, off.output
    (row,) = [Diagnosis.model_validate_json(line) for line in results.read_text().splitlines()]
    assert row.judge.params["redact"] is False and secret in results.read_text()  # quoted as read, as asked
    # A run with redaction on does not take those quotes as its own results.
    on = _run("label", trace, "--judge", "detectors", "-o", results)
    assert on.exit_code != 0 and "another judge or settings" in on.stderr, on.output
    fresh = tmp_path / "fresh.jsonl"
    assert _run("label", trace, "--judge", "detectors", "-o", fresh).exit_code == 0
    (redacted,) = [Diagnosis.model_validate_json(line) for line in fresh.read_text().splitlines()]
    assert redacted.judge.params["redact"] is True and secret not in fresh.read_text()
    # A default run's results file from a release that recorded no redaction settings stays its own.
    older = tmp_path / "older.jsonl"
    older.write_text(
        fresh.read_text().replace(',"redact":true,"redact_ips":false,"redact_patterns":null', "")
    )
    assert '"redact"' not in older.read_text()
    again = _run("label", trace, "--judge", "detectors", "-o", older)
    assert again.exit_code == 0, again.output
    assert re.search(r"of which resumed\W+1\b", again.stderr + again.stdout), again.output
    assert len(older.read_text().splitlines()) == 1


def test_other_variables_are_read_strictly(monkeypatch: pytest.MonkeyPatch) -> None:
    from mast.judge.local import threads_for_now
    from mast.otel import _tracer

    monkeypatch.setenv("MAST_LOCAL_THREADS", "0")
    with pytest.raises(UsageError, match="MAST_LOCAL_THREADS='0'"):
        threads_for_now()
    monkeypatch.setenv("MAST_LOCAL_THREADS", "3")
    assert threads_for_now() == 3
    monkeypatch.setenv("MAST_OTEL_JUDGE_SPANS", "maybe")
    with pytest.raises(UsageError, match="MAST_OTEL_JUDGE_SPANS='maybe'"):
        _tracer()
    monkeypatch.setenv("MAST_TIMEOUT", "-5")
    with pytest.raises(UsageError, match="MAST_TIMEOUT='-5'"):
        JudgeConfig.from_options()


@pytest.mark.parametrize(
    ("var", "value"),
    [("MAST_OTEL_JUDGE_SPANS", "yes-please"), ("MAST_BATCH_POLL_S", "-1"), ("MAST_LOCAL_THREADS", "0")],
)
def test_a_variable_read_deep_in_a_call_is_refused_before_the_run_starts(
    tmp_path: Path, var: str, value: str
) -> None:
    # The detectors make no judge call and no batch: before, these values were never read at all.
    out = tmp_path / "results.jsonl"
    result = _run(
        "label",
        Path(mast.__file__).parents[1] / "data" / "examples",
        "-o",
        out,
        "--judge",
        "detectors",
        env={var: value},
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and f"{var}='{value}'" in lines[0]
    assert not out.exists()


def test_every_variable_mast_reads_outside_an_option_is_in_the_start_up_check() -> None:
    import mast._env as env

    checked = {getattr(env, name) for name in dir(env) if name.endswith("_ENV")}
    # Variables read straight from the environment by name, not through an option's envvar=.
    read = set()
    for path in Path(mast.__file__).parent.rglob("*.py"):
        text = path.read_text()
        read |= set(re.findall(r"env_(?:bool|number|value)\(\s*\"(MAST_[A-Z_]+)\"", text))
    assert read <= checked, f"read by name, not in mast._env's start-up check: {sorted(read - checked)}"
    assert {"MAST_OTEL_JUDGE_SPANS", "MAST_BATCH_POLL_S", "MAST_LOCAL_THREADS"} <= checked


# Every option bound to a variable (``envvar=``), found in the CLI itself: a new one is covered here
# without this file changing, and a string option must say what an invalid value of it is.
STRING_INVALID = {"MAST_FORMAT": "bogus", "MAST_FAIL_ON": "9.9"}
FREE_TEXT = {"RAY_ADDRESS": "any address: Ray checks it when it connects"}


def _commands(
    command: click.Command, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name, sub in sorted(command.commands.items()):
            yield from _commands(sub, (*path, name))


def _invalid_values(option: click.Option, var: str) -> list[str]:
    kind = option.type
    if isinstance(kind, click.types.BoolParamType):
        return ["maybe"]
    if isinstance(kind, (click.types.IntParamType, click.types.FloatParamType)):
        low = getattr(kind, "min", None)
        return ["abc"] if low is None else ["abc", f"{low - 1:g}"]
    if isinstance(kind, click.Choice):
        return ["bogus"]
    if isinstance(kind, click.Path) and kind.exists:
        return ["/nonexistent/mast-test"]
    if var in FREE_TEXT:
        return []
    assert var in STRING_INVALID, f"{var}: say in STRING_INVALID what an invalid value is (or why none is)"
    return [STRING_INVALID[var]]


def _bound_options() -> list[tuple[tuple[str, ...], str, str, str]]:
    cases = []
    for path, command in _commands(main):
        for param in command.params:
            if isinstance(param, click.Option) and param.envvar:
                names = [param.envvar] if isinstance(param.envvar, str) else list(param.envvar)
                for var in names:
                    for value in _invalid_values(param, var):
                        cases.append((path, param.name or "", var, value))
    return cases


def _arguments(command: click.Command, tmp_path: Path, trace: Path) -> list[str]:
    """Valid values for what the command requires, so parsing reaches the variable."""
    given: list[str] = []
    for param in command.params:
        if not param.required:
            continue
        kind = param.type
        if isinstance(kind, click.Path):
            value = (
                str(trace)
                if kind.exists or isinstance(param, click.Argument)
                else str(tmp_path / f"{param.name}.jsonl")
            )
        elif isinstance(kind, click.Choice):
            value = str(kind.choices[0])
        else:
            value = "http://127.0.0.1:9"
        given += [param.opts[-1], value] if isinstance(param, click.Option) else [value]
    if isinstance(command, click.Group):
        given += [next(iter(sorted(command.commands))), "--help"]
    return given


BOUND = _bound_options()


def test_the_bound_options_are_found() -> None:
    found = {var for _, _, var, _ in BOUND}
    assert {"MAST_CONCURRENCY", "MAST_DEBUG", "MAST_ENGINE", "MAST_BATCH_API", "MAST_FAIL_ON"} <= found


@pytest.mark.parametrize(
    ("path", "name", "var", "value"), BOUND, ids=[f"{' '.join(c[0]) or 'mast'}-{c[2]}={c[3]}" for c in BOUND]
)
def test_an_invalid_variable_bound_to_an_option_is_one_line_naming_it(
    trace_file: Path, tmp_path: Path, path: tuple[str, ...], name: str, var: str, value: str
) -> None:
    command: click.Command = main
    for part in path:
        assert isinstance(command, click.Group)
        command = command.commands[part]
    option = next(p for p in command.params if p.name == name)
    result = _run(*path, *_arguments(command, tmp_path, trace_file), env={var: value})
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("mast: ") and f"{var}={value!r}" in lines[0], lines[0]
    for flag in option.opts:
        if flag.startswith("--"):
            assert flag not in lines[0], lines[0]  # the user never typed the flag


def test_a_bad_flag_is_still_said_of_the_flag(trace_file: Path) -> None:
    typed = _run(
        "label",
        trace_file,
        "-o",
        trace_file.with_suffix(".jsonl"),
        "--concurrency",
        "abc",
        env={"MAST_CONCURRENCY": "4"},
    )
    assert typed.exit_code == 2 and "--concurrency" in typed.stderr and "MAST_CONCURRENCY" not in typed.stderr
    assert _run("--debug", "formats", env={"MAST_FAIL_ON": "9.9"}).exit_code == 0  # read only where used


# Every judge option's variable, from the one table: an invalid value is an error though nothing
# would use it (no jury for MAST_REDUCER, the detectors for MAST_API_BASE), never ignored.
JUDGE_INVALID = {
    "api_base": "localhost:8000",
    "structured_output": "bogus",
    "judge": "bogus",
    "taxonomy": "bogus",
    "reducer": "bogus",
}
JUDGE_FREE_TEXT = {
    "model": "any litellm model string: litellm knows them, checked at the first call",
    "api_key": "any key: only the provider can tell",
    "cache_dir": "a folder made when first written",
    "jury": "a model list or a file: parsed when the jury is built (it is, whenever set)",
}


def _judge_invalid(name: str) -> str | None:
    from mast.judge.config import BOOL_OPTIONS, FLAG_RANGES

    if name in BOOL_OPTIONS:
        return "maybe"
    if name in FLAG_RANGES:
        return "abc"
    assert name in JUDGE_INVALID or name in JUDGE_FREE_TEXT, f"{name}: say what an invalid value is"
    return JUDGE_INVALID.get(name)


JUDGE_CASES = [(var, value) for name, var in ENV_VARS.items() if (value := _judge_invalid(name)) is not None]


@pytest.mark.parametrize(("var", "value"), JUDGE_CASES, ids=[f"{v}={x}" for v, x in JUDGE_CASES])
def test_every_judge_variable_is_checked_even_when_nothing_uses_it(
    trace_file: Path, var: str, value: str
) -> None:
    result = _run("classify", trace_file, env={var: value})  # no model: the detectors, no jury
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and var in lines[0] and value in lines[0], result.stderr


def test_a_good_reducer_and_endpoint_still_pass(trace_file: Path) -> None:
    env = {"MAST_REDUCER": "at_least:2", "MAST_API_BASE": "http://127.0.0.1:9/v1", "MAST_TAXONOMY": "mast-v3"}
    assert _run("classify", trace_file, env=env).exit_code == 0
    with pytest.raises(UsageError, match="reducer='median': unknown reducer"):
        JudgeConfig.from_options(reducer="median")


# --- 14. cosmetics ----------------------------------------------------------------------------------

HAND_MADE = """{
  "model":   "opus",
  "permissions": { "allow": ["Bash(ls:*)", "Bash(git status)"] },
  "hooks": {"Stop": [ {"hooks": [{"type": "command", "command": "notify-send done"}]} ]}
}
"""


def test_hooks_uninstall_gives_back_a_hand_formatted_settings_file_byte_for_byte(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(HAND_MADE)
    for _ in range(2):  # installing twice still remembers the file as the user wrote it
        assert _run("hooks", "install", "claude-code", "--settings", path).exit_code == 0
    assert orjson.loads(path.read_bytes())["model"] == "opus"
    done = _run("hooks", "uninstall", "claude-code", "--settings", path)
    assert done.exit_code == 0 and "removed 3" in done.stdout
    assert path.read_text() == HAND_MADE
    assert [p.name for p in tmp_path.iterdir()] == ["settings.json"]  # install's memory is gone too


def test_hooks_uninstall_keeps_what_the_user_changed_since_install(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    path.write_text(HAND_MADE)
    _run("hooks", "install", "claude-code", "--settings", path)
    edited = orjson.loads(path.read_bytes())
    edited["model"] = "sonnet"
    path.write_bytes(orjson.dumps(edited))
    _run("hooks", "uninstall", "claude-code", "--settings", path)
    after = orjson.loads(path.read_bytes())
    assert after["model"] == "sonnet" and "mast" not in path.read_text()


def test_hooks_uninstall_deletes_a_settings_file_install_created(tmp_path: Path) -> None:
    path = tmp_path / ".claude" / "settings.json"
    _run("hooks", "install", "claude-code", "--settings", path)
    assert path.exists()
    done = _run("hooks", "uninstall", "claude-code", "--settings", path)
    assert done.exit_code == 0 and "had created" in done.stdout
    assert not path.exists() and not path.parent.exists()  # nor the folder it was made in
    mine = tmp_path / "mine.json"
    mine.write_text("{}\n")  # the user's own empty file stays
    _run("hooks", "install", "claude-code", "--settings", mine)
    _run("hooks", "uninstall", "claude-code", "--settings", mine)
    assert mine.read_text() == "{}\n"


def test_two_sessions_are_told_apart_in_the_hook_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mast.integrations import hooks

    transcript = tmp_path / "session.jsonl"
    transcript.write_text("")
    monkeypatch.setattr(hooks, "check_transcript", lambda event: None)
    monkeypatch.setattr(hooks, "spawn_labeller", lambda *args: None)
    lines = []
    for session in ("11111111-aaaa-4000-8000-000000000001", "11111111-aaab-4000-8000-000000000002"):
        payload = {"session_id": session, "transcript_path": str(transcript), "hook_event_name": "SessionEnd"}
        lines.append(
            hooks.handle_event(payload, tool="claude-code", output=tmp_path / "r.jsonl", quiet=0, judge={})
        )
    assert "11111111-aaaa-4000-8000-000000000001" in lines[0]
    assert "11111111-aaab-4000-8000-000000000002" in lines[1]


def test_a_bad_mast_format_is_one_error_before_any_file(tmp_path: Path) -> None:
    files = []
    for n in range(3):
        files.append(tmp_path / f"run{n}.json")
        files[-1].write_text('[{"role": "user", "content": "hi"}]')
    for command in ("classify", "normalize", "label"):
        extra = ["-o", tmp_path / "out.jsonl"] if command == "label" else []
        result = _run(command, *files, *extra, env={"MAST_FORMAT": "bogus"})
        assert result.exit_code == 2, command
        assert result.stderr.count("unknown format 'bogus'") == 1 and "MAST_FORMAT" in result.stderr, command


def test_the_detectors_have_no_cost_in_the_report_label_and_classify_alike(
    trace_file: Path, tmp_path: Path
) -> None:
    from mast.report import render_report

    out = tmp_path / "results.jsonl"
    labelled = _run("label", trace_file, "--judge", "detectors", "-o", out)
    assert labelled.exit_code == 0, labelled.output
    cost_row = next(line for line in labelled.stderr.splitlines() if " cost " in line)
    assert "–" in cost_row and "$" not in cost_row, cost_row
    section = render_report(out).split("id='cost'", 1)[1].split("</section>", 1)[0]
    assert "<b>–</b>cost (USD)" in section and "0.0000" not in section and "unknown" not in section
    classified = _run("classify", trace_file, "--judge", "detectors")
    assert "no LLM cost" in classified.stdout + classified.stderr


def test_redact_patterns_help_does_not_name_itself_as_its_variable() -> None:
    help_text = " ".join(_run("classify", "--help").stdout.split())
    start = help_text.index("--redact-patterns")
    entry = help_text[start : start + 260]
    assert "MAST_REDACT_PATTERNS" in entry and "[env: MAST_REDACT_PATTERNS]" not in entry


def test_compare_reading_never_shows_nan_for_a_missing_caveat() -> None:
    from mast.cli.validate import _reading

    assert _reading({"reading": "A better", "caveat": float("nan")}) == "A better"
    assert _reading({"reading": "A better", "caveat": None}) == "A better"
    assert (
        _reading({"reading": "no clear difference", "caveat": "few positives"})
        == "no clear difference; few positives"
    )


def test_a_hint_about_two_modes_is_printed_once(trace_file: Path) -> None:
    from rich.console import Console

    from mast.cli.classify import render_diagnosis

    judged = _run("classify", trace_file, "--judge", "detectors", "--json")
    diagnosis = Diagnosis.model_validate_json(judged.stdout)
    hint = "the agent stopped after a tool error it did not read"
    modes = [
        v.model_copy(update={"present": False, "hints": [hint]}) if v.code in ("1.5", "3.3") else v
        for v in diagnosis.failure_modes
    ]
    console = Console(record=True, width=200)
    render_diagnosis(diagnosis.model_copy(update={"failure_modes": modes}), console)
    text = console.export_text()
    assert text.count(hint) == 1, text
    line = next(line for line in text.splitlines() if hint in line)
    assert "1.5" in line and "3.3" in line


def test_a_missing_figure_has_one_mark_in_validate_and_its_page() -> None:
    from mast.cli.validate import _f
    from mast.validation.page import figure

    for missing in (None, float("nan")):
        assert _f(missing) == figure(missing) == "–"
    assert _f(0.5) == figure(0.5) == "0.50" and figure(-0.0001) == "0.00"


def test_redact_patterns_of_the_flag_and_the_variable_both_apply_as_the_docs_say(
    tmp_path: Path,
) -> None:
    page = " ".join((ROOT / "docs" / "reference" / "environment.md").read_text().split())
    assert "`--redact-patterns` adds to `MAST_REDACT_PATTERNS`" in page
    trace = tmp_path / "run.json"
    messages = [
        {"role": "user", "content": "deploy with ticket TEAMX-48213 and badge BADGE-99127"},
        {"role": "assistant", "content": "I will run ls -la ./logs now"},
        {"role": "assistant", "content": "I will run ls -la ./logs now"},
    ]
    trace.write_bytes(orjson.dumps(messages))
    team, mine = tmp_path / "team.yaml", tmp_path / "mine.yaml"
    team.write_text("ticket: 'TEAMX-\\d{5}'\n")
    mine.write_text("badge: 'BADGE-\\d{5}'\n")
    with FakeLLMServer(lambda body: ANSWER) as server:
        done = _run(
            "classify", trace, *_llm(server.base_url), "--redact-patterns", mine,
            env={"MAST_REDACT_PATTERNS": str(team), "MAST_CACHE": "0"},
        )  # fmt: skip
        sent = orjson.dumps(server.chat_requests[0].body).decode()
    assert done.exit_code == 0, done.output
    assert "TEAMX-48213" not in sent and "BADGE-99127" not in sent
    assert "[REDACTED:ticket]" in sent and "[REDACTED:badge]" in sent
