"""Replace secrets and personal data with typed placeholders before a trace leaves the process.

Traces are production data: API keys pasted into prompts, tokens in HTTP headers, passwords in
connection strings, customers' e-mail addresses. The judge only needs to see *that* something was
a credential, so each finding becomes ``[REDACTED:<kind>]`` and is counted per kind.

Kinds found by default:

========================  ==============================================================
``api_key``               provider keys by their published prefixes (OpenAI, Anthropic, AWS,
                          Google, GitHub, GitLab, Slack, Hugging Face, Stripe, SendGrid, ...),
                          ``api_key=`` / ``AccountKey=`` / ``x-api-key:`` assignments, ``--api-key``
``token``                 bearer tokens, any other ``Authorization:`` scheme (``Token``, ``Digest``,
                          ``Negotiate``...), OAuth access tokens, signed-URL signatures, webhooks,
                          ``/bot<token>/`` and other tokens in URL paths, a token as a URL's
                          user part, Teams webhooks, ``token=``, ``--token``
``jwt``                   JSON Web Tokens
``private_key``           PEM private key blocks (also JSON-escaped, as in GCP service accounts),
                          DER keys in base64, a kubeconfig's ``client-key-data``
``password``              ``scheme://user:PASSWORD@host``, ``password=`` and ``PGPASSWORD=``-style
                          assignments, HTTP Basic, ``curl -u user:PASS``, ``mysql -pPASS``,
                          ``--password=``, ``docker login -p``, ``.netrc``, a Docker config's
                          ``auth``, ``ENV DB_PASSWORD x`` and other settings without ``=``
``secret``                ``secret=`` / ``client_secret:`` / AWS secret keys in assignments,
                          Google and Azure client secrets
``cookie``                the values of ``Cookie:`` and ``Set-Cookie:`` headers
``email``                 e-mail addresses
``phone``                 phone numbers: international (+..., every country's numbering plan),
                          North American, and national formats checked against the numbering
                          plan (``phonenumbers``; UK by default)
``card_number``           payment cards (network prefix and Luhn check)
``iban``                  IBANs (country length and mod-97 check)
``ssn``                   US social security numbers
``ni_number``             UK National Insurance numbers
``national_id``           national identity and tax numbers after their label or under a headed
                          column, proven by their checksum (``python-stdnum``)
``passport``              passport numbers written after the word "passport"
``ipv4``                  IPv4 addresses, only with ``ips=True`` (IT traces need them)
========================  ==============================================================

On top of these, the ~220 provider rules of gitleaks (:mod:`mast.redact.gitleaks`, kept as data in
``mast/data/gitleaks_rules.json`` and run with RE2) and mast's own credential shapes
(``mast/data/credential_rules.yaml``) name their findings ``api_key``, ``token``, ``secret``,
``password`` or ``private_key``.

A value found once (8 characters or more) is replaced wherever else the text repeats it, and
:func:`redact_trace` replaces it in every step.

Assignments redact the value only (``password=[REDACTED:password]``), so the judge still sees what
the step did. Identifiers that merely look random (git SHAs, UUIDs, span ids, digests, pod names,
version strings) are left alone: every pattern is anchored on a prefix or a key name, never on
entropy alone, and a bare hexadecimal run or UUID is never a finding unless a key name or provider
prefix says it is one.

Time is linear in the text for every rule: patterns are bounded or possessive, searched from where
a token starts, and never tried again inside a run they have passed (see
:class:`mast.redact.rules.Rule`); gitleaks' patterns run on RE2, linear by construction.

Custom patterns (``name -> regex``) come from a YAML/JSON file named by ``MAST_REDACT_PATTERNS`` and
from the ``patterns`` argument; a group named ``secret`` (or the only group) is what gets replaced.

Example:
    >>> result = redact_text("curl -H 'Authorization: Bearer abcdef0123456789xyz' ops@example.com")
    >>> result.text
    "curl -H 'Authorization: Bearer [REDACTED:token]' [REDACTED:email]"
    >>> result.counts
    {'token': 1, 'email': 1}
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mast.errors import UsageError
from mast.redact.gitleaks import GitleaksRules, load_data
from mast.redact.pii import credential_shapes
from mast.redact.rules import IPV4_RULE, Rule, custom_rule, default_rules

if TYPE_CHECKING:
    from mast.trace import Trace

__all__ = [
    "PATTERNS_ENV",
    "RedactionResult",
    "Redactor",
    "current_redactor",
    "load_patterns",
    "redact_text",
    "redact_trace",
]

PATTERNS_ENV = "MAST_REDACT_PATTERNS"
"""Environment variable naming a YAML/JSON file of custom patterns (``name: regex``)."""

CustomPatterns = Mapping[str, "str | re.Pattern[str]"] | Sequence[tuple[str, "str | re.Pattern[str]"]]
"""Custom patterns: a mapping or pairs of kind name -> regex (text or compiled)."""


@dataclass(frozen=True, slots=True)
class RedactionResult:
    """Redacted text and how many replacements of each kind were made."""

    text: str
    """The text with every finding replaced by ``[REDACTED:<kind>]``."""
    counts: dict[str, int] = field(default_factory=dict)
    """Replacements per kind, only kinds that occurred."""

    @property
    def total(self) -> int:
        """All replacements together."""
        return sum(self.counts.values())


_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}
_GATED_CHARS = 4_096
"""Texts up to this long are first searched for any rule's literal at all (most hold none)."""


