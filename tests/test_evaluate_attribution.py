"""Failure attribution against the Who&When sample (25 of the 184 records): agent, exact step, within ±k, with CIs."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from _data import VALIDATION

from mast.diagnosis import Diagnosis, FirstFailure, JudgeInfo, SourceRef
from mast.errors import EvaluationError
from mast.evaluation import evaluate_attribution, read_who_and_when
from mast.evaluation.attribution import agent_key, read_attribution_gold
from mast.trace import Step, Trace


def who_and_when() -> Path:
    return VALIDATION / "who-and-when"


def judged(trace_id: str, agent: str | None, step: int | None, *, path: str | None = None) -> Diagnosis:
    first = None if agent is None and step is None else FirstFailure(agent=agent, step=step)
    return Diagnosis(trace_id=trace_id, judge=JudgeInfo(taxonomy_version="mast-v3"), first_failure=first,
                     source=SourceRef(path=path))


def test_reads_the_25_sample_records_with_integer_steps() -> None:
    gold = read_who_and_when(who_and_when())
    assert len(gold) == 25
    assert gold["subset"].value_counts().to_dict() == {"Algorithm-Generated": 13, "Hand-Crafted": 12}
    row = gold.set_index("trace_id").loc["Hand-Crafted/22"]
    raw = json.loads((who_and_when() / "Hand-Crafted" / "22.json").read_text())
    assert (row["agent"], int(row["step"])) == (raw["mistake_agent"], int(raw["mistake_step"])) == ("FileSurfer", 4)
    assert row["n_steps"] == len(raw["history"]) == 24
    counts = gold[gold["subset"] == "Hand-Crafted"]["agent"].value_counts().to_dict()
    # counted by hand from the MANIFEST tables of the 12 Hand-Crafted records in the sample
    assert counts == {"WebSurfer": 6, "Orchestrator": 3, "Assistant": 2, "FileSurfer": 1}


def test_scores_agent_step_and_tolerance() -> None:
    gold = read_who_and_when(who_and_when())
    rows = gold.to_dict("records")
    diagnoses = []
    for i, row in enumerate(rows):
        agent = row["agent"] if i % 2 == 0 else "SomeoneElse"   # half the agents right
        step = int(row["step"]) + (i % 4)                          # offsets 0, 1, 2, 3 in turn
        diagnoses.append(judged(row["trace_id"], agent, step))
    report = evaluate_attribution(diagnoses, gold, k=1, n_boot=300, seed=3)
    # 25 records: agents right at i = 0, 2, ..., 24 (13); step offset 0 at i % 4 == 0 (7), offset <= 1 (13)
    assert report.n_gold == report.n_evaluated == 25
    assert report.agent_accuracy == pytest.approx(13 / 25)
    assert report.step_accuracy == pytest.approx(7 / 25)
    assert report.step_within_k_accuracy == pytest.approx(13 / 25)
    interval = report.ci["agent_accuracy"]
    assert interval is not None and interval.low < 0.5 < interval.high
    assert evaluate_attribution(diagnoses, gold, k=3, n_boot=0).step_within_k_accuracy == 1.0
    text = report.to_text()
    assert "agent accuracy" in text and "0.535" in text  # the published Who&When best, for comparison


def test_abstentions_missing_predictions_and_path_matching() -> None:
    folder = who_and_when()
    gold = read_who_and_when(folder)
    first = gold.iloc[0]
    diagnoses = [
        # a normaliser that names the trace differently is still matched by its source path
        judged("whatever-id", first["agent"], int(first["step"]), path=str(folder / f"{first['trace_id']}.json")),
        judged(gold.iloc[1]["trace_id"], None, None),                    # judged, no first failure
        judged("not-in-gold", "X", 1),
        judged(gold.iloc[2]["trace_id"], "orchestrator (thought)", None).model_copy(update={"status": "error"}),
    ]
    report = evaluate_attribution(diagnoses, folder, n_boot=0)
    assert (report.n_evaluated, report.n_abstained, report.n_pred_without_gold) == (2, 1, 1)
    assert report.n_without_prediction == 23
    assert report.agent_accuracy == 0.5 and report.step_accuracy == 0.5
    assert [r.status for r in report.rows] == ["predicted", "abstained"]


def test_agent_names_compare_loosely() -> None:
    assert agent_key("Orchestrator (-> WebSurfer)") == agent_key("orchestrator")
    assert agent_key("Verification_Expert") == agent_key("verification expert")
    assert agent_key("WebSurfer") != agent_key("FileSurfer")


def test_gold_from_tables_and_traces(tmp_path: Path) -> None:
    csv = tmp_path / "gold.csv"
    csv.write_text("trace_id,agent,step\nt1,Coder,3\nt2,Tester,\n")
    gold = read_attribution_gold(csv)
    assert gold["step"].tolist()[0] == 3 and pd.isna(gold["step"].tolist()[1])
    report = evaluate_attribution([judged("t1", "coder", 4), judged("t2", "Tester", 9)], csv, n_boot=0)
    assert report.agent_accuracy == 1.0 and report.step_accuracy == 0.0 and report.step_within_k_accuracy == 1.0

    trace = Trace(trace_id="w1", steps=[Step(index=0, kind="message", agent="a", content="hi")],
                  labels={"mistake_agent": "a", "mistake_step": "0"})
    assert read_attribution_gold([trace]).to_dict("records")[0]["step"] == 0
    with pytest.raises(EvaluationError, match="no trace carries attribution labels"):
        read_attribution_gold([Trace(trace_id="x", steps=[])])
    bad = tmp_path / "bad.csv"
    bad.write_text("trace_id,agent,step\nt1,Coder,three\n")
    with pytest.raises(EvaluationError, match="step 'three' is not a whole number"):
        read_attribution_gold(bad)
    with pytest.raises(EvaluationError, match="k must be"):
        evaluate_attribution([], csv, k=-1)


def test_gold_from_normalised_traces_matches_the_raw_records() -> None:
    import mast

    folder = who_and_when()
    raw = read_who_and_when(folder).set_index("trace_id")
    traces = [mast.load_trace(path) for path in sorted(folder.rglob("*.json"))]
    from_traces = read_attribution_gold(traces).set_index("trace_id")
    assert sorted(from_traces.index) == sorted(raw.index)  # the normaliser names traces <subset>/<stem> too
    assert (from_traces["agent"] == raw.loc[from_traces.index, "agent"]).all()
    assert (from_traces["step"] == raw.loc[from_traces.index, "step"]).all()
    # steps are history entries one to one, so a step index means the same thing on both sides
    assert all(len(t.steps) == raw.loc[t.trace_id, "n_steps"] for t in traces)
