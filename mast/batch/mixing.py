"""One judge per results file: refuse to append a second judge's answers to a results file.

``mast label runs/ -o results.jsonl`` run first with the offline detectors and then with a model
would leave both judges' answers in one file, and everything that reads it (evaluation, report,
export) would count each trace twice. A run therefore checks the file it resumes: results from a
judge with another identity (:func:`~mast.batch.runner.judge_fingerprint`: kind, model, prompt,
taxonomy and answer parameters) stop it before any call, with the way out.
"""

from __future__ import annotations

import os

import orjson

from mast.batch.resume import judge_fingerprint
from mast.diagnosis import JudgeInfo
from mast.errors import UsageError
from mast.results import iter_records

__all__ = ["check_one_judge"]


def check_one_judge(path: str | os.PathLike[str], info: JudgeInfo) -> None:
    """Raise when the results file at ``path`` holds results of a judge other than ``info``.

    Streamed: each line is parsed as plain JSON and each distinct ``judge`` fingerprinted once, so a
    rerun over a big file holds no results.

    Raises:
        UsageError: naming the other judge(s), with ``--overwrite`` / another ``-o`` as the way out.
    """
    if not os.path.exists(path):
        return
    identity = frozenset(info.params)
    mine = judge_fingerprint(info, identity)
    same: dict[bytes, bool] = {}
    others: dict[str, int] = {}
    for _, record in iter_records(path):
        judge = record.get("judge") or {}
        raw = orjson.dumps(judge, option=orjson.OPT_SORT_KEYS)
        if raw not in same:
            same[raw] = judge_fingerprint(JudgeInfo.model_validate(judge), identity) == mine
        if not same[raw]:
            name = judge.get("model") or judge.get("kind") or "llm"
            others[name] = others.get(name, 0) + 1
    if others:
        found = ", ".join(f"{count} by {name}" for name, count in others.items())
        raise UsageError(
            f"{path} holds results of another judge or settings ({found}); write to a new -o, "
            "or add --overwrite to start over (one judge per results file)"
        )
