"""The README and the docs match the behaviour: every `mast` command in them runs, offline.

Commands are taken from the bash blocks of the README and of every page in ``docs/`` (also the `.venv/bin/mast ...` part of the quick
start). They run in a sandbox holding a copy of ``data/examples`` and the files the README names
(``run.json``, ``runs/``...). Commands that need a provider run against
:class:`mast.testing.FakeLLMServer` through ``MAST_API_BASE``; the few that cannot run offline are
listed in ``NOT_RUN`` with the reason, and a command in neither group fails the test. The Python
blocks of ``docs/`` run the same way (``test_the_docs_python_runs``); the few that cannot are in
``PY_NOT_RUN`` with the test that covers them.
"""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mast.cli import main
from mast.testing import FakeLLMServer

pytestmark = pytest.mark.spawns  # fresh mast processes and builds: outside the quick loop

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
DOCS = sorted((REPO / "docs").rglob("*.md"))

NOT_RUN = {
    "mast gold export gold.jsonl phoenix://127.0.0.1:6006/my-agent": "a Phoenix server: tests/test_phoenix.py (gold round trip)",
    "mast gold export gold.jsonl mlflow://127.0.0.1:5000/my-agent": "an MLflow server: tests/test_mlflow.py (gold round trip)",
    "mast gold import phoenix://127.0.0.1:6006/my-agent -o gold.jsonl": "a Phoenix server: tests/test_phoenix.py (gold round trip)",
    # docs/how-to/scout.md: a Scout scan folder and a Scout transcript database need a real `scout scan`
    # or Scout's own import first; tests/test_scout.py makes both and runs these commands on them.
    "mast report scans/scan_id=abc123 -o report.html": "a Scout scan: tests/test_scout.py",
    "mast report scans -o report.html": "a folder of Scout scans: tests/test_scout.py",
    "mast evaluate --pred scans/scan_id=abc123 --gold gold.csv": "a Scout scan: tests/test_scout.py",
    "mast diff scans/scan_id=abc123 scans/scan_id=def456": "two Scout scans: tests/test_scout.py",
    "mast validate --gold gold.jsonl --results scans/scan_id=abc123 -o validation/": "a Scout scan: tests/test_scout.py",
    "mast label scout:///data/transcripts -o results.jsonl --model openai/gpt-4.1-mini": "a Scout database: tests/test_scout.py",
    "mast label scout://./transcripts --judge detectors -o results.jsonl": "a Scout database: tests/test_scout.py",
    "mast label scout:///data/transcripts --filter task_set = 'cybench' -o cybench.jsonl": "a Scout database: tests/test_scout.py",
    "mast evaluate --pred results.jsonl --gold Who_and_When/ --attribution": "needs the Who&When download",
    "mast classify run.json --model local --max-output-tokens 1600": "the local model: tests/test_judge_local.py (slow)",
    "mast label runs/ -o results.jsonl --model local/path/to/qwen2.5-7b-instruct-q4_k_m.gguf --concurrency 1":
        "a 7B model file the user downloads",
    "mast label runs/ -o results.jsonl --engine ray --actors 4 -j 64":
        "starts Ray on this machine: the Ray engine is tests/test_ray_engine.py's (same verdicts, resume)",
    "mast label s3-mount/runs/ -o results.jsonl --engine ray --address auto": "a running Ray cluster",
    "mast label runs/ -o results.jsonl --model judge --router router.yaml --engine ray":
        "Ray and a Router file with provider keys: tests/test_ray_engine.py and tests/test_router_config.py",
    "mast label runs/ -o jury.jsonl --jury openai/gpt-4.1-mini,anthropic/claude-3-5-haiku-latest,detectors":
        "an Anthropic juror: the fake server speaks OpenAI's protocol (tests/test_jury.py runs juries on it)",
    "mast classify run.json --jury jury.yaml --reducer at_least:2 --quorum 2":
        "a jury file the user writes (tests/test_jury.py reads one)",
    "mast evaluate --pred jury.jsonl --gold gold.csv --jurors": "the jury run above (tests/test_jury.py)",
    "mast label phoenix://localhost:6006/my-project -o results.jsonl --write-back":
        "a Phoenix server (tests/test_phoenix.py runs these against a real one)",
    "mast label phoenix://localhost:6006/my-project -o results.jsonl --since 2h --root-span support-agent --limit 100":
        "a Phoenix server (tests/test_phoenix.py)",
    "mast push results.jsonl phoenix://localhost:6006/my-project": "a Phoenix server (tests/test_phoenix.py)",
    "mast watch phoenix://localhost:6006/my-project -o results.jsonl --every 60s --write-back --budget-usd 5":
        "a Phoenix server and a loop that runs until stopped (tests/test_phoenix.py, tests/test_watch.py)",
    "mast label mlflow://localhost:5000/agents -o results.jsonl --write-back":
        "an MLflow server (tests/test_mlflow.py runs these against a real one)",
    "mast label mlflow://localhost:5000/agents -o results.jsonl --since 2h --limit 100 --filter tags.env = 'prod'":
        "an MLflow server (tests/test_mlflow.py)",
    "mast watch mlflow://localhost:5000/agents -o results.jsonl --every 60s --write-back":
        "an MLflow server and a loop that runs until stopped (tests/test_mlflow.py)",
    "mast label logs/ -o results.jsonl": "an Inspect log folder: tests/test_inspect.py labels logs a real `inspect eval` wrote",
    "mast hooks install codex": "writes the user's ~/.codex/config.toml: tests/test_hooks.py round-trips one under CODEX_HOME",
    "mast review results.jsonl -o gold.jsonl --reviewer ana":
        "serves the browser app until Ctrl-C: tests/test_review_browser.py reviews in a real Chromium",
    "mast review results.jsonl -o gold.jsonl --reviewer ana --queue improve --sample 50":
        "serves the browser app until Ctrl-C: tests/test_review.py (the improve queue)",
    "mast watch ~/.claude/projects -o sessions.jsonl --quiet 10m --every 60s":
        "a loop that runs until stopped, on the user's sessions (tests/test_watch_folder.py watches a folder)",
}
EXIT = {"--fail-on": {3}}
"""Expected exit statuses other than 0, by an option the command carries."""


