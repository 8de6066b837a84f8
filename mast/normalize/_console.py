"""Text captured from a terminal, made plain: ANSI escape sequences and terminal decorations removed.

Frameworks print for people: colours (``ESC[32m``), progress lines rewritten with ``\\r``, panels
drawn with box characters (``╭── Crew Execution Started ──╮`` / ``│ ... │`` / ``╰──╯``), status
trees (``├── 📋 Task: ...`` / ``└── 🔧 Used search (1)``) and emoji bullets. A log saved from a
terminal keeps all of it; the readers want the words. :func:`strip_ansi` runs on every input
before it is parsed (a raw escape byte is never valid JSON, so nothing is lost); :func:`plain_console`
runs on documents read as text, before detection and reading.

Hand-written rather than a library: the escape grammar (ECMA-48: CSI, OSC and two-byte escapes) is
three alternatives of one regular expression, and the libraries that strip it (``rich``,
``strip-ansi``) would add a dependency or an import of a console renderer to every file read.
"""

from __future__ import annotations

import re

ANSI_ESCAPE = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, erase line (ESC [ 1;32 m)
    r"|\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: window titles, hyperlinks (ESC ] ... BEL)
    r"|[@-Z\\-_])"  # two-byte escapes (ESC M, ESC 7...)
)
_BOX_TOP = re.compile(r"^[ \t]*[╭┌╔┏┍┎╒╓][─━═┄┅┈┉╌╍\s]*(?P<title>[^─━═┄┅┈┉╌╍╮┐╗┓┑┒╕╖\n]*?)[─━═┄┅┈┉╌╍\s]*[╮┐╗┓┑┒╕╖][ \t]*$", re.MULTILINE)
_BOX_BOTTOM = re.compile(r"^[ \t]*[╰└╚┗┕┖╘╙][─━═┄┅┈┉╌╍]*[╯┘╝┛┙┚╛╜][ \t]*$", re.MULTILINE)
_BOX_SIDE = re.compile(r"^[ \t]*[│┃║][ \t]?(?P<inner>.*?)[ \t]*[│┃║][ \t]*$", re.MULTILINE)
_RULE_ONLY = re.compile(r"^[ \t]*[─━═┄┅┈┉╌╍]{3,}[ \t]*$", re.MULTILINE)
_TREE_LINE = re.compile(r"^[ \t]*(?:[├└┣┗╠╚]|[│┃┆┊](?![^\n]*[│┃║][ \t]*$))")
"""A branch of a status tree (``├── 📋 Task``, ``│   └── 🔧 Used x``), not the side of a panel (``│ text │``)."""
_EMOJI_BULLET = re.compile(
    r"^(?P<pre>[ \t]*)(?:[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\u231A-\u23FF][\uFE0F\u200D\U0001F3FB-\U0001F3FF]*)+[ \t]+",
    re.MULTILINE,
)
_BLOCK_ART = re.compile(r"^[ \t]*[\u2580-\u259F][\u2580-\u259F \t]*", re.MULTILINE)
"""Block-element art opening a line (a TUI's logo, ``▐▛███▜▌   Claude Code v2.1.39``): the art goes, the words stay."""
_INPUT_PLACEHOLDER = re.compile(r"^[ \t]*[❯>›][ \t\u00a0]+Try \"[^\"\n]*\"[ \t]*$", re.MULTILINE)
"""An empty input box's hint (``❯ Try "create a util logging.py that..."``): not anything typed."""
_SHAPE_BULLET = re.compile(r"^(?P<pre>[ \t]*)[\u25A0-\u25FF\u2022\u2023\u2043][ \t\u00a0]+", re.MULTILINE)
"""A geometric-shape bullet (``● Bash(mix phx.server)``, ``■``, ``•``) before text."""
DECORATION_HINTS = ("╭", "╰", "│", "├", "└", "┃", "║", "─", "━", "═")


def strip_ansi(text: str) -> str:
    """``text`` without ANSI escape sequences (colours, cursor moves, titles)."""
    return ANSI_ESCAPE.sub("", text) if "\x1b" in text else text


def plain_console(text: str) -> str:
    """Terminal text as plain lines: escapes, carriage-return rewrites, status trees, box frames and emoji bullets removed.

    A status tree (a line with an emoji bullet and the ``├──`` / ``└──`` branches under it) is the
    framework's live progress display and goes whole; a panel's title and inner lines are kept,
    its frame dropped; an emoji or shape bullet (``●``) before text is dropped, block-character logo
    art and an empty input box's ``❯ Try "..."`` hint too (Claude Code's screen). A log without
    decorations is unchanged.
    """
    text = strip_ansi(text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if any(hint in text for hint in DECORATION_HINTS):
        text = _drop_trees(text)
        text = _BOX_TOP.sub(lambda m: m.group("title").strip(), text)
        text = _BOX_BOTTOM.sub("", text)
        text = _BOX_SIDE.sub(lambda m: m.group("inner"), text)
        text = _RULE_ONLY.sub("", text)
    if "❯" in text or "Try \"" in text:
        text = _INPUT_PLACEHOLDER.sub("", text)
    if any("\u2580" <= ch <= "\u259F" for ch in text[:20_000]):
        text = _BLOCK_ART.sub("", text)
    text = _SHAPE_BULLET.sub(lambda m: m.group("pre"), text)
    return _EMOJI_BULLET.sub(lambda m: m.group("pre"), text)


def _drop_trees(text: str) -> str:
    lines = text.split("\n")
    keep = [True] * len(lines)
    for number, line in enumerate(lines):
        if _TREE_LINE.match(line):
            keep[number] = False
            root = number - 1
            while root >= 0 and not lines[root].strip():
                root -= 1
            if root >= 0 and keep[root] and _EMOJI_BULLET.match(lines[root]):
                keep[root] = False  # the tree's root line ("🚀 Crew: crew")
    return "\n".join(line for line, kept in zip(lines, keep, strict=True) if kept)
