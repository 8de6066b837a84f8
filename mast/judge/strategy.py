"""How a prepared trace is put to the model: in one call, or in windows of whole steps and an aggregation.

:meth:`Strategy.run` decides and asks::

    fits the usable context (prompt + schema + answer)?  -> one call              ("single")
    else: windows of whole steps, overlapping by 1/8      -> one call per window   ("chunked")
          their findings (fewer per mode if they must)    -> one aggregation call

and returns an :class:`Outcome` (the validated answer, the mode that produced it, the strategy and
the details a diagnosis records). A trace that cannot be judged within the model's limits raises
:class:`Unjudgeable`, which the judge turns into ``status: "unjudgeable"`` (never a silent cut).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel

from mast.judge.budget import MIN_WINDOW_TOKENS, TokenCounter, most_tokens, usable
from mast.judge.chunking import Window, WindowTooSmall, plan_windows
from mast.judge.config import JudgeConfig
from mast.judge.material import Material
from mast.judge.messages import build_aggregate, build_single, build_window, fence_for
from mast.judge.prompt import PromptSet
from mast.judge.protocol import Backend, UsageMeter
from mast.judge.schema import FULL_LIMITS, Limits, OutputSpec, diagnosis_spec, window_spec
from mast.judge.structured import Answer, ask
from mast.taxonomy import Taxonomy

MAX_WINDOWS = 200
"""More windows than this make a trace unjudgeable (cost and time would be unreasonable)."""
WINDOW_CONCURRENCY = 4
"""Windows of one trace judged at the same time."""

Gate = contextlib.AbstractAsyncContextManager[Any]
"""Entered around the calls to the model (e.g. a batch's semaphore of requests in flight)."""


class Unjudgeable(Exception):
    """The trace cannot be judged within the model's limits (becomes a status, not an error)."""


@dataclasses.dataclass
class Outcome:
    """The model's validated diagnosis answer and how it was obtained."""

    value: BaseModel
    """The answer, a model of :func:`~mast.judge.schema.diagnosis_spec`."""
    mode: str
    """The structured-output mode that produced it."""
    strategy: Literal["single", "chunked"]
    details: dict[str, Any]
    """What the diagnosis records in ``judge.params``: context window, windows, answer limits."""
    notes: list[str]
    """Re-asks, tolerated answers and cuts, for the diagnosis' warnings."""


class Strategy:
    """Single or chunked judgement for one judge's configuration, prompts and taxonomy."""

    def __init__(self, config: JudgeConfig, prompts: PromptSet, taxonomy: Taxonomy) -> None:
        self.config = config
        self.prompts = prompts
        self.taxonomy = taxonomy
        self.counter = TokenCounter(config.structured_output)
        self._specs: dict[tuple[str, Limits], OutputSpec] = {}

    def spec(self, kind: Literal["diagnosis", "window"], limits: Limits) -> OutputSpec:
        """The answer spec, looked up once per judge (its memo in ``schema`` hashes the taxonomy each time)."""
        key = (kind, limits)
        if key not in self._specs:
            build = diagnosis_spec if kind == "diagnosis" else window_spec
            self._specs[key] = build(self.taxonomy, limits)
        return self._specs[key]

    async def _ask(
        self, backend: Backend, messages: list[dict[str, Any]], spec: OutputSpec, meter: UsageMeter, cap: int | None = None
    ) -> Answer:
        return await ask(
            backend, messages, output=spec, taxonomy=self.taxonomy,
            structured_output=self.config.structured_output, max_reasks=self.config.max_reasks,
            max_tokens=self.config.max_output_tokens, meter=meter, max_tokens_cap=cap,
        )

    async def run(
        self,
        material: Material,
        *,
        backend: Backend,
        context: int,
        limits: Limits,
        meter: UsageMeter,
        gate: Gate | None = None,
    ) -> Outcome:
        """Judge ``material`` in one call when it fits ``context``, else in windows; ``gate`` held around the calls.

        Raises:
            Unjudgeable: even windows of single steps do not fit, or there would be too many.
            JudgeError: no valid answer (after re-asks) or the provider failed.
        """
        out = self.config.max_output_tokens
        spec = self.spec("diagnosis", limits)
        limit = usable(context)
        fence = fence_for(material)
        messages = build_single(self.prompts, material, fence)
        schema = self.counter.schema(backend, spec)
        # No tokenizer makes more tokens than a text has bytes (plus a few special ones): when even
        # that bound fits, with room for every re-ask's larger output limit, counting exactly would
        # change neither the strategy nor the re-ask cap below, so the count is skipped.
        needed = most_tokens(messages) + out + schema
        if needed > limit or limit - needed + out < out * 1.5**self.config.max_reasks:
            needed = self.counter.messages(backend, messages) + out + schema
        details: dict[str, Any] = {"context_window": context}
        async with gate if gate is not None else contextlib.nullcontext():
            if needed <= limit:
                answer = await self._ask(backend, messages, spec, meter, cap=max(out, limit - needed + out))
                outcome = Outcome(answer.value, answer.mode, "single", details, list(answer.notes))
            else:
                outcome = await self._chunked(material, fence, backend, context, limits, meter)
        if limits != FULL_LIMITS:
            outcome.details["answer_limits"] = dataclasses.asdict(limits)
        return outcome

    async def _chunked(
        self, material: Material, fence: str, backend: Backend, context: int, limits: Limits, meter: UsageMeter
    ) -> Outcome:
        windows = self._plan(material, fence, backend, context, limits)
        spec = self.spec("window", limits)
        # A batch-API backend parks every call until its batch returns: all windows must ask at once.
        gate = asyncio.Semaphore(getattr(backend, "window_concurrency", WINDOW_CONCURRENCY))

        async def judge_window(number: int, window: Window) -> Answer:
            async with gate:
                messages = build_window(self.prompts, material, fence, window, number, len(windows))
                return await self._ask(backend, messages, spec, meter)

        answers = await asyncio.gather(*(judge_window(i + 1, w) for i, w in enumerate(windows)))
        notes: list[str] = []
        for number, answer in enumerate(answers, 1):
            notes.extend(f"window {number}: {note}" for note in answer.notes)
        final_spec = self.spec("diagnosis", limits)
        frame = self.counter.messages(backend, build_aggregate(self.prompts, material, "", len(windows)))
        frame += self.counter.schema(backend, final_spec)
        room = usable(context) - self.config.max_output_tokens - frame
        window_notes, dropped = fit_notes(windows, [a.value for a in answers], backend.count_tokens, room)
        if window_notes is None:
            raise Unjudgeable(
                f"the findings of {len(windows)} windows do not fit one aggregation call in a {context}-token context"
            )
        if dropped:
            notes.append(f"aggregation saw {dropped} fewer findings than the windows made (the context could not hold them all)")
        final = await self._ask(backend, build_aggregate(self.prompts, material, window_notes, len(windows)), final_spec, meter)
        notes.extend(f"aggregation: {note}" for note in final.notes)
        details: dict[str, Any] = {"context_window": context, "windows": [[w.first, w.last] for w in windows]}
        return Outcome(final.value, final.mode, "chunked", details, notes)

    def _plan(self, material: Material, fence: str, backend: Backend, context: int, limits: Limits) -> list[Window]:
        """Windows of whole steps that each fit one call beside the instructions, task and answer."""
        out = self.config.max_output_tokens
        empty = Window(first=0, last=0, text="", tokens=0)
        frame = self.counter.messages(backend, build_window(self.prompts, material, fence, empty, 1, 1))
        frame += self.counter.schema(backend, self.spec("window", limits))
        budget = usable(context) - out - frame
        if budget < MIN_WINDOW_TOKENS:
            raise Unjudgeable(
                f"the trace needs more than one call, but a {context}-token context leaves only {max(budget, 0)} "
                f"tokens per window after the instructions, task and {out} output tokens (need {MIN_WINDOW_TOKENS})"
            )
        try:
            windows = plan_windows(material.blocks, backend.count_tokens, budget=budget, overlap_tokens=budget // 8)
        except WindowTooSmall as exc:
            raise Unjudgeable(f"{exc} (context {context} tokens)") from exc
        if len(windows) > MAX_WINDOWS:
            raise Unjudgeable(f"the trace would need {len(windows)} windows (limit {MAX_WINDOWS}) with a {context}-token context")
        return windows


def fit_notes(
    windows: list[Window], answers: list[BaseModel], count: Callable[[str], int], room: int
) -> tuple[str | None, int]:
    """The windows' notes as text within ``room`` tokens: all findings, else fewer per mode (said so)."""
    findings = [list(getattr(a, "findings", [])) for a in answers]
    total = sum(len(f) for f in findings)
    for per_code in (None, 8, 4, 2, 1, 0):
        lines: list[str] = []
        shown = 0
        seen: dict[str, int] = {}
        for number, (window, answer, items) in enumerate(zip(windows, answers, findings, strict=True), 1):
            lines.append(f"Window {number} (S{window.first}-S{window.last}): {getattr(answer, 'summary', '')}")
            for item in sorted(items, key=lambda f: f.step):
                seen[item.code] = seen.get(item.code, 0) + 1
                if per_code is not None and seen[item.code] > per_code:
                    continue
                shown += 1
                lines.append(f'  - S{item.step} [{item.code}] "{item.quote}" {item.note}')
        if per_code is not None and shown < total:
            lines.append(f"({total - shown} further findings not shown: at most {per_code} per mode fit the context)")
        text = "\n".join(lines)
        if count(text) <= room:
            return text, total - shown
    return None, total
