"""Reading from and writing feedback back to a real MLflow tracking server (issue 26).

    .venv/bin/python benchmarks/bench_mlflow.py --traces 200

Starts ``mlflow server`` (SQLite in a tmp dir, job execution off, one worker; stopped at the end),
logs N copies of our four test runs with MLflow's tracing API (``tests/_mlflow_agent.py``, in its
own process, as a user's agent), then times:

1. server start-up (until ``/health`` answers);
2. listing the N traces and reading + normalising every one (``MLflowSource.roots`` / ``read``);
3. writing the offline detectors' verdicts back as feedback (``FeedbackWriter``), then again (every
   entry already right: one read per trace, nothing written);
4. ``mast.label(url, sinks=["mlflow"], judge="detectors")`` end to end, into a fresh results file.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _mlflow import log_runs, mlflow_server  # noqa: E402
from _phoenix import load_runs, span_count  # noqa: E402

import mast  # noqa: E402
from mast.integrations.mlflow import FeedbackWriter, read_feedback  # noqa: E402
from mast.sources import TraceQuery, open_source, step_spans  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=200)
    args = parser.parse_args()
    runs = load_runs()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        with mlflow_server(Path(tmp)) as server:
            print(f"server start-up: {time.perf_counter() - started:.1f} s")
            chosen = [runs[i % len(runs)] for i in range(args.traces)]
            t = time.perf_counter()
            ids = log_runs(server, "bench", chosen)
            print(f"log {len(ids)} traces with MLflow's tracing API (one process, sync export): "
                  f"{time.perf_counter() - t:.1f} s")
            url = server.url("bench")
            spans = sum(span_count(r) for r in chosen)
            source = open_source(url)
            t0 = time.perf_counter()
            roots = list(source.roots(TraceQuery()))
            t1 = time.perf_counter()
            traces = source.read([r.trace_id for r in roots])
            t2 = time.perf_counter()
            source.close()
            print(f"list {len(roots)} traces: {t1 - t0:.2f} s; read + normalise {len(traces)} traces "
                  f"({spans} spans): {t2 - t1:.2f} s = {len(traces) / (t2 - t1):.0f} traces/s")
            diagnoses = mast.classify_many(list(traces.values()), judge="detectors")
            maps = {t: step_spans(x) for t, x in traces.items()}
            for label, batch in (("write", diagnoses), ("again (unchanged)", diagnoses)):
                writer = FeedbackWriter(url)
                t3 = time.perf_counter()
                for diagnosis in batch:
                    writer.write(diagnosis, maps[diagnosis.trace_id])
                t4 = time.perf_counter()
                r = writer.report
                writer.close()
                print(f"{label}: {r.created} created, {r.updated} updated, {r.unchanged} unchanged, "
                      f"{r.deleted} removed for {r.traces} traces: {t4 - t3:.2f} s = {r.traces / (t4 - t3):.0f} traces/s")
            stored = sum(len(read_feedback(url, t)) for t in ids)
            print(f"mast feedback stored after both: {stored}")
            t5 = time.perf_counter()
            report = mast.label(url, output=Path(tmp) / "results.jsonl", sinks=["mlflow"], judge="detectors")
            t6 = time.perf_counter()
            print(f"mast.label(url, sinks=['mlflow'], judge='detectors') on {report.total} traces: {t6 - t5:.2f} s")


if __name__ == "__main__":
    main()
