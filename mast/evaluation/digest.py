"""What ``mast report`` keeps of a results file: a compact row per trace, built as the file streams past.

A :class:`~mast.diagnosis.Diagnosis` costs ~25 KB in memory (verdicts, explanations, evidence,
usage). The report's summary, cost, prevalence, co-occurrence, first-failure and diff sections
read only a few fields of each, so :class:`ResultsDigest` keeps exactly those: the trace id, the
status, one byte per mode (absent, present or not assessed), the first failure's step and agent,
the source path and six usage numbers; about 0.3 KB per line. Which judges made the file is
counted (:class:`~mast.evaluation.judges.JudgeTally`), and of the traces not judged only the first
``max_errors`` are kept with their reason.

:meth:`ResultsDigest.frame` returns the same columns, with the same dtypes, as
:func:`mast.results.to_dataframe` gives for them, so :mod:`mast.analysis` reads it unchanged.

Example:
    >>> from mast.diagnosis import JudgeInfo
    >>> digest = ResultsDigest()
    >>> digest.add(Diagnosis(trace_id="t1", judge=JudgeInfo(kind="detectors", taxonomy_version="mast-v3")))
    >>> digest.frame()[["trace_id", "status"]].to_dict("records")
    [{'trace_id': 't1', 'status': 'judged'}]
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

from mast.diagnosis import Diagnosis
from mast.evaluation.judges import JudgeTally, judge_label
from mast.taxonomy import Taxonomy, load_taxonomy

__all__ = ["ResultsDigest", "compact_frame"]

_ABSENT, _PRESENT, _UNASSESSED = 0, 1, 2
_NO_STEP = -(2**62)


class ResultsDigest:
    """Running per-trace rows of the fields the report's sections read (see the module docs)."""

    def __init__(self, taxonomy: Taxonomy | None = None, *, keys: bool = True, max_errors: int = 50) -> None:
        """``keys=False`` leaves out ``trace_id`` and ``source_path`` (what only pairing two runs needs)."""
        self.taxonomy = taxonomy or load_taxonomy()
        self._keys = keys
        self.judges = JudgeTally()
        self.judge_labels: set[str] = set()
        self.errors: list[tuple[str, str, str]] = []
        """``(trace_id, status, reason)`` of the first ``max_errors`` results with an error."""
        self.n_errors = 0
        self._max_errors = max_errors
        self._codes = self.taxonomy.codes
        self._index = {code: i for i, code in enumerate(self._codes)}
        self._modes = [bytearray() for _ in self._codes]
        self._trace_ids: list[str] = []
        self._statuses: list[str] = []
        self._sources: list[str | None] = []
        self._agents: list[str | None] = []
        self._steps = array("q")
        self._ints = {name: array("q") for name in ("n_modes", "input_tokens", "output_tokens", "llm_calls", "cached")}
        self._floats = {name: array("d") for name in ("cost_usd", "latency_s")}
        self._interned: dict[str, str] = {}  # statuses and agent names repeat: one string each
        self._count = 0

    def __len__(self) -> int:
        return self._count

    def add(self, diagnosis: Diagnosis) -> None:
        """Take one result's fields."""
        self.judges.add(diagnosis)
        self.judge_labels.add(judge_label(diagnosis))
        row = [_UNASSESSED] * len(self._codes)
        for verdict in diagnosis.failure_modes:
            i = self._index.get(verdict.code)
            if i is not None and verdict.present is not None:
                row[i] = _PRESENT if verdict.present else _ABSENT
        for column, value in zip(self._modes, row, strict=True):
            column.append(value)
        first, usage = diagnosis.first_failure, diagnosis.usage
        self._count += 1
        if self._keys:
            self._trace_ids.append(diagnosis.trace_id)
            self._sources.append(diagnosis.source.path)
        self._statuses.append(self._intern(diagnosis.status))
        self._agents.append(self._intern(first.agent) if first and first.agent is not None else None)
        self._steps.append(first.step if first and first.step is not None else _NO_STEP)
        ints = self._ints
        ints["n_modes"].append(row.count(_PRESENT))
        ints["input_tokens"].append(usage.input_tokens)
        ints["output_tokens"].append(usage.output_tokens)
        ints["llm_calls"].append(usage.llm_calls)
        ints["cached"].append(int(usage.cached))
        self._floats["cost_usd"].append(np.nan if usage.cost_usd is None else usage.cost_usd)
        self._floats["latency_s"].append(usage.latency_s)
        if diagnosis.error is not None:
            self.n_errors += 1
            if len(self.errors) < self._max_errors:
                self.errors.append((diagnosis.trace_id, diagnosis.status, diagnosis.error.message))

    def _intern(self, text: str) -> str:
        return self._interned.setdefault(text, text)

    def frame(self) -> pd.DataFrame:
        """One row per result, in file order.

        Columns: ``trace_id`` (with ``keys``), ``status``, a nullable boolean per mode, ``n_modes``, ``first_failure_step``
        (Int64), ``first_failure_agent``, ``source_path`` (with ``keys``) and the usage columns.
        """
        data: dict[str, Any] = {"trace_id": pd.Series(self._trace_ids)} if self._keys else {}
        data["status"] = pd.Series(self._statuses)
        for code, column in zip(self._codes, self._modes, strict=True):
            values = np.frombuffer(bytes(column), dtype=np.uint8)
            data[code] = pd.arrays.BooleanArray(values == _PRESENT, values == _UNASSESSED)
        data["n_modes"] = np.array(self._ints["n_modes"], dtype=np.int64)
        steps = np.array(self._steps, dtype=np.int64)
        data["first_failure_step"] = pd.arrays.IntegerArray(steps, steps == _NO_STEP)
        data["first_failure_agent"] = pd.Series(self._agents)
        if self._keys:
            data["source_path"] = pd.Series(self._sources)
        for name in ("input_tokens", "output_tokens"):
            data[name] = np.array(self._ints[name], dtype=np.int64)
        data["cost_usd"] = np.array(self._floats["cost_usd"], dtype=np.float64)
        data["latency_s"] = np.array(self._floats["latency_s"], dtype=np.float64)
        data["llm_calls"] = np.array(self._ints["llm_calls"], dtype=np.int64)
        data["cached"] = np.array(self._ints["cached"], dtype=np.int64).astype(bool)
        return pd.DataFrame(data)


def compact_frame(diagnoses: Iterable[Diagnosis], taxonomy: Taxonomy | None = None) -> pd.DataFrame:
    """:meth:`ResultsDigest.frame` of a stream of diagnoses (e.g. :func:`mast.results.iter_results`)."""
    digest = ResultsDigest(taxonomy)
    for diagnosis in diagnoses:
        digest.add(diagnosis)
    return digest.frame()
