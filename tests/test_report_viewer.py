"""The per-trace view of `mast report`: data, highlighting, and the page driven in a real Chromium.

The browser tests use Playwright's Python package with a system Chromium (`executable_path`): Debian's
`chromium` package (`apt-get install -y chromium`, which `.ci/run` does) or any binary named by
`MAST_CHROMIUM`. Without one they skip and say how to get one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mast.cli import main
from mast.diagnosis import Diagnosis
from mast.evaluation.labels import read_diagnoses
from mast.evaluation.viewer import PAGE_ROWS, STEP_CHARS, _cap, locate, trace_view_section

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "data" / "examples"


@pytest.fixture(scope="module")
def labelled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The examples labelled offline by the detectors (sources point at data/examples)."""
    out = tmp_path_factory.mktemp("viewer") / "results.jsonl"
    result = CliRunner().invoke(main, ["label", str(EXAMPLES), "-o", str(out), "--judge", "detectors"])
    assert result.exit_code == 0, result.output
    return out


def _embedded(page: str) -> list[dict]:
    found = re.search(r"<script type='application/json' id='mast-traces'>(.*?)</script>", page, re.S)
    assert found, "the page has no embedded trace data"
    return json.loads(found.group(1))


def test_locate_ignores_whitespace_and_reports_absence():
    text = "Coder: import  pandas\nas pd and more"
    start, end = locate(text, "import pandas as pd")
    assert text[start:end] == "import  pandas\nas pd"
    assert locate(text, "import numpy") is None
    assert locate(text, "   ") is None


def test_long_steps_are_cut_visibly_but_keep_every_highlight():
    text = "a" * STEP_CHARS + "NEEDLE" + "b" * STEP_CHARS
    span = locate(text, "NEEDLE")
    capped, spans = _cap(text, [span])
    assert len(capped) < len(text) and "chars cut" in capped
    (start, end), = spans
    assert capped[start:end] == "NEEDLE"


def test_section_embeds_transcripts_with_quotes_located_in_the_cited_step(labelled):
    diagnoses = read_diagnoses(labelled)
    rows = _embedded(trace_view_section(diagnoses))
    assert len(rows) == len(diagnoses) == 9
    checked = 0
    for row in rows:
        steps = {s["i"]: s for s in row["steps"]}
        assert steps, f"{row['id']}: no transcript"
        for mode in row["modes"]:
            for evidence in mode["evidence"]:
                if not evidence["verified"]:
                    continue
                step = steps[evidence["step"]]
                marked = [step["text"][s:e] for s, e in step["marks"]]
                assert any(" ".join(m.split()) == " ".join(evidence["quote"].split()) for m in marked)
                checked += 1
    assert checked >= 5  # the planted failures cite quotes in several traces


def test_a_missing_source_keeps_the_verdicts_and_says_why(labelled, tmp_path):
    diagnosis = read_diagnoses(labelled)[0]
    # Every place the result records is gone (the absolute path alone would still find the file).
    gone = {"path": str(tmp_path / "gone.json"), "absolute_path": None, "results_relative_path": None}
    moved = diagnosis.model_copy(update={"source": diagnosis.source.model_copy(update=gone)})
    (row,) = _embedded(trace_view_section([moved]))
    assert row["steps"] == [] and "source file not found" in row["note"]
    assert row["modes"] == _embedded(trace_view_section([diagnosis]))[0]["modes"]


def test_the_terminal_says_once_how_many_traces_are_shown_without_their_transcript(labelled, tmp_path):
    diagnoses = read_diagnoses(labelled)
    gone = {"path": str(tmp_path / "gone.json"), "absolute_path": None, "results_relative_path": None}
    moved = [d.model_copy(update={"source": d.source.model_copy(update=gone)}) for d in diagnoses[:2]]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(d.model_dump_json() + "\n" for d in [*moved, *diagnoses[2:]]))
    done = CliRunner().invoke(main, ["report", str(results), "-o", str(tmp_path / "r.html"), "--n-boot", "0"])
    assert done.exit_code == 0, done.output
    (line,) = [text for text in done.stderr.splitlines() if "without a transcript" in text]
    assert line.startswith("mast: 2 traces shown without a transcript; the first: ") and "gone.json" in line
    whole = CliRunner().invoke(main, ["report", str(labelled), "-o", str(tmp_path / "w.html"), "--n-boot", "0"])
    assert whole.exit_code == 0 and "without a transcript" not in whole.stderr, whole.output


