"""One judge per set of predictions: find results files that mix several judges' runs.

A results file labelled first with the offline detectors and then with a model (same ``-o``)
holds two answers per trace. Read as one judge it would count each trace twice and vote the
judges against each other as if they were annotators, so :func:`require_one_judge` refuses it
with a hint, and :func:`split_by_judge` gives each judge's results for comparing them.

Example:
    >>> judge_label(Diagnosis(trace_id="t", judge=JudgeInfo(kind="detectors")))
    'detectors'
"""

from __future__ import annotations

from collections.abc import Iterable

from mast.diagnosis import Diagnosis, JudgeInfo
from mast.errors import EvaluationError

__all__ = ["judge_label", "require_one_judge", "split_by_judge"]


def _identity(info: JudgeInfo) -> tuple[str, str | None, str | None, str | None]:
    return (info.kind, info.model, info.prompt_hash, info.taxonomy_version)


def judge_label(diagnosis: Diagnosis) -> str:
    """A short name of the judge of a result: its model, else its kind (``detectors``)."""
    return diagnosis.judge.model or diagnosis.judge.kind


def split_by_judge(diagnoses: Iterable[Diagnosis]) -> dict[str, list[Diagnosis]]:
    """Results grouped by judge (kind, model, prompt and taxonomy), keyed by a readable name.

    Two judges with the same model but different prompts get the prompt hash in their name.
    """
    groups: dict[tuple[str, str | None, str | None, str | None], list[Diagnosis]] = {}
    for diagnosis in diagnoses:
        groups.setdefault(_identity(diagnosis.judge), []).append(diagnosis)
    names: dict[str, list[Diagnosis]] = {}
    plain = [judge_label(group[0]) for group in groups.values()]
    for (_, _, prompt_hash, _), group in groups.items():
        name = judge_label(group[0])
        if plain.count(name) > 1:
            name = f"{name} (prompt {(prompt_hash or '?')[:8]})"
        names[name] = group
    return names


def require_one_judge(diagnoses: list[Diagnosis], source: str) -> list[Diagnosis]:
    """``diagnoses`` unchanged when one judge made them all.

    Raises:
        EvaluationError: several judges, naming them, with the way out.
    """
    groups = split_by_judge(diagnoses)
    if len(groups) <= 1:
        return diagnoses
    counts = ", ".join(f"{name}: {len(group)}" for name, group in groups.items())
    raise EvaluationError(
        f"{source} mixes {len(groups)} judges ({counts}); label each judge into its own results file "
        "(mast label -o, or --overwrite), then compare them with mast evaluate --pred a.jsonl --pred b.jsonl"
    )
