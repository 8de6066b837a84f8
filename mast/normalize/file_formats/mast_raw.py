"""MAST raw MetaGPT traces: ``{run_id, prompt, content, timestamp, cost, log_file}``.

The MAST repository releases each MetaGPT ProgramDev run as this JSON wrapper; ``content`` is the
loguru log MAD also stores. ``prompt`` is the task and ``cost`` the run's cost in dollars.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from mast.errors import TraceFormatError, one_line
from mast.normalize._mad_logs import parse_payload
from mast.normalize._sniff import json_head
from mast.normalize.base import RawInput, TraceFormat, register
from mast.trace import Trace

_KEYS = {"run_id", "prompt", "content", "log_file"}


def is_wrapper(obj: Any) -> bool:
    """True for a dict with the wrapper's ``content`` text and at least two of its other keys."""
    return isinstance(obj, dict) and isinstance(obj.get("content"), str) and len(_KEYS & set(obj)) >= 3


class MastRawFormat(TraceFormat):
    """The MAST raw MetaGPT trace wrapper."""

    name = "mast_raw"
    description = "MAST raw MetaGPT trace wrapper {run_id, prompt, content (loguru log), cost, log_file}"
    priority = 15
    example = '{"run_id": 1, "prompt": "write a game", "content": "<MetaGPT loguru log>", "cost": 0.15, "log_file": ...}'

    def detect(self, raw: RawInput) -> float:
        """Sure for an object holding ``content`` text and the wrapper's other keys."""
        if not json_head(raw, '"log_file"', '"run_id"'):
            return 0.0
        try:
            data = raw.data()
        except TraceFormatError:
            return 0.0
        return 0.95 if is_wrapper(data) else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        """One trace for the wrapper."""
        data = raw.data()
        if not is_wrapper(data):
            raise raw.fail("not a MAST raw trace: expected an object with run_id, prompt, content and log_file")
        try:
            parsed = parse_payload(data, "metagpt")
        except ValueError as exc:
            raise raw.fail(f"MAST raw trace unreadable: {one_line(exc)}") from exc
        run_id = data.get("run_id")
        trace = parsed.to_trace(self.source(raw, variant=parsed.variant), "metagpt")
        if run_id is not None:
            trace.trace_id = f"run-{run_id}"
        yield trace


register(MastRawFormat())
