"""The credential rules of gitleaks, kept as data and run with RE2 (linear time, whatever the text).

gitleaks (https://github.com/gitleaks/gitleaks, MIT) maintains a rule per provider token shape
(~220: cloud keys, CI tokens, payment and messaging APIs, plus a generic ``key = value`` rule with an
entropy floor and stop words). Its ``config/gitleaks.toml`` at a pinned commit is converted into
``mast/data/gitleaks_rules.json`` by this module's command line (``python -m mast.redact.refresh_gitleaks``); the redactor
loads that file. The rules are written for Go's RE2, so they are compiled with RE2 here too
(``google-re2``): RE2 runs in time linear in the text for every pattern, which Python's ``re``
(backtracking) cannot promise.

How a finding is made, as gitleaks makes it:

* a rule is tried only when one of its keywords occurs in the lower-cased text (one RE2 set search
  finds which keywords occur, whatever their number);
* the secret is the rule's ``secret_group``, else its first non-empty group, else the whole match;
* a secret at or under the rule's Shannon entropy floor is kept, and so is one the rule's or the
  global allow list accepts (regexes on the secret, the match or the line; stop words in the
  secret). Path and commit conditions do not apply to traces: an allow list that needs one is
  left out, and rules that name file paths are not converted.

mast adds one condition: a secret that is a bare hexadecimal run or a UUID, found by a rule whose
match is that value alone (no keyword around it), is kept: git SHAs, span ids and request ids look
exactly like that, and the judge needs them.

Refresh (from a gitleaks checkout at the commit to pin)::

    git -C gitleaks checkout <sha>
    python -m mast.redact.refresh_gitleaks gitleaks/config/gitleaks.toml --commit <sha>

Example:
    >>> rules = load_rules()
    >>> [kind for kind, _, _ in rules.findings("export SHOPIFY=shpat_" + "5d2f431b152d9d9789d9863251384793")]
    ['token']
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import re2

__all__ = [
    "DATA_FILE",
    "GitleaksRule",
    "GitleaksRules",
    "convert",
    "kind_of",
    "load_data",
    "load_rules",
    "shannon_entropy",
]

DATA_FILE = Path(__file__).resolve().parent.parent / "data" / "gitleaks_rules.json"
"""The converted rule set (JSON), with the gitleaks commit it was taken from."""

_WHOLE = 4_096
"""Texts up to this long are searched whole by each rule whose keyword occurs; longer ones only
in windows around the keyword's occurrences (merged where they overlap)."""
_BEFORE, _AFTER = 256, 1_024
"""A window: this many characters before a keyword's occurrence and after it."""
_LINE_WINDOW = 1_024
"""A ``line`` allow list sees at most this many characters either side of the match (lines may be huge)."""

