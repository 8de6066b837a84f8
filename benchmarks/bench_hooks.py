"""How long ``mast hooks run`` keeps a coding agent waiting, and how long its background labelling takes.

    .venv/bin/python benchmarks/bench_hooks.py            # 5 runs on a real Claude Code transcript

Each run feeds a ``SessionEnd`` event for a copy of ``tests/data/real/claude_code/`` (a fresh
results file each time, the offline detectors as judge) to ``python -m mast hooks run`` as Claude
Code does, and measures (1) the hook's wall time, start to exit (what the agent waits for), and
(2) the time until the detached process has written the session's result.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from _data import REAL  # noqa: E402 (the third-party corpus, located in one place)

TRANSCRIPT = REAL / "claude_code" / "claude_code_log_representative_messages.jsonl"


def main(runs: int = 5) -> None:
    hook_s: list[float] = []
    result_s: list[float] = []
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAST_")}
    env["PYTHONPATH"] = str(ROOT)
    with tempfile.TemporaryDirectory() as tmp:
        for run in range(runs):
            transcript = Path(tmp) / f"s{run}.jsonl"
            shutil.copy(TRANSCRIPT, transcript)
            results = Path(tmp) / f"r{run}.jsonl"
            event = json.dumps({"session_id": "test_session", "transcript_path": str(transcript), "cwd": tmp,
                                "hook_event_name": "SessionEnd"})
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "mast", "hooks", "run", "-o", str(results)], input=event, text=True,
                           env={**env, "MAST_CACHE_DIR": str(Path(tmp) / "cache")}, capture_output=True, check=True)
            hook_s.append(time.perf_counter() - start)
            while not (results.exists() and results.read_text().endswith("\n")):
                time.sleep(0.02)
            result_s.append(time.perf_counter() - start)
    print(f"hook wall time: median {statistics.median(hook_s):.2f} s (min {min(hook_s):.2f}, max {max(hook_s):.2f}) over {runs} runs")
    print(f"result written after: median {statistics.median(result_s):.2f} s (min {min(result_s):.2f}, max {max(result_s):.2f})")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
