"""Framework log files on their own: every registered framework log that is not read by a format of its own.

The same logs MAD records carry in ``trace.trajectory`` (see :mod:`mast.normalize._mad_logs`), read
from a text file a framework wrote: ChatDev, MetaGPT, HyperAgent, AppWorld, OpenManus and any log
registered later with :func:`~mast.normalize._logs_common.register_log`. Tried before the
plain-text fallback; AutoGen console text has its own format (``autogen_console``).
"""

from __future__ import annotations

from collections.abc import Iterator

from mast.errors import TraceFormatError
from mast.normalize._logs_common import FrameworkLog, framework_logs
from mast.normalize._mad_logs import parse_log
from mast.normalize._sniff import text_document
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Trace


def _which(text: str) -> FrameworkLog | None:
    return next((log for log in framework_logs() if log.standalone and log.sniff(text)), None)


class FrameworkLogFormat(TraceFormat):
    """A log file of any standalone registered framework log."""

    name = "framework_log"
    priority = 63
    example = '[2025-03-02 09:15:01 INFO] Chief Executive Officer: **[Start Chat]**  /  2025-... | INFO | metagpt.roles.role:_act:391 - ...'

    @property
    def description(self) -> str:  # type: ignore[override]
        """The registered logs this format reads, named at the time ``mast formats`` asks."""
        names = ", ".join(log.name for log in framework_logs() if log.standalone)
        return f"Framework log text: {names}"

    def detect(self, raw: RawInput) -> float:
        """0.8 when the text carries one framework's log markers; 0 for anything else."""
        if raw.path is not None and _which(raw.head) is None:
            return 0.0  # decided from the head, so a large file of another format is never parsed here
        text = text_document(raw)
        return 0.8 if text is not None and _which(text) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per log file."""
        try:
            text: str | None = raw.text()  # also when forced onto a file that parses as JSON (--format framework_log)
        except TraceFormatError:
            text = None
        log = _which(text) if text is not None else None
        if text is None or log is None:
            names = ", ".join(log.name for log in framework_logs() if log.standalone)
            raise raw.fail(f"no framework log markers found (known: {names})")
        out = parse_log(text, log.name)
        yield out.to_trace(self.source(raw, variant=out.variant), out.framework or log.framework)


register(FrameworkLogFormat())
