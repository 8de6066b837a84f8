"""Text from traces made safe for where it is shown: spreadsheets and terminals.

Trace ids, agent names, summaries and quotes come from the traces, that is from whoever wrote the
pages and files an agent read. Two places read text as more than text:

- a spreadsheet opening a CSV takes a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a
  carriage return as a formula (``=HYPERLINK(...)``, ``=cmd|...``). :func:`spreadsheet_cell`
  prefixes such a cell with ``'``, the escape spreadsheet tools themselves use (and that OWASP's
  note on CSV injection recommends); every CSV mast writes goes through :func:`write_csv` or :func:`csv_text`.
- a browser runs what a page holds: :func:`csp_meta` gives mast's HTML pages a Content-Security-Policy
  that lets only their own inline script and styles run (by hash) and loads nothing from anywhere.
- a terminal takes control characters (ESC sequences clear the screen or set the window title).
  :func:`terminal_safe` shows them escaped (``\\x1b``) wherever a command prints an id, a name
  or a path.

Example:
    >>> spreadsheet_cell("=HYPERLINK('http://x')")
    "'=HYPERLINK('http://x')"
    >>> terminal_safe("run\\x1b]0;pwned\\x07")
    'run\\\\x1b]0;pwned\\\\x07'
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import os
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "FORMULA_LEADS",
    "csp_meta",
    "csp_policy",
    "csv_text",
    "read_csv",
    "spreadsheet_cell",
    "spreadsheet_safe",
    "spreadsheet_value",
    "terminal_safe",
    "write_csv",
]

FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")
"""A cell starting with one of these is read as a formula by Excel, LibreOffice or Google Sheets."""


def spreadsheet_cell(value: Any) -> Any:
    """``value`` with a ``'`` in front when it is text a spreadsheet would read as a formula; else as is.

    Text that already starts with ``'`` before a formula lead (``'=x``) gets one more, so that
    :func:`spreadsheet_value` can tell the escape from the text and give every value back.
    """
    if isinstance(value, str) and value.lstrip("'").startswith(FORMULA_LEADS):
        return "'" + value
    return value


def spreadsheet_value(value: Any) -> Any:
    """The inverse of :func:`spreadsheet_cell`: ``'=x`` back to ``=x``; any other value as is.

    Only a ``'`` before a formula lead (after any further ``'``) is the escape, so every text survives
    a write and a read unchanged (``'abc`` stays ``'abc``; ``'=x`` is written ``''=x`` and comes back).
    A spreadsheet reads it the same way: a cell typed as ``'=x`` is the text ``=x``.
    """
    if isinstance(value, str) and value.startswith("'") and value.lstrip("'").startswith(FORMULA_LEADS):
        return value[1:]
    return value


def spreadsheet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells (and column names) cannot start a formula.

    Only text columns change: numbers keep their type, so ``-0.5`` stays a number.
    """
    out = frame.copy()
    for column in out.columns:
        series = out[column]
        if series.dtype == object or str(series.dtype) in ("string", "str"):
            out[column] = series.map(spreadsheet_cell)
    out.columns = [spreadsheet_cell(c) if isinstance(c, str) else c for c in out.columns]
    return out


# RFC 4180 rows end in CRLF, and then Python's csv quotes every cell holding a CR or LF: with a bare
# "\n" it leaves a lone CR unquoted, which a spreadsheet reads as a new row whose first cell is
# whatever followed it (a formula, say).
_ROW_END = "\r\n"


def write_csv(frame: pd.DataFrame, target: str | os.PathLike[str]) -> None:
    """Write ``frame`` as CSV (no index) to ``target``, every cell escaped for spreadsheets."""
    spreadsheet_safe(frame).to_csv(target, index=False, lineterminator=_ROW_END)


def csv_text(frame: pd.DataFrame) -> str:
    """``frame`` as CSV text (no index), every cell escaped for spreadsheets."""
    buffer = io.StringIO()
    spreadsheet_safe(frame).to_csv(buffer, index=False, lineterminator=_ROW_END)
    return buffer.getvalue()


def read_csv(path: str | os.PathLike[str], *, sep: str = ",") -> pd.DataFrame:
    """A CSV (or TSV) as text cells, with the spreadsheet escape :func:`write_csv` adds taken off.

    Every cell is a string (empty cells are ``""``, never NaN): ids such as ``007`` or ``NA`` stay
    what they were. Reading mast's own CSV back gives the frame that was written.
    """
    import pandas as pd

    frame = pd.read_csv(path, sep=sep, dtype=str, keep_default_na=False)
    frame = frame.map(spreadsheet_value)
    frame.columns = [spreadsheet_value(c) for c in frame.columns]
    return frame


# C0 and C1 control characters, DEL, and the Unicode controls that reorder or hide text
# (bidi overrides and isolates, zero-width and line/paragraph separators).
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_CONTROL_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def _escape(match: re.Match[str]) -> str:
    # C0 and DEL as \xNN, the rest as \uNNNN: inside a JSON string (mast's --json output) C0 is
    # already escaped by the encoder, and \uNNNN is a valid JSON escape, so JSON stays JSON.
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


# A backslash that would read as the start of one of the escapes above (or of an escaped backslash):
# doubled, so a name that holds the four characters ``\x07`` never prints like one that holds a BEL.
_ESCAPE_LIKE = re.compile(r"\\(?=[\\xu]|" + _CONTROL.pattern + ")")


def terminal_safe(text: object, *, keep_lines: bool = False, keep_backslashes: bool = False) -> str:
    """``text`` (any value, as ``str``) with control characters shown as ``\\x..``/``\\u....`` escapes.

    Every C0 and C1 control is escaped, BEL, backspace, CR, newline and tab included, so an id, an
    agent's or a file's name always prints on one line, as it is. Printable text passes unchanged, a
    backslash too (Windows paths still read as paths) unless it is followed by ``x``, ``u``, another
    backslash or a control: then it is doubled, so the printed form is unambiguous. With
    ``keep_lines`` newlines and tabs stay (for mast's own multi-line prose). ``keep_backslashes`` is for
    text that is JSON, or was made safe already: its backslashes stay as they are.
    """
    value = str(text)
    if not keep_backslashes:
        value = _ESCAPE_LIKE.sub(r"\\\\", value)
    return (_CONTROL_BUT_LINES if keep_lines else _CONTROL).sub(_escape, value)


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def csp_policy(
    *, scripts: tuple[str, ...] = (), styles: tuple[str, ...] = (), connect_self: bool = False
) -> str:
    """The Content-Security-Policy text of :func:`csp_meta`; ``connect_self`` lets the page's script call its own server.

    ``mast review`` sends it as a header too, and needs ``connect_self`` for its ``fetch`` calls back to
    the local server that served it (nothing else is reachable).
    """
    script_src = " ".join(_sha256(s) for s in scripts) or "'none'"
    style_src = " ".join(_sha256(s) for s in styles) or "'none'"
    connect = "; connect-src 'self'" if connect_self else ""
    return (
        f"default-src 'none'; script-src {script_src}; style-src {style_src}; img-src data:; "
        f"base-uri 'none'; form-action 'none'{connect}"
    )


def csp_meta(*, scripts: tuple[str, ...] = (), styles: tuple[str, ...] = ()) -> str:
    """A ``<meta http-equiv='Content-Security-Policy'>`` allowing exactly these inline scripts and styles.

    Each is allowed by the sha256 of its text (the content of its ``<script>``/``<style>`` element, as
    written): a script or style injected by a trace field, should one ever slip past the escaping,
    does not run; images only from ``data:`` URIs (the embedded figures); nothing is fetched, no form
    is sent, no ``<base>`` is honoured.
    """
    policy = csp_policy(scripts=scripts, styles=styles)
    return f"<meta http-equiv='Content-Security-Policy' content=\"{html.escape(policy)}\">"
