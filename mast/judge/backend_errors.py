"""How the backend reads a failed call: retry it, wait for it, or give up, and the one-line error.

Split out of :mod:`mast.judge.backend` (which calls it) to keep each module small; like the
backend, it is the only other place that knows litellm's exception classes.
"""

from __future__ import annotations

import email.utils
import re
import time
from typing import Any, Literal
from urllib.parse import urlsplit

from mast.errors import JudgeAPIError, JudgeSetupError, one_line
from mast.judge._litellm_offline import pin_offline
from mast.judge.config import SECRET_QUERY_WORDS, public_endpoint

pin_offline()  # before litellm is imported (see mast.judge._litellm_offline)

import litellm  # noqa: E402
from litellm.exceptions import (  # noqa: E402
    APIConnectionError,
    AuthenticationError,
    BadGatewayError,
    BadRequestError,
    ContextWindowExceededError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    Timeout,
)

__all__ = [
    "ErrorClass",
    "SetupReason",
    "classify_error",
    "retry_after_seconds",
    "setup_failure",
    "translate_error",
]

# --- error classification and translation ----------------------------------------------------------

ErrorClass = Literal["rate_limit", "transient", "fatal"]


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def classify_error(exc: BaseException) -> ErrorClass:
    """``rate_limit`` (429), ``transient`` (5xx, timeouts, connection errors) or ``fatal`` (the rest).

    A :func:`setup_failure` is fatal whatever status litellm gave it: the OpenAI client reports a
    missing key or a refused connection as HTTP 500, and retrying either cannot help.
    """
    if setup_failure(exc) is not None:
        return "fatal"
    status = _status(exc)
    if isinstance(exc, RateLimitError) or status == 429:
        return "rate_limit"
    if isinstance(exc, ContextWindowExceededError):
        return "fatal"
    if isinstance(exc, Timeout | APIConnectionError | InternalServerError):
        return "transient"
    if isinstance(exc, ServiceUnavailableError | BadGatewayError):
        return "transient"
    if status is not None and status >= 500:
        return "transient"
    if status is None and isinstance(exc, TimeoutError | ConnectionError):
        return "transient"
    return "fatal"


def retry_after_seconds(exc: BaseException) -> float | None:
    """The wait a 429/503 asked for (``retry-after-ms`` or ``Retry-After``, seconds or HTTP date)."""
    headers: Any = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        millis = headers.get("retry-after-ms")
        if millis is not None:
            return max(0.0, float(millis) / 1000.0)
        value = headers.get("retry-after")
    except Exception:  # headers of an unexpected type
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


SetupReason = Literal["auth", "permission", "unknown_model", "connection_refused", "not_json"]

# How the OpenAI client and litellm word a missing key (they raise it as a 500, or, for Anthropic,
# as a 401 although no request was sent).
_MISSING_KEY_TEXT = (
    "missing credentials",
    "api_key client option must be set",
    "no api key",
    "missing api key",
    "no key is set",
)
# A 200 whose body is not JSON (a proxy's or login portal's HTML page): the OpenAI client fails to
# parse it and litellm reports that as HTTP 500. Every call would get the same page.
_NOT_JSON_TEXT = ("expecting value: line 1 column 1",)
# With a text/html content type litellm words it "Empty or invalid response from LLM endpoint.
# Received: '<html>...'" (an InternalServerError, status 500): the received body is the tell.
_HTML_TEXT = ("received: '<", 'received: "<', "<html", "<!doctype")
_ENDPOINT_PATHS = ("/chat/completions", "/completions", "/messages", "/responses")
"""Paths the client adds to ``--api-base`` itself: a base ending in one names the endpoint twice."""
_REFUSED_TEXT = ("connection refused", "connect call failed")


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and the exceptions it was raised from (a few levels: litellm wraps the SDK wraps httpx)."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(seen) < 8 and current not in seen:
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def setup_failure(exc: BaseException) -> SetupReason | None:
    """Why every call to this model would fail, or ``None`` for an error worth retrying or per-trace.

    ``auth`` (no key, or a key refused: 401), ``permission`` (403), ``unknown_model`` (404, or a
    model string litellm has no provider for), ``connection_refused`` (nothing listens at the
    endpoint) and ``not_json`` (the endpoint answers with a page that is not JSON, such as a proxy's HTML).
    """
    if hasattr(exc, _REASON_ATTR):
        known: SetupReason | None = getattr(exc, _REASON_ATTR)
        return known
    reason = _setup_reason(exc)
    try:
        # Remembered on the exception: re-raising it later (tenacity's reraise) replaces its
        # __context__, and with it the ConnectionRefusedError underneath.
        setattr(exc, _REASON_ATTR, reason)
    except AttributeError:  # an exception type with __slots__
        pass
    return reason