_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
_LEAD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_ID_SHAPED = re.compile(
    r"[0-9a-fA-F]{7,128}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


def shannon_entropy(value: str) -> float:
    """Bits per character of ``value`` (gitleaks' entropy floor is measured this way)."""
    if not value:
        return 0.0
    total = len(value)
    counts: dict[str, int] = {}
    for char in value:
        counts[char] = counts.get(char, 0) + 1
    return -sum(count / total * math.log2(count / total) for count in counts.values())


def kind_of(rule_id: str) -> str:
    """The placeholder kind for a gitleaks rule id (``[REDACTED:<kind>]``)."""
    words = set(re.split(r"[-_]", rule_id.lower()))
    if "private" in words and "key" in words or rule_id.endswith("private-key"):
        return "private_key"
    if words & {"password", "passwd", "pwd"} or {"auth", "user"} <= words:
        return "password"
    if "jwt" in words:
        return "jwt"
    if words & {"token", "pat", "ptt", "rrt", "oauth", "refresh", "session", "webhook", "bearer", "auth"}:
        return "token"
    if words & {"secret", "credential", "credentials"}:
        return "secret"
    return "api_key"


@dataclass(frozen=True, slots=True)
class _Allow:
    target: str  # "secret", "match" or "line"
    regex: Any  # one RE2 pattern for all of the list's regexes, or None
    stopwords: Any  # one RE2 pattern of all the stop words, or None
    both: bool  # condition AND: the regex and a stop word must both accept

    def accepts(self, secret: str, match: str, line: str) -> bool:
        subject = match if self.target == "match" else line if self.target == "line" else secret
        by_regex = self.regex is not None and self.regex.search(subject) is not None
        by_word = self.stopwords is not None and self.stopwords.search(secret.lower()) is not None
        if self.both:
            return (self.regex is None or by_regex) and (not self.stopwords or by_word)
        return by_regex or by_word


@dataclass(frozen=True, slots=True)
class GitleaksRule:
    """One converted rule, compiled."""

    id: str
    kind: str
    regex: Any
    """The RE2 pattern."""
    keywords: tuple[str, ...]
    secret_group: int
    entropy: float
    allow: tuple[_Allow, ...]
    token_bounds: bool = False
    """The whole match must be a token: no key character right before or after it (mast's own shapes)."""
    lead: bool = False
    """The regex began with gitleaks' ``[\\w.-]{0,50}?`` lead, which is put back on the match for
    allow lists that look at the match (``primary_key = ...``)."""


def _without_lead(regex: str) -> str:
    """``regex`` without gitleaks' leading ``[\\w.-]{0,50}?``.

    The lead only widens the match before the keyword, never changes the secret, and dropping it
    halves the search time.
    """
    for lead, kept in (("(?i)[\\w.-]{0,50}?", "(?i)"), ("[\\w.-]{0,50}?(?i:[\\w.-]{0,50}?", "(?i:")):
        if regex.startswith(lead):
            return kept + regex[len(lead) :]
    return regex


def _compile_allow(entries: Iterable[dict[str, Any]]) -> tuple[_Allow, ...]:
    allows = []
    for entry in entries:
        regexes = entry.get("regexes") or []
        regex = re2.compile("|".join(f"(?:{r})" for r in regexes)) if regexes else None
        allows.append(
            _Allow(
                target=entry.get("target", "secret"),
                regex=regex,
                stopwords=re2.compile("|".join(re2.escape(w) for w in words))
                if (words := entry.get("stopwords"))
                else None,
                both=entry.get("condition", "OR") == "AND",
            )
        )
    return tuple(allows)


class GitleaksRules:
    """The converted rules, compiled once; :meth:`findings` runs every rule whose keyword occurs."""

    def __init__(self, data: dict[str, Any], extra: Sequence[dict[str, Any]] = ()) -> None:
        self.commit: str = data.get("commit", "")
        self.global_allow = _compile_allow(data.get("allow", []))
        self.rules: tuple[GitleaksRule, ...] = tuple(
            GitleaksRule(
                id=entry["id"],
                kind=entry["kind"],
                regex=re2.compile(_without_lead(entry["regex"])),
                lead=_without_lead(entry["regex"]) != entry["regex"],
                keywords=tuple(entry.get("keywords", ())),
                secret_group=int(entry.get("secret_group", 0)),
                entropy=float(entry.get("entropy", 0.0)),
                allow=_compile_allow(entry.get("allow", [])),
                token_bounds=bool(entry.get("token_bounds")),
            )
            for entry in [*extra, *data["rules"]]
        )
        keywords = sorted({k for rule in self.rules for k in rule.keywords})
        self._keyword_index = {k: i for i, k in enumerate(keywords)}
        self._rules_by_keyword: list[list[int]] = [[] for _ in keywords]
        for number, rule in enumerate(self.rules):
            for keyword in rule.keywords:
                self._rules_by_keyword[self._keyword_index[keyword]].append(number)
        self._keyword_set = None
        if keywords:
            # One pass over the text says which keywords occur (RE2's multi-pattern set).
            keyword_set = re2.Set.SearchSet(re2.Options())
            for keyword in keywords:
                keyword_set.Add(re2.escape(keyword))
            keyword_set.Compile()
            self._keyword_set = keyword_set
        self._always = [n for n, rule in enumerate(self.rules) if not rule.keywords]
        self._line_allow = any(a.target == "line" for a in self.global_allow)

    def active(self, lowered: str | bytes) -> list[GitleaksRule]:
        """The rules whose keywords occur in ``lowered`` (lower-cased text), in file order."""
        numbers = set(self._always)
        if self._keyword_set is not None:
            subject = lowered.encode("utf-8") if isinstance(lowered, str) else lowered
            for index in self._keyword_set.Match(subject) or ():
                numbers.update(self._rules_by_keyword[index])
        return [self.rules[n] for n in sorted(numbers)]

    def findings(self, text: str, lowered: str | None = None) -> list[tuple[str, int, int]]:
        """``(kind, start, end)`` of each secret in ``text`` (offsets in characters)."""
        if not text:
            return []
        lowered = text.lower() if lowered is None else lowered
        # RE2 works on UTF-8: an ASCII text is encoded once and its byte offsets are its character
        # offsets; any other text is searched piece by piece as str (the binding maps offsets).
        ascii_text = text.isascii() and lowered.isascii()
        subject: str | bytes = text.encode("ascii") if ascii_text else text
        rules = self.active(lowered.encode("ascii") if ascii_text else lowered)
        found: list[tuple[str, int, int]] = []
        size = len(text)
        hits: dict[str, list[int] | None] = {}
        verdicts: dict[tuple[int | str, ...], bool] = {}
        for rule in rules:
            lines = self._line_allow or any(a.target == "line" for a in rule.allow)
            if size <= _WHOLE or not rule.keywords:
                regions = [(0, size)]
            else:
                regions = _regions(rule.keywords, lowered, hits, size)
            for low, high in regions:
                piece = subject if (low, high) == (0, size) else subject[low:high]
                for match in rule.regex.finditer(piece):
                    offset = low
                    if match.end() == len(piece) and high < size:
                        # The window may have cut the secret short: search once more from the
                        # match's start, a little further (secrets this long are rare).
                        offset = low + match.start()
                        longer = subject[offset : min(size, high + 4 * _AFTER)]
                        match = next(iter(rule.regex.finditer(longer)), None)
                        if match is None:
                            continue
                    span = self._check(rule, match, text, offset, lines, verdicts)
                    if span is not None:
                        found.append((rule.kind, *span))
        return found

    def _check(
        self,
        rule: GitleaksRule,
        match: Any,
        text: str,
        offset: int,
        lines: bool,
        verdicts: dict[tuple[int | str, ...], bool],
    ) -> tuple[int, int] | None:
        match_start, match_end = match.span()
        match_start += offset
        match_end += offset
        while match_end > match_start and text[match_end - 1] == "\n":
            match_end -= 1  # gitleaks trims newlines off the match
        start, end = _secret_span(rule, match)
        start += offset
        end = min(end + offset, match_end)
        if end <= start:
            return None
        if rule.token_bounds and (
            match_start > 0
            and text[match_start - 1] in _TOKEN_CHARS
            or match_end < len(text)
            and text[match_end] in _TOKEN_CHARS
        ):
            return None
        secret = text[start:end]
        if rule.lead:
            lead_start = match_start
            while lead_start > 0 and match_start - lead_start < 50 and text[lead_start - 1] in _LEAD_CHARS:
                lead_start -= 1
            match_start = lead_start
        matched = text[match_start:match_end]
        before = text[max(0, match_start - 32) : start]
        line = ""
        if lines:
            # No newline within the window: the window's edge, never the start of the text (a
            # one-line megabyte of minified JSON would make every match read back to offset 0).
            window_start = max(0, match_start - _LINE_WINDOW)
            newline = text.rfind("\n", window_start, match_start)
            line_start = newline + 1 if newline >= 0 else window_start
            line_end = text.find("\n", match_end, match_end + _LINE_WINDOW)
            line = text[line_start : line_end if line_end >= 0 else min(len(text), match_end + _LINE_WINDOW)]
        # The rest depends on these texts only: a text repeating one finding (a run of "token=..."
        # pairs) pays for the entropy, pagination and allow-list checks once per distinct finding.
        key = (id(rule), secret, matched, before, line)
        rejected = verdicts.get(key)
        if rejected is None:
            if len(verdicts) >= _VERDICTS:
                verdicts.clear()  # bounded: each key holds up to 2 KB of line
            rejected = verdicts[key] = self._rejects(rule, secret, matched, before, line)
        return None if rejected else (start, end)

    def _rejects(self, rule: GitleaksRule, secret: str, matched: str, before: str, line: str) -> bool:
        if rule.entropy and shannon_entropy(secret) <= rule.entropy:
            return True
        if _ID_SHAPED.fullmatch(secret) and (
            rule.id.startswith("generic") or matched.strip(" \t\r\n'\"`;,") == secret
        ):
            # A bare SHA, span id or UUID that no provider prefix names: traces are full of them.
            return True
        if rule.id.startswith("generic") and _names_pagination(before):
            return True  # "NextToken": ..., "continuationToken": ...: a cursor, nobody's credential
        return any(allow.accepts(secret, matched, line) for allow in (*self.global_allow, *rule.allow))


_VERDICTS = 4_096
"""Distinct findings whose verdict one :meth:`GitleaksRules.findings` call keeps."""


_NAME_BEFORE = re.compile(r"([A-Za-z][A-Za-z0-9_\-]{0,64})[\"'\s]*[:=]{1,2}[>\s\"'`]*$")


def _names_pagination(before: str) -> bool:
    """True when the key right before a value names a pagination cursor (issue 34)."""
    from mast.redact.placed import is_pagination

    name = _NAME_BEFORE.search(before)
    return name is not None and is_pagination(name.group(1))


def _regions(
    keywords: Sequence[str], lowered: str, hits: dict[str, list[int] | None], size: int
) -> list[tuple[int, int]]:
    """Merged windows around every occurrence of ``keywords`` in ``lowered`` (``hits`` caches them).

    A keyword that occurs often enough for its windows to cover much of the text makes the whole
    text one region: one search then costs less than many small ones.
    """
    whole = [(0, size)]
    most = size // (4 * (_BEFORE + _AFTER)) + 1
    starts: list[int] = []
    for keyword in keywords:
        if keyword not in hits:
            found: list[int] | None = []
            position = lowered.find(keyword)
            while position >= 0:
                found.append(position)  # type: ignore[union-attr]
                if len(found) > most:  # type: ignore[arg-type]
                    found = None
                    break
                position = lowered.find(keyword, position + 1)
            hits[keyword] = found
        occurrences = hits[keyword]
        if occurrences is None:
            return whole
        starts.extend(occurrences)
    if len(starts) > most:
        return whole
    starts.sort()
    regions: list[tuple[int, int]] = []
    for position in starts:
        low, high = max(0, position - _BEFORE), min(size, position + _AFTER)
        if regions and low <= regions[-1][1]:
            regions[-1] = (regions[-1][0], max(regions[-1][1], high))
        else:
            regions.append((low, high))
    return regions


def _secret_span(rule: GitleaksRule, match: Any) -> tuple[int, int]:
    if rule.secret_group:
        start, end = match.span(rule.secret_group)
        return start, end
    # The first group that took part and is not empty, by its span: match.groups() builds every
    # group's text through the binding, which cost more than the rest of a check on dense text.
    for index in range(1, rule.regex.groups + 1):
        start, end = match.span(index)
        if end > start:
            return start, end
    start, end = match.span()
    return start, end


def load_data(path: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The converted rule set as data (the shipped file, or the JSON file at ``path``)."""
    data: dict[str, Any] = json.loads(Path(path or DATA_FILE).read_text(encoding="utf-8"))
    return data


@lru_cache(maxsize=1)
def load_rules() -> GitleaksRules:
    """The shipped rule set, compiled (built once)."""
    return GitleaksRules(load_data())


# --- conversion -------------------------------------------------------------------------------


def _allow_entries(entries: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Gitleaks allow lists as mast keeps them: path- and commit-only conditions dropped."""
    kept = []
    for entry in entries:
        condition = str(entry.get("condition", "OR")).upper()
        needs_path = bool(entry.get("paths") or entry.get("commits"))
        if condition == "AND" and needs_path:
            continue  # can never hold for a trace, which has no path or commit
        regexes = list(entry.get("regexes") or [])
        stopwords = [str(w).lower() for w in entry.get("stopwords") or []]
        if not regexes and not stopwords:
            continue
        item: dict[str, Any] = {}
        if entry.get("regexTarget"):
            item["target"] = entry["regexTarget"]
        if regexes:
            item["regexes"] = regexes
        if stopwords:
            item["stopwords"] = stopwords
        if condition == "AND":
            item["condition"] = "AND"
        kept.append(item)
    return kept


def convert(config: dict[str, Any], commit: str, license_text: str = "") -> dict[str, Any]:
    """Gitleaks' parsed ``gitleaks.toml`` as mast's rule data (every regex checked to compile with RE2).

    Raises:
        ValueError: a regex that RE2 does not compile, or a rule without an id.
    """
    rules: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    for rule in config.get("rules", []):
        rule_id = rule.get("id")
        if not rule_id:
            raise ValueError("a gitleaks rule without an id")
        if "regex" not in rule:
            skipped.append({"id": rule_id, "why": "matches file paths only"})
            continue
        if rule.get("path"):
            skipped.append({"id": rule_id, "why": "applies to some file paths only"})
            continue
        try:
            re2.compile(rule["regex"])
        except re2.error as exc:
            raise ValueError(f"gitleaks rule {rule_id}: RE2 does not compile its regex: {exc}") from exc
        entry: dict[str, Any] = {"id": rule_id, "kind": kind_of(rule_id), "regex": rule["regex"]}
        entry["keywords"] = sorted({str(k).lower() for k in rule.get("keywords", [])})
        if rule.get("secretGroup"):
            entry["secret_group"] = int(rule["secretGroup"])
        if rule.get("entropy"):
            entry["entropy"] = float(rule["entropy"])
        allow = _allow_entries(rule.get("allowlists", []))
        if allow:
            entry["allow"] = allow
        rules.append(entry)
    global_allow = config.get("allowlists") or ([config["allowlist"]] if config.get("allowlist") else [])
    return {
        "source": "https://github.com/gitleaks/gitleaks (config/gitleaks.toml, MIT License)",
        "commit": commit,
        "license": license_text.strip().splitlines(),
        "converted_by": "python -m mast.redact.refresh_gitleaks",
        "allow": _allow_entries(global_allow),
        "rules": rules,
        "skipped": skipped,
    }
