"""Redaction and the judge's JSON repair stay linear on one-line text (issue 34, point 3).

A minified megabyte of JSON has no newline: a rule that looks back "to the start of the line" then
reads back to the start of the text for every match, and grows with the square of the text. Each
shape is redacted (or repaired) at 128 KB and at 512 KB, four times the text, and the CPU time may
grow at most twice that (``LIMIT``): a quadratic rule grows sixteen times, and the ones this caught
took 100 to 250 times longer at 4 MB. The sizes are small on purpose, to keep the suite fast. A ratio, never a wall-clock limit;
seconds per megabyte from 256 KB to 4 MB are benchmarks/bench_redact_oneline.py's (benchmarks/RESULTS.md).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from mast.judge.schema import AnswerInvalid, close_json, extract_json
from mast.redact import Redactor

SMALL = 128 * 1024
LARGE = 4 * SMALL
LIMIT = 8.0
"""Four times the text may take at most this many times as long (linear is 4; quadratic 16)."""

ONE_LINE_SHAPES = {
    "minified JSON with api_key fields": '{"id":"x1","api_key":"AbCdEf0123456789XyZ","n":1},',
    "token= runs": "token=abcdefgh1234567 ",
    "packed authorization: lead-ins": "authorization: ",
    "packed authorization:x lead-ins": "authorization:x",
    "minified JSON with password and secret fields": '{"password":"p4ss\\\\w0rd","client_secret":"Zx9Qw8Er7Ty6Ui5Op4"},',
    "name/value pairs": '{"name":"DB_PASSWORD","value":"Tr0ub4dor&3xyz"},',
    "terraform sensitive outputs": '{"db":{"sensitive":true,"type":["object",{"pw":"string"}],"value":{"pw":"h2-r"}}},',
    "sensitive flags with no value": '"sensitive":true,"a":"b",',
    "packed national-id labels": "bsn 46159499 ",
    "digit groups": "6370 1329 8643 ",
}
REPLIES = {
    'a reply looping on {"': '{"',
    "an unclosed nest of objects": '{"a":',
    "an unclosed string list": '["ab",',
}


def _cpu(function: Callable[[str], Any], text: str) -> float:
    times = []
    for _ in range(2):
        start = time.process_time()
        try:
            function(text)
        except AnswerInvalid:
            pass  # a hostile reply may be refused; how long the refusal takes is what counts
        times.append(time.process_time() - start)
    return min(times)


def _ratio(function: Callable[[str], Any], unit: str) -> tuple[float, float]:
    small = (unit * (SMALL // len(unit) + 1))[:SMALL]
    large = (unit * (LARGE // len(unit) + 1))[:LARGE]
    assert "\n" not in large
    return _cpu(function, small), _cpu(function, large)


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(ips=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ONE_LINE_SHAPES))
def test_redaction_of_one_line_text_grows_linearly(name: str, redactor: Redactor) -> None:
    small, large = _ratio(redactor.redact, ONE_LINE_SHAPES[name])
    assert large < LIMIT * max(small, 0.01), (
        f"{name}: 128 KB {small:.2f} s, 512 KB {large:.2f} s (x{large / small:.0f})"
    )


@pytest.mark.parametrize("name", sorted(REPLIES))
def test_json_repair_of_a_hostile_reply_grows_linearly(name: str) -> None:
    small, large = _ratio(extract_json, REPLIES[name])
    assert large < LIMIT * max(small, 0.005), (
        f"{name}: 128 KB {small:.2f} s, 512 KB {large:.2f} s (x{large / small:.0f})"
    )


def test_the_allow_list_line_window_does_not_run_from_the_start_of_the_text(redactor: Redactor) -> None:
    # One match deep in a line of 200 KB: the old window read back to offset 0 for each of them.
    # Counted as characters given to the allow lists, which is what grew with the square.
    from mast.redact import gitleaks

    seen: list[int] = []
    original = gitleaks._Allow.accepts

    def counting(self: Any, secret: str, match: str, line: str) -> bool:
        seen.append(len(line))
        return bool(original(self, secret, match, line))

    gitleaks._Allow.accepts = counting  # type: ignore[method-assign]
    try:
        redactor.redact("x" * 200_000 + ' "api_key":"AbCdEf0123456789XyZ" ' + "y" * 10)
    finally:
        gitleaks._Allow.accepts = original  # type: ignore[method-assign]
    assert seen, "the generic rule's allow lists were consulted"
    assert max(seen) <= 2 * gitleaks._LINE_WINDOW + 64


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"summary": "ran out of tok', {"summary": "ran out of tok"}),
        ('{"a": [1, 2,], "b": tr', {"a": [1, 2]}),
        ('{"a": {"b": 1', {"a": {"b": 1}}),
        ('{"a": 1, "b"', {"a": 1}),
        ('{"a": 1, "b":', {"a": 1}),
        ('{"a": "x\\', {"a": "x"}),
        ('{"a": "}{"', {"a": "}{"}),
        ('{"a": [{"b": "c"}, {"d', {"a": [{"b": "c"}, {}]}),
    ],
)
def test_close_json_repairs_a_cut_off_answer(reply: str, expected: dict[str, Any]) -> None:
    assert close_json(reply) == expected
    if reply.count("{") == 1:  # with a complete inner object, extract_json asks again instead
        assert extract_json(reply) == expected


def test_close_json_refuses_what_a_cut_off_does_not_explain() -> None:
    assert close_json('{"a": 1]}') is None
    assert close_json('{"a": 12.') is None
