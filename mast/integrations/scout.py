"""MAST as an Inspect Scout scanner: each transcript's failure modes, cited, in Scout View.

``pip install 'mast-judge[scout]'``, then name the scanner on Scout's command line (the name
``mast_judge/mast_scanner`` reaches :mod:`mast_judge.scout` through the ``inspect_ai`` entry point mast declares)::

    scout scan mast_judge/mast_scanner -T ./logs -S model=openai/gpt-4.1-mini

or build it in Python::

    from inspect_scout import scan
    from mast.integrations.scout import mast_scanner

    scan([mast_scanner(model="openai/gpt-4.1-mini")], transcripts="./logs")

The scanner judges each transcript's messages with its ``model`` events (read exactly as ``mast
normalize`` reads an Inspect log sample, so the trace hash is the log sample's and ``mast report``
finds the transcript in the log) with mast's judge options: ``model``, ``judge`` (``detectors`` for the offline
detectors, the default with no model), ``jury``, ``taxonomy`` and any other
:class:`~mast.judge.config.JudgeConfig` field; ``MAST_*`` variables fill the rest. Long
transcripts are mast's to handle: the judge splits a transcript that does not fit its model's
context into windows of whole steps (``strategy``), so Scout hands the scanner the whole transcript.

It returns a Scout *resultset*, one :class:`~inspect_scout.Result` per label:

* one per assessed mode, ``label`` the code (``2.6``), ``value`` ``True`` when present, the mode's
  reason and evidence quotes in ``explanation`` (``[S3] "..."``), and ``references`` to the cited
  messages (their ``cite`` is the ``[S3]`` of the explanation, so Scout View links it);
* one labelled ``diagnosis``: ``answer`` the codes found (``2.6,3.2``) or ``none`` and no ``value``
  (Scout's summary counts the items with a positive value as its *results*: the modes found, once
  each), the whole explanation, a reference to the first failure's message, and ``metadata["mast"]``,
  the :class:`~mast.diagnosis.Diagnosis` as JSON (:mod:`mast.integrations.scout_results` reads it back).

A transcript the judge could not judge (provider down, unreadable answer, budget) raises
:class:`~mast.errors.JudgeError`, which Scout records as the transcript's *error* (``scan_error``),
never as "no failure"; ``scout scan resume`` / ``scout scan complete`` judge it again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from mast.diagnosis import Diagnosis, ModeVerdict
from mast.errors import JudgeError, UsageError
from mast.integrations.inspect import explanation_of
from mast.integrations.scout_results import DIAGNOSIS_LABEL, SCANNER_NAME
from mast.judge.classify import judge_notice
from mast.judge.config import JudgeConfig
from mast.sources.scout import trace_from_transcript
from mast.trace import Trace

try:
    from inspect_scout import Reference, Result, Scanner, Transcript
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise UsageError("mast's Scout scanner needs Inspect Scout: pip install 'mast-judge[scout]'") from exc

__all__ = [
    "DIAGNOSIS_LABEL",
    "SCANNER_NAME",
    "build_scan",
    "diagnosis_results",
    "mast_scanner",  # noqa: F822 - defined by the module __getattr__ below
    "trace_from_transcript",
]


def _message_ids(trace: Trace) -> dict[int, str]:
    return {step.index: step.id for step in trace.steps if step.id}


def _references(steps: Sequence[int | None], ids: dict[int, str]) -> list[Reference]:
    seen: list[Reference] = []
    for step in steps:
        if step is None or step not in ids or any(r.id == ids[step] for r in seen):
            continue
        seen.append(Reference(type="message", id=ids[step], cite=f"[S{step}]"))
    return seen


def _mode_explanation(verdict: ModeVerdict) -> str:
    lines = [verdict.explanation.strip() or ("Present." if verdict.present else "Not found.")]
    for evidence in verdict.evidence:
        step = f"[S{evidence.step}] " if evidence.step is not None else ""
        checked = "" if evidence.verified else " (quote not found in the step)"
        lines.append(f'{step}"{evidence.quote}"{checked}')
    return "\n".join(lines)


def diagnosis_results(diagnosis: Diagnosis, trace: Trace) -> list[Result]:
    """The Scout results of a judged :class:`~mast.diagnosis.Diagnosis` of ``trace``.

    Raises:
        JudgeError: the diagnosis is not judged (Scout then records the transcript's error).
    """
    if diagnosis.status != "judged":
        reason = diagnosis.error.message if diagnosis.error is not None else "no reason given"
        raise JudgeError(f"mast could not judge transcript {trace.trace_id} ({diagnosis.status}): {reason}")
    ids = _message_ids(trace)
    results = [
        Result(
            label=verdict.code,
            value=bool(verdict.present),
            answer=verdict.name,
            explanation=_mode_explanation(verdict),
            references=_references([e.step for e in verdict.evidence], ids),
            metadata={
                "name": verdict.name,
                "category": verdict.category,
                "confidence": verdict.confidence,
                "evidence": [e.model_dump(mode="json") for e in verdict.evidence],
            },
        )
        for verdict in diagnosis.failure_modes
        if verdict.present is not None
    ]
    first = diagnosis.first_failure
    results.append(
        Result(
            label=DIAGNOSIS_LABEL,
            # No value: Scout's summary counts a resultset's items with a positive value as its
            # results, so the per-mode items already count each mode found; the codes are the answer.
            value=None,
            answer=",".join(diagnosis.present_codes) or "none",
            explanation=explanation_of(diagnosis),
            references=_references([first.step if first is not None else None], ids),
            metadata={
                "mast": diagnosis.model_dump(mode="json"),
                "first_failure": first.model_dump(mode="json") if first is not None else None,
            },
        )
    )
    return results


NO_MODEL_SCAN_NOTICE = (
    "mast_scanner: no model configured: judging with the offline detectors; pass -S model=... (or set "
    "MAST_MODEL) for an LLM judge, or -S judge=detectors to choose them"
)


def build_scan(
    model: str | None = None,
    judge: str | None = None,
    jury: str | Sequence[str] | None = None,
    taxonomy: str | None = None,
    **options: Any,
) -> Scanner[Transcript]:
    """The scan function of :func:`mast_scanner` (arguments as there), not yet registered with Scout."""
    if "api_key" in options:
        raise UsageError(
            "mast_scanner takes no api_key: Scout writes scanner arguments into the scan; set MAST_API_KEY or the provider's key variable"
        )
    config = JudgeConfig.from_options(model=model, judge=judge, jury=jury, taxonomy=taxonomy, **options)
    if judge_notice(config):
        # What `mast label` says on stderr, said where Scout shows a scanner's words (its log).
        logging.getLogger("mast").warning(NO_MODEL_SCAN_NOTICE)

    async def scan(transcript: Transcript) -> list[Result]:
        from mast.judge import aclassify

        trace = trace_from_transcript(transcript)
        diagnosis = await aclassify(trace, config=config, raise_on_error=False)
        return diagnosis_results(diagnosis, trace)

    return scan


def __getattr__(name: str) -> Any:
    # mast_scanner is defined in mast_judge.scout (see there why): read on first use, so that either
    # module may be imported first.
    if name == "mast_scanner":
        from mast_judge.scout import mast_scanner

        return mast_scanner
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
