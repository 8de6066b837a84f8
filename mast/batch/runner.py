"""The batch core: judge a stream of traces concurrently, write each result as it finishes, resume, budget.

The judge is anything that satisfies :class:`~mast.batch.judges.BatchJudge` (a
:class:`mast.judge.Judge` or a jury as it is, or a plain function through
:class:`~mast.batch.judges.FunctionJudge`), so the same loop serves the LLM judge, the offline
detectors and other executors. Work items are pulled from an iterator one free slot at a time, so only the traces
in flight (and those prepared ahead of them) are in memory; the resume index holds keys, and the
report is running counts. One :class:`asyncio.Semaphore` bounds the traces in flight; rate limits and
the spending cap gate each start; a failure becomes an ``error`` result and never stops its siblings,
unless ``raise_on_error`` or the :class:`Breaker` says the whole run must stop (:meth:`BatchRunner.stop_on`).
"""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Literal

from mast.batch.breaker import CircuitBreaker
from mast.batch.inputs import WorkItem
from mast.batch.limits import Budget, RateLimiter, usd
from mast.batch.mixing import check_one_judge
from mast.batch.report import BatchReport, Outcome, file_error_line, result_error_line
from mast.batch.resume import (
    RESOLVED_PER_TRACE,
    ContentKey,
    ResumeIndex,
    content_key,
    copy_for,
    judge_fingerprint,
    resume_key,
    reusable_results,
)
from mast.batch.seams import (
    PREPARE_AHEAD,
    REQUEST_GATE,
    BatchJudge,
    Breaker,
    CallGate,
    Estimate,
    JudgeFn,
    RunStopped,
)
from mast.diagnosis import Diagnosis, ErrorInfo, empty_verdicts
from mast.errors import MastError, UsageError, error_info
from mast.results import ResultsFile
from mast.trace import Trace

__all__ = [
    "PREPARE_AHEAD",
    "REQUEST_GATE",
    "RESOLVED_PER_TRACE",
    "BatchJudge",
    "BatchReport",
    "BatchRunner",
    "Breaker",
    "RunStopped",
    "Estimate",
    "JudgeFn",
    "Outcome",
    "ProgressCallback",
    "ResultCallback",
    "content_key",
    "copy_for",
    "file_error_line",
    "judge_fingerprint",
    "result_error_line",
    "resume_key",
    "reusable_results",
]

INTERRUPTED_COUNT_S = 3.0
"""After Ctrl-C, the longest spent counting the traces not started."""

ResultCallback = Callable[[WorkItem, Diagnosis, Outcome], None]
"""Called with every result whole (a resumed one is read back from the output for it)."""

ProgressCallback = Callable[[BatchReport, WorkItem, Outcome, "Diagnosis | None"], None]
"""Called after every result with the running report; the diagnosis is ``None`` for a resumed
result (not read back: a rerun of a million traces reads only keys)."""


