"""The functions and classes Ray runs in its workers: reading traces, judging them, the shared budget.

They live in the package (not in user code or tests) so every worker imports them by name. Rows are
plain dicts of JSON-able values: a trace travels as its JSON, a result as the Diagnosis JSON plus a
few flat columns (:data:`RESULT_COLUMNS` and one column per mode).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

from mast.batch.inputs import in_shard
from mast.batch.judges import BatchJudge
from mast.batch.limits import Budget
from mast.batch.seams import CallGate
from mast.diagnosis import Diagnosis, ErrorInfo, SourceRef, empty_verdicts
from mast.errors import error_info, one_line
from mast.judge.config import JudgeConfig
from mast.trace import Trace

RESULT_COLUMNS = ("trace_id", "trace_hash", "status", "outcome", "source_path", "source_format", "source_record",
                  "judge_model", "input_tokens", "output_tokens", "cost_usd", "llm_calls", "cached", "error", "diagnosis",
                  "worker_pid", "hinted")
"""Flat columns of a result row (besides one ``mode_<code>`` column per failure mode); ``hinted``
holds the codes, comma-separated, of the modes not present that the detectors hinted at."""


# -- reading (Ray tasks) ------------------------------------------------------------------------------


def read_rows(row: dict[str, Any], *, format: str = "auto", shard: tuple[int, int] | None = None) -> list[dict[str, Any]]:
    """One input row (``path``, ``trace`` JSON, or a raw ``record``) -> one row per trace in it."""
    from mast.normalize import iter_traces
    from mast.trace import Trace

    path = row.get("path")
    if row.get("trace") is not None:
        trace = row["trace"]
        parsed = Trace.model_validate_json(trace) if isinstance(trace, str | bytes) else Trace.model_validate(trace)
        return [_trace_row(parsed, 0, format)]
    source: Any = path if path is not None else row.get("record")
    out: list[dict[str, Any]] = []
    try:
        for position, got in enumerate(iter_traces(source, format=format)):
            if isinstance(got, Trace):
                if in_shard(got.trace_id, shard):
                    out.append(_trace_row(got, position, format))
            else:
                record = got.record if got.record is not None else position
                trace_id = f"{path or 'input'}#{record}"
                if in_shard(trace_id, shard):
                    out.append(_input_row(trace_id, None, path, None if format == "auto" else format, record,
                                          error=one_line(got), error_type=type(got).__name__))
    except Exception as exc:  # noqa: BLE001 - one bad file must not stop the run (as the local engine)
        where = str(path) if path is not None else "<input>"
        text = one_line(exc)
        out.append(_input_row(where, None, where, None, None, error=text if text.startswith(where) else f"{where}: {text}",
                              error_type=type(exc).__name__, whole_file=True))
    return out


def _trace_row(trace: Trace, position: int, format: str) -> dict[str, Any]:
    src = trace.source
    row = _input_row(trace.trace_id, trace.content_hash(), src.path, src.format, src.record)
    row["trace"] = trace.model_dump_json()
    return row


def _input_row(trace_id: str, trace_hash: str | None, path: str | None, format: str | None, record: int | None,
               *, error: str | None = None, error_type: str | None = None, whole_file: bool = False) -> dict[str, Any]:
    return {"trace_id": trace_id, "trace_hash": trace_hash, "source_path": path, "source_format": format,
            "source_record": record, "trace": None, "error": error, "error_type": error_type, "whole_file": whole_file}


# -- the budget (one actor for the whole run) -----------------------------------------------------------


class BudgetLedger:
    """The run's spending cap, shared by every judge actor: reserve an estimate, settle the actual cost."""

    def __init__(self, limit_usd: float | None) -> None:
        self.budget = Budget(limit_usd)
        self.refused = 0

    def try_start(self, estimate_usd: float) -> bool:
        """Reserve ``estimate_usd``; False (and nothing reserved) when it would pass the cap."""
        allowed = self.budget.try_start(estimate_usd)
        self.refused += not allowed
        return allowed

    def finish(self, estimate_usd: float, actual_usd: float | None) -> None:
        """Release the reservation and count what was spent."""
        self.budget.finish(estimate=estimate_usd, actual=actual_usd)

    def state(self) -> dict[str, float | int | None]:
        """Spend so far, in flight, and how many traces were refused."""
        return {"spent_usd": self.budget.spent_usd, "in_flight_usd": self.budget.in_flight_usd,
                "limit_usd": self.budget.limit_usd, "refused": self.refused}


# -- judging (the actor pool) -------------------------------------------------------------------------


