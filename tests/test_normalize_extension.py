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
    block = doc.split("saved as ``mast/normalize/file_formats/turnlog.py``::", 1)[1].split("\nThen ``load_trace", 1)[0]
    return textwrap.dedent(block)


def test_the_worked_example_adds_a_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "_REGISTRY", base._REGISTRY.copy())  # registered for this test only
    exec(compile(_worked_example(), "turnlog.py", "exec"), {"__name__": "turnlog"})  # noqa: S102 - our own docstring
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"run": "r7", "turns": [{"who": "user", "said": "Plan a picnic"}, {"who": "planner", "said": "Saturday, by the lake."}]}),
                    encoding="utf-8")
    assert detect_format(path)[0].name == "turnlog"
    trace = load_trace(path)
    assert (trace.trace_id, trace.framework, trace.task, trace.final_output) == ("r7", "turnlog", "Plan a picnic", "Saturday, by the lake.")
    assert [a.name for a in trace.agents] == ["planner"]
    assert any(f.name == "turnlog" and f.example for f in base.formats())


def test_extension_modules_are_discovered_by_subpackage() -> None:
    assert "pydantic_ai" in [d.name for d in dialects()]
    assert "crewai_console" in [log.name for log in framework_logs()]
    assert normalize.EXTENSION_PACKAGES == ("logs", "dialects", "spans", "file_formats")


def test_format_modules_keep_their_short_public_path() -> None:
    import mast.normalize.otlp as short

    import mast.normalize.file_formats.otlp as moved

    assert short is moved
    assert normalize.formats is base.formats  # the subpackage does not shadow the function


def test_the_tree_shows_the_four_kinds_of_extension() -> None:
    root = Path(normalize.__file__).parent
    top = sorted(p.name for p in root.glob("*.py"))
    assert all(name.startswith("_") or name == "base.py" for name in top), top
    for package in normalize.EXTENSION_PACKAGES:
        assert (root / package / "__init__.py").is_file()
