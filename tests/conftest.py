"""Fixtures every test gets: no API keys, caches in tmp, and the path to ../shared."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test may reach a provider, reuse a user's cache, or inherit a user's MAST_* settings."""
    for name in list(os.environ):
        if name.endswith("_API_KEY") or name.startswith("MAST_") or name in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path_factory.mktemp("mast-cache")))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(scope="session")
def shared() -> Path:
    """The ../shared folder beside the checkout; fail loudly when it is missing."""
    if not (SHARED / "traces").is_dir():
        pytest.fail(f"../shared is missing (looked at {SHARED}); the tests need the shared sample data")
    return SHARED