_REASON_ATTR = "_mast_setup_reason"


def _setup_reason(exc: BaseException) -> SetupReason | None:
    chain = _chain(exc)
    text = " ".join(str(e) for e in chain).lower()
    status = _status(exc)
    if isinstance(exc, AuthenticationError) or status == 401 or any(t in text for t in _MISSING_KEY_TEXT):
        return "auth"
    if isinstance(exc, PermissionDeniedError) or status == 403:
        return "permission"
    if isinstance(exc, NotFoundError) or status == 404:
        return "unknown_model"
    if isinstance(exc, BadRequestError) and "llm provider not provided" in text:
        return "unknown_model"
    if any(isinstance(e, ConnectionRefusedError) for e in chain) or any(t in text for t in _REFUSED_TEXT):
        return "connection_refused"
    if any(t in text for t in _NOT_JSON_TEXT) or any(t in text for t in _HTML_TEXT):
        return "not_json"
    return None


def _missing_key_names(model: str) -> list[str]:
    try:
        found = litellm.validate_environment(model=model)
    except Exception:  # a model string litellm cannot place: no variable to name
        return []
    names = found.get("missing_keys") if isinstance(found, dict) else None
    return [str(n) for n in names] if isinstance(names, list) else []


def _provider_of(model: str, api_base: str | None) -> str:
    try:
        return str(litellm.get_llm_provider(model, api_base=api_base)[1])
    except Exception:  # no provider prefix litellm knows
        return model.split("/", 1)[0]


def setup_error(
    exc: BaseException,
    reason: SetupReason,
    *,
    model: str,
    api_base: str | None = None,
    api_key_given: bool = False,
    attempts: int = 1,
) -> JudgeSetupError:
    """The one-line :class:`JudgeSetupError` for a :func:`setup_failure`, saying what to change."""
    provider = _provider_of(model, api_base)
    status = _status(exc)
    detail = one_line(exc)
    if len(detail) > 200:
        detail = detail[:200] + "..."
    # litellm gives a missing Anthropic key status 401 though no request was sent: the words tell.
    key_missing = any(t in " ".join(str(e) for e in _chain(exc)).lower() for t in _MISSING_KEY_TEXT)
    endpoint = next((p for p in _ENDPOINT_PATHS if api_base and api_base.rstrip("/").endswith(p)), None)
    if reason == "auth" and not api_key_given and (status != 401 or key_missing):
        names = _missing_key_names(model)
        where = f"set {' or '.join(names)} or --api-key" if names else "pass --api-key (or MAST_API_KEY)"
        message = f"no API key for {provider}: {where}"
    elif reason == "auth":
        names = _missing_key_names(model) or ["MAST_API_KEY"]
        message = f"API key rejected by {provider} (HTTP {status or 401}) for {model}: check {names[0]} or --api-key"
    elif reason == "permission":
        message = f"permission denied by {provider} (HTTP 403) for {model}: the key may not have access to this model"
    elif reason == "unknown_model" and endpoint is not None:
        assert api_base is not None
        base = api_base.rstrip("/")[: -len(endpoint)]
        message = (
            f"--api-base {api_base} ends in {endpoint}, which the client adds itself (HTTP {status or 404}): "
            f"give the base URL, --api-base {base}"
        )
    elif reason == "unknown_model":
        message = f"unknown model {model!r} at {api_base or provider}: check the model name (litellm's provider/model form)"
    elif reason == "not_json" and any(t in " ".join(str(e) for e in _chain(exc)).lower() for t in _HTML_TEXT):
        message = (
            f"{api_base or provider} answered {model} with HTTP 200 and an HTML page, not JSON "
            "(a proxy login page or a wrong --api-base?)"
        )
    elif reason == "not_json":
        message = (
            f"{api_base or provider} answered {model} with a body that is not JSON (an HTML page from a proxy "
            "or login portal?): check --api-base and the network path to the provider"
        )
    else:
        message = f"cannot connect to {api_base or provider} for {model}: connection refused (is the server running?)"
    # The provider's own words help with a 401/403/404 (which key, which model); litellm's wrapper
    # text around a missing key or a refused connection adds nothing to the line above.
    worded = (
        reason == "permission"
        or (reason == "unknown_model" and endpoint is None)
        or (reason == "auth" and status == 401 and not key_missing)
    )
    return JudgeSetupError(
        _scrubbed(f"{message} [{detail}]" if worded else message, api_base),
        reason=reason,
        status_code=status,
        n_attempts=attempts,
    )


