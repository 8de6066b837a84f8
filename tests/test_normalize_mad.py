"""MAD records and the framework logs inside them.

Real data: the four MAST human-labelled records (AG2 and MetaGPT, two log shapes), the 40 AG2 GroupChat
records of mast-lint (both in data/validation/), and the MAST raw-run wrapper (a MetaGPT run written for
these tests in the wrapper's real shape: the upstream sample has no licence). The other frameworks of MAD
(ChatDev, HyperAgent, AppWorld, Magentic-One, OpenManus, AG2 console and YAML dumps) have no real sample
we may ship; the small logs below are written for these tests after the layouts those frameworks print
(as surveyed in the project's trace-format notes), and pin the speaker, recipient,
tool-pairing, task and answer rules.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from _data import VALIDATION
from _trace_facts import assert_labels_hidden, check_golden, speakers, unpaired

from mast.errors import TraceFormatError
from mast.normalize import _mad_logs, detect_format, iter_traces, load_trace, load_traces
from mast.normalize.base import RawInput
from mast.trace import Trace

NORMALIZE_DATA = Path(__file__).parent / "data" / "normalize"  # fixtures written for mast

# --- real records ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def human() -> list[Trace]:
    path = VALIDATION / "mad-human/mad_human_sample_4records.json"
    fmt, confidence = detect_format(path)
    assert (fmt.name, confidence) == ("mad", 1.0)
    return load_traces(path)


def test_human_records_ag2_math_chat(human: list[Trace]) -> None:
    first, second = human[0], human[1]
    assert [t.trace_id for t in human] == ["2", "7", "4", "16"]
    assert first.framework == "ag2" and first.source.variant == "ag2_messages" and first.source.record == 0
    assert speakers(first) == ["mathproxyagent", "assistant"] * 5
    assert [a.name for a in first.agents] == ["mathproxyagent", "assistant"]
    assert first.steps[0].recipient == "assistant" and first.steps[1].recipient == "mathproxyagent"
    assert first.steps[1].attributes["raw_role"] == "user"  # AG2 roles are receiver-relative; name decides
    assert first.task is not None and first.task.startswith("Monica is wrapping Christmas gifts.")
    assert first.final_output is not None and "\\boxed{" in first.final_output
    # MAD keeps AG2 message text as a list of lines: blank lines must survive as paragraph breaks.
    assert "decimals.\nYou can use packages" in first.steps[0].content and "```python\n# your code\n```" in first.steps[0].content
    assert speakers(second) == ["mathproxyagent", "assistant"] * 2
    assert second.final_output is not None and "\\boxed{29}" in second.final_output
    for trace in (first, second):
        assert sorted(trace.labels) == ["annotations", "note", "other_data"]
        assert trace.metadata["round"] in ("Round 1", "Round 2") and trace.metadata["benchmark_name"] == "GSM-Plus"
    assert len(first.labels["annotations"]) == 18 and len(second.labels["annotations"]) == 17
    assert_labels_hidden(first, "annotator_1", "Poor task constraint compliance", "keeps asking to continue", "seed_solution")
    assert_labels_hidden(second, "The agent forgot that 10 cards were refused.")


def test_human_records_metagpt_both_log_shapes(human: list[Trace]) -> None:
    loguru, comm = human[2], human[3]
    assert loguru.source.variant == "metagpt_log" and comm.source.variant == "metagpt_comm_log"
    assert speakers(loguru) == ["SimpleCoder", "SimpleTester", "SimpleReviewer", "SimpleTester", "SimpleReviewer"]
    assert loguru.task == "develop a program that detects palindromes in a text file"
    assert loguru.steps[0].started_at == datetime(2025, 1, 17, 11, 40, 27, 872000, tzinfo=UTC)
    assert loguru.steps[0].attributes["persona"] == "Alice" and loguru.steps[0].attributes["action"] == "SimpleWriteCode"
    assert loguru.steps[2].content == "" and loguru.steps[4].content == ""  # the reviewer really said nothing
    assert loguru.usage is not None and loguru.usage.cost_usd == pytest.approx(0.039)
    assert loguru.metadata["trajectory_fields"]["log_file"] == "logs/21.txt"
    assert speakers(comm) == ["Human", "SimpleCoder", "SimpleTester", "SimpleReviewer", "SimpleTester", "SimpleReviewer"]
    assert [a.name for a in comm.agents] == ["SimpleCoder", "SimpleTester", "SimpleReviewer"]
    assert comm.steps[0].role == "user" and comm.task is not None and comm.task.startswith("The following are multiple choice")
    assert comm.steps[1].content.startswith("def find_answer():")
    assert "Communication Log Ended" not in comm.steps[-1].content
    assert len(comm.labels["annotations"]) == 14
    assert_labels_hidden(comm, "Disobey Task Specification", "annotator_3")
    check_golden(loguru, "mad_human_metagpt_palindromes")


def test_mastlint_ag2_group_chats() -> None:
    folder = VALIDATION / "mastlint-ag2"
    total = 0
    for path in sorted(folder.glob("raw_ag2_records*.json")):
        raw = json.loads(path.read_text(encoding="utf-8"))
        gold = json.loads((folder / path.name.replace("raw_ag2_records", "gold_labels")).read_text(encoding="utf-8"))
        traces = load_traces(path)
        assert [t.trace_id for t in traces] == [r["trace_id"] for r in raw]
        assert {t.trace_id for t in traces} <= set(gold["labels"])  # the gold labels find their traces by id
        for trace, record in zip(traces, raw, strict=True):
            messages = json.loads(record["trace"])["trajectory"]
            assert len(trace.steps) == len(messages)
            assert speakers(trace) == [m["name"] for m in messages]
            assert set(speakers(trace)) <= {"Planner", "Coder", "Tester"} and trace.steps[0].agent == "Planner"
            assert trace.task == "\n".join(json.loads(record["trace"])["problem_statement"])
            assert trace.labels == {}  # these records carry no annotations; gold lives in gold_labels*.json
            assert trace.metadata["round"] == record["round"] and not trace.warnings
        total += len(traces)
    assert total == 40


def test_mast_raw_metagpt_wrapper() -> None:
    path = NORMALIZE_DATA / "metagpt_programdev_wordfreq.json"
    assert detect_format(path)[0].name == "mast_raw"
    trace = load_trace(path)
    assert trace.trace_id == "run-7" and trace.framework == "metagpt"
    assert trace.task == "write a command-line word frequency counter"
    assert speakers(trace) == ["SimpleCoder", "SimpleTester", "SimpleReviewer", "SimpleTester", "SimpleReviewer"]
    assert trace.steps[0].content.startswith("```python\nimport sys\nfrom collections import Counter")
    assert trace.usage is not None and trace.usage.cost_usd == pytest.approx(0.061)
    assert trace.metadata["metagpt_personas"] == {"SimpleCoder": "Alice", "SimpleTester": "Bob", "SimpleReviewer": "Charlie"}
    check_golden(trace, "mast_raw_metagpt_wordfreq")
    # The same wrapper inside a MAD record (its JSON as the trajectory text) reads the same way.
    record = {"mas_name": "MetaGPT", "trace_id": 7, "trace": {"trajectory": path.read_text(encoding="utf-8")}, "mast_annotation": {"1.3": 1}}
    inside = load_trace(record)
    assert speakers(inside) == speakers(trace) and inside.task == trace.task
    assert [s.content for s in inside.steps] == [s.content for s in trace.steps]


# --- framework logs MAD stores as text (written for these tests; see the module docstring) ----

CHATDEV = """[2025-17-01 10:00:00 INFO] **[Preprocessing]**

