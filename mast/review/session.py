"""One review session: the results indexed, the queue of traces, the gold so far, live agreement.

The results file is read once into a compact index (byte offset, key, the judge's value per mode,
what the improve queue ranks by); a trace's full result is re-read from its offset when shown, so
the index stays small however long the transcripts are (a JSON-list results file is held whole).

Queues:

- ``random`` (default): a seeded uniform random order of the judged traces (``sample`` first ones), so
  agreement measured on what was reviewed is an unbiased estimate of agreement on the whole file.
- ``improve``: traces where the judge is least sure (jury disagreement, confidence near 0.5, a mode
  rare in the file) first. Useful to fix the judge, biased as a sample: their cells carry
  ``queue: "improve"`` and the live figures (and ``mast validate --gold``) leave them out.

Example:
    >>> session = ReviewSession("results.jsonl", "gold.jsonl", reviewer="ana")   # doctest: +SKIP
    >>> session.item(session.resume_position()).key                             # doctest: +SKIP
"""

from __future__ import annotations

import math
import os
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from mast.diagnosis import Diagnosis
from mast.errors import EvaluationError, ResultsFileError, UsageError
from mast.evaluation.metrics import (
    bootstrap_weights,
    kappa_not_estimable,
    metrics_from_counts,
    percentile_interval,
)
from mast.gold import MODE_VALUES, GoldEvent, GoldStore, Queue, current_cells, iter_events, trace_key
from mast.results import iter_lines, iter_numbered, parse_line
from mast.taxonomy import Taxonomy, load_taxonomy

TARGET_HALF_WIDTH = 0.1
"""The CI half width the app counts reviews towards (``±0.1`` on kappa)."""


@dataclass(slots=True)
class ReviewItem:
    """What the index holds of one judged result."""

    offset: int
    """Byte offset of its line (``-1`` for a JSON-list results file, held whole)."""
    key: str
    trace_id: str
    source_path: str | None
    source_record: int | None
    judge: dict[str, str | None]
    """The judge's value per mode code: ``present``, ``absent`` or ``None`` (not assessed)."""
    first_step: int | None
    first_agent: str | None
    improve_score: float = 0.0


@dataclass(slots=True)
class ModeStats:
    """Live agreement of the reviewed random-queue cells with the judge, for one mode."""

    code: str
    n: int
    positives: int
    kappa: float | None
    low: float | None
    high: float | None
    more_for_target: int | None
    """Roughly how many more reviewed traces narrow the CI to ±:data:`TARGET_HALF_WIDTH` (0: already).

    None when it cannot be estimated yet (kappa not estimable, see :attr:`reason`)."""
    reason: str | None = None
    """Why kappa is not estimable (e.g. ``judge never says present``); None when it is."""

    def as_dict(self) -> dict[str, Any]:
        """For the app's JSON."""
        return {
            "code": self.code,
            "n": self.n,
            "positives": self.positives,
            "kappa": self.kappa,
            "low": self.low,
            "high": self.high,
            "more": self.more_for_target,
            "reason": self.reason,
        }


def _value(present: bool | None) -> str | None:
    return None if present is None else ("present" if present else "absent")


