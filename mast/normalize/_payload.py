"""Containers that hold a trajectory or message list as a string: decode it, safely.

Frameworks and data sets store runs as text in many encodings: JSON text (sometimes encoded twice),
the Python ``repr`` of a message list (``[{'content': 'hi', 'role': 'user'}]``, with ``None`` and
single quotes), or a YAML-like dump (``- content: ...``; read by the ``ag2_yaml`` framework log).
:func:`decode_text` reads the first two; the result is plain JSON data (tuples and sets become
lists, bytes become text).

Python literals are read with :func:`ast.literal_eval`, never ``eval``, and only when the text is
smaller than :data:`~mast.caps.MAX_LITERAL_CHARS`, holds at most :data:`~mast.caps.MAX_LITERAL_ITEMS`
items and nests no deeper than :data:`MAX_DEPTH` (all counted on the raw text before parsing, so a
hostile input never reaches the parser's memory or its own recursion).
"""

from __future__ import annotations

import ast
import re
from typing import Any

import orjson

from mast.caps import MAX_LITERAL_CHARS, MAX_LITERAL_ITEMS, literal_items

MAX_DEPTH = 100
"""Deeper bracket nesting is refused before parsing."""
_BRACKETS = re.compile(r"[\[\]{}()]")
_OPEN = frozenset("[{(")


def bracket_depth(text: str) -> int:
    """The deepest bracket nesting in ``text``, counting brackets inside strings too (an upper bound)."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(text):
        if match.group() in _OPEN:
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth = max(0, depth - 1)
    return deepest


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON data: tuples and sets become lists, bytes text, other keys text."""
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if isinstance(value, dict):
        return {k if isinstance(k, str) else str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=repr) if isinstance(value, set | frozenset) else value
        return [plain(v, depth + 1) for v in items]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, complex):
        return str(value)
    return value


def decode_text(text: str) -> tuple[Any, str] | None:
    """``(value, encoding)`` for JSON text (``"json text"``) or a Python literal (``"python literal"``).

    ``None`` when the text opens no list or object, or reads as neither.
    """
    stripped = text.strip()
    if stripped[:1] not in ("[", "{"):
        return None
    try:
        return orjson.loads(stripped), "json text"
    except orjson.JSONDecodeError:
        pass
    if not literal_allowed(stripped):
        return None
    try:
        value = ast.literal_eval(stripped)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    if not isinstance(value, list | tuple | dict):
        return None
    return plain(value), "python literal"


def literal_allowed(text: str) -> bool:
    """Whether ``text`` is small, short of items and shallow enough to hand to ``ast.literal_eval``."""
    return len(text) <= MAX_LITERAL_CHARS and literal_items(text) <= MAX_LITERAL_ITEMS and bracket_depth(text) <= MAX_DEPTH


def literal_failure(text: str) -> str:
    """Why a text that opens like a list or object could not be read, for a warning (naming the cap it passed)."""
    stripped = text.strip()
    if len(stripped) > MAX_LITERAL_CHARS:
        return (f"not JSON, and too large ({len(stripped):,} chars) to try as a Python literal "
                f"(over the MAX_LITERAL_CHARS cap, {MAX_LITERAL_CHARS:,})")
    items = literal_items(stripped)
    if items > MAX_LITERAL_ITEMS:
        return (f"not JSON, and too many items ({items:,}) to try as a Python literal "
                f"(over the MAX_LITERAL_ITEMS cap, {MAX_LITERAL_ITEMS:,})")
    if bracket_depth(stripped) > MAX_DEPTH:
        return f"not JSON, and nested deeper than {MAX_DEPTH} levels"
    return "neither JSON nor a Python literal (truncated or malformed)"
