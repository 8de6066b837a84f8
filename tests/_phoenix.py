"""A real Phoenix server for the tests, and a multi-agent run sent to it as OpenTelemetry spans.

One server per test run (a session fixture in ``test_phoenix.py``): ``phoenix serve`` on free ports,
its SQLite database in the run's tmp dir, telemetry off, stopped by PID. The spans are the ones an
OpenInference-instrumented app would send: AGENT, LLM and TOOL spans with OpenInference attributes,
exported by opentelemetry-sdk's OTLP/HTTP exporter.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from _servers import stop_group, wait_until_healthy

STARTUP_TIMEOUT_S = 180.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PhoenixServer:
    base_url: str
    pid: int
    log: Path

    def url(self, project: str) -> str:
        host = self.base_url.removeprefix("http://")
        return f"phoenix://{host}/{project}"


@contextmanager
def phoenix_server(workdir: Path) -> Iterator[PhoenixServer]:
    """Start ``phoenix serve``; wait (bounded) until it answers; stop it by PID at the end."""
    port, grpc_port = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(workdir),
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    log = workdir / "phoenix.log"
    exe = Path(sys.executable).with_name("phoenix")
    with log.open("wb") as out:
        proc = subprocess.Popen([str(exe), "serve"], env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(proc, f"{base}/healthz", log, "phoenix serve", STARTUP_TIMEOUT_S)
        yield PhoenixServer(base_url=base, pid=proc.pid, log=log)
    finally:
        stop_group(proc)


# --- a multi-agent run as OpenInference spans -------------------------------------------------------


def load_runs() -> list[dict[str, Any]]:
    """Our own small multi-agent runs (tests/data/phoenix/runs.json)."""
    return list(json.loads((Path(__file__).parent / "data" / "phoenix" / "runs.json").read_text()))


def span_count(run: dict[str, Any]) -> int:
    """How many spans :func:`send_run` sends for ``run``."""
    return 1 + sum(2 + len(turn.get("tools", ())) for turn in run["turns"])


def send_run(exporter: Any, run: dict[str, Any], *, project: str, offset: int = 0) -> str:
    """Export ``run`` (our own small JSON description) as one trace; returns its hex trace id.

    ``exporter`` is any SpanExporter (OTLP/HTTP to Phoenix, or an in-memory one for the file export).
    """
    from openinference.semconv.resource import ResourceAttributes
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    provider = TracerProvider(resource=Resource.create({ResourceAttributes.PROJECT_NAME: project}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("mast-tests")
    clock = [1_700_000_000_000_000_000 + offset * 10**12]

    def tick() -> int:
        clock[0] += 1_000_000_000
        return clock[0]

    with tracer.start_as_current_span(run["name"], start_time=tick(), end_on_exit=False) as root:
        root.set_attributes({"openinference.span.kind": "CHAIN", "input.value": run["task"],
                             "input.mime_type": "text/plain"})
        for turn in run["turns"]:
            _send_turn(tracer, turn, tick)
        root.set_attribute("output.value", run["final"])
        trace_id = format(root.get_span_context().trace_id, "032x")
        root.end(end_time=tick())
    # SimpleSpanProcessor sent every span as it ended; no shutdown, so one exporter serves many runs.
    provider.force_flush()
    return trace_id


def _send_turn(tracer: Any, turn: dict[str, Any], tick: Any) -> None:
    agent = turn["agent"]
    with tracer.start_as_current_span(agent, start_time=tick(), end_on_exit=False) as span:
        span.set_attributes({"openinference.span.kind": "AGENT", "agent.name": agent,
                             "input.value": turn["input"]})
        with tracer.start_as_current_span("llm", start_time=tick(), end_on_exit=False) as llm:
            attrs: dict[str, Any] = {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4o-mini",
                "llm.input_messages.0.message.role": "system",
                "llm.input_messages.0.message.content": f"You are the {agent}.",
                "llm.input_messages.1.message.role": "user",
                "llm.input_messages.1.message.content": turn["input"],
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": turn["output"],
                "llm.token_count.prompt": 40,
                "llm.token_count.completion": 20,
            }
            llm.set_attributes(attrs)
            llm.end(end_time=tick())
        for tool in turn.get("tools", ()):
            with tracer.start_as_current_span(tool["name"], start_time=tick(), end_on_exit=False) as t:
                t.set_attributes({"openinference.span.kind": "TOOL", "tool.name": tool["name"],
                                  "input.value": tool["input"], "output.value": tool["output"]})
                t.end(end_time=tick())
        span.set_attribute("output.value", turn["output"])
        span.end(end_time=tick())


def otlp_exporter(server: PhoenixServer) -> Any:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=f"{server.base_url}/v1/traces")


def wait_for_spans(server: PhoenixServer, project: str, trace_ids: Sequence[str], spans: int,
                   timeout: float = 60) -> None:
    """Bounded wait until Phoenix has ingested ``spans`` spans of ``trace_ids`` (ingestion is async)."""
    deadline = time.monotonic() + timeout
    while True:
        if _ingested(server, project, trace_ids) >= spans:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"Phoenix did not ingest {spans} spans of {len(trace_ids)} traces within {timeout}s")
        time.sleep(0.2)  # polling the server's ingestion queue, bounded above


def _ingested(server: PhoenixServer, project: str, trace_ids: Sequence[str]) -> int:
    """Spans stored for ``trace_ids``, 20 traces per request (each well under a page); -1 if the server is busy."""
    total = 0
    for start in range(0, len(trace_ids), 20):
        try:
            response = httpx.get(f"{server.base_url}/v1/projects/{project}/spans", timeout=30,
                                 params={"trace_id": list(trace_ids[start : start + 20]), "limit": 1000})
        except httpx.HTTPError:
            return -1
        if response.status_code != 200:
            return -1
        total += len(response.json()["data"])
    return total
