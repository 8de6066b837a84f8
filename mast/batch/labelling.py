"""Label a corpus into a results file: what ``mast label`` runs, as a Python function.

:func:`label` judges every trace under some paths into a resumable results file and returns the
:class:`~mast.batch.report.BatchReport`; :func:`plan` is its dry run. The command-line interface is a
thin layer over these two: it turns options into arguments, draws progress from the
``on_progress`` hook and prints the report. Nothing is held per trace beyond keys, so a corpus of a
million traces labels in the memory of a few.

This is the ``local`` engine (this process, asyncio). :func:`mast.label` (:mod:`mast.engines`) is the
front door above it: it also reads trace stores, feeds sinks and picks another engine by name
(``ray``, ``batch-api``) with the same results file, resume and summary.

Example:
    >>> from mast.batch import label
    >>> report = label(["runs/"], "results.jsonl", model="openai/gpt-4.1-mini")   # doctest: +SKIP
    >>> report.statuses                                                           # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from mast._words import plural
from mast.batch.breaker import CircuitBreaker
from mast.batch.estimates import last_estimate_check, learn_from_output, record_estimate
from mast.batch.inputs import Reloader, WorkItem, parse_shard, scan
from mast.batch.judges import BatchJudge, configured_judge
from mast.batch.mixing import check_one_judge
from mast.batch.pick import pick
from mast.batch.report import BatchReport, Outcome
from mast.batch.resume import ResumeIndex
from mast.batch.router import router_judge
from mast.batch.runner import BatchRunner, Breaker, ProgressCallback, ResultCallback
from mast.batch.table import TABLE_SUFFIXES, check_table_writer, write_table
from mast.batch.walk import FileSelection, no_traces_error, select_files, walk_files
from mast.diagnosis import Diagnosis
from mast.errors import UsageError
from mast.judge.config import JudgeConfig
from mast.results import ResultsFile, iter_records
from mast.trace import Trace

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
    """``None`` when the price is unknown."""
    model: str | None = None
    judge: str = "llm"
    answer_tokens: int | None = None
    """Output tokens per answer assumed, learnt from this judge's earlier results (``None``: the typical size)."""
    last_estimate: str | None = None
    """How far the previous dry run's estimate was from what was then used (:mod:`mast.batch.estimates`)."""


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
    check_table_writer(path)  # before any call: the table is written only when the run ends
    return path


