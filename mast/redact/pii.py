"""More redaction rules: checksummed personal data and credential shapes kept as data.

* ``card_number``: payment card numbers (13-19 digits, whole or in groups of digits separated by
  single spaces or hyphens) that start with a card network's prefix and pass the Luhn check.
* ``iban``: international bank account numbers with a known country length and a valid mod-97
  check (ISO 13616), written whole or in groups of four.
* ``ssn``: US social security numbers written ``AAA-GG-SSSS`` with a possible area, group and
  serial (never 000, 666 or 9xx; 00; 0000).
* ``phone`` in international form (``+49 151 23456789``): any country's numbering plan, checked by
  ``phonenumbers``' matcher (leniency VALID) on a bounded window from the ``+``;
* ``phone`` in national form (UK by default, :data:`NATIONAL_REGIONS`): the numbering plan is
  ``phonenumbers``' (Google's libphonenumber metadata), not a hand-written pattern.
* ``ni_number``: UK National Insurance numbers; ``passport``: a number after the word "passport".
* credential shapes from ``mast/data/credential_rules.yaml`` (:func:`credential_shapes`, run with
  RE2 beside gitleaks' own rules in :mod:`mast.redact.gitleaks`).

A check on every candidate (checksum, network prefix, token boundaries) keeps lookalikes alone:
timestamps, span ids, order numbers and version strings are not replaced. :mod:`mast.redact` adds
these rules to its defaults.

Example:
    >>> luhn_ok("4111111111111111"), luhn_ok("4111111111111112")
    (True, False)
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from mast.redact.rules import Rule, token_start

__all__ = ["RULES_FILE", "credential_rules", "credential_shapes", "iban_ok", "luhn_ok", "more_rules"]

RULES_FILE = Path(__file__).resolve().parent.parent / "data" / "credential_rules.yaml"
"""The credential shapes, as data."""

_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def luhn_ok(digits: str) -> bool:
    """The Luhn (mod 10) check every payment card number passes."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        value = int(char)
        if position % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


# Card networks by leading digits and lengths (ISO/IEC 7812 issuer ranges as the networks publish them).
_CARD_PREFIXES: tuple[tuple[tuple[int, int], int, frozenset[int]], ...] = (
    ((4, 4), 1, frozenset({13, 16, 19})),  # Visa
    ((51, 55), 2, frozenset({16})),  # Mastercard
    ((2221, 2720), 4, frozenset({16})),  # Mastercard 2-series
    ((34, 34), 2, frozenset({15})),  # American Express
    ((37, 37), 2, frozenset({15})),
    ((6011, 6011), 4, frozenset({16, 17, 18, 19})),  # Discover
    ((644, 649), 3, frozenset({16, 17, 18, 19})),
    ((65, 65), 2, frozenset({16, 17, 18, 19})),
    ((3528, 3589), 4, frozenset({16, 17, 18, 19})),  # JCB
    ((300, 305), 3, frozenset({14})),  # Diners Club
    ((36, 36), 2, frozenset({14})),
    ((62, 62), 2, frozenset({16, 17, 18, 19})),  # UnionPay
    ((2200, 2204), 4, frozenset({16, 17, 18, 19})),  # Mir
    ((50, 50), 2, frozenset({12, 13, 14, 15, 16, 17, 18, 19})),  # Maestro
    ((56, 58), 2, frozenset({12, 13, 14, 15, 16, 17, 18, 19})),
    ((63, 63), 2, frozenset({12, 13, 14, 15, 16, 17, 18, 19})),
    ((67, 67), 2, frozenset({12, 13, 14, 15, 16, 17, 18, 19})),
)


def _card_network(digits: str) -> bool:
    return any(
        low <= int(digits[:width]) <= high and len(digits) in lengths
        for (low, high), width, lengths in _CARD_PREFIXES
    )


# A whole run of digits joined by single spaces or hyphens, from its first digit only (the
# look-behinds: no digit, and no digit and separator, before it) and possessive, so every run is
# read once, whatever its length; the check then looks for a card inside it.
_CARD = re.compile(r"\d(?<!\d\d)(?<!\d[ \-.]\d)(?:[ \-.]?\d){12,}+")
_SHORT_RUN = 64
"""A run up to this long is searched for a card at every group boundary; a longer one (a dump of
numbers) only at its start and its end."""


