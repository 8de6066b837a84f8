"""The extension mechanism as documented: the worked example in ``mast.normalize``'s docstring runs as written."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

import mast.normalize as normalize
from mast.normalize import _logs_common, _mad_logs, base, detect_format, framework_log, load_trace
from mast.normalize._dialects import dialects
from mast.normalize._logs_common import FrameworkLog, LogParse, framework_logs, register_log


def _worked_example() -> str:
    doc = normalize.__doc__ or ""
    block = doc.split("saved as ``mast/normalize/turnlog.py``::", 1)[1].split("\nThen ``load_trace", 1)[0]
    return textwrap.dedent(block)


def test_the_worked_example_adds_a_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))  # registered for this test only
    exec(compile(_worked_example(), "turnlog.py", "exec"), {"__name__": "turnlog"})  # noqa: S102 - our own docstring
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"run": "r7", "turns": [{"who": "user", "said": "Plan a picnic"}, {"who": "planner", "said": "Saturday, by the lake."}]}),
                    encoding="utf-8")
    assert detect_format(path)[0].name == "turnlog"
    trace = load_trace(path)
    assert (trace.trace_id, trace.framework, trace.task, trace.final_output) == ("r7", "turnlog", "Plan a picnic", "Saturday, by the lake.")
    assert [a.name for a in trace.agents] == ["planner"]
    assert any(f.name == "turnlog" and f.example for f in base.formats())


def test_helper_modules_are_discovered_by_prefix() -> None:
    assert "pydantic_ai" in [d.name for d in dialects()]
    assert "crewai_console" in [log.name for log in framework_logs()]
    assert normalize.EXTENSION_PREFIXES == ("_logs_", "_dialect_")


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
    """What one new ``_logs_<name>.py`` module does, done here: nothing else is edited for it to be found."""
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
