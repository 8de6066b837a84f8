"""National identity and tax numbers: by label or column, proven by python-stdnum's checksum (issue 34).

The numbers are made up here and pass their checksum; each near miss is the same shape without the
label, or with a checksum that fails, and must come back unchanged.
"""

from __future__ import annotations

import pytest

from mast.redact import Redactor


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("Steuerliche Identifikationsnummer: 56308794245", "56308794245"),
        ("N° de sécurité sociale : 2 92 08 59 704 051 13", "2 92 08 59 704 051 13"),
        ('{"cliente": "Lucía Ortega", "dni": "50601858H"}', "50601858H"),
        ("BSN 461594997 staat niet in de basisregistratie.", "461594997"),
        ("KYC row: name=Arjun Mehta aadhaar=6370 1329 8643 city=Pune", "6370 1329 8643"),
        ("CPF do titular: 355.052.262-21", "355.052.262-21"),
        ("Employee SIN: 783 470 107", "783 470 107"),
        ("| imię | PESEL |\n|---|---|\n| Anna Nowak | 94092699042 |", "94092699042"),
        ("name,bsn\nJ. de Vries,461594997\n", "461594997"),
    ],
)
def test_a_labelled_national_number_that_checks_is_redacted(text: str, number: str) -> None:
    result = Redactor().redact(text)
    assert number not in result.text
    assert result.counts.get("national_id") == 1


@pytest.mark.parametrize(
    "text",
    [
        "order 461594997 shipped on 2026-12-04",  # a checksum-valid BSN with no label is any number
        "BSN 461594998 is not a valid number",  # the label, but the checksum fails
        "cpf: 123.456.789-00 (the form's placeholder)",
        "RFC 7231 defines the semantics; sin 30 days ago; nas 192.168.1.10 is full",
        "| name | PESEL |\n|---|---|\n| x | 12345678901 |",
        "the BSN field holds nine digits and the PESEL column eleven",
    ],
)
def test_a_number_without_its_label_or_checksum_stays(text: str) -> None:
    assert Redactor().redact(text).text == text


def test_a_base64_user_password_pair_is_redacted_and_ordinary_base64_stays() -> None:
    import base64

    def encoded(text: str) -> str:
        return base64.b64encode(text.encode()).decode()

    secret = encoded("deploy:RsJUcCXWySqnzKNwKhUgNM")
    assert secret not in Redactor().redact(f'$ echo -n "$REG_CREDS" | base64\n{secret}').text
    for ordinary in ("localhost:8080", "Content-Type:application/json", "a:HTTPRequestHandler"):
        text = f"value {encoded(ordinary)}"
        assert Redactor().redact(text).text == text


def test_the_phone_gate_gives_the_matchers_answers() -> None:
    # The regional phone rule skips phonenumbers' matcher for regions whose numbering plan cannot
    # hold a run (issue 34: a page of digit groups took 30 s/MB). The gate must not change an answer.
    import random

    import phonenumbers

    from mast.redact import pii

    def matcher_only(candidate: str) -> bool:
        return any(
            found.start == 0 and found.end == len(candidate)
            for region in pii.REGIONS
            for found in phonenumbers.PhoneNumberMatcher(
                candidate, region, leniency=phonenumbers.Leniency.VALID
            )
        )

    rng = random.Random(34)
    candidates = []
    for region in pii.REGIONS:
        for kind in (phonenumbers.PhoneNumberType.MOBILE, phonenumbers.PhoneNumberType.FIXED_LINE):
            example = phonenumbers.example_number_for_type(region, kind)
            assert example is not None
            digits = str(example.national_number)
            for _ in range(40):
                varied = digits[:3] + "".join(rng.choice("0123456789") for _ in digits[3:])
                number = phonenumbers.parse(varied, region)
                for style in (
                    phonenumbers.PhoneNumberFormat.NATIONAL,
                    phonenumbers.PhoneNumberFormat.INTERNATIONAL,
                ):
                    candidates.append(phonenumbers.format_number(number, style).lstrip("+"))
    for _ in range(400):
        sizes = rng.choice([(3, 3, 4), (4, 4, 4), (2, 2, 2, 2, 2), (5, 5), (4, 3, 4), (2, 4, 4)])
        candidates.append(
            rng.choice(" -.").join("".join(rng.choice("0123456789") for _ in range(n)) for n in sizes)
        )
    answers = [(candidate, pii._regional_phone_ok.__wrapped__(candidate)) for candidate in candidates]
    assert any(ok for _, ok in answers) and not all(ok for _, ok in answers)
    assert [(candidate, matcher_only(candidate)) for candidate in candidates] == answers
