"""Label a trace store's new traces as they finish: the loop behind ``mast watch``.

Each :meth:`Watcher.poll`:

1. lists the roots the store received after the saved *position* (its insertion order, so a long
   run that started early and ended late is not skipped) and adds their traces to *pending*;
2. counts each pending trace's spans; a trace is **finished** when its root span has arrived (OTel
   exports a span when it ends, so the root is there only once the run ended) and its span count
   has not changed for the *quiet period* (default 30 s: span exporters batch for up to 5 s by
   default, and a slow service may send its children a little after the root);
3. labels the finished traces into the results file through the batch runner (so a trace already in
   the file is never judged twice), within what is left of the day's budget (UTC days);
4. writes the state file (position, pending traces, the day's spend) atomically.

The position moves forward only with the pending set saved beside it, and a trace leaves pending
only once its result is in the results file, so a watcher killed at any point and started again
neither misses a trace nor labels one twice. A trace that ended in ``error`` is tried again on the
next polls, up to :data:`MAX_ATTEMPTS` times.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from mast.batch.inputs import scan
from mast.batch.runner import BatchJudge, BatchRunner
from mast.batch.store import ResultsFile
from mast.diagnosis import Diagnosis
from mast.sources import TraceQuery, TraceSource, open_source, public_url
from mast.trace import Trace

WATCH_STATE_VERSION: Final = "mast-watch/1"
DEFAULT_QUIET = timedelta(seconds=30)
MAX_ATTEMPTS = 3


class PendingTrace(BaseModel):
    """A trace whose root has arrived but which is not labelled yet."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    spans: int = -1
    """Spans counted at the last poll (-1: not counted yet)."""
    changed_at: float = 0.0
    """Watcher's clock (epoch seconds) when the count last changed."""
    root_span_id: str | None = None
    ended_at: float | None = None
    """When the store says the trace ended (epoch seconds), where it says so: the quiet period
    counts from there until the span count changes."""
    attempts: int = 0
    """Labelling attempts that ended in ``error``."""


