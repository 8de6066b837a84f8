"""``batch_api=True``: a whole labelling run through the provider's batch API, resumable after any kill.

The ordinary batch loop (:class:`~mast.batch.runner.BatchRunner`: resume, one result line per
trace, the report) runs unchanged, with every trace started at once and the judge's model calls
parked by a :class:`~mast.batch.provider_batch.ParkingBackend`. A driver beside it waits until
every started trace is parked or finished (the event loop has settled), then lets the
:class:`~mast.batch.provider_batch.BatchEngine` answer all parked requests in one round of
batches; traces then resume, finish (their results are written) or park again (aggregation calls,
batched re-asks), and the next round begins.

Example:
    >>> run = await arun_provider_batch(items, config, results_file)    # doctest: +SKIP
    >>> run.cost_usd, run.list_cost_usd, run.batches_submitted          # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mast.batch.batch_state import BatchStore
from mast.batch.inputs import WorkItem
from mast.batch.provider_batch import (
    CURRENT_TRACE,
    MAX_BATCH_BYTES,
    MAX_BATCH_REQUESTS,
    BatchEngine,
    BatchProgress,
    ParkingBackend,
    RetryMode,
    checkpoint,
)
from mast.batch.runner import BatchReport, BatchRunner, Outcome, ResultCallback
from mast.batch.store import ResultsFile
from mast.diagnosis import Diagnosis, JudgeInfo
from mast.errors import JudgeError, MastError, UsageError
from mast.judge.budget import CostEstimate
from mast.judge.config import JudgeConfig
from mast.judge.local import is_local
from mast.judge.strategy import Gate
from mast.trace import Trace

if TYPE_CHECKING:
    from mast.judge.classify import Judge

SETTLE_TICKS = 25
"""Event-loop turns without any parked call appearing or resuming before a round starts: the
judge's steps between model calls are synchronous, so a few turns let every started trace reach
its next call (windows are separate tasks, started one turn later)."""
IDLE_WAIT_S = 0.02
"""While some started trace is neither parked nor finished, the driver looks again after this long."""


@dataclass
class ProviderBatchRun:
    """What a batch-API run did."""

    report: BatchReport
    results: list[Diagnosis | None]
    """One result per item, in input order (``None``: not started)."""
    cost_usd: float
    """Dollars of the calls made in this run, at batch and cache rates."""
    list_cost_usd: float
    """The same tokens at list price (online, no cache)."""
    batches_submitted: int
    """Batches created at the provider by this run."""
    online_calls: int
    """Calls asked online (retries of failed items, re-asks)."""
    cached_input_tokens: int = 0

    @property
    def saving_usd(self) -> float:
        """List price minus what was paid."""
        return self.list_cost_usd - self.cost_usd


class _Driver:
    """Counts the traces in flight and lets the engine answer a round once all of them are parked."""

    def __init__(self, engine: BatchEngine) -> None:
        self.engine = engine
        self.active = 0
        self.started = 0

    async def run(self, runner_task: asyncio.Task[BatchReport]) -> None:
        while not runner_task.done():
            await self._settle(runner_task)
            if runner_task.done():
                return
            everyone_parked = len(self.engine.waiting) >= self.active
            if not (self.engine.parked and everyone_parked):
                await asyncio.wait({runner_task}, timeout=IDLE_WAIT_S)
                continue
            round_task = asyncio.create_task(self.engine.run_round())
            await asyncio.wait({round_task, runner_task}, return_when=asyncio.FIRST_COMPLETED)
            if not round_task.done():  # the run was abandoned (Ctrl-C twice): stop polling; the state resumes it
                round_task.cancel()
                await asyncio.gather(round_task, return_exceptions=True)
                return
            error = round_task.exception()
            if isinstance(error, MastError):
                self._fail_parked(error)
            elif error is not None:
                raise error

    async def _settle(self, runner_task: asyncio.Task[BatchReport]) -> None:
        stable = 0
        last: tuple[int, int, int] | None = None
        while stable < SETTLE_TICKS and not runner_task.done():
            await asyncio.sleep(0)
            now = (self.engine.activity, len(self.engine.parked), self.active)
            stable = stable + 1 if now == last else 0
            last = now

    def _fail_parked(self, exc: MastError) -> None:
        """The provider failed beyond retries: the waiting traces end in error (a rerun resumes the batches)."""
        error = exc if isinstance(exc, JudgeError) else JudgeError(str(exc))
        for key in list(self.engine.parked):
            parked = self.engine.parked.pop(key)
            for future in parked.futures:
                if not future.done():
                    future.set_exception(error)


class _CountedJudge:
    """A :class:`~mast.judge.Judge` over a parking backend, as a batch judge that the driver can follow.

    Each judgement gets its number in :data:`CURRENT_TRACE` (its window tasks inherit it), so the
    engine knows which judgements are parked, and the driver counts the judgements in flight.
    """

    def __init__(self, judge: Judge, driver: _Driver) -> None:
        self.judge = judge
        self.driver = driver
        self.taxonomy = judge.taxonomy

    @property
    def info(self) -> JudgeInfo:
        """The judge's own identity (a batch-API result resumes like an online one)."""
        return self.judge.info

    async def start(self) -> None:
        """Start the judge (its backend is the parking one)."""
        await self.judge.start()

    async def aclose(self) -> None:
        """Close the judge."""
        await self.judge.aclose()

    async def classify(self, trace: Trace, *, raise_on_error: bool = True, gate: Gate | None = None) -> Diagnosis:
        """Judge ``trace``, counted as in flight until its diagnosis is made."""
        self.driver.started += 1
        CURRENT_TRACE.set((self.driver.started, trace.trace_id))  # this task's own context: its windows inherit it
        self.driver.active += 1
        try:
            return await self.judge.classify(trace, raise_on_error=raise_on_error, gate=gate)
        finally:
            self.driver.active -= 1

    def estimate(self, trace: Trace) -> CostEstimate:
        """The judge's own estimate (list price)."""
        return self.judge.estimate(trace)