def test_a_record_that_no_longer_reads_hides_only_its_own_transcript(tmp_path):
    runs = tmp_path / "runs.jsonl"
    lines = [
        json.dumps({"messages": [{"role": "user", "content": f"Task {n}: deploy"},
                                 {"role": "assistant", "content": f"Deployed {n}."}]})
        for n in range(3)
    ]
    runs.write_text("\n".join(lines) + "\n")
    results = tmp_path / "results.jsonl"
    assert CliRunner().invoke(main, ["label", str(runs), "-o", str(results), "--judge", "detectors"]).exit_code == 0
    lines[1] = lines[1][:30]  # the second run's line is cut after judging
    runs.write_text("\n".join(lines) + "\n")
    rows = _embedded(trace_view_section(read_diagnoses(results)))
    assert [bool(r["steps"]) for r in rows] == [True, False, True]
    assert "record 1 no longer reads" in rows[1]["note"] and "not valid JSON" in rows[1]["note"]


def test_the_judges_warnings_are_on_the_page_escaped(labelled):
    diagnosis = read_diagnoses(labelled)[0]
    warning = "detectors flagged 1.3 (S4) but the LLM judged it absent <img src=x onerror=alert(1)>"
    (row,) = _embedded(trace_view_section([diagnosis.model_copy(update={"warnings": [warning]})]))
    assert row["warnings"] == [warning]
    assert "`<p class=\"note warning\">warning: ${esc(w)}</p>`" in trace_view_section([diagnosis])


def test_gold_votes_sit_next_to_the_prediction(labelled, tmp_path):
    report = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["report", str(labelled), "--gold", str(EXAMPLES / "gold.csv"),
                                       "-o", str(report), "--n-boot", "0"])
    assert result.exit_code == 0, result.output
    rows = _embedded(report.read_text())
    golds = [m["gold"] for r in rows for m in r["modes"] if m["gold"] is not None]
    assert golds and all(isinstance(v, list) and v for v in golds)


# --- in a real browser -------------------------------------------------------------------------------


def _chromium() -> str | None:
    named = os.environ.get("MAST_CHROMIUM")
    if named:
        return named
    return next((p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))), None)


@pytest.fixture(scope="module")
def browser(labelled):
    # Playwright's sync API keeps an event loop running in this thread, so the results it reads are
    # labelled first (asyncio.run cannot start inside it).
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (in the test extra)")
    executable = _chromium()
    if executable is None:
        pytest.skip("no Chromium found: `apt-get install -y chromium` (Debian) or set MAST_CHROMIUM to a binary")
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox", "--headless=new"])
        try:
            yield instance
        finally:
            instance.close()


def _open(browser, path: Path):
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("request", lambda req: errors.append(f"request to {req.url}") if not req.url.startswith(("file:", "data:")) else None)
    page.goto(path.as_uri())
    return page, errors


def _screenshot(page, name: str, tmp_path: Path) -> None:
    """The docs' pictures of the report (docs/img/), retaken with MAST_UPDATE_GOLDEN=1."""
    docs = Path(__file__).resolve().parent.parent / "docs" / "img"
    target = docs / name if os.environ.get("MAST_UPDATE_GOLDEN") else tmp_path / name
    page.screenshot(path=str(target))
    assert target.stat().st_size > 1000
    assert (docs / name).is_file(), f"docs/img/{name} is missing: run this test with MAST_UPDATE_GOLDEN=1"


