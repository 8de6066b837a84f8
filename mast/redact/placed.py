"""Secrets found by where they sit, then by shape (issue 34).

A value has no shape a rule could know ("hunter2-Prod-Ready"), but the place it sits in says what it
is: the value of a ``"password"`` key, the ``value`` beside ``"name": "DB_PASSWORD"``, the second
column of a ``vault kv get`` row named ``password``. These rules read the syntax around a value and
ask one question of the name that labels it (:func:`secret_name`):

* ``placed-quoted-pair``: JSON and Python-dict pairs, ``"password": "..."`` (escaped quotes inside
  the value, and a value whose escaping was doubled, included);
* ``placed-name-value``: name/value pair lists, ``{"name": "DB_PASSWORD", "value": "..."}``,
  ``{"Name": "/prod/db/password", ..., "Value": "..."}``, ``{"keyName": ..., "value": ...}``, and any
  ``value`` inside a list under a key that names secrets (``"passwords": [{...}]``);
* ``placed-sensitive``: the ``value`` of an object flagged ``"sensitive": true`` (``terraform output
  -json``), every string and number in it however deeply nested;
* ``placed-xml``: ``<password>x</password>``, ``<property name="password" value="x"/>``,
  ``<add key="ClientSecret" value="x"/>``, ``<user password="x">``;
* ``placed-line``: one setting a line: ``KEY=value``, ``export KEY=value``, INI ``key = value``,
  YAML ``key: value`` (block scalars ``key: |-`` with their indented lines), a header line
  (``> X-Auth-Token: ...`` as ``curl -v`` prints it);
* ``placed-table``: a row of a two-column table, plain (``vault kv get``), piped (markdown) or
  box-drawn (``doppler``, ``aws --output table``), and a ``Value`` row under a ``Name`` row that
  names a secret;
* ``placed-header``: ``-H 'DD-APPLICATION-KEY: ...'``: any header whose name holds key, token,
  secret, auth, session, cookie, password, signature or credential;
* ``placed-query``: ``?auth=``, ``&access_token=``, ``;jsessionid=``, ``#id_token=``...;
* ``placed-pgpass``, ``placed-netscape-cookie``, ``placed-crypt-hash`` (``$6$...``, bcrypt,
  yescrypt: ``/etc/shadow``), ``placed-armour`` (any ``-----BEGIN ...KEY-----`` block that is not a
  public key, OpenVPN static keys, PuTTY ``Private-Lines:``), ``placed-jwe`` (five-part JOSE
  tokens);
* ``entropy``: an unlabelled run of 20 or more base64/url-safe characters that looks generated
  (high Shannon entropy, letters and digits or both cases, frequent changes of character class),
  except hex digests, UUIDs, digests after ``sha256:``, base64 ``data:`` URIs, and values under
  names of ids, digests and pagination cursors.

Every pattern is bounded and anchored (a line start, a quote, a literal), and the parsing is by
hand on purpose: ``json`` refuses the half-printed and doubly escaped JSON agents print, and
``xml.etree`` is unsafe on hostile input (entity expansion) and refuses fragments; bounded regexes
read each candidate once, which keeps every rule linear in the text.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable

from mast.redact.rules import Rule, is_generated, token_start

__all__ = ["placed_rules", "secret_name"]

Found = tuple[str, int, int]

# --- what a name says ---------------------------------------------------------------------------

_HUMPS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
# Names that are one word in the wild.
_COMPOUNDS = {
    "apikey": "api_key",
    "passwd": "password",
    "password": "password",
    "passphrase": "password",
    "pwd": "password",
    "accesskey": "api_key",
    "secretkey": "secret",
    "privatekey": "private_key",
    "authtoken": "token",
    "accesstoken": "token",
    "refreshtoken": "token",
    "idtoken": "token",
    "jsessionid": "token",
    "phpsessid": "token",
    "aspsessionid": "token",
    "sessiontoken": "token",
    "clientsecret": "secret",
    "appkey": "api_key",
    "apitoken": "token",
    "bearertoken": "token",
    "signingkey": "secret",
    "masterkey": "secret",
    "secret": "secret",
    "secrets": "secret",
    "token": "token",
    "credential": "secret",
    "credentials": "secret",
    "passwords": "password",
    "cookie": "cookie",
    "sid": "token",
    "creds": "secret",
}
_SECRET_WORDS = {
    "password": "password",
    "passwords": "password",
    "passwd": "password",
    "pwd": "password",
    "passphrase": "password",
    "pass": "password",
    "secret": "secret",
    "secrets": "secret",
    "token": "token",
    "apikey": "api_key",
    "credential": "secret",
    "credentials": "secret",
    "creds": "secret",
    "signing": "secret",
    "signature": "secret",
    "cookie": "cookie",
    "session": "token",
    "sid": "token",
    "jsessionid": "token",
    "auth": "token",
    "privatekey": "private_key",
    "passcode": "password",
    "pin": "password",
}
# The last word of a name about a secret, not the secret ("password_min_length", "secretName").
_ABOUT = frozenset(
    {
        "file",
        "files",
        "path",
        "dir",
        "name",
        "names",
        "id",
        "ids",
        "length",
        "len",
        "count",
        "type",
        "url",
        "uri",
        "env",
        "ref",
        "min",
        "max",
        "policy",
        "ttl",
        "expiry",
        "expires",
        "expiration",
        "in",
        "at",
        "header",
        "param",
        "enabled",
        "required",
        "limit",
        "size",
        "format",
        "kind",
        "mode",
        "source",
        "arn",
        "version",
        "prompt",
        "hint",
        "field",
        "label",
        "description",
        "pattern",
        "regex",
        "rotation",
        "manager",
        "store",
        "provider",
        "location",
        "endpoint",
        "timeout",
        "created",
        "updated",
        "status",
        "reset",
        "question",
        "strength",
        "changed",
        "last",
        "used",
        "usage",
        "tokens",
        "class",
        "style",
        "algorithm",
        "alg",
        "method",
        "scheme",
        "scope",
        "scopes",
        "audience",
        "issuer",
        "lifetime",
        "age",
        "duration",
        "domain",
        "secure",
        "samesite",
        "httponly",
        "handler",
        "key_id",
        "keyid",
        "fingerprint",
        "hash_algorithm",
        "template",
        "prefix",
        "suffix",
        "placeholder",
        "selector",
        "flag",
        "option",
        "options",
        "config",
        "settings",
        "list",
        "index",
        "mount",
        "engine",
        "backend",
        "role",
        "user",
        "username",
        "login",
        "email",
        "account",
        "number",
        "no",
        "num",
        "digits",
        "char",
        "chars",
        "characters",
        "complexity",
        "rule",
        "rules",
        "check",
        "checks",
        "valid",
        "invalid",
        "error",
        "errors",
        "message",
        "msg",
        "text",
        "title",
        "budget",
        "window",
        "estimate",
        "estimates",
        "per",
        "rate",
        "price",
        "cost",
        "costs",
    }
)
# Tokens that page through results: opaque, but nobody's credential.
_PAGINATION = frozenset(
    {
        "next",
        "page",
        "cursor",
        "continuation",
        "marker",
        "pagination",
        "sync",
        "resume",
        "start",
        "after",
        "before",
        "offset",
        "prev",
        "previous",
        "last",
    }
)
# What "key" means after these words: an index, not a credential.
_NOT_SECRET_KEYS = frozenset(
    {
        "sort",
        "primary",
        "partition",
        "foreign",
        "cache",
        "hash",
        "range",
        "idempotency",
        "routing",
        "public",
        "pub",
        "row",
        "group",
        "object",
        "lookup",
        "dict",
        "map",
        "unique",
        "composite",
        "index",
        "s3",
        "dedup",
        "dedupe",
        "deduplication",
        "shard",
        "sharding",
        "order",
        "ordering",
        "cluster",
        "join",
        "natural",
        "surrogate",
        "candidate",
        "business",
        "message",
        "event",
        "react",
        "list",
        "item",
        "column",
        "field",
        "attribute",
        "websocket",
        "ws",
        "hotkey",
        "short",
        "keyboard",
        "the",
        "a",
        "key",
        "translation",
        "i18n",
        "locale",
        "metric",
        "label",
        "tag",
        "config",
        "setting",
    }
)


_VALUE_SUFFIXES = frozenset(
    {
        "base",  # Rails' secret_key_base
        "value",
        "string",
        "str",
        "text",
        "plain",
        "plaintext",
        "b64",
        "base64",
        "hash",
        "digest",
        "data",
        "raw",
        "enc",
        "encrypted",
        "hex",
    }
)


def _words(name: str) -> list[str]:
    return [w.lower() for w in _HUMPS.findall(name)]


def is_pagination(name: str) -> bool:
    """True for the name of a cursor that pages through results (``NextToken``, ``page_token``)."""
    return any(w in _PAGINATION for w in _words(name))


def secret_name(name: str, *, header: bool = False) -> str | None:
    """The kind of secret a name says its value is (``"password"``, ``"token"``...), or None.

    ``DB_PASSWORD``, ``/prod/db/password``, ``ClientSecret``, ``webhookSigningKey``, ``APP_KEY``,
    ``x-auth-token``: yes. ``password_min_length``, ``secretName``, ``max_tokens``, ``NextToken``,
    ``sort_key``, ``DB_PASSWORD_FILE``: no.
    """
    if not name or len(name) > 128:
        return None
    words = _words(name)
    if not words:
        return None
    while words and words[-1].isdigit():
        words.pop()  # password2, key1
    if not words:
        return None
    if len(words) > 1 and words[-1] in _VALUE_SUFFIXES:
        # A word that only says how the value is written ("password_b64", "api_key_value",
        # "secret_key_base"): the name before it decides.
        return secret_name("_".join(words[:-1]), header=header)
    joined = "".join(words)
    if words[-1] in _ABOUT and joined not in _COMPOUNDS:
        return None
    if any(w in _PAGINATION for w in words):
        return None  # NextToken, nextPageToken, continuationToken, cursor_key
    if joined in _COMPOUNDS:
        return _COMPOUNDS[joined]
    for compound, kind in _COMPOUNDS.items():
        if len(compound) >= 6 and joined.endswith(compound):
            return kind  # dbpassword, xauthtoken, githubapikey
    last = words[-1]
    if last in ("key", "keys"):
        if len(words) == 1:
            return "api_key" if header else None
        before = words[-2]
        if before in _NOT_SECRET_KEYS:
            return None
        if before == "private":
            return "private_key"
        return (
            "secret"
            if before in ("secret", "signing", "encryption", "master", "client", "app")
            else "api_key"
        )
    # The last word decides ("credential-providers", "auth_method", "session_timeout" are not
    # secrets), or the one before a word that only says how the secret is written ("password_b64").
    tail = words[-2:-1] if last in _VALUE_SUFFIXES and len(words) > 1 else [last]
    for word in tail:
        named = _SECRET_WORDS.get(word)
        if named is not None:
            if word in ("auth", "session") and len(words) == 1 and not header:
                return None  # "auth": "oauth2", "session": {...}: a setting, rarely the credential
            if word == "pass" and len(words) == 1:
                return None  # "pass: 12 fail: 3"
            if word == "pin" and len(words) == 1:
                return None
            return named
    return None


# --- what a value looks like --------------------------------------------------------------------

_NOT_VALUES = frozenset(
    {
        "null",
        "none",
        "nil",
        "true",
        "false",
        "undefined",
        "empty",
        "n/a",
        "na",
        "tbd",
        "todo",
        "redacted",
        "hidden",
        "masked",
        "required",
        "optional",
        "string",
        "str",
        "secret",
        "password",
        "token",
        "yes",
        "no",
        "on",
        "off",
        "xxx",
        "example",
        "default",
        "unset",
        "missing",
        "changeit?",
    }
)
_PLACEHOLDER_STARTS = (
    "$",
    "(",  # terraform's "(sensitive value)", "(none)", "(hidden)"
    "%(",
    "{{",
    "<",
    "[redacted",
    "***",
    "...",
    "${",
    "env:",
    "vault:",
    "os.environ",
    "process.env",
    "env(",
    "secretkeyref",
    "valuefrom",
    "!ref",
    "!sub",
    "!getatt",
)
_PATH = re.compile(r"(?:[A-Za-z]:\\|\.{0,2}/|~/)[^\s]*")


def value_ok(value: str, kind: str, *, prose: bool = False) -> bool:
    """True when ``value`` may be the secret a name announced (not a placeholder, reference or word).

    ``prose``: the place also holds ordinary sentences ("Password: mismatch", a table of words), so a
    single lower-case word, or words with spaces, are not taken for a secret.
    """
    value = value.strip()
    lowered = value.lower()
    if not value or lowered in _NOT_VALUES or lowered.startswith(_PLACEHOLDER_STARTS):
        return False
    if len(set(lowered)) == 1 or lowered.endswith("****"):
        return False
    if _PATH.fullmatch(value) and kind != "password":
        return False
    if value.isdigit() and (kind != "password" or len(value) < 4):
        return False
    if prose:
        if any(c.isspace() for c in value):
            return False
        if value.isalpha() and (value.islower() or value[1:].islower()) and len(value) <= 16:
            return False  # "mismatch", "incorrect", "Required"
    if kind in ("token", "api_key") and value.isalpha() and value.islower():
        return False  # keys and tokens are not lower-case words ("session=credentials")
    if kind not in ("password", "cookie") and len(value) < 6:
        return False
    return True


# --- the rule class: a hand-written scanner ---------------------------------------------------


class ScanRule(Rule):
    """A rule whose findings come from a scanner function ``scan(text, lowered)``.

    It keeps :class:`Rule`'s fields for the needle gate and the tests.
    """

    __slots__ = ()

    def findings(self, text: str, lowered: str) -> Iterable[Found]:
        scan: Callable[[str, str], Iterable[Found]] = self.check  # type: ignore[assignment]
        return scan(text, lowered)


def _scan_rule(
    kind: str,
    scan: Callable[[str, str], Iterable[Found]],
    name: str,
    needles: tuple[str, ...] = (),
    lower: bool = False,
    min_digits: int = 0,
) -> Rule:
    return ScanRule(
        kind,
        re.compile(r"(?!)"),
        check=scan,  # type: ignore[arg-type]  # ScanRule.findings calls it with the whole text instead
        needles=needles,
        lower=lower,
        min_digits=min_digits,
        name=name,
    )


# --- JSON / dict pairs ----------------------------------------------------------------------------

_DQ_PAIR = re.compile(
    r'"(?P<key>[^"\\\r\n]{1,128})"[ \t]{0,4}:[ \t]{0,4}"(?P<value>(?:[^"\\\r\n]|\\.){1,4096}+)"'
)
_ESC_PAIR = re.compile(
    r'\\"(?P<key>[^"\\\r\n]{1,128})\\"[ \t]{0,4}:[ \t]{0,4}\\"(?P<value>(?:[^"\\\r\n]|\\\\.){1,4096}+)\\"'
)
_SQ_PAIR = re.compile(
    r"'(?P<key>[^'\\\r\n]{1,128})'[ \t]{0,4}:[ \t]{0,4}'(?P<value>(?:[^'\\\r\n]|\\.){1,4096}+)'"
)
_JSON_AFTER = frozenset(",}] \t\r\n)")


def _quoted_pairs(text: str, lowered: str) -> Iterable[Found]:
    for pattern, quote in ((_DQ_PAIR, '"'), (_SQ_PAIR, "'"), (_ESC_PAIR, '\\"')):
        if quote not in text:
            continue
        for match in pattern.finditer(text):
            kind = secret_name(match.group("key"))
            if kind is None:
                continue
            start, end = match.span("value")
            value = match.group("value")
            if kind == "private_key" or value.startswith("-----BEGIN"):
                kind = "private_key"
            if not value_ok(value.replace("\\\\", "\\"), kind):
                continue
            # A value whose escaping was doubled ("ab\\"cd"): the string closed early, and what follows
            # is no JSON syntax; it runs on to the next quote that is followed by some (bounded).
            close = end + len(quote)
            if close < len(text) and text[close] not in _JSON_AFTER and quote == '"':
                more = text.find('"', close, close + 512)
                while more > 0 and more + 1 < len(text) and text[more + 1] not in _JSON_AFTER:
                    more = text.find('"', more + 1, close + 512)
                if more > 0:
                    end = more
            yield kind, start, end


# --- name/value pair lists -----------------------------------------------------------------------

_VALUE_FIELD = re.compile(
    r'"(?:value|Value|VALUE|SecretString|secretValue|SecretValue)"[ \t]{0,4}:[ \t]{0,4}"(?P<value>(?:[^"\\\r\n]|\\.){1,4096}+)"'
)
_NAME_FIELD = re.compile(
    r'"(?P<field>name|Name|NAME|key|Key|keyName|KeyName|ParameterName|SecretName|secretName|variable|Variable|id|Id|ID|label|Label)"[ \t]{0,4}:[ \t]{0,4}"(?P<name>[^"\\\r\n]{1,256})"'
)
_LIST_KEY = re.compile(r'"(?P<key>[^"\\\r\n]{1,64})"[ \t]{0,4}:[ \t]{0,4}\[')
_WINDOW = 768


def _object_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """The enclosing object's ``{`` and ``}`` around a field (bounded: nested objects are not followed)."""
    low = text.rfind("{", max(0, start - _WINDOW), start)
    close = text.rfind("}", max(0, start - _WINDOW), start)
    if low < close:
        low = close  # the field is not directly inside the last object opened before it
    high = text.find("}", end, end + _WINDOW)
    return (low if low >= 0 else max(0, start - _WINDOW)), (
        high if high >= 0 else min(len(text), end + _WINDOW)
    )