async def arun_provider_batch(
    items: Sequence[WorkItem],
    config: JudgeConfig,
    results: ResultsFile,
    *,
    retry: RetryMode = "online",
    max_requests: int = MAX_BATCH_REQUESTS,
    max_bytes: int = MAX_BATCH_BYTES,
    poll_interval: float | None = None,
    on_result: ResultCallback | None = None,
    on_progress: Callable[[BatchProgress], None] | None = None,
    catch_sigint: bool = False,
) -> ProviderBatchRun:
    """Judge ``items`` through the provider's batch API, writing results to ``results``.

    The batch state is kept beside the results file (:class:`~mast.batch.batch_state.BatchStore`);
    the same call after a crash resumes it: nothing is submitted twice, and every trace gets one line.

    Raises:
        UsageError: a local model or the offline detectors (no batch API), or a state file of another model.
        JudgeAPIError: the provider refused the batch endpoints (e.g. a provider litellm has no batch API for).
    """
    if config.kind == "detectors" or not config.model:
        raise UsageError("--batch-api needs an LLM judge: set --model (the offline detectors make no calls)")
    if is_local(config.model):
        raise UsageError("--batch-api needs a provider model; a local model has no batch API")
    if config.jury or config.samples > 1:
        raise UsageError("--batch-api judges with one model once per trace; it does not combine with --jury or --samples")
    from mast.judge.backend import LiteLLMBackend
    from mast.judge.classify import Judge

    # No answer cache: it reads in a thread, which the driver cannot see settle; the results file
    # and the saved batch answers already make a rerun free.
    config = config.model_copy(update={"cache": False})
    online = LiteLLMBackend.from_config(config)
    store = BatchStore(results.path)
    if results.overwrite:
        store.clear()
    engine = BatchEngine(
        online, store, retry=retry, max_requests=max_requests, max_bytes=max_bytes,
        poll_interval=poll_interval, on_progress=on_progress,
    )
    driver = _Driver(engine)
    judge = _CountedJudge(Judge(config, backend=ParkingBackend(online, engine)), driver)
    totals = {"cost": 0.0, "list": 0.0, "cached": 0.0}

    def noted(item: WorkItem, diagnosis: Diagnosis, outcome: Outcome) -> None:
        if outcome == "judged":
            usage = diagnosis.usage
            totals["cost"] += usage.cost_usd or 0.0
            totals["list"] += usage.list_cost_usd if usage.list_cost_usd is not None else usage.cost_usd or 0.0
            totals["cached"] += usage.cached_input_tokens
            checkpoint("result")
        if on_result is not None:
            on_result(item, diagnosis, outcome)

    runner = BatchRunner(judge, concurrency=max(1, len(items)), results=results, on_result=noted)
    started = time.monotonic()
    runner_task = asyncio.create_task(runner.run(items, catch_sigint=catch_sigint))
    try:
        await driver.run(runner_task)
        report = await runner_task
    finally:
        if not runner_task.done():
            runner_task.cancel()
    report.wall_s = time.monotonic() - started
    return ProviderBatchRun(
        report=report,
        results=list(runner.results),
        cost_usd=totals["cost"],
        list_cost_usd=totals["list"],
        batches_submitted=engine.batches_submitted,
        online_calls=engine.online_calls,
        cached_input_tokens=int(totals["cached"]),
    )
