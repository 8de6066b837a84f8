"""OTel GenAI semantic conventions (current): ``gen_ai.*`` span attributes.

``gen_ai.input.messages`` / ``gen_ai.output.messages`` (JSON strings of ``{role, parts}``; each
chat call re-sends the history, read incrementally), ``gen_ai.system_instructions``,
``gen_ai.operation.name`` (the span kind), ``gen_ai.agent.*``, ``gen_ai.tool.*``, ``gen_ai.usage.*``,
models and the provider. Names come from ``opentelemetry-semantic-conventions`` where it defines
them. The deprecated indexed ``gen_ai.prompt.N.*`` keys are read by :mod:`.openllmetry`;
span events (``gen_ai.user.message``, ``gen_ai.choice``...) by the generic span code.
"""

from __future__ import annotations

from typing import Any

from mast.normalize._otel_attrs import input_messages, output_messages
from mast.normalize._otel_dialects import SpanDialect, SpanReading, register_span_dialect

try:  # the "incubating" module path is not stable across semconv releases
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as _gen_ai

    GEN_AI_AGENT_DESCRIPTION = _gen_ai.GEN_AI_AGENT_DESCRIPTION
    GEN_AI_AGENT_NAME = _gen_ai.GEN_AI_AGENT_NAME
    GEN_AI_INPUT_MESSAGES = _gen_ai.GEN_AI_INPUT_MESSAGES
    GEN_AI_OPERATION_NAME = _gen_ai.GEN_AI_OPERATION_NAME
    GEN_AI_OUTPUT_MESSAGES = _gen_ai.GEN_AI_OUTPUT_MESSAGES
    GEN_AI_PROVIDER_NAME = _gen_ai.GEN_AI_PROVIDER_NAME
    GEN_AI_REQUEST_MODEL = _gen_ai.GEN_AI_REQUEST_MODEL
    GEN_AI_RESPONSE_MODEL = _gen_ai.GEN_AI_RESPONSE_MODEL
    GEN_AI_SYSTEM = _gen_ai.GEN_AI_SYSTEM
    GEN_AI_SYSTEM_INSTRUCTIONS = _gen_ai.GEN_AI_SYSTEM_INSTRUCTIONS
    GEN_AI_TOOL_CALL_ARGUMENTS = _gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS
    GEN_AI_TOOL_CALL_ID = _gen_ai.GEN_AI_TOOL_CALL_ID
    GEN_AI_TOOL_CALL_RESULT = _gen_ai.GEN_AI_TOOL_CALL_RESULT
    GEN_AI_TOOL_NAME = _gen_ai.GEN_AI_TOOL_NAME
    GEN_AI_USAGE_INPUT_TOKENS = _gen_ai.GEN_AI_USAGE_INPUT_TOKENS
    GEN_AI_USAGE_OUTPUT_TOKENS = _gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS
    GEN_AI_USAGE_PROMPT_TOKENS = _gen_ai.GEN_AI_USAGE_PROMPT_TOKENS
    GEN_AI_USAGE_COMPLETION_TOKENS = _gen_ai.GEN_AI_USAGE_COMPLETION_TOKENS
except (ImportError, AttributeError):  # pragma: no cover - same names, spelled out
    GEN_AI_AGENT_DESCRIPTION = "gen_ai.agent.description"
    GEN_AI_AGENT_NAME = "gen_ai.agent.name"
    GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
    GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
    GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"
    GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
    GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
    GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
    GEN_AI_SYSTEM = "gen_ai.system"
    GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
    GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
    GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
    GEN_AI_TOOL_CALL_RESULT = "gen_ai.tool.call.result"
    GEN_AI_TOOL_NAME = "gen_ai.tool.name"
    GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
    GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
    GEN_AI_USAGE_PROMPT_TOKENS = "gen_ai.usage.prompt_tokens"
    GEN_AI_USAGE_COMPLETION_TOKENS = "gen_ai.usage.completion_tokens"

OPERATION_KINDS = {
    "chat": "llm",
    "text_completion": "llm",
    "generate_content": "llm",
    "completion": "llm",
    "execute_tool": "tool",
    "invoke_agent": "agent",
    "create_agent": "agent",
    "invoke_workflow": "chain",
    "chain": "chain",
    "embeddings": "other",
    "retrieval": "other",
}
"""``gen_ai.operation.name`` values and the span kind each means."""


def operation_kind(attrs: dict[str, Any], used: set[str]) -> str | None:
    """The kind ``gen_ai.operation.name`` declares (the key stays in the attributes: it says more than the kind)."""
    op = attrs.get(GEN_AI_OPERATION_NAME)
    return OPERATION_KINDS.get(op) if isinstance(op, str) else None


def read_messages(span: SpanReading) -> None:
    """System instructions, input and output messages (``{role, parts}`` JSON)."""
    span.system = span.take(GEN_AI_SYSTEM_INSTRUCTIONS)
    if span.inputs is None:
        span.inputs = input_messages(span.take(GEN_AI_INPUT_MESSAGES))
    if span.outputs is None:
        span.outputs = output_messages(span.take(GEN_AI_OUTPUT_MESSAGES))


register_span_dialect(SpanDialect(
    name="otel_genai",
    prefixes=("gen_ai.",),
    kinds=((20, operation_kind),),
    implies={"llm": (GEN_AI_INPUT_MESSAGES, GEN_AI_OUTPUT_MESSAGES), "tool": (GEN_AI_TOOL_NAME,), "agent": (GEN_AI_AGENT_NAME,)},
    messages=((10, read_messages),),
    fields={
        "agent": ((10, GEN_AI_AGENT_NAME),),
        "agent_description": ((10, GEN_AI_AGENT_DESCRIPTION),),
        "tool_name": ((10, GEN_AI_TOOL_NAME),),
        "tool_call_id": ((10, GEN_AI_TOOL_CALL_ID),),
        "tool_arguments": ((10, GEN_AI_TOOL_CALL_ARGUMENTS),),
        "tool_result": ((10, GEN_AI_TOOL_CALL_RESULT),),
        # the model that answered first; the one asked for only after every dialect's answered model
        "model": ((10, GEN_AI_RESPONSE_MODEL), (40, GEN_AI_REQUEST_MODEL)),
        "input_tokens": ((10, GEN_AI_USAGE_INPUT_TOKENS), (20, GEN_AI_USAGE_PROMPT_TOKENS)),
        "output_tokens": ((10, GEN_AI_USAGE_OUTPUT_TOKENS), (20, GEN_AI_USAGE_COMPLETION_TOKENS)),
        "total_tokens": ((30, "gen_ai.usage.total_tokens"),),
        "provider": ((10, GEN_AI_PROVIDER_NAME), (20, GEN_AI_SYSTEM)),
    },
    flat_markers=(GEN_AI_OPERATION_NAME, GEN_AI_INPUT_MESSAGES, GEN_AI_TOOL_NAME, GEN_AI_SYSTEM, GEN_AI_PROVIDER_NAME),
    flat_prefixes=("gen_ai.",),
))
