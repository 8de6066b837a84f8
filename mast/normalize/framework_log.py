"""Framework log files on their own: ChatDev, MetaGPT, HyperAgent, AppWorld and OpenManus logs.

The same logs MAD records carry in ``trace.trajectory`` (see :mod:`mast.normalize._mad_logs`), read
from a text file a framework wrote. Tried before the plain-text fallback; AutoGen console text has
its own format (``autogen_console``).
"""

from __future__ import annotations

from collections.abc import Iterator

from mast.errors import TraceFormatError
from mast.normalize._mad_logs import PARSERS, parse_log
from mast.normalize._sniff import text_document
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Trace

FRAMEWORKS = ("chatdev", "metagpt", "hyperagent", "appworld", "openmanus")
"""The :data:`~mast.normalize._mad_logs.PARSERS` this format sniffs for, in order."""
_FRAMEWORK_OF_VARIANT = {"chatdev": "chatdev", "metagpt_log": "metagpt", "metagpt_comm_log": "metagpt",
                         "hyperagent": "hyperagent", "appworld": "appworld", "openmanus": "openmanus"}


def _which(text: str) -> str | None:
    return next((name for name in FRAMEWORKS if PARSERS[name][0](text)), None)


class FrameworkLogFormat(TraceFormat):
    """A ChatDev, MetaGPT, HyperAgent, AppWorld or OpenManus log file."""

    name = "framework_log"
    description = "Framework log text: ChatDev, MetaGPT, HyperAgent, AppWorld, OpenManus"
    priority = 63

    def detect(self, raw: RawInput) -> float:
        """0.8 when the text carries one framework's log markers; 0 for anything else."""
        if raw.path is not None and _which(raw.head) is None:
            return 0.0  # decided from the head, so a large file of another format is never parsed here
        text = text_document(raw)
        return 0.8 if text is not None and _which(text) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per log file."""
        text = text_document(raw)
        framework = _which(text) if text is not None else None
        if text is None or framework is None:
            raise raw.fail("no ChatDev, MetaGPT, HyperAgent, AppWorld or OpenManus log markers found")
        out = parse_log(text, framework)
        yield out.to_trace(self.source(raw, variant=out.variant), _FRAMEWORK_OF_VARIANT.get(out.variant))


register(FrameworkLogFormat())
