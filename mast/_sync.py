"""Run a coroutine to completion from synchronous code, also inside a running event loop.

A Jupyter cell already runs an event loop, where ``asyncio.run`` refuses to start another. There
the coroutine runs on a fresh loop in a worker thread and the caller waits for it, so
``mast.classify(...)`` works the same in a script and in a notebook (``await mast.aclassify(...)``
stays the way that does not block the notebook's loop).

Example:
    >>> async def two() -> int:
    ...     return 2
    >>> run_sync(two())
    2
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coroutine)``, or the same in a worker thread when a loop runs in this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    # One short-lived thread per call: the work is I/O-bound and its own loop lives and dies with it.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="mast-sync") as pool:
        return pool.submit(asyncio.run, coroutine).result()