@dataclass(frozen=True)
class Selection:
    """Which inputs a run reads and which traces of them it judges (``mast label``'s run controls).

    Attributes:
        include: extra globs a file name may match to be read from a folder (:mod:`mast.batch.walk`).
        exclude: globs that take files out.
        limit: judge only the first N traces.
        sample: judge a seeded random subset of N traces.
        sample_seed: the seed of ``sample``.
        trace_ids: judge only these traces (id, ``PATH`` or ``PATH#RECORD``).
        traces: traces from a trace store (a stream, such as :class:`mast.sources.StoreReader`), judged
            besides the files'.
        follow_symlinks: read links found in a folder whose target is outside it (skipped by default).
    """

    include: Sequence[str] = ()
    exclude: Sequence[str] = ()
    limit: int | None = None
    sample: int | None = None
    sample_seed: int = 0
    trace_ids: Sequence[str] = ()
    traces: Iterable[Trace] = ()
    follow_symlinks: bool = False

    @property
    def picks(self) -> bool:
        """Whether only some of the traces read are judged."""
        return bool(self.limit is not None or self.sample is not None or self.trace_ids)


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
    select: Selection | None = None,
    router: str | os.PathLike[str] | None = None,
    on_progress: ProgressCallback | None = None,
    on_result: ResultCallback | None = None,
    on_notice: Notice | None = None,
    breaker: Breaker | None = None,
    catch_sigint: bool = False,
    **options: Any,
) -> BatchReport:
    """Judge every trace under ``paths`` into the results file ``output``; return what the run did.

    Each result is appended to ``output`` as it finishes; a rerun skips what is there (same trace id,
    content, source and judge settings) and judges again what ended in ``error``. A ``.csv`` or
    ``.parquet`` output is exported from the ``.jsonl`` of the same name when the run ends. The output
    is never read as an input, and holds one judge's results: another judge's are refused
    (:mod:`mast.batch.mixing`) unless ``overwrite``.

    Args:
        paths: files and folders of traces.
        output: the results file.
        config: the judge's configuration (or judge ``options`` as keywords: ``model=``...).
        batch_judge: a ready :class:`BatchJudge` instead (local engine only).
        concurrency: model calls in flight.
        rpm: requests-per-minute limit.
        tpm: tokens-per-minute limit.
        budget_usd: start no trace once spend plus in-flight estimates would pass this.
        overwrite: empty ``output`` first instead of resuming.
        format: source format of the files (``auto`` detects it).
        recursive: walk sub-folders.
        shard: ``"i/n"``: only shard ``i`` of ``n`` (the no-dependency way to split a corpus).
        select: which files are read and which traces judged (:class:`Selection`).
        router: a litellm Router YAML file (:mod:`mast.batch.router`): calls spread over its deployments.
        on_progress: called after every result with the running report.
        on_result: called with every result whole as it is written (a resumed one read back for it):
            what the sinks of :func:`mast.label` are fed from.
        on_notice: receives lines for the user.
        breaker: decides when one trace's failure must stop the run (default: a
            :class:`~mast.batch.breaker.CircuitBreaker`).
        catch_sigint: Ctrl-C finishes the traces in flight, twice abandons them.
        **options: judge options, as :meth:`JudgeConfig.from_options` takes them.

    Raises:
        UsageError: bad options, a missing path, no trace found, an output held by another run or
            holding another judge's results.
    """
    output = check_output(output)
    select = select or Selection()
    config = _config(config, options)
    jsonl = results_path(output)
    files = _files(paths, output, jsonl, recursive, select, shard, on_notice)
    breaker = breaker if breaker is not None else CircuitBreaker()
    judge = batch_judge or (router_judge(config, router) if router is not None else configured_judge(config))
    _notice_judge(config, on_notice)
    if not overwrite:
        learn_from_output(judge, jsonl)  # estimates (--budget-usd, --tpm) start from its earlier answers
    seen: dict[SourceKey, str] = {}  # "" where two contents were read at one place

    def remember(report: BatchReport, item: WorkItem, outcome: Outcome, diagnosis: Diagnosis | None) -> None:
        # Every input of this run read as a trace (judged, resumed or a duplicate), by where it was
        # read: the keys for drop_superseded. No result is read back for it (on_progress sees resumed
        # items unread). A record that failed to read or judge replaces nothing.
        failed = item.error is not None or (diagnosis is not None and diagnosis.status == "error")
        if item.trace_hash is not None and not failed:
            key = _key(None, item.source.path, item.source.record, item.trace_id)
            seen[key] = item.trace_hash if seen.get(key, item.trace_hash) == item.trace_hash else ""
        if on_progress is not None:
            on_progress(report, item, outcome, diagnosis)

    runner = BatchRunner(judge, concurrency=concurrency, rpm=rpm, tpm=tpm, budget_usd=budget_usd,
                         keep_results=False, on_progress=remember, on_result=on_result, breaker=breaker,
                         one_judge=not overwrite, on_notice=on_notice)
    # The lock comes first: a second run on the same output stops before reading any input.
    with ResultsFile(jsonl, overwrite=overwrite) as results:
        if results.repaired and on_notice is not None:
            on_notice(f"{jsonl}: {results.repaired}")
        runner.results_file = results
        items = _items(files, jsonl, format, recursive, shard, select)
        asyncio.run(runner.run(items, catch_sigint=catch_sigint))
        # Only where one trace was read at a place: a file whose traces carry no record number
        # shares one key among them, and none of them may replace another.
        replaced = drop_superseded(results, {key: content for key, content in seen.items() if content})
        if replaced and on_notice is not None:
            on_notice(f"{jsonl}: {plural(replaced, 'older result')} replaced: the trace changed since it was judged")
    finish_run(runner.report, paths, output, select=select, recursive=recursive, shard=shard)
    return runner.report


SourceKey = tuple[str, str | int | None]
"""Which trace of which source a result is for, whatever its content (:func:`source_key`)."""


