"""What a rerun finds in its output: the resume index, holding keys and a few counts, never results.

A rerun over 100,000 traces must not hold 100,000 diagnoses. :class:`ResumeIndex` reads the results
file once, line by line, validating only the fields it needs, and keeps per reusable result its
resume key, the byte offset of its line (to read it back in the rare case it is needed whole: an
identical trace found in another file) and what the run summary counts (status, modes present and
assessed, as bit masks). ``error`` lines are kept as offsets only: they are judged again, and the old
line is dropped once the new one is written (:meth:`mast.results.ResultsFile.drop_lines`).
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from mast._json import canonical_hash
from mast.diagnosis import Diagnosis, DiagnosisUsage, JudgeInfo
from mast.errors import ResultsFileError
from mast.results import ResultsFile, iter_lines

if TYPE_CHECKING:
    from mast.batch.inputs import WorkItem

ContentKey = tuple[str, str | None]
"""``(trace_id, trace_hash)``: what a trace holds."""
ResumeKey = tuple[str, str | None, str | None, int | None]
"""``(trace_id, trace_hash, source path, source record)``: one input, as results record it."""

RESOLVED_PER_TRACE = frozenset({"structured_output"})
"""``judge.params`` the judge records as configured in its identity but as resolved per trace (the
structured-output mode that answered): left out of :func:`judge_fingerprint`, like the cache key does."""

IMPLIED_WHEN_UNRECORDED: dict[str, object] = {"redact": True, "redact_ips": False, "redact_patterns": None}
"""``judge.params`` that results of earlier releases lack (the detectors recorded no redaction
settings), read as the defaults those runs had, so that a default run's results file stays its own
after an upgrade. The one thing lost: an older detectors file written with ``--no-redact`` reads as
redacted."""


def judge_fingerprint(info: JudgeInfo, params: Collection[str] | None = None) -> str:
    """Hash of what identifies a judge's answers: kind, model, prompt, taxonomy and answer parameters.

    Args:
        info: the ``judge`` of a result, or a judge's own identity.
        params: the parameter names that identify the judge (those of its identity); a result's
            other parameters describe one judgement (windows, answer limits...) and are ignored.
            ``None``: every parameter.

    Two results with the same fingerprint, trace id and trace hash are interchangeable, so a rerun
    reuses the one already in the output.
    """
    payload = info.model_dump(mode="json", exclude={"strategy"})
    keep = (set(payload["params"]) if params is None else set(params)) - RESOLVED_PER_TRACE
    payload["params"] = {k: payload["params"].get(k, IMPLIED_WHEN_UNRECORDED.get(k)) for k in sorted(keep)}
    return canonical_hash(payload)


def content_key(diagnosis: Diagnosis) -> ContentKey:
    """What the judged trace held: ``(trace_id, trace_hash)``."""
    return (diagnosis.trace_id, diagnosis.trace_hash)


def resume_key(diagnosis: Diagnosis) -> ResumeKey:
    """The input a result belongs to: content plus source path and record."""
    return (diagnosis.trace_id, diagnosis.trace_hash, diagnosis.source.path, diagnosis.source.record)


class _Source(BaseModel):
    model_config = ConfigDict(extra="ignore")
    path: str | None = None
    record: int | None = None


class _Verdict(BaseModel):
    model_config = ConfigDict(extra="ignore")
    code: str
    present: bool | None = None
    hints: list[str] | None = None


class _KeyFields(BaseModel):
    """The part of a result line the index reads (validated; the rest is skipped unparsed)."""

    model_config = ConfigDict(extra="ignore")
    trace_id: str
    trace_hash: str | None = None
    status: str
    source: _Source = _Source()
    judge: dict[str, Any]
    failure_modes: list[_Verdict] = []


@dataclass(frozen=True, slots=True)
class Done:
    """A reusable result, as the index keeps it."""

    offset: int
    """Where its line starts in the results file."""
    status: str
    present: int
    """Bit mask of the modes present (bits as :attr:`ResumeIndex.codes`)."""
    assessed: int
    """Bit mask of the modes assessed."""
    hinted: int = 0
    """Bit mask of the modes not present that the detectors hinted at."""


@dataclass
class ResumeIndex:
    """Reusable results of one judge in a results file, by resume key (see the module docs)."""

    done: dict[ResumeKey, Done] = field(default_factory=dict)
    """Reusable (non-error, same judge) results."""
    content: dict[ContentKey, int] = field(default_factory=dict)
    """Offset of a reusable result for each trace content (to copy for an identical trace)."""
    errors: dict[ResumeKey, int] = field(default_factory=dict)
    """Offsets of ``error`` lines: judged again, then dropped."""
    superseded: set[int] = field(default_factory=set)
    """Offsets of ``error`` lines whose input also has a good result (left by a run that crashed
    between writing the new result and dropping the old line)."""
    codes: dict[str, int] = field(default_factory=dict)
    """Bit position of each mode code seen."""

    @classmethod
    def build(cls, path: str | os.PathLike[str], info: JudgeInfo) -> ResumeIndex:
        """Index ``path`` for a run of the judge ``info`` (see :func:`judge_fingerprint`).

        Raises:
            ResultsFileError: a line (other than a torn last one) is not a result.
        """
        index = cls()
        identity = frozenset(info.params)
        mine = judge_fingerprint(info, identity)
        same_judge: dict[bytes, bool] = {}  # a file holds few distinct judges: fingerprint each once
        for line in iter_lines(path):
            try:
                fields = _KeyFields.model_validate_json(line.raw)
            except ValidationError as exc:
                if not line.complete:
                    break  # a torn last line
                raise ResultsFileError(
                    f"{path}:{line.number}: not a mast diagnosis; fix or remove it (mast label --overwrite starts over)",
                    path=str(path), line=line.number,
                ) from exc
            key = (fields.trace_id, fields.trace_hash, fields.source.path, fields.source.record)
            if fields.status == "error":
                index.errors[key] = line.offset
                continue
            judge = orjson.dumps(fields.judge, option=orjson.OPT_SORT_KEYS)
            if judge not in same_judge:
                same_judge[judge] = judge_fingerprint(JudgeInfo.model_validate(fields.judge), identity) == mine
            if same_judge[judge]:
                index.done[key] = index._entry(line.offset, fields)
                index.content.setdefault(key[:2], line.offset)
        index.superseded = {offset for key, offset in index.errors.items() if key in index.done}
        return index

    def _entry(self, offset: int, fields: _KeyFields) -> Done:
        present = assessed = hinted = 0
        if fields.status == "judged":
            for verdict in fields.failure_modes:
                if verdict.present is None and not verdict.hints:
                    continue
                bit = 1 << self.codes.setdefault(verdict.code, len(self.codes))
                if verdict.present is not None:
                    assessed |= bit
                if verdict.present:
                    present |= bit
                elif verdict.hints:
                    hinted |= bit
        return Done(offset, fields.status, present, assessed, hinted)

    def modes(self, mask: int) -> list[str]:
        """The mode codes of a bit mask."""
        return [code for code, bit in self.codes.items() if mask >> bit & 1]


def reusable_results(path: str | os.PathLike[str], info: JudgeInfo, wanted: Iterable[ContentKey]) -> dict[Any, Diagnosis]:
    """Results in a results file that a run of the judge ``info`` over traces ``wanted`` can reuse.

    Keyed by :func:`resume_key`. Reads each reusable line whole: for small files and tests; the
    batch itself keeps only a :class:`~mast.batch.resume.ResumeIndex`.
    """
    wanted = set(wanted)
    index = ResumeIndex.build(path, info)
    if not index.done:
        return {}
    with ResultsFile(path) as results:
        return {key: results.read_at(done.offset) for key, done in index.done.items() if key[:2] in wanted}


def copy_for(item: WorkItem, diagnosis: Diagnosis) -> Diagnosis:
    """The result of an identical trace, for ``item``: its own source, and no call (as a cache hit)."""
    usage = DiagnosisUsage(cost_usd=0.0, cached=True) if diagnosis.status != "error" else DiagnosisUsage()
    return diagnosis.model_copy(update={"source": item.source, "usage": usage}, deep=True)
