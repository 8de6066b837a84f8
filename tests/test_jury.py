"""Juries and repeated judging through the real litellm path, against a FakeLLMServer that disagrees on purpose."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from click.testing import CliRunner

import mast
from mast.cli import main
from mast.diagnosis import Diagnosis
from mast.errors import UsageError
from mast.judge.jury import Jury, parse_jury
from mast.judge.reduce import agreement, decide, parse_reducer
from mast.taxonomy import load_taxonomy
from mast.testing import FakeLLMServer, Reply, judge_answer
from mast.trace import Step, ToolCall, ToolResult, Trace

TAX = load_taxonomy()
ALL = TAX.codes
QUOTE = "ls -la ./logs"


pytestmark = pytest.mark.usefixtures("fast_backoff")


def trace(trace_id: str = "jury-t1") -> Trace:
    return Trace(
        trace_id=trace_id,
        task="Count the files in ./logs larger than 1 MB.",
        steps=[
            Step(index=0, agent="user", role="user", content="Count the files in ./logs larger than 1 MB."),
            Step(index=1, agent="assistant", kind="tool_call", tool_calls=[ToolCall(name="shell", arguments={"cmd": QUOTE})]),
            Step(index=2, agent="shell", kind="tool_result", tool_results=[ToolResult(output="no such directory", is_error=True)]),
            Step(index=3, agent="assistant", kind="tool_call", tool_calls=[ToolCall(name="shell", arguments={"cmd": QUOTE})]),
            Step(index=4, agent="shell", kind="tool_result", tool_results=[ToolResult(output="no such directory", is_error=True)]),
            Step(index=5, agent="assistant", content="There are 3 large files in ./logs."),
        ],
        final_output="There are 3 large files in ./logs.",
    )


# Three jurors that disagree in known ways; "always" says every mode is present.
ANSWERS = {
    "juror-a": judge_answer(
        ["1.3", "3.1"], evidence={"1.3": [(3, QUOTE)], "3.1": [(5, "There are 3 large files")]},
        first_failure={"step": 3, "agent": "assistant", "code": "1.3", "explanation": "repeats the command"},
    ),
    "juror-b": judge_answer(
        ["1.3", "2.6"], evidence={"1.3": [(3, QUOTE), (4, "a quote that is not in the trace")]},
        first_failure={"step": 3, "agent": "assistant", "code": "1.3", "explanation": "same failing call"},
    ),
    "always": judge_answer(ALL, first_failure={"step": 1, "agent": "assistant", "code": "1.1", "explanation": "x"}),
}


def by_model(body: dict[str, Any]) -> Any:
    return ANSWERS[str(body["model"])]


def options(server: FakeLLMServer, **extra: Any) -> dict[str, Any]:
    values: dict[str, Any] = {
        "api_base": server.base_url, "api_key": "test-key", "timeout": 5.0, "max_retries": 1, "max_reasks": 0,
        "hints": False, "cache": False,
    }
    values.update(extra)
    return values


JURY = "openai/juror-a,openai/juror-b,openai/always"


def test_three_jurors_with_one_always_present_give_the_majority_votes_and_kappa() -> None:
    with FakeLLMServer(by_model) as server:
        d = mast.classify(trace(), jury=JURY, **options(server))
    assert len(server.chat_requests) == 3
    assert d.status == "judged" and d.judge.kind == "jury"
    assert d.present_codes == ["1.3", "2.6", "3.1"]
    votes = {v.code: (v.votes.present, v.votes.absent) for v in d.failure_modes if v.votes}
    assert votes["1.3"] == (3, 0) and votes["3.1"] == (2, 1) and votes["2.6"] == (2, 1)
    assert all(votes[c] == (1, 2) for c in ALL if c not in ("1.3", "2.6", "3.1"))
    assert d.verdict("3.1").votes.present_by == ["openai/juror-a", "openai/always"]  # type: ignore[union-attr]
    assert d.verdict("3.1").confidence == pytest.approx(2 / 3)
    assert d.verdict("1.1").present is False and d.verdict("1.1").confidence == pytest.approx(2 / 3)
    # Evidence: the verified quote once, with both jurors that cited it; the made-up quote is dropped.
    evidence = d.verdict("1.3").evidence
    assert [(e.step, e.quote, e.cited_by) for e in evidence] == [(3, QUOTE, ["openai/juror-a", "openai/juror-b"])]
    # First failure: S3 named by two of three.
    assert d.first_failure is not None and d.first_failure.step == 3 and d.first_failure.code == "1.3"
    # Agreement: 14 modes x 3 jurors, checked against statsmodels' Fleiss kappa.
    from statsmodels.stats.inter_rater import fleiss_kappa

    ratings = np.array([[c in ("1.3", "3.1"), c in ("1.3", "2.6"), True] for c in ALL], dtype=float)
    table = np.column_stack([3 - ratings.sum(axis=1), ratings.sum(axis=1)])
    assert d.jury is not None and d.jury.agreement is not None
    assert d.jury.agreement.fleiss_kappa == pytest.approx(fleiss_kappa(table, method="fleiss"))
    assert d.jury.agreement.fleiss_kappa == pytest.approx(-0.2639, abs=1e-4)
    assert d.jury.agreement.raw == pytest.approx(16 / 42)
    assert d.jury.agreement.unanimous == pytest.approx(1 / 14)
    # Every juror's full verdict is kept; usage is summed.
    assert [v.name for v in d.jury.verdicts] == ["openai/juror-a", "openai/juror-b", "openai/always"]
    assert d.jury.verdicts[2].diagnosis.present_codes == ALL
    assert d.usage.llm_calls == 3
    assert d.usage.input_tokens == sum(v.diagnosis.usage.input_tokens for v in d.jury.verdicts)
    assert d.judge.params["reducer"] == "majority" and d.judge.params["quorum"] == 2


@pytest.mark.parametrize(
    ("reducer", "present"),
    [("any", ALL), ("all", ["1.3"]), ("at_least:2", ["1.3", "2.6", "3.1"])],
)
def test_other_reducers(reducer: str, present: list[str]) -> None:
    with FakeLLMServer(by_model) as server:
        d = mast.classify(trace(), jury=JURY, reducer=reducer, **options(server))
    assert d.present_codes == present


def test_reducer_rules_and_tie() -> None:
    assert decide("majority", 0, 2, 2) == (False, True)
    assert decide("majority", 0, 0, 0) == (None, False)
    assert decide("at_least", 3, 2, 5) == (False, False)
    assert parse_reducer("at-least:3") == ("at_least", 3)
    with pytest.raises(UsageError, match="unknown reducer"):
        parse_reducer("most")
    assert agreement(np.ones((3, 2)))[2] is None  # every vote the same: kappa undefined


def test_a_failing_juror_is_outvoted_by_the_quorum_and_named() -> None:
    def responder(body: dict[str, Any]) -> Any:
        return Reply(status=500) if body["model"] == "always" else ANSWERS[str(body["model"])]

    with FakeLLMServer(responder) as server:
        d = mast.classify(trace(), jury=JURY, **options(server))
        assert d.status == "judged" and d.jury is not None
        assert d.jury.answered == ["openai/juror-a", "openai/juror-b"]
        assert d.jury.failed and d.jury.failed[0].startswith("openai/always: error")
        assert d.present_codes == ["1.3"]  # 3.1 and 2.6 tie 1-1: absent
        assert d.verdict("3.1").votes.tie  # type: ignore[union-attr]
        assert any("tied 1-1" in w for w in d.warnings)

        failed = mast.classify(trace(), jury=JURY, quorum=3, raise_on_error=False, **options(server))
        assert failed.status == "error" and failed.error is not None
        assert "2 of 3 jurors answered, quorum is 3" in failed.error.message and "openai/always" in failed.error.message
        with pytest.raises(mast.JudgeError, match="quorum is 3"):
            mast.classify(trace(), jury=JURY, quorum=3, **options(server))


def test_samples_need_a_temperature_and_vote_per_seed() -> None:
    with pytest.raises(UsageError, match="needs --temperature above 0"):
        Jury(model="openai/fake", samples=3)
    with pytest.raises(UsageError, match="offline detectors"):
        Jury(samples=3, temperature=0.5)

    def by_seed(body: dict[str, Any]) -> Any:
        # Sample 0 (no seed) and seed 1 see the repetition; seed 2 does not.
        return judge_answer([] if body.get("seed") == 2 else ["1.3"])

    with FakeLLMServer(by_seed) as server:
        d = mast.classify(trace(), model="openai/fake", samples=3, temperature=0.7, **options(server))
    assert sorted(str(r.body.get("seed")) for r in server.chat_requests) == ["1", "2", "None"]
    assert d.judge.strategy == "samples"
    assert d.present_codes == ["1.3"]
    assert d.verdict("1.3").votes.present == 2 and d.verdict("1.3").confidence == pytest.approx(2 / 3)  # type: ignore[union-attr]
    assert [v.name for v in d.jury.verdicts] == ["openai/fake@0", "openai/fake@1", "openai/fake@2"]  # type: ignore[union-attr]


def test_rerun_with_two_more_samples_makes_two_new_calls_per_trace(tmp_path: Path) -> None:
    traces = [trace("jury-a"), trace("jury-b")]
    with FakeLLMServer(lambda body: judge_answer(["1.3"])) as server:
        common = options(server, model="openai/fake", temperature=0.7, cache=True, cache_dir=tmp_path / "cache")
        first = mast.classify_many(traces, samples=3, **common)
        assert len(server.chat_requests) == 6
        server.reset()
        again = mast.classify_many(traces, samples=5, **common)
        assert len(server.chat_requests) == 4  # samples 3 and 4 of each trace
        assert sorted(r.body.get("seed") for r in server.chat_requests) == [3, 3, 4, 4]
    assert all(d.status == "judged" for d in [*first, *again])
    assert [len(d.jury.verdicts) for d in again] == [5, 5]  # type: ignore[union-attr]
    assert [v.diagnosis.usage.cached for v in again[0].jury.verdicts] == [True, True, True, False, False]  # type: ignore[union-attr]


def test_jury_file_with_own_options_and_the_detectors_as_a_juror(tmp_path: Path) -> None:
    spec = tmp_path / "jury.yaml"
    spec.write_text(
        "reducer: any\njurors:\n  - model: openai/juror-a\n    temperature: 0.3\n"
        "  - name: lenient\n    model: openai/juror-b\n  - detectors\n",
        encoding="utf-8",
    )
    parsed = parse_jury(str(spec))
    assert [j.name for j in parsed.jurors] == ["openai/juror-a", "lenient", "detectors"]
    assert parsed.settings == {"reducer": "any"}
    with FakeLLMServer(by_model) as server:
        d = mast.classify(trace(), jury=str(spec), **options(server))
    assert [r.body.get("temperature") for r in server.chat_requests if r.body["model"] == "juror-a"] == [0.3]
    assert d.judge.params["reducer"] == "any" and d.jury is not None
    assert d.jury.verdicts[2].diagnosis.judge.kind == "detectors"
    assert {"1.3", "2.6", "3.1"} <= set(d.present_codes)
    bad = tmp_path / "bad.yaml"
    bad.write_text("jurors:\n  - model: openai/x\n    samples: 2\n", encoding="utf-8")
    with pytest.raises(UsageError, match="unknown option"):
        parse_jury(str(bad))


def test_results_round_trip_and_single_judge_output_is_unchanged(tmp_path: Path) -> None:
    with FakeLLMServer(by_model) as server:
        d = mast.classify(trace(), jury=JURY, **options(server))
        single = mast.classify(trace(), model="openai/juror-a", **options(server))
    assert Diagnosis.model_validate_json(d.model_dump_json()) == d
    flat = orjson.loads(single.model_dump_json())
    assert "jury" not in flat and "votes" not in flat["failure_modes"][0]
    assert all("cited_by" not in e for m in flat["failure_modes"] for e in m["evidence"])


def test_cli_label_with_a_jury_resumes_and_classify_shows_votes(tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    for name in ("one", "two"):
        chat = [{"role": "user", "content": f"Count the files in ./{name} larger than 1 MB."},
                {"role": "assistant", "content": f"I ran {QUOTE} twice; there are 3."}]
        (folder / f"{name}.json").write_bytes(orjson.dumps(chat))
    out = tmp_path / "results.jsonl"
    with FakeLLMServer(by_model) as server:
        args = ["--jury", JURY, "--api-base", server.base_url, "--api-key", "k", "--no-hints", "--max-retries", "1"]
        result = CliRunner().invoke(main, ["label", str(folder), "-o", str(out), *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        assert len(server.chat_requests) == 6
        again = CliRunner().invoke(main, ["label", str(folder), "-o", str(out), *args], catch_exceptions=False)
        assert again.exit_code == 0 and len(server.chat_requests) == 6  # resumed: no new call
        shown = CliRunner().invoke(main, ["classify", str(folder / "one.json"), *args], catch_exceptions=False)
    lines = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert len(lines) == 2 and all(line["jury"]["reducer"] == "majority" for line in lines)
    assert "(3/3 votes)" in shown.output and "Fleiss kappa -0.26" in shown.output
    bad = CliRunner().invoke(main, ["classify", str(folder / "one.json"), "--model", "openai/x", "--samples", "2"])
    assert bad.exit_code == 2
    assert bad.output.strip().count("\n") == 0 and "needs --temperature above 0" in bad.output


def test_every_pair_of_jurors_is_compared_only_on_modes_all_assessed() -> None:
    partial = judge_answer(["1.3"], omit=["2.1", "2.2"])
    with FakeLLMServer(lambda body: partial if body["model"] == "juror-b" else ANSWERS[str(body["model"])]) as server:
        d = mast.classify(trace(), jury=JURY, **options(server))
    assert d.jury is not None and d.jury.agreement is not None
    assert d.jury.agreement.n_modes == 12
    assert d.verdict("2.1").votes.not_assessed == 1  # type: ignore[union-attr]
    assert list(itertools.islice(d.jury.jurors, 1)) == ["openai/juror-a"]


# --- evaluating a jury against gold ---------------------------------------------------------------

GOLD = {0: {"1.3"}, 1: {"3.1"}, 2: set(), 3: {"1.3", "2.6"}, 4: {"3.2"}, 5: {"1.1"}}


def _numbered(body: dict[str, Any]) -> Any:
    import re

    number = int(re.search(r"Task number (\d+)", str(body["messages"][-1]["content"])).group(1))  # type: ignore[union-attr]
    truth = GOLD[number]
    if body["model"] == "accurate":
        return judge_answer(truth)
    if body["model"] == "noisy":  # one false alarm on every trace
        return judge_answer(truth | {"2.2"})
    return judge_answer(ALL)


def test_evaluate_scores_each_juror_the_jury_and_their_agreement(tmp_path: Path) -> None:
    import pandas as pd

    from mast.evaluation.jury import evaluate_jury

    traces = [Trace(trace_id=f"g{n}", task=f"Task number {n}: tidy the logs.",
                    steps=[Step(index=0, agent="user", role="user", content=f"Task number {n}: tidy the logs.")])
              for n in GOLD]
    gold = pd.DataFrame([{"trace_id": f"g{n}", "code": c, "present": c in GOLD[n]} for n in GOLD for c in ALL])
    out = tmp_path / "jury.jsonl"
    with FakeLLMServer(_numbered) as server:
        mast.classify_many(traces, jury="openai/accurate,openai/noisy,openai/always", output=out, **options(server))
    report = evaluate_jury(out, gold, n_boot=200)
    names = [s.name for s in report.jurors]
    assert names == ["openai/accurate", "openai/noisy", "openai/always"]
    by_name = {s.name: s.report.pooled for s in report.jurors}
    assert by_name["openai/accurate"].kappa == pytest.approx(1.0)
    assert by_name["openai/always"].kappa is None  # a juror that always says present: kappa not estimable
    assert by_name["openai/noisy"].fp == 6
    # With "always" voting present everywhere, the majority takes on the noisy juror's false alarms.
    assert report.jury.report.pooled.fp == 6 and report.jury.report.pooled.fn == 0
    assert report.best_juror == "openai/accurate" and report.jury_beats_best is False
    assert report.jury.report.pooled.ci["kappa"] is not None
    assert report.inter_juror is not None and report.inter_juror.annotators == sorted(names)
    csv = tmp_path / "gold.csv"
    gold.to_csv(csv, index=False)
    shown = CliRunner().invoke(main, ["evaluate", "--pred", str(out), "--gold", str(csv), "--jurors", "--n-boot", "50"])
    assert shown.exit_code == 0, shown.output
    assert "openai/accurate *" in shown.output and "does not beat its best member" in shown.output
    assert "inter-juror agreement (3 jurors" in shown.output


def test_inter_annotator_agreement_when_one_annotator_skips_some_modes() -> None:
    """A juror that assesses only some modes (the detectors) must not break Fleiss' kappa on the others."""
    from statsmodels.stats.inter_rater import fleiss_kappa

    from mast.evaluation import inter_annotator, label_table

    votes = {"a": [1, 0, 1, 0], "b": [1, 0, 0, 0]}
    rows = [{"trace_id": f"t{i}", "code": "1.1", "present": v, "annotator": name}
            for name, values in votes.items() for i, v in enumerate(values)]
    rows.append({"trace_id": "t0", "code": "1.2", "present": True, "annotator": "c"})  # c never rates 1.1
    agreement = inter_annotator(label_table(rows))
    assert agreement is not None
    mode = agreement.per_mode[0]
    assert mode.code == "1.1" and mode.n_cells_fleiss == 4
    table = np.array([[0, 2], [2, 0], [1, 1], [2, 0]])
    assert mode.fleiss_kappa == pytest.approx(fleiss_kappa(table, method="fleiss"))
    assert mode.unanimous_share == 0.75


def test_samples_from_the_environment_and_a_plain_judge_refuses_them(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MAST_SAMPLES", "3")
    monkeypatch.setenv("MAST_TEMPERATURE", "0.5")
    with FakeLLMServer(lambda body: judge_answer(["1.3"])) as server:
        d = mast.classify(trace(), model="openai/fake", **options(server))
    assert len(server.chat_requests) == 3 and d.judge.params["samples"] == 3
    with pytest.raises(UsageError, match="need mast.judge.jury.Jury"):
        mast.Judge(model="openai/fake")


def test_bad_jury_settings_are_one_line_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="more than the 3 jurors"):
        Jury(jury=JURY, quorum=4)
    with pytest.raises(UsageError, match="unknown reducer"):
        Jury(jury=JURY, reducer="median")
    empty = tmp_path / "empty.yaml"
    empty.write_text("jurors: []\n", encoding="utf-8")
    with pytest.raises(UsageError, match="non-empty `jurors:` list"):
        parse_jury(str(empty))
    assert [j.name for j in parse_jury("openai/a, openai/a,detectors").jurors] == ["openai/a", "openai/a#2", "detectors"]
