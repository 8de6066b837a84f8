"""Label many traces: concurrently, in input order, resumable, within a budget.

:func:`aclassify_many` is the real code; :func:`classify_many` wraps it for scripts. Both take
traces, files and folders (a file may hold many traces), judge each trace once, and return one
:class:`~mast.diagnosis.Diagnosis` per trace in input order. A trace that fails becomes a result with
``status="error"`` and the reason; it never stops the others (``raise_on_error=True`` does).

With ``output=`` every result is appended to a JSONL file as it finishes, and a rerun skips the
traces already there (same trace id, content hash, source file and record, and judge answer
parameters) without calling the LLM. The same trace read from two files gets a result line for
each, with its own ``source``, from one judgement.

Example:
    >>> import mast
    >>> results = mast.classify_many(["runs/"], model="openai/gpt-4.1-mini", concurrency=16,
    ...                              output="results.jsonl")          # doctest: +SKIP
    >>> mast.to_dataframe(results).groupby("status").size()          # doctest: +SKIP

(``to_dataframe`` is :func:`mast.results.to_dataframe`.)

Many machines: :func:`mast.label` with ``engine="ray"`` (see :mod:`mast.engines`). Without Ray,
give each machine the same inputs and its own shard, then concatenate the outputs::

    machine 1$ mast label runs/ --shard 1/3 -o part-1.jsonl
    machine 2$ mast label runs/ --shard 2/3 -o part-2.jsonl
    machine 3$ mast label runs/ --shard 3/3 -o part-3.jsonl
    $ cat part-*.jsonl > results.jsonl

A trace's shard is a stable hash of its id, so the shards never overlap and together cover the
input, whatever the machine or the order of the files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from mast.batch.inputs import WorkItem, count_files, parse_shard, scan
from mast.batch.judges import BatchJudge, FunctionJudge, JudgeFn, configured_judge
from mast.batch.labelling import (
    DryRunPlan,
    Selection,
    check_output,
    label,
    plan,
    read_work_items,
    results_path,
)
from mast.batch.report import file_error_line, result_error_line
from mast.batch.runner import (
    BatchReport,
    BatchRunner,
    Breaker,
    Estimate,
    ProgressCallback,
    ResultCallback,
    judge_fingerprint,
)
from mast.batch.table import TABLE_SUFFIXES, read_results, write_table
from mast.diagnosis import Diagnosis
from mast.errors import UsageError
from mast.judge.config import JudgeConfig
from mast.results import ResultsFile
from mast.trace import Trace

__all__ = [
    "BatchJudge",
    "BatchReport",
    "BatchRunner",
    "Breaker",
    "DryRunPlan",
    "Estimate",
    "FunctionJudge",
    "JudgeFn",
    "ProgressCallback",
    "ResultCallback",
    "ResultsFile",
    "TABLE_SUFFIXES",
    "Selection",
    "WorkItem",
    "aclassify_many",
    "check_output",
    "classify_many",
    "configured_judge",
    "count_files",
    "file_error_line",
    "judge_fingerprint",
    "label",
    "plan",
    "read_work_items",
    "read_results",
    "result_error_line",
    "results_path",
    "scan",
    "write_table",
]

TracesOrPaths = Trace | str | os.PathLike[str] | Iterable[Any]


async def aclassify_many(
    traces_or_paths: TracesOrPaths,
    *,
    config: JudgeConfig | None = None,
    judge_fn: JudgeFn | BatchJudge | None = None,
    concurrency: int = 8,
    rpm: float | None = None,
    tpm: float | None = None,
    budget_usd: float | None = None,
    output: str | os.PathLike[str] | None = None,
    overwrite: bool = False,
    format: str = "auto",
    recursive: bool = True,
    shard: str | tuple[int, int] | None = None,
    raise_on_error: bool = False,
    on_result: ResultCallback | None = None,
    batch_api: bool = False,
    batch_retry: str = "online",
    **options: Any,
) -> list[Diagnosis]:
    """Judge many traces concurrently; one result per trace, in input order.

    Args:
        traces_or_paths: a :class:`~mast.trace.Trace`, a path (file or folder), or an iterable of
            those (parsed objects such as message lists are read with
            :func:`mast.normalize.iter_traces`).
        config: the judge's configuration; built from ``options`` and ``MAST_*`` variables when
            ``None``.
        judge_fn: judge with this function (or any :class:`~mast.batch.judges.BatchJudge`, such as a
            :class:`mast.judge.Judge`) instead of the configured judge.
        concurrency: most traces judged at the same time.
        rpm: requests-per-minute limit.
        tpm: tokens-per-minute limit.
        budget_usd: start no trace once spend + in-flight estimates would pass this many dollars;
            the traces left out come back as ``error`` results of type ``NotStarted``.
        output: append each result to this JSONL file as it finishes, and skip traces already in it.
        overwrite: empty ``output`` first instead of resuming.
        format: source format of files (``auto`` detects it).
        recursive: walk sub-folders.
        shard: ``"i/n"`` or ``(i, n)``: judge only shard ``i`` of ``n`` (see the module docs).
        raise_on_error: raise the first failure and cancel the rest, instead of ``error`` results.
        on_result: called with ``(item, diagnosis, outcome)`` as each result arrives.
        batch_api: send the calls through the provider's batch API (about half price, results
            within 24 h; needs ``output``, beside which the batch state is kept; see
            :mod:`mast.batch.provider_run`). A rerun after any interruption resumes the same batches.
        batch_retry: ``online`` or ``batch``: how failed, expired or invalid batch items are asked again.
        **options: judge options (``model``, ``api_base``, ``temperature``...; see
            :class:`~mast.judge.config.JudgeConfig`).

    Returns:
        One :class:`~mast.diagnosis.Diagnosis` per trace, in input order (an unreadable input file
        gives one ``error`` result in its place).

    Raises:
        UsageError: bad options, or a path that does not exist.
        MastError: with ``raise_on_error=True``, the first failure.
    """
    if config is not None and options:
        raise UsageError("pass judge options either in config= or as keyword arguments, not both")
    if batch_api:
        if judge_fn is not None:
            raise UsageError("batch_api=True judges with the configured model; it does not take judge_fn=")
        return await _via_batch_api(traces_or_paths, config or JudgeConfig.from_options(**options), output,
                                    overwrite=overwrite, format=format, recursive=recursive, shard=shard,
                                    retry=batch_retry, on_result=on_result)
    batch_judge = _batch_judge(judge_fn, config, options)
    skip = [results_path(output)] if output is not None else []
    items = scan(_as_inputs(traces_or_paths), format=format, recursive=recursive, shard=_shard(shard), skip=skip)
    if raise_on_error:
        items = _raising(items)
    runner = BatchRunner(
        batch_judge,
        concurrency=concurrency,
        rpm=rpm,
        tpm=tpm,
        budget_usd=budget_usd,
        raise_on_error=raise_on_error,
        on_result=on_result,
    )
    if output is None:
        await runner.run(items)
    else:
        jsonl = results_path(output)
        with ResultsFile(jsonl, overwrite=overwrite) as results:
            runner.results_file = results
            await runner.run(items)
        if jsonl != Path(output):
            write_table(jsonl, output)
    return runner.results


def _raising(items: Iterable[WorkItem]) -> Iterator[WorkItem]:
    """The items, raising the first unreadable one's error (``raise_on_error``)."""
    for item in items:
        if item.error is not None:
            raise item.error
        yield item


