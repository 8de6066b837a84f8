"""Redaction: every secret kind is replaced, ordinary identifiers are not, traces are redacted whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _data import TRACES

from mast.errors import UsageError
from mast.redact import PATTERNS_ENV, Redactor, load_patterns, redact_text, redact_trace
from mast.trace import Agent, Step, ToolCall, ToolResult, Trace

# Fake credentials shaped like the real ones (published formats), built at run time so no scanner
# mistakes this file for a leak.
OPENAI = "sk-proj-" + "Ab3dEfGhIjKlMnOpQrStUvWxYz0123456789abcdEFgh_-ij"
OPENAI_LEGACY = "sk-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8S9t0U1v2W3x4"
ANTHROPIC = "sk-ant-api03-" + "x" * 20 + "AbCdEf0123456789_-" * 4
AWS_ID = "AKIA" + "IOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCY" + "EXAMPLEKEY"
GCP = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q"
GITHUB = "ghp_" + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij"
GITHUB_PAT = "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"
SLACK = "xoxb-" + "123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx"
HF = "hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345"
STRIPE = "sk_live_" + "51H0abcdefGHIJKLmnopQRST"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9"
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkphbmUifQ"
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PEM = (
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowIBAAKCAQEA7V8kP2d0c1Jx2b0vQh3k5zqfWc0hQkq9nF7v3f0ZbA1xQ2y\n"
    "c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2Vj==\n"
    "-----END RSA PRIVATE KEY-----"
)


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        (f"use {OPENAI} for the call", OPENAI, "api_key"),
        (f"OPENAI_API_KEY={OPENAI_LEGACY}", OPENAI_LEGACY, "api_key"),
        (f"client = Anthropic(api_key='{ANTHROPIC}')", ANTHROPIC, "api_key"),
        (f"aws_access_key_id = {AWS_ID}", AWS_ID, "api_key"),
        (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET, "secret"),
        (f'{{"SecretAccessKey": "{AWS_SECRET}"}}', AWS_SECRET, "secret"),
        (f"https://maps.googleapis.com/api?key={GCP}", GCP, "api_key"),
        (f"git clone https://{GITHUB}@github.com/org/repo", GITHUB, "api_key"),
        (f"GH_TOKEN={GITHUB_PAT}", GITHUB_PAT, "api_key"),
        (f"slack token {SLACK} posted", SLACK, "token"),
        (f"HF_TOKEN={HF}", HF, "api_key"),
        (f"stripe.api_key = '{STRIPE}'", STRIPE, "api_key"),
        (f"Authorization: Bearer {JWT}", JWT, "jwt"),
        ("Authorization: Bearer 0a1b2c3d4e5f6a7b8c9d0e1f", "0a1b2c3d4e5f6a7b8c9d0e1f", "token"),
        ("headers: {'Authorization': 'Basic dXNlcjpodW50ZXIy'}", "dXNlcjpodW50ZXIy", "password"),
        (f"key file:\n{PEM}\nend", PEM, "private_key"),
        ("postgres://admin:s3cr3t!pw@db.internal:5432/app", "s3cr3t!pw", "password"),
        ("redis://:hunter2@cache:6379/0", "hunter2", "password"),
        ("Server=tcp:db;Database=app;User ID=sa;Password=Tr0ub4dor&3x;", "Tr0ub4dor", "password"),
        ('{"password": "correct horse battery staple"}', "correct horse battery staple", "password"),
        ("DB_PASS=swordfish42 ./run.sh", "swordfish42", "password"),
        ("client_secret: 8f3Kq0Zr9Lw2Xy7Vb4Nt", "8f3Kq0Zr9Lw2Xy7Vb4Nt", "secret"),
        ("x-api-key: 2f8a9c0d7e6b5a4f3e2d1c0b", "2f8a9c0d7e6b5a4f3e2d1c0b", "api_key"),
        ("AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFy==;", "Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFy==", "api_key"),
        ("https://acct.blob.core.windows.net/c/f?sv=2022-11-02&sig=AbCdEf0123456789%2B%3D", "AbCdEf0123456789%2B%3D", "token"),
        ("refresh_token=1//0gAbCdEf123456", "1//0gAbCdEf123456", "token"),
        ("contact jane.doe+ops@example.co.uk today", "jane.doe+ops@example.co.uk", "email"),
        ("call +1 (415) 555-0132 now", "+1 (415) 555-0132", "phone"),
        ("call +44 20 7946 0958 now", "+44 20 7946 0958", "phone"),
        ("office: (202) 555-0143.", "(202) 555-0143", "phone"),
        ("cell 202-555-0143", "202-555-0143", "phone"),
    ],
)
def test_each_secret_kind_is_replaced_by_its_typed_placeholder(text: str, secret: str, kind: str) -> None:
    result = redact_text(text)
    assert secret not in result.text
    assert f"[REDACTED:{kind}]" in result.text
    assert result.counts.get(kind, 0) >= 1


def test_assignments_keep_the_key_and_redact_only_the_value() -> None:
    result = redact_text('password=hunter2 {"api_token": "tok_0123456789abcdef"} DB_PASSWORD: "pw"')
    assert result.text == (
        'password=[REDACTED:password] {"api_token": "[REDACTED:token]"} DB_PASSWORD: "[REDACTED:password]"'
    )
    assert result.counts == {"password": 2, "token": 1}


def test_json_escaped_service_account_key_is_redacted_whole() -> None:
    # A GCP service-account file pasted into a tool result: the PEM's newlines are "\n" escapes.
    body = PEM.replace("\n", "\\n")
    text = f'{{\\"type\\": \\"service_account\\", \\"private_key\\": \\"{body}\\n\\"}}'
    result = redact_text(text)
    assert "MIIEowIBAAKCAQEA" not in result.text and "c2VjcmV0" not in result.text
    assert result.counts == {"private_key": 1}


def test_a_private_key_cut_off_before_its_end_line_is_still_redacted() -> None:
    cut = PEM.split("-----END")[0]
    result = redact_text(f"cat id_rsa\n{cut}")
    assert "MIIEowIBAAKCAQEA" not in result.text and result.counts == {"private_key": 1}


ORDINARY = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b (HEAD -> main)",
    "short sha 3f78685 merged",
    "request_id=123e4567-e89b-12d3-a456-426614174000",
    "trace_id 4bf92f3577b34da6a3ce929d0e0e4736 span_id 00f067aa0ba902b7",
    "image@sha256:9b2d9a5c1c2e4f7a8b3d6e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b",
    "installed numpy 1.26.4, torch 2.3.0+cu121, node v20.11.1, chart 2.10.0-rc.1, 1.2.3.4-beta",
    "pod/api-server-7d9f8b6c4-x2kqz Running; rs checkout-5f4d8c7b9 scaled; job batch-28391020-kz7p2",
    "2024-01-15T10:00:00.123Z took 1234567890 ns; epoch 1705312800; port 8080",
    '{"prompt_tokens": 1234, "completion_tokens": 56, "max_tokens": 4096, "token_count": 12}',
    "tokenizer=gpt2-xl; secretName: db-credentials; secret_ref: vault/path; passed=12 failed=0",
    "compass: north, bypass=true, monkey: banana, sort key: name, primary_key=id",
    "The password: is incorrect. Please reset it.",
    'api_key: os.environ["OPENAI_API_KEY"], token=${GITHUB_TOKEN}, password: <your password>',
    "jwtToken: env.CODEMIE_JWT_TOKEN || undefined; apiKey: self.config.api_key",
    "PWD=/home/user/project OLDPWD=/tmp",
    "git@github.com:org/repo.git and icon@2x.png and @types/node@20.1.0 and user@localhost",
    "pip install scikit-learn-intelex sk-learn-compatible-estimators hf_hub_download_progress",
    "ratio 202.555.0143e5 and version 10.20.30.40.50 and 1.2.3.4.5",
    "$ ls /var/lib/docker/overlay2/a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2",
    "base64 payload aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSBzZWNyZXQgYXQgYWxs and md5 d41d8cd98f00b204e9800998ecf8427e",
]


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_identifiers_and_prose_are_left_alone(text: str) -> None:
    result = redact_text(text)
    assert result.text == text, result.counts
    assert result.counts == {}


def test_ipv4_addresses_are_kept_by_default_and_redacted_on_request() -> None:
    text = "connect to 10.0.12.7:5432 from 192.168.1.20, bind 0.0.0.0, health on 127.0.0.1"
    assert redact_text(text).text == text
    result = redact_text(text, ips=True)
    assert result.text == (
        "connect to [REDACTED:ipv4]:5432 from [REDACTED:ipv4], bind 0.0.0.0, health on 127.0.0.1"
    )
    assert result.counts == {"ipv4": 2}
    assert redact_text("version 1.2.3.4.5 and 300.1.1.1 and 01.2.3.4", ips=True).counts == {}


def test_redaction_is_idempotent() -> None:
    text = f"key {OPENAI} mail a@b.io password=hunter2 Bearer {JWT} 202-555-0143"
    once = redact_text(text)
    twice = redact_text(once.text)
    assert twice.text == once.text
    assert twice.counts == {}


def test_overlapping_findings_merge_and_leave_no_tail() -> None:
    # The URL password contains an e-mail-looking tail and the key value runs into a JWT.
    text = f"https://bot:p4ss@w0rd@example.com/x and token={JWT}"
    result = redact_text(text)
    assert "p4ss" not in result.text and "w0rd" not in result.text
    assert "eyJ" not in result.text and "SflKxwRJ" not in result.text


def test_custom_patterns_from_argument_redact_their_group() -> None:
    text = "customer CUST-004211 and employee E12345 filed ticket"
    result = redact_text(text, patterns={"customer_id": r"CUST-\d{6}", "employee_id": r"employee (?P<secret>E\d+)"})
    assert result.text == "customer [REDACTED:customer_id] and employee [REDACTED:employee_id] filed ticket"
    assert result.counts == {"customer_id": 1, "employee_id": 1}
    assert redact_text(text, patterns=[("ticket", re.compile(r"tick(et)"))]).text.endswith("filed tick[REDACTED:ticket]")


def test_custom_patterns_from_the_environment_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "patterns.yaml"
    file.write_text("internal_host: '\\b[a-z]+\\.corp\\.internal\\b'\n")
    monkeypatch.setenv(PATTERNS_ENV, str(file))
    assert redact_text("ssh build.corp.internal").text == "ssh [REDACTED:internal_host]"
    assert redact_text("ssh build.corp.internal", patterns={"host": "ssh"}).counts == {"host": 1, "internal_host": 1}
    file.write_text("internal_host: 'corp\\.internal'\nticket: 'T-\\d+'\n")
    import os

    os.utime(file, (1, 2))  # a changed file is re-read, even within the same second
    assert redact_text("T-9 on x.corp.internal").counts == {"ticket": 1, "internal_host": 1}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[unclosed: '('\n", "does not parse"),
        ("- just\n- a list\n", "must map names to regexes"),
        ("bad: '(unclosed'\n", "does not compile"),
        ("Bad Name: 'x'\n", "lower-case"),
    ],
)
def test_bad_pattern_files_are_one_line_usage_errors(tmp_path: Path, content: str, message: str) -> None:
    file = tmp_path / "patterns.yaml"
    file.write_text(content)
    with pytest.raises(UsageError, match=message) as info:
        load_patterns(file)
    assert "\n" not in str(info.value)


def test_a_missing_patterns_file_named_by_the_environment_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(PATTERNS_ENV, str(tmp_path / "nope.yaml"))
    with pytest.raises(UsageError, match=PATTERNS_ENV):
        redact_text("anything")


def test_redactor_rejects_a_bad_inline_pattern() -> None:
    with pytest.raises(UsageError, match="does not compile"):
        Redactor(patterns={"x": "(?P<"})


def _secret_trace() -> Trace:
    return Trace(
        trace_id="run-42",
        task=f"Deploy with key {OPENAI} and tell ops@example.com",
        agents=[Agent(name="deployer", role="Deploys", system_prompt=f"Your token is {GITHUB}")],
        steps=[
            Step(index=0, agent="deployer", content="connecting to postgres://app:pw1234@db:5432/x"),
            Step(
                index=1,
                agent="deployer",
                kind="tool_call",
                tool_calls=[ToolCall(name="http", arguments={"headers": {"Authorization": f"Bearer {JWT}"}, "n": 3})],
            ),
            Step(
                index=2,
                kind="tool_result",
                tool_results=[ToolResult(name="http", output=f"echo {AWS_ID}")],
                error="login failed for jane@corp.example",
            ),
        ],
        final_output="done; password=hunter2",
        labels={"1.1": True},
        metadata={"owner": "ops@example.com"},
    )


def test_redact_trace_covers_everything_the_judge_reads() -> None:
    trace = _secret_trace()
    redacted, counts = redact_trace(trace)
    transcript = redacted.to_transcript().text
    everything = transcript + (redacted.task or "") + (redacted.final_output or "") + str(redacted.agents)
    for secret in (OPENAI, GITHUB, JWT, AWS_ID, "pw1234", "hunter2", "ops@example.com", "jane@corp.example"):
        assert secret not in everything
    assert counts == {"api_key": 3, "email": 2, "password": 2, "jwt": 1}
    # Structure, ids, labels and metadata (never shown to the judge) are unchanged.
    assert redacted.trace_id == "run-42" and len(redacted.steps) == 3
    assert redacted.steps[1].tool_calls[0].arguments["n"] == 3
    assert redacted.labels == trace.labels and redacted.metadata == trace.metadata
    # The original is untouched.
    assert OPENAI in (trace.task or "") and JWT in str(trace.steps[1].tool_calls[0].arguments)


def test_redact_trace_of_a_clean_trace_changes_nothing() -> None:
    trace = Trace(steps=[Step(index=0, content="ran pytest: 3 passed in 0.52s at commit 3f78685")])
    redacted, counts = redact_trace(trace)
    assert counts == {} and redacted.to_transcript().text == trace.to_transcript().text


UUID = re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b")
SHA = re.compile(r"\b[0-9a-f]{40}\b")
VERSION = re.compile(r"\bv?\d+\.\d+\.\d+\b")


def test_real_traces_keep_their_ids_and_versions() -> None:
    """On the real sample traces, every UUID, git SHA and version string survives redaction."""
    checked = 0
    for file in sorted((TRACES).rglob("*")):
        if not file.is_file():
            continue
        text = file.read_text(encoding="utf-8", errors="replace")
        redacted = redact_text(text).text
        for pattern in (UUID, SHA, VERSION):
            before = pattern.findall(text)
            checked += len(before)
            assert sorted(pattern.findall(redacted)) == sorted(before), (file.name, pattern.pattern)
    assert checked > 100


def test_a_secret_across_a_step_cap_does_not_leave_a_fragment_in_the_judges_material() -> None:
    """The judge caps long steps (head ... tail); redaction must come before the cut."""
    from mast.judge.material import prepare

    head = 4_000 * 2 // 3  # the renderer's head share of a capped step block
    content = "x" * (head - 24) + " " + OPENAI + " jane.doe@example.com " + "y" * 6_000
    material = prepare(Trace(task="mail ops@example.com", steps=[Step(index=0, agent="coder", content=content)]))
    assert "sk-proj" not in material.transcript and "jane.doe" not in material.transcript
    assert material.redactions == {"api_key": 1, "email": 2}
    assert material.task == "mail [REDACTED:email]"


def test_patterns_that_are_not_name_regex_pairs_are_a_usage_error() -> None:
    with pytest.raises(UsageError, match="name -> regex pairs"):
        redact_text("x", patterns=("employee_id=E\\d+",))  # type: ignore[arg-type]
