"""Review the judge's labels in the browser and keep them as gold: ``mast review``.

:func:`review` opens a local review app over a results file (:mod:`mast.review.app`): the
transcript the judge read beside its verdicts; the reviewer marks each mode present / absent /
unsure, corrects the first failure, adds a note. Every action is appended to a gold JSONL at once
(:mod:`mast.review.gold`), which :mod:`mast.review.export` turns into the CSV ``mast evaluate --gold``
reads and into an Inspect Scout validation set, and ``mast validate --gold`` measures the judge on.

Example:
    >>> server = review("results.jsonl", gold="gold.jsonl", reviewer="ana", block=False)   # doctest: +SKIP
    >>> print(server.url)                                                                  # doctest: +SKIP
    >>> server.stop()                                                                      # doctest: +SKIP
"""

from __future__ import annotations

import os
import threading
import webbrowser

from mast.errors import UsageError
from mast.gold import GoldEvent, GoldStore, Queue, current_cells, iter_events, trace_key
from mast.review.app import ReviewServer
from mast.review.session import ReviewSession, live_stats
from mast.taxonomy import Taxonomy

__all__ = [
    "GoldEvent",
    "GoldStore",
    "ReviewServer",
    "ReviewSession",
    "current_cells",
    "iter_events",
    "live_stats",
    "review",
    "trace_key",
]


def review(
    results: str | os.PathLike[str],
    *,
    gold: str | os.PathLike[str] = "gold.jsonl",
    reviewer: str,
    queue: Queue = "random",
    sample: int | None = None,
    seed: int = 0,
    port: int = 0,
    open_browser: bool = True,
    block: bool = True,
    taxonomy: Taxonomy | None = None,
    redact_patterns: tuple[tuple[str, str], ...] = (),
) -> ReviewServer:
    """Serve the review app for ``results`` on 127.0.0.1, appending every action to ``gold``.

    With ``block`` (the CLI) it serves until interrupted; else it returns the running
    :class:`ReviewServer` (``.url``, ``.stop()``), as a notebook wants.

    Raises:
        UsageError: no results file, an empty reviewer name, an unknown queue, a port in use.
    """
    if queue not in ("random", "improve"):
        raise UsageError(f"queue must be 'random' or 'improve', not {queue!r}")
    session = ReviewSession(
        results, gold, reviewer=reviewer, queue=queue, sample=sample, seed=seed, taxonomy=taxonomy
    )
    server = ReviewServer(session, port=port, redact_patterns=redact_patterns).start()
    if open_browser:
        webbrowser.open(server.url)
    if not block:
        return server
    try:
        threading.Event().wait()  # until Ctrl-C (KeyboardInterrupt in the main thread)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return server
