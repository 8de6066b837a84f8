"""Pieces several CLI commands share (console, JSON output)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from mast._outputs import terminal_safe


class SafeConsole(Console):
    """A rich console that shows control characters in what it prints as escapes (``\\x1b``).

    Trace ids, agent names, file names and error messages come from the traces: an ESC sequence
    among them would clear the screen or set the terminal's title. Every text segment is escaped
    here, at the one place all output passes (tables, progress bars and live displays included);
    the console's own control segments (cursor moves of a progress bar) are left as they are.
    """

    def render_str(self, text: str, **options: Any) -> Text:
        # rich drops BEL, backspace, CR and form feeds from a string as it makes it a Text: escaped
        # first, so they show (``\\x07``) instead of vanishing and joining what was around them.
        return super().render_str(terminal_safe(text, keep_lines=True, keep_backslashes=True), **options)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None and segment.text and not segment.text.isprintable():
                yield Segment(terminal_safe(segment.text, keep_lines=True, keep_backslashes=True), segment.style)
            else:
                yield segment


stdout = SafeConsole(soft_wrap=True)
stderr = SafeConsole(stderr=True, soft_wrap=True)


def safe_text(text: str, **options: Any) -> Text:
    """A rich ``Text`` of ``text`` with its control characters shown (``Text`` itself drops some)."""
    return Text(terminal_safe(text, keep_lines=True, keep_backslashes=True), **options)


def write_line(text: str) -> None:
    """Write one line to stdout without rich markup processing, control characters escaped."""
    sys.stdout.write(terminal_safe(text, keep_lines=True, keep_backslashes=True) + "\n")


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``1 call``, ``2 calls``: a count with its noun agreeing."""
    return f"{count} {noun if count == 1 else (plural_form or noun + 's')}"
