"""Releasable artefacts: the wheel and sdist build, pass ``twine check``, and work where the repository is absent.

Slow (minutes: a build, a fresh virtualenv with mast's dependencies, a nested test run). The fresh venv
installs the wheel's dependencies through pip as configured on the machine (its cache first; PyPI when a
package is missing); nothing else is downloaded.

- the wheel alone, in a fresh venv, labels an example trace copied to an empty folder: prompts and
  taxonomy come from inside the wheel, and the wheel holds no test or third-party data;
- the sdist, unpacked in an empty folder, runs its own tests. The fast tier only
  (the quick loop, ``-m "not slow and not faults and not system and not spawns"``): the whole suite there would double the slow tier's time, and the
  slow and fault tests run from the checkout anyway.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import orjson
import pytest
from _data import REPO

pytestmark = [pytest.mark.slow, pytest.mark.timeout(3600)]
BIN = "Scripts" if os.name == "nt" else "bin"


def run(*args: str | Path, cwd: Path, timeout: float = 1800, env: dict[str, str] | None = None) -> str:
    """Run a command; fail the test with its output's tail when it fails."""
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, f"{' '.join(map(str, args))} exited {done.returncode}:\n{(done.stdout + done.stderr)[-4000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The wheel and sdist, built from this checkout (no build isolation: the test extra has hatchling)."""
    out = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel", "--outdir", out, REPO, cwd=out)
    wheels, sdists = sorted(out.glob("*.whl")), sorted(out.glob("*.tar.gz"))
    assert len(wheels) == len(sdists) == 1, sorted(p.name for p in out.iterdir())
    run(sys.executable, "-m", "twine", "check", "--strict", wheels[0], sdists[0], cwd=out)
    return wheels[0], sdists[0]


def test_the_wheel_carries_mast_and_its_prompts_but_no_data(dist: tuple[Path, Path]) -> None:
    names = zipfile.ZipFile(dist[0]).namelist()
    assert "mast/__init__.py" in names and "mast/py.typed" in names
    assert any(n.startswith("mast/prompts/taxonomy/") for n in names)
    outside = [n for n in names if not n.startswith(("mast/", "mast_judge/", "mast_judge-"))]
    assert not outside, outside  # no tests/, data/ or other top-level folders
    # mast_judge/ holds only the names other tools' registries find mast by (the Scout scanner).
    assert sorted(n for n in names if n.startswith("mast_judge/")) == ["mast_judge/__init__.py", "mast_judge/scout.py"]
    # The data files the package needs at run time: the redaction rules (mast/redact/pii.py and
    # mast/redact/gitleaks.py read them; the gitleaks file carries its MIT notice) and the real-file
    # coverage that `mast formats` shows (generated from the goldens in tests/golden, which the wheel does not carry)
    # the pinned homes of the validation sets (mast/data/label_sets.json: URLs and sha256, no data) and the
    # published figures mast compares with (mast/data/paper_numbers.json, each with its source).
    assert sorted(n for n in names if "/data/" in n or n.startswith("tests/")) == [
        "mast/data/credential_rules.yaml",
        "mast/data/format_coverage.json",
        "mast/data/gitleaks_rules.json",
        "mast/data/label_sets.json",
        "mast/data/paper_numbers.json",
    ]


def test_a_fresh_venv_with_only_the_wheel_labels_an_example(dist: tuple[Path, Path], tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    run(sys.executable, "-m", "venv", env_dir, cwd=tmp_path)
    python = env_dir / BIN / "python"
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("MAST_")}
    run(python, "-m", "pip", "install", "-q", "--disable-pip-version-check", dist[0], cwd=tmp_path, env=clean)
    work = tmp_path / "elsewhere"  # nothing of the repository here: only one copied example
    work.mkdir()
    example = shutil.copy(REPO / "data" / "examples" / "sre-pods-repeat.jsonl", work / "run.jsonl")
    where = run(python, "-c", "import mast, mast.resources as r; print(mast.__file__); print(r.prompts_dir())",
                cwd=work, env=clean).split()
    site = str(env_dir.resolve())
    assert all(Path(p).resolve().is_relative_to(site) for p in where), where  # the wheel's mast and prompts
    run(env_dir / BIN / "mast", "label", example, "-o", "results.jsonl", "--no-progress", cwd=work, env=clean)
    lines = [orjson.loads(line) for line in (work / "results.jsonl").read_bytes().splitlines()]
    assert len(lines) == 1 and lines[0]["status"] == "judged"
    assert len(lines[0]["failure_modes"]) == 14 and lines[0]["judge"]["taxonomy_version"]


def test_the_unpacked_sdist_passes_its_fast_tests(dist: tuple[Path, Path], tmp_path: Path) -> None:
    with tarfile.open(dist[1]) as archive:
        archive.extractall(tmp_path, filter="data")
    (root,) = [p for p in tmp_path.iterdir() if p.is_dir()]
    for needed in ("tests/golden", "data/examples", "THIRD_PARTY_DATA.md", "LICENSES"):
        assert (root / needed).exists(), f"the sdist lacks {needed}"
    # This interpreter has mast's dependencies; PYTHONPATH puts the sdist's own mast before the checkout's.
    env = {**os.environ, "PYTHONPATH": str(root)}
    where = run(sys.executable, "-c", "import mast; print(mast.__file__)", cwd=root, env=env).strip()
    assert Path(where).resolve().is_relative_to(root.resolve()), where
    # The tests that read what the sdist must carry (every sample format, the label sets, the MANIFESTs and
    # licences, the package's own files). The rest of the suite ran from the checkout in the same CI run;
    # running all of it again here would double CI's time without testing the packaging any further.
    carried = ["tests/test_self_contained.py", "tests/test_sample_corpus.py", "tests/test_foundation.py",
               "tests/test_evaluate.py", "tests/test_evaluate_labels.py", "tests/test_evaluate_attribution.py"]
    out = run(sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider",
              "-m", "not slow and not faults and not system and not spawns", *carried, cwd=root, env=env, timeout=3000)
    summary = out.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "error" not in summary, summary