def _card_at(text: str, start: int, end: int) -> bool:
    raw = text[start:end]
    if len({c for c in raw if not c.isdigit()}) > 1:
        return False
    if "." in raw and not re.fullmatch(r"\d{4}(?:\.\d{4}){2,3}(?:\.\d{1,4})?", raw):
        return False  # dotted only in groups of four ("4111.1111.1111.1111"), not versions or addresses
    digits = raw.replace(" ", "").replace("-", "").replace(".", "")
    return 13 <= len(digits) <= 19 and _card_network(digits) and luhn_ok(digits)


def _card_from(text: str, groups: list[tuple[int, int]], first: int) -> int:
    """The last group of a card that starts at group ``first`` (13-19 digits), or -1."""
    digits = 0
    for last in range(first, len(groups)):
        digits += groups[last][1] - groups[last][0]
        if digits > 19:
            break
        if digits >= 13 and _card_at(text, groups[first][0], groups[last][1]):
            return last
    return -1


def _card(match: re.Match[str], text: str) -> list[tuple[str, int, int]] | None:
    start, end = match.span()
    before = text[start - 1] if start else ""
    after = text[end] if end < len(text) else ""
    if before and (before.isalpha() or before in "._-+/#") or after and (after.isalnum() or after in "_-"):
        return None  # part of a longer number, id, version, path or time
    if _card_at(text, start, end):
        return [("card_number", start, end)]
    # Cards inside a longer run ("ref 12 4111 1111 1111 1111", or a list of cards): windows from one
    # group boundary, 13-19 digits each. A short run is tried from every group; a long one (a dump
    # of numbers) from its start, from a group that is a whole card, and from right after a card
    # found, so a list of cards is redacted card by card. Every try reads at most 19 digits: linear.
    groups = [(start + m.start(), start + m.end()) for m in re.finditer(r"\d+", text[start:end])]
    short = end - start <= _SHORT_RUN
    found: list[tuple[str, int, int]] = []
    first, chained = 0, True
    while first < len(groups):
        if short or chained or 13 <= groups[first][1] - groups[first][0] <= 19:
            last = _card_from(text, groups, first)
            if last >= 0:
                found.append(("card_number", groups[first][0], groups[last][1]))
                first, chained = last + 1, True
                continue
        first, chained = first + 1, False
    if not short and not (found and found[-1][2] == end):
        floor = found[-1][2] if found else start
        for first in range(len(groups) - 1, max(-1, len(groups) - 20), -1):
            low = groups[first][0]
            if end - low > 40 or low < floor:
                break
            if _card_at(text, low, end):
                found.append(("card_number", low, end))
                break
    return found or None


# IBAN lengths by country (ISO 13616 registry).
_IBAN_LENGTHS = {
    "AD": 24,
    "AE": 23,
    "AL": 28,
    "AT": 20,
    "AZ": 28,
    "BA": 20,
    "BE": 16,
    "BG": 22,
    "BH": 22,
    "BR": 29,
    "CH": 21,
    "CR": 22,
    "CY": 28,
    "CZ": 24,
    "DE": 22,
    "DK": 18,
    "DO": 28,
    "EE": 20,
    "EG": 29,
    "ES": 24,
    "FI": 18,
    "FO": 18,
    "FR": 27,
    "GB": 22,
    "GE": 22,
    "GI": 23,
    "GL": 18,
    "GR": 27,
    "GT": 28,
    "HR": 21,
    "HU": 28,
    "IE": 22,
    "IL": 23,
    "IQ": 23,
    "IS": 26,
    "IT": 27,
    "JO": 30,
    "KW": 30,
    "KZ": 20,
    "LB": 28,
    "LI": 21,
    "LT": 20,
    "LU": 20,
    "LV": 21,
    "MC": 27,
    "MD": 24,
    "ME": 22,
    "MK": 19,
    "MR": 27,
    "MT": 31,
    "MU": 30,
    "NL": 18,
    "NO": 15,
    "PK": 24,
    "PL": 28,
    "PS": 29,
    "PT": 25,
    "QA": 29,
    "RO": 24,
    "RS": 22,
    "SA": 24,
    "SE": 24,
    "SI": 19,
    "SK": 24,
    "SM": 27,
    "TN": 24,
    "TR": 26,
    "UA": 29,
    "VG": 24,
    "XK": 20,
}


def iban_ok(iban: str) -> bool:
    """Known country, its length, and the ISO 7064 mod-97 check equal to 1."""
    compact = iban.replace(" ", "").upper()
    if _IBAN_LENGTHS.get(compact[:2]) != len(compact) or not compact.isalnum():
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


