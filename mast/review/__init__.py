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
import sys
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
    "open_in_browser",
    "review",
    "trace_key",
]


def open_in_browser(url: str) -> str | None:
    """Open ``url`` in the user's browser (:mod:`webbrowser`): ``None`` when it was, else why not.

    On Linux without a graphical display (a server over SSH) nothing is started: :mod:`webbrowser`
    would fall back to a text browser that takes over the terminal and cannot run the page's script.
    ``BROWSER`` set still chooses the browser, as :mod:`webbrowser` documents.
    """
    if sys.platform.startswith("linux") and not any(
        os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")
    ):
        return "no graphical display and no BROWSER set"
    try:
        opened = webbrowser.open(url)
    except webbrowser.Error as exc:
        return f"the browser could not be started ({exc})"
    return None if opened else "no browser found"


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

    With ``block`` it writes the URL (with its token) to stderr and serves until interrupted
    (Ctrl-C); else it returns the running :class:`ReviewServer` (``.url``, ``.stop()``), as a
    notebook wants.

    ``open_browser`` opens the page in the user's browser (:func:`open_in_browser`).

    Raises:
        UsageError: no results file, an empty reviewer name, an unknown queue, a port in use.
        ResultsFileError: the results file cannot be read, or holds a line that is not a result.
    """
    if queue not in ("random", "improve"):
        raise UsageError(f"queue must be 'random' or 'improve', not {queue!r}")
    session = ReviewSession(
        results, gold, reviewer=reviewer, queue=queue, sample=sample, seed=seed, taxonomy=taxonomy
    )
    server = ReviewServer(session, port=port, redact_patterns=redact_patterns).start()
    if not block:
        if open_browser:
            open_in_browser(server.url)
        return server
    # Blocking, the caller cannot read ``server.url``: it is written to stderr (the token is in it).
    print(f"mast review: {server.url}", file=sys.stderr, flush=True)
    if open_browser and (why := open_in_browser(server.url)) is not None:
        print(f"mast review: no browser opened ({why}): open the URL above", file=sys.stderr, flush=True)
    try:
        threading.Event().wait()  # until Ctrl-C (KeyboardInterrupt in the main thread)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return server
