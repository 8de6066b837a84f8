"""OTLP/JSON values: ``AnyValue`` s, ``[{key, value}]`` lists, ids (hex or base64), timestamps and statuses."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from mast.normalize._common import parse_time

_HEX = re.compile(r"^[0-9a-fA-F]+$")


def any_value(value: Any) -> Any:
    """Decode an OTLP/JSON ``AnyValue`` (camelCase or snake_case keys) into a Python value."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "string_value"):
        if key in value:
            return value[key]
    for key in ("intValue", "int_value"):
        if key in value:
            try:
                return int(value[key])
            except (TypeError, ValueError):
                return value[key]
    for key in ("doubleValue", "double_value"):
        if key in value:
            try:
                return float(value[key])
            except (TypeError, ValueError):
                return value[key]
    for key in ("boolValue", "bool_value"):
        if key in value:
            return bool(value[key])
    for key in ("arrayValue", "array_value"):
        if key in value:
            return [any_value(v) for v in (value[key] or {}).get("values") or []]
    for key in ("kvlistValue", "kvlist_value"):
        if key in value:
            return key_values((value[key] or {}).get("values") or [])
    for key in ("bytesValue", "bytes_value"):
        if key in value:
            return value[key]
    return None if not value else value


def key_values(items: Iterable[Any]) -> dict[str, Any]:
    """OTLP ``[{key, value: AnyValue}]`` as a dict."""
    out: dict[str, Any] = {}
    for item in items or []:
        if isinstance(item, dict) and "key" in item:
            key, value = item["key"], item.get("value")
            # most attributes are strings: skip the call and the key probing for them
            out[key if type(key) is str else str(key)] = value["stringValue"] if type(value) is dict and "stringValue" in value else any_value(value)
    return out


def hex_id(value: Any) -> str | None:
    """A span or trace id as hex: OTLP/JSON ids are hex already; protobuf-JSON ids are base64."""
    if type(value) is str:
        known = _IDS.get(value)
        if known is None:
            if len(_IDS) >= _MAX_IDS:
                _IDS.clear()
            known = _IDS[value] = _hex_id(value)
        return known
    return _hex_id(value)


_IDS: dict[str, str | None] = {}
"""Ids already converted: every span repeats its trace id, and parents are named by many children."""
_MAX_IDS = 8192
"""Bounded: span ids never repeat, so the cache is emptied when full (a hot trace id costs one miss)."""


def _hex_id(value: Any) -> str | None:
    if value in (None, ""):
        return None
    text = str(value)
    if _HEX.match(text) and len(text) in (16, 32):
        return text.lower()
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        return text
    return raw.hex() if len(raw) in (8, 16) else text


def span_time(value: Any) -> datetime | None:
    """A span timestamp: nanoseconds (int or string), ISO text, or JS ``[seconds, nanos]``."""
    if type(value) is str and len(value) >= 19 and value.isdigit():
        # OTLP/JSON nanoseconds as text (what :func:`parse_time` does with them, without its probing)
        return datetime.fromtimestamp(float(value) / 1e9, tz=UTC)
    if isinstance(value, list | tuple) and len(value) == 2 and all(isinstance(v, int | float) for v in value):
        return parse_time(int(value[0]) * 1_000_000_000 + int(value[1]))
    return parse_time(value)


def status_of(status: Any) -> tuple[str | None, str | None]:
    """``(ok|error|None, message)`` from an OTLP / JS status (int codes or enum names)."""
    if not isinstance(status, dict):
        return None, None
    code = status.get("code")
    message = status.get("message") or None
    if code in (2, "2", "STATUS_CODE_ERROR", "ERROR"):
        return "error", message
    if code in (1, "1", "STATUS_CODE_OK", "OK"):
        return "ok", message
    return None, message
