"""A real MLflow tracking server for the tests, and agent runs logged to it by MLflow's own tracing API.

One server per test run (a session fixture in ``test_mlflow.py``): ``mlflow server`` on a free port,
a SQLite store in the run's tmp dir, job execution off, one worker, stopped by PID (its process
group). The runs are ``tests/data/phoenix/runs.json`` (our own small multi-agent runs), logged by
``tests/_mlflow_agent.py`` in a separate process, as a user's agent would log them: ``@mlflow.trace``
spans of type AGENT, CHAT_MODEL and TOOL. The same script reads feedback back with MLflow's client.
MLflow itself is imported only in those processes (it is the ``test`` extra; mast talks REST).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _phoenix import free_port
from _servers import stop_group, wait_until_healthy

STARTUP_TIMEOUT_S = 180.0
AGENT = Path(__file__).with_name("_mlflow_agent.py")


@dataclass
class MLflowServer:
    base_url: str
    pid: int
    log: Path

    def url(self, experiment: str) -> str:
        return f"mlflow://{self.base_url.removeprefix('http://')}/{experiment}"


@contextmanager
def mlflow_server(workdir: Path) -> Iterator[MLflowServer]:
    """Start ``mlflow server``; wait (bounded) until it answers; stop it by PID at the end."""
    port = free_port()
    env = {**os.environ, "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}
    log = workdir / "mlflow.log"
    exe = Path(sys.executable).with_name("mlflow")
    command = [str(exe), "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
               "--backend-store-uri", f"sqlite:///{workdir / 'mlflow.db'}",
               "--default-artifact-root", str(workdir / "artifacts")]
    with log.open("wb") as out:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                cwd=workdir)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(proc, f"{base}/health", log, "mlflow server", STARTUP_TIMEOUT_S)
        yield MLflowServer(base_url=base, pid=proc.pid, log=log)
    finally:
        stop_group(proc)


def agent(server: MLflowServer, request: dict[str, Any]) -> Any:
    """Run ``tests/_mlflow_agent.py`` with one JSON request; its JSON answer."""
    env = {**os.environ, "MLFLOW_TRACKING_URI": server.base_url, "MLFLOW_ENABLE_ASYNC_TRACE_LOGGING": "false"}
    done = subprocess.run([sys.executable, str(AGENT)], input=json.dumps(request), env=env, capture_output=True,
                          text=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"_mlflow_agent.py failed: {done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def log_runs(server: MLflowServer, experiment: str, runs: Sequence[dict[str, Any]], *,
             tags: dict[str, str] | None = None, otlp: Path | None = None,
             started_s_ago: float | None = None) -> list[str]:
    """Log ``runs`` as MLflow traces of ``experiment``; their trace ids (``tr-...``), in order.

    ``otlp``: also write the OTLP/JSON export of the same spans (MLflow's own ``to_otel_proto``) there.
    ``started_s_ago``: each run is a long one that started that long ago and ends now.
    """
    answer = agent(server, {"log": list(runs), "experiment": experiment, "tags": tags or {},
                            "otlp": str(otlp) if otlp else None, "started_s_ago": started_s_ago})
    return list(answer["trace_ids"])


def feedback(server: MLflowServer, trace_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Every assessment on each trace, as MLflow's client reads it (``trace.info.assessments``)."""
    return dict(agent(server, {"read": list(trace_ids)}))
