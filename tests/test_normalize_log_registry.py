"""Framework logs are a registry: a log registered by one module is found everywhere without other edits.

The log registered here stands for a new ``_logs_<name>.py`` module (see ``_logs_crewai.py``, the
last one added, whose commit touched only that module, its fixture and its test): it is detected as a
file of its own by the ``framework_log`` format, read inside MAD records whose ``mas_name`` names it,
and listed by ``mast formats``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mast.normalize import _logs_common, _mad_logs, base, detect_format, framework_log, load_trace
from mast.normalize._logs_common import FrameworkLog, LogParse, register_log


def _ledger_sniff(text: str) -> bool:
    return text.lstrip().startswith("@@ ") and " >> " in text


def _ledger_parse(text: str) -> LogParse:
    out = LogParse(variant="ledger")
    for number, line in enumerate(text.splitlines()):
        if line.startswith("@@ ") and " >> " in line:
            who, said = line[3:].split(" >> ", 1)
            role = "user" if who == "client" else "assistant"
            out.add(kind="message", agent="user" if role == "user" else who, role=role, content=said, source_ref=f"line:{number + 1}")
    out.task = next((s.content for s in out.steps if s.role == "user"), None)
    out.final_output = out.steps[-1].content if out.steps and out.steps[-1].role == "assistant" else None
    return out


def test_a_framework_log_registered_alone_is_read_on_its_own_and_inside_mad(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What one new ``_logs_<name>.py`` module does, done here; nothing else is edited for it to be found."""
    monkeypatch.setattr(_logs_common, "FRAMEWORK_LOGS", dict(_logs_common.FRAMEWORK_LOGS))  # for this test only
    for module in (_mad_logs, framework_log):
        if hasattr(module, "FRAMEWORK_LOGS"):
            monkeypatch.setattr(module, "FRAMEWORK_LOGS", _logs_common.FRAMEWORK_LOGS)
    register_log(FrameworkLog(name="ledger", sniff=_ledger_sniff, parse=_ledger_parse, framework="ledgerbot", mas_names={"ledgerbot": 0},
                              example="@@ planner >> ..."))
    text = "@@ client >> Reconcile the March invoices.\n@@ planner >> Two invoices are duplicated.\n@@ checker >> Both removed; totals match.\n"
    path = tmp_path / "run.log"
    path.write_text(text, encoding="utf-8")
    assert detect_format(path)[0].name == "framework_log"
    alone = load_trace(path)
    assert (alone.framework, alone.source.variant, alone.task, alone.final_output) == (
        "ledgerbot", "ledger", "Reconcile the March invoices.", "Both removed; totals match.")
    assert [a.name for a in alone.agents] == ["planner", "checker"]
    wrapped = load_trace({"mas_name": "LedgerBot", "trace_id": 5, "trace": {"trajectory": text}, "mast_annotation": {}})
    assert [(s.agent, s.content) for s in wrapped.steps] == [(s.agent, s.content) for s in alone.steps]
    assert "ledger" in base.get_format("framework_log").description
