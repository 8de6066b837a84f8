"""The extension mechanism as documented: the worked example in ``mast.normalize``'s docstring runs as written."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

import mast.normalize as normalize
from mast.normalize import base, detect_format, load_trace
from mast.normalize._dialects import dialects
from mast.normalize._logs_common import framework_logs


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
    assert normalize.EXTENSION_PREFIXES == ("_logs_", "_dialect_", "_span_")
