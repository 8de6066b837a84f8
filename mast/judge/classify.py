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

This module is the coordinator; each step lives in a room of its own: :mod:`mast.judge.messages`
(prepare the trace, build the requests), :mod:`mast.judge.strategy` (single vs chunked, ask),
:mod:`mast.judge.budget` (tokens, context, estimates, prices), :mod:`mast.judge.verdicts` (answer ->
diagnosis) and :mod:`mast.judge.cache` (the key and the store).

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
import functools
import hashlib
import os
import time
from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError

from mast.diagnosis import Diagnosis, DiagnosisStatus, ErrorInfo, JudgeInfo
from mast.errors import JudgeError, UsageError, error_info
from mast.judge import cache as judge_cache
from mast.judge import detectors
from mast.judge.budget import (
    ANSWER_TOKENS,
    CONTEXT_SAFETY,
    DEFAULT_CONTEXT_WINDOW,
    MAX_TOKEN_SLACK,
    MESSAGE_OVERHEAD_TOKENS,
    MIN_WINDOW_TOKENS,
    NOTE_TOKENS_PER_WINDOW,
    WINDOW_ANSWER_TOKENS,
    CostEstimate,
    answer_limits,
    context_of,
    estimate,
)
from mast.judge.cache import JudgeCache
from mast.judge.config import JudgeConfig, check_option_names, invalid_options
from mast.judge.deferred import DeferredBackend
from mast.judge.local import DEFAULT_CONTEXT, check_installed, gguf_for, is_local, shared_server
from mast.judge.material import prepare
from mast.judge.messages import prepare_trace
from mast.judge.prompt import PromptSet, load_prompts
from mast.judge.protocol import Backend, UsageMeter
from mast.judge.strategy import MAX_WINDOWS, WINDOW_CONCURRENCY, Gate, Strategy, Unjudgeable
from mast.judge.verdicts import (
    cached_diagnosis,
    diagnosis_from_answer,
    failed_diagnosis,
    judge_info,
    merge_detectors,
    scrub_diagnosis,
    source_ref,
    usage_of,
)
from mast.redact import current_redactor
from mast.taxonomy import Taxonomy, load_taxonomy
from mast.trace import Trace

__all__ = [
    # The judge and its entry points.
    "Judge", "aclassify", "classify", "judge_notice", "CostEstimate", "NO_MODEL_NOTICE", "LOCAL_MIN_TIMEOUT",
    # Names that lived here before the judge was split; their homes are budget and strategy.
    "ANSWER_TOKENS", "CONTEXT_SAFETY", "DEFAULT_CONTEXT_WINDOW", "MAX_TOKEN_SLACK", "MAX_WINDOWS",
    "MESSAGE_OVERHEAD_TOKENS", "MIN_WINDOW_TOKENS", "NOTE_TOKENS_PER_WINDOW", "WINDOW_ANSWER_TOKENS",
    "WINDOW_CONCURRENCY",
]

LOCAL_MIN_TIMEOUT = 600.0
"""Seconds a call to the in-process local model may take, queueing included."""

NO_MODEL_NOTICE = (
    "no model configured: using the offline detectors; set MAST_MODEL or --model "
    "(e.g. openai/gpt-4.1-mini, or local for a small offline model) for an LLM judge"
)


def judge_notice(config: JudgeConfig) -> str | None:
    """The one line the CLI prints when no model is configured and the detectors judge instead."""
    if config.judge == "auto" and not config.model:
        return NO_MODEL_NOTICE
    return None


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
    check_option_names(options)
    try:
        return JudgeConfig.model_validate({**dict(config), **{k: v for k, v in options.items() if v is not None}})
    except ValidationError as exc:
        raise invalid_options(exc) from exc


