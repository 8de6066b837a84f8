"""A package installed beside mast adds a format, a sink and an engine through entry points (issue 35).

The plugin is written here, built and installed into a fresh venv (``--system-site-packages``, plus
a ``.pth`` onto this interpreter's site-packages, so mast and its dependencies are importable and
nothing is downloaded); mast then runs in that venv as a user would run it. A second plugin raises
on import: mast says so in one line and goes on.
"""

from __future__ import annotations

import json
import os
import site
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent

DEMO_PYPROJECT = """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "mast-demo-plugin"
version = "0.1.0"

[project.entry-points."mast.formats"]
demolog = "mast_demo_plugin:DEMOLOG"

[project.entry-points."mast.sinks"]
demo-sink = "mast_demo_plugin:open_sink"

[project.entry-points."mast.engines"]
demo-engine = "mast_demo_plugin:engine"
"""

DEMO_MODULE = '''\
"""A mast plugin: the DemoLog format, a sink that writes a line per result, an engine that leaves a marker."""

import os
from collections.abc import Iterator

from mast.engines import get_engine
from mast.errors import TraceFormatError
from mast.normalize import RawInput, TraceFormat, assemble_trace, sniffed_json
from mast.trace import Step, Trace


class DemoLog(TraceFormat):
    name = "demolog"
    description = "DemoLog runs: {demo_run, lines: [[who, said]]}"
    priority = 70

    def detect(self, raw: RawInput) -> float:
        data = sniffed_json(raw, '"demo_run"')
        return 0.95 if isinstance(data, dict) and "demo_run" in data else 0.0

    def parse(self, raw: RawInput) -> Iterator[Trace | TraceFormatError]:
        data = raw.data()
        steps = [Step(index=i, kind="message", agent=who, role="user" if who == "user" else "assistant", content=said)
                 for i, (who, said) in enumerate(data["lines"])]
        yield assemble_trace(steps, source=self.source(raw), trace_id=str(data["demo_run"]), framework="demolog")


DEMOLOG = DemoLog()


class LineSink:
    name = "demo-sink"

    def __init__(self, path: str) -> None:
        self.path = path
        self.count = 0

    def write(self, diagnosis, note, *, fresh: bool) -> None:
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(f"{diagnosis.trace_id} {diagnosis.source.format} {'fresh' if fresh else 'resumed'}\\n")
        self.count += 1

    def close(self) -> list[str]:
        return [f"demo-sink took {self.count} results"]


def open_sink(context) -> LineSink:
    return LineSink(os.environ["DEMO_SINK_FILE"])


def engine(paths, output, **kwargs):
    with open(os.environ["DEMO_ENGINE_MARKER"], "a", encoding="utf-8") as out:
        out.write("ran\\n")
    return get_engine("local")(paths, output, **kwargs)
'''

BROKEN_PYPROJECT = """\
[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[project]
name = "mast-broken-plugin"
version = "0.1.0"

[project.entry-points."mast.formats"]
brokenfmt = "mast_broken_plugin:FORMAT"

[project.entry-points."mast.engines"]
broken-engine = "mast_broken_plugin:engine"
"""

BROKEN_MODULE = 'raise RuntimeError("this plugin is broken on purpose")\n'


def _package(folder: Path, pyproject: str, module: str, source: str) -> Path:
    (folder / module).mkdir(parents=True)
    (folder / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    (folder / module / "__init__.py").write_text(source, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv holding the two plugins, seeing this interpreter's packages (mast and its deps)."""
    base = tmp_path_factory.mktemp("plugins")
    env = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(env)], check=True)
    python = env / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    # This interpreter may itself be a venv, whose packages --system-site-packages does not reach.
    Path(purelib, "_mast_parent.pth").write_text("\n".join(site.getsitepackages()) + "\n", encoding="utf-8")
    demo = _package(base / "demo", DEMO_PYPROJECT, "mast_demo_plugin", DEMO_MODULE)
    broken = _package(base / "broken", BROKEN_PYPROJECT, "mast_broken_plugin", BROKEN_MODULE)
    subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            str(demo),
            str(broken),
        ],
        check=True,
        env=_env(base),
    )
    return python