def _name_values(text: str, lowered: str) -> Iterable[Found]:
    for match in _VALUE_FIELD.finditer(text):
        start, end = match.span("value")
        low, high = _object_bounds(text, match.start(), match.end())
        kind = None
        for name in _NAME_FIELD.finditer(text, low, high):
            field = name.group("field").lower()
            kind = secret_name(name.group("name")) or (
                "secret" if field in ("keyname", "secretname") else None
            )
            if kind:
                break
        if kind is None and low > 0:
            # Inside a list under a key that names secrets ("passwords": [{...}, {...}]).
            before = text.rfind("[", max(0, low - _WINDOW), low + 1)
            if before >= 0:
                key = None
                for key in _LIST_KEY.finditer(text, max(0, before - 80), before + 1):  # noqa: B007 - the last match is wanted
                    pass
                if key is not None and key.end() == before + 1 and text.count("]", before, low) == 0:
                    kind = secret_name(key.group("key"))
                    if kind is None and _words(key.group("key"))[-1:] == ["keys"]:
                        kind = "api_key"
        if kind and value_ok(match.group("value"), kind):
            yield kind, start, end


# --- a sensitive flag beside a value (terraform output -json) --------------------------------------

_SENSITIVE = re.compile(r"""(?P<q>["'])sensitive(?P=q)[ \t\r\n]{0,8}:[ \t\r\n]{0,8}(?:true|True)\b""")
_VALUE_KEY = re.compile(r"""(?P<q>["'])value(?P=q)[ \t\r\n]{0,8}:[ \t\r\n]{0,8}""")
_SENSITIVE_REACH = 16 * 1024
"""How far a flagged object's value is looked for, and how far a nested value is followed."""
_SCALAR_END = frozenset(",}] \t\r\n")


