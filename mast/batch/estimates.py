"""Estimates that learn: answer sizes from a judge's earlier results, and how far off the last dry run was.

A dry run assumes answers of a typical size until it has seen this judge's; a real run learns from
its first answers as it goes (:meth:`mast.judge.Judge.learn_answer_tokens`). Both also start from the
results an earlier run of the same judge left in the output (:func:`learn_from_output`).

Each dry run leaves ``OUTPUT.estimate.json`` beside the output: what it expected, and where the
output ended then. The next dry run compares that with the usage the results written since then
record (:func:`last_estimate_check`), so a user sees how far to trust the figure.

Example:
    >>> from pathlib import Path
    >>> last_estimate_check(Path("no-such-results.jsonl")) is None
    True
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from mast._words import plural
from mast.diagnosis import Diagnosis, JudgeInfo
from mast.errors import MastError
from mast.results import iter_results

__all__ = ["LEARN_FROM_LAST", "estimate_path", "last_estimate_check", "learn_from_output", "record_estimate"]

LEARN_FROM_LAST = 500
"""Most earlier results of the judge read to learn its answer size (the newest of them)."""


def estimate_path(jsonl: Path) -> Path:
    """Where a dry run for ``jsonl`` leaves its estimate."""
    return jsonl.with_name(jsonl.name + ".estimate.json")


def _same_judge(diagnosis: Diagnosis, info: JudgeInfo) -> bool:
    return diagnosis.judge.model == info.model and diagnosis.judge.kind == info.kind


def learn_from_output(judge: Any, jsonl: Path) -> int:
    """Teach ``judge`` the answer size of its earlier results in ``jsonl``; how many it learnt from.

    Only a judge that learns does (:meth:`mast.judge.Judge.learn_answer_tokens`).
    """
    learn = getattr(judge, "learn_answer_tokens", None)
    if learn is None or not jsonl.is_file():
        return 0
    info = judge.info
    mine: list[Diagnosis] = []
    try:
        for diagnosis in iter_results(jsonl):
            if _same_judge(diagnosis, info) and diagnosis.usage.llm_calls == 1 and not diagnosis.usage.cached:
                mine.append(diagnosis)
                if len(mine) > LEARN_FROM_LAST:
                    mine.pop(0)
    except (MastError, OSError):  # an unreadable output is reported by the run itself
        return 0
    learn(mine)
    return len(mine)


def record_estimate(jsonl: Path, *, to_judge: int, input_tokens: int, output_tokens: int,
                    cost_usd: float | None, model: str | None) -> None:
    """Leave this dry run's estimate beside the output, for the next dry run to check."""
    offset = jsonl.stat().st_size if jsonl.is_file() else 0
    record = {"offset": offset, "to_judge": to_judge, "input_tokens": input_tokens,
              "output_tokens": output_tokens, "cost_usd": cost_usd, "model": model}
    try:
        estimate_path(jsonl).write_bytes(orjson.dumps(record))
    except OSError:  # a read-only folder: the check is a nicety
        pass


def _per_trace_ratio(actual: float, traces: int, estimated: float, planned: int) -> float | None:
    if not traces or not planned or not estimated:
        return None
    return (actual / traces) / (estimated / planned)


def last_estimate_check(jsonl: Path) -> str | None:
    """How far the last dry run's estimate was from what the traces judged since then used, or ``None``.

    Compared per trace (a run may have judged only some of what was planned): e.g. ``last dry run's
    estimate, per trace: output tokens x0.25, input tokens x1.31, cost x0.55 of what 12 traces used``.
    """
    side = estimate_path(jsonl)
    if not side.is_file() or not jsonl.is_file():
        return None
    try:
        record = orjson.loads(side.read_bytes())
        offset = int(record["offset"])
        tail = jsonl.read_bytes()[offset:]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    traces = in_tok = out_tok = 0
    cost = 0.0
    for line in tail.splitlines():
        try:
            diagnosis = Diagnosis.model_validate_json(line)
        except ValueError:
            continue
        usage = diagnosis.usage
        if diagnosis.status != "judged" or usage.cached or not usage.llm_calls:
            continue
        if record.get("model") is not None and diagnosis.judge.model != record["model"]:
            continue
        traces += 1
        in_tok += usage.input_tokens
        out_tok += usage.output_tokens
        cost += usage.cost_usd or 0.0
    planned = int(record.get("to_judge") or 0)
    parts = []
    for name, actual, estimated in (("input tokens", in_tok, record.get("input_tokens")),
                                    ("output tokens", out_tok, record.get("output_tokens")),
                                    ("cost", cost, record.get("cost_usd"))):
        ratio = _per_trace_ratio(actual, traces, float(estimated or 0), planned)
        if ratio is not None:
            parts.append(f"{name} {_off(ratio)}")
    if not parts:
        return None
    return f"the last dry run's estimate per trace, against what {plural(traces, 'trace')} judged since used: {', '.join(parts)}"


def _off(ratio: float) -> str:
    """``ratio`` = actual / estimated, as words: ``38% of the estimate`` or ``1.3x the estimate``."""
    if ratio < 1:
        return f"{ratio:.0%} of the estimate"
    return f"{ratio:.1f}x the estimate"
