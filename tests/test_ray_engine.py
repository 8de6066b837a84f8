"""``--engine ray``: same verdicts as the local engine, resume, a killed worker, a Router across deployments.

One local Ray session serves the whole test run (session fixture): 2 CPUs, no dashboard, its temp
files under the test run's tmp folder, shut down at the end.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from test_batch_inputs import chat_jsonl

from mast.diagnosis import Diagnosis
from mast.engines import label  # mast.label: the engine is chosen by name
from mast.judge.config import JudgeConfig
from mast.results import iter_results
from mast.testing import FakeLLMServer, Reply

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.timeout(1200)  # Ray starts processes and actors: minutes on a busy 2-core machine

MODEL = "openai/gpt-4o-mini"


@pytest.fixture(scope="session")
def ray_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    from mast.integrations import ray as mast_ray

    temp = tmp_path_factory.mktemp("ray")
    saved = {name: os.environ.get(name) for name in ("RAY_TMPDIR", "RAY_AUTH_MODE")}
    os.environ["RAY_TMPDIR"] = str(temp)
    os.environ["RAY_AUTH_MODE"] = "disabled"  # a session on 127.0.0.1 for this test run only
    mast_ray.init(num_cpus=2, temp_dir=str(temp))
    try:
        yield
    finally:
        mast_ray.shutdown()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "runs"
    folder.mkdir()
    chat_jsonl(folder / "a.jsonl", 4, tag="a")
    chat_jsonl(folder / "b.jsonl", 3, tag="b")
    (folder / "broken.json").write_text("{ not json")
    return folder


def config(server: FakeLLMServer) -> JudgeConfig:
    return JudgeConfig.from_options(model=MODEL, api_base=server.base_url, api_key="test", cache=False, max_retries=0)


def verdicts(path: Path) -> set[tuple[Any, ...]]:
    return {(d.trace_id, d.source.path, d.source.record, d.status, tuple(v.present for v in d.failure_modes))
            for d in iter_results(path)}


def test_ray_and_local_engines_give_the_same_verdicts_and_ray_resumes(
    ray_session: None, corpus: Path, tmp_path: Path
) -> None:
    with FakeLLMServer() as server:
        local = label([corpus], tmp_path / "local.jsonl", config=config(server), concurrency=4)
        server.reset()
        on_ray = label([corpus], tmp_path / "ray.jsonl", config=config(server), concurrency=4, engine="ray",
                       engine_options={"actors": 2})
        assert len(server.chat_requests) == 7
        server.reset()
        again = label([corpus], tmp_path / "ray.jsonl", config=config(server), concurrency=4, engine="ray",
                      engine_options={"actors": 2})
        assert server.chat_requests == []  # every finished key skipped
    assert verdicts(tmp_path / "local.jsonl") == verdicts(tmp_path / "ray.jsonl")
    assert len(verdicts(tmp_path / "ray.jsonl")) == 7
    for report in (local, on_ray):
        assert report.statuses["judged"] == 7 and len(report.file_errors) == 1 and report.total == 7
    assert on_ray.mode_counts == local.mode_counts and on_ray.llm_calls == 7
    assert again.resumed == 7 and again.statuses["judged"] == 7


def test_ray_counts_the_detectors_hints_as_the_local_engine_does(ray_session: None, tmp_path: Path) -> None:
    examples = Path(__file__).parents[1] / "data" / "examples"
    detectors = JudgeConfig.from_options(judge="detectors")
    local = label([examples], tmp_path / "local.jsonl", config=detectors)
    on_ray = label([examples], tmp_path / "ray.jsonl", config=detectors, engine="ray", engine_options={"actors": 2})
    again = label([examples], tmp_path / "ray.jsonl", config=detectors, engine="ray", engine_options={"actors": 2})
    assert local.mode_hinted  # the examples hold signs of modes the detectors leave to a model judge
    assert on_ray.mode_hinted == local.mode_hinted and on_ray.mode_counts == local.mode_counts
    assert again.resumed == again.total and again.mode_hinted == local.mode_hinted


def _judge_actor_pids() -> list[int]:
    """This test run's judge actors: descendants of this process (the local Ray's raylet starts them).

    Only descendants: another Ray on the same machine (a benchmark, a second test run) has actors
    of the same name, and killing one of those would leave this run's actors untouched.
    """
    pids = []
    for proc in psutil.Process().children(recursive=True):
        try:
            if "TraceJudge" in " ".join(proc.cmdline()):
                pids.append(proc.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return pids


def test_a_killed_worker_is_retried_and_nothing_is_lost_or_written_twice(
    ray_session: None, tmp_path: Path
) -> None:
    n = 24
    path = chat_jsonl(tmp_path / "runs.jsonl", n)
    out = tmp_path / "results.jsonl"
    killed: list[int] = []
    first_result = threading.Event()

    def on_progress(report: Any, item: Any, outcome: str, diagnosis: Diagnosis | None) -> None:
        if not first_result.is_set():
            first_result.set()
            pids = _judge_actor_pids()
            assert pids, "the judge actors run in processes named after TraceJudge"
            # At Ray's default nice 15 a busy machine starves the actors; a local Ray runs them at 0.
            assert all(psutil.Process(pid).nice() == 0 for pid in pids)
            os.kill(pids[0], signal.SIGKILL)  # mid-run: its batch in flight dies with it
            killed.append(pids[0])

    with FakeLLMServer(latency=0.2) as server:
        report = label([path], out, config=config(server), concurrency=4, engine="ray",
                       engine_options={"actors": 2}, on_progress=on_progress)
    assert killed
    written = list(iter_results(out))
    keys = [(d.trace_id, d.source.record) for d in written]
    assert len(keys) == len(set(keys)) == n  # nothing lost, nothing twice
    assert all(d.status == "judged" for d in written)
    assert report.statuses["judged"] == n


def test_router_shifts_traffic_away_from_a_deployment_that_answers_429(tmp_path: Path) -> None:
    n = 10
    path = chat_jsonl(tmp_path / "runs.jsonl", n)
    out = tmp_path / "results.jsonl"
    # No Retry-After header: litellm's Router cools a deployment down for as long as its Retry-After
    # says, so a "Retry-After: 0" never cooled it and every trace left to the shuffle had a 1/128
    # chance of spending all 7 attempts on the failing deployment (1 run in 6 failed under load).
    limited = FakeLLMServer(lambda body: Reply(status=429, body={"error": {"message": "rate limited"}}))
    healthy = FakeLLMServer()
    with limited, healthy:
        router = tmp_path / "router.yaml"
        router.write_text(
            "model_list:\n"
            # weight 99 to 1: the shuffle all but surely sends the first calls to the failing deployment
            # (with equal weights, 1 run in 1,024 never tried it).
            f"  - model_name: judge\n    litellm_params: {{model: {MODEL}, api_base: '{limited.base_url}', api_key: a, weight: 99}}\n"
            f"  - model_name: judge\n    litellm_params: {{model: {MODEL}, api_base: '{healthy.base_url}', api_key: b, weight: 1}}\n"
            # allowed_fails 0: the first 429 cools the deployment down, for the rest of the run.
            "router_settings:\n  routing_strategy: simple-shuffle\n  num_retries: 6\n  allowed_fails: 0\n"
            "  cooldown_time: 600\n"
        )
        report = label([path], out, model="judge", cache=False, max_retries=0, router=router, concurrency=2)
        # It was tried, and only by the (at most two) calls already in flight when its first 429 came
        # back: the Router records the cooldown before it picks a deployment for the retry.
        assert 1 <= len(limited.chat_requests) <= 2
        answered = sum(d.usage.llm_calls for d in iter_results(out))
        assert len(healthy.chat_requests) == answered == n  # every answer came from the healthy one
    assert report.statuses["judged"] == n
    assert all(d.status == "judged" for d in iter_results(out))