@dataclass
class ReviewSession:
    """A results file, a gold file and one reviewer, with the order traces are offered in."""

    results: str | os.PathLike[str]
    gold: str | os.PathLike[str]
    reviewer: str
    queue: Queue = "random"
    sample: int | None = None
    seed: int = 0
    taxonomy: Taxonomy | None = None
    items: list[ReviewItem] = field(init=False, default_factory=list)
    order: list[int] = field(init=False, default_factory=list)
    cells: dict[tuple[str, str, str, str], GoldEvent] = field(init=False, default_factory=dict)
    _held: dict[int, Diagnosis] = field(init=False, default_factory=dict)
    _store: GoldStore | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if not self.reviewer.strip():
            raise UsageError("a reviewer name is needed (--reviewer NAME)")
        self.tax = self.taxonomy or load_taxonomy()
        self._path = Path(self.results)
        if not self._path.is_file():
            raise UsageError(f"{self._path}: no such results file")
        if Path(self.gold).exists() and os.path.samefile(self.gold, self._path):
            raise UsageError(f"the gold file is the results file ({self._path}): give another with -o/--gold")
        self._index()
        if not self.items:
            raise EvaluationError(f"{self._path}: no judged result to review")
        unknown = sorted({c for item in self.items for c in item.judge} - set(self.tax.codes))
        if unknown:
            shown = ", ".join(unknown[:5]) + (", ..." if len(unknown) > 5 else "")
            raise UsageError(
                f"{self._path}: the judge assessed modes that taxonomy {self.tax.version} does not have "
                f"({shown}): give the run's taxonomy with --taxonomy"
            )
        self.order = self._order()
        self.cells = current_cells(iter_events(self.gold))
        self._store = GoldStore(self.gold)

    # -- the index and the queue ---------------------------------------------------------------

    def _index(self) -> None:
        try:
            with self._path.open("rb") as handle:
                json_list = handle.read(64).lstrip()[:1] == b"["
        except OSError as exc:
            raise ResultsFileError(
                f"cannot read results file {self._path}: {exc.strerror or exc}", path=str(self._path)
            ) from exc
        if json_list:  # a JSON list cannot be re-read by offset: held whole (such files are small)
            for number, diagnosis in iter_numbered(self._path):
                self._held[number] = diagnosis
                self._add(diagnosis, -number)
        else:
            for line in iter_lines(self._path):
                if not line.complete:
                    continue  # a torn last line (a run still writing): not a result yet
                parsed = parse_line(self._path, line)  # a bad line: an error naming it
                if parsed is not None:
                    self._add(parsed, line.offset)
        prevalence = Counter(c for item in self.items for c, v in item.judge.items() if v == "present")
        total = len(self.items)
        for item in self.items:
            rare = sum(1.0 - prevalence[c] / total for c, v in item.judge.items() if v == "present")
            item.improve_score += rare

    def _add(self, diagnosis: Diagnosis, offset: int) -> None:
        if diagnosis.status != "judged":
            return  # nothing of the judge's to agree or disagree with
        judge = {v.code: _value(v.present) for v in diagnosis.failure_modes}
        # Improve queue rank: jury disagreement, then verdicts near a coin toss, then rare modes (added above).
        score = 0.0
        if diagnosis.jury and diagnosis.jury.agreement and diagnosis.jury.agreement.unanimous is not None:
            score += 2.0 * (1.0 - diagnosis.jury.agreement.unanimous)
        confidences = [v.confidence for v in diagnosis.failure_modes if v.confidence is not None]
        if confidences:
            score += 1.0 - 2.0 * min(abs(c - 0.5) for c in confidences)
        first = diagnosis.first_failure
        source = diagnosis.source
        self.items.append(
            ReviewItem(
                offset=offset,
                key=trace_key(source.path, source.record, diagnosis.trace_id),
                trace_id=diagnosis.trace_id,
                source_path=source.path,
                source_record=source.record,
                judge=judge,
                first_step=first.step if first else None,
                first_agent=first.agent if first else None,
                improve_score=score,
            )
        )

    def _order(self) -> list[int]:
        positions = list(range(len(self.items)))
        if self.queue == "improve":
            positions.sort(key=lambda i: (-self.items[i].improve_score, i))
        else:
            random.Random(self.seed).shuffle(positions)
        return positions[: self.sample] if self.sample else positions

    def __len__(self) -> int:
        return len(self.order)

    def item(self, position: int) -> ReviewItem:
        """The trace at ``position`` of the queue."""
        return self.items[self.order[position]]

    def diagnosis(self, position: int) -> Diagnosis:
        """The full result at ``position``, re-read from its line."""
        item = self.item(position)
        if item.offset < 0:
            return self._held[-item.offset]
        try:
            with self._path.open("rb") as handle:
                handle.seek(item.offset)
                diagnosis = Diagnosis.model_validate_json(handle.readline())
        except (OSError, ValidationError) as exc:
            raise ResultsFileError(
                f"{self._path} changed or went away since the review started (a run rewrote it?): "
                "restart mast review",
                path=str(self._path),
            ) from exc
        if diagnosis.trace_id != item.trace_id:
            raise ResultsFileError(
                f"{self._path} was rewritten since the review started: restart mast review",
                path=str(self._path),
            )
        return diagnosis

    # -- the gold --------------------------------------------------------------------------------

    def values(self, position: int, reviewer: str | None = None) -> dict[str, Any]:
        """This reviewer's current values of the trace: ``modes`` by code, ``first_step``, ``first_agent``, ``note``."""
        who = reviewer or self.reviewer
        key = self.item(position).key
        modes = {}
        for code in self.tax.codes:
            event = self.cells.get((key, "mode", code, who))
            if event is not None:
                modes[code] = event.value
        out: dict[str, Any] = {"modes": modes}
        for name in ("first_step", "first_agent", "note"):
            event = self.cells.get((key, name, "", who))
            out[name] = event.value if event is not None else None
        return out

    def reviewed(self, position: int) -> bool:
        """Every mode the judge assessed has a value from this reviewer."""
        item = self.item(position)
        key = item.key
        return all(
            (key, "mode", code, self.reviewer) in self.cells
            for code, v in item.judge.items()
            if v is not None
        )

    def resume_position(self) -> int:
        """The first trace of the queue this reviewer has not finished (the last one when all are)."""
        return next((p for p in range(len(self)) if not self.reviewed(p)), len(self) - 1)

    def record(
        self, position: int, changes: list[dict[str, Any]], *, steps: list[int] | None = None
    ) -> list[GoldEvent]:
        """Append the reviewer's changes to the gold (on disk when this returns) and return the events.

        Each change is ``{"field": "mode", "code": "1.3", "value": "present"}`` (or ``accept``:
        the judge's value for every mode not yet set), ``{"field": "first_step", "value": 4}``, ...
        ``steps`` are the trace's step numbers, when known: a first failing step must be one of them.

        Raises:
            UsageError: a change of an unknown field, code or value, or a step the trace does not
                have (nothing of the batch is written).
        """
        item = self.item(position)
        events = []
        for change in changes:
            events.extend(self._events(item, change))
        for event in events:
            if event.field == "first_step" and event.value is not None and steps and event.value not in steps:
                raise UsageError(
                    f"step {event.value} is not a step of this trace (its steps are {min(steps)} to {max(steps)})"
                )
        assert self._store is not None
        self._store.append(events)
        for event in events:
            self.cells[event.cell()] = event
        return events

    def _events(self, item: ReviewItem, change: dict[str, Any]) -> list[GoldEvent]:
        common = {
            "key": item.key,
            "trace_id": item.trace_id,
            "source_path": item.source_path,
            "source_record": item.source_record,
            "reviewer": self.reviewer,
            "queue": self.queue,
        }
        name = change.get("field")
        if name == "accept":
            return [
                GoldEvent(field="mode", code=code, value=judged, judge=judged, **common)
                for code, judged in item.judge.items()
                if judged is not None and (item.key, "mode", code, self.reviewer) not in self.cells
            ]
        value = change.get("value")
        if name == "mode":
            code = change.get("code")
            if code not in self.tax.codes or value not in MODE_VALUES:
                raise UsageError(f"not a mode and value: {str(code)[:20]!r}, {str(value)[:20]!r}")
            return [
                GoldEvent(field="mode", code=code, value=value, judge=item.judge.get(str(code)), **common)
            ]
        if name == "first_step":
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise UsageError("first_step must be a step number (0 or more) or null")
            return [GoldEvent(field="first_step", value=value, judge=item.first_step, **common)]
        if name in ("first_agent", "note"):
            if value is not None and (not isinstance(value, str) or len(value) > 20_000):
                raise UsageError(f"{name} must be text of at most 20,000 characters")
            judged = item.first_agent if name == "first_agent" else None
            return [GoldEvent(field=name, value=value, judge=judged, **common)]
        raise UsageError(f"unknown field {str(name)[:20]!r}")

    def close(self) -> None:
        """Close the gold file."""
        if self._store is not None:
            self._store.close()

    # -- live agreement --------------------------------------------------------------------------

    def stats(self, *, n_boot: int = 500, seed: int = 0) -> list[ModeStats]:
        """Per-mode kappa of the judge against every reviewer's random-queue cells (``unsure`` left out)."""
        return live_stats(self.cells.values(), self.tax.codes, n_boot=n_boot, seed=seed)


