"""MAST as an Inspect AI scorer: why each sample failed, next to its score in Inspect's log viewer.

``pip install 'mast-judge[inspect]'``, then add :func:`mast_scorer` to a task's scorers::

    from inspect_ai import Task, task
    from inspect_ai.scorer import includes
    from mast.integrations.inspect import mast_scorer

    @task
    def my_agent_eval():
        return Task(dataset=..., solver=..., scorer=[includes(), mast_scorer(model="openai/gpt-4.1-mini")])

Each sample's transcript (its messages and tool calls, read the same way as from a log: see
:mod:`mast.normalize.file_formats.inspect_log`) is judged with mast's judge options: ``model``, ``judge``
(``detectors`` for the offline detectors, the default with no model), ``jury``, ``taxonomy`` and any
other :class:`~mast.judge.config.JudgeConfig` field; ``MAST_*`` variables fill the rest. The
:class:`~inspect_ai.scorer.Score`:

* ``value``: ``{code: 1 | 0}`` for every mode the judge assessed (1 = present) and
  ``modes_found``, the number of modes present;
* ``answer``: the codes found (``1.3,3.2``) or ``none``;
* ``explanation``: the judge's summary, each mode found with its confidence, reason and evidence
  quotes (``[S4] "..."``), and the first failure;
* ``metadata``: ``{"mast": <the Diagnosis as JSON>}``; its ``trace_id`` is the one ``mast normalize``
  gives the sample in the log (``<eval_id>/<sample id>#<epoch>``).

A sample the judge could not judge (provider down, unreadable answer, budget) is *unscored*:
value NaN, ``reason`` ``grader_failed`` (and ``metadata["unscored_reason"]``), the reason in the explanation; it is left out of the metrics
and never counts as "no failure". The metric :func:`mode_shares` gives, per mode, the share of the
judged samples in which it was found.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from mast.diagnosis import Diagnosis
from mast.errors import MastError, UsageError
from mast.judge.config import JudgeConfig
from mast.trace import SourceInfo, Trace

try:
    from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
    from inspect_ai.solver import TaskState
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise UsageError("mast's Inspect scorer needs Inspect AI: pip install 'mast-judge[inspect]'") from exc

__all__ = ["diagnosis_score", "mast_scorer", "mode_shares", "trace_from_state"]

MODES_FOUND = "modes_found"
"""Key of the score value holding how many modes the judge found."""
MAX_QUOTE = 300
"""Characters of an evidence quote shown in the explanation (the metadata keeps it whole)."""


def _dump(value: Any) -> Any:
    """An Inspect pydantic object (message, output) as the JSON a log holds."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, list):
        return [_dump(v) for v in value]
    return value


def trace_from_state(state: TaskState, target: Target | None = None) -> Trace:
    """The running sample as a :class:`~mast.trace.Trace`, read exactly as its log sample would be."""
    from mast.normalize.file_formats.inspect_log import sample_trace

    output = getattr(state, "output", None)
    sample = {
        "id": state.sample_id,
        "epoch": state.epoch,
        "input": _dump(state.input),
        "messages": _dump(list(state.messages)),
        "output": _dump(output) if output is not None else None,
        "metadata": dict(state.metadata or {}),
        "target": list(target.target) if target is not None else None,
    }
    info = {"model": str(state.model), **_running_eval()}
    return sample_trace(sample, eval_info=info, source=SourceInfo(format="inspect_log", variant="state"))


def _running_eval() -> dict[str, str]:
    """The running eval's ids (``eval_id``, ``run_id``, ``task``).

    With them the scorer's trace id is the one ``mast normalize`` gives the same sample in the log
    (``<eval_id>/<sample>#<epoch>``).

    Inspect publishes them only on its (private) active-sample record; without it, none.
    """
    try:
        from inspect_ai.log._samples import sample_active

        active = sample_active()
    except Exception:  # noqa: BLE001 - another Inspect version: the trace id is then <sample>#<epoch>
        return {}
    if active is None:
        return {}
    found = {"eval_id": getattr(active, "eval_id", None), "run_id": getattr(active, "run_id", None),
             "task": getattr(active, "task", None)}
    return {key: str(value) for key, value in found.items() if value}


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_QUOTE else flat[: MAX_QUOTE - 3] + "..."


