"""A jury run and a diff on data/examples, offline: two scripted fake jurors plus the offline detectors.

The two LLM jurors are mast.testing.FakeLLMServer answering by simple rules (they are not models):
``openai/repeats`` marks 1.3 when the same transcript line occurs at two steps (citing the repeat) and
3.1 when the transcript mentions an error or a round limit; ``openai/alarmist`` marks 1.3 and 3.2 on
every trace. The third juror is the offline detectors. The script runs the CLI as a user would:

    mast label data/examples -o detectors.jsonl                      (detectors alone)
    mast label data/examples -o jury.jsonl --jury detectors,openai/repeats,openai/alarmist
    mast classify data/examples/ag2-exchange-loop.json --jury ...
    mast evaluate --pred jury.jsonl --gold data/examples/gold.csv --jurors
    mast diff detectors.jsonl jury.jsonl

Run: ``.venv/bin/python benchmarks/jury_demo.py``
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from mast.testing import FakeLLMServer, judge_answer, quote_steps, request_text

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "data" / "examples"
JURY = "detectors,openai/repeats,openai/alarmist"
TROUBLE = re.compile(r"error|fail|maximum number of rounds", re.IGNORECASE)


def repeats(body: dict[str, Any]) -> dict[str, Any]:
    body = {"messages": body["messages"][-1:]}  # the trace only (the system prompt has worked examples)
    seen: dict[str, int] = {}
    evidence: dict[str, list[tuple[int, str]]] = {}
    for step, line in quote_steps(body, words=8):
        # A repeated line of four words or more at another step (short lines like "ok" repeat anyway).
        if len(line.split()) >= 4 and line in seen and seen[line] != step:
            evidence.setdefault("1.3", []).append((step, line))
        seen.setdefault(line, step)
    present = set(evidence)
    for step, line in quote_steps(body, words=12):
        if TROUBLE.search(line):
            present.add("3.1")
            evidence.setdefault("3.1", []).append((step, line))
            break
    first = None
    if "1.3" in evidence:
        first = {"step": evidence["1.3"][0][0], "agent": None, "code": "1.3", "explanation": "the same line again"}
    return judge_answer(present, evidence={k: v[:2] for k, v in evidence.items()}, first_failure=first)


def alarmist(body: dict[str, Any]) -> dict[str, Any]:
    del body
    return judge_answer(["1.3", "3.2"])


def responder(body: dict[str, Any]) -> dict[str, Any]:
    assert request_text(body)
    return repeats(body) if body["model"] == "repeats" else alarmist(body)


def mast_cli(*args: str, env: dict[str, str]) -> None:
    print(f"\n$ mast {' '.join(args)}", flush=True)
    done = subprocess.run([sys.executable, "-m", "mast", *args], env=env, cwd=REPO, text=True,
                          capture_output=True, check=False)
    print((done.stdout + done.stderr).rstrip())
    print(f"(exit {done.returncode})")


def main() -> None:
    with FakeLLMServer(responder) as server, tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "MAST_CACHE_DIR": str(Path(tmp) / "cache"), "COLUMNS": "150",
               "MAST_API_BASE": server.base_url, "MAST_API_KEY": "fake", "MAST_HINTS": "0"}
        base, jury = Path(tmp) / "detectors.jsonl", Path(tmp) / "jury.jsonl"
        mast_cli("label", "data/examples", "-o", str(base), env=env)
        mast_cli("label", "data/examples", "-o", str(jury), "--jury", JURY, env=env)
        mast_cli("classify", "data/examples/ag2-exchange-loop.json", "--jury", JURY, env=env)
        mast_cli("evaluate", "--pred", str(jury), "--gold", "data/examples/gold.csv", "--jurors", "--n-boot", "1000", env=env)
        mast_cli("diff", str(base), str(jury), "--fail-if-worse", "1.3,3.2", env=env)
        print(f"\nfake server calls: {len(server.chat_requests)}")


if __name__ == "__main__":
    main()