class BatchRunner:
    """Runs a :class:`BatchJudge` over a stream of work items; see :func:`mast.batch.aclassify_many`.

    Args:
        judge: the judge.
        concurrency: most traces judged at the same time.
        rpm: requests-per-minute limit (one request per trace start, corrected afterwards).
        tpm: tokens-per-minute limit (needs ``judge.estimate``).
        budget_usd: stop starting traces when spend + in-flight estimates would pass this.
        raise_on_error: re-raise the first failure and cancel the rest, instead of an ``error`` result.
        results: an open :class:`~mast.results.ResultsFile` to append each result to, and to resume from.
        on_result: called with each result whole, in completion order.
        on_progress: called after each result with the running report (cheaper: see :data:`ProgressCallback`).
        keep_results: keep every result for :attr:`results` (the API returns them; the CLI does not).
        breaker: asked after each judged trace whether the run must stop (default: a
            :class:`~mast.batch.breaker.CircuitBreaker`, which stops after a few identical setup
            errors: no key, unknown model, refused endpoint).
        one_judge: refuse (:class:`~mast.errors.UsageError`, before any input is read) an output
            holding results of another judge (:mod:`mast.batch.mixing`).
        on_notice: receives lines for the user the moment they matter (a Ctrl-C taken).
    """

    def __init__(
        self,
        judge: BatchJudge,
        *,
        concurrency: int = 8,
        rpm: float | None = None,
        tpm: float | None = None,
        budget_usd: float | None = None,
        raise_on_error: bool = False,
        results: ResultsFile | None = None,
        on_result: ResultCallback | None = None,
        on_progress: ProgressCallback | None = None,
        keep_results: bool = True,
        breaker: Breaker | None = None,
        one_judge: bool = False,
        on_notice: Callable[[str], None] | None = None,
    ) -> None:
        if concurrency < 1:
            raise UsageError(f"concurrency must be at least 1 (got {concurrency})")
        if budget_usd is not None and budget_usd < 0:
            raise UsageError(f"budget must not be negative (got {budget_usd})")
        self.judge = judge
        self.concurrency = concurrency
        self.limiter = RateLimiter(rpm=rpm, tpm=tpm)
        self.budget = Budget(budget_usd)
        self.raise_on_error = raise_on_error
        self.results_file = results
        self.on_result = on_result
        self.on_progress = on_progress
        self.keep_results = keep_results
        self.breaker: Breaker = breaker if breaker is not None else CircuitBreaker()
        self.one_judge = one_judge
        self.on_notice = on_notice
        self.report = BatchReport()
        self._kept: dict[int, Diagnosis] = {}
        self._unstarted: list[WorkItem] = []
        self._stopping = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._failure: BaseException | None = None
        self._interrupts = 0
        self._abandon_left = 0
        """Model calls in flight at the second Ctrl-C: the traces cancelled then count as abandoned."""
        self._judge_started = False
        self._gate: CallGate | None = None
        self._index = ResumeIndex()
        self._retried: set[int] = set()
        self._written: dict[ContentKey, int] = {}
        """Where this run's result for each content is: its offset in the output (or index in ``_kept``)."""
        self._in_flight: dict[ContentKey, list[WorkItem]] = {}
        """Identical traces waiting for the one in flight, by content."""

    @property
    def results(self) -> list[Diagnosis]:
        """Every result in input order, with a ``NotStarted`` placeholder for traces not started."""
        count = max([*self._kept, *(i.index for i in self._unstarted)], default=-1) + 1
        unstarted = {item.index: item for item in self._unstarted}
        return [self._kept.get(i) or self.not_started_result(unstarted[i]) for i in range(count)
                if i in self._kept or i in unstarted]

    # -- control -----------------------------------------------------------------------------------

    def stop(self, reason: Literal["budget", "interrupted", "failed"], message: str) -> None:
        """Start no more traces; the ones in flight finish and are written."""
        if not self._stopping:
            self._stopping = True
            self.report.stopped = reason
            self.report.message = message

    def stop_on(self, diagnosis: Diagnosis, exc: BaseException | None) -> None:
        """The one place a single trace's failure can stop the whole run.

        With ``raise_on_error`` the first exception stops it (and is raised at the end); otherwise
        the :class:`Breaker`, when there is one, decides. Traces not started are not written.
        """
        if exc is not None and self.raise_on_error:
            self._failure = self._failure or exc
            self._fail(f"stopped at the first failure: {error_info(exc)['message']}")
            for task in self._tasks:
                if task is not asyncio.current_task():
                    task.cancel()
            return
        reason = self.breaker.record(diagnosis, exc)
        if reason is not None:
            self._fail(reason)

    def _fail(self, message: str) -> None:
        self.stop("failed", message)
        self._close_gate()

    def _close_gate(self) -> None:
        if self._gate is not None:
            self._gate.closed = True  # traces prepared ahead must not call the model now

    def abort(self) -> None:
        """Stop now: cancel the traces in flight (their results are lost; the rest is written)."""
        self.stop("interrupted", "interrupted")
        for task in list(self._tasks):
            task.cancel()

    def handle_sigint(self) -> None:
        """First Ctrl-C: finish what is in flight, start nothing new; second: cancel it too."""
        self._interrupts += 1
        if self._interrupts == 1:
            # The traces prepared ahead wait at the gate: closed, none of them calls the model.
            self.stop("interrupted", "interrupted: finishing the traces in flight (Ctrl-C again to abandon them)")
            self._close_gate()
            self._say("interrupted: finishing the traces in flight, starting no more (Ctrl-C again to stop now; "
                      "those in flight are then judged on the next run)")
        else:
            self._say("interrupted again: stopping now; the traces in flight get no result and are judged on the next run")
            # Those waiting at the gate never called the model: they stay "not started".
            self._abandon_left = self._gate.holders if self._gate is not None else 0
            self.abort()

    def _say(self, line: str) -> None:
        if self.on_notice is not None:
            self.on_notice(line)

    # -- the run -----------------------------------------------------------------------------------

    async def run(self, items: Iterable[WorkItem], *, catch_sigint: bool = False) -> BatchReport:
        """Judge every item not already in the output; return the report (results in :attr:`results`)."""
        started_at = time.monotonic()
        self._prepare_resume()
        loop = asyncio.get_running_loop()
        if catch_sigint:
            loop.add_signal_handler(signal.SIGINT, self.handle_sigint)
        stream = iter(items)
        try:
            await self._feed(stream)
            await self._drain()
        finally:
            if catch_sigint:
                loop.remove_signal_handler(signal.SIGINT)
            if self._tasks:  # cancelled from outside, or failing fast: leave no orphan task behind
                for task in self._tasks:
                    task.cancel()
                await asyncio.gather(*self._tasks, return_exceptions=True)
            if self._judge_started:
                await self.judge.aclose()
            self._settle_unstarted(stream)
            self._drop_retried_errors()
            self.report.wall_s = time.monotonic() - started_at
        if self._failure is not None and self.raise_on_error:
            raise self._failure
        return self.report

    def _prepare_resume(self) -> None:
        """Index the results already in the output for this judge (keys only); drop crash leftovers."""
        if self.results_file is None:
            return
        self.report.repaired = self.results_file.repaired
        if self.one_judge:
            check_one_judge(self.results_file.path, self.judge.info)
        self._index = ResumeIndex.build(self.results_file.path, self.judge.info)
        if self._index.superseded:  # an error line whose input has a good result: a crash left both
            self.results_file.drop_lines(self._index.superseded)
            self._index = ResumeIndex.build(self.results_file.path, self.judge.info)

    def _settle_unstarted(self, stream: Iterator[WorkItem]) -> None:
        """Count (and, for :attr:`results`, remember) what was never started; nothing is written for it."""
        for waiting in self._in_flight.values():
            for item in waiting:  # twins of a trace that never finished (cancelled)
                self._not_started(item)
        self._in_flight.clear()
        if self.report.stopped is None:
            return
        # After a stop the rest of the input is still counted (the summary says how many are left),
        # and is not written. After Ctrl-C the user wants out: counting stops after a few seconds
        # (reading a large corpus takes long), and the count is then a lower bound.
        deadline = time.monotonic() + INTERRUPTED_COUNT_S if self.report.stopped == "interrupted" else None
        for item in stream:
            if deadline is not None and time.monotonic() > deadline:
                self.report.not_started_partial = True
                break
            if item.whole_file:
                self._account(item, None, "unreadable")
            else:
                self.report.total += 1
                self._not_started(item)

    def _drop_retried_errors(self) -> None:
        if self.results_file is not None and self._retried:
            self.report.retried = self.results_file.drop_lines(self._retried)

    async def _feed(self, stream: Iterator[WorkItem]) -> None:
        # ``slots`` bounds the traces started; the judge's model calls are bounded by the gate.
        slots = asyncio.Semaphore(self.concurrency * PREPARE_AHEAD)
        self._gate = CallGate(self.concurrency)
        REQUEST_GATE.set(self._gate)
        for item in stream:
            if item.whole_file:
                # A whole unreadable file has no trace id to resume by: reported, never written.
                self._account(item, None, "unreadable")
                continue
            self.report.total += 1
            if item.error is not None:
                self._finish(item, self._error_result(item, item.error), "unreadable")
            elif item.resume_key in self._index.done:
                self._finish_resumed(item)
            elif item.key in self._in_flight:
                self._in_flight[item.key].append(item)  # answered once the identical trace in flight is
                item.trace = None
            elif item.key in self._written or item.key in self._index.content:
                self._finish(item, copy_for(item, self._lookup(item.key)), "duplicate")
            else:
                await slots.acquire()
                if self._stopping or not await self._start(item, slots):
                    slots.release()
                    self._not_started(item)
                    break
            if self._stopping:
                break

    def _abandoned(self, item: WorkItem) -> None:
        self.report.abandoned += 1
        if self.keep_results:
            item.trace = None
            self._unstarted.append(item)

    def _not_started(self, item: WorkItem) -> None:
        self.report.not_started += 1
        if self.keep_results:
            item.trace = None
            self._unstarted.append(item)

    async def _start(self, item: WorkItem, slots: asyncio.Semaphore) -> bool:
        """Start judging ``item``; False when the budget says no."""
        try:
            trace = item.trace if item.trace is not None else _reload(item)
        except MastError as exc:
            slots.release()
            self._finish(item, self._error_result(item, exc), "unreadable")
            return True
        item.trace = None  # the task holds the only reference; freed once judged
        if not self._judge_started:
            self._judge_started = True
            await self.judge.start()
        estimate = self._estimate(trace)
        if estimate is not None and not self.budget.try_start(estimate.cost_usd or 0.0):
            self.stop("budget", self._budget_message(estimate.cost_usd or 0.0))
            return False
        if self.limiter.active:
            tokens = estimate.input_tokens + estimate.output_tokens if estimate else 0
            await self.limiter.acquire(requests=1, tokens=tokens)
        self._in_flight[item.key] = []
        task = asyncio.create_task(self._judge_one(item, trace, estimate, slots))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _drain(self) -> None:
        while self._tasks:
            await asyncio.wait(set(self._tasks))

    def _estimate(self, trace: Trace) -> Estimate | None:
        if self.budget.limit_usd is None and not self.limiter.active:
            return None
        estimate = self.judge.estimate(trace)
        if self.budget.limit_usd is not None and estimate.cost_usd is None:
            raise UsageError(
                f"cannot keep to --budget-usd: no price per token is known for model {self.judge.info.model!r}"
            )
        return estimate

    def _budget_message(self, estimate_usd: float) -> str:
        spent = self.budget.spent_usd + self.budget.in_flight_usd
        if self.budget.spent_usd == 0 and self.budget.in_flight_usd == 0:
            # Nothing was reached: one trace alone is estimated above the whole budget.
            return (
                f"the next trace alone is estimated at ${estimate_usd:.4f}, above the whole budget of "
                f"{usd(self.budget.limit_usd or 0.0)}: no trace was started. Give a larger --budget-usd "
                "(mast label --dry-run estimates the whole run)"
            )
        return (
            f"budget of {usd(self.budget.limit_usd or 0.0)} reached (about ${spent:.4f} spent or in flight); "
            "no new traces started. Run the same command again with a higher --budget-usd to continue"
        )

    async def _judge_one(self, item: WorkItem, trace: Trace, estimate: Estimate | None, slots: asyncio.Semaphore) -> None:
        diagnosis: Diagnosis | None = None
        failure: BaseException | None = None
        try:
            diagnosis = await self.judge.classify(trace, raise_on_error=self.raise_on_error, gate=self._gate)
        except asyncio.CancelledError:
            # Abandoned (second Ctrl-C, or a fast failure): judged on the next run. A second Ctrl-C
            # counts it apart from the traces never started, so the summary says what happened.
            if self._abandon_left > 0:
                self._abandon_left -= 1
                self._abandoned(item)
            else:
                self._not_started(item)
            raise
        except RunStopped:
            self._not_started(item)
            for twin in self._in_flight.pop(item.key, []):
                self._not_started(twin)
            return
        except Exception as exc:
            failure = exc
            diagnosis = self._error_result(item, exc)
        finally:
            slots.release()
            if estimate is not None:
                actual = diagnosis.usage.cost_usd if diagnosis is not None else None
                self.budget.finish(estimate=estimate.cost_usd or 0.0, actual=actual)
            if diagnosis is not None and self.limiter.active:
                planned = estimate.input_tokens + estimate.output_tokens if estimate else 0
                used = diagnosis.usage.input_tokens + diagnosis.usage.output_tokens
                self.limiter.settle(requests=max(0, diagnosis.usage.llm_calls - 1), tokens=used - planned)
        del trace
        self.stop_on(diagnosis, failure)
        if failure is not None and self.raise_on_error:
            return
        self._finish(item, diagnosis, "judged")
        for twin in self._in_flight.pop(item.key, []):
            # Its own line with its own source; none when it is the very same input twice.
            same_input = resume_key(diagnosis) == twin.resume_key
            self._finish(twin, copy_for(twin, diagnosis), "duplicate", write=not same_input)

    # -- results -----------------------------------------------------------------------------------

    def _finish(self, item: WorkItem, diagnosis: Diagnosis, outcome: Outcome, *, write: bool = True) -> None:
        if diagnosis.source.path is None and item.source.path is not None:
            diagnosis = diagnosis.model_copy(update={"source": item.source})
        ref = item.index
        if write and self.results_file is not None:
            ref = self.results_file.append(diagnosis)
            stale = self._index.errors.pop(item.resume_key, None)
            if stale is not None:
                self._retried.add(stale)
        if diagnosis.status != "error" and (self.results_file is not None or self.keep_results):
            self._written.setdefault(item.key, ref)
        if self.keep_results:
            self._kept[item.index] = diagnosis
        self._account(item, diagnosis, outcome)

    def _finish_resumed(self, item: WorkItem) -> None:
        done = self._index.done[item.resume_key]
        item.trace = None
        diagnosis: Diagnosis | None = None
        if self.keep_results or self.on_result is not None:
            assert self.results_file is not None
            diagnosis = self.results_file.read_at(done.offset)
            if self.keep_results:
                self._kept[item.index] = diagnosis
        self.report.count(
            done.status,
            "resumed",
            self._index.modes(done.present),
            self._index.modes(done.assessed),
            self._index.modes(done.hinted),
        )
        self._notify(item, diagnosis, "resumed")

    def _lookup(self, key: ContentKey) -> Diagnosis:
        """The result for identical content: written this run, or found in the output."""
        if key in self._written:
            ref = self._written[key]
            if self.results_file is None:
                return self._kept[ref]
            return self.results_file.read_at(ref)
        assert self.results_file is not None
        return self.results_file.read_at(self._index.content[key])

    def _account(self, item: WorkItem, diagnosis: Diagnosis | None, outcome: Outcome) -> None:
        if item.whole_file:
            self.report.file_errors.append(file_error_line(item))
            if self.keep_results and item.error is not None:
                diagnosis = self._error_result(item, item.error)  # in its place among the results
                self._kept[item.index] = diagnosis
        elif diagnosis is not None:
            self.report.count_diagnosis(diagnosis, outcome)
        self._notify(item, diagnosis, outcome)

    def _notify(self, item: WorkItem, diagnosis: Diagnosis | None, outcome: Outcome) -> None:
        if self.on_progress is not None:
            self.on_progress(self.report, item, outcome, diagnosis)
        if self.on_result is not None and diagnosis is not None:
            self.on_result(item, diagnosis, outcome)

    def _error_result(self, item: WorkItem, exc: BaseException) -> Diagnosis:
        return Diagnosis(
            trace_id=item.trace_id,
            source=item.source,
            trace_hash=item.trace_hash,
            status="error",
            error=ErrorInfo(**error_info(exc)),
            judge=self.judge.info,
            failure_modes=empty_verdicts(self.judge.taxonomy),
        )

    def not_started_result(self, item: WorkItem) -> Diagnosis:
        """The placeholder returned (never written) for a trace the run did not start."""
        reason = self.report.message or "not started"
        return Diagnosis(
            trace_id=item.trace_id,
            source=item.source,
            trace_hash=item.trace_hash,
            status="error",
            error=ErrorInfo(type="NotStarted", message=reason),
            judge=self.judge.info,
            failure_modes=empty_verdicts(self.judge.taxonomy),
        )


def _reload(item: WorkItem) -> Trace:
    from mast.batch.inputs import Reloader

    reloader = Reloader()
    try:
        return reloader.load(item)
    finally:
        reloader.close()
