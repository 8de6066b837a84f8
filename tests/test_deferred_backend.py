"""litellm is imported only when a call is needed (issue 33, point 11).

A cached ``mast classify --model ...`` asks the model nothing, so it should not pay the ~4 s import
of litellm: the context window that is part of the cache key is remembered in the answer cache
(mast.judge.deferred). Each run is a fresh interpreter, as a user's is; the seconds it saves are
benchmarks/bench_startup.py's to measure, not a test's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mast.judge.cache import JudgeCache
from mast.judge.config import JudgeConfig
from mast.judge.deferred import DeferredBackend, model_facts_key
from mast.testing import FakeLLMServer

REPO = Path(__file__).resolve().parent.parent
TRACE = REPO / "data" / "examples" / "ag2-exchange-loop.json"
PROBE = """
import json, sys
from click.testing import CliRunner
from mast.cli import main
done = CliRunner().invoke(main, ["classify", sys.argv[1], "--json", "--model", "openai/fake-judge",
                                 "--api-base", sys.argv[2], "--api-key", "x"])
diagnosis = json.loads(done.output.strip().splitlines()[-1])
print(json.dumps({"exit": done.exit_code, "cached": diagnosis["usage"]["cached"],
                  "status": diagnosis["status"], "litellm": "litellm" in sys.modules}))
"""


def _classify(server: FakeLLMServer, cache: Path) -> dict[str, object]:
    env = {**os.environ, "MAST_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", PROBE, str(TRACE), server.base_url], capture_output=True,
                          text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.spawns
def test_a_cached_classify_never_imports_litellm(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        first = _classify(server, tmp_path / "cache")
        second = _classify(server, tmp_path / "cache")
        calls = len(server.chat_requests)
    assert first == {"exit": 0, "cached": False, "status": "judged", "litellm": True}
    assert second == {"exit": 0, "cached": True, "status": "judged", "litellm": False}
    assert calls == 1


def test_the_remembered_context_window_is_litellms_and_is_kept_per_model_and_endpoint(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    config = JudgeConfig(model="openai/gpt-4o-mini", api_key="x", cache_dir=tmp_path)
    first = DeferredBackend(config, cache)
    window = first.context_window()
    assert first.loaded and isinstance(window, int) and window > 100_000   # litellm's table for the model
    assert cache.get_fact(model_facts_key("openai/gpt-4o-mini", None)) == {"context_window": window}
    assert cache.info().entries == 0                                        # a fact is not a judgement
    again = DeferredBackend(config, cache)
    assert again.context_window() == window and not again.loaded            # read back, nothing built
    elsewhere = DeferredBackend(config.model_copy(update={"api_base": "http://127.0.0.1:9/v1"}), cache)
    assert cache.get_fact(model_facts_key("openai/gpt-4o-mini", "http://127.0.0.1:9/v1")) is None
    elsewhere.context_window()
    assert elsewhere.loaded                                                 # another endpoint asks litellm


def test_a_configured_window_and_grammar_servers_need_no_litellm(tmp_path: Path) -> None:
    config = JudgeConfig(model="openai/qwen", api_base="http://127.0.0.1:9/v1", api_key="x", context_window=8192)
    backend = DeferredBackend(config, JudgeCache(tmp_path))
    assert backend.context_window() == 8192 and backend.constrained and not backend.loaded


@pytest.mark.parametrize("name", ["prices", "provider", "request_kwargs"])
def test_every_other_fact_comes_from_the_litellm_backend(tmp_path: Path, name: str) -> None:
    from mast.judge.backend import LiteLLMBackend

    backend = DeferredBackend(JudgeConfig(model="openai/gpt-4o-mini", api_key="x"), None)
    assert getattr(backend, name).__func__ is getattr(LiteLLMBackend, name)
    assert backend.loaded
