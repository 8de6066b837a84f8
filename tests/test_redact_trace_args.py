"""``mast.redact_trace`` redacts dict-valued tool arguments by their key (issue 34, smaller items)."""

from __future__ import annotations

from mast import redact_trace
from mast.trace import Step, ToolCall, Trace


def _trace(arguments: dict[str, object]) -> Trace:
    return Trace(
        trace_id="t",
        steps=[Step(index=0, agent="a", tool_calls=[ToolCall(name="login", arguments=arguments)])],
    )


def test_a_password_argument_is_redacted_by_its_key() -> None:
    redacted, counts = redact_trace(
        _trace({"user": "ops", "password": "hunter2", "db": {"api_key": "Zx9Qw8Er7Ty6Ui5Op4"}})
    )
    arguments = redacted.steps[0].tool_calls[0].arguments
    assert arguments["user"] == "ops"
    assert "hunter2" not in str(arguments) and "Zx9Qw8Er7Ty6Ui5Op4" not in str(arguments)
    assert counts.get("password") == 1


def test_ordinary_arguments_stay() -> None:
    arguments = {"max_tokens": 4096, "query": "weather in Paris", "token_count": 12}
    redacted, counts = redact_trace(_trace(arguments))
    assert redacted.steps[0].tool_calls[0].arguments == arguments
    assert counts == {}
