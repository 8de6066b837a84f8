"""Types and style are part of the test suite, so the README's test command (which CI runs) enforces them.

``ruff check`` over ``mast/``, ``mast_judge/``, ``tests/`` and ``benchmarks/``, ``ruff format --check``
over the first three, and ``mypy --strict`` over ``mast`` and ``mast_judge`` (settings in
``pyproject.toml``). The files not yet formatted are listed in ``[tool.ruff.format] exclude``; that list
may only shrink.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], capture_output=True, text=True, cwd=ROOT, timeout=900
    )


def test_ruff_check_is_clean() -> None:
    done = _run("ruff", "check", "--no-cache", "mast", "mast_judge", "tests", "benchmarks")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_check_is_clean() -> None:
    done = _run("ruff", "format", "--check", "--no-cache", "mast", "mast_judge", "tests")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_not_yet_formatted_list_only_shrinks() -> None:
    pending = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["format"]["exclude"]
    assert pending == sorted(pending), "keep [tool.ruff.format] exclude sorted"
    gone = [p for p in pending if not (ROOT / p).is_file()]
    assert gone == [], f"listed in [tool.ruff.format] exclude but no longer there (drop them): {gone}"
    # Named one by one, ruff checks a file even when excluded: each listed file must still need formatting.
    done = _run("ruff", "format", "--check", "--no-cache", "--output-format", "concise", *pending)
    unformatted = {line.split(":", 1)[0] for line in done.stdout.splitlines() if "unformatted" in line}
    formatted = sorted(set(pending) - unformatted)
    assert formatted == [], (
        f"already formatted: drop them from [tool.ruff.format] exclude in pyproject.toml: {formatted}"
    )


@pytest.mark.slow  # a cold mypy run over the package takes minutes on two CPUs
def test_mypy_strict_is_clean() -> None:
    # its cache: .mypy_cache in the checkout (ignored by git)
    done = _run("mypy", "--strict", "mast", "mast_judge")
    assert done.returncode == 0, done.stdout + done.stderr
