"""The gold file of ``mast review``: every reviewer action, appended and fsync'd as it happens.

One JSON object per line (:class:`GoldEvent`). Nothing is ever rewritten: a changed mind is a new
line, and :func:`current_cells` keeps the last value of each cell (trace, field, code, reviewer)
while the file keeps the whole history. A line is on disk (``os.fsync``) before the app shows it
as saved, so a ``kill -9`` of the server loses nothing the reviewer saw saved; a torn last line
(the process killed inside ``write``) is skipped on reading and never glued to the next append.

Fields of an event:

===============  ===========================================================================
``key``          the trace: ``<source path>#<record>:<trace id>`` (see :func:`trace_key`)
``field``        ``mode`` (a verdict), ``first_step``, ``first_agent``, ``note``
``code``         the mode code for ``field == "mode"``, else ``null``
``value``        ``present`` / ``absent`` / ``unsure`` for modes; the step, agent or note text
``judge``        what the judge said for the same cell (``present``/``absent``/``null``)
``queue``        ``random`` (the uniform sample) or ``improve`` (picked for disagreement)
===============  ===========================================================================

Example:
    >>> store = GoldStore("gold.jsonl")                                            # doctest: +SKIP
    >>> store.append([GoldEvent(key="a.json#0:t1", trace_id="t1", field="mode", code="1.3",
    ...                         value="present", reviewer="ana", queue="random")])  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from mast.errors import EvaluationError, UsageError

GOLD_SCHEMA_VERSION: Literal["mast-gold/1"] = "mast-gold/1"

Field_ = Literal["mode", "first_step", "first_agent", "note"]
Queue = Literal["random", "improve"]
ModeValue = Literal["present", "absent", "unsure"]
MODE_VALUES: tuple[ModeValue, ...] = ("present", "absent", "unsure")


def trace_key(path: str | None, record: int | None, trace_id: str) -> str:
    """The key of a trace in the gold: its source file, record and id, so two files' ``t1`` never merge."""
    return f"{path or ''}#{record if record is not None else 0}:{trace_id}"


class GoldEvent(BaseModel):
    """One reviewer action on one cell."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["mast-gold/1"] = GOLD_SCHEMA_VERSION
    key: str
    """The trace (:func:`trace_key`)."""
    trace_id: str
    """The trace's id, as the results file names it."""
    source_path: str | None = None
    source_record: int | None = None
    field: Field_
    code: str | None = None
    """The mode code, for ``field == "mode"``."""
    value: str | int | None
    """``present``/``absent``/``unsure`` for a mode; the step number, agent name or note text otherwise."""
    judge: str | int | None = None
    """The judge's value for the same cell when the reviewer acted."""
    reviewer: str
    queue: Queue = "random"
    time: datetime = Field(default_factory=lambda: datetime.now(UTC))

    def cell(self) -> tuple[str, str, str, str]:
        """What a later event replaces: (trace key, field, code, reviewer)."""
        return (self.key, self.field, self.code or "", self.reviewer)


class GoldStore:
    """The gold file, opened for appending. Each :meth:`append` is one ``write`` and one ``fsync``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._fd = -1
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # O_APPEND: every write lands at the end even if another process appends too.
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            self._repair_tail()
        except OSError as exc:
            self.close()
            raise UsageError(f"cannot write the gold file {self.path}: {exc.strerror or exc}") from exc

    def _repair_tail(self) -> None:
        # A last line torn by a kill has no newline: end it, so the next event starts on its own line
        # (the torn text stays, and readers skip it as unreadable).
        size = self.path.stat().st_size
        if size:
            with self.path.open("rb") as handle:
                handle.seek(size - 1)
                if handle.read(1) != b"\n":
                    os.write(self._fd, b"\n")
                    os.fsync(self._fd)

    def append(self, events: Iterable[GoldEvent]) -> int:
        """Write ``events`` (one ``write``, then ``fsync``) and return how many; on return they are on disk."""
        lines = [orjson.dumps(e.model_dump(mode="json")) + b"\n" for e in events]
        if not lines:
            return 0
        data = b"".join(lines)
        written = 0
        while written < len(data):
            written += os.write(self._fd, data[written:])
        os.fsync(self._fd)
        return len(lines)

    def close(self) -> None:
        """Close the file (every event is already on disk)."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> GoldStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def iter_events(path: str | os.PathLike[str]) -> Iterator[GoldEvent]:
    """Every readable event of a gold file, in the order written; a missing file has none.

    A line that is not JSON is a line torn by a kill (a gold file is written only whole lines at a
    time, by :class:`GoldStore`): it was never shown as saved, so it is skipped. A JSON line that is not
    an event (a hand edit gone wrong) is an error naming the line.
    """
    file = Path(path)
    if not file.is_file():
        return
    try:
        handle = file.open("rb")
    except OSError as exc:
        raise EvaluationError(f"cannot read the gold file {file}: {exc.strerror or exc}") from exc
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                data = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            try:
                yield GoldEvent.model_validate(data)
            except ValidationError as exc:
                reason = str(exc).splitlines()[0]
                raise EvaluationError(f"{file}:{number}: not a gold event ({reason})") from exc


def current_cells(events: Iterable[GoldEvent]) -> dict[tuple[str, str, str, str], GoldEvent]:
    """The last event of each cell (trace key, field, code, reviewer): the value that counts."""
    cells: dict[tuple[str, str, str, str], GoldEvent] = {}
    for event in events:
        cells[event.cell()] = event
    return cells


def label_rows(
    events: Iterable[GoldEvent], *, queues: tuple[Queue, ...] = ("random",)
) -> Iterator[dict[str, object]]:
    """The current mode cells of ``events`` as label-table rows (``unsure`` and other queues left out).

    ``annotator`` is the reviewer. The improve queue is left out by default:
    its traces were picked where the judge is doubtful, so counting them would bias agreement.
    """
    # A trace drawn by the random sample stays in it when the same reviewer meets it again in the
    # improve queue: the cell counts with its last value; only cells never drawn at random are left out.
    events = list(events)
    drawn = {e.cell() for e in events if e.queue == "random"}
    for cell, event in current_cells(events).items():
        queue: Queue = "random" if cell in drawn else event.queue
        if event.field == "mode" and event.value in ("present", "absent") and queue in queues:
            yield {
                "trace_id": event.trace_id,
                "code": event.code,
                "present": event.value == "present",
                "annotator": event.reviewer,
            }


def reviewer_disagreements(events: Iterable[GoldEvent]) -> list[dict[str, str]]:
    """The mode cells where reviewers' current values differ (present vs absent), one row per cell.

    The gold is the reviewers' majority, ties left out: a cell two reviewers disagree on drops
    from the gold (and the Scout export). This lists them so they can be settled, never lost:
    ``trace_id``, ``key``, ``code`` and ``values`` (``reviewer=value; ...``, reviewers sorted).
    """
    by_cell: dict[tuple[str, str], dict[str, str]] = {}
    trace_ids: dict[str, str] = {}
    for event in current_cells(events).values():
        if event.field == "mode" and event.code and event.value in ("present", "absent"):
            by_cell.setdefault((event.key, event.code), {})[event.reviewer] = str(event.value)
            trace_ids[event.key] = event.trace_id
    rows = []
    for (key, code), values in sorted(by_cell.items()):
        if len(set(values.values())) > 1:
            rows.append(
                {
                    "trace_id": trace_ids[key],
                    "key": key,
                    "code": code,
                    "values": "; ".join(f"{who}={value}" for who, value in sorted(values.items())),
                }
            )
    return rows
