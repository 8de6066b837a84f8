"""`mast report` HTML and the `mast evaluate` command line, on the mast-lint judge outputs and gold."""

from __future__ import annotations

import base64
import json
from html.parser import HTMLParser
from pathlib import Path

import pytest
from _data import VALIDATION
from click.testing import CliRunner

from mast.cli import main
from mast.diagnosis import Diagnosis, DiagnosisUsage, FirstFailure, JudgeInfo
from mast.evaluation import read_who_and_when
from mast.evaluation.mad import mastlint_diagnoses
from mast.report import render_report


class Page(HTMLParser):
    """Collects section ids, headings, images and table cells."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.images: list[str] = []
        self.external: list[str] = []
        self.cells: list[str] = []
        self._in_cell = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "section":
            self.sections.append(values.get("id") or "")
        if tag == "img":
            self.images.append(values.get("src") or "")
        # Inline scripts (the per-trace view) are part of the page; anything fetched from elsewhere is not.
        if (tag in ("script", "link") and (values.get("src") or values.get("href"))) or (
            tag == "img" and not (values.get("src") or "").startswith("data:")
        ):
            self.external.append(tag)
        self._in_cell = tag == "td"

    def handle_data(self, data: str) -> None:
        if self._in_cell:
            self.cells.append(data)


def results_file(tmp_path: Path) -> tuple[Path, Path]:
    findings = VALIDATION / "mastlint-mad" / "raw_findings.json"
    diagnoses = mastlint_diagnoses(json.loads(findings.read_text()), model="openai/gpt-test")
    for i, d in enumerate(diagnoses):
        d.usage = DiagnosisUsage(input_tokens=1000 + i, output_tokens=100, cost_usd=0.01 if i else None, llm_calls=1)
        d.first_failure = FirstFailure(step=i % 5, agent="Planner" if i % 2 else "Coder")
    path = tmp_path / "results.jsonl"
    path.write_text("".join(d.model_dump_json() + "\n" for d in diagnoses))
    return path, findings


def test_html_report_has_every_section_and_embedded_figures(tmp_path: Path) -> None:
    results, gold = results_file(tmp_path)
    page = Page()
    page.feed(render_report(results, gold=gold, n_boot=100))
    assert page.sections == ["summary", "cost", "prevalence", "cooccurrence", "first-failure", "agreement", "disagreements",
                             "traces"]
    assert len(page.images) == 5 and not page.external  # prevalence, heatmap, 2 histograms, agreement
    for src in page.images:
        assert base64.b64decode(src.removeprefix("data:image/png;base64,"))[:8] == b"\x89PNG\r\n\x1a\n"
    text = " ".join(page.cells)
    assert "3.2 No or Incomplete Verification" in text and "FN" in text and "FP" in text


def test_html_report_without_gold_and_cost_totals(tmp_path: Path) -> None:
    results, _ = results_file(tmp_path)
    html_text = render_report(results, n_boot=0, title="Judge run <1>")
    page = Page()
    page.feed(html_text)
    assert "agreement" not in page.sections and "disagreements" not in page.sections
    assert "Judge run &lt;1&gt;" in html_text  # titles are escaped
    assert "14,091" in html_text  # input tokens: sum of 1000..1013
    assert "0.1300" in html_text and "1 trace with no known price" in html_text


def test_cli_report_writes_the_page(tmp_path: Path) -> None:
    results, gold = results_file(tmp_path)
    out = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(results), "--gold", str(gold), "-o", str(out), "--n-boot", "50"])
    assert result.exit_code == 0, result.output
    assert out.read_text().startswith("<!DOCTYPE html>") and f"wrote {out}" in result.output


def test_cli_evaluate_table_json_and_judge_vs_judge(tmp_path: Path) -> None:
    results, gold = results_file(tmp_path)
    runner = CliRunner()
    table = runner.invoke(main, ["evaluate", "--pred", str(results), "--gold", str(gold), "--n-boot", "100"])
    assert table.exit_code == 0, table.output
    assert "pooled" in table.output and "0.25" in table.output and "Disagreements (52" in table.output

    as_json = runner.invoke(main, ["evaluate", "--pred", str(results), "--gold", str(gold), "--json", "--n-boot", "0"])
    data = json.loads(as_json.output)
    assert data["pooled"]["tp"] == 20 and data["pooled"]["kappa"] == pytest.approx(0.2483, abs=5e-4)
    assert data["exclusions"]["pred_only_cells"] == 12 and len(data["disagreements"]) == 52

    both = runner.invoke(main, ["evaluate", "--pred", str(results), "--pred", str(gold),
                                "--json", "--n-boot", "0"])
    assert both.exit_code == 0, both.output
    assert json.loads(both.output)["kind"] == "judge-vs-judge" and json.loads(both.output)["pooled"]["kappa"] == 1.0


def test_cli_evaluate_attribution(tmp_path: Path) -> None:
    who = VALIDATION / "who-and-when" / "Hand-Crafted"
    gold = read_who_and_when(who)
    results = tmp_path / "results.jsonl"
    results.write_text("".join(
        Diagnosis(trace_id=r["trace_id"], judge=JudgeInfo(taxonomy_version="mast-v3"),
                  first_failure=FirstFailure(agent=r["agent"], step=int(r["step"]) + 1)).model_dump_json() + "\n"
        for r in gold.to_dict("records")))
    out = CliRunner().invoke(main, ["evaluate", "--attribution", "--pred", str(results), "--gold", str(who), "--json",
                                    "--n-boot", "0", "-k", "1"])
    data = json.loads(out.output)
    assert (data["agent_accuracy"], data["step_accuracy"], data["step_within_k_accuracy"]) == (1.0, 0.0, 1.0)


def test_cli_errors_are_one_line(tmp_path: Path) -> None:
    results, gold = results_file(tmp_path)
    runner = CliRunner()
    usage = runner.invoke(main, ["evaluate", "--pred", str(results)])
    assert usage.exit_code == 2 and usage.output.strip() == "mast: give --pred and --gold, or two --pred to compare judges"
    bad = tmp_path / "bad.csv"
    bad.write_text("trace_id,code,present\nt1,9.9,1\n")
    wrong = runner.invoke(main, ["evaluate", "--pred", str(results), "--gold", str(bad)])
    assert wrong.exit_code == 2 and len(wrong.output.strip().splitlines()) == 1 and "not in taxonomy" in wrong.output
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    report = runner.invoke(main, ["report", str(empty), "-o", str(tmp_path / "x.html")])
    assert report.exit_code == 2 and "no results to report on" in report.output
