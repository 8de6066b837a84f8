"""Local engine vs ``--engine ray``: traces per second and CPU per trace against the fake server (issue 16).

    .venv/bin/python benchmarks/bench_scale.py                        # 2,000 traces, 50 ms, 256 in flight
    .venv/bin/python benchmarks/bench_scale.py --n 500 --steps 10     # a quick look

Both engines run ``mast label`` as a child process on the same traces (one JSONL file, ``--steps``
messages each) against ``FakeLLMServer`` answering after ``--latency`` seconds, in its own process.
The local engine keeps 256 calls in flight (``-j 256``); the Ray engine runs 2 actors with 128 each
(``--engine ray --actors 2 -j 128``), on a local Ray it starts itself.

* **span**: first request in to last answer out, as the server sees it: start-up (imports, Ray
  starting its processes and actors) is left out, so the figure is the labelling itself.
* **traces/s**: ``n / span``. The ideal is latency-bound: ``ceil(n / in_flight) * latency``.
* **CPU per trace**: user + system seconds of the whole process tree (the CLI and, for Ray, its
  raylet, workers and actors), sampled every 0.1 s, divided by ``n``; start-up included.
  ``cpu_s_by_process`` splits it by kind of process (the driver, the judge actors, the read tasks,
  Ray's daemons), which is where to look when one engine costs more than the other.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_batch import MODEL, ServerProcess, make_traces  # noqa: E402


def tree_cpu(root: psutil.Process, seen: dict[int, float], names: dict[int, str] | None = None) -> None:
    """Record the latest CPU seconds of ``root`` and every descendant (by pid), and what each process is."""
    try:
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for proc in procs:
        try:
            times = proc.cpu_times()
            if names is not None and (proc.pid not in names or names[proc.pid] == "ray worker"):
                names[proc.pid] = "driver (mast label)" if proc.pid == root.pid else role(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        seen[proc.pid] = times.user + times.system


def role(proc: psutil.Process) -> str:
    """What a process of the tree is: a Ray daemon, a Ray worker by the task it runs, or a program."""
    try:
        line = " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return "?"
    if line.startswith("ray::"):
        title = line.split()[0]
        if "TraceJudge" in title:
            return "ray actor (TraceJudge)"
        if title in ("ray::IDLE", "ray::IDLE_SpillWorker"):
            return "ray worker"
        return "ray task " + title.removeprefix("ray::")[:40]
    if "default_worker" in line:
        return "ray worker"
    name = str(proc.name())
    if name in ("raylet", "gcs_server"):
        return f"ray {name}"
    for daemon in ("log_monitor", "monitor.py", "dashboard", "runtime_env"):
        if daemon in line:
            return f"ray {daemon}"
    return os.path.basename(name)


def run_label(cmd: list[str], env: dict[str, str]) -> tuple[float, dict[str, float], dict[str, Any]]:
    """Run one ``mast label``; returns (wall seconds, CPU seconds per kind of process in its tree, --json report)."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    root = psutil.Process(proc.pid)
    seen: dict[int, float] = {}
    names: dict[int, str] = {}
    while proc.poll() is None:
        tree_cpu(root, seen, names)
        time.sleep(0.1)
    out, err = proc.communicate()
    wall = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"mast label failed ({proc.returncode}): {err[-3000:]}")
    by_role: dict[str, float] = {}
    for pid, cpu in seen.items():
        by_role[names.get(pid, "?")] = by_role.get(names.get(pid, "?"), 0.0) + cpu
    return wall, by_role, json.loads(out.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=20, help="messages per trace")
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--in-flight", type=int, default=256)
    parser.add_argument("--actors", type=int, default=2)
    parser.add_argument("--engines", nargs="+", default=["local", "ray"])
    args = parser.parse_args()
    mast = str(Path(sys.executable).parent / "mast")
    rows = []
    with tempfile.TemporaryDirectory(prefix="mast-bench-scale-") as tmp:
        work = Path(tmp)
        traces = make_traces(work / "traces.jsonl", args.n, steps=args.steps)
        server = ServerProcess(args.latency)
        try:
            for engine in args.engines:
                env = {**os.environ, "MAST_CACHE_DIR": str(work / f"cache-{engine}"), "RAY_TMPDIR": str(work / "ray"),
                       "RAY_AUTH_MODE": "disabled"}
                per_call = args.in_flight // (args.actors if engine == "ray" else 1)
                cmd = [mast, "label", str(traces), "-o", str(work / f"{engine}.jsonl"), "-m", MODEL,
                       "--api-base", server.base_url, "--api-key", "bench", "--no-cache", "-j", str(per_call),
                       "--no-progress", "--json"]
                if engine == "ray":
                    cmd += ["--engine", "ray", "--actors", str(args.actors)]
                server.ask("reset")
                load = os.getloadavg()[0]
                wall, by_role, report = run_label(cmd, env)
                cpu = sum(by_role.values())
                stats = server.ask("stats")
                ideal = math.ceil(args.n / args.in_flight) * args.latency
                row = {
                    "engine": engine, "n": args.n, "in_flight": args.in_flight, "latency_s": args.latency,
                    "load_avg_1m": round(load, 1), "judged": report["statuses"]["judged"],
                    "requests": stats["requests"], "max_in_flight": stats["max_in_flight"],
                    "span_s": round(stats["span_s"], 2), "ideal_s": ideal,
                    "traces_per_s": round(args.n / stats["span_s"], 1), "ideal_traces_per_s": round(args.n / ideal, 1),
                    "wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "cpu_ms_per_trace": round(1000 * cpu / args.n, 1),
                    "cpu_s_by_process": {k: round(v, 2) for k, v in sorted(by_role.items(), key=lambda kv: -kv[1])},
                    "load_avg_1m_after": round(os.getloadavg()[0], 1),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            server.close()
    per_engine = {row["engine"]: row["traces_per_s"] for row in rows}
    if {"local", "ray"} <= per_engine.keys():  # whichever order --engines gave
        print(json.dumps({"ray_over_local": round(per_engine["ray"] / per_engine["local"], 2)}))


if __name__ == "__main__":
    main()
