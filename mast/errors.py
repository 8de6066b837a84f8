"""The one error tree of mast.

Every error mast raises on purpose is a :class:`MastError`; the CLI turns them into one-line
messages (exit 2 for bad input or usage, 1 for other failures)::

    MastError
    ├── UsageError            bad options or arguments (exit 2)
    ├── TraceFormatError      a file or record that no normaliser can read (exit 2)
    ├── TaxonomyError         a taxonomy file of the wrong shape (exit 2)
    ├── JudgeError            the judge could not produce a valid diagnosis
    │   ├── JudgeAPIError     the provider failed (transport, HTTP status, timeout)
    │   │   └── JudgeSetupError  no/rejected key, no permission, unknown model, endpoint refused:
    │   │                        every call would fail the same way (never retried; stops a batch)
    │   └── JudgeOutputError  the model answered, but never with valid output
    ├── SourceError           a trace store (Phoenix...) unreachable, refusing, or answering an error
    │   └── StoreNotFoundError  the URL's experiment or project is not in the store (also a UsageError, exit 2)
    ├── EvaluationError       labels that cannot be read or compared (exit 2)
    └── ResultsFileError      a results file with a bad line (also a UsageError and an EvaluationError)

Errors from libraries underneath (litellm, json, pydantic) are translated at one boundary each and
chained with ``raise ... from exc`` so ``--debug`` still shows the cause.

A batch that reaches its spending cap is not an error: it stops starting traces, says so in its
report (``stopped="budget"``) and gives the traces left ``NotStarted`` results; a rerun resumes.
"""

from __future__ import annotations

from typing import Any


class MastError(Exception):
    """Root of every error mast raises on purpose."""

    exit_code: int = 1


class UsageError(MastError):
    """Options or arguments that cannot work together, or point at nothing."""

    exit_code = 2


class TraceFormatError(MastError):
    """A trace file or record that could not be normalised.

    The message says what was tried and why it failed, in one line.
    """

    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None, record: int | None = None) -> None:
        where = path or ""
        if record is not None:
            where = f"{where}#{record}" if where else f"record {record}"
        super().__init__(f"{where}: {message}" if where else message)
        self.path = path
        self.record = record
        self.reason = message


class TaxonomyError(MastError):
    """A taxonomy file that does not have the expected shape."""

    exit_code = 2


class JudgeError(MastError):
    """The judge could not produce a valid diagnosis for a trace.

    Carries what is needed to see why: the number of attempts made and the last raw completion.
    """

    def __init__(
        self, message: str, *, n_attempts: int = 0, last_completion: str | None = None
    ) -> None:
        super().__init__(message)
        self.n_attempts = n_attempts
        self.last_completion = last_completion


class JudgeAPIError(JudgeError):
    """The LLM provider failed: transport error, HTTP error status or timeout."""

    def __init__(
        self,
        message: str,
        *,
        status_code: int | None = None,
        n_attempts: int = 0,
        last_completion: str | None = None,
    ) -> None:
        super().__init__(message, n_attempts=n_attempts, last_completion=last_completion)
        self.status_code = status_code


class JudgeSetupError(JudgeAPIError):
    """The judge cannot work as configured: every call would fail the same way.

    A missing or rejected API key, a permission refused, a model the provider does not know, or an
    endpoint that refuses connections. Never retried; a batch stops after a few in a row.
    """

    def __init__(
        self, message: str, *, reason: str, status_code: int | None = None, n_attempts: int = 0
    ) -> None:
        super().__init__(message, status_code=status_code, n_attempts=n_attempts)
        self.reason = reason
        """``auth``, ``permission``, ``unknown_model``, ``connection_refused`` or ``not_json``."""


class JudgeOutputError(JudgeError):
    """The model answered, but no answer validated against the output schema."""


class SourceError(MastError):
    """A trace store could not be reached, refused the request, or answered with an error."""


class StoreNotFoundError(SourceError, UsageError):
    """The store has no experiment or project of the URL's name.

    Bad input (exit 2, as a file that is not there), and still a :class:`SourceError` for code
    that handles a store's trouble.
    """

    exit_code = 2


class EvaluationError(MastError):
    """Labels or predictions that cannot be read or compared."""

    exit_code = 2


class ResultsFileError(UsageError, EvaluationError):
    """A results file that cannot be read, or a line in it that is not a Diagnosis.

    Both a usage error (``mast label`` resuming from it) and an evaluation error (``mast evaluate``
    reading it): one reader, one error, caught as either.
    """

    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.path = path
        self.line = line


def one_line(exc: BaseException) -> str:
    """Render an exception as a single line for the CLI and for error results."""
    text = str(exc).strip() or type(exc).__name__
    return " ".join(text.split())


def error_info(exc: BaseException) -> dict[str, Any]:
    """The ``{type, message}`` pair written into results for a failed trace."""
    return {"type": type(exc).__name__, "message": one_line(exc)}
