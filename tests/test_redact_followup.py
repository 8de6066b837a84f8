"""Issue 25 follow-up: shapes an independent attacker found leaking past the redactor, each as a
general rule with a positive and a near miss (the near misses keep SHAs, UUIDs and timestamps)."""

from __future__ import annotations

import pytest

from mast.redact import redact_text, redact_trace
from mast.trace import Step, ToolCall, ToolResult, Trace

# (text, what must go, kind): each was sent to the judge before.
LEAKED = [
    # 1. a second card or IBAN right after the first
    ("4111111111111111 5500000000000004", "5500000000000004", "card_number"),
    ("4111 1111 1111 1111 5500 0000 0000 0004", "5500 0000 0000 0004", "card_number"),
    ("cards 4111111111111111 5500000000000004 378282246310005 6011111111111117", "6011111111111117", "card_number"),
    ("4111 1111 1111 1111 5500 0000 0000 0004 3782 822463 10005 6011 1111 1111 1117", "6011 1111 1111 1117", "card_number"),
    ("IBAN DE89370400440532013000 GB82WEST12345698765432", "GB82WEST12345698765432", "iban"),
    ("DE89 3704 0044 0532 0130 00 GB82 WEST 1234 5698 7654 32 ok", "GB82 WEST 1234 5698 7654 32", "iban"),
    # 2. an unquoted value runs to whitespace, whatever punctuation it holds
    ("SECRET_KEY=abcdefgh)ijkl1234", "ijkl1234", "secret"),
    ("DJANGO_SECRET_KEY=QbtN)2FWXWD5KaPHI2ufKs+sJ-@S*k(-!Wzq", "Wzq", "secret"),
    ("PASSWORD=pa(ss)word123", "word123", "password"),
    ("PASSWORD=p4ss,w0rd99", "w0rd99", "password"),
    ("SECRET=s3cr3t!@#$%^&*()_+ next", "&*()_+", "secret"),
    # 3. registry logins, .netrc, AWS SigV4, short Authorization values
    ("docker login -u bot -p dockerPw_881 registry", "dockerPw_881", "password"),
    ("podman login -u bot -p 'p0dPw!' quay.io", "p0dPw!", "password"),
    ("machine api.example.com login alice password netrcPass99", "netrcPass99", "password"),
    ("machine api.example.com\n  login alice\n  password netrcPass99\n", "netrcPass99", "password"),
    ("default login bob password defPass77", "defPass77", "password"),
    (
        "Authorization: AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, "
        "SignedHeaders=host, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
        "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
        "token",
    ),
    ("Authorization: Bearer abcd1234", "abcd1234", "token"),
    ("authorization: bearer zq9x", "zq9x", "token"),
    ("Authorization: Basic YTpi", "YTpi", "password"),
    # 4. international numbers by every country's numbering plan
    ("+49 151 23456789", "23456789", "phone"),
    ("ring +49 1512 3456789 now", "3456789", "phone"),
    ("mobile: +49 170 1234567.", "1234567", "phone"),
    ("Büro +49 (0)30 901820", "901820", "phone"),
    ("+33 6 12 34 56 78", "12 34 56 78", "phone"),
    # 5. a token as the whole URL user part (a GitHub token, a Sentry DSN's key)
    ("git clone https://a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0@github.com/o/r.git", "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6", "token"),
    ("SENTRY_DSN=https://0123456789abcdef0123456789abcdef@o123.ingest.sentry.io/456", "0123456789abcdef0123456789abcdef", "token"),
    # 5. secrets set without "="
    ("env:\n- name: DB_PASSWORD\n  value: qxNX82wIamVdPHDt\n", "qxNX82wIamVdPHDt", "password"),
    ("ENV DB_PASSWORD qxNX82wIamVdPHDt", "qxNX82wIamVdPHDt", "password"),
    ("set -gx OPENAI_API_KEY qxNX82wIamVdPHDtAbc123", "qxNX82wIamVdPHDtAbc123", "api_key"),
    ("aws configure set aws_secret_access_key wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI", "secret"),
    (
        "https://outlook.office.com/webhook/a1b2@c3d4/IncomingWebhook/0123456789abcdef0123456789abcdef/a1b2c3d4-e5f6-7890-abcd-ef1234567890",
        "0123456789abcdef0123456789abcdef",
        "token",
    ),
]