_STRING_BODY = {q: re.compile(rf"(?:[^{q}\\\\\r\n]|\\\\.)*+{q}") for q in "\"'"}


def _string_end(text: str, start: int, quote: str, limit: int) -> int:
    """Where the string opened by the quote at ``start`` closes (its closing quote), or -1 within ``limit``."""
    match = _STRING_BODY[quote].match(text, start + 1, limit)
    return match.end() - 1 if match else -1


def _leaves(text: str, start: int, limit: int) -> tuple[list[tuple[int, int]], int]:
    """The spans of the string and number leaves of the JSON value at ``start`` (keys left), and where it ends.

    One pass, bounded by ``limit``: a value cut off by it still gives the leaves seen so far.
    """
    spans: list[tuple[int, int]] = []
    depth = 0
    i = start
    while i < limit:
        c = text[i]
        if c in "\"'":
            close = _string_end(text, i, c, limit)
            if close < 0:
                return spans, i
            after = close + 1
            while after < limit and text[after] in " \t\r\n":
                after += 1
            if after >= limit or text[after] != ":":  # a key is followed by ":"; a value is kept
                if close > i + 1:
                    spans.append((i + 1, close))
            i = close + 1
        elif c in "{[":
            depth += 1
            i += 1
        elif c in "}]":
            depth -= 1
            i += 1
        elif c in ", \t\r\n:":
            i += 1
        else:  # a number or a word (true, null): to the next delimiter
            end = i
            while end < limit and text[end] not in _SCALAR_END:
                end += 1
            if text[i] in "-0123456789":
                spans.append((i, end))
            i = end
        if depth <= 0:
            return spans, i
    return spans, i


