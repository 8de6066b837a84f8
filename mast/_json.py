"""Canonical compact JSON, the one way mast writes a value it hashes, keys or compares.

:func:`canonical` is the text (sorted keys, no whitespace, unknown types as ``str``) and
:func:`canonical_hash` its sha256: trace content hashes, judge cache keys, resume fingerprints, the
taxonomy fingerprint and redaction-pattern fingerprints all go through here, so two equal values
always give the same key wherever it is computed.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import orjson


def canonical(value: Any) -> str:
    """Sorted-key compact JSON text; unknown types become ``str``.

    orjson is fast but refuses integers beyond 64 bits and non-string dict keys it cannot coerce;
    those rare values go through the standard library instead of failing the trace.
    """
    try:
        return orjson.dumps(value, default=str, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()
    except (orjson.JSONEncodeError, TypeError):
        return json.dumps(_str_keys(value), default=str, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _str_keys(value: Any) -> Any:
    """``value`` with every dict key a string, as orjson writes them (mixed key types cannot be sorted)."""
    if isinstance(value, dict):
        return {str(k): _str_keys(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_str_keys(v) for v in value]
    return value


def canonical_hash(value: Any) -> str:
    """sha256 (hex) of :func:`canonical` ``value`` in UTF-8 (lone surrogates kept, not refused)."""
    return hashlib.sha256(canonical(value).encode("utf-8", "surrogatepass")).hexdigest()