def source_key(diagnosis: Diagnosis) -> SourceKey:
    """A file and its record, or a store's trace: what stays the same when a trace's content changes."""
    source = diagnosis.source
    return _key(source.absolute_path, source.path, source.record, diagnosis.trace_id)


def _key(absolute: str | None, path: str | None, record: int | None, trace_id: str | None) -> SourceKey:
    # A store's traces share its URL, so a store trace is its URL and id; a file's trace is the
    # file (absolute: the result written records it, the one in memory may not yet) and its record,
    # never its id, which for many formats is a hash of the content that changed.
    if path is not None and "://" in path:
        return (path, trace_id)
    return (absolute or os.path.abspath(path or ""), record)


def drop_superseded(results: ResultsFile, current: Mapping[SourceKey, str]) -> int:
    """Drop the results of traces whose source now holds another content (``current``: key -> hash).

    A trace edited since its result was written is judged again (its content hash is new, so resume
    does not skip it); its old result would then sit beside the new one, and reports, diffs and
    evaluations would count the trace twice. One result per trace, the latest, as the hooks keep.
    The file's lines are read as plain JSON (no validation), once per run.
    """
    if not current:
        return 0
    stale = []
    for line, record in iter_records(results.path):
        source = record.get("source") or {}
        key = _key(source.get("absolute_path"), source.get("path"), source.get("record"), record.get("trace_id"))
        if key in current and record.get("trace_hash") != current[key]:
            stale.append(line.offset)
    return results.drop_lines(stale)


def walk_selected(paths: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str], select: Selection,
                  recursive: bool, shard: str | None, on_notice: Notice | None) -> Iterator[Path]:
    """The input files of a run writing ``output`` (for another engine); stops at once when there are none.

    Raises:
        UsageError: a bad output name, or no trace at all.
    """
    output = check_output(output)
    return _files(paths, output, results_path(output), recursive, select, shard, on_notice)


def finish_run(report: BatchReport, paths: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str], *,
               select: Selection, recursive: bool, shard: str | None) -> None:
    """What every engine does when its run ends: refuse a run that found nothing, export the table.

    Raises:
        UsageError: no trace was found.
    """
    output = Path(output)
    jsonl = results_path(output)
    if report.total == 0 and not report.file_errors and shard is None:  # a shard may rightly be empty
        stores = list(getattr(select.traces, "urls", ()))
        if stores and not paths:
            raise UsageError(f"no finished traces in {', '.join(stores)} matching the filters")
        raise no_traces_error([str(p) for p in paths], _walk(paths, output, jsonl, recursive, select))
    if jsonl != output:
        write_table(jsonl, output)


def _items(files: Iterable[Path], jsonl: Path, format: str, recursive: bool, shard: str | None,
           select: Selection) -> Iterable[WorkItem]:
    """The traces of ``files`` (and the stores' traces), sharded and picked, as a stream."""
    return pick(scan(chain(files, select.traces), format=format, recursive=recursive,
                     shard=parse_shard(shard) if shard else None, skip=[jsonl]),
                limit=select.limit, sample=select.sample, seed=select.sample_seed, trace_ids=select.trace_ids,
                stores=getattr(select.traces, "urls", ()))


def read_work_items(
    paths: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    format: str = "auto",
    recursive: bool = True,
    shard: str | None = None,
    select: Selection | None = None,
    on_notice: Notice | None = None,
) -> list[WorkItem]:
    """Every item :func:`label` would judge, read whole: for the provider batch API, which submits at once.

    Raises:
        UsageError: a bad output name, or no trace found.
    """
    output = check_output(output)
    select = select or Selection()
    jsonl = results_path(output)
    files = _files(paths, output, jsonl, recursive, select, shard, on_notice)
    return list(_items(files, jsonl, format, recursive, shard, select))


def _walk(paths: Sequence[str | os.PathLike[str]], output: Path, jsonl: Path, recursive: bool,
          select: Selection) -> FileSelection:
    return select_files(paths, recursive=recursive, include=select.include, exclude=select.exclude,
                        outputs=(output, jsonl), follow_symlinks=select.follow_symlinks)


