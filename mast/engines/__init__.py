"""``mast.label``: label files, folders and trace stores into a results file and sinks, on an engine.

:func:`label` is what ``mast label`` runs, as a Python function: the inputs are files, folders and
store URLs (``phoenix://...``, ``mlflow://...``: :mod:`mast.sources`, read a page at a time as the
run goes); every result is appended to ``output`` and handed, as it is written, to each sink
(:mod:`mast.sinks`: ``phoenix``, ``mlflow``, ``otel``); the work runs on the engine named::

    local      this process, asyncio (mast.batch.label)
    ray        a Ray cluster, one results file (mast.integrations.ray; pip install 'mast-judge[ray]')
    batch-api  the provider's batch API, about half price (mast.batch.provider_run)

Every engine keeps the same results file, resume key and report, so a run may move from one to
another and resume. The command line only turns options into these arguments.

Example:
    >>> import mast
    >>> report = mast.label(["mlflow://localhost:5000/agents"], output="results.jsonl",
    ...                     sinks=["mlflow"], model="openai/gpt-4.1-mini")      # doctest: +SKIP
    >>> report.statuses                                                         # doctest: +SKIP

How to add an engine
--------------------
An engine is a function with :func:`mast.batch.label`'s arguments (``paths``, ``output`` and the
keywords, ``on_result`` among them, which it calls with each result as it is written) that returns
a :class:`~mast.batch.report.BatchReport`. Register it by name: from another package, an entry
point in its ``pyproject.toml`` (``[project.entry-points."mast.engines"]``,
``threaded = "acme_mast.engine:threaded"``), or at run time :func:`register_engine` (the function, or
a ``"module:function"`` string imported when asked for). For example an engine that runs the local
one in a worker thread, for a caller that has a loop running::

    import threading

    from mast.engines import get_engine, register_engine

    local = get_engine("local")


    def threaded(paths, output, **kwargs):
        box = {}
        worker = threading.Thread(target=lambda: box.update(report=local(paths, output, **kwargs)))
        worker.start()
        worker.join()
        return box["report"]


    register_engine("threaded", threaded)

``mast.label(..., engine="threaded")`` then uses it, and ``mast label --engine`` lists it (its
choices are :func:`engine_names`, plugins included).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mast._registry import Registry
from mast.batch import BatchReport, Selection
from mast.batch.runner import ProgressCallback, ResultCallback
from mast.errors import UsageError
from mast.sinks import Sink, SinkSet, open_sinks
from mast.sources import StoreReader, TraceQuery, is_source_url

__all__ = ["Engine", "engine_names", "get_engine", "label", "open_run_sinks", "register_engine"]

Engine = Callable[..., BatchReport]
"""``engine(paths, output, **keywords) -> BatchReport`` (see the module docs)."""

_ENGINES: Registry[Engine] = Registry("engine", group="mast.engines", builtins={
    "local": "mast.batch.labelling:label",
    "ray": "mast.integrations.ray:label_engine",
    "batch-api": "mast.engines.provider:label_engine",
})
"""Engine name -> the function (``"module:function"`` imported when asked for); plugins join
through the ``mast.engines`` entry points."""


def register_engine(name: str, engine: Engine | str) -> None:
    """Make ``engine="name"`` run ``engine`` (or the ``"module:function"`` it names)."""
    _ENGINES.register(name, engine)


def engine_names() -> list[str]:
    """The registered engines, plugins included."""
    return _ENGINES.names()


def get_engine(name: str) -> Engine:
    """The engine registered as ``name``.

    Raises:
        UsageError: no such engine, or its extra is not installed.
    """
    return _ENGINES.get(name)


def label(
    inputs: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    sinks: Sequence[str | Sink] = (),
    engine: str = "local",
    query: TraceQuery | None = None,
    select: Selection | None = None,
    sink_options: Mapping[str, Any] | None = None,
    engine_options: Mapping[str, Any] | None = None,
    on_progress: ProgressCallback | None = None,
    on_result: ResultCallback | None = None,
    on_notice: Callable[[str], None] | None = None,
    **kwargs: Any,
) -> BatchReport:
    """Judge every trace of ``inputs`` into ``output`` and the ``sinks``, on ``engine``; return the report.

    Args:
        inputs: files, folders and trace-store URLs (``phoenix://HOST:PORT/PROJECT``,
            ``mlflow://HOST:PORT/EXPERIMENT``).
        output: the results file (``.jsonl``; ``.csv``/``.parquet`` also write a table).
        sinks: where each result goes besides ``output``, by name (:func:`mast.sinks.sink_names`)
            or as :class:`~mast.sinks.Sink` objects; ``"write-back"`` stands for the sink of each store read.
        engine: ``local``, ``ray``, ``batch-api`` or a registered one (:func:`engine_names`).
        query: which traces of the stores (since/until, limit, trace ids, root names, the store's filter).
        select: which files are read and which traces judged (:class:`mast.batch.Selection`).
        sink_options: options of the sinks (``otel_endpoint``...).
        engine_options: options of the engine (``ray``: ``address``, ``actors``).
        on_progress: called after every result with the running report.
        on_result: called with every result as it is written.
        on_notice: receives lines for the user.
        **kwargs: the engine's keywords: judge options (``model=``...) or ``config=``,
            ``concurrency``, ``budget_usd``, ``overwrite``, ``shard``... (see :func:`mast.batch.label`).

    Raises:
        UsageError: bad options, no trace found, an unknown sink or engine.
        SourceError: a store cannot be read.
    """
    given = [inputs] if isinstance(inputs, str | os.PathLike) else list(inputs)
    urls = [str(i) for i in given if isinstance(i, str) and is_source_url(i)]
    paths = [i for i in given if not (isinstance(i, str) and is_source_url(i))]
    run = get_engine(engine)
    reader = StoreReader(urls, query, keep_notes=bool(sinks)) if urls else None
    sink_set = open_run_sinks(sinks, reader, options=sink_options, on_notice=on_notice)
    select = select or Selection()
    if reader is not None:
        from dataclasses import replace

        select = replace(select, traces=reader)
    if engine_options:
        kwargs["engine_options"] = dict(engine_options)
    try:
        report = run(paths, output, select=select, on_progress=on_progress,
                     on_result=_both(on_result, sink_set.on_result if sink_set else None), on_notice=on_notice,
                     **kwargs)
    finally:
        if sink_set is not None:
            sink_set.close()
    if sink_set is not None:
        report.sink_failures = sink_set.failures
    return report


def open_run_sinks(
    sinks: Sequence[str | Sink], reader: StoreReader | None, *, urls: Sequence[str] = (),
    options: Mapping[str, Any] | None = None, on_notice: Callable[[str], None] | None = None,
) -> SinkSet | None:
    """The sinks of a run reading ``reader`` or ``urls`` (``"write-back"`` expanded), or ``None`` without any."""
    urls = reader.urls if reader is not None else urls
    names = _sink_names(sinks, urls)
    return open_sinks(names, reader=reader, urls=urls, options=options, on_notice=on_notice) if names else None


def _sink_names(sinks: Sequence[str | Sink], urls: Sequence[str]) -> list[str | Sink]:
    """The sinks asked for, ``"write-back"`` expanded.

    Raises:
        UsageError: a store's sink (``mlflow``, ``phoenix``) without an input from that store: it
            would write nothing, as ``--write-back`` refuses a run without a store input.
    """
    from mast.sinks import write_back_sinks
    from mast.sources import source_scheme

    read = {source_scheme(u) for u in urls}
    out: list[str | Sink] = []
    for sink in sinks:
        if sink == "write-back":
            out.extend(n for n in write_back_sinks(urls) if n not in out)
            continue
        if isinstance(sink, str) and source_scheme(f"{sink}://") == sink and sink not in read:
            raise UsageError(f"sink {sink!r} writes back to the {sink}:// traces a run reads, and this run reads "
                             f"none: a sink that writes back to a store needs a store input ({sink}://HOST:PORT/...)")
        if sink not in out:
            out.append(sink)
    return out


def _both(first: ResultCallback | None, second: ResultCallback | None) -> ResultCallback | None:
    if first is None or second is None:
        return first or second

    def both(item: Any, diagnosis: Any, outcome: Any) -> None:
        first(item, diagnosis, outcome)
        second(item, diagnosis, outcome)

    return both
