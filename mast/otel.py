"""mast in OpenTelemetry: verdicts as ``gen_ai.evaluation.result`` events, and the judge's own calls as spans.

**Evaluation events.** :class:`EvaluationEmitter` sends, per judged trace, one event per assessed
mode (``gen_ai.evaluation.name`` = ``mast.<code> <name>``, ``gen_ai.evaluation.score.label`` =
``present``/``absent``, ``gen_ai.evaluation.score.value`` = the confidence,
``gen_ai.evaluation.explanation`` = the reason and evidence) and one summary event (``mast``),
through opentelemetry-sdk's OTLP/HTTP log exporter, so any OTel backend receives them. When the
evaluated trace is an OTel trace and its root span is known, each event is parented to that span.
Attribute names come from ``opentelemetry-semantic-conventions``; the event name is spelled here
because that package has no constant for it yet.

**Judge spans (off by default).** With :func:`enable_judge_spans` (or ``MAST_OTEL_JUDGE_SPANS=1``,
which uses the global tracer provider) every model call of the judge becomes a GenAI client span
(``chat <model>``: request model, max tokens, token usage, finish reason, retries).

Both need ``pip install 'mast-judge[otel]'`` (opentelemetry-sdk and the OTLP/HTTP exporter).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

from mast._env import judge_spans_on
from mast.diagnosis import Diagnosis
from mast.errors import UsageError
from mast.trace import Trace

EVALUATION_EVENT: Final = "gen_ai.evaluation.result"
"""The GenAI semantic conventions' evaluation event (no constant in the conventions package yet)."""
SCOPE: Final = "mast"
_HEX_TRACE = re.compile(r"^[0-9a-f]{32}$")
_HEX_SPAN = re.compile(r"^[0-9a-f]{16}$")


def _sdk_missing(exc: ImportError) -> UsageError:
    return UsageError(
        f"OpenTelemetry export needs the SDK: pip install 'mast-judge[otel]' ({exc.name} missing)"
    )


def logs_endpoint(endpoint: str | None) -> str | None:
    """``http://host:4318`` -> ``http://host:4318/v1/logs``; a full path is kept; ``None``: the OTEL_* variables."""
    if not endpoint:
        return None
    stripped = endpoint.rstrip("/")
    scheme_and_host = stripped.split("://", 1)[-1]
    return stripped if "/" in scheme_and_host else f"{stripped}/v1/logs"


def root_span_id(trace: Trace) -> str | None:
    """The id of the span enclosing the trace's steps (the root), when the trace came from spans."""
    ids = {s.id for s in trace.steps if s.id}
    for step in trace.steps:
        if step.parent_id and step.parent_id not in ids:
            return step.parent_id
    return next((s.id for s in trace.steps if s.id), None)


def evaluation_attributes(diagnosis: Diagnosis) -> list[dict[str, Any]]:
    """The attributes of each event for one diagnosis: assessed modes, then the summary."""
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as ga

    from mast.integrations.phoenix import annotations_for

    events: list[dict[str, Any]] = []
    # The Phoenix annotations already hold name, label, score and explanation per verdict.
    rows, _ = annotations_for(diagnosis)
    for row in rows:
        result = row["result"]
        attributes: dict[str, Any] = {
            ga.GEN_AI_EVALUATION_NAME: row["name"],
            ga.GEN_AI_EVALUATION_SCORE_LABEL: result["label"],
            ga.GEN_AI_EVALUATION_EXPLANATION: result["explanation"],
            "mast.trace_id": diagnosis.trace_id,
            "mast.judge.kind": diagnosis.judge.kind,
            "mast.taxonomy_version": diagnosis.judge.taxonomy_version,
        }
        if "score" in result:
            attributes[ga.GEN_AI_EVALUATION_SCORE_VALUE] = float(result["score"])
        if diagnosis.judge.model:
            attributes["mast.judge.model"] = diagnosis.judge.model
        if diagnosis.judge.prompt_hash:
            attributes["mast.judge.prompt_hash"] = diagnosis.judge.prompt_hash
        events.append(attributes)
    return events


