"""Start and stop the real servers the tests talk to (Phoenix, MLflow): one copy of the wait and the stop."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import httpx


def wait_until_healthy(proc: subprocess.Popen[bytes], health_url: str, log: Path, name: str, timeout_s: float) -> None:
    """Return once ``health_url`` answers 200; raise with the server's log when it exits or never answers."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            if httpx.get(health_url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{name} did not answer within {timeout_s}s")
        time.sleep(0.25)  # polling a process we started for readiness, not synchronising a test


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server started with ``start_new_session=True`` by its process group (SIGTERM, then SIGKILL)."""
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
