"""What the wild writes, one general rule per failure class, each shown on a real file of ``tests/data/real/`` or a mutation of one.

The classes are the ones real files from public repositories broke (issue 24): native framework logs
refused because one line happened to be JSON, console captures with colour, one odd field aborting
a trace, recorded HTTP in another body encoding, the task and final answer lost in ordinary shapes,
log prefixes read as speakers, one stray byte skipping a file.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from _data import REPO
from _real import REAL, REAL_GOLDEN

from mast.errors import TraceFormatError
from mast.normalize import _vcr, detect_format, load_trace, load_traces
from mast.trace import Trace

LOGS = REPO / "tests" / "data" / "normalize" / "logs"


def _write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


# --- text logs stay text logs -------------------------------------------------------------------


def test_a_text_log_with_a_line_of_valid_json_is_read_as_a_log_and_as_forced_text() -> None:
    path = REAL / "framework_log" / "chatdev_randompick_20231022.log"
    assert '" Finished."' in path.read_text(encoding="utf-8").splitlines()  # a line that alone is valid JSON
    assert detect_format(path)[0].name == "framework_log"
    for fmt in ("auto", "framework_log", "plain_text"):
        trace = load_trace(path, format=fmt)
        assert len(trace.steps) >= 10, fmt
    assert {"Chief Executive Officer", "Programmer"} <= {a.name for a in load_trace(path).agents}


def test_forced_text_formats_read_a_file_that_parses_as_jsonl(tmp_path: Path) -> None:
    lines = [json.dumps({"event": "start"}), json.dumps({"event": "end"})]
    path = _write(tmp_path, "log.txt", "\n".join(lines) + "\n")
    trace = load_trace(path, format="plain_text")
    assert "start" in trace.steps[0].content


# --- console captures ---------------------------------------------------------------------------


def test_ansi_colour_codes_are_removed_before_detection_real_chatdev_log() -> None:
    path = REAL / "framework_log" / "chatdev_gomoku_20230625.log"
    assert b"\x1b[" in path.read_bytes()
    trace = load_trace(path)
    assert trace.source.format == "framework_log" and trace.framework == "chatdev"
    assert not any("\x1b" in s.content or "[32m" in s.content for s in trace.steps)
    assert "Chief Product Officer" in {a.name for a in trace.agents}


CREW_TREE = (
    "\x1b[1m\x1b[95m🚀 Crew: crew\x1b[0m\n"
    "├── \x1b[33m📋 Task: 9f1c2e\x1b[0m\n"
    "│   Status: \x1b[1mExecuting Task...\x1b[0m\n"
    "│   └── 🔧 Used Search the internet (1)\n"
    "└── 🤖 Agent: Market Analyst\n\n"
)
CREW_PANEL = "╭──────── 🤖 Agent Started ────────╮\n│                                │\n│  Agent: Market Analyst         │\n╰────────────────────────────────╯\n"


def _coloured_crewai_console() -> str:
    """The CrewAI verbose layout as a terminal shows it: colours around headers, status trees and panels between blocks."""
    text = (LOGS / "crewai_console.log").read_text(encoding="utf-8")
    for header in ("# Agent:", "## Task:", "## Thought:", "## Using tool:", "## Tool Input:", "## Tool Output:", "## Final Answer:"):
        text = text.replace(header, f"\x1b[1m\x1b[95m{header}\x1b[00m\x1b[92m")
    blocks = text.split("\n\n\n")
    return CREW_PANEL + "\n\n\n".join(CREW_TREE + block for block in blocks) + "\n" + CREW_TREE


def test_crewai_console_capture_with_colour_status_trees_and_panels(tmp_path: Path) -> None:
    plain = load_trace(LOGS / "crewai_console.log")
    path = _write(tmp_path, "crew_run.log", _coloured_crewai_console())
    trace = load_trace(path)
    assert trace.source.format == "framework_log" and trace.framework == "crewai"
    assert [c.name for s in trace.steps for c in s.tool_calls] == ["Search the internet"]
    assert {"Market Analyst", "Editor"} <= {a.name for a in trace.agents}
    assert (trace.task, trace.final_output) == (plain.task, plain.final_output)
    assert [(s.agent, s.content) for s in trace.steps] == [(s.agent, s.content) for s in plain.steps]


# --- odd field types ----------------------------------------------------------------------------


def _retype_call_id(value: Any, target: str) -> Any:
    """Every ``"id"`` / ``"...call.id"`` equal to target, at any depth (JSON inside strings too), turned into a two-element list."""
    if isinstance(value, dict):
        return {k: ([target, "retry-1"] if (k == "id" or k.endswith("call.id")) and v == target else _retype_call_id(v, target))
                for k, v in value.items()}
    if isinstance(value, list):
        return [_retype_call_id(v, target) for v in value]
    if isinstance(value, str) and target in value and value.lstrip()[:1] in ("{", "["):
        try:
            inner = json.loads(value)
        except ValueError:
            return value
        return json.dumps(_retype_call_id(inner, target))
    return value


def test_a_tool_call_id_that_is_a_list_is_kept_as_text_with_a_warning_real_langfuse_export(tmp_path: Path) -> None:
    source = REAL / "langfuse" / "langfuse_koog-2025-08-26.trace.json"
    original = load_trace(source)
    target = next(c.id for s in original.steps for c in s.tool_calls if c.id)
    mutated = _retype_call_id(json.loads(source.read_text(encoding="utf-8")), target)
    assert json.dumps(mutated).count("retry-1") >= 1
    trace = load_trace(_write(tmp_path, "export.trace.json", json.dumps(mutated)))
    assert len(trace.steps) == len(original.steps)
    ids = [c.id or "" for s in trace.steps for c in s.tool_calls]
    assert any(target in i and "retry-1" in i for i in ids), ids  # both values kept, as text
    assert any(".tool_call_id was list" in w or ".id was list" in w for w in trace.warnings), trace.warnings  # the field is named


def test_odd_types_in_any_model_field_are_converted_never_raised() -> None:
    trace = load_trace([
        {"role": "user", "content": "hi", "name": 42},
        {"role": "assistant", "content": "ok", "tool_calls": [{"id": {"v": 1}, "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
    ])
    assert trace.steps[1].tool_calls[0].id == '{"v": 1}'
    assert any("ToolCall.id" in w for w in trace.warnings)


# --- invalid UTF-8 ------------------------------------------------------------------------------


def test_a_stray_byte_is_replaced_with_a_warning_not_a_skipped_file(tmp_path: Path) -> None:
    blob = (REAL / "framework_log" / "chatdev_car_demo_20241221.log").read_bytes()
    second_line = blob.index(b"\n") + 1  # in the role prompt of the first turn
    path = _write(tmp_path, "stray.log", blob[:second_line] + b"\xff\xfe" + blob[second_line:])
    trace = load_trace(path)
    clean = load_trace(REAL / "framework_log" / "chatdev_car_demo_20241221.log")
    assert len(trace.steps) == len(clean.steps) and trace.task is not None and "仔细开发一个赛车小游戏" in trace.task
    assert any("not valid UTF-8" in w for w in trace.warnings)
    assert any("\ufffd" in s.content for s in trace.steps)


def test_a_stray_byte_in_a_yaml_cassette_not_named_yaml_is_replaced_and_the_cassette_kept(tmp_path: Path) -> None:
    # The YAML path decodes like the JSON one; a cassette renamed ("x.yaml.bak", "x.badutf8") is
    # still known by its look (a first line "interactions:"), not lost as plain text.
    blob = (REAL / "crewai" / "crewai_test_delegate_work_2024.yaml").read_bytes()
    middle = len(blob) // 2
    for name in ("stray.yaml", "stray.yaml.badutf8", "stray"):
        trace = load_trace(_write(tmp_path, name, blob[:middle] + b"\xff\xfe" + blob[middle:]))
        assert trace.source.format == "crewai", name
        assert trace.task is not None and "share your take on AI Agents" in trace.task
        assert any("not valid UTF-8" in w for w in trace.warnings)


def test_a_text_file_opening_with_a_bare_key_stays_text(tmp_path: Path) -> None:
    trace = load_trace(_write(tmp_path, "notes", "Task:\nwrite a poem\nAssistant: roses are red\n"))
    assert trace.source.format == "plain_text"


def test_a_cassette_request_body_of_an_unexpected_type_is_converted_with_a_warning(tmp_path: Path) -> None:
    doc = yaml.safe_load((REAL / "crewai" / "crewai_test_delegate_work_2024.yaml").read_text())
    request = doc["interactions"][0]["request"]
    request["body"] = [request["body"]]  # a one-element list where the recorder writes a string
    trace = load_trace(_write(tmp_path, "retyped.yaml", yaml.safe_dump(doc)))
    assert trace.source.format == "crewai" and len(trace.steps) >= 2
    assert trace.task is not None and "share your take on AI Agents" in trace.task
    assert any("request.body" in w for w in trace.warnings)
    request["body"] = [1, {"x": 1}]  # not a body at all: dropped and said, the file still read
    with pytest.raises(TraceFormatError) as refused:
        load_traces(_write(tmp_path, "mixed.yaml", yaml.safe_dump(doc)))
    assert "\n" not in str(refused.value)


def test_an_early_chatdev_log_keeps_every_user_side_turn_and_its_task() -> None:
    # July 2023 ("AgentTech"): the user side's turns have no "[n]" ("AI User (Programmer):"), each
    # side's role prompt is an "AI User (X) sys message:" entry, and the task is "Task prompt:".
    path = REAL / "framework_log" / "chatdev_website_20230725.log"
    trace = load_trace(path)
    text = path.read_text(encoding="utf-8")
    said = [s for s in trace.steps if s.kind == "message"]
    heads = re.findall(r"^\[[^\]]+\] (?:\x1b\[\d+m)?(?:\[\d+\] )?AI (?:Assistant|User) \([^)]+\):$", text, re.MULTILINE)
    assert len(heads) == 26 and len(said) == len(heads)  # every turn of either side, none dropped
    assert sum(1 for s in said if s.attributes.get("side") == "user") == 13
    assert "Chief Technology Officer" in {s.agent for s in said}
    assert trace.task is not None and trace.task.startswith("Generate a website using html")
    assert sum(1 for s in trace.steps if s.attributes.get("event") == "sys message") == 26


def test_a_chatdev_log_with_only_start_and_end_lines_is_chatdev_with_no_content() -> None:
    trace = load_trace(REAL / "framework_log" / "chatdev_calculator_20230628_empty.log")
    assert trace.source.variant == "chatdev" and trace.framework == "chatdev"
    assert any("no content" in w for w in trace.warnings)
    assert not any("markers recognised" in w for w in trace.warnings)


def test_claude_code_non_message_records_are_counted_not_warned(tmp_path: Path) -> None:
    # progress, file-history-snapshot, queue-operation and system records are Claude Code's own
    # bookkeeping, on every real file: counted; only a line of no known shape is warned about.
    trace = load_trace(REAL / "claude_code" / "claude_code_spotter_tool_heavy.jsonl")
    assert not any("not Claude Code session events" in w for w in trace.warnings)
    assert trace.metadata["non_message_records"] == {"progress": 10, "file-history-snapshot": 3, "queue-operation": 2, "system": 2}
    lines = (REAL / "claude_code" / "claude_code_spotter_short.jsonl").read_text(encoding="utf-8").splitlines()
    odd = _write(tmp_path, "odd.jsonl", "\n".join([*lines[:3], '{"type": "weird", "x": 1}', *lines[3:]]) + "\n")
    warned = [w for w in load_trace(odd).warnings if "not Claude Code session events" in w]
    assert len(warned) == 1 and warned[0].startswith("1 line(s)") and "line 4" in warned[0]


def test_thinking_is_not_the_final_output_of_a_claude_code_transcript() -> None:
    trace = load_trace(REAL / "claude_code" / "claude_code_spotter_tool_heavy.jsonl")
    assert any(s.content.startswith("<thinking>") for s in trace.steps)  # the file's last words are a thought
    assert trace.final_output is not None and trace.final_output.startswith("Phoenix server is starting in the background")


def test_a_retyped_type_on_the_task_line_keeps_the_task_and_names_the_field(tmp_path: Path) -> None:
    path = REAL / "claude_code" / "claude_code_spotter_subagent_agent-aac57f5.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["type"] = [first["type"], {"x": 1}]
    trace = load_trace(_write(tmp_path, "retyped.jsonl", "\n".join([json.dumps(first), *lines[1:]]) + "\n"))
    assert trace.task == load_trace(path).task and trace.task is not None
    assert any(w.startswith("line 1: type is a list") for w in trace.warnings)
    del first["type"]  # no type at all, nothing to read one from: skipped, and the line is named
    first["message"] = "not a message"
    skipped = load_trace(_write(tmp_path, "untyped.jsonl", "\n".join([json.dumps(first), *lines[1:]]) + "\n"))
    assert any("line 1)" in w for w in skipped.warnings)


def test_an_empty_google_adk_session_is_refused_as_an_adk_session_with_no_events() -> None:
    path = REAL / "google_adk" / "adk_trip_planner_initial_empty.session.json"
    assert detect_format(path)[0].name == "google_adk"
    with pytest.raises(TraceFormatError, match=r"Google ADK session 'test_id' .* holds no events") as refused:
        load_traces(path)
    assert "\n" not in str(refused.value)


def test_a_claude_code_screen_capture_loses_its_decorations_not_its_words() -> None:
    trace = load_trace(REAL / "plain_text" / "claude_code_spotter_tool_heavy.terminal.txt")
    text = "\n".join(s.content for s in trace.steps)
    for decoration in ("────", "▐▛", "███", "●", 'Try "create a util'):
        assert decoration not in text, decoration
    for words in ("Claude Code v2.1.39", "Bash(mix phx.server)", "Phoenix server is starting in the background.", "start phoenix in background"):
        assert words in text, words


def test_log_prefixes_before_every_json_line_are_removed_with_a_warning(tmp_path: Path) -> None:
    clean = REAL / "claude_code" / "claude_code_spotter_short.jsonl"
    lines = clean.read_text(encoding="utf-8").splitlines()
    path = _write(tmp_path, "prefixed.jsonl", "\n".join("2025-01-01 10:00:00 [INFO] " + ln for ln in lines) + "\n")
    trace, reference = load_trace(path), load_trace(clean)
    assert trace.source.format == "claude_code" and len(trace.steps) == len(reference.steps) and trace.task == reference.task
    assert any("log prefix" in w for w in trace.warnings)
    # a text log whose lines carry the same prefix but no JSON stays a text log
    text = _write(tmp_path, "plain.log", "2025-01-01 10:00:00 [INFO] started\n2025-01-01 10:00:01 [INFO] done\n")
    assert not any("log prefix" in w for w in load_trace(text).warnings)


# --- task and final output ----------------------------------------------------------------------


def test_the_task_of_a_subagent_transcript_is_its_first_request() -> None:
    trace = load_trace(REAL / "claude_code" / "claude_code_log_subagent_agent-showcol1.jsonl")
    assert trace.task == "Survey src/web and report its layout, with a screenshot."
    sidechain = load_trace(REAL / "claude_code" / "claude_code_log_sidechain_integrated.jsonl")
    assert sidechain.task is not None and sidechain.task.startswith("Research how data-border-color is used")


def test_the_task_after_a_problem_header_mathchat(tmp_path: Path) -> None:
    record = json.loads((REAL / "autogen" / "agenteval_prealgebra_16.json").read_text(encoding="utf-8"))
    problem = record["problem"]
    opening = "Let's use Python to solve a math problem.\n\nQuery requirements:\nYou should always use the 'print' function.\n\nProblem:\n" + problem
    messages = [{"role": "user", "name": "mathproxyagent", "content": opening}] + [
        {"role": m["role"], "name": "mathproxyagent" if m["role"] == "user" else "assistant", "content": m["content"]}
        for m in record["messages"][1:]]
    trace = load_trace(_write(tmp_path, "mathchat.json", json.dumps({"problem_statement": "", "trajectory": messages})))
    assert trace.task is not None and problem[:60] in trace.task


def test_the_final_output_is_the_trailing_agent_message_without_a_finish() -> None:
    trace = load_trace(REAL / "openhands" / "openhands_basic_gui_mode.json")
    assert not any(c.name == "finish" for s in trace.steps for c in s.tool_calls)
    assert trace.final_output is not None and "complete Vue.js todo application" in trace.final_output


def test_the_final_output_survives_a_hand_off_back_to_the_coordinator() -> None:
    trace = load_trace(REAL / "google_adk" / "adk_flow_complex_spark_sample.session.json")
    assert trace.steps[-2].tool_calls and trace.steps[-2].tool_calls[0].name == "transfer_to_other_agent"
    assert trace.final_output is not None and "devastating impacts of flooding" in trace.final_output


def test_a_finish_action_is_a_tool_call_and_the_final_output() -> None:
    trace = load_trace(REAL / "openhands" / "openhands_wrong_initial_state.json")
    assert [c.name for s in trace.steps for c in s.tool_calls][-1] == "finish"
    assert trace.final_output is not None and "successfully renamed" in trace.final_output


# --- recorded HTTP in every body encoding --------------------------------------------------------

CASSETTE = REAL / "anthropic_messages" / "crewai_test_anthropic_async_with_tools.yaml"


def _reencoded(how: str) -> str:
    data = yaml.safe_load(CASSETTE.read_text(encoding="utf-8"))
    for interaction in data["interactions"]:
        for part in (interaction["request"], interaction["response"]):
            body = part["body"]
            text = body["string"] if isinstance(body, dict) else body
            if how == "base64":
                part["body"] = {"encoding": "utf-8", "base64_string": base64.b64encode(text.encode()).decode()}
            elif how == "gzip":
                part["body"] = {"string": gzip.compress(text.encode())}  # YAML !!binary, as vcrpy records it
            elif how == "parsed":
                part.pop("body")
                part["parsed_body"] = json.loads(text)
    return yaml.safe_dump(data, allow_unicode=True)


def _skeleton(trace: Trace) -> list[tuple[Any, ...]]:
    return [(s.role, s.content, [c.name for c in s.tool_calls]) for s in trace.steps]


@pytest.mark.parametrize("how", ["base64", "gzip", "parsed"])
def test_cassette_bodies_in_every_encoding_read_the_same(tmp_path: Path, how: str) -> None:
    original = load_trace(CASSETTE)
    trace = load_trace(_write(tmp_path, f"cassette_{how}.yaml", _reencoded(how)))
    assert trace.source.format == original.source.format == "anthropic_messages"
    assert _skeleton(trace) == _skeleton(original) and trace.task == original.task


def test_a_real_parsed_body_cassette() -> None:
    trace = load_trace(REAL / "anthropic_messages" / "pydantic_ai_test_anthropic_tool_with_thinking.yaml")
    assert [c.name for s in trace.steps for c in s.tool_calls] == ["get_user_country"]
    assert trace.final_output is not None and "Mexico City" in trace.final_output


def test_decompression_is_capped(monkeypatch: pytest.MonkeyPatch) -> None:
    bomb = gzip.compress(b"\0" * 5_000_000)
    notes: list[str] = []
    assert len(_vcr.inflate(bomb, notes, limit=1000)) == 1000 and any("cut there" in n for n in notes)
    monkeypatch.setattr(_vcr, "MAX_DECOMPRESSED_BYTES", 2048)
    assert len(_vcr.raw_body({"body": {"string": bomb}}, notes)) == 2048
    assert len(bomb) < 10_000  # a small file that would inflate 500 times over


# --- plain-text speakers ------------------------------------------------------------------------


def test_plain_text_speakers_skip_log_levels_and_timestamps(tmp_path: Path) -> None:
    plain = load_trace(LOGS / "crewai_console.log", format="plain_text")  # speakers come from '## Task:'-free lines
    lines = ["[INFO] Planner: split the work in two", "[ERROR] Coder: the tests failed", "2025-03-02 09:15:01,004 WARNING Planner: try again",
             "2025-03-02 09:15:09.112 | INFO     | app.run:step:12 - Coder: all green now"]
    trace = load_trace(_write(tmp_path, "run.log", "\n".join(lines) + "\n"))
    assert [s.agent for s in trace.steps] == ["Planner", "Coder", "Planner", "Coder"]
    assert {a.name for a in trace.agents} == {"Planner", "Coder"}
    assert plain.steps  # the forced plain reading of a real-layout log still splits it


def test_every_real_file_loads_without_errors() -> None:
    """A cheap guard beside the goldens: no real file is refused, except one whose golden reads no run in it (format null)."""
    for folder in sorted(p for p in REAL.iterdir() if p.is_dir()):
        golden_file = REAL_GOLDEN / folder.name / "GOLDEN.yaml"
        goldens = yaml.safe_load(golden_file.read_text(encoding="utf-8")) if golden_file.exists() else {}
        for path in sorted(folder.iterdir()):
            if path.name in ("MANIFEST.md", "GOLDEN.yaml"):
                continue
            if (goldens or {}).get(path.name, {}).get("format", "") is None:
                with pytest.raises(TraceFormatError):
                    load_traces(path)
                continue
            assert load_traces(path), path