class Judge:
    """A configured judge; reuse one for many traces (``async with Judge(config) as judge``).

    The coordinator of the judge's rooms: :mod:`~mast.judge.messages` prepares the trace and
    builds the requests, :mod:`~mast.judge.strategy` decides single vs chunked and asks,
    :mod:`~mast.judge.budget` counts and prices, :mod:`~mast.judge.verdicts` turns the answer into
    a diagnosis, :mod:`~mast.judge.cache` remembers it.

    Args:
        config: the judge's options (``MAST_*`` variables apply when built by :meth:`JudgeConfig.from_options`).
        backend: a ready :class:`~mast.judge.backend.Backend` to use instead of litellm (tests, plugins).
        **options: :class:`JudgeConfig` fields overriding ``config``.
    """

    def __init__(self, config: JudgeConfig | None = None, *, backend: Backend | None = None, **options: Any) -> None:
        self.config = _merged_config(config, options)
        self.taxonomy: Taxonomy = load_taxonomy(self.config.taxonomy)
        self.prompts: PromptSet = load_prompts(self.taxonomy)
        self.strategy = Strategy(self.config, self.prompts, self.taxonomy)
        self._backend = backend
        self._owns_backend = backend is None
        self._cache = JudgeCache(self.config.cache_dir) if self.config.cache else None
        # Computed once per judge rather than per trace: it depends only on the configuration.
        self._taxonomy_hash = hashlib.sha256(self.taxonomy.fingerprint().encode()).hexdigest()
        self.answer_tokens: int | None = None
        """Output tokens of a typical answer of this judge, learnt from its answers (``None`` until
        one came: estimates then assume :data:`~mast.judge.budget.ANSWER_TOKENS`)."""
        self._answers = (0, 0)  # (output tokens, answers) of single-call judgements seen
        if self.config.jury or self.config.samples > 1:
            # One Judge makes one judgement per trace; several are a Jury's job (it builds on Judges).
            raise UsageError("jury= and samples > 1 need mast.judge.jury.Jury (mast.classify and the CLI pick it)")
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
        model = self.config.model or ""
        if is_local(model):
            from mast.judge.backend import LiteLLMBackend

            check_installed(model)  # both parts named at once
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
            # litellm itself is imported on the first call (or the first fact the cache does not
            # hold): a run answered from the cache never pays for the import (mast.judge.deferred).
            self._backend = DeferredBackend(self.config, self._cache)

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
        gate: Gate | None = None,
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
        if self.config.kind == "detectors":
            return self._detectors_only(trace, started)
        if self._backend is None:
            await self.start()
        meter = UsageMeter()
        trace_hash = trace.content_hash()
        try:
            diagnosis = await self._judge_llm(trace, trace_hash, meter, started, gate)
            self.learn_answer_tokens([diagnosis])
            return diagnosis
        except Unjudgeable as exc:
            error = ErrorInfo(type="Unjudgeable", message=str(exc))
            return self._failed(trace, trace_hash, "unjudgeable", error, meter, started)
        except JudgeError as exc:
            if raise_on_error:
                raise
            return self._failed(trace, trace_hash, "error", ErrorInfo(**error_info(exc)), meter, started)

    @property
    def notice(self) -> str | None:
        """The line to show the user about this judge (:func:`judge_notice`), or ``None``."""
        return judge_notice(self.config)

    @property
    def info(self) -> JudgeInfo:
        """What every diagnosis of this judge records as ``judge``, before per-trace details (strategy, windows)."""
        if self.config.kind == "detectors":
            info = detectors.detectors_judge_info(self.taxonomy)
            info.params.update(self._detectors_redaction)
            return info
        return judge_info(self.config, self.prompts, self.taxonomy)

    @functools.cached_property
    def _detectors_redaction(self) -> dict[str, Any]:
        # The detectors' quotes are stored redacted or as read: the record says which, and resume
        # compares it, so quotes a --no-redact run wrote are not kept by a run with redaction on.
        # Once per judge: the patterns' fingerprint reads MAST_REDACT_PATTERNS's file.
        return {
            "redact": self.config.redact,
            "redact_ips": self.config.redact_ips,
            "redact_patterns": self.config.redact_patterns_fingerprint(),
        }

    def learn_answer_tokens(self, diagnoses: Iterable[Diagnosis]) -> None:
        """Let later :meth:`estimate` calls assume answers as long as these (earlier results of this judge).

        Only answers of one call count (no re-ask, no windows, not from the cache): their output
        tokens are the size of one answer. A model answers in a few hundred tokens where the
        default assumption is 1,500, which made budgets stop runs at a third of their money.
        """
        total, count = self._answers
        for diagnosis in diagnoses:
            usage = diagnosis.usage
            if diagnosis.status == "judged" and usage.llm_calls == 1 and not usage.cached and usage.output_tokens > 0:
                total, count = total + usage.output_tokens, count + 1
        self._answers = (total, count)
        if count:
            self.answer_tokens = max(1, round(total / count))

    def estimate(self, trace: Trace) -> CostEstimate:
        """Tokens and dollars judging ``trace`` is expected to take, without calling the model.

        Mirrors the judge's single / chunked decision and counts the prompt as it would (detector
        hints left out: they add at most a few hundred tokens). Answers are assumed to be of a
        typical size. 0 for the offline detectors; 0 tokens for a trace too long for the model
        (nothing would be sent).
        """
        if self.config.kind == "detectors":
            return CostEstimate(0, 0, 0.0)
        config = self.config
        material = prepare(
            trace, redact=config.redact, redact_ips=config.redact_ips, redact_patterns=tuple(config.redact_patterns)
        )
        return estimate(material, backend=self.backend, config=config, prompts=self.prompts, counter=self.strategy.counter,
                        answer_tokens=self.answer_tokens)

    def _failed(
        self, trace: Trace, trace_hash: str, status: DiagnosisStatus, error: ErrorInfo, meter: UsageMeter, started: float
    ) -> Diagnosis:
        return failed_diagnosis(
            trace, status=status, error=error, taxonomy=self.taxonomy, info=self.info,
            usage=usage_of(meter, started), trace_hash=trace_hash,
        )

    def _detectors_only(self, trace: Trace, started: float) -> Diagnosis:
        diagnosis = detectors.detectors_diagnosis(trace, self.taxonomy)
        diagnosis.judge = self.info
        if self.config.redact:  # the detectors quote the trace as read: what is stored is redacted
            redactor = current_redactor(ips=self.config.redact_ips, patterns=tuple(self.config.redact_patterns))
            scrub_diagnosis(diagnosis, lambda text: redactor.redact(text).text if text else text)
        diagnosis.source = source_ref(trace)
        diagnosis.trace_hash = diagnosis.trace_hash or trace.content_hash()
        diagnosis.usage.latency_s = time.perf_counter() - started
        return diagnosis

    async def _judge_llm(
        self, trace: Trace, trace_hash: str, meter: UsageMeter, started: float, gate: Gate | None
    ) -> Diagnosis:
        backend = self.backend
        prepared = prepare_trace(trace, self.config, self.taxonomy)
        material, warnings = prepared.material, prepared.warnings
        context = context_of(backend, warnings)
        limits = answer_limits(backend, self.config.max_output_tokens, len(self.taxonomy.modes), warnings)
        # The key hashes the whole prompt text: computed only when there is a cache to ask.
        key = "" if self._cache is None else judge_cache.judgement_key(
            config=self.config, prompts=self.prompts, taxonomy=self.taxonomy, taxonomy_hash=self._taxonomy_hash,
            trace_hash=trace_hash, material=material, context=context, limits=limits,
        )
        cached = await judge_cache.read(self._cache, key, warnings)
        if cached is not None:
            return cached_diagnosis(cached, trace, started)
        outcome = await self.strategy.run(material, backend=backend, context=context, limits=limits, meter=meter, gate=gate)
        info = judge_info(
            self.config, self.prompts, self.taxonomy, strategy=outcome.strategy, mode=outcome.mode, **outcome.details
        )
        diagnosis = diagnosis_from_answer(
            outcome.value, trace=trace, material=material, taxonomy=self.taxonomy, info=info,
            trace_hash=trace_hash, usage=usage_of(meter, started), warnings=[*warnings, *outcome.notes],
        )
        if prepared.detectors is not None:
            merge_detectors(diagnosis, scrub_diagnosis(prepared.detectors, material.scrub))
        await judge_cache.write(self._cache, key, diagnosis, diagnosis.warnings)
        return diagnosis


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
    from mast.judge.jury import open_judge  # a Jury when jury= or samples > 1 (it builds on Judge)

    async with open_judge(config, **options) as judge:
        return await judge.classify(trace_or_path, raise_on_error=raise_on_error)


def classify(
    trace_or_path: Trace | str | os.PathLike[str] | Any,
    *,
    config: JudgeConfig | None = None,
    raise_on_error: bool = True,
    **options: Any,
) -> Diagnosis:
    """Synchronous :func:`aclassify`; inside a running event loop (a notebook) it runs in a worker thread.

    Raises:
        UsageError: bad options.
    """
    from mast._sync import run_sync

    return run_sync(aclassify(trace_or_path, config=config, raise_on_error=raise_on_error, **options))

