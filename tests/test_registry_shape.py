"""The one registry shape behind formats, sources, sinks and engines (issue 35), in process.

Entry points here are real ``importlib.metadata.EntryPoint`` objects handed to the registry in
place of the installed ones; ``tests/test_plugins.py`` installs a real plugin package.
"""

from __future__ import annotations

import logging
import sys
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

import mast._registry as registry_module
from mast._registry import Registry
from mast.errors import UsageError


class _Dist:
    name = "acme-plugins"


def _points(monkeypatch: pytest.MonkeyPatch, group: str, **values: str) -> list[str]:
    """Make ``entry_points(group=group)`` return ``values``; return the groups asked for."""
    asked: list[str] = []
    points = [EntryPoint(name, value, group)._for(_Dist()) for name, value in values.items()]  # type: ignore[attr-defined]

    def entry_points(*, group: str) -> list[EntryPoint]:
        asked.append(group)
        return [p for p in points if p.group == group]

    monkeypatch.setattr(registry_module, "entry_points", entry_points)
    return asked


def test_lazy_entries_are_imported_on_first_use_and_unknown_names_are_one_line() -> None:
    things: Registry[Any] = Registry("thing", group="mast.tests.none", builtins={"path": "pathlib:Path"})
    things.register("int", int)
    assert things.names() == ["int", "path"]
    assert things.get("path") is Path and things.get("int") is int
    with pytest.raises(UsageError) as info:
        things.get("nope")
    assert str(info.value) == "unknown thing 'nope' (known: int, path)"
    things.unregister("int")
    assert things.find("int") is None and "int" not in things


def test_plugins_are_read_once_lazily_and_a_builtin_keeps_its_name(monkeypatch: pytest.MonkeyPatch) -> None:
    asked = _points(monkeypatch, "mast.tests", extra="json:dumps", path="os:getcwd")
    things: Registry[Any] = Registry("thing", group="mast.tests", builtins={"path": "pathlib:Path"})
    things.register("int", int)
    assert things.get("int") is int and asked == []  # a hit reads no entry points
    import json

    assert things.get("extra") is json.dumps and asked == ["mast.tests"]
    assert things.names() == ["extra", "int", "path"] and things.get("path") is Path
    assert asked == ["mast.tests"]


def test_a_broken_plugin_is_one_warning_naming_its_distribution(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "broken_plugin_for_test.py").write_text("raise RuntimeError('no\\nsecond line')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    _points(monkeypatch, "mast.tests", broken="broken_plugin_for_test:thing")
    things: Registry[Any] = Registry("thing", group="mast.tests", builtins={"int": "builtins:int"})
    with caplog.at_level(logging.WARNING, logger="mast.plugins"):
        assert things.find("broken") is None
        with pytest.raises(UsageError, match=r"unknown thing 'broken' \(known: int\)"):
            things.get("broken")
    assert [r.getMessage() for r in caplog.records] == [
        "mast: skipped the thing plugin 'broken' of acme-plugins (RuntimeError: no)"
    ]
    sys.modules.pop("broken_plugin_for_test", None)


def test_a_checked_registry_loads_every_plugin_when_listing_and_skips_a_wrong_one(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _points(monkeypatch, "mast.tests", good="builtins:int", bad="builtins:len")

    def only_types(name: str, loaded: object) -> type:
        if not isinstance(loaded, type):
            raise TypeError(f"{name} is not a type")
        return loaded

    things: Registry[type] = Registry("thing", group="mast.tests", on_plugin=only_types)
    with caplog.at_level(logging.WARNING, logger="mast.plugins"):
        assert things.names() == ["good"]
    assert things.get("good") is int
    assert "bad is not a type" in caplog.text


def test_the_four_registries_share_the_shape_and_their_groups() -> None:
    from mast.engines import _ENGINES
    from mast.normalize import base
    from mast.sinks import _REGISTRY as sinks
    from mast.sources import _REGISTRY as sources

    groups = {r.group for r in (base._REGISTRY, sources, sinks, _ENGINES)}
    assert groups == {"mast.formats", "mast.sources", "mast.sinks", "mast.engines"}
    assert all(isinstance(r, Registry) for r in (base._REGISTRY, sources, sinks, _ENGINES))
