"""gitleaks' credential rules, converted to data and run with RE2 (issue 25).

Every converted rule has a positive and a near-miss example in ``tests/data/redact/gitleaks_cases.json``
(generated from the rule's own pattern by ``python -m mast.redact.refresh_gitleaks --cases``, then
kept as data): the rule alone finds the positive's secret and the redactor removes it; the redactor
leaves the near miss as it is.
"""

from __future__ import annotations

import json
import random
import re
import string
from pathlib import Path

import pytest

from mast.redact import Redactor, redact_text
from mast.redact.gitleaks import (
    DATA_FILE,
    GitleaksRules,
    convert,
    kind_of,
    load_data,
    load_rules,
    shannon_entropy,
)

CASES = json.loads((Path(__file__).parent / "data" / "redact" / "gitleaks_cases.json").read_text())
DATA = load_data()
RULES = {entry["id"]: entry for entry in DATA["rules"]}

NO_ENTROPY = Redactor(entropy=False)
"""Every rule but the entropy fallback."""


def test_the_rule_set_is_gitleaks_at_a_pinned_commit_with_its_licence() -> None:
    assert re.fullmatch(r"[0-9a-f]{40}", DATA["commit"])
    assert "gitleaks/gitleaks" in DATA["source"]
    assert "Copyright (c) 2019 Zachary Rice" in DATA["license"] and "MIT License" in DATA["license"]
    assert len(RULES) >= 200 and len(load_rules().rules) == len(RULES)
    assert CASES["commit"] == DATA["commit"], "refresh the cases with the rules (--cases)"
    assert set(CASES["cases"]) == set(RULES), "every rule needs a positive and a near-miss example"
    licence = (Path(__file__).parents[1] / "LICENSES" / "MIT-gitleaks.txt").read_text()
    assert "Zachary Rice" in licence and DATA_FILE.name in (Path(__file__).parents[1] / "THIRD_PARTY_DATA.md").read_text()


@pytest.fixture(scope="module")
def alone() -> dict[str, GitleaksRules]:
    return {rule_id: GitleaksRules({"allow": DATA["allow"], "rules": [entry]}) for rule_id, entry in RULES.items()}


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_each_gitleaks_rule_finds_its_positive_and_keeps_its_near_miss(rule_id: str, alone: dict[str, GitleaksRules]) -> None:
    case = CASES["cases"][rule_id]
    hits = alone[rule_id].findings(case["positive"])
    assert [case["positive"][start:end] for _, start, end in hits][:1] == [case["secret"]]
    assert case["secret"] not in redact_text(case["positive"]).text
    assert not alone[rule_id].findings(case["near_miss"])
    # A near miss is a provider's shape cut short: no shape rule takes it, but a random run may still
    # be taken by the entropy rule (issue 34), which is what a cut-off key should get.
    assert NO_ENTROPY.redact(case["near_miss"]).text == case["near_miss"]


def test_identifiers_stay_even_beside_a_rule_keyword() -> None:
    # sourcegraph's rule accepts any 40-hex run once "sourcegraph" occurs; the generic rule any
    # high-entropy value after "key:". SHAs, UUIDs and span ids are what traces are full of.
    text = (
        "sourcegraph indexed commit 3f786850e387550fdab836ed7e6dc881de23001b; "
        'idempotency_key: "123e4567-e89b-12d3-a456-426614174000", trace key: 4bf92f3577b34da6a3ce929d0e0e4736'
    )
    assert redact_text(text).text == text
    for text in (
        "span key: 00f067aa0ba902b7; token_id: 123e4567-e89b-12d3-a456-426614174000",
        "secret_version: 2025-01-31T12:34:56.789Z; auth: 2025-01-31T12:34:56Z; api_key_created=1733040000123",
        "commit_key = 3f786850e387550fdab836ed7e6dc881de23001b; cache key: sha256:9b2d9a5c1c2e4f7a8b3d6e0f1a2b3c4d",
    ):
        assert redact_text(text).text == text


def test_allow_lists_that_look_at_the_match_see_the_key_name() -> None:
    # gitleaks' generic rule allows "primary_key = ..." by a regex on the whole match, which starts
    # before the keyword; mast drops that lead from the pattern for speed and puts it back for this.
    assert redact_text("primary_key = 'Zx81kQ0pLmN2vB7c'").text == "primary_key = 'Zx81kQ0pLmN2vB7c'"
    assert "Zx81kQ0pLmN2vB7c" not in redact_text("auth_token = 'Zx81kQ0pLmN2vB7c'").text


def test_a_secret_in_a_long_text_is_found_in_its_window_and_not_cut_short() -> None:
    # 1Password's service-account token: 250+ characters (random ones here); the generic rule's
    # pattern stops at 150, and the rest must not be left behind.
    rng = random.Random(3)
    body = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(600))
    text = "x " * 20_000 + "token " + "ops_eyJ" + body + " " + "y " * 20_000
    redacted = redact_text(text).text
    assert body[-40:] not in redacted and body[:40] not in redacted and redacted.count("[REDACTED:") == 1
    shortened = redact_text("token = " + body).text
    assert shortened == "token = [REDACTED:token]"


def test_conversion_keeps_what_applies_to_traces() -> None:
    config = {
        "allowlist": {"regexes": ["^EXAMPLE$"], "stopwords": ["Sample"], "paths": ["x"]},
        "rules": [
            {"id": "a-token", "regex": r"atk_[a-z]{8}", "keywords": ["ATK_"], "entropy": 2,
             "allowlists": [{"condition": "AND", "paths": [r"\.md$"], "regexes": ["x"]}, {"stopwords": ["Test"]}]},
            {"id": "pkcs12-file", "path": r"\.p12$"},
            {"id": "in-some-files", "regex": "x", "path": r"\.env$", "keywords": ["x"]},
        ],
    }
    data = convert(config, "0" * 40)
    assert [r["id"] for r in data["rules"]] == ["a-token"]
    assert data["rules"][0]["keywords"] == ["atk_"] and data["rules"][0]["allow"] == [{"stopwords": ["test"]}]
    assert {s["id"] for s in data["skipped"]} == {"pkcs12-file", "in-some-files"}
    assert data["allow"] == [{"regexes": ["^EXAMPLE$"], "stopwords": ["sample"]}]
    engine = GitleaksRules(data)
    assert engine.findings("got atk_qwertyui") == [("token", 4, 16)]
    assert engine.findings("got atk_testtest") == []  # stop word
    with pytest.raises(ValueError, match="RE2 does not compile"):
        convert({"rules": [{"id": "bad", "regex": "(?<=x)y"}]}, "0" * 40)


def test_kinds_and_entropy() -> None:
    assert kind_of("github-pat") == "token" and kind_of("gcp-private-key") == "private_key"
    assert kind_of("curl-auth-user") == "password" and kind_of("stripe-access-token") == "token"
    assert kind_of("aws-secret-key") == "secret" and kind_of("openai-api-key") == "api_key"
    assert shannon_entropy("") == 0 and shannon_entropy("aaaa") == 0 and round(shannon_entropy("abcd"), 3) == 2
