"""AutoGen console transcripts: AG2 ``sender (to recipient):`` chats and AgentChat Console output.

Plain text files, so this format is tried before the plain-text fallback. The parsing lives in
:mod:`mast.normalize.logs.console` (also used for MAD's Magentic-One logs).
"""

from __future__ import annotations

from collections.abc import Iterator

from mast.errors import TraceFormatError
from mast.normalize._sniff import text_document
from mast.normalize.base import RawInput, TraceFormat, register
from mast.normalize.logs.console import (
    looks_like_ag2_console,
    looks_like_agentchat_console,
    parse_ag2_console,
    parse_agentchat_console,
)
from mast.trace import Trace


class AutogenConsoleFormat(TraceFormat):
    """Text transcripts printed by AG2 or AgentChat's Console."""

    name = "autogen_console"
    description = "AutoGen console text: AG2 'sender (to recipient):' chats, AgentChat/Magentic-One Console output"
    priority = 62
    example = 'user_proxy (to assistant):  /  ---------- TextMessage (writer) ----------'

    def detect(self, raw: RawInput) -> float:
        """0.8 for AG2 ``sender (to recipient):`` turns, 0.75 for Console headers; 0 for non-text input."""
        if raw.path is not None and not (looks_like_ag2_console(raw.head) or looks_like_agentchat_console(raw.head)):
            return 0.0  # decided from the head, so a large file of another format is never parsed here
        text = text_document(raw)
        if text is None:
            return 0.0
        if looks_like_ag2_console(text):
            return 0.8
        return 0.75 if looks_like_agentchat_console(text) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace per transcript."""
        text = text_document(raw)
        if text is None:
            raise raw.fail("AutoGen console logs are text; this input is not")
        out = parse_ag2_console(text) if looks_like_ag2_console(text) else parse_agentchat_console(text)
        if not out.steps:
            raise raw.fail("no AutoGen console turns found ('sender (to recipient):' or '---------- source ----------')")
        if out.task is None:
            out.task = next((s.content for s in out.steps if s.content and s.kind == "message"), None)
        yield out.to_trace(self.source(raw, variant=out.variant), "magentic-one" if out.variant == "magentic_one" else "autogen")


register(AutogenConsoleFormat())
