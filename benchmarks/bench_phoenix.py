"""Reading from and writing back to a real Phoenix server (issue 17).

    .venv/bin/python benchmarks/bench_phoenix.py --traces 200

Starts ``phoenix serve`` (tmp dir, free ports, telemetry off; stopped at the end), sends N copies of
our four test runs as OpenInference spans over OTLP/HTTP, then times:

1. server start-up (until ``/healthz`` answers);
2. listing the N roots and reading + normalising every trace (``PhoenixSource.roots`` / ``read``);
3. writing back the verdicts of the offline detectors (``mast.integrations.phoenix.push``), twice
   (the second run upserts the same annotations);
4. the import of ``phoenix.client`` when the server package is installed beside it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from _phoenix import load_runs, otlp_exporter, phoenix_server, send_run, span_count, wait_for_spans  # noqa: E402

import mast  # noqa: E402
from mast.integrations.phoenix import push, read_annotations  # noqa: E402
from mast.sources import TraceQuery, open_source  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--traces", type=int, default=200)
    args = parser.parse_args()
    runs = load_runs()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        with phoenix_server(Path(tmp)) as server:
            print(f"server start-up: {time.perf_counter() - started:.1f} s")
            chosen = [runs[i % len(runs)] for i in range(args.traces)]
            # One exporter per run: send_run shuts its tracer provider (and so the exporter) down.
            ids = [send_run(otlp_exporter(server), run, project="bench", offset=i) for i, run in enumerate(chosen)]
            spans = sum(span_count(r) for r in chosen)
            wait_for_spans(server, "bench", ids, spans, timeout=600)
            source = open_source(server.url("bench"))
            t0 = time.perf_counter()
            roots = list(source.roots(TraceQuery()))
            t1 = time.perf_counter()
            traces = source.read([r.trace_id for r in roots])
            t2 = time.perf_counter()
            print(f"list {len(roots)} roots: {t1 - t0:.2f} s; read + normalise {len(traces)} traces "
                  f"({spans} spans): {t2 - t1:.2f} s = {len(traces) / (t2 - t1):.0f} traces/s")
            diagnoses = mast.classify_many(list(traces.values()), judge="detectors")
            t3 = time.perf_counter()
            first = push(diagnoses, server.url("bench"), traces=traces)
            t4 = time.perf_counter()
            push(diagnoses, server.url("bench"), traces=traces)
            t5 = time.perf_counter()
            stored = read_annotations(server.url("bench"), ids)
            print(f"write back {first.trace_annotations} trace + {first.span_annotations} span annotations: "
                  f"{t4 - t3:.2f} s (includes importing phoenix.client); again (upsert): {t5 - t4:.2f} s; "
                  f"stored after both: {len(stored)}")
    code = "import time; t = time.perf_counter(); import phoenix.client; print(f'{time.perf_counter() - t:.1f}')"
    took = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    print(f"import phoenix.client with arize-phoenix installed: {took} s")


if __name__ == "__main__":
    main()
