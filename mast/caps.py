"""How much one input may cost in memory: the caps that keep a small hostile file from taking a machine.

A few megabytes can expand into gigabytes: a gzip bomb in a recorded HTTP body (1,000 to 1), a
Python literal of empty lists (the parser builds a node for each, ~1.4 KB), a record of millions of
empty steps (a :class:`~mast.trace.Step` each). An out-of-memory kill ends the whole batch, not
one file, so each expansion is bounded *before* it happens, and a file over a cap fails alone
with one line that names the cap, e.g. ``run.json: 2,700,000 steps, over MAX_STEPS_PER_TRACE
(100,000) ...``. Every reader that decompresses, parses literals or builds steps uses these
names, so the figures live in one place (SECURITY.md quotes them).

Example:
    >>> len(decompress(__import__("gzip").compress(b"hello")))
    5
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

__all__ = [
    "MAX_DECOMPRESSED_BYTES",
    "MAX_EXPANDED_BYTES_PER_FILE",
    "MAX_JSON_DEPTH",
    "MAX_LITERAL_CHARS",
    "MAX_LITERAL_ITEMS",
    "MAX_STEPS_PER_TRACE",
    "CapExceeded",
    "FileBudget",
    "charge",
    "charging",
    "check_more_steps",
    "check_steps",
    "decompress",
    "decompress_prefix",
    "literal_items",
]

MAX_DECOMPRESSED_BYTES = 32 * 2**20
"""Most bytes a compressed body (gzip, zlib, deflate) may expand to: 32 MiB (a recorded HTTP body
past it is cut there with a note, :mod:`mast.normalize._vcr`; :func:`decompress` refuses it)."""
MAX_EXPANDED_BYTES_PER_FILE = 32 * 2**20
"""Most bytes one input file may expand to, all its expansions together: 32 MiB of decompressed
bodies and zip members, and of text put back from attachment references (:class:`FileBudget`). A
per-body cap alone lets 40 bombs of 32 MiB in one file take 1.3 GB."""
MAX_LITERAL_CHARS = 4 * 2**20
"""Longest text tried as a Python literal (``ast.literal_eval``): 4 Mi characters."""
MAX_LITERAL_ITEMS = 100_000
"""Most items (brackets, commas, colons: an upper bound on the parser's nodes) a Python literal may
hold before it is parsed. The parser takes ~1.4 KB per item, so this bounds it near 150 MB."""
MAX_STEPS_PER_TRACE = 100_000
"""Most steps one trace may have; the longest real runs in the sample corpus have a few thousand."""


MAX_JSON_DEPTH = 1_024
"""Deepest JSON nesting read (orjson's own limit; past it a file is "nested too deeply")."""


class CapExceeded(ValueError):
    """An input would expand past a cap; the message names the cap and its figure.

    A ``ValueError``, so the readers' one-line error handling takes it as it takes bad input.
    """

    def __init__(self, cap: str, figure: int, what: str) -> None:
        super().__init__(f"{what}: over the {cap} cap ({figure:,})")
        self.cap = cap
        self.figure = figure


class FileBudget:
    """What one input file has expanded to so far, charged as each expansion grows.

    Every reader that decompresses or copies (gzip bodies, zip members, attachment references)
    charges the bytes it makes, while it makes them, to the budget of the file being read (see
    :func:`charging`), so the whole file, not each piece, is held to :data:`MAX_EXPANDED_BYTES_PER_FILE`.

    Example:
        >>> budget = FileBudget(limit=10)
        >>> budget.charge(8, "a body")
        >>> budget.left
        2
    """

    def __init__(self, limit: int = MAX_EXPANDED_BYTES_PER_FILE) -> None:
        self.limit = limit
        self.used = 0

    @property
    def left(self) -> int:
        """Bytes the file may still expand to."""
        return max(self.limit - self.used, 0)

    def charge(self, count: int, what: str) -> None:
        """Count ``count`` more bytes made by ``what``.

        Raises:
            CapExceeded: the file's expansions together pass the limit (named ``MAX_EXPANDED_BYTES_PER_FILE``).
        """
        self.used += count
        if self.used > self.limit:
            raise CapExceeded(
                "MAX_EXPANDED_BYTES_PER_FILE", self.limit, f"{what}: the file expands to more than its budget"
            )


_BUDGET: ContextVar[FileBudget | None] = ContextVar("mast_file_budget", default=None)


@contextmanager
def charging(budget: FileBudget | None) -> Iterator[FileBudget | None]:
    """While the block runs, expansions are charged to ``budget`` (``None``: to none, e.g. a live sample)."""
    token = _BUDGET.set(budget)
    try:
        yield budget
    finally:
        _BUDGET.reset(token)


def charge(count: int, what: str) -> None:
    """Charge ``count`` bytes made by ``what`` to the file being read, if any (see :class:`FileBudget`).

    Raises:
        CapExceeded: over the file's budget.
    """
    budget = _BUDGET.get()
    if budget is not None:
        budget.charge(count, what)


def _budget_left() -> int | None:
    budget = _BUDGET.get()
    return None if budget is None else budget.left


def check_steps(count: int, what: str = "the trace") -> None:
    """Raise when ``count`` steps are more than :data:`MAX_STEPS_PER_TRACE`.

    Raises:
        CapExceeded: naming ``MAX_STEPS_PER_TRACE``.
    """
    if count > MAX_STEPS_PER_TRACE:
        raise CapExceeded("MAX_STEPS_PER_TRACE", MAX_STEPS_PER_TRACE, f"{what} has {count:,} steps")


def check_more_steps(count: int) -> None:
    """Raise when a reader building steps one by one is about to add one past the cap (``count`` built so far).

    Raises:
        CapExceeded: naming ``MAX_STEPS_PER_TRACE``.
    """
    if count >= MAX_STEPS_PER_TRACE:
        raise CapExceeded("MAX_STEPS_PER_TRACE", MAX_STEPS_PER_TRACE, "the trace has more steps than the cap")


def decompress(data: bytes, *, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """``data`` (gzip, zlib or raw deflate; gzip members one after another too) decompressed, at most ``limit`` bytes.

    Decompresses in bounded pieces, so a bomb stops at the cap instead of filling memory.

    Raises:
        CapExceeded: the data expands past ``limit`` (:data:`MAX_DECOMPRESSED_BYTES`).
        zlib.error: the data is not compressed data.
    """
    out, cut = decompress_prefix(data, limit=limit)
    if cut:
        raise CapExceeded("MAX_DECOMPRESSED_BYTES", limit, "a compressed body expands too far")
    return out


def decompress_prefix(data: bytes, *, limit: int = MAX_DECOMPRESSED_BYTES) -> tuple[bytes, bool]:
    """The first ``limit`` bytes ``data`` decompresses to (as :func:`decompress`), and whether it holds more.

    Raises:
        zlib.error: the data is not compressed data.
    """
    if data[:2] == b"\x1f\x8b":
        wbits = 16 + zlib.MAX_WBITS
    elif data[:1] == b"\x78":
        wbits = zlib.MAX_WBITS
    else:
        wbits = -zlib.MAX_WBITS
    out = bytearray()
    left = _budget_left()
    # Past the file's budget the file fails (raise); past ``limit`` only this body is cut. The
    # budget is checked on every bounded piece, so neither grows past its figure first.
    room = limit if left is None else min(limit, left)
    rest = data
    cut = False
    while rest and not cut:
        engine = zlib.decompressobj(wbits)
        chunk = rest
        while chunk:
            out += engine.decompress(chunk, room + 1 - len(out))
            if len(out) > room:
                cut = True
                break
            chunk = engine.unconsumed_tail
        if cut:
            break
        rest = engine.unused_data if engine.eof else b""
        if not engine.eof:
            out += engine.flush(room + 1 - len(out))
            cut = len(out) > room
    if cut and room < limit:
        charge(len(out), "a compressed body")  # over the file's budget: raises
    del out[limit:]
    charge(len(out), "a compressed body")
    return bytes(out), cut


def literal_items(text: str) -> int:
    """An upper bound on the items of a literal: brackets, commas and colons (those inside strings too)."""
    return sum(map(text.count, "[{(,:"))