**ChatDev Starts** (20250117100000)

**task_prompt**: Build a tip calculator with a GUI.

**project_name**: TipCalc

[2025-17-01 10:00:00 INFO] flask app.py did not start for online log
[2025-17-01 10:00:01 INFO] System: **[chatting]**

| Parameter | Value |
| --- | --- |
| **task_prompt** | Build a tip calculator with a GUI. |
| **assistant_role_name** | Chief Product Officer |
| **user_role_name** | Chief Executive Officer |
| **phase_name** | DemandAnalysis |

[2025-17-01 10:00:01 INFO] Chief Executive Officer: **[Start Chat]**

[ChatDev is a software company. You are Chief Product Officer.]

Decide the product modality for the customer's task.

[2025-17-01 10:00:03 INFO] **[OpenAI_Usage_Info Receive]**
prompt_tokens: 400
completion_tokens: 20
total_tokens: 420
cost: $0.004200

[2025-17-01 10:00:03 INFO] flask app.py did not start for online log
[2025-17-01 10:00:03 INFO] Chief Product Officer: **Chief Product Officer<->Chief Executive Officer on : DemandAnalysis, turn 0**

[ChatDev is a software company. You are Chief Executive Officer.]

An application fits best.
<INFO> Application

[2025-17-01 10:00:04 INFO] **[Seminar Conclusion]**:

 <INFO> Application

