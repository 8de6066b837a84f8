"""General credential rules: where a secret sits, whatever provider issued it.

Provider token shapes come from gitleaks (:mod:`mast.redact.gitleaks`); these rules find secrets by
their place instead:

* ``cli-user``: ``curl -u user:PASS`` / ``--user user:PASS`` (the password part);
* ``cli-mysql-password``, ``cli-mariadb-password``, ``cli-sshpass-password``, ``cli-redis-cli-password``:
  ``mysql -pPASS`` (``mysqldump`` and the rest alike), ``sshpass -p PASS``, ``redis-cli -a PASS``;
* ``cli-registry-login-password``: ``docker login -u bot -p PASS`` (podman, nerdctl, buildah, skopeo,
  oras, helm registry);
* ``netrc-password``: a ``.netrc`` entry's password (``machine HOST login USER password PASS``, on one
  line or several);
* ``cli-flag``: ``--password=X``, ``--token X``, ``--api-key X``, ``--client-secret X``... (a flag
  whose name ends with a credential word);
* ``http-authorization``: ``Authorization:`` / ``Proxy-Authorization:`` with any scheme (``Token``,
  ``Digest``, ``Negotiate``, ``AWS4-HMAC-SHA256``...) or none: everything after the scheme (a
  parameter list to the end of the line); ``Basic`` and ``Bearer`` credentials of any length from 4
  (long ones also have their own rules in :mod:`mast.redact.rules`, which find them anywhere);
* ``cookie``: every value of a ``Cookie:`` header and the value of a ``Set-Cookie:`` (not its
  attributes);
* ``url-bot-token``: ``/bot<id>:<token>/`` (Telegram's bot API);
* ``url-path-token``: a generated-looking path segment after ``/token/``, ``/key/``, ``/secret/``,
  ``/auth/``, ``/webhooks/<id>/``...;
* ``teams-webhook``: the id and GUID after ``/IncomingWebhook/`` of a Microsoft Teams webhook URL;
* ``named-setting``: a secret-named variable set without ``=``: Dockerfile ``ENV DB_PASSWORD value``,
  fish ``set -gx OPENAI_API_KEY value``, ``aws configure set aws_secret_access_key VALUE``, ``setx``;
* ``prose-secret``: a generated-looking 40-character base64 token (an AWS secret access key's size)
  right after a secret word in prose: ``with secret X``, ``the secret access key is X``, ``password: X``;
* ``k8s-env-value``: a Kubernetes env pair, ``- name: DB_PASSWORD`` then ``value: ...``;
* ``config-blob``: base64 under credential-named keys of YAML, JSON or INI files: a kubeconfig's
  ``client-key-data``, a Docker config's ``auth`` (base64 of ``user:password``) and
  ``identitytoken``, Kubernetes' ``tls.key`` and ``ssh-privatekey``;
* ``der-private-key``: a private key in DER, base64-encoded without PEM armour (RSA PKCS#1 and
  PKCS#8, EC, Ed25519), recognised by the fixed bytes every such key starts with.

Every repetition is bounded or possessive and every pattern starts with a literal, so each rule
reads the text once (see :class:`mast.redact.rules.Rule`).

Example:
    >>> from mast.redact import redact_text
    >>> redact_text("mysql -u deploy -phunter2 shop").text
    'mysql -u deploy -p[REDACTED:password] shop'
"""

from __future__ import annotations

import base64
import binascii
import re

from mast.redact.rules import Rule, is_generated, token_start

__all__ = ["general_rules"]

_PLACEHOLDER_STARTS = ("$", "%", "{{", "<", "[redacted", "***", "...", "${", "env:", "vault:")


def _placeholder(value: str) -> bool:
    lowered = value.lower()
    return not value or lowered.startswith(_PLACEHOLDER_STARTS) or len(set(lowered)) == 1


def _space_before(text: str, start: int) -> bool:
    return start == 0 or text[start - 1] in " \t\n\r\"'`=(["


# --- command lines -----------------------------------------------------------------------------

