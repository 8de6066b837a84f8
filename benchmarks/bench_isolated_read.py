"""What reading input files in the isolated worker costs, against reading them in the run's process.

``mast.normalize._isolated.read_file`` reads each file in a worker process under an address-space
limit and streams the rows back over a pipe (pickled in batches). This times three inputs both ways:

* ``data/examples`` (the ten small example files shipped in the repository);
* a generated folder of ``--files`` small files (one chat-completions trace of 8 messages each);
* one generated JSONL file of ``--traces`` such traces (one per line; the chat-completions reader
  loads a JSONL file whole, up to its 512 MiB cap, so the reader itself holds every record);
* one generated JSONL file of ``--traces`` MAD records (AG2 group chats of 8 turns; the MAD reader
  streams a JSONL file line by line, so only the rows in flight are held).

Each (input, mode) runs in a fresh interpreter: the first pass (``cold``: for the worker, its start
included) and the best of ``--repeat`` more (``warm``: the worker already running), and the peak
RSS of the reading process(es): the run's own, and the worker's (``RUSAGE_CHILDREN``, taken after
the worker is stopped). Every row is taken and dropped as it comes (as ``mast label`` does with a
lazy scan), so the peaks show what streaming keeps in memory.

Usage::

    .venv/bin/python benchmarks/bench_isolated_read.py
    .venv/bin/python benchmarks/bench_isolated_read.py --files 500 --traces 50000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
LIMIT = 2 * 2**30


def _trace(i: int) -> dict[str, object]:
    words = " ".join(f"w{(i * 7 + k) % 997}" for k in range(40))
    messages: list[dict[str, str]] = [{"role": "user", "content": f"Task {i}: add two numbers. {words}"}]
    for turn in range(7):
        role = "assistant" if turn % 2 == 0 else "user"
        messages.append({"role": role, "content": f"turn {turn} of run {i}: {words}"})
    return {"id": f"run-{i}", "messages": messages}


def _mad(i: int) -> dict[str, object]:
    chat = _trace(i)["messages"]
    assert isinstance(chat, list)
    turns = [
        {"content": m["content"], "role": "user", "name": ("Planner", "Coder")[k % 2]}
        for k, m in enumerate(chat)
    ]
    trajectory = json.dumps({"problem_statement": [chat[0]["content"]], "trajectory": turns})
    return {
        "mas_name": "AG2",
        "llm_name": "GPT-4o",
        "benchmark_name": "GSM",
        "trace_id": i,
        "trace": {"key": "AG2_GSM_GPT-4o", "index": i, "trajectory": trajectory},
        "mast_annotation": {"1.1": 0, "1.3": i % 2, "3.1": 0},
    }


def generate(folder: Path, files: int, traces: int) -> tuple[Path, Path, Path]:
    """The folder of small files, the chat JSONL and the MAD JSONL, under ``folder``."""
    small = folder / "small"
    small.mkdir()
    for i in range(files):
        (small / f"run{i:05d}.json").write_text(json.dumps(_trace(i)), encoding="utf-8")
    big = folder / "big.jsonl"
    with big.open("w", encoding="utf-8") as out:
        for i in range(traces):
            out.write(json.dumps(_trace(i)) + "\n")
    mad = folder / "mad.jsonl"
    with mad.open("w", encoding="utf-8") as out:
        for i in range(traces):
            out.write(json.dumps(_mad(i)) + "\n")
    return small, big, mad


def case(mode: str, target: Path, repeat: int) -> dict[str, float | int]:
    """One input read one way, in this interpreter (run by :func:`main` in a fresh one)."""
    from mast.normalize import iter_paths
    from mast.normalize._isolated import _POOL, read_file

    limit = LIMIT if mode == "isolated" else None
    paths = list(iter_paths([target], recursive=True))

    def one_pass() -> tuple[float, int]:
        start = time.perf_counter()
        rows = 0
        for path in paths:
            for _row in read_file(path, memory_limit=limit):
                rows += 1
        return time.perf_counter() - start, rows

    cold, rows = one_pass()
    warm = min(one_pass()[0] for _ in range(repeat))
    _POOL.close_all()  # the worker reaped: its peak RSS is now in RUSAGE_CHILDREN
    return {
        "files": len(paths),
        "rows": rows,
        "cold_s": cold,
        "warm_s": warm,
        "rss_self_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "rss_worker_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024,
    }


def run_case(mode: str, target: Path, repeat: int) -> dict[str, float | int]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, __file__, "--case", mode, str(target), "--repeat", str(repeat)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result: dict[str, float | int] = json.loads(done.stdout.splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200, help="small files in the generated folder")
    parser.add_argument("--traces", type=int, default=10000, help="traces in each generated JSONL")
    parser.add_argument("--repeat", type=int, default=2, help="warm passes (the best is kept)")
    parser.add_argument("--case", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.case:
        print(json.dumps(case(args.case[0], Path(args.case[1]), args.repeat)))
        return
    with tempfile.TemporaryDirectory(prefix="mast-bench-isolated-") as tmp:
        small, big, mad = generate(Path(tmp), args.files, args.traces)
        inputs = [
            ("data/examples", REPO / "data" / "examples"),
            (f"{args.files} small files", small),
            (f"one chat JSONL, {args.traces} traces ({big.stat().st_size / 2**20:.0f} MB)", big),
            (f"one MAD JSONL, {args.traces} records ({mad.stat().st_size / 2**20:.0f} MB)", mad),
        ]
        print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}")
        print()
        print(
            "| input | rows | in-process cold / warm | isolated cold / warm | ratio cold / warm | peak RSS in-process | peak RSS isolated (run + worker) |"
        )
        print("|---|---|---|---|---|---|---|")
        for label, target in inputs:
            mine = run_case("in-process", target, args.repeat)
            iso = run_case("isolated", target, args.repeat)
            assert mine["rows"] == iso["rows"], (mine, iso)
            print(
                f"| {label} | {iso['rows']} "
                f"| {mine['cold_s']:.2f} / {mine['warm_s']:.2f} s "
                f"| {iso['cold_s']:.2f} / {iso['warm_s']:.2f} s "
                f"| {iso['cold_s'] / mine['cold_s']:.2f}x / {iso['warm_s'] / mine['warm_s']:.2f}x "
                f"| {mine['rss_self_mb']:.0f} MB "
                f"| {iso['rss_self_mb']:.0f} + {iso['rss_worker_mb']:.0f} MB |",
                flush=True,
            )
        print()
        print(f"load after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
