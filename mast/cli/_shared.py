"""Pieces several CLI commands share (console, JSON output)."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment

from mast._outputs import terminal_safe


class SafeConsole(Console):
    """A rich console that shows control characters in what it prints as escapes (``\\x1b``).

    Trace ids, agent names, file names and error messages come from the traces: an ESC sequence
    among them would clear the screen or set the terminal's title. Every text segment is escaped
    here, at the one place all output passes (tables, progress bars and live displays included);
    the console's own control segments (cursor moves of a progress bar) are left as they are.
    """

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control is None and segment.text and not segment.text.isprintable():
                yield Segment(terminal_safe(segment.text, keep_lines=True), segment.style)
            else:
                yield segment


stdout = SafeConsole(soft_wrap=True)
stderr = SafeConsole(stderr=True, soft_wrap=True)


def write_line(text: str) -> None:
    """Write one line to stdout without rich markup processing, control characters escaped."""
    sys.stdout.write(terminal_safe(text, keep_lines=True) + "\n")


def plural(count: int, noun: str, plural_form: str | None = None) -> str:
    """``1 call``, ``2 calls``: a count with its noun agreeing."""
    return f"{count} {noun if count == 1 else (plural_form or noun + 's')}"
