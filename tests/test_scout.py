"""Inspect Scout: mast as a scanner in a real ``scout scan`` over logs of a real ``inspect eval``.

The logs come from ``inspect eval`` on Inspect's ``mockllm`` model (tasks in
``tests/_inspect_tasks.py``); the judge is mast's fake provider on 127.0.0.1
(:class:`mast.testing.FakeLLMServer`), reached through ``-S api_base=...``. Scout finds
``mast_judge/mast_scanner`` through mast's ``inspect_ai`` entry point: the checkout is not installed
with it, so the test puts a small distribution holding the same entry point (read from
``pyproject.toml``) on the command's path.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from mast.testing import FakeLLMServer, Reply, judge_answer, request_text
from tests.test_inspect import ROOT, TASKS, inspect_env, run_inspect

SCOUT = Path(sys.executable).parent / "scout"
QUOTE = "I guess the answer is 3"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("inspect_scout") is None,
    reason="inspect-scout is not installed (the scout extra)",
)


def _judge(body: dict[str, Any]) -> Reply:
    text = request_text(body)
    if "3*4" in text:
        return Reply(status=500, content="provider down")
    if QUOTE in text:
        return Reply(
            content=judge_answer(
                ["2.6", "3.2"],
                evidence={"2.6": [(3, QUOTE)], "3.2": [(2, "add only takes numbers"), (3, QUOTE)]},
                summary="The agent guessed an answer after its tool call failed.",
            )
        )
    return Reply(content=judge_answer([], summary="The agent used the tool and answered correctly."))


def entry_point_path(root: Path) -> Path:
    """A folder holding a distribution whose only content is mast's ``inspect_ai`` entry points."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["inspect_ai"]
    info = root / "mast_scout_entry-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mast-scout-entry\nVersion: 0\n")
    lines = "".join(f"{name} = {target}\n" for name, target in declared.items())
    (info / "entry_points.txt").write_text(f"[inspect_ai]\n{lines}")
    return root


def run_scout(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(SCOUT), *args], env=env, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def scan(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One Inspect log (3 samples) scanned by mast_scanner with the fake judge."""
    home = tmp_path_factory.mktemp("scout-home")
    out = tmp_path_factory.mktemp("scout")
    run_inspect(
        ["eval", f"{TASKS}@arithmetic_and_product", "--log-dir", str(out / "logs")], inspect_env(home)
    )
    entry = entry_point_path(out / "entry")
    with FakeLLMServer(_judge) as server:
        env = inspect_env(home, OPENAI_API_KEY="fake-key", PYTHONPATH=f"{ROOT}:{entry}")
        run_scout(
            [
                "scan",
                "mast_judge/mast_scanner",
                "-T",
                str(out / "logs"),
                "--scans",
                str(out / "scans"),
                "-S",
                "model=openai/fake-judge",
                "-S",
                f"api_base={server.base_url}",
                "-S",
                "max_retries=0",
                "-S",
                "cache=false",
                "--display",
                "none",
                "--max-processes",
                "1",
            ],
            env,
        )
        requests = len(server.chat_requests)
    (scan_dir,) = sorted((out / "scans").glob("scan_id=*"))
    return {"dir": scan_dir, "logs": out / "logs", "requests": requests, "home": home, "env": env}


def _raw_items(scan_dir: Path, task_id: str) -> dict[str, dict[str, Any]]:
    """The resultset items of one transcript's row in the scan's Parquet file, by label."""
    import pyarrow.parquet as pq

    rows = pq.read_table(scan_dir / "mast_scanner.parquet").to_pylist()
    (row,) = [r for r in rows if r["transcript_task_id"] == task_id]
    return {item["label"]: item for item in json.loads(row["value"])}


@pytest.mark.slow  # a real `inspect eval` and a real `scout scan`
def test_scout_scan_writes_per_mode_values_with_message_references(scan: dict[str, Any]) -> None:
    from inspect_ai.log import read_eval_log
    from inspect_scout import scan_results_df

    assert scan["requests"] >= 3
    (log_path,) = sorted(scan["logs"].glob("*.eval"))
    log = read_eval_log(str(log_path))
    assert log.samples is not None
    negative = next(s for s in log.samples if s.id == "negative")
    quoted = next(m.id for m in negative.messages if QUOTE in m.text)
    tool_error = next(m.id for m in negative.messages if m.role == "tool")

    results = scan_results_df(str(scan["dir"]), scanner="mast_scanner")
    rows = results.scanners["mast_scanner"]
    spec = json.loads((scan["dir"] / "_scan.json").read_text())
    assert spec["scanners"]["mast_scanner"]["name"] == "mast_judge/mast_scanner"

    by_task = {task: frame for task, frame in rows.groupby("transcript_task_id")}
    assert set(by_task) == {"sum", "negative", "product"}
    found = by_task["negative"].set_index("label")
    assert bool(found.loc["2.6", "value"]) is True and bool(found.loc["1.1", "value"]) is False
    refs = json.loads(found.loc["2.6", "message_references"])
    assert refs == [{"type": "message", "cite": "[S3]", "id": quoted}]
    assert "[S3]" in found.loc["2.6", "explanation"] and QUOTE in found.loc["2.6", "explanation"]
    assert [r["id"] for r in json.loads(found.loc["3.2", "message_references"])] == [tool_error, quoted]
    assert found.loc["diagnosis", "value"] == "2.6,3.2"
    # Scout's expanded frame leaves a resultset item's metadata out: the Parquet row holds it whole
    metadata = _raw_items(scan["dir"], "negative")["diagnosis"]["metadata"]
    assert (
        metadata["mast"]["status"] == "judged"
        and metadata["mast"]["trace_id"] == by_task["negative"]["transcript_id"].iloc[0]
    )
    assert metadata["first_failure"]["step"] == 3

    clean = by_task["sum"].set_index("label")
    assert clean.loc["diagnosis", "value"] == "none" and not any(
        bool(v) for k, v in clean["value"].items() if k != "diagnosis"
    )

    # the judge answered 500 on the product sample: an error, never "no failure"
    failed = by_task["product"]
    assert len(failed) == 1 and "could not judge" in str(failed["scan_error"].iloc[0])
    assert failed["value"].isna().all() or (failed["value"] == None).all()  # noqa: E711 - a null value, no verdict
