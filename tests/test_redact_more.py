"""Redaction of payment cards, IBANs, SSNs and the credential shapes kept as data (issue 13, item 10).

Each rule of ``mast/data/credential_rules.yaml`` has a positive and a near-miss case in
``tests/data/redact/cases.yaml``; lookalikes that traces are full of are never replaced.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mast.redact import Redactor, redact_text
from mast.redact.pii import RULES_FILE, credential_rules, iban_ok, luhn_ok

CASES = yaml.safe_load((Path(__file__).parent / "data" / "redact" / "cases.yaml").read_text())["credentials"]
RULES = credential_rules()

NO_ENTROPY = Redactor(entropy=False)
"""Every rule but the entropy fallback."""


def test_the_rules_are_data_with_a_source_and_every_rule_has_cases() -> None:
    text = RULES_FILE.read_text()
    assert "source: the rule set of gitleaks" in text
    ids = [rule["id"] for rule in RULES]
    assert len(ids) == len(set(ids)) >= 40
    assert set(ids) == set(CASES), "every rule needs a positive and a near-miss case"


@pytest.mark.parametrize("rule", RULES, ids=[rule["id"] for rule in RULES])
def test_each_credential_rule_replaces_its_shape_and_keeps_the_near_miss(rule: dict[str, object]) -> None:
    case = CASES[rule["id"]]
    hit = redact_text(case["positive"])
    assert hit.counts == {rule["kind"]: 1}, hit.text
    assert hit.text == f"export TOKEN_VALUE [REDACTED:{rule['kind']}] # from the deploy step"
    # A near miss is a provider's shape cut short: no shape rule takes it; the entropy rule (issue 34)
    # may still take the random run, which is what a cut-off key should get.
    miss = NO_ENTROPY.redact(case["near_miss"])
    assert miss.text == case["near_miss"], f"near miss replaced: {miss.text}"


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("paid with 4111 1111 1111 1111 today", "card_number"),
        ("card=5555-5555-5555-4444;", "card_number"),
        ("amex 378282246310005.", "card_number"),
        ("refund to DE89 3704 0044 0532 0130 00 please", "iban"),
        ("iban GB82WEST12345698765432", "iban"),
        ("SSN 078-05-1120 on file", "ssn"),
        ("the Slack token xapp-1-A0B1C2D3E4-1234567890123-0f1e2d3c4b5a69788796a5b4c3d2e1f0 leaked", "token"),
        ("call +1 202-555-0143", "phone"),
        ("mail ops@example.com", "email"),
    ],
)
def test_personal_data_is_replaced(text: str, kind: str) -> None:
    assert redact_text(text).counts == {kind: 1}, redact_text(text).text


@pytest.mark.parametrize(
    "text",
    [
        "paid with 4111 1111 1111 1112 today",  # fails Luhn
        "order 1733040000000 at 1733040000123",  # epoch milliseconds
        "ns 1733040000123456789",  # epoch nanoseconds
        "refund to DE89 3704 0044 0532 0130 01 please",  # IBAN check digits wrong
        "SSN 666-05-1120 and 000-12-3456 and 123-00-4567",  # impossible SSNs
        "commit 4111111111111111a1b2c3d4e5f6a7b8c9d0e1f2",  # hex run
        "span 4bf92f3577b34da6 trace 4bf92f3577b34da6a3ce929d0e0e4736",
        "uuid 123e4567-e89b-12d3-a456-426614174000",
        "pod checkout-5d8f7c9b4-x2x7q restarted",
        "at 2025-01-31T12:34:56.789Z took 4111 ms",
        "version 4.111.1111.1111 and build 5555-5555",
        "sha256~short",  # an OpenShift prefix without a token
    ],
)
def test_lookalikes_stay(text: str) -> None:
    assert redact_text(text).text == text


def test_checksums() -> None:
    assert luhn_ok("79927398713") and not luhn_ok("79927398710")
    assert iban_ok("GB82 WEST 1234 5698 7654 32") and not iban_ok("GB82 WEST 1234 5698 7654 33")
    assert not iban_ok("ZZ82WEST12345698765432")