_CLI_USER = re.compile(r"-(?:u|-user)(?:[ \t]{1,4}|=)[\"']?[^\s:\"']{1,128}:(?P<secret>[^\s\"']{1,256})")


def _cli_user(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    if not _space_before(text, match.start()):
        return None
    start, end = match.span("secret")
    value = text[start:end]
    if _placeholder(value) or value.startswith("//"):  # "-u host://..." is not user:password
        return None
    return "password", start, end


# One pattern per program, each starting with its name (a literal: re jumps between occurrences).
_CLI_PROGRAMS = (
    re.compile(r"mysql(?:dump|admin|import|check|sh)?\b[^\n|;&]{0,200}?[ \t]-p[\"']?(?P<secret>[^\s\"'-][^\s\"']{0,127})"),
    re.compile(r"mariadb(?:-dump|-admin)?\b[^\n|;&]{0,200}?[ \t]-p[\"']?(?P<secret>[^\s\"'-][^\s\"']{0,127})"),
    re.compile(r"sshpass[ \t]{1,4}-p[ \t]{0,4}[\"']?(?P<secret>[^\s\"'-][^\s\"']{0,127})"),
    re.compile(r"redis-cli\b[^\n|;&]{0,200}?[ \t]-a[ \t]{1,4}[\"']?(?P<secret>[^\s\"'-][^\s\"']{0,255})"),
)


# "docker login -u bot -p PASS registry" (podman, nerdctl, buildah, skopeo alike; --password has cli-flag)
_REGISTRY_LOGIN = re.compile(
    r"(?:docker|podman|nerdctl|buildah|skopeo|oras|helm[ \t]{1,4}registry)[ \t]{1,4}login\b[^\n|;&]{0,200}?"
    r"[ \t]-p[ \t]{1,4}[\"']?(?P<secret>[^\s\"'-][^\s\"']{0,255})"
)
# A .netrc entry, on one line or several: "machine HOST login USER password PASS" ("default" for any
# host); the login makes it one ("the machine password" in prose has none).
_NETRC = re.compile(
    r"(?:machine[ \t]{1,16}[^\s]{1,253}|default)(?:\s{1,16}(?:login|account|port)[ \t]{1,16}[^\s]{1,256}){1,3}"
    r"\s{1,16}password[ \t]{1,16}(?P<secret>[^\s]{1,256})"
)


def _cli_program(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    if match.start() > 0 and (text[match.start() - 1].isalnum() or text[match.start() - 1] in "_-"):
        return None
    start, end = match.span("secret")
    if _placeholder(text[start:end]):
        return None
    return "password", start, end


_CLI_FLAG = re.compile(
    r"-(?<![\w-].)-(?P<name>[a-z0-9_-]{0,30}?(?:password|passwd|passphrase|token|secret|api[_-]?key|access[_-]?key"
    r"|secret[_-]?key|private[_-]?key|auth[_-]?key|client[_-]?secret|(?<=[-_])(?:pass|pwd)))(?P<tail>[a-z0-9_-]{0,20})"
    r"(?:(?P<sep>=)[\"']?(?P<secret>[^\s\"']{1,512})|[ \t]{1,4}[\"']?(?P<spaced>[^\s\"'\-][^\s\"']{0,511}))"
)
_FLAG_TAILS = frozenset({"", "-value", "_value", "s"})


def _cli_flag(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    if not _space_before(text, match.start()) or match.group("tail") not in _FLAG_TAILS:
        return None  # --token-file, --password-stdin: about a secret, not one
    start, end = match.span("secret" if match.group("sep") else "spaced")
    value = text[start:end]
    if _placeholder(value):
        return None
    name = match.group("name")
    if name.endswith("pwd") and value.startswith(("/", "~", "./", "../")):
        return None  # --pwd /home/me: a working directory, not a password
    kind = (
        "password"
        if "pass" in name or name.endswith("pwd")
        else "token"
        if "token" in name
        else "secret"
        if "secret" in name
        else "api_key"
    )
    return kind, start, end


# --- HTTP ---------------------------------------------------------------------------------------

# The scheme, then one credential token; Basic and Bearer are left to their own rules in the pattern
# (cheap to reject), and the parameter lists of Digest-like schemes are read on in Python.
# The look-behind skips "authorization" inside a longer word in the search itself (the check
# rejects it anyway): each lead-in otherwise read its 8 KB of value first, on packed text 4 s/MB.
_AUTHORIZATION = re.compile(
    r"authori(?<![a-z0-9_]authori)[sz]ation[\"']?[ \t]{0,3}[:=][ \t]{0,3}[\"']?"
    r"(?P<value>[^\s\"'\\]{1,8192}(?:[ \t]{1,4}[^\s\"'\\]{1,8192})?)"
)
# The IANA registry of HTTP authentication schemes, and the ones APIs commonly use besides.
_SCHEMES = frozenset(
    {"digest", "dpop", "gnap", "hoba", "mutual", "negotiate", "ntlm", "oauth", "privatetoken",
     "scram-sha-1", "scram-sha-256", "vapid", "aws4-hmac-sha256", "token", "apikey", "api-key", "key",
     "ssws", "splunk", "jwt", "mac", "hawk", "signature", "kerberos", "sso-key", "klaviyo-api-key",
     "client-id", "sharedkey", "sharedkeylite", "otp", "access_token", "dsn", "gtoken", "upload"}
)


# Words that follow "Authorization: Bearer" in prose and docs, not credentials.
_NOT_CREDENTIALS = frozenset(
    {"token", "tokens", "header", "required", "missing", "invalid", "expired", "none", "null", "undefined",
     "scheme", "authentication", "credentials", "value", "string", "your", "the", "with", "auth"}
)


def _authorization(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start = match.start()
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        return None  # inside a longer word ("preauthorization: ...")
    value_start, value_end = match.span("value")
    value = text[value_start:value_end].rstrip(" \t,;")
    value_end = value_start + len(value)
    words = value.split(None, 1)
    if not words:
        return None
    scheme = words[0].lower()
    if scheme in ("basic", "bearer"):
        # Their own rules find long ones anywhere; after "Authorization:" a short one is one too.
        if len(words) < 2:
            return None
        credential = words[1].split()[0]
        if len(credential) < 4 or _placeholder(credential) or credential.lower() in _NOT_CREDENTIALS:
            return None
        if scheme == "basic" and b":" not in (_base64_bytes(credential) or b""):
            return None  # Basic carries base64 of user:password ("Basic realm" does not)
        secret_start = value_start + value.index(credential, len(words[0]))
        return ("password" if scheme == "basic" else "token"), secret_start, secret_start + len(credential)
    if len(words) == 2 and scheme in ("digest", "mutual", "hoba", "signature", "aws4-hmac-sha256", "goog4-rsa-sha256", "goog4-hmac-sha256"):
        # parameter lists with quoted values ("username=..., response=..."): the rest of the line
        line_end = text.find("\n", value_start, value_start + 2048)
        value_end = line_end if line_end >= 0 else min(len(text), value_start + 2048)
        value = text[value_start:value_end].rstrip(" \t\r,;'")
        value_end = value_start + len(value)
    if len(words) == 2:
        secret_start = value_start + value.index(words[1], len(words[0]))
        rest = words[1]
        if _placeholder(rest):
            return None
        if scheme not in _SCHEMES and not (is_generated(rest.split()[0]) or len(rest.split()[0]) >= 20):
            return None  # "Authorization: required for this endpoint"
        return "token", secret_start, value_end
    credential = words[0]
    if _placeholder(credential) or not (is_generated(credential) or len(credential) >= 24 and any(c.isdigit() for c in credential)):
        return None
    return "token", value_start, value_start + len(credential)


# A header's value is read only when a name=value pair starts it (cheap to reject otherwise).
_COOKIE = re.compile(
    r"(?P<name>set-cookie|cookie)[\"']?[ \t]{0,3}[:=][ \t]{0,3}[\"']?(?=[^\s=;,\"']{1,256}=)(?P<value>[^\r\n\"'\\]{1,4096})"
)


def _cookie(match: re.Match[str], text: str) -> list[tuple[str, int, int]] | None:
    start = match.start()
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] == "_"):
        if not (match.group("name") == "cookie" and text[start - 1] == "."):  # document.cookie
            return None
    position = match.start("value")
    # Pairs are split by hand: http.cookies.SimpleCookie drops a whole header on one odd pair,
    # and a redactor must not keep a header because it is malformed.
    found: list[tuple[str, int, int]] = []
    for part in match.group("value").split(";"):
        equals = part.find("=")
        if equals > 0 and part[:equals].strip() and " " not in part[:equals].strip():
            value = part[equals + 1 :].strip()
            value_start = position + equals + 1 + (len(part[equals + 1 :]) - len(part[equals + 1 :].lstrip()))
            if value and not _placeholder(value):
                found.append(("cookie", value_start, value_start + len(value)))
        position += len(part) + 1
        if match.group("name") == "set-cookie":
            break  # the rest are attributes: Path, Expires, HttpOnly...
    return found or None


# --- URLs ---------------------------------------------------------------------------------------

_BOT_TOKEN = re.compile(r"/bot(?P<secret>\d{5,16}:[A-Za-z0-9_\-]{30,64}+)")
_PATH_TOKEN = re.compile(
    r"/(?:tokens?|api[_-]?keys?|keys?|secrets?|access[_-]?tokens?|auth|passwords?|webhooks/\d{5,25})"
    r"/(?P<secret>[a-z0-9_\-.~%]{16,256}+)"
)
_ID_SHAPED = re.compile(
    r"[0-9a-fA-F]{7,128}|[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


def _path_token(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start, end = match.span("secret")
    value = text[start:end]
    if _ID_SHAPED.fullmatch(value) or not (is_generated(value) or any(c.isdigit() for c in value) and len(value) >= 32):
        return None  # /keys/<sha>, /auth/callback-handler: not a credential
    return "token", start, end


# Teams incoming webhooks (old outlook.office.com and new webhookb2 hosts): what follows
# /IncomingWebhook/ is the credential: a 32-character id (hex in old URLs; base62 in new ones, where
# the creator's GUID must follow), the GUID and, in new URLs, a "V2" signature segment.
_TEAMS_WEBHOOK = re.compile(
    r"(?:webhook\.office\.com/webhookb2|outlook\.office(?:365)?\.com/webhook)/[^\s/]{1,200}/IncomingWebhook/"
    r"(?P<secret>[0-9a-fA-F]{32}(?:/[0-9a-fA-F\-]{36})?(?:/V2[0-9A-Za-z_\-]{8,128})?"
    r"|[0-9A-Za-z]{32}/[0-9a-fA-F\-]{36}(?:/V2[0-9A-Za-z_\-]{8,128})?)"
)


# --- configuration files ------------------------------------------------------------------------

# A secret-named variable set without "=": Dockerfile "ENV DB_PASSWORD value", fish "set -gx
# OPENAI_API_KEY value", "aws configure set aws_secret_access_key VALUE", Windows "setx NAME value",
# and a Kubernetes env pair ("- name: DB_PASSWORD" then "value: ...").
_NAMED_SETTING = re.compile(
    r"(?:ENV|set(?:[ \t]{1,4}-[gUxlu]{1,4}){1,3}|aws[ \t]{1,4}configure[ \t]{1,4}set|setx)[ \t]{1,4}"
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,64})[ \t]{1,4}[\"']?(?P<secret>[^\s\"'=][^\s\"']{0,511})"
)
_K8S_ENV = re.compile(
    r"name:[ \t]{1,4}[\"']?(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,64})[\"']?[ \t]{0,4}\r?\n[ \t]{0,32}"
    r"value:[ \t]{1,4}[\"']?(?P<secret>[^\s\"'][^\s\"']{0,511})"
)
_SECRET_NAME = re.compile(
    r"(?:password|passwd|passphrase|secret|token|api_?key|access_?key|private_?key|auth_?key|credentials?)"
    r"(?:_?(?:value|string|b64|base64))?[0-9_]*$",
    re.I,
)


def _named_setting(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start = match.start()
    if start > 0 and text[start - 1] not in " \t\n\r;&|(":
        return None  # "RESET", "offset", "envName": inside a word
    name = match.group("name")
    if _SECRET_NAME.search(name) is None:
        return None  # PATH, DB_PASSWORD_FILE, max_tokens_limit
    secret_start, secret_end = match.span("secret")
    value = text[secret_start:secret_end]
    lowered = name.lower()
    kind = "password" if "pass" in lowered else "token" if "token" in lowered else "secret" if "secret" in lowered else "api_key"
    if _placeholder(value) or kind != "password" and len(value) < 8:
        return None
    return kind, secret_start, secret_end


# --- prose ------------------------------------------------------------------------------------

# A generated-looking 40-character token a few words after a secret word, as people write it in
# prose and commands: "with secret wJal...", "the secret access key is ...", "secret key: ...".
# 40 base64 characters is the size of an AWS secret access key and of many other providers' secrets;
# the entropy fallback may be off (Redactor(entropy=False)), and the place says enough.
_PROSE_SECRET = re.compile(
    r"(?:secret|password|passwd|credential)s?(?:[ \t_-]{1,2}(?:access[ \t_-]{1,2})?key)?"
    r"(?:[ \t]{0,4}(?:is|was|of|to|as|=|:|=>|->)){0,2}[ \t]{1,4}[\"'`]?"
    r"(?P<secret>[a-z0-9+/]{40})(?![a-z0-9+/=_\-])"
)


def _prose_secret(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start, end = match.span("secret")
    if match.start() > 0 and text[match.start() - 1].isalnum():
        return None  # "mysecretsauce": inside a word
    value = text[start:end]
    if not is_generated(value) or _ID_SHAPED.fullmatch(value) or len(set(value)) < 16:
        return None  # a word run, a git sha, "secret of 0000..."
    return "secret", start, end


# A password named in prose, then the password itself: "logged in with the password LW7D...",
# "the passphrase is 'x9!...'". Unlike a 40-character secret, a password has no size, so the place
# must be backed by the value's look: a generated-looking run (mixed letter case, digits or symbols),
# never a plain word ("the password reset flow") or a constant's name.
_PROSE_PASSWORD = re.compile(
    r"(?:password|passwd|passphrase)(?:[ \t]{0,4}(?:is|was|of|to|as|=|:|=>|->)){0,2}[ \t]{1,4}[\"'`]?"
    r"(?P<secret>[a-z0-9!#$%&*+\-/=?@^_~.]{8,64})(?![a-z0-9!#$%&*+\-/=?@^_~])"
)


def _prose_password(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    if match.start() > 0 and text[match.start() - 1].isalnum():
        return None  # "newpassword": inside a word
    start, end = match.span("secret")
    while end > start and text[end - 1] == ".":
        end -= 1  # the sentence's full stop
    value = text[start:end]
    if len(value) < 8 or _placeholder(value) or _ID_SHAPED.fullmatch(value) or not is_generated(value):
        return None
    return "password", start, end


# --- configuration files (base64 blobs) ---------------------------------------------------------

_CONFIG_BLOB = re.compile(
    r"(?P<name>client-key-data|client_key_data|token-data|identitytoken|registrytoken|auth|\.dockerconfigjson"
    r"|tls\.key|ssh-privatekey|private_key_data|privatekeydata)"
    r"[\"']?[ \t]{0,3}[:=][ \t]{0,3}[\"']?(?P<secret>[a-z0-9+/_\-]{4,65536}+={0,2})"
)


_CONFIG_NAMES = (
    "client-key-data", "client_key_data", "token-data", "identitytoken", "registrytoken", "auth",
    "dockerconfigjson", "tls.key", "ssh-privatekey", "private_key_data", "privatekeydata",
)


def _base64_bytes(value: str) -> bytes | None:
    try:
        return base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        try:
            return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
        except (binascii.Error, ValueError):
            return None


def _config_blob(match: re.Match[str], text: str) -> tuple[str, int, int] | None:
    start = match.start()
    if start > 0 and (text[start - 1].isalnum() or text[start - 1] in "_-"):
        return None  # oauth:, author:, x-auth: (those are other rules' business)
    name = match.group("name")
    secret_start, secret_end = match.span("secret")
    value = text[secret_start:secret_end]
    if name == "auth":
        decoded = _base64_bytes(value) if len(value) >= 8 else None
        if not decoded or b":" not in decoded:
            return None  # "auth: true", "auth: oauth2": only base64 of user:password
        return "password", secret_start, secret_end
    if len(value) < 16 or _placeholder(value):
        return None
    if name in ("identitytoken", "registrytoken"):
        return "token", secret_start, secret_end
    if _base64_bytes(value) is None:
        return None
    return ("private_key" if "key" in name else "secret"), secret_start, secret_end


_DER_KEY = re.compile(
    token_start(
        r"M(?:II[A-Za-z0-9+/]{3}IBA(?:AK[BC]|DANBgkqhkiG9w0B)|HcCAQEE|IGkAgEBBD|IHcAgEBBE"
        r"|I[A-Za-z0-9+/]{2}AgEAMB[AM]GByqGSM49AgEG|C4CAQAwBQYDK2VwBCIEI)"
        r"(?:[A-Za-z0-9+/]|\\n|\r?\n)*+={0,2}"
    )
)


def general_rules() -> tuple[Rule, ...]:
    """The rules of this module (see the module docstring), in the order they apply."""
    return (
        Rule("password", _CLI_USER, check=_cli_user, needles=("-u", "--user"), name="cli-user"),
        *(
            Rule("password", pattern, check=_cli_program, needles=(program,), name=f"cli-{program}-password")
            for pattern, program in zip(_CLI_PROGRAMS, ("mysql", "mariadb", "sshpass", "redis-cli"), strict=True)
        ),
        Rule("password", _REGISTRY_LOGIN, check=_cli_program, needles=("login",), name="cli-registry-login-password"),
        Rule("password", _NETRC, check=_cli_program, needles=("machine", "default"), name="netrc-password"),
        Rule("secret", _CLI_FLAG, check=_cli_flag, lower=True, needles=("--",), name="cli-flag"),
        Rule("token", _AUTHORIZATION, check=_authorization, lower=True, needles=("authori",), name="http-authorization"),
        Rule("cookie", _COOKIE, check=_cookie, lower=True, needles=("cookie",), name="cookie"),
        Rule("token", _BOT_TOKEN, group="secret", needles=("/bot",), name="url-bot-token"),
        Rule("token", _PATH_TOKEN, check=_path_token, lower=True, needles=("/",), name="url-path-token"),
        Rule("token", _TEAMS_WEBHOOK, group="secret", needles=("IncomingWebhook/",), name="teams-webhook"),
        Rule("secret", _NAMED_SETTING, check=_named_setting, needles=("ENV", "set"), name="named-setting"),
        Rule("secret", _K8S_ENV, check=_named_setting, needles=("value:",), name="k8s-env-value"),
        Rule("secret", _PROSE_SECRET, check=_prose_secret, lower=True, needles=("secret", "passw", "credential"), name="prose-secret"),
        Rule("password", _PROSE_PASSWORD, check=_prose_password, lower=True, needles=("passw", "passph"), name="prose-password"),
        Rule("secret", _CONFIG_BLOB, check=_config_blob, lower=True, needles=_CONFIG_NAMES, name="config-blob"),
        Rule("private_key", _DER_KEY, needles=("MII", "MHc", "MC4"), name="der-private-key"),
    )
