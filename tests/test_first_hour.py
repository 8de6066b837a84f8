"""What a new user met in their first hour (issue 13): defects 3-8 and the friction items.

Every trace here is written inline by the test; the judge is the offline detectors or the real
litellm path against :class:`mast.testing.FakeLLMServer`.
"""

from __future__ import annotations

import asyncio
import csv
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import pytest
from click.testing import CliRunner, Result

import mast
from mast.batch import read_results
from mast.cli import main
from mast.diagnosis import Diagnosis, Evidence, FirstFailure, JudgeInfo, ModeVerdict
from mast.taxonomy import load_taxonomy
from mast.testing import FakeLLMServer, Reply

MODEL = "openai/gpt-4o-mini"


def cli(*args: Any) -> Result:
    return CliRunner().invoke(main, [*map(str, args)], catch_exceptions=False)


def chat(i: int, *, repeat: bool = False) -> list[dict[str, str]]:
    """A short chat run; ``repeat`` makes the assistant say the same thing four times (mode 1.3)."""
    turns = [{"role": "user", "content": f"hour task {i}: count the lines in notes.txt"}]
    if repeat:
        turns += [{"role": "assistant", "content": "I will run wc -l notes.txt now."}] * 4
    else:
        turns.append({"role": "assistant", "content": f"notes.txt has {i + 10} lines."})
    return turns


def write_runs(folder: Path, n: int, *, repeat: set[int] = frozenset()) -> Path:  # type: ignore[assignment]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "runs.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(chat(i, repeat=i in repeat)) for i in range(n)) + b"\n")
    return path


def diagnosis(trace_id: str, *, model: str | None = "openai/fake", codes: tuple[str, ...] = (),
              path: str | None = None, record: int | None = None) -> Diagnosis:
    tax = load_taxonomy()
    verdicts = [
        ModeVerdict(code=m.code, name=m.name, category=m.category, present=m.code in codes,
                    confidence=0.8 if m.code in codes else 0.1,
                    explanation=f"why {m.code}", evidence=[Evidence(step=1, quote=f"quote {m.code}")] if m.code in codes else [])
        for m in tax.modes
    ]
    return Diagnosis.model_validate({
        "trace_id": trace_id, "judge": JudgeInfo(kind="llm" if model else "detectors", model=model,
                                                 taxonomy_version=tax.version),
        "failure_modes": verdicts, "summary": f"summary of {trace_id}",
        "first_failure": FirstFailure(step=1, agent="coder", code=codes[0]) if codes else None,
        "source": {"path": path, "record": record},
    })


def write_results(path: Path, items: list[Diagnosis]) -> Path:
    path.write_text("".join(d.model_dump_json() + "\n" for d in items))
    return path


# -- defect 3: attribution without overlap ---------------------------------------------------------


def test_attribution_without_overlap_is_the_one_line_no_overlap_message(tmp_path: Path) -> None:
    pred = write_results(tmp_path / "results.jsonl", [diagnosis("a", codes=("1.3",))])
    gold = tmp_path / "gold.csv"
    gold.write_text("trace_id,agent,step\nb,coder,2\n")
    result = cli("evaluate", "--pred", pred, "--gold", gold, "--attribution")
    assert result.exit_code == 2
    assert "no overlap" in result.stderr and "IndexError" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


# -- defects 4 and 5: which files are read ----------------------------------------------------------


def test_label_never_reads_its_own_output_or_files_named_after_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_runs(tmp_path / "runs", 3)
    monkeypatch.chdir(tmp_path / "runs")
    (tmp_path / "runs" / "out.jsonl.lock").write_text("")
    first = cli("label", ".", "-o", "out.jsonl")
    assert first.exit_code == 0, first.stderr
    again = cli("label", ".", "-o", "out.jsonl")  # out.jsonl now exists beside the traces
    assert again.exit_code == 0, again.stderr
    assert "out.jsonl: file is empty" not in again.stderr
    assert len(read_results(tmp_path / "runs" / "out.jsonl")) == 3
    assert "2 the results file of this run" in again.stderr  # out.jsonl and out.jsonl.lock, said once


