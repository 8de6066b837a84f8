"""A circuit breaker for batches: stop when the judge cannot work at all.

A missing or rejected API key, a model the provider does not know, or an endpoint that refuses
connections fails every trace the same way (:class:`~mast.errors.JudgeSetupError`). Judging the
rest would only write thousands of identical error lines, so after ``threshold`` consecutive
results that failed with the same such error the batch starts nothing more. Traces not started
get no result line, so running the same command again (once the key is set) picks them up.

Example:
    >>> breaker = CircuitBreaker(threshold=2)
    >>> breaker.record(None) is None
    True
"""

from __future__ import annotations

from mast.diagnosis import Diagnosis
from mast.errors import JudgeSetupError

__all__ = ["DEFAULT_MAX_CONSECUTIVE_ERRORS", "DEFAULT_THRESHOLD", "CircuitBreaker"]

DEFAULT_THRESHOLD = 3
"""Consecutive identical setup errors that stop a batch: enough to rule out a one-off, few enough
that a wrong key costs a handful of requests, not one per trace."""

DEFAULT_MAX_CONSECUTIVE_ERRORS = 10
"""Consecutive ``error`` results of any kind that stop a batch (a model that never answers valid
JSON, a provider failing every call): enough that a bad patch of a few traces does not stop a run,
few enough that a hopeless one costs a handful of traces, not the corpus (``--max-consecutive-errors``)."""

FATAL_TYPES = frozenset({JudgeSetupError.__name__})
"""``error.type`` values (as written into results) that trip the breaker."""


class CircuitBreaker:
    """Counts consecutive identical setup errors; says when the batch should stop.

    It also trips after ``max_consecutive_errors`` ``error`` results in a row of any kind (answers
    the judge could not use, temporary failures that outlasted their retries); 0 turns that off.

    Args:
        threshold: consecutive identical setup errors that trip it (at least 1).
        max_consecutive_errors: consecutive errors of any kind that trip it (0: never).
    """

    def __init__(self, threshold: int = DEFAULT_THRESHOLD,
                 max_consecutive_errors: int = DEFAULT_MAX_CONSECUTIVE_ERRORS) -> None:
        self.threshold = max(1, threshold)
        self.max_consecutive_errors = max(0, max_consecutive_errors)
        self._errors = 0
        self._last: tuple[str, str] | None = None
        self._count = 0
        self.tripped: str | None = None
        """The stop message once tripped, else ``None``."""

    def record(self, diagnosis: Diagnosis | None, exc: BaseException | None = None) -> str | None:
        """Note one finished trace; return the stop message when this result trips the breaker.

        A :class:`~mast.batch.seams.Breaker`: ``exc`` (the exception behind an ``error`` result) is not
        needed, the result names its type. Any result other than a setup error (a success, another kind of failure, ``None`` for a
        trace that produced nothing) breaks the run of identical errors.
        """
        error = diagnosis.error if diagnosis is not None and diagnosis.status == "error" else None
        if diagnosis is not None:  # None: a trace that produced nothing, which says nothing either way
            self._errors = self._errors + 1 if error is not None else 0
        if error is not None and self.max_consecutive_errors and self._errors >= self.max_consecutive_errors \
                and self.tripped is None and error.type not in FATAL_TYPES:
            self.tripped = (
                f"stopped after {self._errors} traces in a row ended in error; the last: {error.message}. "
                "Traces not started have no result; fix the cause and run the same command again "
                "(--max-consecutive-errors sets how many, 0 never stops)"
            )
            return self.tripped
        if error is None or error.type not in FATAL_TYPES:
            self._last, self._count = None, 0
            return None
        signature = (error.type, error.message)
        self._count = self._count + 1 if signature == self._last else 1
        self._last = signature
        if self._count >= self.threshold and self.tripped is None:
            self.tripped = (
                f"stopped after {self._count} traces failed the same way: {error.message}. "
                "Traces not started have no result; run the same command again once this is fixed"
            )
            return self.tripped
        return None
