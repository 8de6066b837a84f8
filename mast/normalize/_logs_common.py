"""What every framework-log parser returns, and the helpers they share.

The MAD data set stores each run as the raw log its framework printed (ChatDev, MetaGPT, HyperAgent,
AppWorld, Magentic-One, OpenManus, AG2). Each ``_logs_<framework>.py`` module turns one such log
into a :class:`LogParse`: ordered steps plus whatever the log says about the task, the answer and
token usage. A parser that finds none of its markers returns no steps, so the dispatcher in
:mod:`mast.normalize._mad_logs` can try the next one.

Each module registers its parser with :func:`register_log` (a :class:`FrameworkLog`): that one call
makes the log readable inside MAD records (chosen by ``mas_name`` or by its markers) and, unless
``standalone=False``, as a text file on its own (the ``framework_log`` format). ``mast.normalize``
imports every ``_logs_*`` module at start-up, so a new framework log is one new module.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mast.trace import SourceInfo, Step, Trace, Usage

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


@dataclass
class LogParse:
    """Steps and trace-level facts read from one framework log."""

    steps: list[Step] = field(default_factory=list)
    variant: str = "generic"
    task: str | None = None
    final_output: str | None = None
    """The answer as the log states it; ``None``: not stated (the last agent message is used), ``""``: stated empty."""
    usage: Usage | None = None
    warnings: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, Any] = field(default_factory=dict)
    framework: str | None = None
    """The framework whose parser produced this (set by the dispatcher from :class:`FrameworkLog`)."""

    def add(self, **fields: Any) -> Step:
        """Append a step (its index is its position) and return it."""
        step = Step(index=len(self.steps), **fields)
        self.steps.append(step)
        return step

    def add_usage(self, usage: Usage | None) -> None:
        """Add to the run's usage total."""
        if usage is not None:
            self.usage = usage if self.usage is None else self.usage + usage

    def to_trace(self, source: SourceInfo, framework: str | None, *, metadata: dict[str, Any] | None = None) -> Trace:
        """The :class:`Trace` of this log (see :func:`~mast.normalize._build.assemble_trace`); logs state their own task and answer."""
        from mast.normalize._build import assemble_trace, first_user_text
        from mast.normalize._readable import final_from_steps

        # A log that states no task starts with its first request, and one that states no answer
        # ends on its last substantive agent message (ChatDev's manual, a MetaGPT role's last
        # reply): that is what a reader calls the run's task and output.
        final = self.final_output if self.final_output is not None else final_from_steps(self.steps)
        return assemble_trace(
            self.steps, source=source, framework=framework, task=self.task or first_user_text(self.steps), final_output=final or None,
            usage=self.usage,
            labels=self.labels, metadata={**(metadata or {}), **self.metadata}, warnings=self.warnings,
            derive_task=False, derive_final_output=False,
        )


@dataclass(frozen=True)
class FrameworkLog:
    """A framework's log: how to spot it, how to read it, and what to call the run."""

    name: str
    """Registry key, e.g. ``chatdev``."""
    sniff: Callable[[str], bool]
    """True when the text carries this log's markers; cheap, never raises."""
    parse: Callable[[str], LogParse]
    """The log's steps and trace-level facts."""
    framework: str
    """:attr:`Trace.framework` of a run read with this parser."""
    order: int = 50
    """Lower is sniffed first when a MAD record's ``mas_name`` names no parser."""
    mas_names: Mapping[str, int] = field(default_factory=dict)
    """MAD ``mas_name`` spellings (lower-case letters and digits) this parser goes first for, with its
    rank among the parsers preferred for that name (0 first)."""
    standalone: bool = True
    """Detected in a text file of its own by the ``framework_log`` format."""
    example: str = ""
    """A line or two the log holds, for ``mast formats``."""


FRAMEWORK_LOGS: dict[str, FrameworkLog] = {}
"""Every registered framework log by name (filled at import time by ``_logs_*`` modules)."""


def register_log(log: FrameworkLog) -> FrameworkLog:
    """Add a framework log parser to the registry (module import time)."""
    if log.name in FRAMEWORK_LOGS:
        raise ValueError(f"framework log {log.name!r} registered twice")
    FRAMEWORK_LOGS[log.name] = log
    return log


def framework_logs() -> list[FrameworkLog]:
    """Registered framework logs in sniffing order."""
    return sorted(FRAMEWORK_LOGS.values(), key=lambda log: (log.order, log.name))


def preferred_logs(framework: str | None) -> list[str]:
    """Names of the parsers to try first for a normalised ``mas_name``, best first."""
    if not framework:
        return []
    ranked = [(log.mas_names[framework], log.name) for log in FRAMEWORK_LOGS.values() if framework in log.mas_names]
    if framework in FRAMEWORK_LOGS and framework not in {name for _, name in ranked}:
        ranked.append((-1, framework))  # a parser asked for by its own name
    return [name for _, name in sorted(ranked)]


def clean(text: str) -> str:
    """Text without ANSI colour codes and carriage returns."""
    if "\x1b" in text:
        text = ANSI.sub("", text)
    return text.replace("\r\n", "\n").replace("\r", "\n")


def body_text(text: str) -> str:
    """A block's body: common indentation removed (YAML-dumped logs indent it), ends stripped."""
    text = text.strip("\n")
    if not text.startswith((" ", "\t")):
        return text.strip()  # the first line is flush left, so nothing can be dedented
    return textwrap.dedent(text).strip()


def blocks_between(text: str, matches: list[re.Match[str]]) -> list[tuple[re.Match[str], str]]:
    """Each header match with the text that follows it up to the next header."""
    out = []
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        out.append((match, text[match.end():end]))
    return out


_STAMP = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?$")


def parse_log_time(value: str, *formats: str) -> datetime | None:
    """A log timestamp read with the first format that fits; logs print local time, taken as UTC.

    The two layouts logs use, ``%Y-%m-%d %H:%M:%S[.%f]`` and ChatDev's ``%Y-%d-%m %H:%M:%S``, are
    read without ``strptime`` (which is slow enough to matter on a 200 MB file).
    """
    found = _STAMP.match(value)
    if found:
        year, a, b, hour, minute, second, fraction = found.groups()
        micro = int(fraction.ljust(6, "0")) if fraction else 0
        orders = [(int(a), int(b))] if formats and not formats[0].startswith("%Y-%d") else [(int(b), int(a))]
        orders.append((orders[0][1], orders[0][0]))
        for month, day in orders:
            try:
                return datetime(int(year), month, day, int(hour), int(minute), int(second), micro, tzinfo=UTC)
            except ValueError:
                continue
    for fmt in formats:
        try:
            return datetime.strptime(value, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def first_line(text: str) -> str:
    """The first line of ``text``."""
    return text.split("\n", 1)[0]


LOGURU = re.compile(
    r"^(?P<ts>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) \| (?P<level>[A-Z]+) *\| (?P<where>[^\n]*?) - (?P<msg>[^\n]*)$",
    re.MULTILINE,
)
"""A loguru log line (MetaGPT, OpenManus): ``<time> | LEVEL | module:function:line - message``."""