def test_skipped_files_are_counted_by_reason_and_no_traces_exits_2(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.md").write_text("user: please fix the build\nassistant: fixed it\n")
    (folder / "b.out").write_text("agent log\n")
    (folder / "README").write_text("what this folder is\n")
    result = cli("label", folder, "-o", tmp_path / "out.jsonl")
    assert result.exit_code == 2
    assert "no traces found in" in result.stderr
    assert "3 not a trace file name (.md, .out, no extension); --include GLOB reads other names" in result.stderr
    assert not (tmp_path / "out.jsonl").exists() or read_results(tmp_path / "out.jsonl") == []

    included = cli("label", folder, "-o", tmp_path / "out.jsonl", "--include", "*.md")
    assert included.exit_code == 0, included.stderr
    assert "skipped 2 files: 2 not a trace file name" in included.stderr
    assert [d.source.path for d in read_results(tmp_path / "out.jsonl")] == [str(folder / "a.md")]

    excluded = cli("normalize", folder, "--include", "*", "--exclude", "b.*")
    assert excluded.exit_code == 0
    assert "1 matched --exclude" in excluded.stderr and "b.out" not in excluded.stdout


def test_normalize_of_an_empty_folder_exits_2_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = cli("normalize", tmp_path / "empty")
    assert result.exit_code == 2
    assert result.stderr.strip() == f"mast: no traces found in {tmp_path / 'empty'}"


# -- defect 6: several judges in one results file -------------------------------------------------------


def test_a_results_file_with_two_judges_is_refused_with_a_hint(tmp_path: Path) -> None:
    items = [diagnosis(f"t{i}", model=None) for i in range(3)] + [diagnosis(f"t{i}") for i in range(3)]
    pred = write_results(tmp_path / "results.jsonl", items)
    gold = tmp_path / "gold.csv"
    gold.write_text("trace_id,code,present\n" + "".join(f"t{i},1.3,false\n" for i in range(3)))
    for args in (["evaluate", "--pred", pred, "--gold", gold], ["report", pred, "-o", tmp_path / "r.html"]):
        result = cli(*args)
        assert result.exit_code == 2, result.output
        assert "mixes 2 judges (detectors: 3, openai/fake: 3)" in result.stderr
        assert "own results file" in result.stderr
    one = write_results(tmp_path / "one.jsonl", items[3:])
    assert cli("report", one, "-o", tmp_path / "r.html").exit_code == 0
    assert "Judge: openai/fake." in (tmp_path / "r.html").read_text()


# -- defect 7: prices for any model ----------------------------------------------------------------------


def test_given_prices_drive_dry_runs_budgets_and_reported_cost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runs = write_runs(tmp_path, 4)
    custom = "openai/my-finetune-without-a-price"
    with FakeLLMServer() as server:
        base = ["-m", custom, "--api-base", server.base_url, "--api-key", "k", "--no-cache"]
        refused = cli("label", runs, "-o", tmp_path / "a.jsonl", *base, "--budget-usd", "1")
        assert refused.exit_code == 2 and "no price per token is known" in refused.stderr
        dry = cli("label", runs, "-o", tmp_path / "a.jsonl", *base, "--dry-run", "--json",
                  "--price-input", "2", "--price-output", "8")
        plan = orjson.loads(dry.stdout)
        expected = (plan["estimated_input_tokens"] * 2 + plan["estimated_output_tokens"] * 8) / 1e6
        assert plan["estimated_cost_usd"] == pytest.approx(expected) and expected > 0
        monkeypatch.setenv("MAST_PRICE_INPUT", "2")
        monkeypatch.setenv("MAST_PRICE_OUTPUT", "8")
        run = cli("label", runs, "-o", tmp_path / "a.jsonl", *base, "--budget-usd", "1", "--json")
        assert len(server.chat_requests) == 4
    assert run.exit_code == 0, run.stderr
    report = orjson.loads(run.stdout.strip().splitlines()[-1])
    results = read_results(tmp_path / "a.jsonl")
    spent = sum((d.usage.input_tokens * 2 + d.usage.output_tokens * 8) / 1e6 for d in results)
    assert report["cost_usd"] == pytest.approx(spent) and report["cost_unknown"] == 0
    assert all(d.usage.cost_usd is not None for d in results)


def test_one_price_alone_is_a_usage_error(tmp_path: Path) -> None:
    result = cli("classify", write_runs(tmp_path, 1), "--price-input", "1")
    assert result.exit_code == 2 and "give both --price-input and --price-output" in result.stderr


# -- defect 8: messages -----------------------------------------------------------------------------------


def test_messages_name_the_cli_flags_and_agree_in_number(tmp_path: Path) -> None:
    odd = tmp_path / "odd.json"
    odd.write_text('{"something": "else"}')
    assert "pass --format NAME" in cli("normalize", odd).stderr

    runs = write_runs(tmp_path, 1)
    normalized = cli("normalize", runs)
    assert "1 agent," in normalized.stdout and "1 agents" not in normalized.stdout

    report = cli("report", write_results(tmp_path / "r.jsonl", [diagnosis("a")]), "-o", tmp_path / "r.pdf")
    assert report.exit_code == 2 and "writes one HTML file" in report.stderr
    assert not (tmp_path / "r.pdf").exists()

    bad = tmp_path / "tax.yaml"
    bad.write_text("version: mine\nmodes:\n  - {code: x, name: y}\n")
    taxonomy = cli("classify", runs, "--taxonomy", bad)
    assert taxonomy.exit_code == 2
    line = taxonomy.stderr.strip().splitlines()[-1]
    assert line == f"mast: taxonomy {bad}: categories: Field required (and 2 more problems)"


def test_evaluation_wording_fits_the_numbers(tmp_path: Path) -> None:
    pred = write_results(tmp_path / "a.jsonl", [diagnosis(f"t{i}", codes=("1.3",) if i % 2 else ()) for i in range(4)])
    gold = tmp_path / "gold.csv"
    gold.write_text("trace_id,code,present\n" + "".join(f"t{i},1.3,{'true' if i % 2 else 'false'}\n" for i in range(4)))
    report = mast.evaluate(pred, gold, n_boot=0)
    text = str(report)
    assert "no confidence intervals (--n-boot 0)" in text and "0 trace resamples" not in text
    perfect = mast.evaluate(pred, gold, n_boot=200)
    assert "intervals are wide" not in str(perfect)  # kappa 1.00 [1.00, 1.00]
    b = write_results(tmp_path / "b.jsonl", [diagnosis(f"t{i}", model="openai/other") for i in range(4)])
    versus = cli("evaluate", "--pred", pred, "--pred", b)
    assert "B%" in versus.stdout and "gold%" not in versus.stdout

    wrong = tmp_path / "long.csv"
    wrong.write_text("id,mode,label\nt1,1.3,true\n")
    result = cli("evaluate", "--pred", pred, "--gold", wrong)
    assert result.exit_code == 2 and "found columns: id, mode, label" in result.stderr


def test_a_judge_error_is_printed_once(tmp_path: Path) -> None:
    with FakeLLMServer(responder=lambda body: Reply(status=400)) as server:
        result = cli("classify", write_runs(tmp_path, 1), "-m", MODEL, "--api-base", server.base_url,
                     "--api-key", "k", "--max-retries", "0", "--no-cache")
    assert result.exit_code == 1
    lines = (result.stdout + result.stderr).splitlines()
    assert sum("HTTP 400" in line for line in lines) == 1, lines


# -- friction: ids, transcript, gold by path -------------------------------------------------------------


def test_normalize_and_classify_show_the_trace_id_and_the_judges_transcript(tmp_path: Path) -> None:
    runs = write_runs(tmp_path, 2)
    ids = [t.trace_id for t in mast.load_traces(runs)]
    listed = cli("normalize", runs)
    assert all(f"id {i}" in listed.stdout for i in ids)
    assert "2 steps, 1 agent," in listed.stdout
    classified = cli("classify", runs)
    assert all(f"id {i}" in classified.stdout for i in ids)
    transcript = cli("normalize", runs, "--transcript")
    assert transcript.exit_code == 0
    assert f"# {ids[0]} (2 steps, S0-S1)" in transcript.stdout
    assert "[S0]" in transcript.stdout and "[S1]" in transcript.stdout and "count the lines" in transcript.stdout


def test_gold_keyed_by_source_path_and_record(tmp_path: Path) -> None:
    runs = write_runs(tmp_path, 3, repeat={1})
    out = tmp_path / "results.jsonl"
    assert cli("label", runs, "-o", out).exit_code == 0
    gold = tmp_path / "gold.csv"
    gold.write_text("path,record,code,present\n" + "".join(
        f"{runs},{i},1.3,{'true' if i == 1 else 'false'}\n" for i in range(3)))
    report = mast.evaluate(out, gold, n_boot=0)
    assert report.n_traces == 3 and report.exclusions.gold_only_traces == 0


# -- friction: results from Python ------------------------------------------------------------------------


def test_diagnosis_and_report_read_well_in_a_repl_and_a_notebook(tmp_path: Path) -> None:
    d = diagnosis("t1", codes=("1.3", "3.2"), path="runs.jsonl", record=4)
    assert str(d) == "runs.jsonl#4: judged, modes 1.3, 3.2; first failure S1 by coder (1.3)"
    assert repr(d) == "Diagnosis(trace_id='t1', status='judged', present=['1.3', '3.2'], first_failure='S1 by coder (1.3)')"
    html = d._repr_html_()
    assert "<table>" in html and "why 1.3" in html and "why 1.1" not in html
    pred = write_results(tmp_path / "a.jsonl", [d])
    gold = tmp_path / "gold.csv"
    gold.write_text("trace_id,code,present\nt1,1.3,true\nt1,3.2,false\n")
    report = mast.evaluate(pred, gold, n_boot=0)
    assert "Agreement per mode" in str(report) and "1.3" in str(report)
    assert repr(report).startswith("EvaluationReport(kind='pred-vs-gold', n_traces=1")


def test_to_dataframe_takes_a_path_and_carries_the_explanations(tmp_path: Path) -> None:
    pred = write_results(tmp_path / "a.jsonl", [diagnosis("t1", codes=("1.3",)), diagnosis("t2")])
    wide = mast.to_dataframe(pred)
    assert list(wide["trace_id"]) == ["t1", "t2"]
    row = wide.set_index("trace_id").loc["t1"]
    assert row["1.3"] is True or bool(row["1.3"])
    assert row["1.3_confidence"] == pytest.approx(0.8) and row["1.3_explanation"] == "why 1.3"
    assert row["1.3_evidence"] == '[S1] "quote 1.3"' and row["summary"] == "summary of t1"
    long = mast.to_dataframe(pred, form="long")
    assert len(long) == 28 and set(long.columns) >= {"code", "present", "confidence", "explanation", "evidence"}
    csv_path = tmp_path / "a.csv"
    assert cli("export", pred, "-o", csv_path).exit_code == 0
    with csv_path.open() as handle:
        header = next(csv.reader(handle))
    assert {"summary", "1.3_confidence", "1.3_explanation", "1.3_evidence"} <= set(header)
    assert cli("export", pred, "-o", tmp_path / "long.parquet", "--long").exit_code == 0
    assert len(pd.read_parquet(tmp_path / "long.parquet")) == 28
    # the evaluation still reads the wide table (the detail columns are not mode columns)
    assert mast.evaluate(wide[["trace_id", "1.3"]].dropna(), wide[["trace_id", "1.3"]].dropna(), n_boot=0).n_traces == 2


def test_classify_works_inside_a_running_event_loop(tmp_path: Path) -> None:
    runs = write_runs(tmp_path, 2, repeat={0})
    one_run = tmp_path / "one.json"
    one_run.write_bytes(orjson.dumps(chat(0, repeat=True)))

    async def notebook_cell() -> tuple[Diagnosis, list[Diagnosis]]:
        return mast.classify(one_run), mast.classify_many([runs])

    one, many = asyncio.run(notebook_cell())
    assert one.status == "judged" and "1.3" in one.present_codes
    assert [d.status for d in many] == ["judged", "judged"]


# -- friction: run control and CI gates -----------------------------------------------------------------


def test_limit_sample_and_trace_id_pick_traces(tmp_path: Path) -> None:
    runs = write_runs(tmp_path, 10)
    ids = [t.trace_id for t in mast.load_traces(runs)]
    assert cli("label", runs, "-o", tmp_path / "l.jsonl", "--limit", "3").exit_code == 0
    assert [d.trace_id for d in read_results(tmp_path / "l.jsonl")] == ids[:3]
    assert cli("label", runs, "-o", tmp_path / "s1.jsonl", "--sample", "4", "--sample-seed", "7").exit_code == 0
    assert cli("label", runs, "-o", tmp_path / "s2.jsonl", "--sample", "4", "--sample-seed", "7").exit_code == 0
    first = [d.trace_id for d in read_results(tmp_path / "s1.jsonl")]
    assert len(first) == 4 and first == [d.trace_id for d in read_results(tmp_path / "s2.jsonl")]
    assert first == [i for i in ids if i in first]  # input order kept
    picked = cli("label", runs, "-o", tmp_path / "t.jsonl", "--trace-id", ids[5], "--trace-id", f"{runs}#8")
    assert picked.exit_code == 0
    assert [d.trace_id for d in read_results(tmp_path / "t.jsonl")] == [ids[5], ids[8]]
    missing = cli("label", runs, "-o", tmp_path / "m.jsonl", "--trace-id", "nope")
    assert missing.exit_code == 2 and "--trace-id 'nope': no such trace" in missing.stderr


def test_fail_on_exits_3_when_a_listed_mode_is_found(tmp_path: Path) -> None:
    runs = write_runs(tmp_path, 3, repeat={2})
    found = cli("label", runs, "-o", tmp_path / "a.jsonl", "--fail-on", "1.3,3.*")
    assert found.exit_code == 3 and "--fail-on: found 1.3" in found.stderr
    assert cli("classify", runs, "--fail-on", "1.*").exit_code == 3
    clean = write_runs(tmp_path / "clean", 2)
    assert cli("classify", clean, "--fail-on", "1.3").exit_code == 0
    assert cli("label", clean, "-o", tmp_path / "b.jsonl", "--fail-on", "1.3").exit_code == 0
    bad = cli("classify", clean, "--fail-on", "9.9")
    assert bad.exit_code == 2 and "--fail-on '9.9': no such mode" in bad.stderr


def test_label_refuses_to_add_a_second_judge_to_a_results_file(tmp_path: Path) -> None:
    runs = write_runs(tmp_path, 2)
    out = tmp_path / "results.jsonl"
    assert cli("label", runs, "-o", out).exit_code == 0  # the offline detectors
    with FakeLLMServer() as server:
        args = ["-m", MODEL, "--api-base", server.base_url, "--api-key", "k", "--no-cache"]
        refused = cli("label", runs, "-o", out, *args)
        assert server.chat_requests == []
        assert refused.exit_code == 2
        assert "holds results of another judge or settings (2 by detectors)" in refused.stderr
        assert "--overwrite" in refused.stderr
        assert cli("label", runs, "-o", out, *args, "--overwrite").exit_code == 0
    assert {d.judge.model for d in read_results(out)} == {MODEL}
