"""Label a corpus into a results file: what ``mast label`` runs, as a Python function.

:func:`label` judges every trace under some paths into a resumable results file and returns the
:class:`~mast.batch.report.BatchReport`; :func:`plan` is its dry run. The command-line interface is a
thin layer over these two: it turns options into arguments, draws progress from the
``on_progress`` hook and prints the report. Nothing is held per trace beyond keys, so a corpus of a
million traces labels in the memory of a few.

``engine="ray"`` runs the same labelling on a Ray cluster (:mod:`mast.integrations.ray`), with the
same results file, resume and summary.

Example:
    >>> from mast.batch import label
    >>> report = label(["runs/"], "results.jsonl", model="openai/gpt-4.1-mini")   # doctest: +SKIP
    >>> report.statuses                                                           # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from mast.batch.inputs import parse_shard, scan
from mast.batch.report import BatchReport
from mast.batch.resume import ResumeIndex
from mast.batch.runner import BatchJudge, BatchRunner, Breaker, ProgressCallback
from mast.batch.table import TABLE_SUFFIXES, write_table
from mast.errors import UsageError
from mast.judge.config import JudgeConfig
from mast.results import ResultsFile

Engine = Literal["local", "ray"]
Notice = Callable[[str], None]
"""Receives a line for the user (the judge has no model, a torn line was repaired...)."""


class DryRunPlan(BaseModel):
    """What a run would do, counted without calling any model."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    traces: int = 0
    """Traces found (unreadable records included)."""
    already_done: int = 0
    """Traces with a reusable result in the output."""
    unreadable: int = 0
    """Records that could not be read."""
    files_skipped: int = 0
    """Input files that could not be read at all."""
    to_judge: int = 0
    """Distinct traces the run would judge."""
    estimated_input_tokens: int | None = None
    estimated_output_tokens: int | None = None
    estimated_cost_usd: float | None = None
    """``None`` when the price is unknown (or the judge cannot estimate)."""
    model: str | None = None
    judge: str = "llm"


def results_path(output: str | os.PathLike[str]) -> Path:
    """The JSONL file a batch writing ``output`` appends to and resumes from.

    Results always go to JSONL; for ``x.csv`` or ``x.parquet`` that is ``x.jsonl`` beside it, and the
    table is exported from it when the batch ends.
    """
    path = Path(output)
    if path.suffix.lower() in TABLE_SUFFIXES:
        return path.with_suffix(".jsonl")
    return path


def check_output(output: str | os.PathLike[str]) -> Path:
    """``output`` as a path, if its name says what to write.

    Raises:
        UsageError: neither ``.jsonl``/``.ndjson`` nor a table ending.
    """
    path = Path(output)
    if path.suffix.lower() not in (".jsonl", ".ndjson", *TABLE_SUFFIXES):
        raise UsageError(f"-o {path}: use a name ending in .jsonl (or .csv / .parquet for a table as well)")
    return path


