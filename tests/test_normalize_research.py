"""Research data sets with ground truth: Who&When (a 25-record sample of the 184) and AEGIS (3 records).

The facts checked are the ones their labels depend on: Who&When's ``mistake_step`` indexes
``history``, so step ``i`` must be ``history[i]`` and its speaker the one the label names; AEGIS labels
agents by name, so the labelled names must find the trace's agents.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _data import TRACES, VALIDATION
from _trace_facts import assert_labels_hidden, check_golden, speakers

from mast.errors import TraceFormatError
from mast.normalize import detect_format, iter_traces, load_trace, load_traces
from mast.trace import Trace

# The six records whose mistake_step speaker is not mistake_agent (listed in the data's MANIFEST; all
# six are in the sample).
INCONSISTENT = {"Algorithm-Generated/14", "Algorithm-Generated/15", "Algorithm-Generated/59",
                "Hand-Crafted/20", "Hand-Crafted/22", "Hand-Crafted/49"}


@pytest.fixture(scope="module")
def who_and_when() -> dict[str, tuple[dict, Trace]]:
    out = {}
    for path in sorted((VALIDATION / "who-and-when").glob("*/*.json")):
        out[f"{path.parent.name}/{path.stem}"] = (json.loads(path.read_text(encoding="utf-8")), load_trace(path))
    return out


def test_every_who_and_when_record(who_and_when: dict[str, tuple[dict, Trace]]) -> None:
    assert len(who_and_when) == 25
    mismatched = set()
    for key, (record, trace) in who_and_when.items():
        assert trace.source.format == "who_and_when" and trace.trace_id == key
        assert trace.framework == ("magentic-one" if key.startswith("Hand-Crafted") else "ag2-captainagent")
        history = record["history"]
        assert len(trace.steps) == len(history)
        assert [s.content for s in trace.steps] == [h["content"] for h in history]  # step i IS history[i]
        assert trace.task == record["question"]
        step = int(record["mistake_step"])
        assert trace.labels["mistake_step"] == step and trace.labels["mistake_agent"] == record["mistake_agent"]
        assert trace.labels["ground_truth"] == record["ground_truth"]
        if trace.steps[step].agent != record["mistake_agent"]:
            mismatched.add(key)
            assert trace.warnings and "label mismatch in the source" in trace.warnings[0]
        else:
            assert not trace.warnings
    assert mismatched == INCONSISTENT


def test_algorithm_generated_group_chat(who_and_when: dict[str, tuple[dict, Trace]]) -> None:
    record, trace = who_and_when["Algorithm-Generated/30"]
    assert speakers(trace) == [h["name"] for h in record["history"]]
    assert trace.steps[0].attributes["raw_role"] == "assistant" and trace.steps[1].attributes["raw_role"] == "user"
    assert [s.kind for s in trace.steps] == ["message", "observation", "message", "message", "message", "observation", "message"]
    assert trace.steps[1].agent == "Computer_terminal"
    prompts = {a.name: a.system_prompt for a in trace.agents}
    assert set(record["system_prompt"]) <= set(prompts) and prompts["Culinary_Expert"] == record["system_prompt"]["Culinary_Expert"]
    assert trace.labels["labels"] == "Factual_Error" and trace.labels["is_correct"] is False
    assert trace.metadata == {"question_ID": record["question_ID"], "level": "1", "subset": "Algorithm-Generated"}
    assert trace.final_output is None  # the group chat states no final answer
    assert_labels_hidden(trace, "incorrectly included 'salt'", "Factual_Error")
    check_golden(trace, "who_and_when_ag_30")


def test_hand_crafted_magentic_one(who_and_when: dict[str, tuple[dict, Trace]]) -> None:
    _, trace = who_and_when["Hand-Crafted/6"]
    assert [(s.kind, s.agent, s.recipient) for s in trace.steps] == [
        ("message", "human", None), ("plan", "Orchestrator", None), ("plan", "Orchestrator", None),
        ("message", "Orchestrator", "WebSurfer"), ("message", "WebSurfer", None), ("plan", "Orchestrator", None),
        ("plan", "Orchestrator", None), ("system", "Orchestrator", None),
    ]
    assert trace.steps[0].role == "user" and [a.name for a in trace.agents] == ["Orchestrator", "WebSurfer"]
    assert trace.steps[3].attributes["raw_role"] == "Orchestrator (-> WebSurfer)"
    assert trace.final_output == "1080000000"  # from the FINAL ANSWER line of the termination step
    assert trace.labels["ground_truth"] == "3080000"
    assert_labels_hidden(trace, "does not verify the information", "3080000")
    _, stale = who_and_when["Hand-Crafted/22"]
    assert stale.labels["mistake_agent"] == "FileSurfer" and stale.steps[4].agent == "WebSurfer"
    check_golden(trace, "who_and_when_hc_6")


def test_who_and_when_as_objects_and_lists() -> None:
    record = json.loads((VALIDATION / "who-and-when/Hand-Crafted/24.json").read_text(encoding="utf-8"))
    alone = load_trace(record)
    assert alone.trace_id == record["question_ID"] and alone.framework == "magentic-one"
    items = list(iter_traces([record, {"history": "not a list", "mistake_agent": "x"}], format="who_and_when"))
    assert isinstance(items[0], Trace) and isinstance(items[1], TraceFormatError) and items[1].record == 1


def test_aegis_records() -> None:
    path = TRACES / "aegis/aegis_jsonl_first3records.jsonl"
    assert detect_format(path)[0].name == "aegis"
    agentverse, dylan, macnet = load_traces(path)
    assert [t.framework for t in (agentverse, dylan, macnet)] == ["agentverse", "dylan", "macnet"]
    assert agentverse.trace_id == "GSM8K_gpt-4o-mini_agentverse_4_ce7fea42" and len(agentverse.steps) == 8
    assert speakers(agentverse) == ["RoleAssigner", "Solver", "Evaluator", "Evaluator", "Solver", "Solver", "Critic", "Evaluator"]
    assert [s.attributes["step"] for s in agentverse.steps] == list(range(1, 9))
    assert agentverse.steps[0].attributes["phase"] == "initialization"
    assert {(f["agent_name"], f["error_type"]) for f in agentverse.labels["faulty_agents"]} == {
        ("Evaluator", "FM-1.1"), ("RoleAssigner", "FM-1.2"), ("Solver", "FM-3.1")}
    assert agentverse.task is not None and agentverse.task.startswith("Leon ordered 3 sets of toy organizers")
    assert agentverse.final_output is not None and dylan.final_output is None  # dylan's record has no final_output
    # dylan labels "assistant1"; the trace says "Assistant1": the label points at the trace's spelling.
    assert dylan.labels["faulty_agents"] == [{"agent_name": "assistant1", "error_type": "FM-3.3",
                                              "injection_strategy": "response_corruption", "trace_agent": "Assistant1"}]
    assert len(macnet.steps) == 10 and {a.name for a in macnet.agents} == {"Node-2", "Node-1", "Node0", "Node1", "Node3"}
    assert {a.name: a.role for a in macnet.agents}["Node0"].startswith("A linguist")
    assert all(a.model == "gpt-4o-mini" for a in macnet.agents)
    assert macnet.metadata["metadata"]["num_agents"] == 10
    for trace in (agentverse, dylan, macnet):
        assert trace.labels["is_injection_successful"] is True and "correct_answer" in trace.labels
        assert_labels_hidden(trace, "injection_strategy", trace.labels["correct_answer"][:40])


def test_aegis_schema_file_is_not_a_trace() -> None:
    with pytest.raises(TraceFormatError, match="no known trace format"):
        load_trace(TRACES / "aegis/aegis_unified_schema.json")


def test_one_odd_aegis_line_does_not_sink_the_file(tmp_path: Path) -> None:
    lines = (TRACES / "aegis/aegis_jsonl_first3records.jsonl").read_text(encoding="utf-8").splitlines()
    odd = json.loads(lines[1])
    odd["input"]["conversation_history"][0]["content"] = {"unexpected": ["shape"]}
    odd["ground_truth"] = "not a dict"
    path = tmp_path / "aegis.jsonl"
    path.write_text("\n".join([lines[0], json.dumps(odd), "{cut", lines[2]]) + "\n", encoding="utf-8")
    items = list(iter_traces(path))
    assert [type(i).__name__ for i in items] == ["Trace", "Trace", "TraceFormatError", "Trace"]
    assert isinstance(items[1], Trace) and items[1].steps[0].content == '{"unexpected":["shape"]}'
    assert isinstance(items[2], TraceFormatError) and items[2].record == 2