def _sensitive_values(text: str, lowered: str) -> Iterable[Found]:
    """``{"sensitive": true, "type": ..., "value": ...}``: the value is secret, whatever it holds (any depth).

    ``terraform output -json`` prints every output so; the flag, not the name ("db_password",
    "connection"), says the value is secret. The value is looked for after the flag, past the
    ``type`` (itself nested: ``["object", {...}]``), in the same object; a value given before the
    flag is found too when nothing nested lies between them.
    """
    last = 0
    for flag in _SENSITIVE.finditer(text):
        if flag.start() < last:
            continue  # inside a value already redacted
        limit = min(len(text), flag.end() + _SENSITIVE_REACH)
        value = None
        depth = 0
        i = flag.end()
        while i < limit:  # the rest of the flag's object, nested parts skipped
            c = text[i]
            if c in "\"'":
                key = _VALUE_KEY.match(text, i)
                if key is not None and depth == 0:
                    value = key.end()
                    break
                if _SENSITIVE.match(text, i):
                    break  # the next flag looks on from here: each stretch of text is walked once
                close = _string_end(text, i, c, limit)
                if close < 0:
                    break
                i = close + 1
                continue
            if c in "{[":
                depth += 1
            elif c in "}]":
                depth -= 1
                if depth < 0:
                    break
            i += 1
        if value is None:
            low = text.rfind("{", max(0, flag.start() - _WINDOW), flag.start())
            before = None
            if low >= 0 and "}" not in text[low : flag.start()] and "[" not in text[low : flag.start()]:
                for before in _VALUE_KEY.finditer(text, low, flag.start()):  # noqa: B007 - the last one
                    pass
            if before is None:
                continue
            value = before.end()
        spans, end = _leaves(text, value, min(len(text), value + _SENSITIVE_REACH))
        last = max(last, end)
        for start, stop in spans:
            yield "secret", start, stop


# --- XML ----------------------------------------------------------------------------------------

_XML_ELEMENT = re.compile(
    r"<(?P<tag>[A-Za-z_][\w.:\-]{0,64})(?:[ \t][^<>]{0,512})?>(?P<value>[^<>]{1,4096})</(?P=tag)[ \t]{0,4}>"
)
_XML_TAG = re.compile(r"<[A-Za-z_][\w.:\-]{0,64}[ \t\r\n](?P<attrs>[^<>]{1,2048})>")
_ATTR = re.compile(
    r"(?P<name>[A-Za-z_][\w.:\-]{0,64})[ \t]{0,4}=[ \t]{0,4}(?:\"(?P<dq>[^\"]{0,4096})\"|'(?P<sq>[^']{0,4096})')"
)


