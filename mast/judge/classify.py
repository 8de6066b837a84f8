"""Judge one trace: ``await aclassify(trace)`` (the real code) and ``classify(trace)`` (its sync wrapper).

The flow for an LLM judge::

    trace -> prepare (render, cap visibly, redact) -> cache? -> fits the context?
          -> single call                                   (strategy "single")
          -> windows of whole steps, then one aggregation  (strategy "chunked")
          -> verdicts for every mode, quotes verified -> Diagnosis (cached)

A single call raises :class:`~mast.errors.JudgeError` when no valid answer comes; with
``raise_on_error=False`` (what batches use) the failure comes back as a Diagnosis with
``status: "error"`` and a reason. A trace that cannot be judged within the model's limits is
``status: "unjudgeable"`` with the reason, never truncated silently.

:class:`Judge` holds what several judgements share (backend, cache): batches can open one with
``async with Judge(config) as judge`` and call :meth:`Judge.classify` per trace. A ``local`` model's
llama.cpp server is shared by the whole process and stops at exit.

Example:
    >>> import mast
    >>> d = mast.classify("run.json", model="openai/gpt-4.1-mini")   # doctest: +SKIP
    >>> d.present_codes, d.first_failure                                # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import importlib
import math
import os
import sqlite3
import time
from types import ModuleType
from typing import Any

import orjson
from pydantic import BaseModel

from mast.diagnosis import (
    Diagnosis,
    DiagnosisStatus,
    DiagnosisUsage,
    ErrorInfo,
    Evidence,
    FirstFailure,
    JudgeInfo,
    ModeVerdict,
    SourceRef,
    empty_verdicts,
)
from mast.errors import JudgeError, UsageError, error_info, one_line
from mast.judge.cache import JudgeCache, cache_key
from mast.judge.chunking import Window, WindowTooSmall, plan_windows
from mast.judge.config import JudgeConfig
from mast.judge.local import DEFAULT_CONTEXT, gguf_for, is_local, shared_server
from mast.judge.material import Material, prepare
from mast.judge.prompt import PromptSet, choose_fence, hints_block, load_prompts
from mast.judge.protocol import Backend, UsageMeter
from mast.judge.schema import (
    DIAGNOSIS_SCHEMA_NAME,
    FULL_LIMITS,
    WINDOW_SCHEMA_NAME,
    Limits,
    OutputSpec,
    diagnosis_spec,
    limits_for,
    mode_answers,
    window_spec,
    worst_case_tokens,
)
from mast.judge.structured import ask
from mast.taxonomy import Taxonomy, load_taxonomy, normalize_code
from mast.trace import Trace

DEFAULT_CONTEXT_WINDOW = 32_768
"""Context assumed for a model litellm does not know (with a warning); ``--context-window`` overrides."""
CONTEXT_SAFETY = 0.9
"""Share of the context window used: token counts of unknown tokenizers are estimates."""
MIN_WINDOW_TOKENS = 256
"""Below this much room for steps per window, a trace is unjudgeable with this model."""
MAX_WINDOWS = 200
"""More windows than this make a trace unjudgeable (cost and time would be unreasonable)."""
WINDOW_CONCURRENCY = 4
"""Windows of one trace judged at the same time."""
MESSAGE_OVERHEAD_TOKENS = 16
"""Tokens a chat template adds around each message."""
LOCAL_MIN_TIMEOUT = 600.0
"""Seconds a call to the in-process local model may take, queueing included."""
MAX_TOKEN_SLACK = 8
"""Tokens a tokenizer may add to a message beyond one per UTF-8 byte (special tokens, a leading marker)."""
ANSWER_TOKENS = 1_500
"""Typical tokens of a full diagnosis answer (14 verdicts with evidence and a summary), for estimates."""
WINDOW_ANSWER_TOKENS = 600
"""Typical tokens of one window's findings in the chunked strategy, for estimates."""
NOTE_TOKENS_PER_WINDOW = 200
"""Typical tokens one window's findings add to the aggregation prompt, for estimates."""

NO_MODEL_NOTICE = (
    "no model configured: using the offline detectors; set MAST_MODEL or --model "
    "(e.g. openai/gpt-4.1-mini, or local for a small offline model) for an LLM judge"
)


class _Unjudgeable(Exception):
    """The trace cannot be judged within the model's limits (becomes a status, not an error)."""