_RUN = re.compile(r"[A-Za-z0-9+/=_\-]+")
_RUN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-")


def _to_run_end(text: str, end: int) -> int:
    """Where a finding ending at ``end`` really ends: the end of the token it cuts, if it cuts one.

    A pattern's length cap (the generic gitleaks rule's 150 characters, an assignment's 512) must not
    leave the rest of a longer secret behind.
    """
    if 0 < end < len(text) and text[end - 1] in _RUN_CHARS and text[end] in _RUN_CHARS:
        run = _RUN.match(text, end)
        return run.end() if run is not None else end
    return end


def _lower(text: str) -> str:
    """Lower-cased text with the same offsets as ``text``.

    ``str.lower`` is fast but may lengthen a few non-ASCII characters ("İ"); then only ASCII is
    folded, which keeps every offset valid.
    """
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)


class Redactor:
    """A compiled set of redaction rules; build once, call :meth:`redact` many times.

    Args:
        ips: also replace IPv4 addresses.
        patterns: extra ``kind -> regex`` rules, applied after the built-in ones.
    """

    def __init__(self, *, ips: bool = False, patterns: CustomPatterns = (), entropy: bool = True) -> None:
        pairs = list(patterns.items()) if isinstance(patterns, Mapping) else list(patterns)
        if not all(isinstance(pair, tuple | list) and len(pair) == 2 for pair in pairs):
            raise UsageError(
                "custom redaction patterns are name -> regex pairs, e.g. {'employee_id': r'E\\d{6}'}"
            )
        custom = [custom_rule(str(name), regex) for name, regex in pairs]
        rules = [rule for rule in default_rules() if entropy or rule.name != "entropy"]
        self.rules: tuple[Rule, ...] = (*rules, *((IPV4_RULE,) if ips else ()), *custom)
        # Provider token shapes (gitleaks' rule set and mast's own), run with RE2: linear time.
        self.credentials = _credentials()
        # Most texts (names, prose, logs) hold none of the rules' literals: one search over each
        # text for any of them spares the few dozen searches of the rules themselves.
        self._gate = _any_of(n for rule in self.rules if not rule.lower for n in rule.needles)
        self._gate_lower = _any_of(n for rule in self.rules if rule.lower for n in rule.needles)
        ordered = list(enumerate(self.rules))
        self._by_needle = [(o, r) for o, r in ordered if r.needles and not r.lower]
        self._by_needle_lower = [(o, r) for o, r in ordered if r.needles and r.lower]
        self._by_digits = [(o, r) for o, r in ordered if r.min_digits and not r.needles]
        self._always = [(o, r) for o, r in ordered if not r.needles and not r.min_digits]

    def redact(self, text: str) -> RedactionResult:
        """Replace every finding in ``text``; overlapping findings merge into one placeholder.

        A secret found in one place is also replaced wherever else ``text`` repeats it.
        """
        return self._redact(text)[0]

    def _redact(self, text: str) -> tuple[RedactionResult, dict[str, str]]:
        """The redaction of ``text`` and the values it found (value -> kind, long enough to look for again)."""
        if not text:
            return RedactionResult(text, {}), {}
        spans = self._spans(text)
        last = len(self.rules)
        if not spans:
            return RedactionResult(text, {}), {}
        merged = _merge(text, spans)
        # A secret found in one place is redacted wherever else the text repeats it ("curl -u
        # admin:PASS" and later "401 for admin:PASS").
        # Only mast's own rules' findings: gitleaks' generic rule also takes ids beside a key word
        # ("max_tokens": api-7d9f8b6c4-x2kqz), which must not then go everywhere the id occurs.
        values = _Repeats.values(
            text, [[start, -end, kind] for start, end, order, kind in spans if order < last]
        )
        if values:
            spans += [(start, -end, -1, kind) for kind, start, end in _Repeats(values).findings(text)]
            merged = _merge(text, spans)
        return _replace(text, merged), values

    def _spans(self, text: str, depth: int = 0) -> list[tuple[int, int, int, str]]:
        """Every rule's findings in ``text`` as ``(start, -end, order, kind)``, URL-encoded runs decoded.

        A run of URL-encoded text (``access_token%3D...``, ``Bearer%2520...``, ``jane%40example.com``)
        is decoded (twice at most, for text encoded twice) and searched again; what is found there is
        replaced in the encoded original.
        """
        lowered = _lower(text)
        if len(text) > _GATED_CHARS:
            # A long text holds most literals somewhere: each rule's are looked for on their own
            # (a substring search is far cheaper than the rule's), without the combined gate.
            active = [
                (o, r)
                for o, r in enumerate(self.rules)
                if not r.needles or any(needle in (lowered if r.lower else text) for needle in r.needles)
            ]
        else:
            active = list(self._always)
            if self._gate.search(text) is not None:
                active += [(o, r) for o, r in self._by_needle if any(needle in text for needle in r.needles)]
            if self._gate_lower.search(lowered) is not None:
                active += [
                    (o, r) for o, r in self._by_needle_lower if any(needle in lowered for needle in r.needles)
                ]
            if self._by_digits:
                digits = sum(map(text.count, "0123456789"))
                active += [(o, r) for o, r in self._by_digits if digits >= r.min_digits]
        spans: list[tuple[int, int, int, str]] = []
        fallback: list[tuple[int, int, int, str]] = []
        for order, rule in active:
            into = fallback if rule.name == "entropy" else spans
            for kind, start, end in rule.findings(text, lowered):
                into.append((start, -end, order, kind))
        last = len(self.rules)
        # In rule order: mast's own shapes first, so their kind names a span both find.
        for number, (kind, start, end) in enumerate(self.credentials.findings(text, lowered)):
            spans.append((start, -end, last + number, kind))
        if fallback:
            # The entropy rule only takes what no rule that knows the place or the shape has taken.
            taken = sorted((start, -negative_end) for start, negative_end, _, _ in spans)
            starts = [start for start, _ in taken]
            for span in fallback:
                start, end = span[0], -span[1]
                at = bisect.bisect_right(starts, end) - 1
                overlaps = False
                while at >= 0 and not overlaps:
                    overlaps = taken[at][1] > start and taken[at][0] < end
                    if taken[at][0] < start - 8192:
                        break
                    at -= 1
                if not overlaps:
                    spans.append(span)
        if depth < 2 and "%" in text:
            for run_start, run_end in _encoded_runs(text):
                decoded, origin = _url_decode(text[run_start:run_end])
                for start, negative_end, order, kind in self._spans(decoded, depth + 1):
                    end = -negative_end
                    if end <= start:
                        continue
                    low = run_start + origin[start]
                    high = (
                        run_start + origin[end - 1] + (3 if text[run_start + origin[end - 1]] == "%" else 1)
                    )
                    spans.append((low, -high, order, kind))
        return spans