class EvaluationEmitter:
    """Sends verdicts as OTel evaluation events; use as a context manager (flushes on exit)."""

    def __init__(
        self, endpoint: str | None = None, *, exporter: Any = None, headers: Mapping[str, str] | None = None
    ) -> None:
        """Export to ``endpoint`` (OTLP/HTTP; ``None``: the ``OTEL_EXPORTER_OTLP_*`` variables), or to ``exporter``."""
        try:
            from opentelemetry.sdk._logs import LoggerProvider
            from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
            from opentelemetry.sdk.resources import Resource
        except ImportError as exc:
            raise _sdk_missing(exc) from exc
        if exporter is None:
            try:
                from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
            except ImportError as exc:
                raise _sdk_missing(exc) from exc
            exporter = OTLPLogExporter(
                endpoint=logs_endpoint(endpoint), headers=dict(headers) if headers else None
            )
        self.provider = LoggerProvider(resource=Resource.create({"service.name": "mast"}))
        self.provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
        self.logger = self.provider.get_logger(SCOPE)
        self.sent = 0

    def emit(self, diagnosis: Diagnosis, *, span_id: str | None = None) -> int:
        """Queue the events of one diagnosis; returns how many."""
        from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

        context = None
        trace_id = diagnosis.trace_id.lower()
        if span_id and _HEX_TRACE.match(trace_id) and _HEX_SPAN.match(span_id.lower()):
            parent = SpanContext(
                int(trace_id, 16),
                int(span_id, 16),
                is_remote=True,
                trace_flags=TraceFlags(TraceFlags.SAMPLED),
            )
            context = set_span_in_context(NonRecordingSpan(parent))
        events = evaluation_attributes(diagnosis)
        for attributes in events:
            self.logger.emit(event_name=EVALUATION_EVENT, attributes=attributes, context=context)
        self.sent += len(events)
        return len(events)

    def close(self) -> None:
        """Send what is queued and stop."""
        self.provider.force_flush()
        self.provider.shutdown()

    def __enter__(self) -> EvaluationEmitter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def emit_evaluations(
    diagnoses: Iterable[Diagnosis], endpoint: str | None = None, *, span_ids: Mapping[str, str] | None = None
) -> int:
    """Send every diagnosis as evaluation events to ``endpoint``; returns the number of events.

    Args:
        diagnoses: results.
        endpoint: OTLP/HTTP endpoint (``http://host:4318`` or a full ``.../v1/logs`` URL);
            ``None``: the ``OTEL_EXPORTER_OTLP_*`` variables.
        span_ids: trace id -> root span id, to parent the events.
    """
    span_ids = span_ids or {}
    with EvaluationEmitter(endpoint) as emitter:
        for diagnosis in diagnoses:
            emitter.emit(diagnosis, span_id=span_ids.get(diagnosis.trace_id))
        return emitter.sent


# --- the judge's own calls as spans ------------------------------------------------------------------

_JUDGE_TRACER: Any = None


def enable_judge_spans(tracer_provider: Any = None) -> None:
    """Record each model call of the judge as a GenAI span on ``tracer_provider`` (``None``: the global one)."""
    global _JUDGE_TRACER
    from opentelemetry import trace

    provider = tracer_provider or trace.get_tracer_provider()
    _JUDGE_TRACER = provider.get_tracer(SCOPE)


def disable_judge_spans() -> None:
    """Stop recording the judge's calls."""
    global _JUDGE_TRACER
    _JUDGE_TRACER = None


def _tracer() -> Any:
    if _JUDGE_TRACER is None and judge_spans_on():
        enable_judge_spans()
    return _JUDGE_TRACER


class JudgeCallSpan:
    """What the backend reports about one call; a no-op when judge spans are off."""

    def __init__(self, span: Any) -> None:
        self.span = span

    def finish(
        self, *, input_tokens: int, output_tokens: int, finish_reason: str | None, attempts: int
    ) -> None:
        """Record the answer's usage on the span."""
        if self.span is None:
            return
        from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as ga

        self.span.set_attribute(ga.GEN_AI_USAGE_INPUT_TOKENS, input_tokens)
        self.span.set_attribute(ga.GEN_AI_USAGE_OUTPUT_TOKENS, output_tokens)
        if finish_reason:
            self.span.set_attribute(ga.GEN_AI_RESPONSE_FINISH_REASONS, [finish_reason])
        self.span.set_attribute("mast.attempts", attempts)


@contextmanager
def judge_call_span(model: str, *, max_tokens: int, provider: str | None = None) -> Iterator[JudgeCallSpan]:
    """A ``chat <model>`` client span around one judge call, when judge spans are enabled."""
    tracer = _tracer()
    if tracer is None:
        yield JudgeCallSpan(None)
        return
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as ga
    from opentelemetry.trace import SpanKind

    attributes: dict[str, Any] = {
        ga.GEN_AI_OPERATION_NAME: "chat",
        ga.GEN_AI_REQUEST_MODEL: model,
        ga.GEN_AI_REQUEST_MAX_TOKENS: max_tokens,
    }
    if provider:
        attributes[ga.GEN_AI_PROVIDER_NAME] = provider
    with tracer.start_as_current_span(f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes) as span:
        yield JudgeCallSpan(span)
