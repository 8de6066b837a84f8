"""Redaction runs in time linear in the text, whatever the text (issue 25, point 2).

Property: for adversarial runs (tests/data/redact/adversarial.yaml: near-miss cards, IBANs, SSNs,
JWT and key prefixes, assignment words, lead-ins of every general rule) and runs built from every
rule's own examples, four times the text takes at most ~4 times as long. The bound is loose on
purpose (under 8x, the faster of 2 runs in CPU time, measured again up to 4 times before failing):
a quadratic rule gives 16x, a linear one 4x, and the machine running the tests may be busy. Each
shape costs a few tens of milliseconds; absolute speed is benchmarks/bench_redact.py's business.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from mast.redact import Redactor
from mast.redact.gitleaks import load_data

DATA = Path(__file__).parent / "data" / "redact"
SMALL = 25_000
"""Above the sizes where the text still fits the processor's fastest caches (a step, not a trend)."""
LARGE = 4 * SMALL
LIMIT = 8.0
FLOOR = 0.02
"""Seconds under which the large text is fast whatever the ratio (timer noise on small times)."""


def _shapes() -> dict[str, str]:
    shapes: dict[str, str] = dict(yaml.safe_load((DATA / "adversarial.yaml").read_text())["units"])
    for name, case in yaml.safe_load((DATA / "rule_cases.yaml").read_text())["rules"].items():
        secret = case["secret"]
        # its examples, its secret run together, and its secret's prefix run together
        shapes[f"rule {name}"] = case["positive"] + " " + secret * 3 + " " + secret[: max(3, len(secret) // 3)] * 8 + " "
    mast = yaml.safe_load((DATA / "cases.yaml").read_text())["credentials"].values()
    shapes["mast's credential shapes run together"] = "".join(case["positive"].split()[2] for case in mast)
    gitleaks = json.loads((DATA / "gitleaks_cases.json").read_text())["cases"]
    shapes["gitleaks: every positive"] = "\n".join(case["positive"] for case in gitleaks.values()) + "\n"
    shapes["gitleaks: every secret run together"] = "".join(case["secret"] for case in gitleaks.values())
    keywords = sorted({k for rule in load_data()["rules"] for k in rule["keywords"]})
    shapes["gitleaks: every keyword as an assignment"] = " ".join(f"{k}_key = " for k in keywords) + " "
    return shapes


SHAPES = _shapes()


def _fastest_seconds(redactor: Redactor, unit: str, size: int) -> float:
    text = (unit * (size // len(unit) + 1))[:size]
    times = []
    for _ in range(2):
        # CPU time of this process: other work on a busy machine disturbs it far less than wall time
        start = time.process_time()
        redactor.redact(text)
        times.append(time.process_time() - start)
    return min(times)  # the least disturbed by other work on the machine


@pytest.fixture(scope="module")
def redactor() -> Redactor:
    return Redactor(ips=True)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_four_times_the_text_takes_about_four_times_as_long(name: str, redactor: Redactor) -> None:
    unit = SHAPES[name]
    redactor.redact(unit * 4)  # warm caches (phone-number metadata, compiled patterns)
    for _ in range(4):
        large = _fastest_seconds(redactor, unit, LARGE)
        if large < FLOOR:
            return  # fast, whatever the ratio
        small = _fastest_seconds(redactor, unit, SMALL)
        if large < LIMIT * small:
            return
    pytest.fail(f"{name!r}: {SMALL} characters {small * 1e3:.1f} ms, {LARGE} {large * 1e3:.1f} ms (x{large / small:.1f})")


def test_the_adversarial_runs_cover_the_shapes_of_the_issue() -> None:
    units = set(SHAPES.values())
    for shape in ("4111 ", "DE89 ", "123-45-", "eyJ", "sk-", "password=", "a@", "-----BEGIN PRIVATE KEY-----"):
        assert shape in units