# Bounded (an IBAN is at most 34 characters, 42 in groups of four) and possessive; searched from
# where a token starts.
# (the look-behind sits after the country and first digit, where few positions get to it)
_IBAN = re.compile(r"[A-Z][A-Z]\d(?<![A-Za-z0-9_\-][A-Z][A-Z]\d)\d(?:[ -]?[A-Z0-9]){11,38}+")


_IBAN_FORM = re.compile(
    r"[A-Z0-9]{4}(?: [A-Z0-9]{1,4}){1,9}|[A-Z0-9]{4}(?:-[A-Z0-9]{1,4}){1,9}|[A-Z0-9]{1,40}"
)
"""An IBAN as written: in groups of four (spaces or hyphens between them), or whole."""
_INNER_STARTS = 3
"""Group starts of a rejected candidate tried as the start of an IBAN (the first and two more)."""


@lru_cache(maxsize=4_096)
def _iban_checked(compact: str) -> bool:
    return iban_ok(compact)


def _iban_from(text: str, start: int) -> int:
    """The end of a valid IBAN starting at ``start``, or -1 (only the country's length is tried)."""
    length = _IBAN_LENGTHS.get(text[start : start + 2])
    if length is None or not text[start + 2 : start + 4].isdigit():
        return -1
    form = _IBAN_FORM.match(text, start)
    if form is None:
        return -1
    compact, position = 0, start
    for group in form.group(0).replace("-", " ").split(" "):
        compact += len(group)
        position += len(group)
        if compact >= length:
            break
        position += 1  # the space
    if compact != length or (position < len(text) and text[position].isalnum()):
        return -1
    return position if _iban_checked(text[start:position].replace(" ", "").replace("-", "")) else -1


def _iban(match: re.Match[str], text: str) -> list[tuple[str, int, int]] | None:
    # The candidate may run into the next word ("DE89 3704 ... 00 and"), start with a group that is
    # not an IBAN while one starts at the next group ("ref AB12 DE89 3704 ..."), or hold the start
    # of a second IBAN right after the first: the first few group starts are tried, and again after
    # each IBAN found (each try reads at most 42 characters; starts stay inside the candidate).
    start, end = match.span()
    found: list[tuple[str, int, int]] = []
    tried = 0
    position = start
    while position < end - 3:
        if position == start or text[position - 1] in " -":
            hit = _iban_from(text, position)
            if hit > 0:
                found.append(("iban", position, hit))
                position, tried = hit + 1, 0
                continue
            tried += 1
            if tried == _INNER_STARTS:
                break
        position += 1
    return found or None


# Searched from the first hyphen (a literal re finds fast); the area is read behind it in Python
# (a look-behind at the front would make re try every position).
_SSN = re.compile(r"-(?P<group>\d{2})-(?P<serial>\d{4})")