def _xml(text: str, lowered: str) -> Iterable[Found]:
    for match in _XML_ELEMENT.finditer(text):
        kind = secret_name(match.group("tag").rsplit(":", 1)[-1])
        if kind and value_ok(match.group("value"), kind):
            value = match.group("value")
            start = match.start("value") + (len(value) - len(value.lstrip()))
            yield kind, start, match.start("value") + len(value.rstrip())
    for tag in _XML_TAG.finditer(text):
        attrs = list(_ATTR.finditer(text, tag.start("attrs"), tag.end("attrs")))
        named = None
        for attr in attrs:
            if attr.group("name").lower() in ("name", "key", "id", "property", "setting") and attr.group(
                "dq" if attr.group("dq") is not None else "sq"
            ):
                named = secret_name(attr.group("dq") if attr.group("dq") is not None else attr.group("sq"))
                if named:
                    break
        for attr in attrs:
            group = "dq" if attr.group("dq") is not None else "sq"
            attr_name = attr.group("name")
            kind = named if attr_name.lower() in ("value", "val", "content") else secret_name(attr_name)
            if kind and value_ok(attr.group(group), kind):
                yield kind, attr.start(group), attr.end(group)


# --- one setting a line: env, INI, YAML, header lines -----------------------------------------

_LINE = re.compile(
    r"^[ \t]{0,32}(?:[<>*][ \t]|-[ \t])?(?:export[ \t]{1,4}|set[ \t]{1,4})?(?P<q>[\"']?)"
    r"(?P<key>[A-Za-z_/][A-Za-z0-9_.\-/]{0,80})(?P=q)[ \t]{0,16}(?P<sep>=|:)[ \t]{0,16}(?P<value>[^\r\n]{1,4096})",
    re.M,
)
_BLOCK = re.compile(r"[|>][+\-]?[1-9]?[+\-]?[ \t]*(?:#[^\r\n]*)?")


def _line_value(value: str) -> tuple[int, int, bool]:
    """Where a line's value starts and ends inside ``value``, and whether it was quoted."""
    stripped = value.rstrip()
    if stripped[:1] in ("'", '"'):
        close = stripped.find(stripped[0], 1)
        if close > 1:
            return 1, close, True
    end = len(stripped)
    comment = stripped.find(" #")
    if comment > 0:
        end = len(stripped[:comment].rstrip())
    return 0, end, False


def _lines(text: str, lowered: str) -> Iterable[Found]:
    for match in _LINE.finditer(text):
        key = match.group("key")
        kind = secret_name(key, header=match.group("sep") == ":" and "-" in key)
        if kind is None:
            continue
        value_start = match.start("value")
        value = match.group("value")
        if match.group("sep") == ":" and _BLOCK.fullmatch(value.rstrip()):
            yield from _block_scalar(text, match, kind)
            continue
        low, high, quoted = _line_value(value)
        inner = value[low:high]
        if match.group("sep") == "=" and not quoted and (inner.startswith(("(", "[", "{")) or " " in inner):
            continue  # code ("password = get_password()"), a list, a sentence
        if match.group("sep") == ":" and not quoted and inner[-1:] in ("{", "[", ",", ";", "("):
            continue  # "password: {" opens a mapping; code
        prose = match.group("sep") == ":" and not quoted
        if value_ok(inner, kind, prose=prose):
            yield kind, value_start + low, value_start + high


def _block_scalar(text: str, match: re.Match[str], kind: str) -> Iterable[Found]:
    """The indented lines of a YAML block scalar (``tls_secret: |-``), up to 400 lines / 64 KB."""
    line_start = match.start()
    indent = len(match.group(0)) - len(match.group(0).lstrip(" \t-"))
    position = text.find("\n", match.end("value"))
    if position < 0:
        return
    start = position + 1
    end = start
    limit = min(len(text), start + 65536)
    lines = 0
    while end < limit and lines < 400:
        newline = text.find("\n", end, limit)
        line_end = newline if newline >= 0 else limit
        line = text[end:line_end]
        if line.strip() and len(line) - len(line.lstrip(" \t")) <= indent:
            break
        end = line_end + 1 if newline >= 0 else line_end
        lines += 1
    body = text[start:end].rstrip()
    if body.strip() and line_start < start:
        first = start + len(text[start:end]) - len(text[start:end].lstrip())
        yield kind, first, start + len(body)


# --- tables ------------------------------------------------------------------------------------

_BAR = "|│┃║"
# A row: an optional bar, the key cell, the value cell, then (in a barred table) any further cells
# ("| DB_PASSWORD | zSig... | env |"): a name and its value are the first two columns.
_ROW = re.compile(
    r"^[ \t]{0,32}(?P<bar>[|│┃║])?[ \t]{0,32}(?P<key>[^\s|│┃║]{1,128})"
    r"(?:[ \t]{0,64}[|│┃║][ \t]{0,64}|[ \t]*\t[ \t]*|[ \t]{2,64})"
    r"(?P<value>[^\s|│┃║]{1,4096})[ \t]{0,64}(?P<close>[|│┃║](?:[^\r\n|│┃║]{0,256}[|│┃║]){0,16})?[ \t]{0,16}\r?$",
    re.M,
)


def _tables(text: str, lowered: str) -> Iterable[Found]:
    previous: tuple[int, str, str] | None = None  # end of the last row, its key, its value
    for match in _ROW.finditer(text):
        key, value = match.group("key"), match.group("value")
        if bool(match.group("bar")) != bool(match.group("close")):
            previous = None
            continue
        kind = secret_name(key.rstrip(":"))
        if kind is None and key.lower() in ("value", "secretstring", "plaintext") and previous is not None:
            end, above_key, above_value = previous
            if (
                above_key.lower() in ("name", "key", "parameter", "secretname", "id")
                and match.start() - end <= 2
            ):
                kind = secret_name(above_value)
        previous = (match.end(), key, value)
        if kind and value_ok(value, kind, prose=True):
            yield kind, match.start("value"), match.end("value")


