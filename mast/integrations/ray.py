"""Label corpora on Ray: a Ray Data pipeline whose actors each hold one judge (``pip install 'mast-judge[ray]'``).

Two ways in:

* :func:`label_dataset` takes a Ray Dataset of traces (rows with a ``path``, a ``trace`` as JSON, or a
  raw ``record``) and returns a Dataset with one row per trace: the Diagnosis JSON (``diagnosis``)
  and flat columns (``status``, usage, one ``mode_<code>`` column per failure mode). Reading and
  normalising run as Ray tasks; judging runs in an actor pool whose actors each hold one judge and
  keep up to ``concurrency_per_actor`` calls in flight with asyncio.
* :func:`label_files` is ``mast label --engine ray``: the same pipeline over files and folders, with
  the local engine's guarantees. The driver is the single writer of the one results JSONL (the same
  file, lock, line format and resume key as the local engine), appending each result as its block
  arrives, so a killed run loses only what was in flight and a rerun skips finished inputs (the
  actors receive the finished keys and pass those inputs through without a call). A result that
  reaches the driver twice (a block re-sent after a worker died) is written once. ``budget_usd`` is
  kept by one budget actor that every judge actor reserves from before a call and settles after.

Ray runs locally (``ray.init()`` on this machine) unless ``address`` names a cluster (``"auto"``:
the one this machine belongs to). Actors take a fraction of a CPU (they wait on the network), so a
2-core machine still has CPUs for the read tasks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

from mast.batch.breaker import CircuitBreaker
from mast.batch.inputs import WorkItem, parse_shard
from mast.batch.labelling import (
    Selection,
    check_output,
    finish_run,
    notice_judge,
    results_path,
    walk_selected,
)
from mast.batch.limits import usd
from mast.batch.mixing import check_one_judge
from mast.batch.report import BatchReport, Outcome
from mast.batch.resume import ResumeIndex
from mast.batch.runner import Breaker, ProgressCallback, ResultCallback, copy_for
from mast.diagnosis import Diagnosis, SourceRef
from mast.errors import UsageError
from mast.integrations._ray_udfs import BudgetLedger, TraceJudge, read_rows
from mast.judge.config import JudgeConfig
from mast.normalize import iter_paths
from mast.results import ResultsFile

try:
    import ray
    import ray.data
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise UsageError("the Ray engine needs Ray: pip install 'mast-judge[ray]'") from exc

__all__ = ["init", "label_dataset", "label_engine", "label_files"]

ACTOR_CPUS = 0.25
"""CPUs reserved per judge actor: it mostly waits on the provider, and whole CPUs would starve the readers."""
READ_CPUS = 0.25
"""CPUs reserved per read task."""


def init(address: str | None = None, *, num_cpus: int | None = None, temp_dir: str | None = None) -> None:
    """Start Ray on this machine, or join ``address``; nothing when Ray is already running in this process.

    The temp folder is ``temp_dir``, else ``RAY_TMPDIR`` when set; the dashboard stays off.
    """
    # mast label draws its own progress; Ray Data's bars would redraw in the driver for nothing.
    ray.data.DataContext.get_current().enable_progress_bars = False
    if ray.is_initialized():
        return
    options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
    if address is not None:
        ray.init(address=address, **options)
        return
    temp = temp_dir or os.environ.get("RAY_TMPDIR")
    # Ray starts its workers at nice 15 (they are meant to yield to the node's other work); here the
    # workers are the judge actors doing the run itself, and at nice 15 any busy process on the machine
    # starves them (by CFS weights a nice-15 process gets ~3 % of a core beside a busy nice-0 one).
    # A local Ray is this run's own, so its workers run at the driver's priority.
    ray.init(num_cpus=num_cpus, _temp_dir=temp, _system_config={"worker_niceness": 0}, **options)


def label_dataset(
    ds: ray.data.Dataset,
    *,
    actors: int = 2,
    concurrency_per_actor: int = 32,
    router: str | os.PathLike[str] | None = None,
    format: str = "auto",
    shard: tuple[int, int] | None = None,
    config: JudgeConfig | None = None,
    _skip: Any = None,
    _budget: Any = None,
    **judge_options: Any,
) -> ray.data.Dataset:
    """Judge every trace of ``ds``; one result row per trace (see the module docs).

    Args:
        ds: rows with ``path`` (a trace file: every trace in it), ``trace`` (a :class:`~mast.trace.Trace`
            as JSON or dict) or ``record`` (a raw object :func:`mast.normalize.iter_traces` reads).
        actors: judge actors in the pool.
        concurrency_per_actor: calls in flight in each actor.
        router: a litellm Router YAML (:mod:`mast.batch.router`); each deployment's rpm/tpm is
            divided among the actors.
        format: source format of the files (``auto`` detects it).
        shard: ``(i, n)``: only shard ``i`` of ``n``.
        config: the judge's configuration.
        **judge_options: judge options instead of ``config`` (``model=``, ``api_base=``...).

    Example:
        >>> import ray.data
        >>> ds = ray.data.from_items([{"path": "runs/a.jsonl"}, {"path": "runs/b.json"}])  # doctest: +SKIP
        >>> label_dataset(ds, model="openai/gpt-4.1-mini").write_parquet("labels/")       # doctest: +SKIP
    """
    if actors < 1 or concurrency_per_actor < 1:
        raise UsageError("actors and concurrency_per_actor must be at least 1")
    config = config or JudgeConfig.from_options(**judge_options)
    # One batch fills an actor's calls: Ray runs an actor's batches one after another in practice
    # (measured: with half-size batches only half the calls were in flight), so a batch is the unit
    # of concurrency; a second one is queued to start as soon as the first is done.
    batch_size = max(1, min(256, concurrency_per_actor))
    batches_per_actor = 2
    read = ds.flat_map(read_rows, fn_kwargs={"format": format, "shard": shard}, num_cpus=READ_CPUS)
    # One file may hold thousands of traces: cut the read blocks into batch-sized ones, so every actor
    # gets work and each batch is a task of its own (a task slices its block into batches one by one).
    read = read.repartition(target_num_rows_per_block=batch_size)
    return read.map_batches(
        TraceJudge,
        batch_size=batch_size,
        batch_format="pyarrow",  # keeps None as null (NumPy would turn it into NaN)
        fn_constructor_kwargs={
            "config": config.model_dump_json(exclude={"api_key"})
            if config.api_key is None
            else _with_key(config),
            "concurrency": concurrency_per_actor,
            "router": str(router) if router else None,
            "share": actors,
            "skip": _skip,
            "budget": _budget,
        },
        compute=ray.data.ActorPoolStrategy(
            size=actors,
            max_tasks_in_flight_per_actor=batches_per_actor,
            max_concurrent_calls_per_actor=batches_per_actor,
        ),
        num_cpus=ACTOR_CPUS,
    )


def _with_key(config: JudgeConfig) -> str:
    """The configuration with its API key in clear: the actors need it to call the provider."""
    data = config.model_dump(mode="json")
    data["api_key"] = config.api_key.get_secret_value() if config.api_key else None
    import orjson

    return orjson.dumps(data).decode()


def label_files(
    paths: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    config: JudgeConfig,
    address: str | None = None,
    actors: int | None = None,
    concurrency: int = 32,
    budget_usd: float | None = None,
    overwrite: bool = False,
    format: str = "auto",
    recursive: bool = True,
    shard: str | None = None,
    router: str | os.PathLike[str] | None = None,
    on_progress: ProgressCallback | None = None,
    on_result: ResultCallback | None = None,
    on_notice: Callable[[str], None] | None = None,
    breaker: Breaker | None = None,
) -> BatchReport:
    """``mast label --engine ray``: every trace under ``paths`` into the results JSONL ``output``.

    Same file, resume and report as :func:`mast.batch.label` (see the module docs); ``concurrency``
    is per actor.

    Raises:
        UsageError: bad options, or the output is held by another run.
    """
    import time

    started = time.monotonic()
    init(address)
    actors = actors or max(2, int(ray.cluster_resources().get("CPU", 2) // 2))
    report = BatchReport()
    ledger = ray.remote(num_cpus=0)(BudgetLedger).remote(budget_usd) if budget_usd is not None else None
    with ResultsFile(output, overwrite=overwrite) as results:
        own = os.stat(output)
        files = [
            {"path": str(p)}
            for p in iter_paths(paths, recursive=recursive)
            if not os.path.samestat(os.stat(p), own)
        ]  # never read the output growing among the inputs
        if results.repaired and on_notice is not None:
            on_notice(f"{output}: {results.repaired}")
        report.repaired = results.repaired
        index = _index(results, config)
        skip = ray.put((set(index.done), set(index.content)))
        source = ray.data.from_items(files, override_num_blocks=max(1, min(len(files), 1000)))
        ds = label_dataset(
            source,
            actors=actors,
            concurrency_per_actor=concurrency,
            router=router,
            format=format,
            shard=parse_shard(shard) if shard else None,
            config=config,
            _skip=skip,
            _budget=ledger,
        )
        writer = _Writer(results, index, report, on_progress, breaker, on_result)
        if files:
            _drain(ds, writer)
        if writer.retried:
            report.retried = results.drop_lines(writer.retried)
    if ledger is not None and budget_usd is not None and report.not_started:
        state = ray.get(ledger.state.remote())
        report.stopped = "budget"
        report.message = (
            f"budget of {usd(budget_usd)} reached (about ${state['spent_usd']:.4f} spent); "
            f"{report.not_started} traces not started. Run again with a higher --budget-usd to continue"
        )
    report.wall_s = time.monotonic() - started
    return report


def _drain(ds: ray.data.Dataset, writer: _Writer) -> None:
    """Write every result as its block arrives; stop reading when the breaker stops the run."""
    for batch in ds.iter_batches(batch_size=None, batch_format="pyarrow"):
        for row in batch.to_pylist():
            writer.take(row)
            if writer.report.stopped == "failed":
                return  # what is in flight is abandoned with the pipeline; nothing more is written


def _index(results: ResultsFile, config: JudgeConfig) -> ResumeIndex:
    from mast.batch import configured_judge

    info = configured_judge(config).info
    index = ResumeIndex.build(results.path, info)
    if index.superseded:
        results.drop_lines(index.superseded)
        index = ResumeIndex.build(results.path, info)
    return index


def label_engine(
    paths: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    config: JudgeConfig,
    select: Selection,
    rpm: float | None = None,
    tpm: float | None = None,
    engine_options: dict[str, Any] | None = None,
    on_notice: Callable[[str], None] | None = None,
    catch_sigint: bool = False,
    **kwargs: Any,
) -> BatchReport:
    """The ``ray`` engine of :func:`mast.label`: its arguments, checked, to :func:`label_files`.

    Raises:
        UsageError: an option the Ray engine does not take.
    """
    if rpm or tpm:
        raise UsageError(
            "--engine ray shares rate limits through --router (rpm/tpm per deployment), not --rpm/--tpm"
        )
    if select.picks or select.traces:
        raise UsageError("--limit, --sample, --trace-id and trace-store inputs run with --engine local")
    if kwargs.pop("batch_judge", None) is not None:
        raise UsageError("the Ray engine builds its judges from config=; it does not take batch_judge=")
    from mast.batch import configured_judge

    recursive, shard = kwargs.pop("recursive", True), kwargs.get("shard")
    jsonl = results_path(check_output(output))
    files = list(walk_selected(paths, output, select, recursive, shard, on_notice))
    if not kwargs.get("overwrite"):
        check_one_judge(jsonl, configured_judge(config).info)
    notice_judge(config, on_notice)
    report = label_files(
        files, jsonl, config=config, on_notice=on_notice, recursive=False, **kwargs, **(engine_options or {})
    )
    finish_run(report, paths, output, select=select, recursive=recursive, shard=shard)
    return report


class _Writer:
    """The driver's side: append each result once, count it, report progress."""

    def __init__(
        self,
        results: ResultsFile,
        index: ResumeIndex,
        report: BatchReport,
        on_progress: ProgressCallback | None,
        breaker: Breaker | None,
        on_result: ResultCallback | None = None,
    ) -> None:
        self.results = results
        self.index = index
        self.report = report
        self.on_progress = on_progress
        self.on_result = on_result
        self.breaker = breaker
        self.seen: set[tuple[Any, ...]] = set()
        self.retried: set[int] = set()
        self.count = 0

    def take(self, row: dict[str, Any]) -> None:
        from mast.integrations._ray_udfs import _int

        record = _int(row["source_record"])
        key = (str(row["trace_id"]), _str(row["trace_hash"]), _str(row["source_path"]), record)
        outcome = str(row["outcome"])
        if key in self.seen:  # a block sent again after a worker died: written once already
            return
        self.seen.add(key)
        item = WorkItem(
            index=self.count,
            trace_id=key[0],
            trace_hash=key[1],
            source=SourceRef(path=key[2], format=_str(row["source_format"]), record=record),
            whole_file=outcome == "file_error",
        )
        self.count += 1
        diagnosis: Diagnosis | None = None
        if outcome == "file_error":
            self.report.file_errors.append(str(row["error"]))
            item.error = UsageError(str(row["error"]))
        elif outcome == "not_started":
            self.report.total += 1
            self.report.not_started += 1
        elif outcome == "resumed":
            self.report.total += 1
            done = self.index.done[key]
            self.report.count(
                done.status,
                "resumed",
                self.index.modes(done.present),
                self.index.modes(done.assessed),
                self.index.modes(done.hinted),
            )
        else:
            self.report.total += 1
            diagnosis = self._write(row, item, outcome, key)
        if self.on_progress is not None and (diagnosis is None and row.get("status") == "error"):
            diagnosis = Diagnosis.model_validate_json(str(row["diagnosis"]))  # the CLI prints error lines
        kind = "unreadable" if outcome == "file_error" else _outcome(outcome)
        if self.on_progress is not None:
            self.on_progress(self.report, item, kind, diagnosis)
        if self.on_result is not None and outcome not in ("file_error", "not_started"):
            if outcome == "resumed":
                diagnosis = self.results.read_at(self.index.done[key].offset)
            elif diagnosis is None:
                diagnosis = Diagnosis.model_validate_json(str(row["diagnosis"]))
            self.on_result(item, diagnosis, kind)

    def _write(
        self, row: dict[str, Any], item: WorkItem, outcome: str, key: tuple[Any, ...]
    ) -> Diagnosis | None:
        """Append the result; count it from its flat columns (parsing every Diagnosis would load the driver)."""
        diagnosis: Diagnosis | None = None
        if outcome == "duplicate":
            diagnosis = copy_for(item, self.results.read_at(self.index.content[key[:2]]))
            self.results.append(diagnosis)
            self.report.count_diagnosis(diagnosis, "duplicate")
        else:
            self.results.append_line(str(row["diagnosis"]).encode())
            self._count(row, "unreadable" if outcome == "unreadable" else "judged")
        stale = self.index.errors.pop(key, None)
        if stale is not None:
            self.retried.add(stale)
        if self.breaker is not None and outcome == "judged":
            # The default breaker reads only an error result's type and message: a result that is
            # not an error resets it, so the driver parses no Diagnosis for it (0.25 ms a trace).
            if isinstance(self.breaker, CircuitBreaker) and diagnosis is None and row["status"] != "error":
                reason = self.breaker.record(None)
            else:
                diagnosis = diagnosis or Diagnosis.model_validate_json(str(row["diagnosis"]))
                reason = self.breaker.record(diagnosis, None)
            if reason is not None:
                self.report.stopped, self.report.message = "failed", reason
        return diagnosis

    def _count(self, row: dict[str, Any], kind: Outcome) -> None:
        status = str(row["status"])
        judged = status == "judged"
        modes = [(name[5:], value) for name, value in row.items() if name.startswith("mode_")]
        self.report.count(
            status,
            kind,
            [c for c, v in modes if judged and v],
            [c for c, v in modes if judged and v is not None],
            [c for c in str(row.get("hinted") or "").split(",") if c and judged],
        )
        if kind != "judged":
            return
        report = self.report
        report.input_tokens += int(row["input_tokens"] or 0)
        report.output_tokens += int(row["output_tokens"] or 0)
        report.llm_calls += int(row["llm_calls"] or 0)
        report.cached += int(bool(row["cached"]))
        if row["cost_usd"] is not None:
            report.cost_usd += float(row["cost_usd"])
        elif row["llm_calls"]:
            report.cost_unknown += 1


def _outcome(value: str) -> Outcome:
    return value if value in ("judged", "resumed", "duplicate", "unreadable") else "judged"  # type: ignore[return-value]


def _str(value: Any) -> str | None:
    return None if value is None or (isinstance(value, float) and value != value) else str(value)


def shutdown() -> None:
    """Stop the Ray session this process started."""
    if ray.is_initialized():
        ray.shutdown()
