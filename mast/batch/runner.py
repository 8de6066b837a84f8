"""The batch core: judge many traces concurrently, write each result as it finishes, resume, budget.

The judge is anything that satisfies :class:`~mast.batch.judges.BatchJudge` (a
:class:`mast.judge.Judge` as it is, or a plain function through
:class:`~mast.batch.judges.FunctionJudge`), so the same loop serves the LLM judge, the offline
detectors and, later, other executors. One :class:`asyncio.Semaphore` bounds the traces in flight; rate limits and
the spending cap gate each start; a failure becomes an ``error`` result and never stops its siblings
(unless ``raise_on_error``).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections.abc import Callable, Collection, Sequence
from contextvars import ContextVar
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mast._json import canonical_hash
from mast.batch.breaker import CircuitBreaker
from mast.batch.inputs import ContentKey, Reloader, ResumeKey, WorkItem
from mast.batch.judges import BatchJudge, JudgeFn
from mast.batch.limits import Budget, RateLimiter
from mast.batch.store import ResultsFile
from mast.diagnosis import Diagnosis, DiagnosisUsage, ErrorInfo, JudgeInfo, empty_verdicts
from mast.errors import MastError, UsageError, error_info, one_line
from mast.judge.budget import CostEstimate
from mast.trace import Trace

__all__ = ["BatchJudge", "BatchReport", "BatchRunner", "Estimate", "JudgeFn", "REQUEST_GATE", "judge_fingerprint"]

Estimate = CostEstimate
"""What judging one trace is expected to cost, before any call (the judge's own estimate)."""

Outcome = Literal["judged", "resumed", "duplicate", "unreadable"]
"""How a result came about: judged now, read back from the output, copied (with its own source)
from an identical trace judged earlier in the input or found in the output, or an input record
that could not be read."""

ResultCallback = Callable[[WorkItem, Diagnosis, Outcome], None]


REQUEST_GATE: ContextVar[asyncio.Semaphore | None] = ContextVar("mast_request_gate", default=None)
"""The batch's bound on model calls in flight, given to the judge's ``classify`` as its gate (tasks inherit it)."""

PREPARE_AHEAD = 2
"""Up to this many times ``concurrency`` traces are started at once: the extra
ones are prepared while the others wait on the provider; model calls in flight stay at ``concurrency``."""


RESOLVED_PER_TRACE = frozenset({"structured_output"})
"""``judge.params`` the judge records as configured in its identity but as resolved per trace (the
structured-output mode that answered): left out of :func:`judge_fingerprint`, like the cache key does."""


def judge_fingerprint(info: JudgeInfo, params: Collection[str] | None = None) -> str:
    """Hash of what identifies a judge's answers: kind, model, prompt, taxonomy and answer parameters.

    Args:
        info: the ``judge`` of a result, or a judge's own identity.
        params: the parameter names that identify the judge (those of its identity); a result's
            other parameters describe one judgement (windows, answer limits...) and are ignored.
            ``None``: every parameter.

    Two results with the same fingerprint, trace id and trace hash are interchangeable, so a rerun
    reuses the one already in the output.
    """
    payload = info.model_dump(mode="json", exclude={"strategy"})
    keep = (set(payload["params"]) if params is None else set(params)) - RESOLVED_PER_TRACE
    payload["params"] = {k: payload["params"].get(k) for k in sorted(keep)}
    return canonical_hash(payload)


def content_key(diagnosis: Diagnosis) -> ContentKey:
    """What the judged trace held: ``(trace_id, trace_hash)`` (see :attr:`WorkItem.key`)."""
    return (diagnosis.trace_id, diagnosis.trace_hash)


def resume_key(diagnosis: Diagnosis) -> ResumeKey:
    """The input a result belongs to: content plus source path and record (see :attr:`WorkItem.resume_key`)."""
    return (diagnosis.trace_id, diagnosis.trace_hash, diagnosis.source.path, diagnosis.source.record)


def reusable_results(
    path: str | os.PathLike[str], info: JudgeInfo, wanted: Collection[ContentKey]
) -> dict[ResumeKey, Diagnosis]:
    """Results in a results file that a run of the judge ``info`` over traces ``wanted`` can reuse.

    The resume key is trace id + content hash + the judge's answer parameters + source (path and
    record): a result is reused for the input it was written for when its trace id and content
    hash are wanted, its judge has the same :func:`judge_fingerprint` (kind, model, prompt, taxonomy
    and the parameters that change the answer, custom redaction patterns included), and it is not
    an ``error`` (errors are tried again). Keyed by :func:`resume_key`; an identical trace read
    from another file or record gets a copy with its own source, without a call.
    """
    identity = frozenset(info.params)
    mine = judge_fingerprint(info, identity)
    done: dict[ResumeKey, Diagnosis] = {}
    for _, diagnosis in ResultsFile.read(path):
        if (
            content_key(diagnosis) in wanted
            and diagnosis.status != "error"
            and judge_fingerprint(diagnosis.judge, identity) == mine
        ):
            done[resume_key(diagnosis)] = diagnosis
    return done


class BatchReport(BaseModel):
    """What a batch did: counts, spend and why it stopped early, if it did."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    total: int = 0
    """Traces selected (unreadable records included)."""
    statuses: dict[str, int] = Field(default_factory=lambda: {"judged": 0, "unjudgeable": 0, "error": 0})
    """Results by status, resumed ones included."""
    resumed: int = 0
    """Results read back from the output instead of judged again."""
    unreadable: int = 0
    """Input records that could not be read (written as ``error`` results)."""
    not_started: int = 0
    """Traces left for a later run (budget reached or interrupted)."""
    file_errors: list[str] = Field(default_factory=list)
    """``path: reason`` for each input file that could not be read (skipped)."""
    mode_counts: dict[str, int] = Field(default_factory=dict)
    """Judged traces with each mode present."""
    mode_assessed: dict[str, int] = Field(default_factory=dict)
    """Judged traces in which each mode was assessed (present or absent, not ``None``): the
    denominator of its prevalence. The offline detectors assess only some modes."""
    input_tokens: int = 0
    """Tokens sent in this run."""
    output_tokens: int = 0
    """Tokens received in this run."""
    llm_calls: int = 0
    """LLM calls made in this run."""
    cached: int = 0
    """Results answered without a call: by the judge's cache, or copied from an identical trace
    (same id and content) read from another file or record."""
    cost_usd: float = 0.0
    """Dollars spent in this run, where the price is known."""
    cost_unknown: int = 0
    """Traces judged with a model whose price litellm does not know."""
    wall_s: float = 0.0
    """Seconds the run took."""
    stopped: Literal["budget", "interrupted", "failed"] | None = None
    """Why the run stopped before starting every trace."""
    message: str | None = None
    """The reason in words."""
    retried: int = 0
    """``error`` results from an earlier run removed from the output to be judged again."""
    repaired: str | None = None
    """What was repaired in the output before resuming (a torn last line)."""

    @property
    def done(self) -> int:
        """Traces with a result."""
        return sum(self.statuses.values())

    @property
    def failed(self) -> int:
        """Results in ``error`` or ``unjudgeable``."""
        return self.statuses.get("error", 0) + self.statuses.get("unjudgeable", 0)

    @property
    def exit_code(self) -> int:
        """2: inputs could not be read; 1: some trace not judged (error, unjudgeable, not started); 0."""
        if self.file_errors or self.unreadable:
            return 2
        if self.failed or self.not_started or self.stopped:
            return 1
        return 0


class BatchRunner:
    """Runs a :class:`BatchJudge` over work items; see :func:`mast.batch.aclassify_many`.

    Args:
        judge: the judge.
        concurrency: most traces judged at the same time.
        rpm: requests-per-minute limit (one request per trace start, corrected afterwards).
        tpm: tokens-per-minute limit (needs ``judge.estimate``).
        budget_usd: stop starting traces when spend + in-flight estimates would pass this.
        raise_on_error: re-raise the first failure and cancel the rest, instead of an ``error`` result.
        results: an open :class:`ResultsFile` to append each result to, and to resume from.
        on_result: called after each result, in completion order.
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
        self.report = BatchReport()
        self.results: list[Diagnosis | None] = []
        self._stopping = False
        self._tasks: set[asyncio.Task[None]] = set()
        self._failure: BaseException | None = None
        self._started_at = 0.0
        self._interrupts = 0
        self._done: dict[ResumeKey, Diagnosis] = {}
        self._done_content: dict[ContentKey, Diagnosis] = {}
        self.breaker = CircuitBreaker()
        """Stops the run after a few identical setup errors (no key, unknown model, refused endpoint)."""

    # -- control -----------------------------------------------------------------------------------

    def stop(self, reason: Literal["budget", "interrupted", "failed"], message: str) -> None:
        """Start no more traces; the ones in flight finish and are written."""
        if not self._stopping:
            self._stopping = True
            self.report.stopped = reason
            self.report.message = message

    def abort(self) -> None:
        """Stop now: cancel the traces in flight (their results are lost; the rest is written)."""
        self.stop("interrupted", "interrupted")
        for task in list(self._tasks):
            task.cancel()

    def handle_sigint(self) -> None:
        """First Ctrl-C: finish what is in flight, start nothing new; second: cancel it too."""
        self._interrupts += 1
        if self._interrupts == 1:
            self.stop("interrupted", "interrupted: finishing the traces in flight (Ctrl-C again to abandon them)")
        else:
            self.abort()

    # -- the run -----------------------------------------------------------------------------------

    async def run(self, items: Sequence[WorkItem], *, catch_sigint: bool = False) -> BatchReport:
        """Judge every item not already in the output; return the report (results in :attr:`results`)."""
        self._started_at = time.monotonic()
        self.results = [None] * len(items)
        self.report.total = sum(1 for item in items if not item.whole_file)
        self._prepare_resume(items)
        loop = asyncio.get_running_loop()
        if catch_sigint:
            loop.add_signal_handler(signal.SIGINT, self.handle_sigint)
        try:
            if any(self._to_judge(item) for item in items):
                await self.judge.start()
            await self._feed(items)
            await self._drain()
        finally:
            if catch_sigint:
                loop.remove_signal_handler(signal.SIGINT)
            if self._tasks:  # cancelled from outside, or failing fast: leave no orphan task behind
                for task in self._tasks:
                    task.cancel()
                await asyncio.gather(*self._tasks, return_exceptions=True)
            await self.judge.aclose()
            self.report.not_started = sum(1 for r in self.results if r is None)
            self.report.wall_s = time.monotonic() - self._started_at
        if self._failure is not None and self.raise_on_error:
            raise self._failure
        return self.report

    def _prepare_resume(self, items: Sequence[WorkItem]) -> None:
        """Find the results already in the output for this judge; drop stale ``error`` lines to retry them."""
        if self.results_file is None:
            return
        self.report.repaired = self.results_file.repaired
        done = reusable_results(self.results_file.path, self.judge.info, {item.key for item in items})
        self._done = done
        self._done_content = {content_key(d): d for d in done.values()}
        # Errors are worth another try (rate limits pass, providers recover). Their old lines go
        # first, so each input keeps exactly one line in the file.
        inputs = {item.resume_key for item in items}
        self.report.retried = self.results_file.rewrite_without(
            lambda d: d.status == "error" and resume_key(d) in inputs and resume_key(d) not in done
        )

    def _to_judge(self, item: WorkItem) -> bool:
        """Whether ``item`` needs the judge: readable, and neither it nor an identical trace is in the output."""
        return item.error is None and item.resume_key not in self._done and item.key not in self._done_content

    async def _feed(self, items: Sequence[WorkItem]) -> None:
        # ``semaphore`` bounds the traces started; the judge's model calls are bounded by the gate.
        semaphore = asyncio.Semaphore(self.concurrency * PREPARE_AHEAD)
        REQUEST_GATE.set(asyncio.Semaphore(self.concurrency))
        reloader = Reloader()
        first_index: dict[ContentKey, int] = {}
        duplicates: list[WorkItem] = []
        try:
            for item in items:
                if self._stopping:
                    break
                if item.error is not None:
                    # An unreadable record gets an error line; a whole unreadable file has no
                    # trace id to resume by, so it is only reported.
                    self._finish(item, self._error_result(item, item.error), "unreadable", write=not item.whole_file)
                    continue
                previous = self._done.get(item.resume_key)
                if previous is not None:
                    self._finish(item, previous, "resumed", write=False)
                    continue
                if item.key in first_index:
                    duplicates.append(item)  # answered once the identical trace in flight is
                    continue
                same = self._done_content.get(item.key)
                if same is not None:  # identical content from another file or record is in the output
                    self._finish(item, _copy_for(item, same), "duplicate")
                    continue
                await semaphore.acquire()
                if self._stopping:
                    semaphore.release()
                    break
                try:
                    trace = item.trace if item.trace is not None else reloader.load(item)
                except MastError as exc:
                    semaphore.release()
                    self._finish(item, self._error_result(item, exc), "unreadable")
                    continue
                estimate = self._estimate(trace)
                if estimate is not None and not self.budget.try_start(estimate.cost_usd or 0.0):
                    semaphore.release()
                    self.stop("budget", self._budget_message())
                    break
                if self.limiter.active:
                    tokens = estimate.input_tokens + estimate.output_tokens if estimate else 0
                    await self.limiter.acquire(requests=1, tokens=tokens)
                first_index[item.key] = item.index
                task = asyncio.create_task(self._judge_one(item, trace, estimate, semaphore))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
                del trace  # the task holds the only reference; free it once judged
            await self._drain()
        finally:
            reloader.close()
        for item in duplicates:
            first = self.results[first_index[item.key]]
            if first is not None:
                # Its own line with its own source; none when it is the very same input twice.
                self._finish(item, _copy_for(item, first), "duplicate", write=resume_key(first) != item.resume_key)

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

    def _budget_message(self) -> str:
        spent = self.budget.spent_usd + self.budget.in_flight_usd
        return (
            f"budget of ${self.budget.limit_usd:.2f} reached (about ${spent:.4f} spent or in flight); "
            "no new traces started. Run the same command again with a higher --budget-usd to continue"
        )

    async def _judge_one(
        self, item: WorkItem, trace: Trace, estimate: Estimate | None, semaphore: asyncio.Semaphore
    ) -> None:
        diagnosis: Diagnosis | None = None
        try:
            diagnosis = await self.judge.classify(trace, raise_on_error=self.raise_on_error, gate=REQUEST_GATE.get())
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if self.raise_on_error:
                self._failure = self._failure or exc
                self.stop("failed", f"stopped at the first failure: {error_info(exc)['message']}")
                for task in self._tasks:
                    if task is not asyncio.current_task():
                        task.cancel()
                return
            diagnosis = self._error_result(item, exc)
        finally:
            semaphore.release()
            if estimate is not None:
                actual = diagnosis.usage.cost_usd if diagnosis is not None else None
                self.budget.finish(estimate=estimate.cost_usd or 0.0, actual=actual)
            if diagnosis is not None and self.limiter.active:
                planned = estimate.input_tokens + estimate.output_tokens if estimate else 0
                used = diagnosis.usage.input_tokens + diagnosis.usage.output_tokens
                self.limiter.settle(requests=max(0, diagnosis.usage.llm_calls - 1), tokens=used - planned)
        tripped = self.breaker.record(diagnosis)
        if tripped is not None:
            self.stop("failed", tripped)
        self._finish(item, diagnosis, "judged")

    def _finish(self, item: WorkItem, diagnosis: Diagnosis, outcome: Outcome, *, write: bool = True) -> None:
        if diagnosis.source.path is None and item.source.path is not None:
            diagnosis = diagnosis.model_copy(update={"source": item.source})
        if write and self.results_file is not None:
            self.results_file.append(diagnosis)
        self.results[item.index] = diagnosis
        self._account(item, diagnosis, outcome)
        if self.on_result is not None:
            self.on_result(item, diagnosis, outcome)

    def _account(self, item: WorkItem, diagnosis: Diagnosis, outcome: Outcome) -> None:
        report = self.report
        if item.whole_file:
            report.file_errors.append(file_error_line(item))
            return
        report.statuses[diagnosis.status] = report.statuses.get(diagnosis.status, 0) + 1
        if outcome == "resumed":
            report.resumed += 1
        elif outcome == "unreadable":
            report.unreadable += 1
        elif outcome == "duplicate":
            report.cached += int(diagnosis.usage.cached)
        if diagnosis.status == "judged":
            for verdict in diagnosis.failure_modes:
                if verdict.present is None:
                    continue
                report.mode_assessed[verdict.code] = report.mode_assessed.get(verdict.code, 0) + 1
                if verdict.present:
                    report.mode_counts[verdict.code] = report.mode_counts.get(verdict.code, 0) + 1
        if outcome == "judged":
            usage = diagnosis.usage
            report.input_tokens += usage.input_tokens
            report.output_tokens += usage.output_tokens
            report.llm_calls += usage.llm_calls
            report.cached += int(usage.cached)
            if usage.cost_usd is not None:
                report.cost_usd += usage.cost_usd
            elif usage.llm_calls:
                report.cost_unknown += 1

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


def _copy_for(item: WorkItem, diagnosis: Diagnosis) -> Diagnosis:
    """The result of an identical trace, for ``item``: its own source, and no call (as a cache hit)."""
    usage = DiagnosisUsage(cost_usd=0.0, cached=True) if diagnosis.status != "error" else DiagnosisUsage()
    return diagnosis.model_copy(update={"source": item.source, "usage": usage}, deep=True)


def result_error_line(diagnosis: Diagnosis) -> str:
    """``where: reason`` for an ``error`` result, naming the location once.

    Errors about reading a record (:class:`~mast.errors.TraceFormatError`) already start with
    ``path#record``; other errors (the judge's) get the location put in front.
    """
    where = diagnosis.source.path or diagnosis.trace_id
    if diagnosis.source.path is not None and diagnosis.source.record is not None:
        where += f"#{diagnosis.source.record}"
    message = diagnosis.error.message if diagnosis.error is not None else "error"
    if message.startswith((f"{where}:", f"{diagnosis.trace_id}:")):
        return message
    return f"{where}: {message}"


def file_error_line(item: WorkItem) -> str:
    """``path: reason`` for an unreadable input file, without saying the path twice."""
    error = item.error
    text = one_line(error) if error is not None else "unreadable"
    path = item.source.path or "input"
    return text if text.startswith(path) else f"{path}: {text}"