# A query value whose name says it is a secret (``?key=...``, ``&access_token=...``): litellm and
# httpx put the whole URL in their messages, and the user gave it in --api-base.
_QUERY_SECRET = re.compile(
    rf"([?&;][^=&\s]*(?:{SECRET_QUERY_WORDS})[^=&\s]*=)[^&\s'\"]+",
    re.IGNORECASE,
)


# A provider (or a proxy in front of it) that echoes the request in its error body: the headers that
# carry the key, a bare bearer token, and the key shapes providers give out.
_AUTH_HEADER = re.compile(
    r"""((?:proxy-)?authorization|x-api-key|api[-_]?key|x-goog-api-key|openai-api-key|anthropic-api-key)"""
    r"""(["']?[ \t]{0,4}[:=][ \t]{0,4}["']?)(?:(bearer|basic|token)[ \t]{1,4})?[^\s"',}\]]{1,4096}""",
    re.IGNORECASE,
)
_BEARER = re.compile(r"\b(bearer)[ \t]{1,4}[A-Za-z0-9._~+/=-]{8,4096}", re.IGNORECASE)
_KEY_SHAPES = re.compile(
    r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{16,4096}|\bAIza[0-9A-Za-z_-]{30,40}|\bgsk_[A-Za-z0-9]{20,4096}"
)


def _auth_scrubbed(text: str) -> str:
    """``text`` without the credentials an echoed request shows (``Authorization: Bearer ...``, ``x-api-key``, keys)."""
    text = _AUTH_HEADER.sub(
        lambda m: f"{m.group(1)}{m.group(2)}{m.group(3) + ' ' if m.group(3) else ''}***", text
    )
    text = _BEARER.sub(r"\1 ***", text)
    return _KEY_SHAPES.sub("***", text)


def _scrubbed(text: str, api_base: str | None) -> str:
    """``text`` with the endpoint as results record it (no user, password or secret query values)."""
    if api_base:
        shown = public_endpoint(api_base) or ""
        text = text.replace(api_base, shown).replace(api_base.rstrip("/"), shown)
        netloc = urlsplit(api_base).netloc
        if "@" in netloc:
            text = text.replace(netloc, netloc.rpartition("@")[2])
    return _auth_scrubbed(_QUERY_SECRET.sub(r"\1***", text))


def translate_error(
    exc: BaseException, *, model: str, attempts: int, api_base: str | None = None, api_key_given: bool = False
) -> JudgeAPIError:
    """One :class:`JudgeAPIError` for anything litellm (or the transport under it) raised."""
    if isinstance(exc, JudgeAPIError):
        return exc
    reason = setup_failure(exc)
    if reason is not None:
        return setup_error(
            exc, reason, model=model, api_base=api_base, api_key_given=api_key_given, attempts=attempts
        )
    status = _status(exc)
    kind = classify_error(exc)
    label = {
        "rate_limit": "rate limited",
        "transient": "temporary failure",
        "fatal": "request failed",
    }[kind]
    where = f"HTTP {status}" if status else type(exc).__name__
    if isinstance(exc, Timeout):
        # litellm gives a client-side timeout status 408, but no 408 was sent: nothing came back.
        label, where = "timed out", "no answer within the --timeout"
    message = one_line(exc)
    if len(message) > 300:
        message = message[:300] + "..."
    tries = f" after {attempts} attempt{'s' if attempts != 1 else ''}" if attempts else ""
    return JudgeAPIError(
        _scrubbed(f"{model}: {label} ({where}){tries}: {message}", api_base),
        status_code=status,
        n_attempts=attempts,
    )
