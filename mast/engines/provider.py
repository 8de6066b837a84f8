"""The ``batch-api`` engine: every trace read first, then judged through the provider's batch API.

About half the price of online calls, results within 24 h; resumable (the batch state is kept
beside the results file: :mod:`mast.batch.provider_run`). ``mast label --batch-api`` is this engine
plus its status, cancel and dry-run companions (``mast/cli/label_batch.py``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from typing import Any

from mast.batch import BatchReport, ResultsFile, Selection, read_work_items, results_path
from mast.batch.labelling import finish_run
from mast.batch.mixing import check_one_judge
from mast.batch.runner import ResultCallback
from mast.errors import UsageError
from mast.judge.config import JudgeConfig


def label_engine(
    paths: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    config: JudgeConfig | None = None,
    select: Selection | None = None,
    overwrite: bool = False,
    format: str = "auto",
    recursive: bool = True,
    shard: str | None = None,
    batch_retry: str = "online",
    on_result: ResultCallback | None = None,
    on_notice: Callable[[str], None] | None = None,
    catch_sigint: bool = False,
    **options: Any,
) -> BatchReport:
    """Judge the inputs through the provider's batch API into ``output``.

    Raises:
        UsageError: no LLM judge, or options this engine does not take.
    """
    from mast.batch.provider_run import arun_provider_batch

    for unused in ("on_progress", "breaker", "concurrency", "engine_options"):
        options.pop(unused, None)  # the provider paces a batch itself
    refused = [k for k in ("rpm", "tpm", "budget_usd", "router", "batch_judge") if options.pop(k, None) is not None]
    if refused:
        raise UsageError(f"the batch-api engine does not take {', '.join(refused)}")
    if batch_retry not in ("online", "batch"):
        raise UsageError(f"batch_retry must be 'online' or 'batch' (got {batch_retry!r})")
    if config is not None and options:
        raise UsageError("pass judge options either in config= or as keyword arguments, not both")
    config = config or JudgeConfig.from_options(**options)
    jsonl = results_path(output)
    if not overwrite and config.model and not (config.jury or config.samples > 1):
        from mast.judge.classify import Judge

        check_one_judge(jsonl, Judge(config).info)
    select = select or Selection()
    with ResultsFile(jsonl, overwrite=overwrite) as results:
        if results.repaired and on_notice is not None:
            on_notice(f"{jsonl}: {results.repaired}")
        items = read_work_items(paths, output, format=format, recursive=recursive, shard=shard, select=select,
                                on_notice=on_notice)
        run = asyncio.run(arun_provider_batch(items, config, results, retry="batch" if batch_retry == "batch" else "online",
                                              on_result=on_result, catch_sigint=catch_sigint))
    finish_run(run.report, paths, output, select=select, recursive=recursive, shard=shard)
    return run.report
