"""The watch loop's rules with an in-memory trace store: quiet period, budget, durable position.

The store here is a second implementation of :class:`mast.sources.TraceSource` (the seam a Langfuse
or LangSmith source plugs into); the judge is the real offline detectors judge. The real Phoenix
server runs the same loop in ``test_phoenix.py``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path

import pytest

from mast.batch import ResultsFile, configured_judge
from mast.batch.table import read_results
from mast.batch.watch import Watcher, WatchState
from mast.errors import UsageError
from mast.judge.config import JudgeConfig
from mast.sources import RootSpan, TraceQuery
from mast.trace import Step, Trace


class MemoryStore:
    """Traces in a list, in arrival order; positions are arrival numbers."""

    def __init__(self) -> None:
        self.url = "memory://test/project"
        self.traces: list[Trace] = []
        self.spans: dict[str, int] = {}
        self.reads: list[str] = []

    def add(self, trace_id: str, spans: int) -> None:
        steps = [Step(index=i, agent=f"agent{i % 2}", content=f"{trace_id} says thing {i}") for i in range(3)]
        self.traces.append(Trace(trace_id=trace_id, task=f"task of {trace_id}", steps=steps))
        self.spans[trace_id] = spans

    def roots(self, query: TraceQuery) -> Iterator[RootSpan]:
        after = int(query.after) if query.after else 0
        for number, trace in enumerate(self.traces, start=1):
            if number > after:
                yield RootSpan(trace.trace_id, f"root-{trace.trace_id}", "run", None, str(number))

    def read(self, trace_ids: Sequence[str]) -> dict[str, Trace]:
        self.reads.extend(trace_ids)
        return {t.trace_id: t for t in self.traces if t.trace_id in trace_ids}

    def span_counts(self, trace_ids: Sequence[str]) -> dict[str, int]:
        return {t: self.spans[t] for t in trace_ids}

    def close(self) -> None:
        pass


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


def _watcher(store: MemoryStore, results: ResultsFile, tmp_path: Path, clock: Clock, **kwargs: object) -> Watcher:
    judge = configured_judge(JudgeConfig.from_options(judge="detectors"))
    return Watcher(store.url, results, judge, state_path=tmp_path / "state.json", source=store, clock=clock,
                   quiet=timedelta(seconds=30), **kwargs)  # type: ignore[arg-type]


async def test_a_trace_is_labelled_once_its_span_count_stayed_still_for_the_quiet_period(tmp_path: Path) -> None:
    store, clock = MemoryStore(), Clock()
    store.add("t1", spans=3)
    with ResultsFile(tmp_path / "r.jsonl") as results:
        watcher = _watcher(store, results, tmp_path, clock)
        first = await watcher.poll()
        assert (first.new, len(first.labelled), first.pending) == (1, 0, 1)
        clock.now += 20
        store.spans["t1"] = 5  # a late child span arrived: the quiet period starts again
        assert len((await watcher.poll()).labelled) == 0
        clock.now += 29
        assert len((await watcher.poll()).labelled) == 0
        clock.now += 1
        done = await watcher.poll()
        assert [d.trace_id for d in done.labelled] == ["t1"] and done.pending == 0
    assert [d.trace_id for d in read_results(tmp_path / "r.jsonl")] == ["t1"]


async def test_a_restarted_watcher_neither_relists_nor_relabels(tmp_path: Path) -> None:
    store, clock = MemoryStore(), Clock()
    store.add("t1", spans=2)
    store.add("t2", spans=2)
    with ResultsFile(tmp_path / "r.jsonl") as results:
        watcher = _watcher(store, results, tmp_path, clock)
        await watcher.poll()
        clock.now += 31
        assert len((await watcher.poll()).labelled) == 2
    store.add("t3", spans=1)
    with ResultsFile(tmp_path / "r.jsonl") as results:
        again = _watcher(store, results, tmp_path, clock)
        report = await again.poll()
        assert report.new == 1  # only t3 is new to the restarted watcher
        clock.now += 31
        assert [d.trace_id for d in (await again.poll()).labelled] == ["t3"]
    assert sorted(d.trace_id for d in read_results(tmp_path / "r.jsonl")) == ["t1", "t2", "t3"]


async def test_a_pending_trace_survives_a_restart_before_it_was_labelled(tmp_path: Path) -> None:
    store, clock = MemoryStore(), Clock()
    store.add("t1", spans=2)
    with ResultsFile(tmp_path / "r.jsonl") as results:
        await _watcher(store, results, tmp_path, clock).poll()  # seen, still in its quiet period
    state = WatchState.load(tmp_path / "state.json", store.url)
    assert state.position == "1" and list(state.pending) == ["t1"]
    clock.now += 31
    with ResultsFile(tmp_path / "r.jsonl") as results:
        report = await _watcher(store, results, tmp_path, clock).poll()
    assert [d.trace_id for d in report.labelled] == ["t1"]


async def test_a_spent_daily_budget_keeps_traces_waiting_until_the_next_day(tmp_path: Path) -> None:
    store, clock = MemoryStore(), Clock()
    store.add("t1", spans=1)
    with ResultsFile(tmp_path / "r.jsonl") as results:
        watcher = _watcher(store, results, tmp_path, clock, budget_usd=1.0)
        watcher.state.spent_usd, watcher.state.day = 1.0, "2027-01-15"  # the clock's day, already spent
        report = await watcher.poll()
        assert report.labelled == [] and report.pending == 1 and report.budget_left_usd == 0
        assert store.reads == []  # not even read
        clock.now += 86_400  # next UTC day: the budget starts again
        report = await watcher.poll()
        assert [d.trace_id for d in report.labelled] == ["t1"] and watcher.state.spent_usd == 0.0


def test_a_state_file_of_another_store_is_refused(tmp_path: Path) -> None:
    WatchState(url="phoenix://a:1/p").save(tmp_path / "s.json")
    with pytest.raises(UsageError, match="watch state of phoenix://a:1/p"):
        WatchState.load(tmp_path / "s.json", "phoenix://b:1/p")
