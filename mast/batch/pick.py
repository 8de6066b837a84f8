"""Which of the traces read a run judges: ``--trace-id``, ``--sample`` and ``--limit``.

With none of them the input streams through untouched. ``--limit`` alone streams too (the first N
traces, then the scan stops). ``--trace-id`` and ``--sample`` need the whole input first (a missing
id is an error before any call; a seeded subset needs the count), so they hold the items read,
traces beyond the scan's memory budget being reloaded when judged.

Example:
    >>> list(pick([], limit=3))
    []
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterable, Iterator, Sequence

from mast.batch.inputs import WorkItem
from mast.errors import UsageError

__all__ = ["pick", "pick_items"]


def pick(
    items: Iterable[WorkItem],
    *,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    trace_ids: Sequence[str] = (),
    stores: Sequence[str] = (),
) -> Iterable[WorkItem]:
    """The items to judge (see the module docs); unreadable whole files always pass (they are reported).

    ``stores``: the trace store URLs the items were read from too (named when an id is missing).

    Raises:
        UsageError: a ``--trace-id`` that matches no trace.
    """
    if trace_ids or sample is not None:
        return pick_items(list(items), limit=limit, sample=sample, seed=seed, trace_ids=trace_ids, stores=stores)
    if limit is None:
        return items
    return _first(items, limit)


def _first(items: Iterable[WorkItem], limit: int) -> Iterator[WorkItem]:
    taken = 0
    for index, item in enumerate(items):
        if not item.whole_file:
            if taken == limit:
                return
            taken += 1
        item.index = index
        yield item


def _where(item: WorkItem) -> set[str]:
    path = item.source.path
    if path is None:
        return {item.trace_id}
    absolute = _absolute(path)
    names = {item.trace_id, path, absolute}
    if item.source.record is not None:
        names |= {f"{path}#{item.source.record}", f"{absolute}#{item.source.record}"}
    return names


def _missing_message(trace_id: str, stores: Sequence[str], items: Sequence[WorkItem]) -> str:
    if not stores:
        return f"--trace-id {trace_id!r}: no such trace (`mast normalize PATH` lists ids)"
    from mast.sources import public_url

    urls = [public_url(s) for s in stores]
    any_files = any(i.source.path not in urls for i in items)
    files = " or in the files given (`mast normalize PATH` lists a file's ids)" if any_files else ""
    where = ", ".join(urls)
    return f"--trace-id {trace_id!r}: trace not found in {where} (among its finished traces){files}"


def _absolute(path: str) -> str:
    return os.path.normpath(os.path.abspath(path))


def _canonical(wanted: str) -> str:
    """``./data/x.txt``, ``data/x.txt`` and ``/abs/data/x.txt`` name one file: its absolute path (+ ``#record``)."""
    path, hash_, record = wanted.rpartition("#") if "#" in wanted else (wanted, "", "")
    if not (os.sep in path or "/" in path or os.path.exists(path)):
        return wanted  # a trace id
    return _absolute(path) + (f"#{record}" if hash_ else "")


def pick_items(
    items: Sequence[WorkItem],
    *,
    limit: int | None = None,
    sample: int | None = None,
    seed: int = 0,
    trace_ids: Sequence[str] = (),
    stores: Sequence[str] = (),
) -> list[WorkItem]:
    """The items to judge: by id or source, then a seeded random subset, then the first ``limit``.

    Unreadable whole files stay (they are reported, never judged). Items keep input order and are
    renumbered so a batch can index its results by position.

    Raises:
        UsageError: a ``--trace-id`` that matches no trace.
    """
    files = [i for i in items if i.whole_file]
    chosen = [i for i in items if not i.whole_file]
    if trace_ids:
        wanted = set(trace_ids) | {_canonical(t) for t in trace_ids}
        chosen = [i for i in chosen if _where(i) & wanted]
        found = set().union(*(_where(i) for i in chosen)) if chosen else set()
        missing = [t for t in trace_ids if t not in found and _canonical(t) not in found]
        if missing:
            raise UsageError(_missing_message(missing[0], stores, items))
    if sample is not None and sample < len(chosen):
        keep = set(random.Random(seed).sample(range(len(chosen)), sample))
        chosen = [item for n, item in enumerate(chosen) if n in keep]
    if limit is not None:
        chosen = chosen[:limit]
    result = [*files, *chosen]
    for index, item in enumerate(result):
        item.index = index
    return result