def _env(folder: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        PYTHONPATH=str(ROOT),
        MAST_CACHE_DIR=str(folder / "cache"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        DEMO_SINK_FILE=str(folder / "sink.txt"),
        DEMO_ENGINE_MARKER=str(folder / "engine.txt"),
        NO_COLOR="1",
        COLUMNS="200",
    )
    return env


def _mast(python: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [python, "-m", "mast", *args],
        cwd=cwd,
        env=_env(cwd),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "plugin" in line]


def test_a_plugin_format_is_listed_and_a_broken_plugin_is_one_line(venv: Path, tmp_path: Path) -> None:
    done = _mast(venv, "formats", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names = [line.split()[0] for line in done.stdout.splitlines() if line and not line[0].isspace()]
    assert "demolog" in names and "otlp" in names
    assert "brokenfmt" not in names
    warned = _warnings(done.stderr)
    assert len(warned) == 1, done.stderr
    assert (
        "mast-broken-plugin" in warned[0] and "'brokenfmt'" in warned[0] and "broken on purpose" in warned[0]
    )
    assert "Traceback" not in done.stderr


def test_a_plugin_engine_and_sink_label_plugin_format_files_and_resume(venv: Path, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    for i in range(3):
        lines = [["user", f"Add {i} and {i}"], ["solver", f"The answer is {2 * i}."]]
        (runs / f"run{i}.json").write_text(
            json.dumps({"demo_run": f"demo-{i}", "lines": lines}), encoding="utf-8"
        )

    helped = _mast(venv, "label", "--help", cwd=tmp_path)
    assert "demo-engine" in helped.stdout and "demo-sink" in helped.stdout

    args = (
        "label",
        str(runs),
        "-o",
        "r.jsonl",
        "--engine",
        "demo-engine",
        "--sink",
        "demo-sink",
        "--judge",
        "detectors",
        "--no-progress",
    )
    first = _mast(venv, *args, cwd=tmp_path)
    assert first.returncode in (0, 1), first.stderr  # 1: a failure mode found, not an error
    results = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert sorted(r["trace_id"] for r in results) == ["demo-0", "demo-1", "demo-2"]
    assert {r["source"]["format"] for r in results} == {"demolog"}
    assert (tmp_path / "engine.txt").read_text().splitlines() == ["ran"]
    sunk = (tmp_path / "sink.txt").read_text().splitlines()
    assert sorted(sunk) == [f"demo-{i} demolog fresh" for i in range(3)]
    assert "demo-sink took 3 results" in first.stdout + first.stderr

    again = _mast(venv, *args, cwd=tmp_path)
    assert again.returncode == first.returncode, again.stderr
    assert [
        json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()
    ] == results  # none judged twice
    assert (tmp_path / "engine.txt").read_text().splitlines() == ["ran", "ran"]
    sunk = (tmp_path / "sink.txt").read_text().splitlines()[3:]
    assert sorted(sunk) == [f"demo-{i} demolog resumed" for i in range(3)]


def test_a_broken_plugin_engine_is_skipped_with_one_line_and_the_rest_works(
    venv: Path, tmp_path: Path
) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "a.json").write_text(json.dumps({"demo_run": "a", "lines": [["user", "hi"], ["bot", "hello"]]}))
    done = _mast(
        venv,
        "label",
        str(runs),
        "-o",
        "r.jsonl",
        "--engine",
        "broken-engine",
        "--judge",
        "detectors",
        "--no-progress",
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert any("mast-broken-plugin" in line and "'broken-engine'" in line for line in _warnings(done.stderr))
    assert not (tmp_path / "r.jsonl").exists()
    local = _mast(
        venv, "label", str(runs), "-o", "r.jsonl", "--judge", "detectors", "--no-progress", cwd=tmp_path
    )
    assert local.returncode in (0, 1), local.stderr
    assert json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])["trace_id"] == "a"


def test_the_entry_point_groups_are_documented_with_a_pyproject_snippet() -> None:
    guide = (ROOT / "docs" / "how-to" / "extend.md").read_text(encoding="utf-8")
    for group in ("mast.formats", "mast.sources", "mast.sinks", "mast.engines"):
        assert f'[project.entry-points."{group}"]' in guide
