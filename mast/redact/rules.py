"""The redaction rules: what each kind of secret or personal datum looks like, and how a match is checked.

:func:`default_rules` are the built-in rules (see :mod:`mast.redact` for the kinds), :data:`IPV4_RULE`
the opt-in IPv4 rule, :func:`custom_rule` one user pattern. :class:`mast.redact.Redactor` runs them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from mast.errors import UsageError

# A check turns one match into the (kind, start, end) to replace, or None to keep the text. It gets
# the original text, since some rules match on a lower-cased copy.
Check = Callable[[re.Match[str], str], "tuple[str, int, int] | list[tuple[str, int, int]] | None"]


@dataclass(frozen=True, slots=True)
class Rule:
    """One pattern and how to turn its matches into findings.

    Patterns start with a literal wherever possible: ``re`` then scans for that literal at C speed, which keeps a megabyte of transcript in the tens of milliseconds; context
    that would need a leading look-behind is checked in Python on the few candidates instead.
    """

    kind: str
    regex: re.Pattern[str]
    group: int | str = 0
    check: Check | None = None
    lower: bool = False
    """Match against the lower-cased text (case-insensitive without ``re.I``'s slow path)."""
    needles: tuple[str, ...] = ()
    """Literal texts every match contains at least one of (lower case for ``lower`` rules): a text
    holding none of them is not searched. Empty: always searched."""
    min_digits: int = 0
    """Digits every match holds at least: a text with fewer is not searched."""
    name: str = ""
    """The rule's id (``tests/data/redact/rule_cases.yaml`` keeps a positive and a near miss for each)."""

    resume: str = "next"
    """Where the search goes on after a rejected candidate: ``"next"``, one character later (every
    repetition in the pattern is bounded, so each start costs a bounded amount); ``"run"``, after the
    run of key characters the candidate starts (no token can start inside that run); ``"end"``, after
    the candidate (its check already looked inside it); a group name, after that group (no candidate
    starts inside it)."""

    def findings(self, text: str, lowered: str) -> Iterable[tuple[str, int, int]]:
        """``(kind, start, end)`` of each match in ``text`` (``lowered``: its lower-cased copy, same offsets).

        One pass: the search never goes back before a candidate it has passed, and no candidate
        costs more than a bounded amount, so the time is linear in the text.
        """
        subject = lowered if self.lower else text
        if self.check is None:
            for match in self.regex.finditer(subject):
                start, end = match.span(self.group)
                if end > start:
                    yield self.kind, start, end
            return
        position = 0
        while (candidate := self.regex.search(subject, position)) is not None:
            found = self.check(candidate, text)
            start = candidate.start()
            if not found:
                if self.resume == "end":
                    position = max(candidate.end(), start + 1)
                elif self.resume == "run":
                    position = max(_KEY_RUN.match(subject, start).end(), start + 1)  # type: ignore[union-attr]
                elif self.resume != "next":
                    position = max(candidate.end(self.resume), start + 1)
                else:
                    # A rejected candidate must not swallow a real one inside it
                    # ("compass: token=..." first matches from "pass").
                    position = start + 1
                continue
            if isinstance(found, list):
                yield from found
            else:
                yield found
            position = max(candidate.end(), start + 1)


_KEY_RUN = re.compile(r"[A-Za-z0-9_\-]*")
_NOT_AFTER_KEY = r"(?<![A-Za-z0-9_\-].)"
"""Put after a pattern's first character: the match starts a token. A look-behind there (not at the
front) keeps the pattern's literal start, so ``re`` still jumps between occurrences of it, and a run
of prefix-like text is searched from its first character only (no restart inside it)."""


def token_start(pattern: str) -> str:
    """``pattern`` that only matches where a token starts (not after a key character)."""
    if pattern.startswith("["):
        close = pattern.index("]", 1)
        return pattern[: close + 1] + _NOT_AFTER_KEY + pattern[close + 1 :]
    if pattern[0] == "\\":
        return pattern[:2] + _NOT_AFTER_KEY + pattern[2:]
    if not pattern[0].isalnum() and pattern[0] not in "-_~/:":
        raise ValueError(f"token_start needs a pattern that starts with a character or a class: {pattern}")
    return pattern[0] + _NOT_AFTER_KEY + pattern[1:]


_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def _starts_token(text: str, start: int) -> bool:
    """True when ``start`` is not in the middle of a longer key-like run of characters."""
    return start == 0 or text[start - 1] not in _KEY_CHARS


def _is_generated(value: str) -> bool:
    """A digit plus upper- and lower-case letters: how generated keys look, and words don't."""
    return any(c.isdigit() for c in value) and any(c.isupper() for c in value) and any(c.islower() for c in value)


is_generated = _is_generated


# --- provider keys: anchored on published prefixes --------------------------------------------

_E = r"(?![A-Za-z0-9_\-])"  # no key character right after


def _prefixed(kind: str, generated: bool = False) -> Check:
    def check(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
        if not _starts_token(text, match.start()):
            return None
        if generated and not _is_generated(match.group(0)):
            return None  # ordinary words that merely start with a prefix (a scikit-style name, hf_hub_*)
        return kind, match.start(), match.end()

    return check


def _azure_client_secret(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start = match.start() - 3  # three characters come before the "8Q~" marker
    if start < 0 or not re.fullmatch(r"[A-Za-z0-9_~.\-]{3}", text[start : match.start()]):
        return None
    if not _starts_token(text, start):
        return None
    return "secret", start, match.end()


def _provider_rules() -> list[Rule]:
    # kind, pattern, must look generated, literals every match contains
    prefixed: list[tuple[str, str, bool, tuple[str, ...]]] = [
        # Anthropic before OpenAI: both start with "sk-".
        ("api_key", r"sk-ant-[A-Za-z0-9_\-]{20,}", False, ("sk-ant-",)),
        ("api_key", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}", True, ("sk-",)),
        ("api_key", r"A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}", False, ("AKIA", "ASIA", "ABIA", "ACCA", "A3T")),
        ("api_key", r"AIza[0-9A-Za-z_\-]{35}", False, ("AIza",)),
        ("token", r"ya29\.[0-9A-Za-z_\-]{20,}", False, ("ya29.",)),
        ("secret", r"GOCSPX-[A-Za-z0-9_\-]{20,}", False, ("GOCSPX-",)),
        ("api_key", r"gh[pousr]_[A-Za-z0-9]{36,}", False, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")),
        ("api_key", r"github_pat_[A-Za-z0-9_]{22,}", False, ("github_pat_",)),
        ("api_key", r"glpat-[A-Za-z0-9_\-]{20,}", False, ("glpat-",)),
        ("token", r"xox[abposrcd]-[A-Za-z0-9\-]{10,}", False, ("xoxa-", "xoxb-", "xoxp-", "xoxo-", "xoxs-", "xoxr-", "xoxc-", "xoxd-")),
        ("token", r"https://hooks\.slack\.com/services/[A-Za-z0-9_/]{20,}", False, ("hooks.slack.com/services/",)),
        ("api_key", r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,}", False, ("k_live_", "k_test_")),
        ("secret", r"whsec_[A-Za-z0-9+/=]{24,}", False, ("whsec_",)),
        ("api_key", r"SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}", False, ("SG.",)),
        ("api_key", r"SK[0-9a-fA-F]{32}", False, ("SK",)),  # Twilio
        ("api_key", r"hf_[A-Za-z0-9]{30,}", True, ("hf_",)),
        ("api_key", r"npm_[A-Za-z0-9]{36}", False, ("npm_",)),
        ("api_key", r"pypi-AgE[A-Za-z0-9_\-]{50,}", False, ("pypi-AgE",)),
        ("api_key", r"dop_v1_[a-f0-9]{64}", False, ("dop_v1_",)),
        ("api_key", r"gsk_[A-Za-z0-9]{40,}", False, ("gsk_",)),  # Groq
        ("api_key", r"r8_[A-Za-z0-9]{30,}", False, ("r8_",)),  # Replicate
        ("api_key", r"pplx-[A-Za-z0-9]{40,}", False, ("pplx-",)),
        ("api_key", r"xai-[A-Za-z0-9]{40,}", False, ("xai-",)),
    ]
    rules = [
        Rule(
            kind, re.compile(token_start(pattern) + _E), check=_prefixed(kind, generated), needles=needles, resume="run",
            name="provider-" + ("twilio-sk" if needles[0] == "SK" else re.sub(r"[^a-z0-9]+", "-", needles[0].lower()).strip("-")),
        )
        for kind, pattern, generated, needles in prefixed
    ]
    rules.append(
        Rule("secret", re.compile(r"8Q~[A-Za-z0-9_~.\-]{31,40}" + _E), check=_azure_client_secret, needles=("8Q~",), name="azure-client-secret")
    )
    return rules


# --- structured credentials -------------------------------------------------------------------

_PEM = re.compile(
    r"-----BEGIN[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[^-]{0,65536}?-----END[A-Z0-9 ]{0,30}PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\]*)"
)
_JWT = re.compile(token_start(r"eyJ[A-Za-z0-9_\-]{10,}+\.eyJ[A-Za-z0-9_\-]{10,}+\.[A-Za-z0-9_\-]*+"))
# A token as the whole user part ("https://<token>@github.com/o/r.git", a Sentry DSN's key).
_URL_USER_TOKEN = re.compile(r"://(?P<secret>[A-Za-z0-9_\-.~]{20,256}+)@")


def _url_user_token(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start, end = match.span("secret")
    value = text[start:end]
    if not any(c.isdigit() for c in value) or not any(c.isalpha() for c in value):
        return None  # https://deploy-automation-user@host: a user name
    return "token", start, end


_URL_PASSWORD = re.compile(r"://[^\s:/@\"'<>]{0,128}:(?P<secret>[^\s/\"'<>]{1,256})@")
# These run on the lower-cased text; the secret's span is read back from the original.
_BEARER = re.compile(r"bearer\s{1,8}(?P<secret>[a-z0-9\-._~+/]{12,}+=*)")
_BASIC = re.compile(r"authorization[\"']?\s*[:=]\s*[\"']?basic\s+(?P<secret>[a-z0-9+/]{8,}={0,2})")
_SIGNED_URL = re.compile(
    r"[?&](?:sig|signature|x-amz-signature|x-amz-security-token|x-goog-signature)=(?P<secret>[^&\s\"'#<>]{16,})"
)


def _bearer(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start, end = match.span("secret")
    value = text[start:end]
    if _starts_token(text, match.start()) and (any(c.isdigit() for c in value) or len(value) >= 24):
        return "token", start, end
    return None


# --- key = value assignments ------------------------------------------------------------------

# Matched on the lower-cased text from the key's core word ("password", "token", "key"...) through the
# separator to the value; the word boundary and the words before "key" are checked in Python.
_ASSIGNMENT = re.compile(
    r"(?P<core>pass(?:word|wd|phrase)?|pwd|secret|token|credentials?|key)"
    r"(?P<suffix>[a-z0-9_.\-]{0,24}?)"
    r"\\?[\"']?\s{0,3}(?P<sep>=>|[:=])\s{0,3}"
    r"(?:\\?\"(?P<dq>[^\"\\\r\n]{1,512})|'(?P<sq>[^'\\\r\n]{1,512})"
    r"|(?P<bare>[^\s\"'`<>\\]{1,512}))"
)
# An unquoted value runs to whitespace or a quote; it ends earlier where the next pair of a list
# starts ("Password=pw;Database=app", "?token=t&user=u", "pw, host=db") or an HTML tag closes.
_BARE_CUT = re.compile(r"[;&,|][ \t]?[A-Za-z_][A-Za-z0-9_.\-]{0,40}[ \t]?=|</|[,;][ \t]")
_CLOSERS = {")": "(", "]": "[", "}": "{"}
# In a call's arguments ("login(user, password=pw)") a value ends at the next argument or the call's end.
_ARGUMENT = re.compile(r"[^\s\"'`,;&<>(){}\[\]\\]{1,512}")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z_]*")
# A bare "key" names a secret only after one of these words: api_key, AccountKey, x-api-key...
_KEY_PREFIX = re.compile(
    r"(?:api|access|private|account|shared[_\-]?access|subscription|auth|session|signing|encryption|master|secret)[_\-]?$"
)
# What may follow the core word and still name the secret itself ("secret_access_key",
# "password2", "tokenValue"); anything else names something about it ("max_tokens",
# "token_count", "secretName", "password_min_length").
_SUFFIXES = frozenset(
    {"", "key", "accesskey", "value", "string", "str", "text", "plain", "plaintext", "b64", "base64",
     "hash", "digest", "token", "secret", "confirm", "confirmation", "phrase", "word"}
)
_NOT_VALUES = frozenset(
    {"null", "none", "nil", "true", "false", "undefined", "empty", "n/a", "na", "tbd", "todo",
     "redacted", "hidden", "masked", "required", "optional", "string", "str"}
)
_PROSE = frozenset(
    {"is", "was", "are", "be", "not", "the", "a", "an", "and", "or", "to", "for", "of", "in", "on",
     "incorrect", "invalid", "wrong", "missing", "expired", "changed", "reset", "set", "updated",
     "must", "should", "will", "can", "cannot", "too", "weak", "strong", "ok", "yes", "no"}
)


_CODE_REFERENCE = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)+$")


def _kind_of(core: str) -> str:
    if "pass" in core or core == "pwd":
        return "password"
    if core.startswith("private"):
        return "private_key"
    if core.startswith(("secret", "credential")):
        return "secret"
    if core == "token":
        return "token"
    return "api_key"


def _word_start(text: str, start: int) -> bool:
    """True when the key word starts a word ("db_password") or a camelCase hump ("dbPassword").

    So it never sits inside another word ("compass", "bypass", "monkey").
    """
    if start == 0 or not text[start - 1].isalpha():
        return True
    return text[start - 1].islower() and text[start].isupper() and text[start + 1 : start + 2].islower()


_ENV_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
# The last word of an upper-case variable name that says it holds something *about* a secret,
# not the secret ("PGPASSFILE" aside, which the core word does not reach).
_ENV_NOT_SECRET = frozenset(
    {"FILE", "PATH", "DIR", "NAME", "ID", "LENGTH", "LEN", "COUNT", "TYPE", "URL", "URI", "ENV", "REF",
     "MIN", "MAX", "POLICY", "TTL", "EXPIRY", "EXPIRES", "EXPIRATION", "HEADER", "PARAM", "ENABLED",
     "REQUIRED", "LIMIT", "SIZE", "FORMAT", "KIND", "MODE", "SOURCE", "ARN", "VERSION", "PROMPT"}
)


def _env_name(text: str, key_start: int, suffix_end: int) -> bool:
    """True when the key word sits in an upper-case variable name that names a secret.

    ``PGPASSWORD``, ``MYSQL_ROOT_PASSWORD``, ``SECRET_KEY_BASE``; not one whose last word names
    something about the secret (``PGPASSWORD_FILE``).
    """
    name = text[key_start:suffix_end]
    if not name or not all(c in _ENV_NAME_CHARS for c in name) or not any(c.isalpha() for c in name):
        return False
    start = key_start
    while start > 0 and key_start - start < 64 and text[start - 1] in _ENV_NAME_CHARS:
        start -= 1
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "-"):
        return False  # inside a longer mixed-case word
    last = text[start:suffix_end].rstrip("0123456789_").rsplit("_", 1)[-1]
    return last not in _ENV_NOT_SECRET


def _is_code_reference(value: str) -> bool:
    """True for a dotted name in code (``env.JWT_TOKEN``, ``self.config.api_key``), not a value.

    A dotted value with a generated-looking part (``tok.AbC9xYz.QwErTy12``) is a token, not code.
    """
    return _CODE_REFERENCE.match(value) is not None and not any(_is_generated(part) for part in value.split("."))


@lru_cache(maxsize=1024)
def _is_pagination(name: str) -> bool:
    # Cached: a key name, never a value; dense text asks again for the same few names.
    from mast.redact.placed import is_pagination

    return is_pagination(name)


def _assignment(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    core = match.group("core")
    key_start = match.start("core")
    if core == "key":
        prefix = _KEY_PREFIX.search(match.string, max(0, key_start - 16), key_start)
        if prefix is None:
            return None  # a plain "key": dictionary keys, sort keys, primary keys
        key_start = prefix.start()
        core = prefix.group(0).rstrip("_-") + "key"
    kind = _kind_of(core)
    if in_userinfo(text, key_start):
        return None  # https://x-access-token:TOKEN@host: the user name, url-password has the password
    group = "dq" if match.group("dq") is not None else "sq" if match.group("sq") is not None else "bare"
    start, end = match.span(group)
    if kind != "password" and end - start < 8:
        return None  # tokens and keys are long (the cheapest test first: lists of "token:" are common)
    raw_suffix = match.group("suffix")
    env = _env_name(text, key_start, match.end("suffix"))
    # "password", "passwd", "secret" and "token" name a secret anywhere in a name ("dbpassword",
    # "authtoken"); the short cores only at a word start ("compass", "bypass", "monkey").
    whole_word = core in ("password", "passwd", "passphrase", "secret", "token")
    if not env and not whole_word and not _word_start(text, key_start):
        return None
    if raw_suffix and not env:
        suffix = re.sub(r"[_.\-]", "", raw_suffix).rstrip("0123456789")
        if suffix not in _SUFFIXES:
            return None
    if core == "pass" and not env and text[key_start - 1 : key_start] not in ("_", ".", "-"):
        return None  # "pass=12 fail=3", "pass: true"; only db_pass / mysql-pass name a password
    value = text[start:end]
    if group == "bare" and value.startswith("(") and text.startswith(("(sensitive", "(known after"), start):
        return None  # terraform plan's placeholders for a value it does not show
    if group == "bare":
        name_start = key_start
        while name_start > 0 and key_start - name_start < 64 and (text[name_start - 1].isalnum() or text[name_start - 1] in "_-"):
            name_start -= 1
        before = text[max(0, name_start - 8) : name_start].rstrip(" \t")
        if before.endswith(("(", ",")):
            # a keyword argument in a call: the value is one argument; a variable passed on is code
            argument = _ARGUMENT.match(text, start)
            end = start + (len(argument.group(0)) if argument else 0)
            value = text[start:end]
            if _IDENTIFIER.fullmatch(value) and (value.islower() or value == text[name_start : match.end("suffix")]):
                return None  # login(user, password=password), OpenAI(api_key=api_key)
        else:
            cut = _BARE_CUT.search(value)
            if cut is not None:
                value = value[: cut.start()]
            value = value.rstrip(".:!?,;")
            while value and value[-1] in _CLOSERS and value.count(value[-1]) > value.count(_CLOSERS[value[-1]]):
                value = value[:-1].rstrip(".:!?,;")  # "(password=pw)", "[token=abc]"
            end = start + len(value)
        if value == text[name_start : match.end("suffix")]:
            return None  # "password=password": the name again, a template's default
    lowered = value.strip().lower()
    if (
        not lowered
        or lowered in _NOT_VALUES
        or lowered.startswith(("[redacted", "$", "%(", "{{", "<", "/", "./", "~/", "os.environ", "process.env", "env("))
        or len(set(lowered)) == 1  # "****", "xxxxxxxx"
        or (group == "bare" and _is_code_reference(value))
    ):
        return None
    name_start = key_start
    while name_start > 0 and key_start - name_start < 64 and (text[name_start - 1].isalnum() or text[name_start - 1] in "_-"):
        name_start -= 1
    if _is_pagination(text[name_start : match.end("suffix")]):
        return None  # NextToken, nextPageToken, continuationToken: cursors that page through results
    if kind == "password":
        if group == "bare" and match.group("sep") == ":" and (
            lowered in _PROSE or value.isalpha() and (value.islower() or value[1:].islower()) and len(value) <= 16
        ):
            return None  # "Password: is incorrect", "Password: mismatch": a word, not a password
    elif _SPACE.search(value) is not None or len(value) < 8 or not (len(value) >= 20 or _has_digit(value)):
        return None  # tokens and keys are long, unbroken and rarely all letters ("secret: db-credentials")
    return kind, start, end


# --- personal data ----------------------------------------------------------------------------

_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?"
# Anchored on "@"; the local part before it is walked back in Python.
_EMAIL_DOMAIN = re.compile(rf"@(?:{_LABEL}\.)+(?P<tld>[A-Za-z]{{2,24}})(?![A-Za-z0-9\-/@]|\.[A-Za-z0-9])")
_LOCAL_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._%+-")
_NOT_TLDS = frozenset({"png", "jpg", "jpeg", "gif", "svg", "webp", "py", "js", "ts", "json", "git"})


def in_userinfo(text: str, start: int) -> bool:
    """True when ``start`` sits in a URL's user:password part ("https://user:PASS@host": not an e-mail).

    Looks back at most 256 characters, to the "://" of the same token with no "/", "?" or "#" between.
    """
    # The nearest "/", "?" or "#" by rfind and one whitespace search after it, not a walk in Python
    # character by character: on minified JSON every key is a candidate and the walk read 256 each.
    low = max(2, start - 256)
    mark = max(text.rfind("/", low, start), text.rfind("?", low, start), text.rfind("#", low, start))
    if mark < 0 or _SPACE.search(text, mark + 1, start) is not None:
        return False
    return text[mark - 2 : mark + 1] == "://"


_SPACE = re.compile(r"\s")  # the same characters as str.isspace
_ASCII_DIGIT = re.compile(r"[0-9]")


def _has_digit(value: str) -> bool:
    """``any(c.isdigit() for c in value)``, by one search when ``value`` is ASCII (dense text asks per match)."""
    if value.isascii():
        return _ASCII_DIGIT.search(value) is not None
    return any(c.isdigit() for c in value)


def _email(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    at = match.start()
    start = at
    while start > 0 and at - start < 65 and text[start - 1] in _LOCAL_CHARS:
        start -= 1
    if start == at or at - start > 64 or (start > 0 and text[start - 1] in _LOCAL_CHARS):
        return None
    while start < at and not text[start].isalnum():
        start += 1  # a local part starts with a letter or digit
    local = text[start:at]
    if in_userinfo(text, start):
        return None  # the password of https://user:PASS@host, which url-password replaces
    if start == at or local.endswith(".") or local.lower() == "git" or match.group("tld").lower() in _NOT_TLDS:
        return None  # git@github.com:org/repo, icon@2x.png, @Promise.@resolve
    if start > 0 and text[start - 1] == "@":
        return None  # "@scope.name@version"-like runs, not an address
    return "email", start, match.end()


_PHONE = re.compile(
    r"(?:"
    r"\+\d{1,3}(?:[ .\-]?\(\d{1,4}\))?(?:[ .\-]\d{1,6}){1,5}"  # +44 20 7946 0958, +44 7700 900123, +1-202-555-0143
    r"|\+\d{8,15}"  # +14155550123
    r"|\(\d{3}\)[ .\-]?\d{3}[ .\-]\d{4}"  # (202) 555-0143
    r"|\d{3}(?P<sep>[.\-])\d{3}(?P=sep)\d{4}"  # 202-555-0143, 202.555.0143
    r")(?![\w\-/:]|\.\d)"
)


def _phone(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start = match.start()
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_+.-/:"):
        return None  # part of a longer number, path, version or time
    digits = sum(c.isdigit() for c in match.group(0))
    if 10 <= digits <= 15:
        return "phone", start, match.end()
    return None


_IPV4 = re.compile(r"\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?![\w\-]|\.\d)")


def _ipv4(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start, value = match.start(), match.group(0)
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_.-"):
        return None  # inside a longer dotted number
    octets = value.split(".")
    if any(len(o) > 1 and o[0] == "0" or int(o) > 255 for o in octets):
        return None
    if value.startswith("127.") or value == "0.0.0.0":
        return None  # loopback and "any" say nothing about anyone's network
    return "ipv4", start, match.end()


@lru_cache(maxsize=1)
def default_rules() -> tuple[Rule, ...]:
    """The built-in rules, in the order they apply (built once)."""
    return (
        Rule("private_key", _PEM, needles=("-----BEGIN",), name="pem-private-key"),
        Rule("jwt", _JWT, check=_prefixed("jwt"), needles=("eyJ",), resume="run", name="jwt"),
        *_provider_rules(),
        Rule("password", _URL_PASSWORD, group="secret", needles=("://",), name="url-password"),
        Rule("token", _URL_USER_TOKEN, check=_url_user_token, needles=("://",), name="url-user-token"),
        Rule("token", _BEARER, check=_bearer, lower=True, needles=("bearer",), name="bearer"),
        Rule("password", _BASIC, group="secret", lower=True, needles=("authorization",), name="basic-auth"),
        # sig=, signature= (also x-amz- / x-goog-signature=), x-amz-security-token=
        Rule("token", _SIGNED_URL, group="secret", lower=True, needles=("sig=", "signature=", "security-token="), name="signed-url"),
        Rule(
            "secret", _ASSIGNMENT, check=_assignment, lower=True, resume="core",
            needles=("pass", "pwd", "secret", "token", "credential", "key"), name="assignment",
        ),
        Rule("email", _EMAIL_DOMAIN, check=_email, needles=("@",), name="email"),
        Rule("phone", _PHONE, check=_phone, min_digits=10, name="phone-international"),
        *_general_rules(),
        *_more_rules(),
        *_national_rules(),
        *_placed_rules(),
    )


def _national_rules() -> tuple[Rule, ...]:
    # National identity and tax numbers, by their label or column and their checksum (python-stdnum).
    from mast.redact.national import national_rules

    return national_rules()


def _placed_rules() -> tuple[Rule, ...]:
    # Secrets found by the name, key, label or column that says what they are, then by shape (issue 34).
    from mast.redact.placed import placed_rules

    return placed_rules()


def _general_rules() -> tuple[Rule, ...]:
    # Secrets found by where they sit: command-line flags, HTTP headers, URLs, config files.
    from mast.redact.general import general_rules

    return general_rules()


def _more_rules() -> tuple[Rule, ...]:
    # Card numbers, IBANs, SSNs and the credential shapes kept as data (mast/data/credential_rules.yaml).
    from mast.redact.pii import more_rules

    return more_rules()


IPV4_RULE = Rule("ipv4", _IPV4, check=_ipv4, min_digits=4, name="ipv4")
_KIND_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")


def custom_rule(name: str, pattern: str | re.Pattern[str]) -> Rule:
    """A user pattern of kind ``name``: its ``secret`` group (or only group, or whole match) is replaced.

    Raises:
        UsageError: a name that is not lower-case letters, digits and ``_``, or a regex that does not compile.
    """
    if not _KIND_NAME.match(name):
        raise UsageError(f"redaction pattern name {name!r}: use lower-case letters, digits and _ (e.g. employee_id)")
    try:
        regex = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern)
    except re.error as exc:
        raise UsageError(f"redaction pattern {name!r} does not compile: {exc}") from exc
    group: int | str = 0
    if "secret" in regex.groupindex:
        group = "secret"
    elif regex.groups == 1:
        group = 1
    return Rule(name, regex, group=group)
