"""Cheap checks on the first 64 KiB of a file, so detectors never parse a large file that is not theirs.

Detection asks every format in turn; a detector that calls ``raw.data()`` on a 200 MB file of
another format parses it whole (time and memory). Detectors of JSON formats call :func:`json_head`
first: it answers from the head alone whether the file may be theirs.
"""

from __future__ import annotations

import re
from typing import Any

from mast.errors import TraceFormatError
from mast.normalize.base import JsonlLineError, RawInput

_OTLP_HEAD = re.compile(r'^\s*\[?\s*\{\s*"(resourceSpans|resource_spans)"')


def json_head(raw: RawInput, *needles: str) -> bool:
    """May ``raw`` be a JSON document holding one of ``needles``? Always true for in-memory objects.

    For files: the head must open a JSON object or array, must not be an OTLP envelope, and must
    contain one of ``needles`` (literal text such as ``'"role"'``).
    """
    if raw.path is None:
        return True
    head = raw.head.lstrip("\ufeff").lstrip()
    if head[:1] not in ("[", "{") or _OTLP_HEAD.match(head):
        return False
    return not needles or any(needle in head for needle in needles)


def sniffed_json(raw: RawInput, *needles: str) -> Any | None:
    """The parsed document when :func:`json_head` lets it through and it parses, else ``None``.

    JSONL documents come back as their list of records with unparseable lines left out, which is
    what every detector wants to look at.
    """
    if not json_head(raw, *needles):
        return None
    try:
        data = raw.data()
    except TraceFormatError:
        return None
    if raw.kind == "jsonl" and isinstance(data, list):
        return [record for record in data if not isinstance(record, JsonlLineError)]
    return data


def text_document(raw: RawInput) -> str | None:
    """The whole input as text when it is a text log (neither JSON nor YAML), else ``None``."""
    try:
        data = raw.data()
    except TraceFormatError:
        return None
    return data if raw.kind == "text" and isinstance(data, str) else None