[2025-17-01 10:00:05 INFO] Programmer: **Programmer<->Code Reviewer on : CodeReviewModification, turn 0**

[You are Programmer.]

main.py
```python
print("tip")
```
"""

HYPERAGENT = {
    "instance_id": "astropy__astropy-12907",
    "problem_statement": ["separability_matrix gives wrong results for nested compound models"],
    "trajectory": [
        "HyperAgent_astropy__astropy-12907 - INFO - Initialized HyperAgent instance astropy__astropy-12907",
        "HyperAgent_astropy__astropy-12907 - INFO - Initialized tools",
        "HyperAgent_astropy__astropy-12907 - INFO - Planner's Response: Thought: I should look at the separable module first.",
        "Intern Name: Codebase Navigator",
        "Subgoal: Find the _separable function and show its code.",
        "HyperAgent_astropy__astropy-12907 - INFO - Inner-Navigator-Assistant's Response: Thought: open the file.",
        "Action:",
        "```python",
        'result = open_file._run(relative_file_path="astropy/modeling/separable.py", keywords=["_separable"])',
        "print(result)",
        "```",
        "HyperAgent_astropy__astropy-12907 - INFO - Navigator->Planner: The function is defined at line 290.",
        "HyperAgent_astropy__astropy-12907 - INFO - Planner's Response: Thought: Ask the editor to patch it.",
        "Intern Name: Codebase Editor",
        "Subgoal: Replace the right-hand block with the nested matrix.",
        "HyperAgent_astropy__astropy-12907 - INFO - Editor->Planner: Thought: The change was applied.",
        "HyperAgent_astropy__astropy-12907 - INFO - Planner's Response: Final Answer: patched _cstack to keep nested separability.",
    ],
}

APPWORLD = """******************** Task 1/1 (82e2fac_1) ********************
Like all the songs in my Spotify playlist called Road Trip.
Response from Supervisor Agent
    # ask the spotify agent to do it
    send_message(app_name='spotify', message='Like all songs in the Road Trip playlist')
Code Execution Output

    Entering spotify Agent message loop
        Message to spotify Agent
            Like all songs in the Road Trip playlist
        Response from spotify Agent
            print(apis.spotify.show_playlist_library(access_token=token))
        Code Execution Output
            [{"playlist_id": 7, "title": "Road Trip"}]
        Message to Supervisor Agent
            Done: liked 12 songs.
    Exiting spotify Agent message loop

Response from send_message API
    Done: liked 12 songs.
Response from Supervisor Agent
    apis.supervisor.complete_task()
Code Execution Output
    Task completed.
