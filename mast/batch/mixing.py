"""One judge per results file: refuse to append a second judge's answers to a results file.

``mast label runs/ -o results.jsonl`` run first with the offline detectors and then with a model
would leave both judges' answers in one file, and everything that reads it (evaluation, report,
export) would count each trace twice. A run therefore checks the file it resumes: results from a
judge with another identity (:func:`~mast.batch.runner.judge_fingerprint`: kind, model, prompt,
taxonomy and answer parameters) stop it before any call, with the way out.
"""

from __future__ import annotations

import os

from mast.batch.runner import judge_fingerprint
from mast.batch.store import ResultsFile
from mast.diagnosis import JudgeInfo
from mast.errors import UsageError

__all__ = ["check_one_judge"]


def check_one_judge(path: str | os.PathLike[str], info: JudgeInfo) -> None:
    """Raise when the results file at ``path`` holds results of a judge other than ``info``.

    Raises:
        UsageError: naming the other judge(s), with ``--overwrite`` / another ``-o`` as the way out.
    """
    if not os.path.exists(path):
        return
    identity = frozenset(info.params)
    mine = judge_fingerprint(info, identity)
    others: dict[str, int] = {}
    for _, diagnosis in ResultsFile.read(path):
        if judge_fingerprint(diagnosis.judge, identity) != mine:
            name = diagnosis.judge.model or diagnosis.judge.kind
            others[name] = others.get(name, 0) + 1
    if others:
        found = ", ".join(f"{count} by {name}" for name, count in others.items())
        raise UsageError(
            f"{path} holds results of another judge or settings ({found}); write to a new -o, "
            "or add --overwrite to start over (one judge per results file)"
        )
