"""One judge per set of predictions: find results files that mix several judges' runs.

A results file labelled first with the offline detectors and then with a model (same ``-o``)
holds two answers per trace. Read as one judge it would count each trace twice and vote the
judges against each other as if they were annotators, so :func:`require_one_judge` refuses it
with a hint, and :func:`split_by_judge` gives each judge's results for comparing them.

Example:
    >>> judge_label(Diagnosis(trace_id="t", judge=JudgeInfo(kind="detectors", taxonomy_version="mast-v3")))
    'detectors'
"""

from __future__ import annotations

from collections.abc import Iterable

from mast.diagnosis import Diagnosis, JudgeInfo
from mast.errors import EvaluationError

__all__ = ["JudgeTally", "judge_label", "require_one_judge", "split_by_judge"]


_Identity = tuple[str, str | None, str | None, str | None]


def _identity(info: JudgeInfo) -> _Identity:
    return (info.kind, info.model, info.prompt_hash, info.taxonomy_version)


def judge_label(diagnosis: Diagnosis) -> str:
    """A short name of the judge of a result: its model, else its kind (``detectors``)."""
    return diagnosis.judge.model or diagnosis.judge.kind


def split_by_judge(diagnoses: Iterable[Diagnosis]) -> dict[str, list[Diagnosis]]:
    """Results grouped by judge (kind, model, prompt and taxonomy), keyed by a readable name.

    Two judges with the same model but different prompts get the prompt hash in their name.
    """
    groups: dict[_Identity, list[Diagnosis]] = {}
    for diagnosis in diagnoses:
        groups.setdefault(_identity(diagnosis.judge), []).append(diagnosis)
    names = _names({identity: judge_label(group[0]) for identity, group in groups.items()})
    return {names[identity]: group for identity, group in groups.items()}


def _names(labels: dict[_Identity, str]) -> dict[_Identity, str]:
    plain = list(labels.values())
    names = {}
    for identity, name in labels.items():
        if plain.count(name) > 1:
            name = f"{name} (prompt {(identity[2] or '?')[:8]})"
        names[identity] = name
    return names


class JudgeTally:
    """Counts results per judge as they stream past, so a big file is checked without holding it.

    Example:
        >>> tally = JudgeTally()
        >>> tally.add(Diagnosis(trace_id="t", judge=JudgeInfo(kind="detectors", taxonomy_version="mast-v3")))
        >>> tally.names(), tally.several
        ({'detectors': 1}, False)
    """

    def __init__(self) -> None:
        self._counts: dict[_Identity, int] = {}
        self._labels: dict[_Identity, str] = {}

    def add(self, diagnosis: Diagnosis) -> None:
        """Count one result."""
        identity = _identity(diagnosis.judge)
        if identity not in self._counts:
            self._counts[identity] = 0
            self._labels[identity] = judge_label(diagnosis)
        self._counts[identity] += 1

    @property
    def several(self) -> bool:
        """True once a second judge has been seen."""
        return len(self._counts) > 1

    def names(self) -> dict[str, int]:
        """Results per judge, by readable name (as :func:`split_by_judge` names them)."""
        names = _names(self._labels)
        return {names[identity]: count for identity, count in self._counts.items()}

    def check(self, source: str) -> None:
        """Raise when the results came from several judges.

        Raises:
            EvaluationError: several judges, naming them, with the way out.
        """
        if not self.several:
            return
        counts = ", ".join(f"{name}: {count}" for name, count in self.names().items())
        raise EvaluationError(
            f"{source} mixes {len(self._counts)} judges ({counts}); label each judge into its own results file "
            "(mast label -o, or --overwrite), then compare them with mast evaluate --pred a.jsonl --pred b.jsonl; "
            "a file written by mast hooks before they kept one file per judge: move it aside, the hook now writes "
            "<project folder>/<judge>.jsonl, and mast report / mast diff take that folder"
        )


def require_one_judge(diagnoses: list[Diagnosis], source: str) -> list[Diagnosis]:
    """``diagnoses`` unchanged when one judge made them all.

    Raises:
        EvaluationError: several judges, naming them, with the way out.
    """
    tally = JudgeTally()
    for diagnosis in diagnoses:
        tally.add(diagnosis)
    tally.check(source)
    return diagnoses
