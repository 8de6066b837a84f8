"""The one reader of ``MAST_*`` environment variables: strict, with the rules of the flag each mirrors.

A value that is not understood is a one-line :class:`~mast.errors.UsageError` naming the variable and
what it accepts, never a silent default: ``MAST_REDACT=enabled`` must not switch redaction off.
Booleans accept the words click accepts for a flag's variable (``MAST_DEBUG``), so every boolean
variable reads the same. An empty variable counts as unset.

Example:
    >>> parse_bool("MAST_HINTS", "off")
    False
    >>> parse_number("MAST_TIMEOUT", "30", float, minimum=0, min_open=True)
    30.0
"""

from __future__ import annotations

import os
from typing import TypeVar

from mast.errors import UsageError

TRUE_WORDS = ("1", "true", "t", "yes", "y", "on")
"""What a boolean variable reads as on (case-insensitive, as click reads ``MAST_DEBUG``)."""
FALSE_WORDS = ("0", "false", "f", "no", "n", "off")
"""What a boolean variable reads as off."""

N = TypeVar("N", int, float)


def parse_bool(name: str, raw: str) -> bool:
    """``raw`` (the value of variable ``name``) as a boolean.

    Raises:
        UsageError: a word outside :data:`TRUE_WORDS` and :data:`FALSE_WORDS`.
    """
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise UsageError(
        f"{name}={raw!r} is not a recognised true/false value: use one of {', '.join(TRUE_WORDS)} "
        f"(on) or {', '.join(FALSE_WORDS)} (off)"
    )


def parse_number(
    name: str,
    raw: str,
    kind: type[N],
    *,
    minimum: float | None = None,
    min_open: bool = False,
    maximum: float | None = None,
    max_open: bool = False,
) -> N:
    """``raw`` as an ``int`` or ``float`` within the range of the flag it mirrors.

    Raises:
        UsageError: not a number of that kind, or out of range.
    """
    what = "a whole number" if kind is int else "a number"
    try:
        value = kind(raw.strip())
    except ValueError:
        raise UsageError(
            f"{name}={raw!r} is not {what}{_range(minimum, min_open, maximum, max_open)}"
        ) from None
    if kind is float and value != value:  # NaN passes every comparison below
        raise UsageError(f"{name}={raw!r} is not {what}{_range(minimum, min_open, maximum, max_open)}")
    low_bad = minimum is not None and (value <= minimum if min_open else value < minimum)
    high_bad = maximum is not None and (value >= maximum if max_open else value > maximum)
    if low_bad or high_bad:
        raise UsageError(
            f"{name}={raw!r} is out of range: use {what}{_range(minimum, min_open, maximum, max_open)}"
        )
    return value


def _range(minimum: float | None, min_open: bool, maximum: float | None, max_open: bool = False) -> str:
    parts = []
    if minimum is not None:
        parts.append(f"{'above' if min_open else 'at least'} {minimum:g}")
    if maximum is not None:
        parts.append(f"{'below' if max_open else 'at most'} {maximum:g}")
    return f" ({' and '.join(parts)})" if parts else ""


def env_value(name: str) -> str | None:
    """The variable's value, ``None`` when unset or empty."""
    raw = os.environ.get(name)
    return raw if raw not in (None, "") else None


def env_bool(name: str, default: bool) -> bool:
    """A boolean variable, ``default`` when unset (see :func:`parse_bool`)."""
    raw = env_value(name)
    return default if raw is None else parse_bool(name, raw)


def env_number(
    name: str,
    kind: type[N],
    default: N,
    *,
    minimum: float | None = None,
    min_open: bool = False,
    maximum: float | None = None,
) -> N:
    """A number variable, ``default`` when unset (see :func:`parse_number`)."""
    raw = env_value(name)
    if raw is None:
        return default
    return parse_number(name, raw, kind, minimum=minimum, min_open=min_open, maximum=maximum)


# -- variables no CLI option is bound to --------------------------------------------------------------
# Options bound to a variable are checked by click before a command runs. These few are read deep in a
# call (judge spans on the first judge call, the poll interval when a batch is submitted), where a bad
# value would surface only after traces were read and maybe judged; each has its reader here, used both
# where it is read and by the CLI's start-up check (:func:`check_direct_variables`).

JUDGE_SPANS_ENV = "MAST_OTEL_JUDGE_SPANS"
"""Record an OpenTelemetry span per judge call (a boolean)."""
BATCH_POLL_ENV = "MAST_BATCH_POLL_S"
"""Seconds between two polls of a running provider batch (at least 0)."""
LOCAL_THREADS_ENV = "MAST_LOCAL_THREADS"
"""llama.cpp threads for the local model (a whole number, at least 1)."""


def judge_spans_on() -> bool:
    """``MAST_OTEL_JUDGE_SPANS``, off when unset."""
    return env_bool(JUDGE_SPANS_ENV, False)


def batch_poll_seconds(default: float) -> float:
    """``MAST_BATCH_POLL_S``, ``default`` when unset."""
    return env_number(BATCH_POLL_ENV, float, default, minimum=0)


def local_threads() -> int | None:
    """``MAST_LOCAL_THREADS``, ``None`` when unset (the caller then counts idle cores)."""
    if env_value(LOCAL_THREADS_ENV) is None:
        return None
    return env_number(LOCAL_THREADS_ENV, int, 1, minimum=1)


def check_direct_variables() -> None:
    """Read every variable above once, so a bad value is one line before any work starts.

    Raises:
        UsageError: the first variable whose value is not understood.
    """
    judge_spans_on()
    batch_poll_seconds(0.0)
    local_threads()
