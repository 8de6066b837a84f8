"""`mast review`: time to serve one trace, and the server's memory with 10,000 results loaded (issue 36).

    python benchmarks/bench_review.py [--gets 100] [--n 10000]

1. Render time. The largest trace files of the real corpus (its real files and sample traces, located
   by tests/_data.py; ``data/examples`` when it is absent) are labelled offline (``mast label --judge detectors``), a real ``mast review``
   process serves them, and the trace with the largest payload is fetched ``--gets`` times from
   ``/api/trace/N`` (what the page asks for on every j/k: the transcript re-read from its source
   file, normalised, redacted and highlighted). The page itself (``/``) is timed too. Median and
   p95 of the wall time of each GET, client side, on a warm server.
2. Memory. ``--n`` results (each naming one of 50 small trace files, 14 verdicts, evidence) are
   generated and served; the resident set size (VmRSS of the server process) is read after start-up,
   after a trace and the live statistics were asked for, and compared with the same server holding
   10 results.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
from _data import CORPUS, REAL, TRACES  # noqa: E402 (the third-party corpus, located in one place)
from _review_data import write_results  # noqa: E402 (the review tests' own synthetic results)

URL = re.compile(r"^http://127\.0\.0\.1:(\d+)/\?token=([\w-]+)$")


def corpus_files(limit: int = 3) -> tuple[str, list[Path]]:
    """The ``limit`` largest files of the real corpus (or of data/examples without it)."""
    if CORPUS is None:
        folders, where = [REPO / "data" / "examples"], "data/examples (no corpus beside the checkout)"
    else:
        folders, where = [REAL, TRACES], str(CORPUS)
    files = [p for f in folders for p in f.rglob("*") if p.is_file() and p.name != "MANIFEST.tsv"]
    files = [p for p in files if p.suffix not in (".md", ".csv", ".tsv")]
    return where, sorted(files, key=lambda p: p.stat().st_size, reverse=True)[:limit]


class Review:
    """A `mast review` child process; its URL, token and pid."""

    def __init__(self, results: Path, gold: Path) -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
        env["PYTHONPATH"] = str(REPO)
        command = [sys.executable, "-m", "mast", "review", str(results), "-o", str(gold), "--reviewer", "bench",
                   "--no-open", "--port", "0"]  # fmt: skip
        self.started = time.perf_counter()
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                        text=True)  # fmt: skip
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if found := URL.match(line.strip()):
                self.base = f"http://127.0.0.1:{found.group(1)}"
                self.token = found.group(2)
                break
        else:
            raise SystemExit(f"mast review exited {self.process.wait()} without a URL")
        self.start_s = time.perf_counter() - self.started

    def get(self, path: str) -> bytes:
        headers = {} if path.startswith("/?") else {"X-Mast-Token": self.token}
        request = urllib.request.Request(self.base + path, headers=headers)
        with urllib.request.urlopen(request, timeout=60) as response:
            return bytes(response.read())

    def rss_mb(self) -> float:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
        return kb / 1024

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def timed(review: Review, path: str, gets: int) -> dict[str, float]:
    review.get(path)  # warm: the first GET also imports the viewer's code paths
    times = []
    for _ in range(gets):
        t = time.perf_counter()
        review.get(path)
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return {"median_ms": statistics.median(times), "p95_ms": times[max(0, int(len(times) * 0.95) - 1)]}


def render(work: Path, gets: int) -> dict[str, object]:
    where, files = corpus_files()
    results = work / "real.jsonl"
    command = [
        sys.executable,
        "-m",
        "mast",
        "label",
        *map(str, files),
        "-o",
        str(results),
        "--judge",
        "detectors",
    ]
    subprocess.run(command, env={**os.environ, "PYTHONPATH": str(REPO)}, check=False, capture_output=True)
    review = Review(results, work / "real-gold.jsonl")
    try:
        total = json.loads(review.get("/api/stats"))["total"]
        sizes = {p: len(review.get(f"/api/trace/{p}")) for p in range(total)}
        biggest = max(sizes, key=lambda p: sizes[p])
        payload = json.loads(review.get(f"/api/trace/{biggest}"))
        row = payload["row"]
        out: dict[str, object] = {
            "corpus": where,
            "file": Path(row["source"]).name if row.get("source") else "?",
            "file_kb": round(max(f.stat().st_size for f in files) / 1024),
            "traces_served": total,
            "steps": len(row["steps"]),
            "payload_kb": round(sizes[biggest] / 1024, 1),
            "trace": timed(review, f"/api/trace/{biggest}", gets),
            "page": timed(review, f"/?token={review.token}", gets),
        }
    finally:
        review.stop()
    return out


def many_results(work: Path, n: int) -> Path:
    """``n`` judged results over 50 small chat traces, written as `mast label` would."""
    seed = write_results(work / "seed", 50)
    lines = seed.read_text().splitlines()
    results = work / f"results-{n}.jsonl"
    with results.open("w") as handle:
        for i in range(n):
            data = json.loads(lines[i % len(lines)])
            data["trace_id"] = f"{data['trace_id']}-{i}"
            data["source"]["record"] = i  # each a distinct trace key in the gold
            handle.write(json.dumps(data) + "\n")
    return results


def memory(work: Path, n: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for count in (10, n):
        results = many_results(work, count)
        review = Review(results, work / f"gold-{count}.jsonl")
        try:
            out[f"start_s_{count}"] = review.start_s
            out[f"rss_mb_{count}_start"] = review.rss_mb()
            review.get("/api/trace/0")
            review.get("/api/stats")
            out[f"rss_mb_{count}_used"] = review.rss_mb()
            out[f"results_mb_{count}"] = results.stat().st_size / 2**20
        finally:
            review.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gets", type=int, default=100)
    parser.add_argument("--n", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        shown = render(work, args.gets)
        mem = memory(work, args.n)
    load = os.getloadavg()[0]
    print(f"CPython {platform.python_version()}, {platform.machine()}, shared 2-core machine "
          f"(load {load:.1f}), {date.today().isoformat()}")  # fmt: skip
    print(json.dumps({"render": shown, "memory": mem}, indent=2))


if __name__ == "__main__":
    main()
