"""Inspect AI: its eval logs read as traces, and mast_scorer scoring a real ``inspect eval`` run.

The logs are written here by the real ``inspect eval`` command (tasks in ``tests/_inspect_tasks.py``,
every model turn from Inspect's ``mockllm`` model, so nothing leaves the machine). Inspect's mock
model counts tokens with tiktoken's ``o200k_base``, which tiktoken would download; litellm ships
that file, and ``TIKTOKEN_CACHE_DIR`` pointed at it keeps the run offline.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from _data import REAL

import mast
from mast.normalize.file_formats.inspect_log import ZIP_ZSTANDARD
from mast.testing import FakeLLMServer, Reply, judge_answer, request_text

ROOT = Path(__file__).resolve().parent.parent
TASKS = ROOT / "tests" / "_inspect_tasks.py"
INSPECT = Path(sys.executable).parent / "inspect"


def _tiktoken_dir() -> str:
    spec = importlib.util.find_spec("litellm")
    assert spec is not None and spec.submodule_search_locations
    return str(Path(spec.submodule_search_locations[0]) / "litellm_core_utils" / "tokenizers")


def inspect_env(home: Path, **extra: str) -> dict[str, str]:
    """The environment of an offline ``inspect`` command: its own home and data folders, mast from this tree."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INSPECT_", "MAST_")) and not k.endswith("_API_KEY")}
    env.update(
        TIKTOKEN_CACHE_DIR=_tiktoken_dir(), HOME=str(home), XDG_DATA_HOME=str(home / "data"),
        XDG_CACHE_HOME=str(home / "cache"), XDG_CONFIG_HOME=str(home / "config"), PYTHONPATH=str(ROOT),
        MAST_CACHE_DIR=str(home / "mast-cache"), INSPECT_DISPLAY="none", NO_COLOR="1",
    )
    env.update(extra)
    return env