def _files(paths: Sequence[str | os.PathLike[str]], output: Path, jsonl: Path, recursive: bool, select: Selection,
           shard: str | None, on_notice: Notice | None) -> Iterator[Path]:
    """The files to read, as the walk of :mod:`mast.batch.walk` finds them (no list of them is kept).

    The walk runs up to the first file before this returns, so a run with no trace at all stops
    here, before its output is opened. What was skipped goes to ``on_notice`` when the walk ends.
    """
    selection = FileSelection()
    walk = walk_files(paths, selection, recursive=recursive, include=select.include, exclude=select.exclude,
                      outputs=(output, jsonl), follow_symlinks=select.follow_symlinks)
    first = next(walk, None)
    if first is None:
        summary = selection.skipped_summary()
        if summary and on_notice is not None:
            on_notice(summary)
        if not select.traces and shard is None:
            raise no_traces_error([str(p) for p in paths], selection)
        return iter(())

    def files() -> Iterator[Path]:
        yield first
        yield from walk
        summary = selection.skipped_summary()
        if summary and on_notice is not None:
            on_notice(summary)

    return files()


def notice_judge(config: JudgeConfig, on_notice: Notice | None) -> None:
    """Tell ``on_notice`` what the judge is when it is not an LLM (no model: the offline detectors)."""
    _notice_judge(config, on_notice)


def _notice_judge(config: JudgeConfig, on_notice: Notice | None) -> None:
    from mast.judge.classify import judge_notice
    from mast.judge.jury import is_jury

    notice = judge_notice(config) if not is_jury(config) else None
    if notice and on_notice is not None:
        on_notice(notice)


def plan(
    paths: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    config: JudgeConfig | None = None,
    overwrite: bool = False,
    format: str = "auto",
    recursive: bool = True,
    shard: str | None = None,
    select: Selection | None = None,
    on_notice: Notice | None = None,
    **options: Any,
) -> DryRunPlan:
    """What :func:`label` would judge and what it would cost; no model is called (a dry run).

    Raises:
        UsageError: as :func:`label`.
    """
    output = check_output(output)
    select = select or Selection()
    config = _config(config, options)
    judge = configured_judge(config)
    _notice_judge(config, on_notice)
    jsonl = results_path(output)
    if not overwrite:
        check_one_judge(jsonl, judge.info)
    files = _files(paths, output, jsonl, recursive, select, shard, on_notice)
    index = ResumeIndex.build(jsonl, judge.info) if not overwrite and jsonl.exists() else ResumeIndex()
    result = DryRunPlan(model=judge.info.model, judge=judge.info.kind)
    if not overwrite:
        result.last_estimate = last_estimate_check(jsonl)
        if learn_from_output(judge, jsonl):
            result.answer_tokens = getattr(judge, "answer_tokens", None)
    started = False
    seen: set[tuple[str, str | None]] = set()
    cost: float | None = 0.0
    input_tokens = output_tokens = 0
    selected = pick(scan(chain(files, select.traces), format=format, recursive=recursive,
                         shard=parse_shard(shard) if shard else None, skip=[jsonl]),
                    limit=select.limit, sample=select.sample, seed=select.sample_seed, trace_ids=select.trace_ids,
                stores=getattr(select.traces, "urls", ()))
    reloader = Reloader()
    try:
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
            if not started:
                asyncio.run(judge.start())  # the backend counts tokens; starting it sends nothing
                started = True
            estimate = judge.estimate(item.trace if item.trace is not None else reloader.load(item))
            input_tokens += estimate.input_tokens
            output_tokens += estimate.output_tokens
            cost = None if cost is None or estimate.cost_usd is None else cost + estimate.cost_usd
    finally:
        reloader.close()
    if result.traces == 0 and not result.files_skipped and shard is None:
        raise no_traces_error([str(p) for p in paths], _walk(paths, output, jsonl, recursive, select))
    result.estimated_input_tokens, result.estimated_output_tokens = input_tokens, output_tokens
    result.estimated_cost_usd = cost
    if result.judge != "detectors":
        record_estimate(jsonl, to_judge=result.to_judge, input_tokens=input_tokens, output_tokens=output_tokens,
                        cost_usd=cost, model=result.model)
    return result


def _config(config: JudgeConfig | None, options: dict[str, Any]) -> JudgeConfig:
    if config is not None and options:
        raise UsageError("pass judge options either in config= or as keyword arguments, not both")
    return config or JudgeConfig.from_options(**options)