KEPT = [
    # near misses: runs of numbers that are no cards, ids and times
    "order 1234 5678 9012 3456 7890 1234 5678 9012 and ts 1700000000123 1700000000456",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b uuid 123e4567-e89b-12d3-a456-426614174000",
    "at 2024-05-01T12:34:56.789Z span 00f067aa0ba902b7 trace 4bf92f3577b34da6a3ce929d0e0e4736",
    "DE89370400440532013001 GB82WEST12345698765433",
    "@@ -120,7 +120,9 @@ +2024-05-01 tz +05:30 delta +12345678 bytes +49 151 23456789012 x+49 151 23456789",
    "ENV PATH /usr/bin\nset -x DEBUG 1\nENV TOKEN_LIMIT 4096\n- name: DB_PASSWORD_FILE\n  value: /run/secrets/pw\n",
    "- name: API_TOKEN\n  valueFrom:\n    secretKeyRef: {name: api, key: token}",
    "Authorization: Bearer token required",
    "Authorization: Bearer <token>",
    "the machine password is stored in the vault; docker login -u bot --password-stdin",
    # 8. code passes a variable on, it holds no value
    "login(user, password=password)",
    "client = OpenAI(api_key=api_key, timeout=30)",
    "connect(host, password=db_password)",
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a list of pairs goes on after the value: only the value goes
        ("Server=db;Password=Tr0ub4dor&3x;Database=app", "Server=db;Password=[REDACTED:password];Database=app"),
        ("https://x.example/cb?token=9f8e7d6c5b4a3921&user=ops", "https://x.example/cb?token=[REDACTED:token]&user=ops"),
        ("user=ops, password=hunter2pw, host=db", "user=ops, password=[REDACTED:password], host=db"),
        ("(password=hunter2pw)", "(password=[REDACTED:password])"),
        ("login(user, password=hunter2)", "login(user, password=[REDACTED:password])"),
    ],
)
def test_an_unquoted_value_ends_where_the_next_pair_starts(text: str, expected: str) -> None:
    assert redact_text(text).text == expected


@pytest.mark.parametrize(("text", "secret", "kind"), LEAKED)
def test_the_shapes_that_leaked_are_redacted(text: str, secret: str, kind: str) -> None:
    result = redact_text(text)
    assert secret not in result.text, result.text
    assert f"[REDACTED:{kind}]" in result.text, result.text


@pytest.mark.parametrize("text", KEPT)
def test_lookalikes_stay(text: str) -> None:
    assert redact_text(text).text == text


def test_every_card_of_a_list_is_counted() -> None:
    result = redact_text("4111111111111111 5500000000000004 378282246310005 6011111111111117")
    assert result.counts == {"card_number": 4}
    assert redact_text("IBAN DE89370400440532013000 GB82WEST12345698765432").counts == {"iban": 2}


def test_a_secret_found_once_is_redacted_where_the_text_repeats_it() -> None:
    text = "curl -u admin:Sup3rSecretZ https://api.example\nError: 401 Unauthorized for admin:Sup3rSecretZ"
    result = redact_text(text)
    assert "Sup3rSecretZ" not in result.text
    assert result.text.endswith("Unauthorized for admin:[REDACTED:password]")
    # earlier copies too, and only values long enough to be no common word
    assert redact_text("user hunter2pw42 logged in; password=hunter2pw42").text == (
        "user [REDACTED:password] logged in; password=[REDACTED:password]"
    )
    assert redact_text("password=pw1 then pw1 again").text == "password=[REDACTED:password] then pw1 again"


def test_a_secret_found_in_one_step_is_redacted_in_every_step() -> None:
    trace = Trace(
        trace_id="t",
        task="check the API; admin:Sup3rSecretZ is the account",
        steps=[
            Step(index=0, kind="tool_call", tool_calls=[ToolCall(name="sh", arguments={"cmd": "curl -u admin:Sup3rSecretZ https://x"})]),
            Step(index=1, kind="tool_result", tool_results=[ToolResult(name="sh", output="401 Unauthorized for admin:Sup3rSecretZ")]),
            Step(index=2, content="retrying with Sup3rSecretZ", error="still 401: Sup3rSecretZ"),
        ],
    )
    redacted, counts = redact_trace(trace)
    material = redacted.model_dump_json()
    assert "Sup3rSecretZ" not in material, material
    assert counts["password"] == 5
    assert redacted.steps[2].content == "retrying with [REDACTED:password]"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("https://user:PASS@example.com", "https://user:[REDACTED:password]@example.com"),
        (
            "git clone https://x-access-token:TOKEN@github.com/o/r.git",
            "git clone https://x-access-token:[REDACTED:password]@github.com/o/r.git",
        ),
        ("mailto:bob@example.com", "mailto:[REDACTED:email]"),
        ("https://x.example/?to=bob@example.com", "https://x.example/?to=[REDACTED:email]"),
    ],
)
def test_a_url_keeps_its_host_and_only_the_password_goes(text: str, expected: str) -> None:
    assert redact_text(text).text == expected


KEY40 = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


@pytest.mark.parametrize(
    "text",
    [
        f"aws configure set aws_access_key_id AKIA43764D7SKD2Y5B6O with secret {KEY40}",
        f"I set the default profile up with secret {KEY40} and region us-east-1.",
        f"The secret access key is {KEY40}",
        f"Secret key: `{KEY40}`",
        f"my password was {KEY40}, please rotate it",
        f"credentials => '{KEY40}'",
    ],
)
@pytest.mark.parametrize("entropy", [True, False])
def test_a_40_character_secret_after_a_secret_word_in_prose_is_redacted(text: str, entropy: bool) -> None:
    from mast.redact import Redactor

    out = Redactor(entropy=entropy).redact(text).text
    assert KEY40 not in out and "[REDACTED:" in out, out


@pytest.mark.parametrize(
    "text",
    [
        "the secret is in commit 3f786850e387550fdab836ed7e6dc881de23001b",
        "the secret is thisisjustalongwordwithoutdigitsorcapsxxxxxx",
        f"see {KEY40} (no secret word before it)",
    ],
)
def test_prose_without_a_generated_token_after_a_secret_word_is_kept(text: str) -> None:
    from mast.redact import Redactor

    assert Redactor(entropy=False).redact(text).text == text
