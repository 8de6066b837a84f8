"""The requests the judge sends: what of a trace goes into a prompt, and the chat messages around it.

Reusable on their own, e.g. by a provider batch API that sends the judge's requests itself::

    prepared = prepare_trace(trace, judge.config, judge.taxonomy)    # hints, render, cap, redact
    messages = build_single(judge.prompts, prepared.material)        # what the judge would send
    body = judge.backend.request_kwargs(                              # + sampling and answer schema
        messages, diagnosis_spec(judge.taxonomy), judge.backend.resolve_mode("auto"), 4096)

- :func:`prepare_trace` runs the offline detectors for prompt hints (and, for ``both``, their own
  diagnosis) and prepares the :class:`~mast.judge.material.Material` with the configured redaction.
  Everything that reaches a prompt passes through it.
- :func:`build_single` is the one-call request (strategy ``single``); :func:`build_window` and
  :func:`build_aggregate` are the chunked strategy's per-window and aggregation requests.
- :func:`fence_for` picks the code fence that no text of the trace contains, so a trace cannot
  close the fence and talk to the judge as instructions.

Messages are ``[{"role": "system", ...}, {"role": "user", ...}]``: the static part first, so
providers that cache prompt prefixes can reuse it across traces.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mast.diagnosis import Diagnosis
from mast.errors import one_line
from mast.judge import detectors
from mast.judge.chunking import Window
from mast.judge.config import JudgeConfig
from mast.judge.material import Material, prepare
from mast.judge.prompt import PromptSet, choose_fence, hints_block
from mast.judge.schema import DIAGNOSIS_SCHEMA_NAME, WINDOW_SCHEMA_NAME
from mast.taxonomy import Taxonomy
from mast.trace import Trace

Messages = list[dict[str, Any]]
"""A chat conversation as litellm and OpenAI-compatible APIs take it."""


@dataclass
class PreparedTrace:
    """A trace made ready for the judge's prompts."""

    material: Material
    """The prompt-ready text (rendered, capped visibly, redacted, with detector hints)."""
    detectors: Diagnosis | None = None
    """The detectors' own diagnosis, for the ``both`` judge (merged into the LLM's)."""
    warnings: list[str] = field(default_factory=list)
    """Notes for the diagnosis: cuts, redaction and detector problems."""


def prepare_trace(trace: Trace, config: JudgeConfig, taxonomy: Taxonomy) -> PreparedTrace:
    """Detector hints (when ``config.hints``), then :func:`~mast.judge.material.prepare` with the configured redaction."""
    hints, detector_diagnosis, warnings = _detector_hints(trace, config, taxonomy)
    material = prepare(
        trace,
        redact=config.redact,
        redact_ips=config.redact_ips,
        redact_patterns=tuple(config.redact_patterns),
        hints=hints,
    )
    return PreparedTrace(material=material, detectors=detector_diagnosis, warnings=[*material.warnings, *warnings])


def _detector_hints(trace: Trace, config: JudgeConfig, taxonomy: Taxonomy) -> tuple[str | None, Diagnosis | None, list[str]]:
    """Detector hints for the prompt and, for ``both``, the detectors' own diagnosis."""
    both = config.kind == "both"
    if not (config.hints or both):
        return None, None, []
    try:
        report = detectors.run_detectors(trace, taxonomy)
        hints = (detectors.format_hints(report, taxonomy) or "") if config.hints else None
        det = detectors.detectors_diagnosis(trace, taxonomy, report=report) if both else None
    except Exception as exc:  # noqa: BLE001
        # Hints only help the LLM; a detector failing on an odd trace must not stop the judgement.
        return None, None, [f"detectors failed, judged without hints: {one_line(exc)}"]
    return hints, det, []


def fence_for(material: Material, *more: str) -> str:
    """A code fence that occurs in none of the trace's texts (nor in ``more``)."""
    return choose_fence(*material.all_text(), *more)


def build_single(prompts: PromptSet, material: Material, fence: str | None = None) -> Messages:
    """The request that judges the whole trace in one call (answer: the diagnosis schema)."""
    user = prompts.trace_template.substitute(
        hints=hints_block(material.hints),
        fence=fence or fence_for(material),
        task=material.task,
        n_steps=material.n_steps,
        step_range=material.step_range,
        transcript=material.transcript or "(no steps)",
        final_output=material.final_output,
        schema_name=DIAGNOSIS_SCHEMA_NAME,
    )
    return [{"role": "system", "content": prompts.single}, {"role": "user", "content": user}]


def build_window(prompts: PromptSet, material: Material, fence: str, window: Window, number: int, total: int) -> Messages:
    """The request for window ``number`` of ``total`` (answer: the window schema's findings)."""
    user = prompts.window_template.substitute(
        hints=hints_block(material.hints),
        window=number,
        n_windows=total,
        n_steps=material.n_steps,
        first=window.first,
        last=window.last,
        fence=fence,
        task=material.task,
        transcript=window.text,
        schema_name=WINDOW_SCHEMA_NAME,
    )
    return [{"role": "system", "content": prompts.window}, {"role": "user", "content": user}]


def build_aggregate(prompts: PromptSet, material: Material, notes: str, n_windows: int) -> Messages:
    """The request that turns the windows' findings (``notes``) into one diagnosis."""
    user = prompts.aggregate_template.substitute(
        hints=hints_block(material.hints),
        n_steps=material.n_steps,
        n_windows=n_windows,
        fence=fence_for(material, notes),
        task=material.task,
        final_output=material.final_output,
        notes=notes,
        schema_name=DIAGNOSIS_SCHEMA_NAME,
    )
    return [{"role": "system", "content": prompts.aggregate}, {"role": "user", "content": user}]