def readme_commands() -> list[str]:
    """The `mast` commands of the README and the docs pages, each once, the README's first."""
    commands: list[str] = []
    text = "\n".join(path.read_text() for path in (README, *DOCS))
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            for part in line.split("&&"):
                part = part.strip().removeprefix(".venv/bin/")
                if part.startswith("mast "):
                    commands.append(" ".join(shlex.split(part, comments=True)))
    return list(dict.fromkeys(commands))


def python_blocks(path: Path = README) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


@pytest.fixture
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    examples = tmp_path / "data" / "examples"
    shutil.copytree(REPO / "data" / "examples", examples)
    shutil.copytree(REPO / "prompts" / "taxonomy", tmp_path / "prompts" / "taxonomy")
    shutil.copy(examples / "ag2-migration-error.json", tmp_path / "run.json")
    runs = tmp_path / "runs"
    runs.mkdir()
    for trace in examples.iterdir():
        if trace.name not in ("gold.csv", "README.md"):
            shutil.copy(trace, runs / trace.name)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_readme_command_is_run_or_excused() -> None:
    commands = readme_commands()
    assert len(commands) >= 14
    assert set(NOT_RUN) <= set(commands), "NOT_RUN names a command the README no longer has"


def test_the_readme_commands_run_offline(sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = CliRunner()
    with FakeLLMServer() as server:
        for command in readme_commands():
            if command in NOT_RUN:
                continue
            args = shlex.split(command)[1:]
            if "classify" in args or "--budget-usd" in args or "--model" in args:
                # `export MAST_MODEL=openai/gpt-4.1-mini OPENAI_API_KEY=...` before them: a provider.
                if "--model" not in args:
                    monkeypatch.setenv("MAST_MODEL", "openai/gpt-4.1-mini")
                monkeypatch.setenv("MAST_API_BASE", server.base_url)
                monkeypatch.setenv("OPENAI_API_KEY", "test-key")
            else:
                for name in ("MAST_MODEL", "MAST_API_BASE", "OPENAI_API_KEY"):
                    monkeypatch.delenv(name, raising=False)
            if args[0] == "label":
                # Each README line is an example on its own; one judge per results file (a second
                # judge's run into the same -o is refused, see test_first_hour).
                output = args[args.index("-o") + 1] if "-o" in args else "results.jsonl"
                Path(output).unlink(missing_ok=True)
            if args[0] == "diff" or "--base" in args:
                # Two labelled runs of an agent: here the examples' results twice (no change to find).
                shutil.copy("results.jsonl", "v1.jsonl")
                shutil.copy("results.jsonl", "v2.jsonl")
            if args[0] == "evaluate" and "judge_a.jsonl" in args:
                shutil.copy("results.jsonl", "judge_a.jsonl")
                shutil.copy("results.jsonl", "judge_b.jsonl")
            if "gold.jsonl" in args and args[0] != "review" and not Path("gold.jsonl").exists():
                _reviewed(Path("results.jsonl"), Path("gold.jsonl"))  # what `mast review` would have written
            result = runner.invoke(main, args, catch_exceptions=False)
            expected = next((codes for option, codes in EXIT.items() if option in args), {0})
            assert result.exit_code in expected, f"{command}: exit {result.exit_code}\n{result.output}"
        assert server.chat_requests, "the commands with a model reached the fake provider"
    assert Path("report.html").is_file() and Path("results.parquet").is_file()


def _reviewed(results: Path, gold: Path) -> None:
    """A gold as a reviewer leaves it who pressed `a` on every trace of ``results`` (`mast review`)."""
    from mast.review import ReviewSession

    session = ReviewSession(results, gold, reviewer="ana")
    for position in range(len(session)):
        session.record(position, [{"field": "accept"}])
    session.close()


def test_the_readme_python_runs(sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert CliRunner().invoke(main, ["label", "data/examples", "-o", "results.jsonl"]).exit_code == 0
    blocks = [block for _, block in docs_python_blocks()]
    classify_block = next(b for b in blocks if 'mast.classify("run.json", model=' in b)
    api_block = next(b for b in blocks if "mast.evaluate(" in b)
    with FakeLLMServer() as server:
        monkeypatch.setenv("MAST_API_BASE", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        exec(compile(classify_block, "README classify", "exec"), {})
    offline = "\n".join(line for line in api_block.splitlines() if "load_mad" not in line)
    namespace: dict[str, object] = {}
    exec(compile(offline, "README api", "exec"), namespace)
    assert "Agreement per mode" in str(namespace["report"])
    assert len(namespace["frame"]) == 9  # type: ignore[arg-type]


PY_NOT_RUN = {
    'jury="openai/gpt-4.1-mini,openai/gpt-4.1"': "a jury of two models and two labelled runs: tests/test_jury.py",
    "mast_scorer(model=": "runs inside a real `inspect eval`: tests/test_inspect.py",
    "ExamplesScripted": "the scripted discovery model: test_the_readme_discover_example_runs_offline_and_prints_what_it_shows",
}
"""Python blocks of the docs that do not run here, by a piece of their text, with the test that covers them."""
PY_LINES_NOT_RUN = {"load_mad(": "a copy of the MAD data set: tests/test_datasets.py"}
"""Lines left out of a block that otherwise runs."""


def docs_python_blocks() -> list[tuple[str, str]]:
    return [(path.relative_to(REPO).as_posix(), block) for path in (README, *DOCS) for block in python_blocks(path)]


def test_every_docs_python_block_is_run_or_excused() -> None:
    blocks = [block for _, block in docs_python_blocks()]
    for marker in (*PY_NOT_RUN, *PY_LINES_NOT_RUN):
        assert any(marker in block for block in blocks), f"no Python block holds {marker!r} any more"


def test_the_docs_python_runs(sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert CliRunner().invoke(main, ["label", "data/examples", "-o", "results.jsonl"]).exit_code == 0
    ran = 0
    with FakeLLMServer() as server:
        monkeypatch.setenv("MAST_API_BASE", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        for where, block in docs_python_blocks():
            if any(marker in block for marker in PY_NOT_RUN):
                continue
            code = "\n".join(line for line in block.splitlines() if not any(m in line for m in PY_LINES_NOT_RUN))
            exec(compile(code, where, "exec"), {})
            ran += 1
    assert ran >= 3 and server.chat_requests


def test_the_readme_discover_example_runs_offline_and_prints_what_it_shows(
        sandbox: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """The offline snippet of "Discover your own failure modes", from a copy of the repository's root."""
    section = (REPO / "docs" / "how-to" / "discover.md").read_text()
    block = re.findall(r"```python\n(.*?)```", section, flags=re.S)[0]
    shown = re.findall(r"```text\n(.*?)```", section, flags=re.S)[0].strip()
    (sandbox / "tests").mkdir()
    shutil.copy(REPO / "tests" / "_discover_fake.py", sandbox / "tests" / "_discover_fake.py")
    for name in ("MAST_MODEL", "MAST_API_BASE", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("sys.path", list(__import__("sys").path))   # the snippet's sys.path entry goes with it
    monkeypatch.delitem(__import__("sys").modules, "_discover_fake", raising=False)
    exec(compile(block, "README discover", "exec"), {})
    assert shown in capsys.readouterr().out
    assert (sandbox / "discovered" / "taxonomy.yaml").is_file()