@dataclasses.dataclass(frozen=True)
class CostEstimate:
    """What judging one trace is expected to take, before any call (see :meth:`Judge.estimate`)."""

    input_tokens: int
    output_tokens: int
    """Assumes answers of a typical size (:data:`ANSWER_TOKENS`): their real length is known only afterwards."""
    cost_usd: float | None
    """``None`` when the model's price is unknown."""


def judge_notice(config: JudgeConfig) -> str | None:
    """The one line the CLI prints when no model is configured and the detectors judge instead."""
    if config.judge == "auto" and not config.model:
        return NO_MODEL_NOTICE
    return None


def detectors_module() -> ModuleType | None:
    """``mast.judge.detectors`` when it is part of this build, else ``None``."""
    try:
        return importlib.import_module("mast.judge.detectors")
    except ModuleNotFoundError as exc:
        if exc.name == "mast.judge.detectors":
            return None
        raise


def _load(trace_or_path: Trace | str | os.PathLike[str] | Any) -> Trace:
    if isinstance(trace_or_path, Trace):
        return trace_or_path
    from mast.normalize import load_trace

    return load_trace(trace_or_path)


def _merged_config(config: JudgeConfig | None, options: dict[str, Any]) -> JudgeConfig:
    if config is None:
        return JudgeConfig.from_options(**options)
    if not options:
        return config
    unknown = set(options) - set(JudgeConfig.model_fields)
    if unknown:
        raise UsageError(f"unknown judge option(s): {', '.join(sorted(unknown))}")
    try:
        return JudgeConfig.model_validate({**dict(config), **{k: v for k, v in options.items() if v is not None}})
    except Exception as exc:  # pydantic.ValidationError, in one line
        raise UsageError(f"invalid judge option: {' '.join(str(exc).split())}") from exc