class WatchState(BaseModel):
    """What a watcher keeps on disk between polls and restarts."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    schema_version: Literal["mast-watch/1"] = WATCH_STATE_VERSION
    url: str
    """The store URL the state belongs to."""
    position: str | None = None
    """The last root the store listed to us (opaque; see :attr:`mast.sources.RootSpan.position`)."""
    pending: dict[str, PendingTrace] = Field(default_factory=dict)
    """Trace id -> pending trace."""
    day: str | None = None
    """UTC day the spend below belongs to."""
    spent_usd: float = 0.0
    """Dollars spent by the judge on :attr:`day`."""

    @classmethod
    def load(cls, path: Path, url: str) -> WatchState:
        """The saved state, or a fresh one."""
        if not path.exists():
            return cls(url=url)
        state = cls.model_validate_json(path.read_bytes())
        if state.url != url:
            from mast.errors import UsageError

            raise UsageError(f"{path}: watch state of {state.url}, not {url}; use another --state file")
        return state

    def save(self, path: Path) -> None:
        """Write atomically (a kill leaves the old or the new file, never half of one)."""
        tmp = path.with_name(path.name + ".tmp")
        with tmp.open("wb") as fh:
            fh.write(self.model_dump_json(indent=1).encode())
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)


@dataclass
class PollReport:
    """What one poll did."""

    new: int = 0
    """Roots seen for the first time."""
    finished: int = 0
    """Traces found finished and handed to the judge."""
    labelled: list[Diagnosis] = field(default_factory=list)
    """Results this poll wrote to the results file (judged now)."""
    results: list[Diagnosis] = field(default_factory=list)
    """Results of every finished trace, those already in the file included."""
    pending: int = 0
    """Traces still waiting (quiet period, budget, or a retry)."""
    cost_usd: float = 0.0
    budget_left_usd: float | None = None
    traces: dict[str, Trace] = field(default_factory=dict)
    """The finished traces read this poll, by id (for write-back)."""
    roots: dict[str, str] = field(default_factory=dict)
    """Trace id -> root span id of the finished traces (to parent OTel events)."""


class Watcher:
    """Polls one store URL and labels what finished; see the module docs."""

    def __init__(
        self,
        url: str,
        results: ResultsFile,
        judge: BatchJudge,
        *,
        state_path: Path,
        quiet: timedelta = DEFAULT_QUIET,
        budget_usd: float | None = None,
        query: TraceQuery | None = None,
        concurrency: int = 8,
        source: TraceSource | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        """Watch ``url`` into the open ``results`` file with ``judge``; ``budget_usd`` is per UTC day."""
        self.url = url
        self.results = results
        self.judge = judge
        self.state_path = state_path
        self.quiet = quiet.total_seconds()
        self.budget_usd = budget_usd
        self.query = query or TraceQuery()
        self.concurrency = concurrency
        self.source = source or open_source(url)
        self.clock = clock
        self.state = WatchState.load(state_path, public_url(url))  # no password in the state file

    async def poll(self) -> PollReport:
        """One round: list, count, label what finished, save."""
        report = PollReport()
        now = self.clock()
        self._discover(report, now)
        finished = self._finished(now)
        budget_left = self._budget_left(now)
        report.budget_left_usd = budget_left
        if finished and (budget_left is None or budget_left > 0):
            await self._label(finished, report, budget_left)
        report.pending = len(self.state.pending)
        self.state.save(self.state_path)
        return report

    def _discover(self, report: PollReport, now: float) -> None:
        query = TraceQuery(since=self.query.since, root_names=self.query.root_names,
                           trace_ids=self.query.trace_ids, after=self.state.position or "", filter=self.query.filter)
        for root in self.source.roots(query):
            if root.trace_id not in self.state.pending:
                ended = root.end.timestamp() if root.end is not None else None
                self.state.pending[root.trace_id] = PendingTrace(changed_at=now, root_span_id=root.span_id,
                                                                 ended_at=ended)
                report.new += 1
            self.state.position = root.position
        # Saved before anything is judged: the position never runs ahead of the pending set on disk.
        self.state.save(self.state_path)

    def _finished(self, now: float) -> list[str]:
        ids = list(self.state.pending)
        counts = self.source.span_counts(ids) if ids else {}
        done: list[str] = []
        for trace_id in ids:
            entry = self.state.pending[trace_id]
            count = counts.get(trace_id, 0)
            if count != entry.spans:
                # The first count of a trace the store says ended at ended_at: quiet since then (a
                # trace that ended minutes ago is finished now); any later change starts it again.
                first = entry.spans == -1 and entry.ended_at is not None
                entry.spans = count
                entry.changed_at = min(now, entry.ended_at) if first and entry.ended_at is not None else now
            if count > 0 and now - entry.changed_at >= self.quiet:
                done.append(trace_id)
        return done

    def _budget_left(self, now: float) -> float | None:
        today = datetime.fromtimestamp(now, UTC).date().isoformat()
        if self.state.day != today:
            self.state.day, self.state.spent_usd = today, 0.0
        if self.budget_usd is None:
            return None
        return max(0.0, self.budget_usd - self.state.spent_usd)

    async def _label(self, trace_ids: Sequence[str], report: PollReport, budget_left: float | None) -> None:
        traces = self.source.read(trace_ids)
        for missing in set(trace_ids) - set(traces):
            del self.state.pending[missing]  # deleted from the store meanwhile
        # A store's trace ids are the traces' own; a folder's are file paths (mast.sources.folder):
        # results are matched to pending entries by position, not by the trace's id.
        ordered_ids = [t for t in trace_ids if t in traces]
        ordered = [traces[t] for t in ordered_ids]
        report.finished = len(ordered)
        report.roots = {t: p.root_span_id for t, p in self.state.pending.items() if p.root_span_id and t in traces}
        report.traces = traces
        items = list(scan(ordered))
        runner = BatchRunner(self.judge, concurrency=self.concurrency, budget_usd=budget_left)
        runner.results_file = self.results
        runner.on_result = lambda _item, diagnosis, outcome: (
            report.labelled.append(diagnosis) if outcome in ("judged", "duplicate") else None
        )
        await runner.run(items)
        results = runner.results
        # A trace labelled again after it grew (a resumed session, more spans) replaces its older
        # result, as hooks do: one row per trace in the results file, so reports count it once.
        fresh = {(d.trace_id, d.trace_hash) for d in report.labelled if d.status != "error"}
        if fresh:
            ids = {trace_id for trace_id, _ in fresh}
            self.results.rewrite_without(lambda d: d.trace_id in ids and (d.trace_id, d.trace_hash) not in fresh)
        for trace_id, result in zip(ordered_ids, results, strict=True):
            if _not_started(result):
                continue  # not started (budget): stays pending
            entry = self.state.pending[trace_id]
            if result.status == "error":
                entry.attempts += 1
                if entry.attempts < MAX_ATTEMPTS:
                    continue
            del self.state.pending[trace_id]
        report.results = [d for d in results if not _not_started(d)]
        report.cost_usd = runner.report.cost_usd
        self.state.spent_usd += runner.report.cost_usd

    def close(self) -> None:
        """Release the store's connections."""
        self.source.close()


def _not_started(result: Diagnosis) -> bool:
    """The runner's placeholder for a trace it did not start (budget): never written, stays pending."""
    return result.status == "error" and result.error is not None and result.error.type == "NotStarted"