# --- headers and query strings -------------------------------------------------------------------

_HEADER_FLAG = re.compile(
    r"(?:-h|--header)[ \t]{1,4}[\"']?(?P<name>[a-z0-9][a-z0-9_\-]{0,80}):[ \t]{0,8}(?P<value>[^\r\n\"']{1,4096})"
)
_HEADER_WORDS = frozenset(
    {
        "key",
        "token",
        "secret",
        "auth",
        "authorization",
        "session",
        "cookie",
        "password",
        "signature",
        "credential",
        "credentials",
        "apikey",
        "sid",
        "passwd",
    }
)
_NOT_HEADERS = frozenset(
    {"idempotency", "websocket", "public", "type", "length", "encoding", "request", "trace", "correlation"}
)


def header_secret(name: str) -> bool:
    words = set(_words(name.replace("-", "_")))
    return bool(words & _HEADER_WORDS) and not words & _NOT_HEADERS


def _headers(text: str, lowered: str) -> Iterable[Found]:
    for match in _HEADER_FLAG.finditer(lowered):
        if not header_secret(match.group("name")) or match.group("name") in (
            "authorization",
            "cookie",
            "proxy-authorization",
        ):
            continue  # those two have their own rules, which know their syntax
        start, end = match.span("value")
        value = text[start:end].rstrip()
        if value_ok(value, "token"):
            yield "api_key" if "key" in match.group("name") else "token", start, start + len(value)


_QUERY = re.compile(r"[?&;#](?P<name>[A-Za-z0-9_.\-\[\]]{1,64})=(?P<value>[^&\s#\"'<>;,]{1,4096})")
_QUERY_NAMES = frozenset(
    {
        "auth",
        "key",
        "apikey",
        "api_key",
        "sig",
        "jsessionid",
        "phpsessid",
        "sid",
        "access_token",
        "id_token",
        "refresh_token",
        "client_secret",
        "code_verifier",
        "password",
        "pwd",
        "token",
        "session",
        "sessionid",
        "secret",
        "passwd",
    }
)


_PARAM_END = re.compile(r"[;\s\"'<>]|$")


def _queries(text: str, lowered: str) -> Iterable[Found]:
    for match in _QUERY.finditer(text):
        name = match.group("name")
        kind = "token" if name.lower() in _QUERY_NAMES else secret_name(name)
        if kind is None:
            continue
        value = match.group("value")
        if text[match.start()] == ";":
            # A ;-separated parameter (JDBC, ADO.NET) runs to the next ";": no fragment there, so a
            # "#" belongs to the value ("password=Jdbc#Pw...").
            stop = _PARAM_END.search(text, match.start("value"), match.start("value") + 4096)
            value = text[match.start("value") : stop.start() if stop else match.start("value") + 4096]
        value = value.rstrip(".,)")
        if kind != "password" and len(value) < 8:
            continue
        if value_ok(value, kind):
            yield kind, match.start("value"), match.start("value") + len(value)


# --- files with a fixed layout ------------------------------------------------------------------

# host:port:database:user:password (.pgpass; "*" for any)
_PGPASS = re.compile(
    r"^[ \t]{0,8}[A-Za-z0-9_.\-*\[\]]{1,253}:(?:\d{1,5}|\*):[^:\s]{1,128}:[^:\s]{1,128}:(?P<secret>\S{1,512})[ \t]*\r?$",
    re.M,
)
_NETSCAPE = re.compile(
    r"^(?:#HttpOnly_)?[^\t\r\n#][^\t\r\n]{0,252}\t(?:TRUE|FALSE)\t[^\t\r\n]{1,1024}\t(?:TRUE|FALSE)\t\d{1,20}\t[^\t\r\n]{1,256}\t(?P<secret>[^\t\r\n]{1,4096})",
    re.M,
)
_CRYPT = re.compile(r"\$(?:1|2[abxy]?|5|6|y|gy|7|md5|sha1)(?:\$[./A-Za-z0-9=,+]{1,128}+){2,4}+")


def _crypt(text: str, lowered: str) -> Iterable[Found]:
    for match in _CRYPT.finditer(text):
        if match.start() > 0 and text[match.start() - 1].isalnum():
            continue
        if len(match.group(0).rsplit("$", 1)[-1]) >= 16:
            yield "password", match.start(), match.end()


def _fixed(pattern: re.Pattern[str], kind: str) -> Callable[[str, str], Iterable[Found]]:
    def scan(text: str, lowered: str) -> Iterable[Found]:
        for match in pattern.finditer(text):
            if value_ok(match.group("secret"), kind):
                yield kind, match.start("secret"), match.end("secret")

    return scan


# --- armoured blocks -----------------------------------------------------------------------------

_BEGIN = re.compile(r"-{4,5}[ ]?BEGIN (?P<label>[A-Za-z0-9 ]{1,64}?)[ ]?-{4,5}")
_PUTTY = re.compile(r"Private-Lines:[ \t]{0,4}(?P<count>\d{1,4})[ \t]*(?:\r?\n|\\n)")
_ARMOUR_MAX = 65536


def _armour(text: str, lowered: str) -> Iterable[Found]:
    no_end_until = 0  # no "END" between the last search's start and here: never searched twice
    block_end = 0
    for match in _BEGIN.finditer(text):
        label = match.group("label").lower()
        if match.start() < block_end:
            continue
        if "public" in label or not ("key" in label or "private" in label or "secret" in label):
            continue  # certificates and public keys are meant to be shared
        limit = match.end() + _ARMOUR_MAX
        end = text.find("END", max(match.end(), no_end_until), limit)
        if end < 0:
            no_end_until = limit
            continue  # cut off before its END line (pem-private-key takes a private key's rest)
        else:
            block_end = end
            end = text.rfind("-", match.end(), end)
            while end > match.end() and text[end - 1] == "-":
                end -= 1
        if end > match.end():
            yield "private_key", match.end(), end
    read_to = 0
    for match in _PUTTY.finditer(text):
        if match.start() < read_to:
            continue  # inside the lines of the block before (each line is read once)
        position = match.end()
        for _ in range(min(int(match.group("count")), 400)):
            newline = text.find("\n", position, position + 256)
            if newline < 0:
                position = min(len(text), position + 256)
                break
            position = newline + 1
        read_to = position
        body = text[match.end() : position].rstrip()
        if body:
            yield "private_key", match.end(), match.end() + len(body)