_ENCODED = re.compile(r"%[0-9A-Fa-f]{2}")
_URL_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789%._~+-=&?/:;#@!$*,")
_RUN_REACH = 4_096
"""How far a URL-encoded run is followed each way from one escape."""


def _encoded_runs(text: str) -> list[tuple[int, int]]:
    """The runs of URL characters that hold a ``%XX`` escape (each read once, bounded)."""
    runs: list[tuple[int, int]] = []
    for escape in _ENCODED.finditer(text):
        at = escape.start()
        if runs and at < runs[-1][1]:
            continue
        low = at
        while low > 0 and at - low < _RUN_REACH and text[low - 1] in _URL_CHARS:
            low -= 1
        if runs and low < runs[-1][1]:
            low = runs[-1][1]
        high = escape.end()
        while high < len(text) and high - at < _RUN_REACH and text[high] in _URL_CHARS:
            high += 1
        runs.append((low, high))
    return runs


def _url_decode(run: str) -> tuple[str, list[int]]:
    """``run`` with each ``%XX`` decoded, and for each decoded character where it starts in ``run``.

    By hand, not ``urllib.parse.unquote``: the offsets are what maps a finding back to the original.
    """
    out: list[str] = []
    origin: list[int] = []
    position = 0
    hexdigits = "0123456789abcdefABCDEF"
    while position < len(run):
        char = run[position]
        pair = run[position + 1 : position + 3]
        if char == "%" and len(pair) == 2 and pair[0] in hexdigits and pair[1] in hexdigits:
            out.append(chr(int(pair, 16)))
            origin.append(position)
            position += 3
            continue
        out.append(char)
        origin.append(position)
        position += 1
    return "".join(out), origin


