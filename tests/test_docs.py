"""The docs site builds with ``mkdocs build --strict`` and its generated reference is complete.

A broken link, a missing reference, a command option without help text or a ``MAST_*`` variable the
code reads and ``docs/reference/environment.md`` does not list fails the build (``docs/hooks.py``).
The examples in the pages run in tests/test_readme.py.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from mast.__about__ import __version__
from mast.cli import main

pytestmark = pytest.mark.spawns  # fresh mast processes and builds: outside the quick loop

REPO = Path(__file__).resolve().parent.parent

pytest.importorskip("mkdocs")
pytest.importorskip("mkdocstrings")


def _hooks():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("mast_docs_hooks", REPO / "docs" / "hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _commands(group: click.Group, prefix: str = "mast") -> list[tuple[str, click.Command]]:
    out: list[tuple[str, click.Command]] = []
    for name, command in sorted(group.commands.items()):
        if command.hidden:
            continue
        out.append((f"{prefix} {name}", command))
        if isinstance(command, click.Group):
            out.extend(_commands(command, f"{prefix} {name}"))
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONPATH": str(REPO)}
    # Without -q: -q hides warnings, and --strict then passes a build that has them (issue 33, point 13).
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    warnings = [line for line in (done.stdout + done.stderr).splitlines() if "WARNING" in line]
    assert warnings == []
    return out


def test_the_site_builds_strict(site: Path) -> None:
    for page in ("index.html", "getting-started/index.html", "reference/api/index.html", "changelog/index.html"):
        assert (site / page).is_file(), page
    assert "Keep a Changelog" in (site / "changelog" / "index.html").read_text()
    assert "mast_version" in (site / "concepts" / "diagnosis" / "index.html").read_text()


def test_the_cli_reference_lists_every_command_and_option(site: Path) -> None:
    page = (site / "reference" / "cli" / "index.html").read_text()
    for path, command in _commands(main):
        assert path in page, path
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                assert param.opts[-1] in page, f"{path} {param.opts[-1]}"


def test_the_formats_and_errors_are_generated_from_the_code(site: Path) -> None:
    from mast.normalize import formats

    page = (site / "reference" / "formats" / "index.html").read_text()
    assert all(f"<code>{fmt.name}</code>" in page for fmt in formats())
    assert "from documentation only" in page and "Claude Code 1.0.24" in page   # real-file coverage
    errors = (site / "reference" / "errors" / "index.html").read_text()
    assert "JudgeSetupError" in errors and "exit 2" in errors


def test_every_option_has_help_text() -> None:
    assert _hooks().options_without_help() == []


def test_an_option_without_help_is_found() -> None:
    @click.group()
    def fake() -> None: ...

    @fake.command("run")
    @click.option("--documented", help="Says what it does.")
    @click.option("--bare")
    def run(documented: str, bare: str) -> None: ...

    hooks = _hooks()
    hooks_main = sys.modules["mast.cli"].main
    try:
        sys.modules["mast.cli"].main = fake  # type: ignore[attr-defined]
        assert hooks.options_without_help() == ["mast run --bare"]
    finally:
        sys.modules["mast.cli"].main = hooks_main  # type: ignore[attr-defined]


def test_every_mast_variable_is_documented() -> None:
    page = (REPO / "docs" / "reference" / "environment.md").read_text()
    names = _hooks().env_variables()
    assert {"MAST_MODEL", "MAST_API_BASE", "MAST_HOOKS_DIR"} <= names
    assert sorted(name for name in names if name not in page) == []


def test_mast_version() -> None:
    from click.testing import CliRunner

    done = CliRunner().invoke(main, ["--version"])
    assert done.exit_code == 0 and __version__ in done.output


def test_results_record_the_mast_version(tmp_path: Path) -> None:
    import mast

    diagnosis = mast.classify(REPO / "data" / "examples" / "ag2-migration-error.json", judge="detectors")
    assert diagnosis.judge.mast_version == __version__
    assert f'"mast_version":"{__version__}"' in diagnosis.model_dump_json()