class Judge:
    """A configured judge; reuse one for many traces (``async with Judge(config) as judge``).

    Args:
        config: the judge's options (``MAST_*`` variables apply when built by :meth:`JudgeConfig.from_options`).
        backend: a ready :class:`~mast.judge.backend.Backend` to use instead of litellm (tests, plugins).
        **options: :class:`JudgeConfig` fields overriding ``config``.
    """

    def __init__(self, config: JudgeConfig | None = None, *, backend: Backend | None = None, **options: Any) -> None:
        self.config = _merged_config(config, options)
        self.taxonomy: Taxonomy = load_taxonomy(self.config.taxonomy)
        self.prompts: PromptSet = load_prompts(self.taxonomy)
        self._backend = backend
        self._owns_backend = backend is None
        self._cache = JudgeCache(self.config.cache_dir) if self.config.cache else None
        # Computed once per judge rather than per trace: they depend only on the configuration.
        self._taxonomy_hash = hashlib.sha256(self.taxonomy.fingerprint().encode()).hexdigest()
        self._specs: dict[tuple[str, Limits], OutputSpec] = {}
        self._static_tokens: dict[tuple[str, str], int] = {}
        if self.config.kind in ("llm", "both") and not self.config.model and backend is None:
            raise UsageError("the LLM judge needs a model: set MAST_MODEL or --model (or use --judge detectors)")

    # -- lifecycle --

    async def __aenter__(self) -> Judge:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def start(self) -> None:
        """Set up the backend; for ``local`` models, start the llama.cpp server."""
        if self._backend is not None or self.config.kind == "detectors":
            return
        # litellm is imported only now: `import mast` stays fast for users of the detectors alone.
        from mast.judge.backend import LiteLLMBackend

        model = self.config.model or ""
        if is_local(model):
            gguf = gguf_for(model)
            server = await asyncio.to_thread(shared_server, gguf, n_ctx=self.config.context_window or DEFAULT_CONTEXT)
            self._backend = LiteLLMBackend.from_config(
                self.config,
                model=f"openai/{server.alias}",
                api_base=server.base_url,
                api_key="local",
                context_window=server.n_ctx,
                # One llama.cpp slot on a CPU: concurrent judgements queue at the server for minutes.
                timeout=max(self.config.timeout, LOCAL_MIN_TIMEOUT),
                free=True,
            )
        else:
            self._backend = LiteLLMBackend.from_config(self.config)

    async def aclose(self) -> None:
        """Release what this judge holds (a local model server is shared and stops at exit)."""
        self._backend = None if self._owns_backend else self._backend

    @property
    def backend(self) -> Backend:
        """The backend (after :meth:`start`)."""
        if self._backend is None:
            raise UsageError("the judge is not started: use `async with Judge(...)` or await judge.start()")
        return self._backend

    # -- judging --

    async def classify(
        self,
        trace_or_path: Trace | str | os.PathLike[str] | Any,
        *,
        raise_on_error: bool = True,
        gate: contextlib.AbstractAsyncContextManager[Any] | None = None,
    ) -> Diagnosis:
        """Judge one trace.

        Args:
            trace_or_path: a :class:`~mast.trace.Trace`, a file path, or an object ``mast.load_trace`` reads.
            raise_on_error: raise :class:`~mast.errors.JudgeError` when no valid answer comes (default);
                when False, return a Diagnosis with ``status: "error"`` instead.
            gate: entered only around the calls to the model, after the trace is prepared (rendered,
                redacted, hints found) and left before the answer becomes a diagnosis; e.g. an
                :class:`asyncio.Semaphore` that bounds the requests in flight of a batch, so the
                next traces are prepared while earlier ones wait for the model. Not entered when
                the cache answers.

        Raises:
            TraceFormatError: the input cannot be read as one trace.
            JudgeError: the judge failed (only with ``raise_on_error=True``).
        """
        trace = _load(trace_or_path)
        started = time.perf_counter()
        kind = self.config.kind
        if kind == "detectors":
            return self._detectors_only(trace, started)
        if self._backend is None:
            await self.start()
        meter = UsageMeter()
        trace_hash = trace.content_hash()
        try:
            diagnosis = await self._judge_llm(trace, trace_hash, kind, meter, started, gate)
        except _Unjudgeable as exc:
            error = ErrorInfo(type="Unjudgeable", message=str(exc))
            return self._failed(trace, trace_hash, "unjudgeable", error, meter, started)
        except JudgeError as exc:
            if raise_on_error:
                raise
            return self._failed(trace, trace_hash, "error", ErrorInfo(**error_info(exc)), meter, started)
        return diagnosis

    @property
    def info(self) -> JudgeInfo:
        """What every diagnosis of this judge records as ``judge``, before per-trace details (strategy, windows)."""
        if self.config.kind == "detectors":
            module = detectors_module()
            if module is None:
                raise UsageError("the offline detectors (mast.judge.detectors) are not available in this build")
            info: JudgeInfo = module.detectors_judge_info(self.taxonomy)
            return info
        return self._judge_info(self.config.kind, strategy=None, mode=None)

    def _judge_info(self, kind: str, *, strategy: str | None, mode: str | None, **params: Any) -> JudgeInfo:
        answer = self.config.answer_params()
        return JudgeInfo(
            kind=kind,
            model=self.config.model,
            prompt_version=self.prompts.version,
            prompt_hash=self.prompts.hash,
            taxonomy_version=self.taxonomy.version,
            strategy=strategy,
            params={
                "temperature": answer["temperature"],
                "seed": answer["seed"],
                "max_output_tokens": answer["max_output_tokens"],
                "structured_output": mode or self.config.structured_output,
                "hints": self.config.hints,
                "redact": self.config.redact,
                "redact_ips": self.config.redact_ips,
                **params,
            },
        )

    def _failed(
        self, trace: Trace, trace_hash: str, status: DiagnosisStatus, error: ErrorInfo, meter: UsageMeter, started: float
    ) -> Diagnosis:
        return Diagnosis(
            trace_id=trace.trace_id,
            source=_source(trace),
            trace_hash=trace_hash,
            status=status,
            error=error,
            judge=self._judge_info(self.config.kind, strategy=None, mode=None),
            failure_modes=empty_verdicts(self.taxonomy),
            usage=_usage(meter, started),
        )

    def _detectors_only(self, trace: Trace, started: float) -> Diagnosis:
        module = detectors_module()
        if module is None:
            raise UsageError("the offline detectors (mast.judge.detectors) are not available in this build")
        diagnosis: Diagnosis = module.detectors_diagnosis(trace, self.taxonomy)
        diagnosis.source = _source(trace)
        diagnosis.trace_hash = diagnosis.trace_hash or trace.content_hash()
        diagnosis.usage.latency_s = time.perf_counter() - started
        return diagnosis

    def _hints(self, trace: Trace, kind: str) -> tuple[str | None, Diagnosis | None, list[str]]:
        """Detector hints for the prompt and, for ``both``, the detectors' own diagnosis."""
        if not (self.config.hints or kind == "both"):
            return None, None, []
        module = detectors_module()
        if module is None:
            return None, None, ["detector hints unavailable: mast.judge.detectors is not part of this build"]
        try:
            report = module.run_detectors(trace, self.taxonomy)
            hints = str(module.format_hints(report, self.taxonomy) or "") if self.config.hints else None
            det = module.detectors_diagnosis(trace, self.taxonomy, report=report) if kind == "both" else None
        except Exception as exc:  # noqa: BLE001
            # Hints only help the LLM; a detector failing on an odd trace must not stop the judgement.
            return None, None, [f"detectors failed, judged without hints: {one_line(exc)}"]
        return hints, det, []

    async def _judge_llm(
        self,
        trace: Trace,
        trace_hash: str,
        kind: str,
        meter: UsageMeter,
        started: float,
        gate: contextlib.AbstractAsyncContextManager[Any] | None = None,
    ) -> Diagnosis:
        backend = self.backend
        hints, detector_diagnosis, warnings = self._hints(trace, kind)
        material = prepare(
            trace,
            redact=self.config.redact,
            redact_ips=self.config.redact_ips,
            redact_patterns=tuple(getattr(self.config, "redact_patterns", ()) or ()),
            hints=hints,
        )
        warnings = [*material.warnings, *warnings]
        context = backend.context_window()
        if context is None:
            context = DEFAULT_CONTEXT_WINDOW
            warnings.append(
                f"context window of {backend.model} unknown: assuming {context} tokens (set --context-window)"
            )
        limits = self._limits(backend, self.config.max_output_tokens, warnings)
        # The key hashes the whole prompt text: computed only when there is a cache to ask.
        key = "" if self._cache is None else cache_key(
            {
                "answer": self.config.answer_params(),
                "prompt_version": self.prompts.version,
                "prompt_hash": self.prompts.hash,
                "taxonomy_version": self.taxonomy.version,
                "taxonomy": self._taxonomy_hash,
                "trace": trace_hash,
                # What the prompt holds after rendering, redaction (custom patterns included) and hints.
                "material": hashlib.sha256("\x00".join(material.all_text()).encode("utf-8", "surrogatepass")).hexdigest(),
                # The context decides single vs chunked, and the caps shape the answer.
                "context_window": context,
                "limits": dataclasses.asdict(limits),
            }
        )
        cached = await self._cache_get(key, warnings)
        if cached is not None:
            return self._from_cache(cached, trace, started)

        out = self.config.max_output_tokens
        spec = self._spec("diagnosis", limits)
        limit = int(context * CONTEXT_SAFETY)
        fence = choose_fence(*material.all_text())
        single_messages = self._single_messages(material, fence)
        schema = self._schema_tokens(backend, spec)
        # No tokenizer makes more tokens than a text has bytes (plus a few special ones): when even
        # that bound fits, with room for every re-ask's larger output limit, counting exactly would
        # change neither the strategy nor the re-ask cap below, so the count is skipped.
        needed = _most_tokens(single_messages) + out + schema
        if needed > limit or limit - needed + out < out * 1.5**self.config.max_reasks:
            needed = self._count(backend, single_messages) + out + schema
        async with gate if gate is not None else contextlib.nullcontext():
            if needed <= limit:
                answer = await ask(
                    backend, single_messages, output=spec, taxonomy=self.taxonomy,
                    structured_output=self.config.structured_output, max_reasks=self.config.max_reasks,
                    max_tokens=out, meter=meter, max_tokens_cap=max(out, limit - needed + out),
                )
                warnings.extend(answer.notes)
                mode: str = answer.mode
                extra: dict[str, Any] = {"context_window": context}
                strategy = "single"
                if limits != FULL_LIMITS:
                    extra["answer_limits"] = dataclasses.asdict(limits)
                value = answer.value
            else:
                value, mode, extra, notes = await self._chunked(material, fence, context, limit, meter, limits)
                warnings.extend(notes)
                strategy = "chunked"
        diagnosis = self._diagnosis(trace, trace_hash, kind, value, material, strategy, mode, extra, warnings, meter, started)
        if detector_diagnosis is not None:
            _merge_detectors(diagnosis, detector_diagnosis)
        await self._cache_put(key, diagnosis, diagnosis.warnings)
        return diagnosis

    def _limits(self, backend: Backend, out: int, warnings: list[str]) -> Limits:
        """Schema caps: sized to the output budget when the server decodes with a grammar."""
        if not getattr(backend, "constrained", False):
            return FULL_LIMITS
        limits = limits_for(out, len(self.taxonomy.modes))
        worst = max(worst_case_tokens(limits, len(self.taxonomy.modes)))
        if worst > out:
            warnings.append(
                f"max_output_tokens {out} may cut a grammar-constrained answer (up to ~{worst} tokens); raise it"
            )
        return limits

    def _schema_tokens(self, backend: Backend, spec: OutputSpec) -> int:
        """Context the answer schema takes: in the prompt (JSON mode) or as a tool definition."""
        if backend.resolve_mode(self.config.structured_output) == "json_schema":
            return 0  # a response format (a grammar on llama.cpp) is not part of the prompt
        return self._static_count(backend, orjson.dumps(spec.schema).decode()) + MESSAGE_OVERHEAD_TOKENS

    def _spec(self, kind: str, limits: Limits) -> OutputSpec:
        """The answer spec, looked up once per judge (its memo in ``schema`` hashes the taxonomy each time)."""
        key = (kind, limits)
        if key not in self._specs:
            self._specs[key] = diagnosis_spec(self.taxonomy, limits) if kind == "diagnosis" else window_spec(self.taxonomy, limits)
        return self._specs[key]

    def _static_count(self, backend: Backend, text: str) -> int:
        """Tokens of a text every judgement sends (system prompts, schemas): counted once per model."""
        key = (backend.model, text)
        if key not in self._static_tokens:
            self._static_tokens[key] = backend.count_tokens(text)
        return self._static_tokens[key]

    def _count(self, backend: Backend, messages: list[dict[str, Any]]) -> int:
        """Tokens of a conversation: each message's content plus the chat template's overhead."""
        total = 0
        for message in messages:
            text = str(message.get("content") or "")
            count = self._static_count(backend, text) if message.get("role") == "system" else backend.count_tokens(text)
            total += count + MESSAGE_OVERHEAD_TOKENS
        return total

    # -- estimates --

    def estimate(self, trace: Trace) -> CostEstimate:
        """Tokens and dollars judging ``trace`` is expected to take, without calling the model.

        Mirrors the judge's single / chunked decision and counts the prompt as it would (detector
        hints left out: they add at most a few hundred tokens). Answers are assumed to be of a
        typical size. 0 for the offline detectors; 0 tokens for a trace too long for the model
        (nothing would be sent).
        """
        if self.config.kind == "detectors":
            return CostEstimate(0, 0, 0.0)
        backend = self.backend
        config = self.config
        material = prepare(
            trace,
            redact=config.redact,
            redact_ips=config.redact_ips,
            redact_patterns=tuple(getattr(config, "redact_patterns", ()) or ()),
        )
        fence = choose_fence(*material.all_text())
        out_cap = config.max_output_tokens
        answer = min(ANSWER_TOKENS, out_cap)
        single = self._count(backend, self._single_messages(material, fence))
        context = backend.context_window() or DEFAULT_CONTEXT_WINDOW
        limit = int(context * CONTEXT_SAFETY)
        if single + out_cap <= limit:
            return CostEstimate(single, answer, _price(backend, single, answer))
        empty = Window(first=0, last=0, text="", tokens=0)
        frame = self._count(backend, self._window_messages(material, fence, empty, 1, 1))
        room = limit - out_cap - frame
        try:
            if room < MIN_WINDOW_TOKENS:
                raise WindowTooSmall("no room")
            windows = plan_windows(material.blocks, backend.count_tokens, budget=room, overlap_tokens=room // 8)
        except WindowTooSmall:
            return CostEstimate(0, 0, 0.0)  # unjudgeable with this model: nothing will be sent
        aggregate = self._count(backend, self._aggregate_messages(material, "", len(windows)))
        aggregate += NOTE_TOKENS_PER_WINDOW * len(windows)
        input_tokens = sum(frame + w.tokens for w in windows) + aggregate
        output_tokens = len(windows) * min(WINDOW_ANSWER_TOKENS, out_cap) + answer
        return CostEstimate(input_tokens, output_tokens, _price(backend, input_tokens, output_tokens))

    # -- prompts --

    def _single_messages(self, material: Material, fence: str) -> list[dict[str, Any]]:
        user = self.prompts.trace_template.substitute(
            hints=hints_block(material.hints),
            fence=fence,
            task=material.task,
            n_steps=material.n_steps,
            step_range=material.step_range,
            transcript=material.transcript or "(no steps)",
            final_output=material.final_output,
            schema_name=DIAGNOSIS_SCHEMA_NAME,
        )
        return [{"role": "system", "content": self.prompts.single}, {"role": "user", "content": user}]

    def _window_messages(self, material: Material, fence: str, window: Window, number: int, total: int) -> list[dict[str, Any]]:
        user = self.prompts.window_template.substitute(
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
        return [{"role": "system", "content": self.prompts.window}, {"role": "user", "content": user}]

    def _aggregate_messages(self, material: Material, notes: str, n_windows: int) -> list[dict[str, Any]]:
        fence = choose_fence(*material.all_text(), notes)
        user = self.prompts.aggregate_template.substitute(
            hints=hints_block(material.hints),
            n_steps=material.n_steps,
            n_windows=n_windows,
            fence=fence,
            task=material.task,
            final_output=material.final_output,
            notes=notes,
            schema_name=DIAGNOSIS_SCHEMA_NAME,
        )
        return [{"role": "system", "content": self.prompts.aggregate}, {"role": "user", "content": user}]

    # -- the chunked strategy --

    async def _chunked(
        self, material: Material, fence: str, context: int, limit: int, meter: UsageMeter, limits: Limits
    ) -> tuple[BaseModel, str, dict[str, Any], list[str]]:
        backend = self.backend
        out = self.config.max_output_tokens
        empty = Window(first=0, last=0, text="", tokens=0)
        frame = self._count(backend, self._window_messages(material, fence, empty, 1, 1))
        frame += self._schema_tokens(backend, self._spec("window", limits))
        budget = limit - out - frame
        if budget < MIN_WINDOW_TOKENS:
            raise _Unjudgeable(
                f"the trace needs more than one call, but a {context}-token context leaves only {max(budget, 0)} "
                f"tokens per window after the instructions, task and {out} output tokens (need {MIN_WINDOW_TOKENS})"
            )
        try:
            windows = plan_windows(material.blocks, backend.count_tokens, budget=budget, overlap_tokens=budget // 8)
        except WindowTooSmall as exc:
            raise _Unjudgeable(f"{exc} (context {context} tokens)") from exc
        if len(windows) > MAX_WINDOWS:
            raise _Unjudgeable(f"the trace would need {len(windows)} windows (limit {MAX_WINDOWS}) with a {context}-token context")
        spec = self._spec("window", limits)
        # A batch-API backend parks every call until its batch returns: all windows must ask at once.
        gate = asyncio.Semaphore(getattr(backend, "window_concurrency", WINDOW_CONCURRENCY))

        async def judge_window(number: int, window: Window) -> Any:
            async with gate:
                messages = self._window_messages(material, fence, window, number, len(windows))
                return await ask(
                    backend, messages, output=spec, taxonomy=self.taxonomy,
                    structured_output=self.config.structured_output, max_reasks=self.config.max_reasks,
                    max_tokens=out, meter=meter,
                )

        answers = await asyncio.gather(*(judge_window(i + 1, w) for i, w in enumerate(windows)))
        notes: list[str] = []
        for number, answer in enumerate(answers, 1):
            notes.extend(f"window {number}: {note}" for note in answer.notes)
        agg_frame = self._count(backend, self._aggregate_messages(material, "", len(windows)))
        agg_frame += self._schema_tokens(backend, self._spec("diagnosis", limits))
        room = limit - out - agg_frame
        window_notes, dropped = _fit_notes(windows, [a.value for a in answers], backend.count_tokens, room)
        if window_notes is None:
            raise _Unjudgeable(
                f"the findings of {len(windows)} windows do not fit one aggregation call in a {context}-token context"
            )
        if dropped:
            notes.append(f"aggregation saw {dropped} fewer findings than the windows made (the context could not hold them all)")
        agg_messages = self._aggregate_messages(material, window_notes, len(windows))
        final = await ask(
            backend, agg_messages, output=self._spec("diagnosis", limits), taxonomy=self.taxonomy,
            structured_output=self.config.structured_output, max_reasks=self.config.max_reasks,
            max_tokens=out, meter=meter,
        )
        notes.extend(f"aggregation: {note}" for note in final.notes)
        extra: dict[str, Any] = {
            "context_window": context,
            "windows": [[w.first, w.last] for w in windows],
        }
        if limits != FULL_LIMITS:
            extra["answer_limits"] = dataclasses.asdict(limits)
        return final.value, final.mode, extra, notes

    # -- results --

    def _diagnosis(
        self,
        trace: Trace,
        trace_hash: str,
        kind: str,
        value: BaseModel,
        material: Material,
        strategy: str,
        mode: str,
        extra: dict[str, Any],
        warnings: list[str],
        meter: UsageMeter,
        started: float,
    ) -> Diagnosis:
        verdicts, verdict_warnings = _verdicts(value, self.taxonomy, material)
        first = _first_failure(value, self.taxonomy, material, verdict_warnings)
        return Diagnosis(
            trace_id=trace.trace_id,
            source=_source(trace),
            trace_hash=trace_hash,
            status="judged",
            judge=self._judge_info(kind, strategy=strategy, mode=mode, **extra),
            failure_modes=verdicts,
            task_completed=getattr(value, "task_completed", None),
            first_failure=first,
            summary=str(getattr(value, "summary", "") or ""),
            usage=_usage(meter, started),
            warnings=[*warnings, *verdict_warnings],
            redactions=material.redactions,
        )

    async def _cache_get(self, key: str, warnings: list[str]) -> dict[str, Any] | None:
        if self._cache is None:
            return None
        try:
            return await asyncio.to_thread(self._cache.get, key)
        except (sqlite3.Error, OSError) as exc:
            warnings.append(f"cache not readable ({exc}); judging without it")
            return None

    async def _cache_put(self, key: str, diagnosis: Diagnosis, warnings: list[str]) -> None:
        if self._cache is None:
            return
        value = diagnosis.model_dump(mode="json", exclude={"source", "usage"})
        try:
            await asyncio.to_thread(self._cache.put, key, value)
        except (sqlite3.Error, OSError) as exc:
            warnings.append(f"cache not writable ({exc}); the result was not cached")

    def _from_cache(self, cached: dict[str, Any], trace: Trace, started: float) -> Diagnosis:
        diagnosis = Diagnosis.model_validate({**cached, "trace_id": trace.trace_id})
        diagnosis.source = _source(trace)
        diagnosis.usage = DiagnosisUsage(
            input_tokens=0, output_tokens=0, cost_usd=0.0, latency_s=time.perf_counter() - started, llm_calls=0, cached=True
        )
        return diagnosis


# --- helpers ---------------------------------------------------------------------------------------


def _source(trace: Trace) -> SourceRef:
    return SourceRef(path=trace.source.path, format=trace.source.format, record=trace.source.record)


def _usage(meter: UsageMeter, started: float) -> DiagnosisUsage:
    return DiagnosisUsage(
        input_tokens=meter.input_tokens,
        output_tokens=meter.output_tokens,
        cost_usd=meter.total_cost,
        latency_s=time.perf_counter() - started,
        llm_calls=meter.calls,
        cached=False,
        cached_input_tokens=meter.cached_input_tokens,
        cache_creation_input_tokens=meter.cache_creation_input_tokens,
        list_cost_usd=meter.total_list_cost,
        batch_api=meter.batch_api,
    )


def _most_tokens(messages: list[dict[str, Any]]) -> int:
    """An upper bound of :meth:`Judge._count` without a tokenizer: a token covers at least one UTF-8 byte."""
    return sum(
        len(str(m.get("content") or "").encode("utf-8", "surrogatepass")) + MAX_TOKEN_SLACK + MESSAGE_OVERHEAD_TOKENS
        for m in messages
    )


def _price(backend: Backend, input_tokens: int, output_tokens: int) -> float | None:
    """Dollars for this many tokens from the backend's price table; ``None`` when it cannot say."""
    if getattr(backend, "free", False):
        return 0.0
    estimate_cost = getattr(backend, "estimate_cost", None)
    if estimate_cost is None:
        return None
    cost = estimate_cost(input_tokens, output_tokens)
    return None if cost is None or math.isnan(cost) else float(cost)


def _verdicts(value: BaseModel, taxonomy: Taxonomy, material: Material) -> tuple[list[ModeVerdict], list[str]]:
    warnings: list[str] = []
    verdicts: list[ModeVerdict] = []
    answers = mode_answers(value, taxonomy)
    for mode in taxonomy.modes:
        answer = answers.get(mode.code)
        if answer is None:
            warnings.append(f"the judge gave no verdict for {mode.code} ({mode.name}): not assessed")
            verdicts.append(ModeVerdict(code=mode.code, name=mode.name, category=mode.category, present=None))
            continue
        evidence: list[Evidence] = []
        for item in answer.evidence:
            verified = material.verify(item.step, item.quote)
            if not verified and item.quote.strip():
                elsewhere = material.find_quote(item.quote)
                where = f" (it occurs in S{elsewhere})" if elsewhere is not None else ""
                warnings.append(f"{mode.code}: quote cited from S{item.step} not found there{where}")
            evidence.append(Evidence(step=item.step, quote=item.quote, verified=verified))
        verdicts.append(
            ModeVerdict(
                code=mode.code,
                name=mode.name,
                category=mode.category,
                present=answer.present,
                confidence=answer.confidence,
                evidence=evidence,
                explanation=answer.rationale,
            )
        )
    return verdicts, warnings


def _first_failure(value: BaseModel, taxonomy: Taxonomy, material: Material, warnings: list[str]) -> FirstFailure | None:
    answer = getattr(value, "first_failure", None)
    if answer is None:
        return None
    code = answer.code
    if code is not None:
        try:
            code = normalize_code(code)
        except ValueError:
            code = None
    step = answer.step
    if step is not None and material.step_text(step) is None:
        warnings.append(f"first failure cites step S{step}, which the trace does not have")
    return FirstFailure(step=step, agent=answer.agent, code=code, explanation=answer.explanation)


def _fit_notes(
    windows: list[Window], answers: list[BaseModel], count: Any, room: int
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


def _merge_detectors(diagnosis: Diagnosis, detectors: Diagnosis) -> None:
    """``both``: keep the LLM's verdicts, add the detectors' evidence where they agree, warn where they differ."""
    by_code = {v.code: v for v in detectors.failure_modes}
    for verdict in diagnosis.failure_modes:
        found = by_code.get(verdict.code)
        if found is None or found.present is not True:
            continue
        if verdict.present:
            known = {(e.step, e.quote) for e in verdict.evidence}
            verdict.evidence.extend(e for e in found.evidence if (e.step, e.quote) not in known)
        else:
            steps = ", ".join(f"S{e.step}" for e in found.evidence if e.step is not None) or "no steps"
            diagnosis.warnings.append(
                f"detectors flagged {verdict.code} ({steps}) but the LLM judged it "
                f"{'absent' if verdict.present is False else 'not assessed'}"
            )


# --- public entry points ---------------------------------------------------------------------------


async def aclassify(
    trace_or_path: Trace | str | os.PathLike[str] | Any,
    *,
    config: JudgeConfig | None = None,
    raise_on_error: bool = True,
    **options: Any,
) -> Diagnosis:
    """Label one trace with the MAST failure modes.

    Args:
        trace_or_path: a :class:`~mast.trace.Trace`, a trace file, or an object ``mast.load_trace`` reads.
        config: judge options; ``MAST_*`` variables fill what ``options`` leave unset.
        raise_on_error: raise :class:`~mast.errors.JudgeError` on failure (default), or return a
            Diagnosis with ``status: "error"``.
        **options: any :class:`~mast.judge.config.JudgeConfig` field (``model=``, ``api_base=``...).

    Raises:
        UsageError: bad options. TraceFormatError: unreadable input. JudgeError: the judge failed.

    Example:
        >>> d = await mast.aclassify(trace, model="openai/gpt-4.1-mini")   # doctest: +SKIP
    """
    async with Judge(config, **options) as judge:
        return await judge.classify(trace_or_path, raise_on_error=raise_on_error)


def classify(
    trace_or_path: Trace | str | os.PathLike[str] | Any,
    *,
    config: JudgeConfig | None = None,
    raise_on_error: bool = True,
    **options: Any,
) -> Diagnosis:
    """Synchronous :func:`aclassify` (not usable inside a running event loop: there, ``await mast.aclassify``).

    Raises:
        UsageError: called from a running event loop, or bad options.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(aclassify(trace_or_path, config=config, raise_on_error=raise_on_error, **options))
    raise UsageError(
        "mast.classify() cannot run inside a running event loop (a notebook or async code): "
        "use `await mast.aclassify(...)` instead"
    )