def live_stats(
    events: Any,
    codes: list[str],
    *,
    n_boot: int = 500,
    seed: int = 0,
    queues: tuple[Queue, ...] = ("random",),
) -> list[ModeStats]:
    """Kappa per mode of ``judge`` vs ``value`` over the current mode cells of ``events``, CI by trace bootstrap.

    Only cells of ``queues`` count: the improve queue is a biased sample by design.
    """
    units: dict[str, int] = {}
    index = {c: i for i, c in enumerate(codes)}
    rows: list[tuple[int, int, int]] = []
    for event in events:
        if (
            event.field != "mode"
            or event.queue not in queues
            or event.code not in index
            or event.value not in ("present", "absent")
            or event.judge not in ("present", "absent")
        ):
            continue
        gold, pred = event.value == "present", event.judge == "present"
        outcome = 0 if gold and pred else 1 if pred else 2 if gold else 3
        rows.append((units.setdefault(event.key, len(units)), index[event.code], outcome))
    cube = np.zeros((len(units), len(codes), 4))
    for unit, column, outcome in rows:
        cube[unit, column, outcome] += 1
    point = metrics_from_counts(cube.sum(axis=0))
    intervals: list[tuple[float, float] | None] = [None] * len(codes)
    if units and n_boot:
        resampled = np.einsum("bt,tmk->bmk", bootstrap_weights(len(units), n_boot, seed), cube)
        kappas = metrics_from_counts(resampled, estimable_only=False)[
            "kappa"
        ]  # as mast.evaluation.core's CIs
        intervals = [percentile_interval(kappas[:, j]) for j in range(len(codes))]
    out = []
    for j, code in enumerate(codes):
        counts = cube[:, j, :]
        n = int(counts.sum())
        kappa = float(point["kappa"][j])
        tp, fp, fn, tn = (float(v) for v in counts.sum(axis=0))
        reason = kappa_not_estimable(tp, fp, fn, tn, gold="reviews") if n else None
        # Not estimable: no CI (it would be a zero-width [0, 0]) and no count of reviews still needed.
        bounds = None if reason is not None or math.isnan(kappa) else intervals[j]
        more: int | None = None
        if bounds is not None and n:
            reviewed = int((counts.sum(axis=1) > 0).sum())
            half = (bounds[1] - bounds[0]) / 2
            # The CI narrows like 1/sqrt(n): n * (half / target)^2 traces give a half width near the target.
            more = max(0, math.ceil(reviewed * (half / TARGET_HALF_WIDTH) ** 2) - reviewed)
        out.append(
            ModeStats(
                code=code,
                n=n,
                positives=int(counts[:, 0].sum() + counts[:, 2].sum()),
                kappa=None if reason is not None or math.isnan(kappa) else kappa,
                low=bounds[0] if bounds else None,
                high=bounds[1] if bounds else None,
                more_for_target=more,
                reason=reason,
            )
        )
    return out
