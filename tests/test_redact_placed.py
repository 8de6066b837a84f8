"""Secrets by where they sit, then by shape (issue 34): tests/data/redact/placed_cases.yaml.

Each hit's secret must not survive redaction; each near miss must come back unchanged. The file is a
sample of the shapes agents print, not a list of patches: at least 95% of hits and at most 5% of near
misses changed is the bar, and every failure is printed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mast.redact import Redactor
from mast.redact.placed import looks_generated, secret_name

CASES = yaml.safe_load(
    (Path(__file__).parent / "data" / "redact" / "placed_cases.yaml").read_text(encoding="utf-8")
)


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor()


def test_at_least_95_percent_of_placed_secrets_are_removed(redactor: Redactor) -> None:
    hits = CASES["hits"]
    leaked = [case for case in hits if case["secret"] in redactor.redact(case["text"]).text]
    for case in leaked:
        print(f"leaked ({case['kind']}): {case['secret']!r} in {case['text'][:120]!r}")
    assert len(leaked) <= 0.05 * len(hits), [case["secret"] for case in leaked]


def test_at_most_5_percent_of_near_misses_change(redactor: Redactor) -> None:
    misses = CASES["near_misses"]
    changed = [(text, redactor.redact(text).text) for text in misses if redactor.redact(text).text != text]
    for text, result in changed:
        print(f"changed: {text!r} -> {result!r}")
    assert len(changed) <= 0.05 * len(misses), changed


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("DB_PASSWORD", "password"),
        ("/prod/db/password", "password"),
        ("ClientSecret", "secret"),
        ("webhookSigningKey", "secret"),
        ("APP_KEY", "api_key"),
        ("x-auth-token", "token"),
        ("aws_session_token", "token"),
        ("password2", "password"),
        ("tls_secret", "secret"),
        ("password_min_length", None),
        ("secretName", None),
        ("max_tokens", None),
        ("NextToken", None),
        ("nextPageToken", None),
        ("sort_key", None),
        ("DB_PASSWORD_FILE", None),
        ("keyName", None),
        ("token_type", None),
        ("@aws-sdk/credential-providers", None),
        ("auth", None),
    ],
)
def test_what_a_name_says(name: str, kind: str | None) -> None:
    assert secret_name(name) == kind


@pytest.mark.parametrize(
    ("token", "generated"),
    [
        ("Xy7Qp2Lm9Rk4Vt1Wn8Bz3Jc6Hd0Gf5S", True),
        ("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEYX", True),
        ("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", False),  # a digest
        ("123e4567-e89b-12d3-a456-426614174000", False),  # a UUID
        ("my-deployment-7d9f8b6c4-x2kqz", False),  # a pod
        ("getUserAccountSettingsHandler", False),  # a name
        ("src/components/settings/AccountPanel", False),  # a path
        ("aGVsbG8gd29ybGQgdGhpcyBpcyBub3QgYSBzZWNyZXQ", False),  # base64 of prose
    ],
)
def test_what_looks_generated(token: str, generated: bool) -> None:
    assert looks_generated(token) is generated


def test_a_url_encoded_secret_is_decoded_and_replaced_in_place(redactor: Redactor) -> None:
    text = "GET /cb?code=1&access_token%3Dya-9fK2mQ7xL4vB8nR1tZ6%26state%3Dx HTTP/1.1"
    assert redactor.redact(text).text == "GET /cb?code=1&access_token%3D[REDACTED:token]%26state%3Dx HTTP/1.1"


# Shapes an independent attacker found leaking or mangled (issue 34's second pass), values invented.
@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("IBAN ES91-2100-0418-4502-0005-1332 on file", "ES91-2100-0418-4502-0005-1332"),
        ("jdbc:sqlserver://db:1433;user=sa;password=Xy#Pq7Lm2Vb9;encrypt=true", "Xy#Pq7Lm2Vb9"),
        (
            "SECRET_KEY_BASE:    4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e",
            "4f1c2d3e4f5a6b7c8d9e0f1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e",
        ),
        ('{"api_key_value": "Qw8Er7Ty6Ui5Op4aS3dF"}', "Qw8Er7Ty6Ui5Op4aS3dF"),
    ],
)
def test_second_pass_hits_are_redacted(text: str, secret: str) -> None:
    assert secret not in Redactor().redact(text).text


@pytest.mark.parametrize(
    "text",
    [
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl deploy@ci",
        "  + password = (sensitive value)",
        "header: Q29udGVudC1UeXBlOiBhcHBsaWNhdGlvbi9qc29uOyBjaGFyc2V0PXV0Zi04",
    ],
)
def test_second_pass_near_misses_are_left_alone(text: str) -> None:
    assert Redactor().redact(text).text == text


# Shapes a third independent attacker set leaked (issue 34, 2026-12-04), values invented here.
_WRAPPED = (
    "eyJhbGciOiAiUlMyNTYiLCAidHlwIjogIkpXVCJ9.eyJzdWIiOiAibWFzdC10aGlyZC1wYXNzIiwgImV4cCI6"
    "IDE5MDAwMDAwMDB9.c2lnbmF0dXJlLW9mLWEtdG9rZW4td3JhcHBlZC1hdC1zZXZlbnR5LXNpeC1jb2x1bW5z"
)
_AT_76 = "\n".join(_WRAPPED[i : i + 76] for i in range(0, len(_WRAPPED), 76))


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (
            "https://acme.webhook.office.com/webhookb2/1c2d3e4f-1111-2222-3333-444455556666@9a8b7c6d-aaaa-bbbb-cccc-"
            "ddddeeeeffff/IncomingWebhook/Xk3Pq9Lm2Vb8Nc7Rt6Yw5Ze4Ua3Sd2Fg/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b/"
            "V2Qm9ndXNTaWduYXR1cmVGb3JUZWFtcw",
            "Xk3Pq9Lm2Vb8Nc7Rt6Yw5Ze4Ua3Sd2Fg",
        ),
        ("| name | value | source |\n|---|---|---|\n| DB_PASSWORD | rT5#kLm-9qZ | env |", "rT5#kLm-9qZ"),
        ("$ ./migrate --db-host db --db-pass Vb8Nc7Rt6Yw5Ze --verbose", "Vb8Nc7Rt6Yw5Ze"),
        ("$ tool login --user ops --pwd Lm2Vb8Nc7R", "Lm2Vb8Nc7R"),
        (f"[auth] minted:\n{_AT_76}\n[auth] done", "mast-third-pass"),
        ("I signed in to the admin panel with the password Qz7-Lp3Vw9Xk2 and it worked.", "Qz7-Lp3Vw9Xk2"),
    ],
)
def test_third_pass_hits_are_redacted(text: str, secret: str) -> None:
    redacted = Redactor().redact(text).text
    assert secret not in redacted
    if secret == "mast-third-pass":  # the payload is only readable once the lines are joined
        assert not any(line in redacted for line in _AT_76.splitlines())


@pytest.mark.parametrize(
    "text",
    [
        "| password | string | The account's password |",
        "$ gcc -O2 --bypass-cache --passthrough x.c && tool --pwd /home/ops",
        "the password reset flow sends a link; set the password to PASSWORD_MIN_LENGTH or more",
        "add an IncomingWebhook/ connector in Teams",
    ],
)
def test_third_pass_near_misses_are_left_alone(text: str) -> None:
    assert Redactor().redact(text).text == text