_REPEAT_MIN = 8
"""Found values this long or longer are also redacted where the text repeats them elsewhere."""


class _Repeats:
    """Every occurrence of the secrets already found, in one linear pass (an Aho-Corasick automaton)."""

    def __init__(self, values: dict[str, str]) -> None:
        import ahocorasick

        self.automaton = ahocorasick.Automaton()
        for value, kind in values.items():
            self.automaton.add_word(value, (len(value), kind))
        self.automaton.make_automaton()

    @staticmethod
    def values(text: str, merged: list[list[Any]]) -> dict[str, str]:
        found: dict[str, str] = {}
        for start, end, kind in merged:
            if end - start >= _REPEAT_MIN:
                found.setdefault(text[start:end], kind)
        return found

    def findings(self, text: str) -> list[tuple[str, int, int]]:
        # iter_long: the longest value at each place, without overlaps (a value holding another is replaced whole)
        return [(kind, end + 1 - length, end + 1) for end, (length, kind) in self.automaton.iter_long(text)]

    def redact(self, text: str) -> RedactionResult:
        """``text`` (already redacted once) with every remaining occurrence replaced."""
        found = self.findings(text)
        if not found:
            return RedactionResult(text, {})
        return _replace(text, [[start, end, kind] for kind, start, end in found])


def _merge(text: str, spans: list[tuple[int, int, int, str]]) -> list[list[Any]]:
    """Findings ``(start, -end, order, kind)`` as ``[start, end, kind]``, overlapping ones merged."""
    spans.sort()
    merged: list[list[Any]] = []
    for start, negative_end, _, kind in spans:
        end = -negative_end
        if merged and start < merged[-1][1]:
            # Overlaps the previous finding: widen it rather than leave a tail of a secret behind.
            if end > merged[-1][1]:
                merged[-1][1] = _to_run_end(text, end)
            continue
        merged.append([start, _to_run_end(text, end), kind])
    return merged


def _replace(text: str, merged: list[list[Any]]) -> RedactionResult:
    parts: list[str] = []
    counts: dict[str, int] = {}
    position = 0
    for start, end, kind in merged:
        parts.append(text[position:start])
        parts.append(f"[REDACTED:{kind}]")
        counts[kind] = counts.get(kind, 0) + 1
        position = end
    parts.append(text[position:])
    return RedactionResult("".join(parts), counts)


@lru_cache(maxsize=1)
def _credentials() -> GitleaksRules:
    """Gitleaks' rules and mast's own credential shapes, compiled for RE2 once."""
    return GitleaksRules(load_data(), credential_shapes())


def _rarity(char: str) -> int:
    """How rarely ``char`` occurs in traces, roughly: 0 rarest."""
    if char in "~@:/":
        return 0
    if char == "_":
        return 1
    if char.isdigit():
        return 2
    if char == "-":
        return 3
    if char.isupper():
        return 4
    return 5


