"""A user's agent, instrumented with MLflow tracing, for tests/test_mlflow.py (run in its own process).

Reads one JSON request on stdin and prints one JSON answer:

* ``{"log": [runs], "experiment": NAME, "tags": {...}, "otlp": PATH|null, "started_s_ago": S|null}``: run each of our small
  multi-agent runs (``tests/data/phoenix/runs.json``) as ``@mlflow.trace`` spans (AGENT per turn,
  CHAT_MODEL with the messages, TOOL per tool call) -> ``{"trace_ids": [...]}``; with ``otlp``, also
  write the OTLP/JSON export of the same spans (MLflow's ``Span.to_otel_proto``) to that path; with
  ``started_s_ago``, each run is one long run that started that long ago and ends now;
* ``{"read": [trace ids]}`` -> ``{trace_id: [assessment dicts]}`` as MLflow's client reads them.
"""

from __future__ import annotations

import json
import sys
import warnings

warnings.simplefilter("ignore")

import mlflow  # noqa: E402


def _run(run: dict, tags: dict) -> str:
    @mlflow.trace(name=run["name"], span_type="AGENT")
    def crew(task: str) -> str:
        if tags:
            mlflow.update_current_trace(tags=tags)
        for turn in run["turns"]:
            member(turn)
        return run["final"]

    def member(turn: dict) -> str:
        @mlflow.trace(name=turn["agent"], span_type="AGENT")
        def act(request: str) -> str:
            chat([{"role": "system", "content": f"You are the {turn['agent']}."},
                  {"role": "user", "content": request}], turn["output"])
            for tool in turn.get("tools", ()):
                call_tool(tool)
            return turn["output"]

        return act(turn["input"])

    @mlflow.trace(name="llm", span_type="CHAT_MODEL")
    def chat(messages: list, reply: str) -> dict:
        return {"model": "gpt-4o-mini", "choices": [{"message": {"role": "assistant", "content": reply}}],
                "usage": {"prompt_tokens": 40, "completion_tokens": 20}}

    def call_tool(tool: dict) -> str:
        with mlflow.start_span(name=tool["name"], span_type="TOOL") as span:
            span.set_inputs(json.loads(tool["input"]))
            span.set_outputs(tool["output"])
        return tool["output"]

    crew(run["task"])
    trace_id = mlflow.get_last_active_trace_id()
    assert trace_id
    return trace_id


def _long_run(run: dict, started_s_ago: float) -> str:
    """A run that started ``started_s_ago`` seconds ago and ends now (a long run, logged when it ends)."""
    import time

    start = time.time_ns() - int(started_s_ago * 1e9)
    root = mlflow.start_span_no_context(run["name"], span_type="AGENT", inputs={"task": run["task"]}, start_time_ns=start)
    for number, turn in enumerate(run["turns"]):
        llm = mlflow.start_span_no_context("llm", span_type="CHAT_MODEL", parent_span=root,
                                           inputs={"messages": [{"role": "user", "content": turn["input"]}]},
                                           start_time_ns=start + (number + 1) * 10**9)
        llm.set_outputs({"choices": [{"message": {"role": "assistant", "content": turn["output"]}}]})
        llm.end(end_time_ns=start + (number + 2) * 10**9)
    root.set_outputs(run["final"])
    root.end()
    return root.trace_id


def _otlp(trace_ids: list, path: str) -> None:
    from google.protobuf.json_format import MessageToJson
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    scope = request.resource_spans.add().scope_spans.add()
    for trace_id in trace_ids:
        for span in mlflow.get_trace(trace_id).data.spans:
            scope.spans.append(span.to_otel_proto())
    with open(path, "w") as fh:
        fh.write(MessageToJson(request))


def main() -> None:
    request = json.loads(sys.stdin.read())
    if "log" in request:
        mlflow.set_experiment(request["experiment"])
        ago = request.get("started_s_ago")
        ids = [_long_run(run, ago) if ago else _run(run, request.get("tags") or {}) for run in request["log"]]
        mlflow.flush_trace_async_logging()
        if request.get("otlp"):
            _otlp(ids, request["otlp"])
        print(json.dumps({"trace_ids": ids}))
    elif "read" in request:
        out = {}
        for trace_id in request["read"]:
            info = mlflow.get_trace(trace_id).info
            out[trace_id] = [a.to_dictionary() for a in info.assessments]
        print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
