"""How a verdict reads in a trace store: the names, texts and span links every store writer shares.

Phoenix annotations (:mod:`mast.integrations.phoenix`) and MLflow feedback
(:mod:`mast.integrations.mlflow`) say the same things in the same words:

* one entry per *assessed* mode, named ``mast.<code> <name>`` (:func:`mode_name`), whose text is the
  judge's reason plus each evidence quote with its step number and span (:func:`mode_explanation`);
* a summary entry ``mast`` (the codes found, or ``none``; :func:`summary_text`);
* the first failure on the span its step came from (:func:`mast.sources.step_spans` maps steps to spans).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from mast.diagnosis import Diagnosis, ModeVerdict
from mast.sources import step_spans

__all__ = ["FIRST_FAILURE_NAME", "MAX_EXPLANATION", "SUMMARY_NAME", "cut", "first_failure_text", "judge_kind",
           "mode_explanation", "mode_name", "step_spans", "summary_label", "summary_text"]

SUMMARY_NAME = "mast"
FIRST_FAILURE_NAME = "mast.first_failure"
MAX_EXPLANATION = 4000
"""Characters of an explanation; longer text is cut with a marker."""

Kind = Literal["LLM", "CODE"]


def mode_name(verdict: ModeVerdict) -> str:
    """``mast.<code> <name>``: sorts by code in a store's list of entries."""
    return f"mast.{verdict.code} {verdict.name}"


def judge_kind(diagnosis: Diagnosis) -> Kind:
    """``CODE`` for the offline detectors, ``LLM`` for any judge that asks a model."""
    return "CODE" if diagnosis.judge.kind == "detectors" else "LLM"


def mode_explanation(verdict: ModeVerdict, spans: Mapping[int, str]) -> str:
    """The judge's reason, then one line per evidence quote: ``[S3] span <id>: "quote"``."""
    lines = [verdict.explanation.strip()] if verdict.explanation.strip() else []
    for evidence in verdict.evidence:
        where = f"[S{evidence.step}]" if evidence.step is not None else "[S?]"
        if evidence.step is not None and evidence.step in spans:
            where += f" span {spans[evidence.step]}"
        check = "" if evidence.verified else " (quote not found in that step)"
        lines.append(f'{where}: "{evidence.quote}"{check}')
    return cut("\n".join(lines) or "no explanation given")


def summary_label(diagnosis: Diagnosis) -> str:
    """The codes found (``1.1,3.2``), ``none``, or the status of a trace that was not judged."""
    if diagnosis.status != "judged":
        return diagnosis.status
    return ",".join(diagnosis.present_codes) or "none"


def summary_text(diagnosis: Diagnosis) -> str:
    """The summary, the first failure and the judge; or why the trace was not judged."""
    if diagnosis.status != "judged":
        return cut(diagnosis.error.message if diagnosis.error else diagnosis.status)
    lines = [diagnosis.summary.strip()] if diagnosis.summary.strip() else []
    first = diagnosis.first_failure
    if first is not None and (first.step is not None or first.code):
        step = f"[S{first.step}]" if first.step is not None else "(no step)"
        who = f" {first.agent}" if first.agent else ""
        lines.append(f"first failure {step}{who}: {first.code or ''} {first.explanation}".rstrip())
    judge = diagnosis.judge
    lines.append(f"judge: {judge.kind} {judge.model or ''} prompt {judge.prompt_hash or '-'}".replace("  ", " "))
    return cut("\n".join(lines))


def first_failure_text(diagnosis: Diagnosis) -> str:
    """``[S3] agent: explanation`` of the first failure."""
    first = diagnosis.first_failure
    if first is None:
        return ""
    return cut(f"[S{first.step}]" + (f" {first.agent}:" if first.agent else "") + f" {first.explanation}".rstrip())


def cut(text: str) -> str:
    """``text`` within :data:`MAX_EXPLANATION` characters."""
    return text if len(text) <= MAX_EXPLANATION else text[: MAX_EXPLANATION - 12] + " [... cut]"