def _ssn(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start, end = match.start() - 3, match.end()
    before = text[start - 1] if start else ""
    after = text[end] if end < len(text) else ""
    if before and (before.isalnum() or before in "-._/:+") or after and (after.isalnum() or after in "-_/:"):
        return None
    area = text[max(start, 0) : start + 3]
    if start < 0 or not area.isdigit() or not area.isascii():
        return None
    if (
        area in ("000", "666")
        or area.startswith("9")
        or match.group("group") == "00"
        or match.group("serial") == "0000"
    ):
        return None
    return "ssn", start, end


# Written with spaces ("123 45 6789"), checked like the hyphenated form; nine digits in a row only
# after a label ("ssn=123456789"): unlabelled, nine digits are any number.
_SSN_SPACED = re.compile(r"\d(?<![\w\-.]\d)\d\d (?P<group>\d{2}) (?P<serial>\d{4})(?![\w\-])")
_SSN_LABELLED = re.compile(
    r"(?:ssn|social[ _\-]security(?:[ _\-](?:number|no|nr|#))?|ss#)[\"']?[ \t]{0,3}[:=#]?[ \t]{0,3}[\"']?(?P<secret>\d{9})(?!\d)"
)


def _ssn_ok(area: str, group: str, serial: str) -> bool:
    return (
        area.isdigit()
        and area not in ("000", "666")
        and not area.startswith("9")
        and group != "00"
        and serial != "0000"
    )


def _ssn_spaced(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    value = match.group(0)
    if not _ssn_ok(value[:3], match.group("group"), match.group("serial")):
        return None
    return "ssn", match.start(), match.end()


def _ssn_labelled(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start, end = match.span("secret")
    value = text[start:end]
    if match.start() > 0 and text[match.start() - 1].isalpha():
        return None
    if not _ssn_ok(value[:3], value[3:5], value[5:]):
        return None
    return "ssn", start, end


# IBANs as people also type them: lower case, in groups joined by hyphens ("de89-3704-...").
_IBAN_LOOSE = re.compile(r"[a-z][a-z]\d(?<![a-z0-9_\-][a-z][a-z]\d)\d(?:[ \-]?[a-z0-9]){11,38}+")


def _iban_loose(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start, end = match.span()
    raw = text[start:end]
    country = raw[:2].upper()
    length = _IBAN_LENGTHS.get(country)
    if length is None or raw == raw.upper():
        return None  # unknown country; upper case is the iban rule's
    count, position = 0, start
    while position < end and count < length:
        if text[position].isalnum():
            count += 1
        position += 1
    if count != length or (position < len(text) and text[position].isalnum()):
        return None
    if len({c for c in text[start:position] if c in " -"}) > 1:
        return None  # one kind of separator in a number
    compact = text[start:position].replace(" ", "").replace("-", "").upper()
    return ("iban", start, position) if _iban_checked(compact) else None


# --- national formats: phone numbers, UK National Insurance numbers, passport numbers ------------

# A phone number written the national way, with the trunk prefix 0 ("020 7946 0958", "07700 900123",
# "030 1234567"): candidates are bounded runs of digit groups, the numbering plan is phonenumbers'.
# Not right after another group of digits ("4 020 ...": inside a run of numbers), so a run is tried once.
_NATIONAL_PHONE = re.compile(
    r"0(?<![\w+.\-/:]0)(?<!\d[ \-]0)(?:\d{1,4}(?:[ \-]\d{2,8}){1,3}|7\d{9})(?![\w\-/:]|\.\d)"
)
NATIONAL_REGIONS = ("GB",)
"""Countries whose national phone formats are recognised (ISO 3166 codes, phonenumbers' metadata)."""


@lru_cache(maxsize=4_096)
def _national_phone_ok(candidate: str) -> bool:
    import phonenumbers

    digits = sum(c.isdigit() for c in candidate)
    if not 10 <= digits <= 11:
        return False
    for region in NATIONAL_REGIONS:
        try:
            number = phonenumbers.parse(candidate, region)
        except phonenumbers.NumberParseException:
            continue
        if phonenumbers.is_valid_number(number):
            return True
        # Ofcom keeps 07700 900000-900999 for drama (and tests): possible, not "valid", still a mobile
        if (
            region == "GB"
            and phonenumbers.is_possible_number(number)
            and str(number.national_number).startswith("7")
        ):
            return True
    return False


def _national_phone(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start, end = match.span()
    if len({c for c in match.group(0) if not c.isdigit()}) > 1:
        return None  # one kind of separator in a number
    return ("phone", start, end) if _national_phone_ok(match.group(0)) else None


# An international number ("+49 151 23456789", "+49 (0)30 901820", "+33 6 12 34 56 78"): a cheap,
# bounded candidate from a "+" that starts a token, then phonenumbers' matcher with leniency VALID on
# that window only (every country's numbering plan; a window is at most 26 characters: linear).
_PLUS_PHONE = re.compile(r"\+(?<![\w+\-.]\+)\d[\d \-.()/]{5,22}\d")


@lru_cache(maxsize=4_096)
def _plus_phones(window: str) -> tuple[tuple[int, int], ...]:
    import phonenumbers

    return tuple(
        (found.start, found.end)
        for found in phonenumbers.PhoneNumberMatcher(window, None, leniency=phonenumbers.Leniency.VALID)
        if window[found.start] == "+"
    )


def _plus_phone(match: re.Match[str], text: str) -> list[tuple[str, int, int]] | None:
    if sum(c.isdigit() for c in match.group(0)) < 8:
        return None
    start = match.start()
    found = []
    for low, high in _plus_phones(match.group(0)):
        end = start + high
        after = text[end : end + 2]
        if (
            after[:1].isalnum()
            or after[:1] in ("_", "-", "/", ":")
            or after[:1] == "."
            and after[1:].isdigit()
        ):
            continue  # cut out of a longer number, path or time
        found.append(("phone", start + low, end))
    return found or None


# Phone numbers written the national way in a few common regions (REGIONS): candidate runs of digit
# groups (at least one separator, 9 to 13 digits), then phonenumbers' matcher with leniency VALID for
# each region; only a match covering the whole run counts. A candidate is at most 26 characters.
REGIONS = ("US", "GB", "DE", "FR", "IN")
"""Regions whose national phone formats are checked against their numbering plans."""
_REGIONAL_PHONE = re.compile(
    r"[(\d](?<![\w+.\-/:(,][(\d])(?:\d|[ \-.](?=[\d(])|\((?=\d)|\)[ \-.]?(?=\d)){8,25}+"
)


@lru_cache(maxsize=1)
def _region_gates() -> tuple[tuple[str, re.Pattern[str], re.Pattern[str], str], ...]:
    import phonenumbers

    gates: list[tuple[str, re.Pattern[str], re.Pattern[str], str]] = []
    for region in REGIONS:
        metadata = phonenumbers.PhoneMetadata.metadata_for_region(region)
        general = metadata.general_desc if metadata is not None else None
        if metadata is None or general is None or not general.national_number_pattern:
            gates.append((region, re.compile("(?!)"), re.compile(r"\d*"), ""))  # no metadata: no gate
            continue
        trunk = str(metadata.national_prefix_for_parsing or "(?!)")
        country = str(metadata.country_code) if metadata.country_code else ""
        gates.append((region, re.compile(trunk), re.compile(str(general.national_number_pattern)), country))
    return tuple(gates)


def _regions_for(digits: str) -> tuple[str, ...]:
    """The regions whose numbering plan could hold these digits: a gate before phonenumbers' matcher.

    The matcher costs about half a millisecond per region (it parses many sub-windows), so a page of
    digit groups (ids, amounts, an Aadhaar table) took 30 s/MB. A valid number's national part always
    matches its region's general pattern once the trunk prefix (and a country code written without
    its "+") is taken off, so a run that matches none of them cannot be a match, and the matcher
    runs only for the regions left: the same answers, at a fraction of the cost.
    """
    regions = []
    for region, trunk, general, country in _region_gates():
        variants = [digits]
        if country and digits.startswith(country):
            variants.append(digits[len(country) :])
        for variant in list(variants):
            prefix = trunk.match(variant)
            if prefix is not None and prefix.end():
                variants.append(variant[prefix.end() :])
        if any(general.fullmatch(variant) for variant in variants):
            regions.append(region)
    return tuple(regions)


def _prefix_present(number: Any) -> bool:
    # phonenumbers' own VALID-leniency check; it is not public, so without it nothing is gated out
    from phonenumbers import phonenumbermatcher

    check = getattr(phonenumbermatcher, "_is_national_prefix_present_if_required", None)
    return True if check is None else bool(check(number))


@lru_cache(maxsize=4_096)
def _regional_phone_ok(candidate: str) -> bool:
    import phonenumbers

    for region in _regions_for("".join(c for c in candidate if c.isdigit())):
        # A match that covers the whole run is the whole run parsed and verified as the matcher does
        # (valid, and a trunk prefix where the region writes one): if that fails, the matcher, which
        # also tries every inner window at four times the cost, cannot say yes.
        try:
            number = phonenumbers.parse(candidate, region, keep_raw_input=True)
        except phonenumbers.NumberParseException:
            continue
        if not phonenumbers.is_valid_number(number) or not _prefix_present(number):
            continue
        for found in phonenumbers.PhoneNumberMatcher(candidate, region, leniency=phonenumbers.Leniency.VALID):
            if found.start == 0 and found.end == len(candidate):
                return True
    return False


def _regional_phone(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start, end = match.span()
    value = match.group(0).rstrip(" -.(")
    end = start + len(value)
    after = text[end : end + 2]
    if after[:1].isalnum() or after[:1] in ("_", "-", "/", ":") or after[:1] == "." and after[1:].isdigit():
        return None  # cut out of a longer number, path or time
    before = text[max(0, start - 8) : start].rstrip(" -.")
    if before[-1:].isdigit() or before[-1:] == "+":
        return None  # the rest of a longer or international number ("+49 151 ..."), not a number of its own
    digits = sum(c.isdigit() for c in value)
    if not 9 <= digits <= 13 or value.isdigit():
        return None  # an unbroken run of digits is an id, an amount or a time more often than a phone
    separators = {c for c in value if c in " -."}
    if len(separators) > 1 or value.count("(") != value.count(")"):
        return None
    groups = re.findall(r"\d+", value)
    if any(len(group) < 3 for group in groups[1:]) and not all(len(group) == 2 for group in groups[1:]):
        return None  # "0201 2024 11", an ISBN: short groups only in the French pairs
    return ("phone", start, end) if _regional_phone_ok(value) else None


# UK National Insurance number: two letters (neither D, F, I, Q, U nor V; the second not O; not the
# prefixes HMRC never issues), six digits, a suffix A-D; whole or in pairs.
_NI_NUMBER = re.compile(
    token_start(r"[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z](?: ?\d{2}){3} ?[A-D](?![A-Za-z0-9])")
)
_NI_NEVER = frozenset({"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"})


# The same, as people type it in lower case ("ab123456c"); matched on the lower-cased text.
_NI_LOWER = re.compile(token_start(r"[a-ceghj-pr-tw-z][a-ceghj-npr-tw-z](?: ?\d{2}){3} ?[a-d](?![a-z0-9])"))


def _ni_lower(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    value = text[match.start() : match.end()]
    if value.upper() == value:
        return None  # the ni-number rule's
    if value[:2].upper() in _NI_NEVER or value.count(" ") not in (0, 4):
        return None
    return "ni_number", match.start(), match.end()


def _ni_number(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    value = match.group(0)
    if value[:2] in _NI_NEVER or value.count(" ") not in (0, 4):
        return None
    return "ni_number", match.start(), match.end()


# A passport number has no checksum and no common shape: it is found after the word.
_PASSPORT = re.compile(
    r"passport(?:[ _\-]?(?:no|nr|number|num|id|#))?\.?[\"']?[ \t]{0,3}[:#=]?[ \t]{0,3}[\"']?(?P<secret>[a-z0-9]{6,9})(?![a-z0-9])"
)


def _passport(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start, end = match.span("secret")
    if sum(c.isdigit() for c in text[start:end]) < 5:
        return None  # "passport photo", "passport office"
    if match.start() > 0 and text[match.start() - 1].isalpha():
        return None
    return "passport", start, end


def credential_rules(path: Path = RULES_FILE) -> list[dict[str, Any]]:
    """The credential shapes of ``path`` (default: the shipped file), as dicts with id, kind, regex, keywords."""
    import yaml

    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    rules: list[dict[str, Any]] = list(data["rules"])
    return rules


@lru_cache(maxsize=1)
def credential_shapes() -> tuple[dict[str, Any], ...]:
    """The credential shapes of ``credential_rules.yaml`` as rules for the RE2 engine.

    Rules of :mod:`mast.redact.gitleaks`' engine that match whole tokens, the lead (if any) put back
    in front of the regex.
    """
    shapes = []
    for entry in credential_rules():
        shape = {
            "id": "mast-" + entry["id"],
            "kind": entry["kind"],
            "regex": (entry.get("lead") or "") + entry["regex"],
            "keywords": sorted({k.lower() for k in entry["keywords"]}),
            "token_bounds": True,
        }
        shapes.append(shape)
    return tuple(shapes)


@lru_cache(maxsize=1)
def more_rules() -> tuple[Any, ...]:
    """The rules of this module as :mod:`mast.redact` rules (built once)."""
    rules: list[Any] = [
        Rule("card_number", _CARD, check=_card, min_digits=13, resume="end", name="card-number"),
        Rule("iban", _IBAN, check=_iban, min_digits=12, resume="end", name="iban"),
        Rule("ssn", _SSN, check=_ssn, min_digits=9, name="ssn"),
        Rule("phone", _NATIONAL_PHONE, check=_national_phone, min_digits=10, name="phone-national"),
        Rule(
            "phone", _PLUS_PHONE, check=_plus_phone, min_digits=8, needles=("+",), name="phone-numbering-plan"
        ),
        Rule("ni_number", _NI_NUMBER, check=_ni_number, min_digits=6, name="ni-number"),
        Rule("ni_number", _NI_LOWER, check=_ni_lower, lower=True, min_digits=6, name="ni-number-lower-case"),
        Rule("ssn", _SSN_SPACED, check=_ssn_spaced, min_digits=9, name="ssn-spaced"),
        Rule(
            "ssn",
            _SSN_LABELLED,
            check=_ssn_labelled,
            lower=True,
            needles=("ssn", "social", "ss#"),
            name="ssn-labelled",
        ),
        Rule(
            "iban", _IBAN_LOOSE, check=_iban_loose, lower=True, min_digits=8, resume="end", name="iban-loose"
        ),
        Rule(
            "phone", _REGIONAL_PHONE, check=_regional_phone, min_digits=9, resume="end", name="phone-regional"
        ),
        Rule("passport", _PASSPORT, check=_passport, lower=True, needles=("passport",), name="passport"),
    ]
    return tuple(rules)