_JWE = re.compile(
    token_start(
        r"eyJ[A-Za-z0-9_\-]{10,}+\.[A-Za-z0-9_\-]*+\.[A-Za-z0-9_\-]++\.[A-Za-z0-9_\-]++\.[A-Za-z0-9_\-]++"
    )
)


def _jwe(text: str, lowered: str) -> Iterable[Found]:
    for match in _JWE.finditer(text):
        yield "token", match.start(), match.end()


# A JSON Web Token wrapped at a fixed width, as loggers and terminals print one: no line holds a whole
# token, so the one-line JWT rule cannot see it, and lines that begin with the "." between its parts
# do not look like tokens either. The lines are joined and the whole must read as a JWT.
_WRAPPED_JWT = re.compile(r"(?<![A-Za-z0-9_\-.])eyJ[A-Za-z0-9_\-.]{16,}+\r?\n")
_WRAPPED_LINE = re.compile(r"[ \t]{0,8}(?P<part>[A-Za-z0-9_\-.]{4,4096}+)[ \t]{0,8}\r?(?:\n|$)")
_JOINED_JWT = re.compile(r"eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*")


def _wrapped_jwt(text: str, lowered: str) -> Iterable[Found]:
    read_to = 0
    for match in _WRAPPED_JWT.finditer(text):
        if match.start() < read_to:
            continue
        parts = [match.group(0).rstrip()]
        end = match.start() + len(parts[0])
        position = match.end()
        width = len(parts[0])
        for _ in range(256):  # a token of a megabyte is not a token: the walk is bounded
            line = _WRAPPED_LINE.match(text, position)
            if line is None or len(line.group("part")) > width:
                break
            parts.append(line.group("part"))
            end = line.end("part")
            position = line.end()
            if len(line.group("part")) < width:
                break  # the last, shorter line of the wrap
        read_to = position
        if len(parts) > 1 and _JOINED_JWT.match("".join(parts)):
            yield "jwt", match.start(), end


# A "user:password" pair in base64 with no label, as `echo -n "$CREDS" | base64` or a pasted
# Authorization value prints it: the encoded text looks like a short word run to the entropy rule,
# so it is decoded, and it is a password when it reads as a name, a colon and a generated-looking
# secret (not "host:8080", not "Content-Type:application/json").
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/=])[A-Za-z0-9+/]{12,684}+={0,2}(?![A-Za-z0-9+/=])")
_CREDENTIAL_PAIR = re.compile(r"[\w.@+\-]{1,64}:(?P<secret>[!-~]{6,128})")


def _base64_credentials(text: str, lowered: str) -> Iterable[Found]:
    for match in _BASE64_RUN.finditer(text):
        token = match.group(0)
        if len(token) % 4:
            continue
        try:
            decoded = base64.b64decode(token, validate=True).decode("ascii")
        except (binascii.Error, ValueError):
            continue
        pair = _CREDENTIAL_PAIR.fullmatch(decoded)
        if pair is None or "://" in decoded or not _random_secret(pair.group("secret")):
            continue
        yield "password", match.start(), match.end()


def _random_secret(value: str) -> bool:
    """A generated password: is_generated's, or a mixed-case run with no word in it (RsJUcCXWyS...)."""
    if is_generated(value):
        return True
    if len(value) < 12 or not (any(c.isupper() for c in value) and any(c.islower() for c in value)):
        return False
    if re.search(r"[a-z]{5,}|[A-Z][a-z]{4,}", value):
        return False  # "ChangeTheDefault": words
    counts = Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    switches = sum(a.isupper() != b.isupper() for a, b in zip(value, value[1:], strict=False)) / (
        len(value) - 1
    )
    return entropy >= min(3.5, 0.8 * math.log2(len(value))) and switches >= 0.3


# --- entropy -------------------------------------------------------------------------------------

_TOKEN = re.compile(r"[A-Za-z0-9+/_\-%]{24,}+={0,3}")
_PATH_WORD = re.compile(r"[A-Za-z]?[a-z]*|[A-Z]+|\d+|[a-z0-9]{1,8}")
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-%.")
_HEX = re.compile(r"(?:0x)?[0-9a-fA-F]+")
_UUID = re.compile(r"[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}")
_BEFORE_KEY = re.compile(
    r"[\"']?(?P<key>[A-Za-z_][A-Za-z0-9_.\-]{0,64})[\"']?[ \t]{0,4}[:=][ \t]{0,4}[\"']?$"
)
_ID_WORDS = frozenset(
    {
        "id",
        "ids",
        "uuid",
        "guid",
        "hash",
        "digest",
        "etag",
        "checksum",
        "sha",
        "sha1",
        "sha256",
        "sha512",
        "md5",
        "commit",
        "rev",
        "revision",
        "oid",
        "nonce",
        "request",
        "trace",
        "span",
        "run",
        "cursor",
        "next",
        "continuation",
        "page",
        "marker",
        "offset",
        "integrity",
        "ref",
        "version",
        "build",
        "image",
        "path",
        "file",
        "url",
        "href",
        "src",
        "name",
        "title",
        "cert",
        "certificate",
        "pub",
        "public",
        "pubkey",
        "fingerprint",
        "thumbprint",
    }
)
_DIGEST_LEADS = (
    "sha1:",
    "sha256:",
    "sha384:",
    "sha512:",
    "md5:",
    "sha256-",
    "sha384-",
    "sha512-",
    "base64,",
    "sha1-",
)


