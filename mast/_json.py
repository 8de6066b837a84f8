"""Canonical compact JSON for hashing and rendering, robust to values orjson refuses."""

from __future__ import annotations

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
        return json.dumps(value, default=str, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