def run_inspect(args: list[str], env: dict[str, str]) -> None:
    if importlib.util.find_spec("inspect_ai") is None:
        pytest.skip("inspect_ai is not installed (the test extra has it)")
    done = subprocess.run([str(INSPECT), *args], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One ``.eval`` log of the arithmetic task (2 samples x 2 epochs) and the same log as ``.json``."""
    home = tmp_path_factory.mktemp("inspect-home")
    out = tmp_path_factory.mktemp("inspect-logs")
    env = inspect_env(home)
    run_inspect(["eval", f"{TASKS}@arithmetic", "-T", "epochs=2", "--log-dir", str(out / "eval")], env)
    (eval_log,) = sorted((out / "eval").glob("*.eval"))
    run_inspect(["log", "convert", str(eval_log), "--to", "json", "--output-dir", str(out / "json")], env)
    (json_log,) = sorted((out / "json").rglob("*.json"))
    return {"eval": eval_log, "json": json_log}


@pytest.mark.slow  # a real `inspect eval` run
def test_eval_log_read_sample_by_sample(logs: dict[str, Path]) -> None:
    traces = mast.load_traces(logs["eval"])
    assert sorted((t.metadata["inspect"]["sample_id"], t.metadata["inspect"]["epoch"]) for t in traces) == [
        ("negative", 1), ("negative", 2), ("sum", 1), ("sum", 2)
    ]
    assert len({t.trace_id for t in traces}) == 4
    by_id = {(t.metadata["inspect"]["sample_id"], t.metadata["inspect"]["epoch"]): t for t in traces}
    good, bad = by_id[("sum", 1)], by_id[("negative", 2)]
    for trace in traces:
        assert trace.source.format == "inspect_log" and trace.framework == "inspect_ai"
        assert trace.metadata["inspect"]["task"] == "arithmetic"
        assert trace.metadata["inspect"]["model"] == "mockllm/model"
        assert [(s.kind, s.role) for s in trace.steps] == [
            ("message", "user"), ("message", "assistant"), ("tool_result", "tool"), ("message", "assistant")
        ]
        assert trace.steps[1].tool_calls[0].name == "add"
        assert trace.steps[2].tool_results[0].call_id == trace.steps[1].tool_calls[0].id
        # per-step model and usage come from the model event that wrote the message
        assert trace.steps[1].model == "mockllm/model" and trace.steps[1].usage is not None
        assert trace.steps[1].usage.input_tokens and trace.usage is not None and trace.usage.total_tokens
    assert good.task == "What is 2+2? Use the add tool."
    assert good.steps[1].tool_calls[0].arguments == {"x": 2, "y": 2}
    assert good.steps[2].tool_results[0].output == "4" and not good.steps[2].tool_results[0].is_error
    assert good.final_output == "2 + 2 = 4, so the answer is 4."
    assert good.metadata["inspect"]["scores"]["includes"]["value"] == "C" and good.status == "ok"
    assert good.metadata["inspect"]["target"] == "4"
    result = bad.steps[2].tool_results[0]
    assert result.is_error and "not negative" in result.output
    assert bad.metadata["inspect"]["scores"]["includes"]["value"] == "I" and bad.status == "error"
    transcript = bad.to_transcript().text
    assert "[S2] tool" in transcript and "not negative" in transcript and "I guess the answer is 3" in transcript
    assert "includes" not in transcript  # the scorer's verdict is outcome, never shown to the judge


@pytest.mark.slow  # a real `inspect eval` run
def test_json_log_reads_as_the_eval_log(logs: dict[str, Path]) -> None:
    zipped = {t.trace_id: t for t in mast.load_traces(logs["eval"])}
    flat = {t.trace_id: t for t in mast.load_traces(logs["json"])}
    assert set(zipped) == set(flat) and len(flat) == 4
    for trace_id, trace in flat.items():
        assert trace.source.variant == "json" and zipped[trace_id].source.variant == "eval"
        assert trace.content_hash() == zipped[trace_id].content_hash()
        assert trace.metadata["inspect"]["scores"] == zipped[trace_id].metadata["inspect"]["scores"]


@pytest.mark.slow  # a real `inspect eval` run
def test_eval_log_read_without_inspect_ai(logs: dict[str, Path]) -> None:
    """The zip (Zstandard members, as Inspect writes them) is read with inspect_ai and zipfile_zstd unimportable."""
    with zipfile.ZipFile(logs["eval"]) as zf:
        assert any(info.compress_type == ZIP_ZSTANDARD for info in zf.infolist())
    code = (
        "import sys; sys.modules['inspect_ai'] = None; sys.modules['zipfile_zstd'] = None\n"
        "import mast; ts = mast.load_traces(sys.argv[1])\n"
        "print(len(ts), sorted(t.metadata['inspect']['sample_id'] for t in ts))"
    )
    done = subprocess.run([sys.executable, "-c", code, str(logs["eval"])], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "4 ['negative', 'negative', 'sum', 'sum']"


@pytest.mark.slow  # a real `inspect eval` run
def test_mast_label_reads_eval_logs_in_a_folder(logs: dict[str, Path], tmp_path: Path) -> None:
    from click.testing import CliRunner

    from mast.cli import main

    out = tmp_path / "results.jsonl"
    result = CliRunner().invoke(main, ["label", str(logs["eval"].parent), "-o", str(out), "--judge", "detectors"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 4 and {r["status"] for r in rows} == {"judged"}
    assert {r["source"]["format"] for r in rows} == {"inspect_log"}


def test_broken_eval_zip_is_one_line_error(tmp_path: Path) -> None:
    bad = tmp_path / "cut.eval"
    bad.write_bytes(b"PK\x03\x04" + b"\x00" * 40)
    with pytest.raises(mast.TraceFormatError, match="not a readable .eval zip"):
        mast.load_traces(bad)


def _judge(body: dict[str, Any]) -> Reply:
    text = request_text(body)
    if "3*4" in text:
        return Reply(status=500, content="provider down")
    if "I guess the answer is 3" in text:
        return Reply(content=judge_answer(
            ["2.6", "3.2"], evidence={"2.6": [(3, "I guess the answer is 3")]},
            summary="The agent guessed an answer after its tool call failed.",
        ))
    return Reply(content=judge_answer([], summary="The agent used the tool and answered correctly."))


@pytest.mark.slow  # a real `inspect eval` run
def test_mast_scorer_in_a_real_inspect_run(tmp_path: Path) -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log

    with FakeLLMServer(_judge) as server:
        env = inspect_env(tmp_path / "home", OPENAI_API_KEY="fake-key")
        run_inspect(["eval", f"{TASKS}@judged", "-T", f"api_base={server.base_url}", "--log-dir", str(tmp_path / "logs")], env)
        assert len(server.chat_requests) >= 3
    (path,) = sorted((tmp_path / "logs").glob("*.eval"))
    log = read_eval_log(str(path))
    assert log.samples is not None
    scores = {str(s.id): s.scores["mast_scorer"] for s in log.samples if s.scores}
    assert set(scores) == {"sum", "negative", "product"}

    found = scores["negative"]
    assert isinstance(found.value, dict)
    assert found.value["2.6"] == 1 and found.value["3.2"] == 1 and found.value["1.1"] == 0
    assert found.value["modes_found"] == 2 and found.answer == "2.6,3.2"
    assert found.explanation is not None
    assert "guessed an answer" in found.explanation and '[S3] "I guess the answer is 3"' in found.explanation
    assert found.metadata is not None and found.metadata["mast"]["status"] == "judged"
    assert mast.Diagnosis.model_validate(found.metadata["mast"]).present_codes == ["2.6", "3.2"]

    clean = scores["sum"]
    assert isinstance(clean.value, dict) and clean.value["modes_found"] == 0 and clean.answer == "none"

    failed = scores["product"]  # the judge answered 500: unscored with the reason, never "no failure"
    assert isinstance(failed.value, float) and math.isnan(failed.value)
    assert failed.explanation is not None and "could not judge" in failed.explanation
    assert failed.metadata is not None and failed.metadata["mast"]["status"] == "error"
    assert failed.reason == "grader_failed" and failed.metadata["unscored_reason"] == "grader_failed"

    # the scorer's trace id is the one mast normalize gives the same sample in the log
    logged = {t.trace_id for t in mast.load_traces(path)}  # the log holds NaN (the unscored value): read too
    assert {(v.metadata or {})["mast"]["trace_id"] for v in scores.values()} == logged
    assert all(trace_id.startswith(f"{log.eval.eval_id}/") for trace_id in logged)

    assert log.results is not None
    (mast_result,) = [r for r in log.results.scores if r.name == "mast_scorer"]
    assert mast_result.unscored_samples == 1 and mast_result.scored_samples == 2
    assert mast_result.metrics["2.6"].value == 0.5 and mast_result.metrics["1.1"].value == 0.0
    assert "api_key" not in json.dumps(mast_result.params)


@pytest.mark.slow  # imports inspect_ai (seconds)
def test_mast_scorer_refuses_a_key_argument() -> None:
    pytest.importorskip("inspect_ai")
    from mast.integrations.inspect import mast_scorer

    with pytest.raises(mast.UsageError, match="writes scorer arguments into the log"):
        mast_scorer(model="openai/x", api_key="sk-secret")
    with pytest.raises(mast.UsageError, match="unknown judge option"):
        mast_scorer(model="openai/x", no_such_option=1)


@pytest.mark.slow  # imports inspect_ai (seconds)
def test_diagnosis_scores_and_the_mode_shares_metric() -> None:
    pytest.importorskip("inspect_ai")
    from inspect_ai.scorer import SampleScore

    from mast.diagnosis import ErrorInfo
    from mast.integrations.inspect import diagnosis_score, mode_shares

    trace = mast.load_trace([{"role": "user", "content": "fix the bug"}, {"role": "assistant", "content": "done"}])
    judged = mast.classify(trace, judge="detectors")
    assessed = [v.code for v in judged.failure_modes if v.present is not None]
    score = diagnosis_score(judged)
    assert isinstance(score.value, dict) and set(score.value) == {*assessed, "modes_found"}
    assert score.value["modes_found"] == len(judged.present_codes) and "Judge: detectors" in (score.explanation or "")
    failed = judged.model_copy(update={"status": "error", "error": ErrorInfo(type="JudgeAPIError", message="HTTP 500")})
    unscored = diagnosis_score(failed)
    assert isinstance(unscored.value, float) and math.isnan(unscored.value) and "HTTP 500" in (unscored.explanation or "")
    code = assessed[0]
    values = [{code: 1, "modes_found": 1}, {code: 0, "modes_found": 0}, {code: 1, "modes_found": 1}, {"modes_found": 0}]
    shares = mode_shares()([SampleScore(score=type(score)(value=v), sample_id=n) for n, v in enumerate(values)])
    assert shares == {code: 2 / 3}  # of the samples that assessed the mode; a sample that did not is left out


REAL_INSPECT = REAL / "inspect"


def test_real_logs_from_inspect_ai_itself() -> None:
    """Logs Inspect wrote with older versions (deflated zips, .json), kept by inspect_ai as test fixtures."""
    by_file = {path.name: mast.load_traces(path) for path in sorted(REAL_INSPECT.iterdir()) if path.suffix in (".eval", ".json")}
    assert len(by_file) == 5 and all(t.source.format == "inspect_log" for ts in by_file.values() for t in ts)

    (popularity,) = by_file["log_formats.eval"]
    assert popularity.metadata["inspect"]["task"] == "popularity"
    assert popularity.metadata["inspect"]["model"] == "ollama/llama3.1"
    assert [s.role for s in popularity.steps] == ["system", "user", "assistant"]
    assert popularity.final_output == "No" and popularity.status == "error"  # scored I by match
    (as_json,) = by_file["log_formats.json"]
    assert as_json.metadata["inspect"]["scores"]["match"]["value"] == "I" and as_json.steps[2].content == "No"

    (agent,) = by_file["log_message_deduplication.eval"]
    calls = [c for s in agent.steps for c in s.tool_calls]
    assert len(agent.steps) == 12 and [c.name for c in calls] == ["bash"] * 5
    assert calls[0].arguments == {"cmd": "ls"} and agent.task == "Guess the number"
    results = [r for s in agent.steps for r in s.tool_results]
    assert len(results) == 5 and all(r.call_id for r in results) and "bin" in results[0].output

    (image,) = by_file["log_images_tc.json"]
    assert image.steps[1].content == "What is this a picture of?\n[image]" and image.final_output == "[hedgehog]"
    assert image.usage is not None and image.usage.total_tokens == 328

    unscored = by_file["2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"]
    assert len(unscored) == 10 and len({t.trace_id for t in unscored}) == 10
    assert {t.status for t in unscored} == {"unknown"}  # written before scoring: no outcome is made up
    assert all(t.metadata["inspect"]["model"] == "openai/gpt-4o-mini" for t in unscored)


def _log(*samples: dict[str, Any]) -> dict[str, Any]:
    return {"version": 2, "status": "error", "eval": {"task": "t", "eval_id": "E1", "model": "openai/gpt-4o"},
            "plan": {"name": "plan", "steps": []}, "samples": list(samples)}


def test_attachments_errors_and_limits_of_a_json_log() -> None:
    """Fields real logs above do not hold in messages: attachment references, sample errors, limits."""
    big = {"id": 1, "epoch": 1, "input": "attachment://h1", "attachments": {"h1": "a long task text", "h2": "a long reply"},
           "messages": [{"role": "user", "content": "attachment://h1"},
                        {"role": "assistant", "content": [{"type": "reasoning", "reasoning": "think first"},
                                                          {"type": "text", "text": "attachment://h2"}]}],
           "error": {"message": "RuntimeError('sandbox died')", "traceback": "..."}}
    limited = {"id": 2, "epoch": 1, "input": [{"role": "user", "content": "go"}], "messages": [{"role": "user", "content": "go"}],
               "limit": {"type": "token", "limit": 1000}}
    crashed, stopped = mast.load_traces(_log(big, limited))
    assert crashed.task == "a long task text" and crashed.steps[0].content == "a long task text"
    assert crashed.steps[1].content == "<thinking>think first</thinking>\na long reply"
    assert crashed.final_output == "a long reply"
    assert crashed.status == "error" and crashed.error == "RuntimeError('sandbox died')"
    assert crashed.trace_id == "E1/1#1" and crashed.metadata["inspect"]["log_status"] == "error"
    assert stopped.status == "error" and stopped.error == "token limit reached (1000)" and stopped.task == "go"


def test_a_damaged_sample_member_loses_only_that_sample(tmp_path: Path) -> None:
    source = REAL_INSPECT / "2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"
    with zipfile.ZipFile(source) as zf:
        info = zf.getinfo("samples/3_epoch_1.json")
    data = bytearray(source.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for at in range(start + 10, start + min(info.compress_size, 200)):
        data[at] ^= 0x5A  # the member's deflated bytes scrambled: the zip's directory is intact
    damaged = tmp_path / "damaged.eval"
    damaged.write_bytes(bytes(data))
    items = list(mast.iter_traces(damaged))
    errors = [i for i in items if isinstance(i, mast.TraceFormatError)]
    assert len(items) == 10 and len(errors) == 1
    assert "samples/3_epoch_1.json" in str(errors[0]) and "\n" not in str(errors[0])