"""

MAGENTIC = """Installing collected packages: requests
Successfully installed requests-2.32.3
SCENARIO.PY STARTING !#!#
---------- user ----------
How many studio albums did Mercedes Sosa publish between 2000 and 2009?
---------- MagenticOneOrchestrator ----------
Please search Wikipedia for the Mercedes Sosa discography.
---------- WebSurfer ----------
I typed 'Mercedes Sosa discography' into the search bar.
---------- ToolCallRequestEvent (Coder) ----------
[FunctionCall(id='call_1', arguments='{"query": "albums"}', name='search')]
---------- ToolCallExecutionEvent (Coder) ----------
[FunctionExecutionResult(content="3 albums, 'Cantora' included", name='search', call_id='call_1', is_error=False)]
---------- MagenticOneOrchestrator ----------
The discography lists three studio albums in that period.
FINAL ANSWER: 3
---------- Summary ----------
Number of messages: 5
Total prompt tokens: 1200
Total completion tokens: 80
SCENARIO.PY COMPLETE !#!#
RUN.SH COMPLETE !#!#
"""

OPENMANUS = """2025-03-20 11:00:00.100 | WARNING  | __main__:main:15 - Processing your request...
2025-03-20 11:00:00.200 | INFO     | app.agent.base:run:140 - Executing step 1/20
2025-03-20 11:00:02.000 | INFO     | app.agent.toolcall:think:81 - ✨ Manus's thoughts: I will compute the sum with Python.
2025-03-20 11:00:02.001 | INFO     | app.agent.toolcall:think:82 - 🛠️ Manus selected 1 tools to use
2025-03-20 11:00:02.002 | INFO     | app.agent.toolcall:think:86 - 🧰 Tools being prepared: ['python_execute']
2025-03-20 11:00:02.003 | INFO     | app.agent.toolcall:think:89 - 🔧 Tool arguments: {"code": "print(2 + 3)"}
2025-03-20 11:00:02.004 | INFO     | app.agent.toolcall:execute_tool:180 - 🔧 Activating tool: 'python_execute'...
2025-03-20 11:00:02.500 | INFO     | app.agent.toolcall:act:150 - 🎯 Tool 'python_execute' completed its mission! Result: Observed output of cmd `python_execute` executed:
{'observation': '5\\n', 'success': True}
2025-03-20 11:00:02.600 | INFO     | app.agent.base:run:140 - Executing step 2/20
2025-03-20 11:00:03.000 | INFO     | app.agent.toolcall:think:81 - ✨ Manus's thoughts: The answer is 5; finishing.
2025-03-20 11:00:03.001 | INFO     | app.agent.toolcall:think:86 - 🧰 Tools being prepared: ['terminate']
2025-03-20 11:00:03.002 | INFO     | app.agent.toolcall:think:89 - 🔧 Tool arguments: {"status": "success"}
2025-03-20 11:00:03.100 | INFO     | app.agent.toolcall:act:150 - 🎯 Tool 'terminate' completed its mission! Result: The interaction has been completed with status: success
2025-03-20 11:00:03.200 | ERROR    | app.llm:ask_tool:260 - API error: rate limited
"""

AG2_CONSOLE = """user_proxy (to assistant):

What is 12 * 7? Use the calculator tool.

--------------------------------------------------------------------------------
assistant (to user_proxy):

***** Suggested tool call (call_abc): calculator *****
Arguments: 
{"a": 12, "b": 7, "op": "*"}
******************************************************

--------------------------------------------------------------------------------

>>>>>>>> EXECUTING FUNCTION calculator...
user_proxy (to assistant):

***** Response from calling tool (call_abc) *****
84
**************************************************

--------------------------------------------------------------------------------
assistant (to user_proxy):

12 * 7 = 84. TERMINATE

--------------------------------------------------------------------------------
"""

AG2_YAML = """instance_id: 6891537b
problem_statement:
- What is 2 + 2?
trajectory:
- content:
  - Let's use Python to solve a math problem.
  - 'Problem: What is 2 + 2?'
  role: assistant
  name: mathproxyagent
- content:
  - The answer is \\boxed{4}.
  role: user
  name: assistant
