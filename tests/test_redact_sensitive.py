"""``terraform output -json``: a ``"sensitive": true`` sibling makes the ``value`` secret, at any depth (issue 34)."""

from __future__ import annotations

import json

import pytest

from mast.redact import Redactor, redact_trace
from mast.trace import Step, ToolCall, Trace

OUTPUTS = {
    "db_password": {"sensitive": True, "type": "string", "value": "hunter2-real"},
    "connection": {
        "sensitive": True,
        "type": ["object", {"host": "string", "pw": "string", "ports": ["list", "number"]}],
        "value": {"host": "db.internal", "pw": "Tr0ub4dor-nested", "ports": [5432, 6543]},
    },
    "region": {"sensitive": False, "type": "string", "value": "eu-west-1"},
}
SECRETS = ("hunter2-real", "Tr0ub4dor-nested", "db.internal", "5432", "6543")


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(OUTPUTS),  # one line, as piped
        json.dumps(OUTPUTS, indent=2),  # as terraform prints it
        json.dumps({"module": {"outputs": {"deep": {"x": OUTPUTS}}}}),  # nested deeper
        str(OUTPUTS),  # a Python dict's repr
        json.dumps({**OUTPUTS, "early": {"value": "before-the-flag-9", "sensitive": True}}),  # value first
    ],
)
def test_a_sensitive_flag_redacts_its_value_wherever_it_sits(text: str) -> None:
    out = Redactor().redact(text)
    for secret in (*SECRETS, "before-the-flag-9") if "early" in text else SECRETS:
        assert secret not in out.text, out.text
    assert "eu-west-1" in out.text and "region" in out.text  # not flagged: kept
    assert ("db_password" in out.text and "string" in out.text) and out.counts.get("secret", 0) >= 3


def test_a_sensitive_false_value_and_prose_about_sensitivity_stay() -> None:
    text = json.dumps({"out": {"sensitive": False, "value": "public-bucket-name"}})
    assert Redactor().redact(text).text == text
    prose = "The value is sensitive: true, this setting hides it from the plan output."
    assert Redactor().redact(prose).text == prose


def test_structured_tool_output_with_the_flag_is_redacted_leaf_by_leaf() -> None:
    trace = Trace(
        trace_id="tf",
        steps=[
            Step(
                index=0,
                agent="a",
                tool_calls=[ToolCall(name="terraform_output", arguments={"outputs": {"deep": OUTPUTS}})],
            )
        ],
    )
    redacted, counts = redact_trace(trace)
    arguments = redacted.steps[0].tool_calls[0].arguments
    assert not any(secret in json.dumps(arguments) for secret in SECRETS), arguments
    assert arguments["outputs"]["deep"]["region"]["value"] == "eu-west-1"
    assert arguments["outputs"]["deep"]["connection"]["value"]["ports"] == ["[REDACTED:secret]"] * 2
    assert counts.get("secret", 0) >= 5
