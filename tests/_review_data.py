"""Synthetic traces and judge results for the `mast review` tests (written here, no third-party text).

Each trace is a small chat list in its own file; its result names the file, the record and the
trace's content hash (so the app shows the transcript, as the report does), a verdict for every mode
of mast-v3 (present on a fixed pattern, with an evidence quote taken from the assistant's step), a
confidence, and a first failure.
"""

from __future__ import annotations

import json
from pathlib import Path

import mast
from mast.diagnosis import Diagnosis, Evidence, FirstFailure, JudgeInfo, ModeVerdict, SourceRef
from mast.taxonomy import load_taxonomy

HOSTILE = (
    '<script>window.pwned=1</script><img src=x onerror="window.pwned=2"><style>body{display:none}</style>'
)


def judge_present(i: int, code: str) -> bool:
    """The scripted judge's verdict: a few modes present, varying with the trace."""
    codes = load_taxonomy().codes
    return codes.index(code) % 5 == i % 5


def write_results(folder: Path, n: int, *, hostile: bool = False, extra: str | None = None) -> Path:
    """``n`` traces under ``folder/traces`` and their results at ``folder/results.jsonl``.

    ``hostile`` puts :data:`HOSTILE` in every text of the trace and the result; ``extra`` puts that text instead.
    """
    tax = load_taxonomy()
    traces = folder / "traces"
    traces.mkdir(parents=True, exist_ok=True)
    lines = []
    for i in range(n):
        added = extra if extra is not None else HOSTILE if hostile else ""
        said = f"I will retry the deployment of service-{i} without checking the logs{added}"
        messages = [
            {"role": "user", "content": f"Deploy service-{i} and confirm it is healthy. {added}"},
            {"role": "assistant", "content": said},
            {"role": "user", "content": "Did it work?"},
            {"role": "assistant", "content": f"Done, service-{i} is healthy (I did not verify)."},
        ]
        path = traces / f"run-{i:03d}.json"
        path.write_text(json.dumps(messages), encoding="utf-8")
        trace = mast.load_trace(str(path))
        verdicts = []
        for code in tax.codes:
            present = judge_present(i, code)
            verdicts.append(
                ModeVerdict(
                    code=code,
                    name=tax.mode(code).name,
                    category=tax.category_name(code),
                    present=present,
                    confidence=0.55 if i % 4 == 0 else 0.9,
                    evidence=[Evidence(step=1, quote="retry the deployment", verified=True)]
                    if present
                    else [],
                    explanation=(f"the agent retries blindly {added}" if present else ""),
                )
            )
        diagnosis = Diagnosis(
            trace_id=trace.trace_id,
            source=SourceRef(path=str(path), format="auto", record=None),
            trace_hash=trace.content_hash(),
            judge=JudgeInfo(kind="llm", model="scripted", taxonomy_version=tax.version),
            failure_modes=verdicts,
            summary=f"run {i} {added}",
            first_failure=FirstFailure(
                step=1, agent="assistant", code=next((v.code for v in verdicts if v.present), None)
            ),
        )
        lines.append(diagnosis.model_dump_json())
    results = folder / "results.jsonl"
    results.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return results