class TraceJudge:
    """A Ray Data actor holding one judge and up to ``concurrency`` judgements in flight (asyncio).

    Args:
        config: the judge's configuration as JSON (:class:`JudgeConfig`).
        concurrency: calls in flight in this actor.
        router: a litellm Router YAML; each deployment's rpm/tpm divided by ``share``.
        share: actors sharing the router's limits.
        skip: an object-store reference to ``(done resume keys, done content keys)``: inputs already in
            the output are passed through as ``resumed``/``duplicate`` without a call.
        budget: the run's :class:`BudgetLedger` actor, when there is a budget.
    """

    def __init__(self, config: str, concurrency: int = 32, router: str | None = None, share: int = 1,
                 skip: Any = None, budget: Any = None) -> None:
        import ray

        from mast.batch import configured_judge

        parsed = JudgeConfig.model_validate_json(config)
        if parsed.kind != "detectors":
            # The judge imports litellm on its first call (~8 s of CPU here). Paid in the constructor, it
            # is part of the pool's start-up; paid in the first batch, one actor spent its first seconds
            # importing while the other was already judging, on the same two cores.
            import mast.judge.backend  # noqa: F401
        if router is not None:
            from mast.batch.router import router_judge

            self.judge: BatchJudge = router_judge(parsed, router, share=share)
        else:
            self.judge = configured_judge(parsed)
        self.concurrency = concurrency
        done, content = ray.get(skip) if skip is not None else (set(), set())
        self.done: set[tuple[Any, ...]] = done
        self.content: set[tuple[Any, ...]] = content
        self.budget = budget
        self.started = False
        self.gate: CallGate | None = None
        self.codes = list(self.judge.taxonomy.codes)

    async def __call__(self, batch: Any) -> AsyncIterator[Any]:
        """Judge every row of ``batch`` (an Arrow table) concurrently; yield the results as one table."""
        import pyarrow as pa  # type: ignore[import-untyped]

        if not self.started:
            self.started = True
            self.gate = CallGate(self.concurrency)
            await self.judge.start()
        results = await asyncio.gather(*(self._one(row) for row in batch.to_pylist()))
        names = (*RESULT_COLUMNS, *self.mode_columns())
        yield pa.Table.from_pylist([{name: result.get(name) for name in names} for result in results])

    def mode_columns(self) -> list[str]:
        """``mode_<code>`` for every mode of the taxonomy."""
        return [f"mode_{code}" for code in self.codes]

    async def _one(self, row: dict[str, Any]) -> dict[str, Any]:
        key = (row["trace_id"], row["trace_hash"], row["source_path"], _int(row["source_record"]))
        if row["whole_file"] or row["error"] is not None:
            return self._error_row(row, ErrorInfo(type=row["error_type"] or "TraceFormatError", message=row["error"]),
                                   "file_error" if row["whole_file"] else "unreadable")
        if key in self.done:
            return _marker(row, "resumed")
        if key[:2] in self.content:
            return _marker(row, "duplicate")
        trace = Trace.model_validate_json(row["trace"])
        estimate = 0.0
        if self.budget is not None:
            estimate = self.judge.estimate(trace).cost_usd or 0.0
        if self.budget is not None and not await self.budget.try_start.remote(estimate):
            return _marker(row, "not_started")
        assert self.gate is not None
        diagnosis: Diagnosis | None = None
        try:  # the judge holds the gate only around its model calls
            diagnosis = await self.judge.classify(trace, raise_on_error=False, gate=self.gate)
        except Exception as exc:  # noqa: BLE001 - a failure is an error result, as in the local engine
            return self._error_row(row, ErrorInfo(**error_info(exc)), "judged")
        finally:
            if self.budget is not None:
                await self.budget.finish.remote(estimate, diagnosis.usage.cost_usd if diagnosis else None)
        if diagnosis.source.path is None and row["source_path"] is not None:
            diagnosis = diagnosis.model_copy(update={"source": _source(row)})
        return self._result_row(diagnosis, "judged")

    def _error_row(self, row: dict[str, Any], error: ErrorInfo, outcome: str) -> dict[str, Any]:
        diagnosis = Diagnosis(trace_id=row["trace_id"], trace_hash=row["trace_hash"], source=_source(row),
                              status="error", error=error, judge=self.judge.info,
                              failure_modes=empty_verdicts(self.judge.taxonomy))
        return self._result_row(diagnosis, outcome)

    def _result_row(self, d: Diagnosis, outcome: str) -> dict[str, Any]:
        row: dict[str, Any] = {
            "trace_id": d.trace_id, "trace_hash": d.trace_hash, "status": d.status, "outcome": outcome,
            "source_path": d.source.path, "source_format": d.source.format, "source_record": d.source.record,
            "judge_model": d.judge.model, "input_tokens": d.usage.input_tokens, "output_tokens": d.usage.output_tokens,
            "cost_usd": d.usage.cost_usd, "llm_calls": d.usage.llm_calls, "cached": d.usage.cached,
            "error": d.error.message if d.error else None, "diagnosis": d.model_dump_json(), "worker_pid": os.getpid(),
            "hinted": ",".join(v.code for v in d.failure_modes if v.hints and not v.present),
        }
        for verdict in d.failure_modes:
            row[f"mode_{verdict.code}"] = verdict.present
        return row


def _marker(row: dict[str, Any], outcome: str) -> dict[str, Any]:
    """A row for an input judged elsewhere (or not at all): no diagnosis travels back."""
    return {"trace_id": row["trace_id"], "trace_hash": row["trace_hash"], "status": None, "outcome": outcome,
            "source_path": row["source_path"], "source_format": row["source_format"],
            "source_record": _int(row["source_record"]), "worker_pid": os.getpid()}


def _source(row: dict[str, Any]) -> SourceRef:
    return SourceRef(path=row["source_path"], format=row["source_format"], record=_int(row["source_record"]))


def _int(value: Any) -> int | None:
    """A record number from a column (Arrow/NumPy may hand back floats or NaN for missing values)."""
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if number != number else int(number)