def test_filter_open_and_highlight_in_chromium(browser, labelled, tmp_path):
    report = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(labelled), "--gold", str(EXAMPLES / "gold.csv"),
                                       "-o", str(report), "--n-boot", "0"])
    assert result.exit_code == 0, result.output
    diagnoses = read_diagnoses(labelled)
    with_13 = {d.trace_id for d in diagnoses if "1.3" in d.present_codes}
    assert with_13 and len(with_13) < len(diagnoses)

    page, errors = _open(browser, report)
    page.set_viewport_size({"width": 1280, "height": 900})
    _screenshot(page, "report.png", tmp_path)
    assert page.locator("#trace-table tbody tr").count() == len(diagnoses)
    page.select_option("#f-mode", "1.3")
    shown = page.locator("#trace-table tbody tr")
    assert {shown.nth(i).get_attribute("data-id") for i in range(shown.count())} == with_13
    assert page.inner_text("#f-count") == f"{len(with_13)} of {len(diagnoses)} traces"

    trace_id = shown.nth(0).get_attribute("data-id")
    shown.nth(0).click()
    page.wait_for_selector("#trace-detail:not([hidden])")
    diagnosis = next(d for d in diagnoses if d.trace_id == trace_id)
    verdict = next(v for v in diagnosis.failure_modes if v.code == "1.3")
    evidence = next(e for e in verdict.evidence if e.verified)
    marks = page.locator(f"#trace-detail .step[data-step='{evidence.step}'] mark")
    assert marks.count() >= 1
    assert " ".join(marks.first.inner_text().split()) == " ".join(evidence.quote.split())
    page.locator("#trace-detail").scroll_into_view_if_needed()
    _screenshot(page, "trace-view.png", tmp_path)
    assert "present" in page.inner_text("#trace-detail tr[data-code='1.3']")
    assert page.locator("#trace-first-failure").count() == (1 if diagnosis.first_failure else 0)
    assert errors == []


def test_two_thousand_traces_page_and_filter(browser, labelled, tmp_path):
    base = read_diagnoses(labelled)
    many: list[Diagnosis] = [
        d.model_copy(update={"trace_id": f"{d.trace_id}-{n}"}) for n in range(2000 // len(base) + 1) for d in base
    ][:2000]
    report = tmp_path / "big.html"
    from mast.report import write_report

    write_report(many, report, n_boot=0)
    page, errors = _open(browser, report)
    assert page.locator("#trace-table tbody tr").count() == PAGE_ROWS
    assert page.inner_text("#page") == f"page 1 of {2000 // PAGE_ROWS}"
    page.click("#next")
    assert page.inner_text("#page") == f"page 2 of {2000 // PAGE_ROWS}"
    page.select_option("#f-status", "judged")
    expected = sum(d.status == "judged" for d in many)
    assert page.inner_text("#f-count") == f"{expected} of 2000 traces"
    page.goto(report.as_uri() + "#trace=" + many[-1].trace_id)
    page.wait_for_selector("#trace-detail:not([hidden])")
    assert many[-1].trace_id in page.inner_text("#trace-detail h3")
    assert errors == []


def test_first_failure_without_agent_file_names_and_disagreement_links_in_chromium(browser, labelled, tmp_path):
    """Issue 27.13: no "agent ," when no agent is named; file names beside ids; disagreements link to the view."""
    from mast.diagnosis import FirstFailure

    results = tmp_path / "results.jsonl"
    diagnoses = read_diagnoses(labelled)
    first = diagnoses[0].model_copy(update={"first_failure": FirstFailure(step=2, agent=None, code="1.3",
                                                                          explanation="said twice")})
    results.write_text("".join(d.model_dump_json() + "\n" for d in [first, *diagnoses[1:]]))
    # A gold that disagrees with the judge on 3.1 for every trace: each becomes a disagreement row.
    gold = tmp_path / "gold.csv"
    verdicts = {d.trace_id: next(v.present for v in d.failure_modes if v.code == "3.1") for d in diagnoses}
    gold.write_text("trace_id,3.1\n" + "".join(f"{t},{0 if p else 1}\n" for t, p in verdicts.items() if p is not None))
    report = tmp_path / "report.html"
    made = CliRunner().invoke(main, ["report", str(results), "--gold", str(gold), "-o", str(report), "--n-boot", "0"])
    assert made.exit_code == 0, made.output
    page, errors = _open(browser, report)
    row = page.locator(f"#trace-table tbody tr[data-id='{first.trace_id}']")
    assert Path(first.source.path).name in row.inner_text()  # the file name beside the id
    assert "?" not in row.inner_text()
    row.click()
    page.wait_for_selector("#trace-detail:not([hidden])")
    line = page.inner_text("#trace-first-failure")
    assert "agent" not in line and line.startswith("First failure: step 2, 1.3: said twice")
    link = page.locator("#disagreements a[href^='#trace=']").first
    wanted = link.inner_text()
    link.click()
    page.wait_for_function("document.querySelector('#trace-detail') && !document.querySelector('#trace-detail').hidden")
    assert wanted in page.inner_text("#trace-detail")
    assert errors == []
