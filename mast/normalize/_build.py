"""One builder for the :class:`~mast.trace.Trace` every format returns: agents, usage, task and final output filled the same way.

A format module reads its source into steps (directly, through a
:class:`~mast.normalize._timeline.Timeline`, or through a framework-log parser) and hands them to
:func:`assemble_trace` with whatever the source states itself. What the source leaves out is
derived the same way for every format:

* **agents**: the agents the source declares first, then every other step author in order of first
  appearance (``user``, ``tool``, ``system`` are not agents), with the model and system prompt a
  timeline saw for each;
* **usage**: as the source totals it, else the sum over the steps;
* **task**: as the source states it, else the first user message;
* **final output**: as the source states it, else the last assistant text when the run ends on it
  (an unanswered request after it is passed over; tool use after it means no answer).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from mast.normalize._common import agents_from_steps, sum_usage
from mast.normalize._timeline import Timeline, closing_answer
from mast.trace import Agent, SourceInfo, Step, Trace, Usage


def first_user_text(steps: Sequence[Step]) -> str | None:
    """The first user message: what the run was asked to do, when the source does not say."""
    for step in steps:
        if step.role == "user" and step.kind == "message" and step.content.strip():
            return step.content.strip()
    return None


def assemble_trace(
    steps: list[Step],
    *,
    source: SourceInfo,
    timeline: Timeline | None = None,
    known_agents: Iterable[Agent] = (),
    task: str | None = None,
    final_output: str | None = None,
    usage: Usage | None = None,
    warnings: Iterable[str] = (),
    derive_task: bool = True,
    derive_final_output: bool = True,
    derive_usage: bool = True,
    derive_agents: bool = True,
    **fields: Any,
) -> Trace:
    """The :class:`Trace` of ``steps``: stated fields kept, missing agents/usage/task/final output derived.

    Args:
        steps: the run's steps, in order.
        source: where the trace came from.
        timeline: the timeline that built ``steps``, if any (gives agents their system prompts and
            adds what it could not read to the warnings).
        known_agents: agents the source declares, first in the list.
        task: the task as the source states it; ``None`` to derive.
        final_output: the answer as the source states it; ``None`` to derive.
        usage: the run's total as the source states it; ``None`` to sum the steps.
        warnings: what the reader had to guess or skip.
        derive_task: ``False`` for sources that never state a task (deriving would only guess).
        derive_final_output: ``False`` for sources whose last message is not the answer.
        derive_usage: ``False`` for sources whose stated total (even none) is the whole story, when
            summing the steps would count one reply's usage twice.
        derive_agents: ``False`` for sources that declare every agent (``known_agents`` is the list).
        fields: any other :class:`Trace` field (``trace_id``, ``framework``, ``status``, ``metadata``...).
    """
    known = list(known_agents)
    if not derive_agents:
        agents = known
    else:
        agents = timeline.agents(known) if timeline is not None else agents_from_steps(steps, known)
    notes = list(warnings)
    if timeline is not None:
        notes.extend(w for w in timeline.warnings if w not in notes)
    return Trace(
        source=source,
        steps=steps,
        agents=agents,
        task=task if task is not None or not derive_task else first_user_text(steps),
        final_output=final_output if final_output is not None or not derive_final_output else closing_answer(steps),
        usage=usage if usage is not None or not derive_usage else sum_usage(steps),
        warnings=notes,
        **fields,
    )