async def _via_batch_api(
    traces_or_paths: TracesOrPaths,
    config: JudgeConfig,
    output: str | os.PathLike[str] | None,
    *,
    overwrite: bool,
    format: str,
    recursive: bool,
    shard: str | tuple[int, int] | None,
    retry: str,
    on_result: ResultCallback | None,
) -> list[Diagnosis]:
    from mast.batch.provider_run import arun_provider_batch

    if output is None:
        raise UsageError("batch_api=True needs output= (the batch state is kept beside the results file)")
    if retry not in ("online", "batch"):
        raise UsageError(f"batch_retry must be 'online' or 'batch' (got {retry!r})")
    items = list(scan(_as_inputs(traces_or_paths), format=format, recursive=recursive, shard=_shard(shard)))
    jsonl = results_path(output)
    with ResultsFile(jsonl, overwrite=overwrite) as results:
        run = await arun_provider_batch(items, config, results, retry="batch" if retry == "batch" else "online",
                                        on_result=on_result)
    if jsonl != Path(output):
        write_table(read_results(jsonl), output)
    return [r for r in run.results if r is not None]


def classify_many(traces_or_paths: TracesOrPaths, **kwargs: Any) -> list[Diagnosis]:
    """Blocking :func:`aclassify_many`; inside a running event loop (a notebook) it runs in a worker thread."""
    from mast._sync import run_sync

    return run_sync(aclassify_many(traces_or_paths, **kwargs))


def _as_inputs(value: TracesOrPaths) -> Iterable[Any]:
    if isinstance(value, Trace | str | os.PathLike):
        return [value]
    return value


def _shard(value: str | tuple[int, int] | None) -> tuple[int, int] | None:
    if value is None or isinstance(value, tuple):
        return parse_shard(f"{value[0]}/{value[1]}") if value else None
    return parse_shard(value)


def _batch_judge(judge: JudgeFn | BatchJudge | None, config: JudgeConfig | None, options: dict[str, Any]) -> BatchJudge:
    if isinstance(judge, BatchJudge):
        return judge
    configured = configured_judge(config or JudgeConfig.from_options(**options))
    return configured if judge is None else FunctionJudge(judge, configured)