def _class(c: str) -> int:
    return 0 if c.isupper() else 1 if c.islower() else 2 if c.isdigit() else 3


def _decodes_to_text(token: str) -> bool:
    import base64
    import binascii

    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    if len(raw) < 12 or not all(32 <= b < 127 for b in raw):
        return False  # random bytes (a key) decode to bytes outside printable ASCII
    # Words: spaces between them, or mostly letters ("Content-Type: application/json; charset=utf-8").
    return raw.count(b" ") * 12 >= len(raw) or sum(chr(b).isalpha() for b in raw) * 10 >= len(raw) * 7


def looks_generated(token: str) -> bool:
    """True for a run that reads as random (a key, a token), not as words, ids or a path."""
    core = token.rstrip("=")
    if len(core) < 24 or _HEX.fullmatch(core) or _UUID.fullmatch(core):
        return False
    segments = [s for s in re.split(r"[/_\-%.+]", core) if s]
    if core.count("/") >= 2 and all(_PATH_WORD.fullmatch(s) for s in segments):
        return False  # a path of words
    if any(_HEX.fullmatch(s) and len(s) >= 32 for s in segments) and all(
        _HEX.fullmatch(s) or s.lower() in ("sha1", "sha256", "sha512", "md5", "blake2b", "git", "v1")
        for s in segments
    ):
        return False  # sha256-<digest>, hex ids joined by dashes
    if not any(len(s) >= (32 if _HEX.fullmatch(s) else 16) for s in re.split(r"[_\-.%]", core)):
        return False  # words and short ids joined ("api-server-7d9f8b6c4-x2kqz", "batch-28391020-kz7p2")
    if all(_HEX.fullmatch(s) for s in re.split(r"[_\-]", core) if s):
        return False  # UUIDs and hex ids joined
    if _decodes_to_text(core):
        return False  # base64 of ordinary text
    classes = {_class(c) for c in core}
    letters = sum(c.isalpha() for c in core)
    digits = sum(c.isdigit() for c in core)
    if not letters or not (digits or (0 in classes and 1 in classes)):
        return False
    counts = Counter(core)
    entropy = -sum(n / len(core) * math.log2(n / len(core)) for n in counts.values())
    if entropy < min(4.0, 0.8 * math.log2(len(core))):
        return False
    switches = sum(_class(a) != _class(b) for a, b in zip(core, core[1:], strict=False)) / (len(core) - 1)
    if switches < 0.3:
        return False  # camelCase names, words joined by dashes
    # Words: a long run of lower-case letters is language, not randomness ("my-deployment-7d9f8b6c4").
    longest_word = max((len(w) for w in re.findall(r"[a-z]{5,}", core)), default=0)
    return longest_word < 7 and not (longest_word >= 5 and len(segments) > 1 and len(core) < 28)


_SSH_PUBLIC = re.compile(
    r"(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp\d{3}|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)"
    r"(?:-cert-v01@openssh\.com)?[ \t]$"
)


def _entropy(text: str, lowered: str) -> Iterable[Found]:
    for match in _TOKEN.finditer(text):
        start, end = match.span()
        if start > 0 and text[start - 1] in _TOKEN_CHARS:
            continue  # inside a dotted or longer run (a domain, a version, a file name)
        if end < len(text) and text[end] == "." and text[end + 1 : end + 2].isalnum():
            continue
        token = match.group(0)
        if "%" in token:
            continue  # URL-encoded text is decoded and searched again (mast.redact)
        if not looks_generated(token):
            continue
        before = text[max(0, start - 80) : start]
        if before.endswith(_DIGEST_LEADS) or "data:" in before[-40:]:
            continue
        if _SSH_PUBLIC.search(before[-48:]):
            continue  # an OpenSSH public key line (authorized_keys, known_hosts): meant to be shared
        armour = text.rfind("-----BEGIN", max(0, start - 8192), start)
        if armour >= 0 and text.find("-----END", armour, start) < 0:
            label = text[armour : armour + 64].upper()
            if "PUBLIC" in label or "CERTIFICATE" in label:
                continue  # a public key or certificate is meant to be shared
        key = _BEFORE_KEY.search(before)
        if key is not None and set(_words(key.group("key"))) & _ID_WORDS:
            continue  # "id": ..., "NextToken": ..., etag=...
        yield "secret", start, end


def placed_rules() -> tuple[Rule, ...]:
    """The rules of this module, in the order they apply."""
    return (
        _scan_rule("private_key", _armour, "placed-armour", needles=("BEGIN ", "Private-Lines:")),
        _scan_rule("token", _jwe, "placed-jwe", needles=("eyJ",)),
        _scan_rule("jwt", _wrapped_jwt, "placed-wrapped-jwt", needles=("eyJ",)),
        _scan_rule("secret", _quoted_pairs, "placed-quoted-pair", needles=('":', "':", '" :', "' :", '\\":')),
        _scan_rule("secret", _name_values, "placed-name-value", needles=('alue"', 'String"')),
        _scan_rule("secret", _sensitive_values, "placed-sensitive", needles=("sensitive",)),
        _scan_rule("secret", _xml, "placed-xml", needles=("<",)),
        _scan_rule("secret", _lines, "placed-line", needles=("=", ":")),
        _scan_rule("secret", _tables, "placed-table", needles=("  ", "\t", "|", "│", "┃", "║")),
        _scan_rule("token", _headers, "placed-header", lower=True, needles=("-h", "--header")),
        _scan_rule("token", _queries, "placed-query", needles=("=",)),
        _scan_rule("password", _fixed(_PGPASS, "password"), "placed-pgpass", needles=(":",)),
        _scan_rule(
            "cookie", _fixed(_NETSCAPE, "cookie"), "placed-netscape-cookie", needles=("\tTRUE\t", "\tFALSE\t")
        ),
        _scan_rule("password", _crypt, "placed-crypt-hash", needles=("$",)),
        _scan_rule("password", _base64_credentials, "placed-base64-credentials", min_digits=0),
        _scan_rule("secret", _entropy, "entropy"),
    )