def explanation_of(diagnosis: Diagnosis) -> str:
    """The summary, each mode found with its reason and evidence quotes, and the first failure."""
    lines: list[str] = []
    found = [v for v in diagnosis.failure_modes if v.present]
    if diagnosis.summary:
        lines.append(diagnosis.summary.strip())
    if not found:
        lines.append("No MAST failure mode found.")
    for verdict in found:
        confidence = f" ({verdict.confidence:.2f})" if verdict.confidence is not None else ""
        lines.append(f"{verdict.code} {verdict.name}{confidence}: {verdict.explanation.strip()}".rstrip(": "))
        for evidence in verdict.evidence:
            step = f"[S{evidence.step}] " if evidence.step is not None else ""
            checked = "" if evidence.verified else " (quote not found in the step)"
            lines.append(f'  {step}"{_quote(evidence.quote)}"{checked}')
    first = diagnosis.first_failure
    if first is not None and (first.step is not None or first.code):
        where = f"S{first.step}" if first.step is not None else "?"
        who = f" by {first.agent}" if first.agent else ""
        code = f" ({first.code})" if first.code else ""
        lines.append(f"First failure: {where}{who}{code}" + (f": {first.explanation.strip()}" if first.explanation.strip() else ""))
    judge = diagnosis.judge
    lines.append(f"Judge: {judge.kind}" + (f" {judge.model}" if judge.model else "") + f", taxonomy {judge.taxonomy_version}")
    return "\n".join(lines)


def _unscored(explanation: str, metadata: dict[str, Any]) -> Score:
    # The reason also goes in metadata["unscored_reason"], the key Inspect read before Score.reason
    # existed (and still lifts into it), so every Inspect version keeps it in the log.
    metadata = {**metadata, "unscored_reason": "grader_failed"}
    make = getattr(Score, "unscored", None)
    if make is not None:
        result: Score = make(reason="grader_failed", explanation=explanation, metadata=metadata)
        return result
    return Score(value=math.nan, explanation=explanation, metadata=metadata)  # Inspect before Score.unscored


def diagnosis_score(diagnosis: Diagnosis) -> Score:
    """The Inspect :class:`Score` of a :class:`~mast.diagnosis.Diagnosis` (unscored unless judged)."""
    metadata = {"mast": diagnosis.model_dump(mode="json")}
    if diagnosis.status != "judged":
        reason = diagnosis.error.message if diagnosis.error is not None else "no reason given"
        return _unscored(f"mast could not judge this sample ({diagnosis.status}): {reason}", metadata)
    value: dict[str, int] = {v.code: int(bool(v.present)) for v in diagnosis.failure_modes if v.present is not None}
    value[MODES_FOUND] = sum(value.values())
    codes = diagnosis.present_codes
    return Score(value=value, answer=",".join(codes) or "none", explanation=explanation_of(diagnosis), metadata=metadata)


@metric
def mode_shares() -> Metric:
    """Per mode, the share of judged samples in which the judge found it (unscored samples left out)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        found: dict[str, float] = {}
        assessed: dict[str, int] = {}
        for item in scores:
            value = item.score.value
            if not isinstance(value, Mapping):
                continue
            for code, present in value.items():
                if code == MODES_FOUND or not isinstance(present, int | float) or isinstance(present, float) and math.isnan(present):
                    continue
                found[code] = found.get(code, 0.0) + float(present)
                assessed[code] = assessed.get(code, 0) + 1
        return {code: found[code] / assessed[code] for code in sorted(assessed, key=_code_key)}

    return compute


def _code_key(code: str) -> tuple[int, ...] | tuple[float]:
    try:
        return tuple(int(part) for part in code.split("."))
    except ValueError:
        return (math.inf,)


@scorer(metrics=[mode_shares()])
def mast_scorer(
    model: str | None = None,
    *,
    judge: str | None = None,
    jury: str | Sequence[str] | None = None,
    taxonomy: str | None = None,
    **options: Any,
) -> Scorer:
    """A scorer that labels each sample's transcript with the MAST failure modes.

    Args:
        model: the judge's litellm model string; ``None``: ``MAST_MODEL``, else the offline detectors.
        judge: ``auto``, ``llm``, ``detectors`` or ``both``.
        jury: several models (``"openai/a,anthropic/b"``, a list, or a jury YAML file).
        taxonomy: a built-in taxonomy version or a taxonomy file.
        **options: any other judge option (``api_base``, ``temperature``, ``samples``, ``hints``...).

    The provider key comes from the provider's usual variable or ``MAST_API_KEY``, never from an
    argument: Inspect writes a scorer's arguments into the log.

    Raises:
        UsageError: unknown or invalid judge options, or an ``api_key`` argument (at task
            definition, not per sample).
    """
    if "api_key" in options:
        raise UsageError("mast_scorer takes no api_key: Inspect writes scorer arguments into the log; set MAST_API_KEY or the provider's key variable")
    config = JudgeConfig.from_options(model=model, judge=judge, jury=jury, taxonomy=taxonomy, **options)

    async def score(state: TaskState, target: Target) -> Score:
        from mast.judge import aclassify

        try:
            trace = trace_from_state(state, target)
        except Exception as exc:  # noqa: BLE001 - a sample mast cannot read is unscored, never "no failure"
            return _unscored(f"mast could not read this sample's messages: {exc}", {})
        try:
            diagnosis = await aclassify(trace, config=config, raise_on_error=False)
        except MastError as exc:  # a setup failure (no key, bad taxonomy file) is the judge's failure too
            return _unscored(f"mast could not judge this sample: {exc}", {})
        return diagnosis_score(diagnosis)

    return score
