"""mast.analysis on real labels: prevalence, co-occurrence, modes per trace, fatal vs benign, first failures."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _data import VALIDATION

from mast import analysis
from mast.datasets import paper_numbers
from mast.diagnosis import Diagnosis, FirstFailure, JudgeInfo
from mast.errors import EvaluationError
from mast.evaluation import read_who_and_when
from mast.evaluation.labels import to_dataframe
from mast.evaluation.mad import mastlint_diagnoses, mastlint_metadata


def findings() -> Path:
    return VALIDATION / "mastlint-mad" / "raw_findings.json"


def gold_frame() -> pd.DataFrame:
    records = json.loads(findings().read_text())
    return analysis.results_frame(findings(), metadata=mastlint_metadata(records))


def test_prevalence_matches_a_hand_count() -> None:
    records = json.loads(findings().read_text())
    frame = gold_frame()
    prevalence = analysis.prevalence(frame).set_index("code")
    for code in ("1.1", "1.4", "3.2"):
        assessed = [r["gold"]["present"][f"FM-{code}"] for r in records if f"FM-{code}" in r["gold"]["present"]]
        assert prevalence.loc[code, "n_assessed"] == len(assessed)
        assert prevalence.loc[code, "n_present"] == sum(assessed)
    assert prevalence.loc["1.4", "n_assessed"] == 2   # only the two final-round traces kept 1.4
    assert prevalence.loc["3.2", "prevalence"] == pytest.approx(8 / 14)
    low, high = prevalence.loc["3.2", ["low", "high"]]
    assert low < 8 / 14 < high
    assert prevalence.loc["2.4", ["low", "n_present"]].tolist() == [0.0, 0]

    categories = analysis.prevalence(frame, level="category").set_index("code")
    has_fc3 = sum(any(v for k, v in r["gold"]["present"].items() if k.startswith("FM-3")) for r in records)
    assert categories.loc["FC3", "n_present"] == has_fc3
    by_framework = analysis.prevalence(frame, by="mas_name")
    assert set(by_framework["mas_name"]) == {"AG2", "ChatDev", "HyperAgent", "MetaGPT"}
    shares = analysis.category_shares(frame)
    assert shares["share"].sum() == pytest.approx(1.0) and shares["n_labels"].sum() == 42


def test_judge_results_frame_and_cooccurrence() -> None:
    diagnoses = mastlint_diagnoses(json.loads(findings().read_text()))
    frame = analysis.results_frame(diagnoses)
    matrix = analysis.cooccurrence(frame)
    assert np.diag(matrix.to_numpy()).sum() == 50  # the judge's 50 findings
    assert (matrix.to_numpy() == matrix.to_numpy().T).all()
    assert matrix.loc["3.2", "3.2"] == 12 and matrix.loc["3.2", "3.3"] <= 9
    per_trace = analysis.modes_per_trace(frame)
    assert per_trace.loc[0, "mean_modes"] == pytest.approx(50 / 14)


def table7_frame() -> pd.DataFrame:
    """Trace-level rows rebuilt from the paper's Table 7 percentages (ChatDev: 10 successful, 20 failed runs;
    MetaGPT: 12 and 18). Each mode column is rebuilt on its own, so co-occurrence is not preserved; the
    per-mode statistics fatal_vs_benign computes do not depend on it."""
    table = paper_numbers()["table7_occurrence_pct_success_vs_fail"]
    sizes = {"ChatDev Success": 10, "ChatDev Fail": 20, "MetaGPT Success": 12, "MetaGPT Fail": 18}
    rows = []
    for group, n in sizes.items():
        counts = {code: round(pct * n / 100) for code, pct in zip(table["modes"], table[group], strict=True)}
        for i in range(n):
            rows.append({"trace_id": f"{group}-{i}", "framework": group.split()[0],
                         "outcome": "success" if group.endswith("Success") else "failure",
                         **{code: i < k for code, k in counts.items()}})
    return analysis.results_frame(pd.DataFrame(rows))


def test_fatal_vs_benign_reproduces_table7_differences() -> None:
    frame = table7_frame()
    metagpt = analysis.fatal_vs_benign(frame[frame["framework"] == "MetaGPT"], "outcome", n_boot=400, seed=2)
    row = metagpt.set_index("code").loc["3.3"]
    assert (row["prev_failed"], row["prev_success"]) == (pytest.approx(5 / 18), pytest.approx(2 / 12))
    assert row["difference"] == pytest.approx(5 / 18 - 2 / 12)
    assert row["diff_low"] < row["difference"] < row["diff_high"]
    assert row["ratio"] == pytest.approx((5 / 18) / (2 / 12))
    # 1.4 never occurs in successful MetaGPT runs: ratio undefined, not infinite or 0
    assert np.isnan(metagpt.set_index("code").loc["1.4", "ratio"])
    assert metagpt.set_index("code").loc["1.2", "verdict"] == "unseen"
    assert set(metagpt["verdict"]) <= {"fatal", "benign", "inconclusive", "unseen"}
    again = analysis.fatal_vs_benign(frame[frame["framework"] == "MetaGPT"], "outcome", n_boot=400, seed=2)
    pd.testing.assert_frame_equal(metagpt, again)

    per = analysis.modes_per_trace(frame, by="framework", outcome="outcome").set_index("framework")
    assert per.loc["ChatDev", "n_failed"] == 20 and per.loc["ChatDev", "n_success"] == 10
    chatdev = paper_numbers()["table7_occurrence_pct_success_vs_fail"]
    assert per.loc["ChatDev", "mean_modes_failed"] == pytest.approx(sum(chatdev["ChatDev Fail"]) / 100)


def test_outcome_parsing() -> None:
    assert analysis.outcome_success(pd.Series(["PASS", "failed", None, True])).tolist() == [True, False, pd.NA, True]
    assert analysis.outcome_success(pd.Series([0.2, 0.9]), threshold=0.5).tolist() == [False, True]
    with pytest.raises(EvaluationError, match="numeric scores need a threshold"):
        analysis.outcome_success(pd.Series(["0.7"]))
    frame = pd.DataFrame({"trace_id": ["a", "b"], "1.1": [True, False], "outcome": ["failure", "failure"]})
    with pytest.raises(EvaluationError, match="needs failed and successful traces"):
        analysis.fatal_vs_benign(frame, "outcome")


def test_first_failure_histograms() -> None:
    who = read_who_and_when(VALIDATION / "who-and-when")
    diagnoses = [Diagnosis(trace_id=r["trace_id"], judge=JudgeInfo(taxonomy_version="mast-v3"),
                           first_failure=FirstFailure(step=int(r["step"]), agent=r["agent"]))
                 for r in who.to_dict("records")]
    frame = analysis.results_frame(diagnoses, metadata=who[["trace_id", "n_steps"]])
    steps = analysis.first_failure_histogram(frame, "step")
    assert steps["count"].sum() == 25 and steps.set_index("step")["count"].to_dict() == who["step"].value_counts().to_dict()
    agents = analysis.first_failure_histogram(frame, "agent").set_index("agent")["count"]
    assert agents["WebSurfer"] == 6  # the 12 Hand-Crafted records of the sample
    relative = analysis.first_failure_histogram(frame, "relative", bins=5)
    assert relative["count"].sum() == 25 and len(relative) == 5
    with pytest.raises(EvaluationError, match="trace length in a 'length' column"):
        analysis.first_failure_histogram(to_dataframe(diagnoses), "relative", n_steps="length")