def _any_of(needles: Iterable[str]) -> re.Pattern[str]:
    """A regex matching any of ``needles`` (one that never matches when there are none).

    Each needle is matched from its rarest character (``-(?<=sk-)`` for ``sk-``): every branch then
    starts with a plain character, and ``re`` jumps from one occurrence of those few characters to
    the next instead of trying dozens of branches at every position.
    """
    by_anchor: dict[str, set[str]] = {}
    for needle in set(needles):
        at = min(range(len(needle)), key=lambda i: (_rarity(needle[i]), i))
        before, char, after = needle[:at], needle[at], needle[at + 1 :]
        around = (f"(?<={re.escape(before + char)})" if before else "") + (
            f"(?={re.escape(after)})" if after else ""
        )
        by_anchor.setdefault(char, set()).add(around)
    if not by_anchor:
        return re.compile(r"(?!)")
    branches = []
    for char, arounds in sorted(by_anchor.items()):
        # An empty context (the needle is this one character) makes the others redundant.
        rest = "" if "" in arounds else "(?:" + "|".join(sorted(arounds)) + ")"
        branches.append(re.escape(char) + rest)
    return re.compile("|".join(branches))


def load_patterns(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read custom patterns from a YAML or JSON file: a mapping of kind name to regex.

    Raises:
        UsageError: when the file is missing, does not parse, or is not a ``name: regex`` mapping.
    """
    import yaml

    file = Path(path)
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except OSError as exc:
        raise UsageError(f"redaction patterns file {file}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise UsageError(
            f"redaction patterns file {file} does not parse: {' '.join(str(exc).split())}"
        ) from exc
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise UsageError(f"redaction patterns file {file} must map names to regexes (name: 'regex')")
    for name, regex in data.items():
        custom_rule(name, regex)  # fail now, with the file named, rather than at first use
    return data


@lru_cache(maxsize=16)
def _redactor(
    ips: bool, patterns: tuple[tuple[str, str | re.Pattern[str]], ...], env_file: str, env_mtime: float
) -> Redactor:
    from_env: list[tuple[str, str | re.Pattern[str]]] = (
        list(load_patterns(env_file).items()) if env_file else []
    )
    return Redactor(ips=ips, patterns=[*from_env, *patterns])


def _env_patterns_key() -> tuple[str, float]:
    path = os.environ.get(PATTERNS_ENV, "")
    if not path:
        return "", 0.0
    try:
        return path, os.stat(path).st_mtime
    except OSError as exc:
        raise UsageError(f"{PATTERNS_ENV}={path}: {exc.strerror or exc}") from exc


def current_redactor(*, ips: bool = False, patterns: CustomPatterns = ()) -> Redactor:
    """The :class:`Redactor` that :func:`redact_text` uses now (custom patterns from ``MAST_REDACT_PATTERNS`` included).

    For redacting many texts in a row without looking the rules up again for each.

    Raises:
        UsageError: when a custom pattern does not compile or the patterns file cannot be read.
    """
    pairs = tuple(patterns.items()) if isinstance(patterns, Mapping) else tuple(patterns)
    return _redactor(ips, pairs, *_env_patterns_key())


def redact_text(text: str, *, ips: bool = False, patterns: CustomPatterns = ()) -> RedactionResult:
    """Replace secrets and personal data in ``text`` with ``[REDACTED:<kind>]`` placeholders.

    Custom patterns from the file named by ``MAST_REDACT_PATTERNS`` always apply; ``patterns`` adds
    more. Compiled rules are cached, so calling this per string is cheap.

    Raises:
        UsageError: when a custom pattern does not compile or the patterns file cannot be read.
    """
    pairs = tuple(patterns.items()) if isinstance(patterns, Mapping) else tuple(patterns)
    return _redactor(ips, pairs, *_env_patterns_key()).redact(text)


def _redact_value(value: Any, redact: Callable[[str], RedactionResult], counts: dict[str, int]) -> Any:
    if isinstance(value, str):
        result = redact(value)
        for kind, count in result.counts.items():
            counts[kind] = counts.get(kind, 0) + count
        return result.text
    if isinstance(value, dict):
        if value.get("sensitive") is True and "value" in value:
            # terraform's {"sensitive": true, "type": ..., "value": ...}: the flag says the value is
            # secret, whatever its name and however deeply it is nested.
            return {
                key: _all_secret(item, counts) if key == "value" else _redact_value(item, redact, counts)
                for key, item in value.items()
            }
        # A key that names a secret ({"password": "hunter2"}) says what its value is: the value alone
        # ("hunter2") has no shape a rule could know, so it is redacted as the pair it is.
        mapped: dict[Any, Any] = {}
        for key, item in value.items():
            if (
                isinstance(key, str)
                and isinstance(item, str | int)
                and not isinstance(item, bool)
                and str(item)
            ):
                pair = redact(f"{key}={item}")
                if pair.total and str(item) not in pair.text:
                    for kind, count in pair.counts.items():
                        counts[kind] = counts.get(kind, 0) + count
                    mapped[key] = f"[REDACTED:{next(iter(pair.counts))}]"
                    continue
            mapped[key] = _redact_value(item, redact, counts)
        return mapped
    if isinstance(value, list | tuple):
        return [_redact_value(item, redact, counts) for item in value]
    return value


def _all_secret(value: Any, counts: dict[str, int]) -> Any:
    """``value`` with every string and number in it redacted (the keys of its objects kept)."""
    if isinstance(value, dict):
        return {key: _all_secret(item, counts) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_all_secret(item, counts) for item in value]
    if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value):
        counts["secret"] = counts.get("secret", 0) + 1
        return "[REDACTED:secret]"
    return value


def redact_trace(
    trace: Trace, *, ips: bool = False, patterns: CustomPatterns = ()
) -> tuple[Trace, dict[str, int]]:
    """A copy of ``trace`` with every text the judge can read redacted, and the counts per kind.

    Redacted: the task, final output and error, agents' names, roles and instructions, and each
    step's agent, recipient, content, error, tool-call arguments and tool results. Ids, timestamps,
    labels and metadata (never shown to the judge) are kept as they were. Evidence quotes are then
    checked against this redacted copy, which is what the judge saw.
    """
    pairs = tuple(patterns.items()) if isinstance(patterns, Mapping) else tuple(patterns)
    redactor = _redactor(ips, pairs, *_env_patterns_key())
    counts: dict[str, int] = {}
    found: dict[str, str] = {}
    # The same strings recur in a trace (agent names on every step, repeated outputs): each is
    # redacted once; its findings still count every time it occurs.
    seen: dict[str, RedactionResult] = {}

    def redact(value: str) -> RedactionResult:
        result = seen.get(value)
        if result is None:
            result, values = redactor._redact(value)
            seen[value] = result
            for secret, kind in values.items():
                found.setdefault(secret, kind)
        return result

    redacted = _map_trace(trace, lambda value: _redact_value(value, redact, counts))
    if not found:
        return redacted, counts
    # A secret found in one step is replaced in every other step that repeats it ("curl -u
    # admin:PASS" in a tool call, "401 for admin:PASS" in its result).
    repeats = _Repeats(found)
    again: dict[str, RedactionResult] = {}

    def repeat(value: str) -> RedactionResult:
        result = again.get(value)
        if result is None:
            result = again[value] = repeats.redact(value)
        return result

    return _map_trace(redacted, lambda value: _redact_value(value, repeat, counts)), counts


def _map_trace(trace: Trace, change: Callable[[Any], Any]) -> Trace:
    """A copy of ``trace`` with ``change`` applied to every text the judge reads (None stays None)."""

    def text(value: Any) -> Any:
        return change(value) if value is not None else None

    steps = []
    for step in trace.steps:
        calls = [
            call.model_copy(
                update={"arguments": text(call.arguments), "arguments_raw": text(call.arguments_raw)}
            )
            for call in step.tool_calls
        ]
        results = [result.model_copy(update={"output": text(result.output)}) for result in step.tool_results]
        steps.append(
            step.model_copy(
                update={
                    "agent": text(step.agent),
                    "recipient": text(step.recipient),
                    "content": text(step.content),
                    "error": text(step.error),
                    "tool_calls": calls,
                    "tool_results": results,
                }
            )
        )
    agents = [
        agent.model_copy(
            update={
                "name": text(agent.name),
                "role": text(agent.role),
                "system_prompt": text(agent.system_prompt),
            }
        )
        for agent in trace.agents
    ]
    return trace.model_copy(
        update={
            "task": text(trace.task),
            "final_output": text(trace.final_output),
            "error": text(trace.error),
            "agents": agents,
            "steps": steps,
        }
    )