def label(
    paths: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    config: JudgeConfig | None = None,
    batch_judge: BatchJudge | None = None,
    concurrency: int = 8,
    rpm: float | None = None,
    tpm: float | None = None,
    budget_usd: float | None = None,
    overwrite: bool = False,
    format: str = "auto",
    recursive: bool = True,
    shard: str | None = None,
    engine: Engine = "local",
    router: str | os.PathLike[str] | None = None,
    engine_options: dict[str, Any] | None = None,
    on_progress: ProgressCallback | None = None,
    on_notice: Notice | None = None,
    breaker: Breaker | None = None,
    catch_sigint: bool = False,
    **options: Any,
) -> BatchReport:
    """Judge every trace under ``paths`` into the results file ``output``; return what the run did.

    Each result is appended to ``output`` as it finishes; a rerun skips what is there (same trace id,
    content, source and judge settings) and judges again what ended in ``error``. A ``.csv`` or
    ``.parquet`` output is exported from the ``.jsonl`` of the same name when the run ends.

    Args:
        paths: files and folders of traces.
        output: the results file.
        config: the judge's configuration (or judge ``options`` as keywords: ``model=``...).
        batch_judge: a ready :class:`BatchJudge` instead (local engine only).
        concurrency: model calls in flight (with ``engine="ray"``: per actor).
        rpm: requests-per-minute limit.
        tpm: tokens-per-minute limit.
        budget_usd: start no trace once spend plus in-flight estimates would pass this.
        overwrite: empty ``output`` first instead of resuming.
        format: source format of the files (``auto`` detects it).
        recursive: walk sub-folders.
        shard: ``"i/n"``: only shard ``i`` of ``n`` (the no-dependency way to split a corpus).
        engine: ``local`` (this process) or ``ray`` (see :func:`mast.integrations.ray.label_files`).
        router: a litellm Router YAML file (:mod:`mast.batch.router`): calls spread over its deployments.
        engine_options: for ``ray``: ``address``, ``actors``, ``router``...
        on_progress: called after every result with the running report.
        on_notice: receives lines for the user.
        breaker: decides when one trace's failure must stop the run.
        catch_sigint: Ctrl-C finishes the traces in flight, twice abandons them.
        **options: judge options, as :meth:`JudgeConfig.from_options` takes them.

    Raises:
        UsageError: bad options, a missing path, or an output held by another run.
    """
    output = check_output(output)
    for given in paths:
        if not Path(given).exists():
            raise UsageError(f"{given}: no such file or folder")
    config = _config(config, options)
    jsonl = results_path(output)
    if engine == "ray":
        from mast.integrations.ray import label_files

        if rpm or tpm:
            raise UsageError("--engine ray shares rate limits through --router (rpm/tpm per deployment), not --rpm/--tpm")

        report = label_files(
            paths, jsonl, config=config, concurrency=concurrency, budget_usd=budget_usd, overwrite=overwrite,
            format=format, recursive=recursive, shard=shard, router=router, on_progress=on_progress,
            on_notice=on_notice, breaker=breaker, **(engine_options or {}),
        )
    else:
        from mast.batch import configured_judge

        judge = batch_judge
        if judge is None and router is not None:
            from mast.batch.router import router_judge

            judge = router_judge(config, router)
        judge = judge or configured_judge(config)
        if judge.notice and on_notice is not None:
            on_notice(judge.notice)
        runner = BatchRunner(judge, concurrency=concurrency, rpm=rpm, tpm=tpm, budget_usd=budget_usd,
                             keep_results=False, on_progress=on_progress, breaker=breaker)
        # The lock comes first: a second run on the same output stops before reading any input.
        with ResultsFile(jsonl, overwrite=overwrite) as results:
            if results.repaired and on_notice is not None:
                on_notice(f"{jsonl}: {results.repaired}")
            runner.results_file = results
            items = scan(paths, format=format, recursive=recursive, shard=parse_shard(shard) if shard else None,
                         skip=[jsonl])
            asyncio.run(runner.run(items, catch_sigint=catch_sigint))
        report = runner.report
    if jsonl != output:
        write_table(jsonl, output)
    return report


def plan(
    paths: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    config: JudgeConfig | None = None,
    overwrite: bool = False,
    format: str = "auto",
    recursive: bool = True,
    shard: str | None = None,
    on_notice: Notice | None = None,
    **options: Any,
) -> DryRunPlan:
    """What :func:`label` would judge and what it would cost; no model is called (a dry run).

    Raises:
        UsageError: as :func:`label`.
    """
    from mast.batch import configured_judge

    output = check_output(output)
    judge = configured_judge(_config(config, options))
    if judge.notice and on_notice is not None:
        on_notice(judge.notice)
    jsonl = results_path(output)
    index = ResumeIndex.build(jsonl, judge.info) if not overwrite and jsonl.exists() else ResumeIndex()
    result = DryRunPlan(model=judge.info.model, judge=judge.info.kind)
    started = judge.estimate is None or judge.start is None
    seen: set[tuple[str, str | None]] = set()
    cost: float | None = 0.0
    input_tokens = output_tokens = 0
    selected = scan(paths, format=format, recursive=recursive, shard=parse_shard(shard) if shard else None, skip=[jsonl])
    for item in selected:
        if item.whole_file:
            result.files_skipped += 1
            continue
        result.traces += 1
        if item.error is not None:
            result.unreadable += 1
            continue
        if item.resume_key in index.done:
            result.already_done += 1
            continue
        # An identical trace (same id and content) from another file or record costs no call.
        if item.key in index.content or item.key in seen:
            continue
        seen.add(item.key)
        result.to_judge += 1
        if judge.estimate is None or item.trace is None:
            continue
        if not started:
            asyncio.run(judge.start())  # type: ignore[misc]  # the backend counts tokens; starting it sends nothing
            started = True
        estimate = judge.estimate(item.trace)
        input_tokens += estimate.input_tokens
        output_tokens += estimate.output_tokens
        cost = None if cost is None or estimate.cost_usd is None else cost + estimate.cost_usd
    if judge.estimate is not None:
        result.estimated_input_tokens, result.estimated_output_tokens = input_tokens, output_tokens
        result.estimated_cost_usd = cost
    return result


def _config(config: JudgeConfig | None, options: dict[str, Any]) -> JudgeConfig:
    if config is not None and options:
        raise UsageError("pass judge options either in config= or as keyword arguments, not both")
    return config or JudgeConfig.from_options(**options)
