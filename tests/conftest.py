"""Fixtures every test gets: no API keys, caches in tmp. Sample data paths are in ``tests/_data.py``."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

# Property tests must not fail because the machine is busy: no per-example deadline, and no health
# check on slow data generation (both measure the machine, not the code).
settings.register_profile("mast", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("mast")


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test may reach a provider, reuse a user's cache, or inherit a user's MAST_* settings."""
    for name in list(os.environ):
        if name == "MAST_UPDATE_GOLDEN":
            continue  # the test harness's own switch (rewrites golden files), not a mast setting
        if name.endswith("_API_KEY") or name.startswith("MAST_") or name in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MAST_CACHE_DIR", str(tmp_path_factory.mktemp("mast-cache")))
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the transport's exponential back-off tiny; a Retry-After header is still honoured as sent."""
    from mast.judge import backend

    monkeypatch.setattr(backend, "RETRY_INITIAL_WAIT", 0.01)
    monkeypatch.setattr(backend, "RETRY_MAX_WAIT", 0.05)
