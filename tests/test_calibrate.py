"""mast calibrate: a fixed definition is accepted on test, a dev-only one refused, too few positives said.

The corpus, gold and results are built here; the scripted fake model answers by the schema and the
prompt it carries, through the real litellm path against FakeLLMServer:

- the results the gold was made over: 1.1 and 1.3 never found, 2.1 found in every trace;
- the reviewers: 1.1 in even tickets, 1.3 in tickets divisible by 3, 2.1 in ticket 1 only;
- a proposal call for mode M answers a definition holding ``CALIBRATED-M``, with one example quoted
  from a transcript it was shown and one made up (dropped);
- the judge, seeing ``CALIBRATED-1.1`` in its prompt, finds 1.1 exactly where the reviewers did
  (a real fix); seeing ``CALIBRATED-1.3``, finds 1.3 correctly on dev traces only (it helps dev, not test).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from _discover_fake import schema_of  # noqa: E402

import mast  # noqa: E402
from mast.calibration import CalibrateOptions, CalibrationPlan, CalibrationResult, calibrate  # noqa: E402
from mast.cli import main  # noqa: E402
from mast.evaluation.labels import label_table  # noqa: E402
from mast.gold import GoldEvent, GoldStore, iter_events, label_rows, trace_key  # noqa: E402
from mast.testing import FakeLLMServer, judge_answer  # noqa: E402
from mast.validation.gold import split_traces  # noqa: E402

N = 24
PLANT = "Applying the change to production without the approval ticket"
REPEAT = "Running the same health check again"
_TICKET = re.compile(r"Ticket T(\d+)")
_STEP = re.compile(r"^\[S(\d+)\][^:\n]*:\s?(.*)$", re.MULTILINE)
_MODE_LINE = re.compile(r"^- (\d+\.\d+) ((?!present)[^:\n]+):", re.MULTILINE)


def gold_codes(ticket: int) -> set[str]:
    out = set()
    if ticket % 2 == 0:
        out.add("1.1")
    if ticket % 3 == 0:
        out.add("1.3")
    if ticket == 1:
        out.add("2.1")
    return out


def trace_messages(ticket: int) -> list[dict[str, str]]:
    steps = [
        {"role": "system", "content": f"You are an ops agent. Ticket T{ticket:02d}: restart the api."},
        {"role": "user", "content": f"Please restart the api for ticket {ticket}."},
        {"role": "assistant", "content": f"Reading the runbook for ticket {ticket}."},
    ]
    if "1.1" in gold_codes(ticket):
        steps.append({"role": "assistant", "content": f"{PLANT} (ticket {ticket})"})
    if "1.3" in gold_codes(ticket):
        steps.append({"role": "assistant", "content": f"{REPEAT} (ticket {ticket})"})
    steps.append({"role": "assistant", "content": f"Done with ticket {ticket}."})
    return steps


def _text(body: dict[str, Any], role: str) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages") or [] if m.get("role") == role)


class Fake:
    """The scripted model: proposals by mode, verdicts by the definitions its prompt shows."""

    def __init__(self) -> None:
        self.dev_tickets: set[int] = set()
        self.asked: dict[str, int] = {}

    def __call__(self, body: dict[str, Any]) -> dict[str, Any]:
        schema = schema_of(body)
        if "mast_mode_calibration" in _text(body, "system") or schema == "mast_mode_calibration":
            self.asked["propose"] = self.asked.get("propose", 0) + 1
            return self.propose(body)
        self.asked["judge"] = self.asked.get("judge", 0) + 1
        return self.judge(body)

    def propose(self, body: dict[str, Any]) -> dict[str, Any]:
        user = _text(body, "user")
        code = re.search(r"^Mode (\d+\.\d+) ", user, re.MULTILINE).group(1)  # type: ignore[union-attr]
        examples: list[dict[str, Any]] = []
        current = None
        for line in user.splitlines():
            run = re.match(r"--- run (\S+) \(reviewers: present\)", line)
            if run:
                current = run.group(1)
            step = _STEP.match(line)
            if current and step and (PLANT in step.group(2) or REPEAT in step.group(2)) and not examples:
                quote = PLANT if PLANT in step.group(2) else REPEAT
                examples.append({"trace_id": current, "step": int(step.group(1)), "quote": quote})
        examples.append({"trace_id": current or "nowhere", "step": 1, "quote": "a sentence no trace holds"})
        return {
            "definition": f"CALIBRATED-{code}: the agent <changes> production without the approval the runbook "
            "asks for.",
            "when_to_use": f"CALIBRATED-{code} use: the step says the approval is skipped.",
            "when_not_to_use": "Not when the approval is recorded.",
            "examples": examples,
        }

    def judge(self, body: dict[str, Any]) -> dict[str, Any]:
        system, user = _text(body, "system"), _text(body, "user")
        codes = [c for c, _ in _MODE_LINE.findall(system)]
        match = _TICKET.search(user)
        ticket = int(match.group(1)) if match else -1
        steps = _STEP.findall(user)
        present = ["2.1"]
        if "CALIBRATED-1.1" in system and "1.1" in gold_codes(ticket):
            present.append("1.1")
        if "CALIBRATED-1.3" in system and "1.3" in gold_codes(ticket) and ticket in self.dev_tickets:
            present.append("1.3")
        evidence = {}
        for code in present:
            wanted = {"1.1": PLANT, "1.3": REPEAT}.get(code)
            for step, text in steps:
                if wanted is None or wanted in text:
                    evidence[code] = [(int(step), text[:30])]
                    break
        return judge_answer(present, evidence=evidence, task_completed=False, codes=codes)


def write_inputs(root: Path, server: FakeLLMServer, fake: Fake) -> dict[str, Any]:
    corpus = root / "traces"
    corpus.mkdir()
    ids = {}
    for ticket in range(N):
        path = corpus / f"ticket-{ticket:02d}.json"
        path.write_text(json.dumps(trace_messages(ticket)))
        ids[ticket] = (mast.load_trace(path).trace_id, path)
    judge = {
        "model": "openai/fake-judge",
        "api_base": server.base_url,
        "api_key": "x",
        "cache_dir": root / "cache",
        "price_input": 1.0,
        "price_output": 1.0,
    }
    results = root / "results.jsonl"
    mast.classify_many([corpus], output=results, config=mast.JudgeConfig.from_options(**judge))
    gold = root / "gold.jsonl"
    with GoldStore(gold) as store:
        store.append(
            GoldEvent(
                key=trace_key(str(path), 0, trace_id),
                trace_id=trace_id,
                source_path=str(path),
                field="mode",
                code=code,
                value="present" if code in gold_codes(ticket) else "absent",
                judge="present" if code == "2.1" else "absent",
                reviewer="ana",
            )
            for ticket, (trace_id, path) in ids.items()
            for code in ("1.1", "1.3", "2.1")
        )
    split = split_traces(label_table(label_rows(iter_events(gold))), seed=0)
    by_id = {trace_id: ticket for ticket, (trace_id, _) in ids.items()}
    fake.dev_tickets = {by_id[t] for t, s in split.items() if s == "dev"}
    return {"corpus": corpus, "results": results, "gold": gold, "judge": judge, "ids": by_id}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("calibrate")
    fake = Fake()
    with FakeLLMServer(responder=fake) as server:
        inputs = write_inputs(root, server, fake)
        before = len(server.requests)
        first = calibrate(
            inputs["gold"],
            [inputs["corpus"]],
            root / "out",
            results=inputs["results"],
            n_boot=500,
            **inputs["judge"],
        )
        calls = len(server.requests) - before
        asked = dict(fake.asked)
        again = calibrate(
            inputs["gold"],
            [inputs["corpus"]],
            root / "out",
            results=inputs["results"],
            n_boot=500,
            **inputs["judge"],
        )
        rerun = len(server.requests) - before - calls
        yield {
            "root": root,
            "first": first,
            "again": again,
            "calls": calls,
            "rerun": rerun,
            "server": server,
            "inputs": inputs,
            "asked": asked,
            "fake": fake,
        }


def _mode(result: CalibrationResult | CalibrationPlan, code: str) -> Any:
    assert isinstance(result, CalibrationResult)
    return next(m for m in result.modes if m.code == code)


def test_a_fixed_definition_is_accepted_with_its_test_figures(run: Any) -> None:
    mode = _mode(run["first"], "1.1")
    assert mode.decision == "accepted", mode.reason
    assert mode.dev_disagreements > 0 and mode.dev_false_negatives == mode.dev_disagreements
    test = mode.test
    assert test is not None and test.positives >= 3 and test.negatives >= 3
    assert test.kappa_before == 0.0 and test.kappa_after == 1.0
    assert test.ci_diff is not None and test.ci_diff[0] > 0
    assert "accepted: test kappa 0.00 -> 1.00" in mode.reason
    # One example was quoted from a dev trace and kept; the made-up one was dropped.
    proposal = mode.proposal
    assert proposal is not None and len(proposal.examples) == 1 and proposal.examples_dropped == 1
    example = proposal.examples[0]
    assert example.quote == PLANT and example.trace_id in run["first"].split["dev"]
    # The written taxonomy is the shape `mast discover` writes, loadable by `mast label --taxonomy`.
    path = run["root"] / "out" / "taxonomy.yaml"
    taxonomy = mast.load_taxonomy(path)
    assert taxonomy.version.startswith("mast-v3+calibrated-")
    assert taxonomy.mode("1.1").definition.startswith("CALIBRATED-1.1")
    assert taxonomy.mode("1.1").examples[0].quote == PLANT
    assert taxonomy.mode("1.3").definition == mast.load_taxonomy().mode("1.3").definition
    assert len(taxonomy.modes) == 14
    assert set(yaml.safe_load(path.read_text())) == {"version", "categories", "modes"}


def test_a_change_that_helps_dev_but_not_test_is_refused_and_the_mode_kept(run: Any) -> None:
    mode = _mode(run["first"], "1.3")
    assert mode.decision == "refused", mode.reason
    assert mode.test is not None and mode.test.kappa_after == mode.test.kappa_before == 0.0
    assert mode.test.ci_diff is not None and mode.test.ci_diff[0] <= 0
    assert "refused, kept as before" in mode.reason
    assert mode.proposal is not None and mode.proposal.definition.startswith("CALIBRATED-1.3")


def test_too_small_a_test_split_is_said_not_decided(run: Any) -> None:
    mode = _mode(run["first"], "2.1")
    assert mode.dev_false_positives > 0
    assert mode.decision == "not decided"
    assert mode.reason.startswith("not decided: too few positives in the test split")
    assert mode.test is not None and mode.test.positives < 3
    assert mode.test.kappa_after is None  # not re-judged: nothing spent on a mode that cannot be decided


def test_modes_without_dev_disagreement_are_unchanged_and_calls_are_as_planned(run: Any) -> None:
    result = run["first"]
    others = [m for m in result.modes if m.code not in ("1.1", "1.3", "2.1")]
    assert others and all(m.decision == "unchanged" and m.dev_disagreements == 0 for m in others)
    n_test, n_dev = len(result.split["test"]), len(result.split["dev"])
    # 3 proposals; the test and dev splits judged with the two decidable candidates. Their judgement
    # with the current taxonomy is the one the results were made with: answered from the cache.
    assert run["asked"] == {"propose": 3, "judge": N + 2 * n_test + 2 * n_dev}
    assert result.totals["calls"] == 3 + 2 * n_test + 2 * n_dev
    assert result.totals["cached"] >= n_test + n_dev


def test_the_report_shows_dev_figures_beside_test_and_warns_of_multiple_comparisons(run: Any) -> None:
    result = run["first"]
    fixed, dev_only = _mode(result, "1.1"), _mode(result, "1.3")
    # 1.3's candidate finds the mode on dev traces only: dev improves, test does not, and it is refused.
    assert dev_only.dev is not None and dev_only.test is not None
    assert dev_only.dev.kappa_after > dev_only.dev.kappa_before  # type: ignore[operator]
    assert dev_only.test.kappa_after == dev_only.test.kappa_before and dev_only.decision == "refused"
    assert fixed.dev is not None and fixed.dev.kappa_after > fixed.dev.kappa_before  # type: ignore[operator]
    assert fixed.dev.n_traces == len(result.split["dev"])
    # Two modes were tested on one test split: the difference's CI is also given Bonferroni-widened.
    assert [m.code for m in result.tested] == ["1.1", "1.3"]
    low, high = fixed.test.ci_diff  # type: ignore[union-attr,misc]
    a_low, a_high = fixed.test.ci_diff_adjusted  # type: ignore[union-attr,misc]
    assert a_low <= low and a_high >= high
    page = (run["root"] / "out" / "report.html").read_text()
    assert "dev kappa before → after" in page and "test kappa before [CI]" in page
    dev_cell = f"{fixed.dev.kappa_before:.2f} → {fixed.dev.kappa_after:.2f} ({fixed.dev.n_traces} traces)"
    assert dev_cell in page
    assert "2 modes were tested on the same test split" in page
    assert "Bonferroni (each difference&#x27;s CI at 97.5%)" in page


def test_a_rerun_makes_no_request(run: Any) -> None:
    assert run["calls"] > 0
    assert run["rerun"] == 0
    again = run["again"]
    assert [(m.code, m.decision, m.test) for m in again.modes] == [
        (m.code, m.decision, m.test) for m in run["first"].modes
    ]
    assert again.totals["calls"] == 0


def test_the_report_is_written_and_escaped(run: Any) -> None:
    out = run["root"] / "out"
    data = json.loads((out / "report.json").read_text())
    assert {m["code"]: m["decision"] for m in data["modes"]}["1.1"] == "accepted"
    assert data["multiple_comparisons"].startswith("2 modes were tested on the same test split")
    page = (out / "report.html").read_text()
    assert "&lt;changes&gt;" in page and "<changes>" not in page
    assert "kappa before [CI]" in page


def test_dry_run_makes_no_request_and_prints_an_estimate(run: Any) -> None:
    inputs, server = run["inputs"], run["server"]
    before = len(server.requests)
    judge = inputs["judge"]
    done = CliRunner().invoke(
        main,
        [
            "calibrate",
            str(inputs["gold"]),
            str(inputs["corpus"]),
            "--results",
            str(inputs["results"]),
            "-o",
            str(run["root"] / "dry"),
            "--model",
            judge["model"],
            "--api-base",
            judge["api_base"],
            "--api-key",
            "x",
            "--price-input",
            "1",
            "--price-output",
            "1",
            "--dry-run",
        ],
    )
    assert done.exit_code == 0, done.output
    assert len(server.requests) == before
    assert "3 proposal calls" in done.output and "dry run: nothing was called" in done.output
    assert (
        "re-asks of an invalid answer are not counted" in done.output
    )  # the estimate says what it leaves out
    assert re.search(r"\$\d+\.\d{4}", done.output)
    assert "2.1: " in done.output and "not re-judged" in done.output
    assert not (run["root"] / "dry").exists()


def test_the_cli_runs_from_the_cache_and_a_budget_stop_resumes(run: Any, tmp_path: Path) -> None:
    inputs, server = run["inputs"], run["server"]
    judge = inputs["judge"]
    args = [
        "calibrate",
        str(inputs["gold"]),
        str(inputs["corpus"]),
        "--results",
        str(inputs["results"]),
        "-o",
        str(tmp_path / "cli"),
        "--model",
        judge["model"],
        "--api-base",
        judge["api_base"],
        "--api-key",
        "x",
        "--price-input",
        "1",
        "--price-output",
        "1",
        "--n-boot",
        "500",
        "--cache-dir",
        str(tmp_path / "cache"),
    ]
    before = len(server.requests)
    stopped = CliRunner().invoke(main, [*args, "--budget-usd", "0.0001"])
    assert stopped.exit_code == 1, stopped.output
    assert "stopped: budget" in stopped.output
    assert len(server.requests) == before  # no call fits that budget
    report = json.loads((tmp_path / "cli" / "report.json").read_text())
    assert report["stopped"].startswith("budget")
    done = CliRunner().invoke(main, args)
    assert done.exit_code == 0, done.output
    assert "1.1  accepted" in done.output
    assert "modes were tested on the same test split" in done.output
    # --json carries the same warning the terminal printed (a rerun: every answer from the cache)
    again = CliRunner().invoke(main, [*args, "--json"])
    assert again.exit_code == 0, again.output
    printed = json.loads(again.stdout)
    assert printed["totals"]["calls"] == 0
    assert "modes were tested on the same test split" in printed["multiple_comparisons"]


def test_options_are_checked(run: Any, tmp_path: Path) -> None:
    inputs = run["inputs"]
    with pytest.raises(mast.UsageError, match="LLM judge"):
        calibrate(inputs["gold"], [inputs["corpus"]], tmp_path / "x", judge="detectors")
    with pytest.raises(mast.UsageError, match="not a mode"):
        calibrate(
            inputs["gold"],
            [inputs["corpus"]],
            tmp_path / "x",
            options=CalibrateOptions(modes=("9.9",)),
            **inputs["judge"],
        )


def test_the_fake_server_answers_the_calibration_schema_unscripted() -> None:
    from mast.calibration._llm import PROPOSAL_SCHEMA, ProposalAnswer
    from mast.testing import CALIBRATION_SCHEMA_NAME, default_answer, request_kind

    assert CALIBRATION_SCHEMA_NAME == PROPOSAL_SCHEMA
    structured = {
        "response_format": {"type": "json_schema", "json_schema": {"name": PROPOSAL_SCHEMA}},
        "messages": [],
    }
    json_mode = {"messages": [{"role": "user", "content": f"Answer as JSON of schema {PROPOSAL_SCHEMA}."}]}
    for body in (structured, json_mode):
        assert request_kind(body) == "calibration"
        ProposalAnswer.model_validate(default_answer(body))  # what mast calibrate parses