"""


def mad(mas_name: str, trajectory: Any, **extra: Any) -> dict[str, Any]:
    """A MAD full-set record around ``trajectory``."""
    return {"mas_name": mas_name, "llm_name": "GPT-4o", "benchmark_name": "ProgramDev", "trace_id": 7,
            "trace": {"key": f"{mas_name}_ProgramDev_GPT-4o", "index": 7, "trajectory": trajectory},
            "mast_annotation": {"1.1": 0, "1.3": 1, "3.2": 1}, **extra}


def test_full_record_shape_keeps_labels_apart() -> None:
    trace = load_trace(mad("ChatDev", CHATDEV))
    assert trace.trace_id == "7" and trace.source.format == "mad" and trace.source.variant == "chatdev"
    assert trace.labels == {"mast_annotation": {"1.1": 0, "1.3": 1, "3.2": 1}}
    assert trace.metadata["llm_name"] == "GPT-4o" and trace.metadata["trace_key"] == "ChatDev_ProgramDev_GPT-4o"
    assert all(a.model == "GPT-4o" for a in trace.agents)
    assert_labels_hidden(trace, "3.2")
    assert "mast_annotation" not in trace.to_transcript().text


def test_chatdev_log() -> None:
    trace = load_trace(mad("ChatDev", CHATDEV))
    assert trace.task == "Build a tip calculator with a GUI."
    talk = [s for s in trace.steps if s.kind == "message"]
    assert [(s.agent, s.recipient) for s in talk] == [
        ("Chief Executive Officer", "Chief Product Officer"),
        ("Chief Product Officer", "Chief Executive Officer"),
        ("Programmer", "Code Reviewer"),
    ]
    assert talk[1].content == "An application fits best.\n<INFO> Application"  # echoed role prompt moved out
    assert talk[1].attributes["role_prompt"].startswith("ChatDev is a software company.")
    assert talk[1].attributes["phase"] == "DemandAnalysis" and talk[1].attributes["turn"] == 0
    assert talk[1].usage is not None and talk[1].usage.input_tokens == 400  # the usage block before the reply
    assert trace.usage is not None and trace.usage.cost_usd == pytest.approx(0.0042)
    assert talk[0].started_at == datetime(2025, 1, 17, 10, 0, 1, tzinfo=UTC)  # ChatDev prints day before month
    events = [s.attributes.get("event") for s in trace.steps if s.kind == "system"]
    # The phase table ("chatting") is on the steps that follow, and a seminar conclusion that only
    # repeats the last turn marks that turn: neither is a step of its own.
    assert events == ["Preprocessing"]
    assert talk[1].attributes.get("seminar_conclusion") is True
    assert not any("flask app.py" in s.content for s in trace.steps)
    assert trace.metadata["chatdev_noise_lines_dropped"] == 2
    assert [a.name for a in trace.agents] == ["Chief Executive Officer", "Chief Product Officer", "Programmer"]


def test_chatdev_markdown_log_without_timestamps() -> None:
    text = "\n".join(line.split("INFO] ", 1)[-1] for line in CHATDEV.splitlines())
    trace = load_trace(mad("ChatDev", text))
    assert trace.source.variant == "chatdev" and trace.task == "Build a tip calculator with a GUI."
    assert [s.agent for s in trace.steps if s.kind == "message"] == ["Chief Executive Officer", "Chief Product Officer", "Programmer"]


def test_hyperagent_log_lines() -> None:
    trace = load_trace(mad("HyperAgent", json.dumps(HYPERAGENT)))
    assert trace.source.variant == "hyperagent" and trace.framework == "hyperagent"
    assert trace.task == "separability_matrix gives wrong results for nested compound models"
    assert speakers(trace) == [None, "Planner", "Navigator", "Navigator", "Planner", "Editor", "Planner"]
    assert [s.recipient for s in trace.steps] == [None, "Navigator", None, "Planner", "Editor", "Planner", None]
    assert trace.steps[1].attributes["subgoal"] == "Find the _separable function and show its code."
    assert trace.steps[2].attributes["speaker_label"] == "Inner-Navigator-Assistant"
    assert [c.name for c in trace.steps[2].tool_calls] == ["open_file"]
    assert trace.final_output == "patched _cstack to keep nested separability."
    assert trace.metadata["trajectory_fields"] == {"instance_id": "astropy__astropy-12907"}
    # MAD's full set dumps the same list as indented text; the entries are found the same way.
    dumped = "problem_statement:\n- x\ntrajectory:\n" + "\n".join(f"  - {line}" for line in HYPERAGENT["trajectory"])
    assert speakers(load_trace(mad("HyperAgent", dumped))) == speakers(trace)


def test_appworld_log() -> None:
    trace = load_trace(mad("AppWorld", APPWORLD))
    assert trace.task == "Like all the songs in my Spotify playlist called Road Trip."
    assert trace.metadata["appworld_task_id"] == "82e2fac_1"
    assert speakers(trace) == ["Supervisor", None, "Supervisor", "Spotify", None, "Spotify", None, "Supervisor", None]
    assert [s.recipient for s in trace.steps if s.recipient] == ["Spotify", "Supervisor"]
    outputs = [s for s in trace.steps if s.kind == "observation"]
    assert [s.content for s in outputs] == ["", '[{"playlist_id": 7, "title": "Road Trip"}]', "Done: liked 12 songs.", "Task completed."]
    assert outputs[1].attributes["active_agent"] == "Spotify"


def test_magentic_one_console() -> None:
    trace = load_trace(mad("Magentic", MAGENTIC))
    assert trace.source.variant == "magentic_one"
    assert speakers(trace) == ["user", "MagenticOneOrchestrator", "WebSurfer", "Coder", "Coder", "MagenticOneOrchestrator", None]
    assert trace.task == "How many studio albums did Mercedes Sosa publish between 2000 and 2009?"
    assert trace.final_output == "3"
    call, result = trace.steps[3], trace.steps[4]
    assert call.kind == "tool_call" and call.tool_calls[0].arguments == {"query": "albums"}
    assert result.kind == "tool_result" and result.tool_results[0].output == "3 albums, 'Cantora' included"
    assert unpaired(trace) == (set(), set())
    assert trace.usage is not None and (trace.usage.input_tokens, trace.usage.output_tokens) == (1200, 80)
    assert "Installing collected packages" in trace.metadata["harness_preamble"]
    assert "SCENARIO.PY" not in trace.to_transcript().text


def test_openmanus_log() -> None:
    trace = load_trace(mad("OpenManus", OPENMANUS))
    assert [s.kind for s in trace.steps] == ["system", "message", "tool_result", "message", "tool_result", "error"]
    thought = trace.steps[1]
    assert thought.agent == "Manus" and thought.content == "I will compute the sum with Python."
    assert [(c.name, c.arguments) for c in thought.tool_calls] == [("python_execute", {"code": "print(2 + 3)"})]
    assert trace.steps[2].tool_results[0].call_id == thought.tool_calls[0].id
    assert "'observation': '5\\n'" in trace.steps[2].tool_results[0].output
    assert unpaired(trace) == (set(), set())
    assert thought.attributes["agent_step"] == "1/20" and trace.steps[5].error == "API error: rate limited"
    assert trace.metadata["openmanus_tool_notices_merged"] == 2


def test_ag2_console_and_yaml_dumps() -> None:
    console = load_trace(mad("AG2", AG2_CONSOLE))
    assert console.source.variant == "ag2_console" and console.task == "What is 12 * 7? Use the calculator tool."
    assert [(s.kind, s.agent, s.recipient) for s in console.steps] == [
        ("message", "user_proxy", "assistant"), ("tool_call", "assistant", "user_proxy"),
        ("tool_result", "user_proxy", "assistant"), ("message", "assistant", "user_proxy"),
    ]
    assert console.steps[1].tool_calls[0].arguments == {"a": 12, "b": 7, "op": "*"}
    assert console.steps[2].tool_results[0].output == "84" and unpaired(console) == (set(), set())
    assert console.steps[2].attributes["notices"] == [">>>>>>>> EXECUTING FUNCTION calculator..."]
    dump = load_trace(mad("AG2", AG2_YAML))
    assert dump.source.variant == "ag2_yaml" and dump.task == "What is 2 + 2?"
    assert speakers(dump) == ["mathproxyagent", "assistant"]
    assert dump.steps[0].content == "Let's use Python to solve a math problem.\nProblem: What is 2 + 2?"
    assert dump.final_output == "The answer is \\boxed{4}."
    # The flatter layout (keys at column 0, text indented, blank line between messages) reads the same.
    flat = ("problem_statement:\n    What is 2 + 2?\ntrajectory:\ncontent:\n    Let's use Python.\n    Problem: 2 + 2\n"
            "role: assistant\nname: mathproxyagent\n\ncontent:\n    It is \\boxed{4}.\nrole: user\nname: assistant\n")
    flat_trace = load_trace(mad("AG2", flat))
    assert speakers(flat_trace) == ["mathproxyagent", "assistant"] and flat_trace.task == "What is 2 + 2?"
    assert flat_trace.steps[0].content == "Let's use Python.\nProblem: 2 + 2"


def test_unknown_mas_is_sniffed_from_the_log() -> None:
    # mast-lint's GAIA record names the benchmark as mas_name; the Magentic-One markers still decide.
    trace = load_trace(mad("GAIA", MAGENTIC))
    assert trace.framework == "gaia" and trace.source.variant == "magentic_one" and not trace.warnings


def test_unrecognised_log_falls_back_to_blocks_with_a_warning() -> None:
    text = "first thing happened\n\nsecond thing happened\n\n\nthird"
    trace = load_trace(mad("ChatDev", text))
    assert trace.source.variant == "blocks" and [s.content for s in trace.steps] == ["first thing happened", "second thing happened", "third"]
    assert any("no chatdev log markers recognised" in w and "blank lines" in w for w in trace.warnings)
    ruled = load_trace(mad("SomethingNew", "alpha\n-----\nbeta\n=====\ngamma"))
    assert [s.content for s in ruled.steps] == ["alpha", "beta", "gamma"] and "separator lines" in ruled.warnings[0]


def test_a_crashing_parser_becomes_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(text: str) -> Any:
        raise RuntimeError("boom")

    chatdev = _mad_logs.FRAMEWORK_LOGS["chatdev"]
    monkeypatch.setitem(_mad_logs.FRAMEWORK_LOGS, "chatdev", dataclasses.replace(chatdev, parse=broken))
    trace = load_trace(mad("ChatDev", CHATDEV))
    assert trace.steps and any("chatdev log parser failed (RuntimeError: boom)" in w for w in trace.warnings)


@pytest.mark.parametrize("payload", ["\x00\x01 binary-ish", "x" * 200_000, "{not json", "[1, 2, 3]", '{"a": 1, "b": [2]}'])
def test_odd_trajectories_never_crash(payload: str) -> None:
    items = list(iter_traces([mad("MetaGPT", payload)]))
    assert len(items) == 1
    item = items[0]
    if isinstance(item, TraceFormatError):
        assert "trajectory" in str(item) and "\n" not in str(item)
    else:
        assert item.steps and item.warnings


# --- files: lists, JSONL, broken records, streaming --------------------------------------------


def test_a_broken_record_yields_an_error_beside_the_good_ones(tmp_path: Path) -> None:
    records = [mad("AG2", AG2_CONSOLE), {"mas_name": "AG2", "trace_id": 8, "trace": {"key": "k"}}, mad("OpenManus", OPENMANUS), "oops"]
    path = tmp_path / "mad.json"
    path.write_text(json.dumps(records), encoding="utf-8")
    items = list(iter_traces(path))
    assert [type(i).__name__ for i in items] == ["Trace", "TraceFormatError", "Trace", "TraceFormatError"]
    assert isinstance(items[1], TraceFormatError) and items[1].record == 1 and "no trajectory" in str(items[1])
    assert isinstance(items[3], TraceFormatError) and items[3].record == 3 and "not an object" in str(items[3])
    assert [i.source.record for i in items if isinstance(i, Trace)] == [0, 2]
    with pytest.raises(TraceFormatError, match="#1"):
        load_traces(path)


def test_jsonl_and_truncated_arrays(tmp_path: Path) -> None:
    lines = tmp_path / "mad.jsonl"
    lines.write_text(json.dumps(mad("AG2", AG2_CONSOLE)) + "\n{broken\n" + json.dumps(mad("AppWorld", APPWORLD)) + "\n", encoding="utf-8")
    items = list(iter_traces(lines))
    assert [type(i).__name__ for i in items] == ["Trace", "TraceFormatError", "Trace"]
    assert "line 2" in str(items[1])
    single = tmp_path / "one.json"
    single.write_text(json.dumps(mad("AG2", AG2_CONSOLE), indent=2), encoding="utf-8")
    assert load_trace(single).source.variant == "ag2_console"
    truncated = tmp_path / "cut.json"
    blob = json.dumps([mad("AG2", AG2_CONSOLE), mad("AG2", AG2_YAML), mad("ChatDev", CHATDEV)])
    truncated.write_text(blob[: len(blob) - 200], encoding="utf-8")
    items = list(iter_traces(truncated))
    assert [type(i).__name__ for i in items] == ["Trace", "Trace", "TraceFormatError"]
    assert "#2" in str(items[2]) and "unreadable" in str(items[2])


def test_arrays_are_streamed_and_detected_from_the_head(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = "x" * (70 * 1024)  # the first record alone is longer than the 64 KiB head
    path = tmp_path / "mad_full.json"
    path.write_text(json.dumps([mad("AG2", AG2_CONSOLE, padding=big), mad("ChatDev", CHATDEV)]), encoding="utf-8")

    def no_whole_load(self: RawInput) -> Any:
        raise AssertionError("the MAD array was loaded whole")

    monkeypatch.setattr(RawInput, "data", no_whole_load)
    fmt, confidence = detect_format(path)
    assert (fmt.name, confidence) == ("mad", 1.0)
    traces = load_traces(path)
    assert [t.source.variant for t in traces] == ["ag2_console", "chatdev"]
    assert traces[0].metadata["padding"] == big  # unknown record fields are kept, not dropped


def test_other_files_mentioning_mas_name_are_not_mad() -> None:
    # mast-lint's judge reports quote mas_name inside their gold block but hold no trace.
    for path in (VALIDATION / "mastlint-mad/raw_findings.json", VALIDATION / "mastlint-ag2/raw_judge_results.json"):
        with pytest.raises(TraceFormatError):
            detect_format(path)


@pytest.mark.parametrize(
    ("log", "framework", "first_agents"),
    [
        (CHATDEV, "chatdev", ["Chief Executive Officer", "Chief Product Officer"]),
        (OPENMANUS, "openmanus", ["Manus"]),
        (APPWORLD, "appworld", ["Supervisor", "Spotify"]),
        ("\n".join(HYPERAGENT["trajectory"]), "hyperagent", ["Planner", "Navigator", "Editor"]),
    ],
)
def test_framework_log_files_on_their_own(tmp_path: Path, log: str, framework: str, first_agents: list[str]) -> None:
    path = tmp_path / f"{framework}.log"
    path.write_text(log, encoding="utf-8")
    fmt, confidence = detect_format(path)
    assert (fmt.name, confidence) == ("framework_log", 0.8)
    trace = load_trace(path)
    assert trace.framework == framework and [a.name for a in trace.agents][: len(first_agents)] == first_agents
    assert trace.steps and not trace.warnings


def test_metagpt_log_file_matches_the_wrapped_run(tmp_path: Path) -> None:
    wrapper = json.loads((NORMALIZE_DATA / "metagpt_programdev_wordfreq.json").read_text(encoding="utf-8"))
    path = tmp_path / "1.txt"
    path.write_text(wrapper["content"], encoding="utf-8")
    trace = load_trace(path)
    assert trace.source.format == "framework_log" and trace.framework == "metagpt"
    assert speakers(trace) == ["SimpleCoder", "SimpleTester", "SimpleReviewer", "SimpleTester", "SimpleReviewer"]
