"""`mast review`: the gold file, the session's queue, the server's guards, the command, export and import.

The API the page calls is tested here; the page's script runs in a real Chromium in
tests/test_review_browser.py (keyboard review, a kill midway, hostile text, another origin).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _review_data import judge_present, write_results
from click.testing import CliRunner

from mast.cli import main
from mast.errors import EvaluationError, UsageError
from mast.evaluation import evaluate
from mast.evaluation.labels import read_labels
from mast.gold import GoldEvent, GoldStore, current_cells, iter_events
from mast.review import ReviewServer, ReviewSession, live_stats
from mast.review.export import gold_frame, import_scout, read_scout, write_gold_csv, write_scout
from mast.review.page import mode_keys
from mast.taxonomy import load_taxonomy


def _event(
    code: str,
    value: str,
    *,
    reviewer: str = "ana",
    key: str = "f.json#0:t1",
    queue: str = "random",
    judge: str | None = "absent",
) -> GoldEvent:
    return GoldEvent(
        key=key,
        trace_id=key.split(":", 1)[1],
        field="mode",
        code=code,
        value=value,
        judge=judge,
        reviewer=reviewer,
        queue=queue,
    )  # type: ignore[arg-type]


@pytest.fixture
def results(tmp_path: Path) -> Path:
    return write_results(tmp_path, 12)


# -- the gold file ----------------------------------------------------------------------------------


def test_last_value_of_a_cell_wins_and_the_history_is_kept(tmp_path):
    gold = tmp_path / "gold.jsonl"
    with GoldStore(gold) as store:
        store.append([_event("1.3", "present")])
        store.append([_event("1.3", "absent"), _event("2.1", "unsure")])
        store.append([_event("1.3", "present", reviewer="bo")])
    events = list(iter_events(gold))
    assert len(events) == 4
    cells = current_cells(events)
    assert cells[("f.json#0:t1", "mode", "1.3", "ana")].value == "absent"
    assert cells[("f.json#0:t1", "mode", "1.3", "bo")].value == "present"
    assert cells[("f.json#0:t1", "mode", "2.1", "ana")].value == "unsure"


def test_a_line_torn_by_a_kill_is_skipped_and_the_next_append_starts_its_own_line(tmp_path):
    gold = tmp_path / "gold.jsonl"
    with GoldStore(gold) as store:
        store.append([_event("1.3", "present")])
    whole = _event("1.4", "present").model_dump_json()
    with gold.open("ab") as handle:
        handle.write(whole[: len(whole) // 2].encode())  # what a kill inside write() leaves
    with GoldStore(gold) as store:
        store.append([_event("1.5", "absent")])
    assert [e.code for e in iter_events(gold)] == ["1.3", "1.5"]


def test_a_json_line_that_is_not_an_event_is_an_error_naming_the_line(tmp_path):
    gold = tmp_path / "gold.jsonl"
    gold.write_text(_event("1.3", "present").model_dump_json() + "\n" + json.dumps({"key": "x"}) + "\n")
    with pytest.raises(EvaluationError, match=r"gold.jsonl:2: not a gold event"):
        list(iter_events(gold))


# -- the session --------------------------------------------------------------------------------------


def test_the_random_queue_is_a_seeded_sample(results, tmp_path):
    a = ReviewSession(results, tmp_path / "a.jsonl", reviewer="ana", seed=1, sample=5)
    b = ReviewSession(results, tmp_path / "b.jsonl", reviewer="ana", seed=1, sample=5)
    c = ReviewSession(results, tmp_path / "c.jsonl", reviewer="ana", seed=2, sample=5)
    assert len(a) == 5 and a.order == b.order != c.order
    assert len(set(a.order)) == 5


def test_the_improve_queue_puts_doubtful_traces_first_and_marks_their_cells(results, tmp_path):
    session = ReviewSession(results, tmp_path / "g.jsonl", reviewer="ana", queue="improve")
    scores = [session.item(p).improve_score for p in range(len(session))]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    # confidence 0.55 (traces 0, 4, 8) is the doubtful kind: they come first
    first = session.diagnosis(0)
    assert any(v.confidence == 0.55 for v in first.failure_modes)
    events = session.record(0, [{"field": "accept"}])
    assert events and {e.queue for e in events} == {"improve"}


def test_accept_writes_the_judges_values_and_resume_goes_to_the_next_unreviewed(results, tmp_path):
    gold = tmp_path / "gold.jsonl"
    session = ReviewSession(results, gold, reviewer="ana")
    assert session.resume_position() == 0
    session.record(0, [{"field": "accept"}])
    session.record(1, [{"field": "mode", "code": "1.1", "value": "unsure"}])  # started, not finished
    session.close()
    again = ReviewSession(results, gold, reviewer="ana")
    assert again.reviewed(0) and not again.reviewed(1)
    assert again.resume_position() == 1
    item = again.item(0)
    assert again.values(0)["modes"] == {c: v for c, v in item.judge.items() if v is not None}
    # another reviewer starts from the beginning
    assert ReviewSession(results, gold, reviewer="bo").resume_position() == 0


def test_a_bad_change_writes_nothing_of_its_batch(results, tmp_path):
    gold = tmp_path / "gold.jsonl"
    session = ReviewSession(results, gold, reviewer="ana")
    with pytest.raises(UsageError):
        session.record(
            0,
            [
                {"field": "mode", "code": "1.1", "value": "present"},
                {"field": "mode", "code": "9.9", "value": "present"},
            ],
        )
    with pytest.raises(UsageError):
        session.record(0, [{"field": "first_step", "value": "four"}])
    assert list(iter_events(gold)) == []


def test_first_failure_and_note_are_kept_with_the_judges_value(results, tmp_path):
    gold = tmp_path / "gold.jsonl"
    session = ReviewSession(results, gold, reviewer="ana")
    session.record(
        2,
        [
            {"field": "first_step", "value": 3},
            {"field": "first_agent", "value": "planner"},
            {"field": "note", "value": "the retry is the real failure"},
        ],
    )
    values = session.values(2)
    assert values["first_step"] == 3 and values["first_agent"] == "planner"
    events = {e.field: e for e in iter_events(gold)}
    assert events["first_step"].judge == 1 and events["first_agent"].judge == "assistant"


def test_an_empty_reviewer_name_is_refused(results, tmp_path):
    with pytest.raises(UsageError, match="reviewer"):
        ReviewSession(results, tmp_path / "g.jsonl", reviewer="  ")


def test_every_mode_has_its_own_key_and_the_other_actions_keep_theirs():
    keys = mode_keys(load_taxonomy().codes)
    assert len(set(keys.values())) == 14 and "" not in keys.values()
    assert not set(keys.values()) & set("jkasgn")
    assert keys["1.1"] == "1" and keys["2.1"] == "q" and keys["3.1"] == "z"


def test_live_stats_count_only_the_random_queue_and_say_how_many_more_reviews():
    events = []
    for i in range(40):
        gold = "present" if i % 3 == 0 else "absent"
        judge = gold if i % 10 else ("absent" if gold == "present" else "present")
        events.append(_event("1.3", gold, key=f"f#0:t{i}", judge=judge))
    # improve-queue cells that all disagree would drag kappa down if they counted
    events += [_event("1.3", "present", key=f"g#0:u{i}", judge="absent", queue="improve") for i in range(30)]
    stats = {s.code: s for s in live_stats(events, load_taxonomy().codes, n_boot=300)}
    s = stats["1.3"]
    assert s.n == 40
    assert s.kappa is not None and 0.7 < s.kappa < 0.9
    assert s.low is not None and s.high is not None and s.low < s.kappa < s.high
    half = (s.high - s.low) / 2
    assert half > 0.1 and s.more_for_target is not None and s.more_for_target > 0
    assert stats["1.1"].n == 0 and stats["1.1"].kappa is None


def test_a_judge_that_never_flags_a_mode_gives_no_zero_width_ci_and_no_zero_more():
    # The reviewers find 1.3 in 5 of 20 traces; the judge never says present.
    events = [
        _event("1.3", "present" if i % 4 == 0 else "absent", key=f"f#0:t{i}", judge="absent")
        for i in range(20)
    ]
    # 1.1: the reviewers never say present, the judge sometimes does.
    events += [
        _event("1.1", "absent", key=f"f#0:t{i}", judge="present" if i < 3 else "absent") for i in range(20)
    ]
    stats = {s.code: s for s in live_stats(events, load_taxonomy().codes, n_boot=200)}
    never = stats["1.3"]
    assert (never.n, never.positives) == (20, 5)
    assert never.kappa is None and never.low is None and never.high is None
    assert never.more_for_target is None and never.reason == "judge never says present"
    assert never.as_dict()["reason"] == "judge never says present"
    assert stats["1.1"].reason == "no positive in the reviews"
    assert stats["1.1"].kappa is None and stats["1.1"].more_for_target is None


def test_kappa_not_estimable_is_the_one_rule_of_app_cli_and_report(results, tmp_path):
    from mast.evaluation.metrics import binary_metrics, kappa_not_estimable, metrics_from_counts
    from mast.validation.page import kappa_figure

    assert kappa_not_estimable(0, 0, 3, 12) == "judge never says present"
    assert kappa_not_estimable(3, 12, 0, 0) == "judge always says present"
    assert kappa_not_estimable(0, 2, 0, 12) == "no positive in the gold"
    assert kappa_not_estimable(2, 0, 3, 0) == "every cell present in the gold"
    assert kappa_not_estimable(2, 1, 3, 12) is None
    assert binary_metrics(0, 0, 3, 12)["kappa"] is None
    assert np.isnan(metrics_from_counts(np.array([0, 0, 3, 12]))["kappa"])
    assert kappa_figure(None, None, None, "judge never says present") == "– (judge never says present)"
    assert kappa_figure(-0.0001, -0.0001, 0.0, None) == "0.00 [0.00, 0.00]"  # never "-0.00"
    # mast validate --gold on a gold where the judge never flags a mode the reviewer found (6 of 12 traces)
    code = "1.3"
    gold = tmp_path / "gold.jsonl"
    with GoldStore(gold) as store:
        store.append(
            [
                _event(code, "present" if i % 2 else "absent", key=f"f#0:t{i}", judge="absent")
                for i in range(12)
            ]
            + [
                _event(
                    "1.1",
                    "present" if i % 3 else "absent",
                    key=f"f#0:t{i}",
                    judge="present" if i % 3 else "absent",
                )
                for i in range(12)
            ]
        )
    out = tmp_path / "v"
    shown = CliRunner().invoke(main, ["validate", "--gold", str(gold), "--n-boot", "200", "-o", str(out)])
    assert shown.exit_code == 0, shown.output
    row = next(line for line in shown.stdout.splitlines() if line.strip(" │|").startswith(code + " "))
    assert "judge never" in row and "0.00, 0.00" not in row, row
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "– (judge never says present)" in page
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    mode = next(m for m in summary["modes"] if m["code"] == code)
    assert (
        mode["kappa"] is None
        and mode["kappa_low"] is None
        and mode["kappa_reason"] == "judge never says present"
    )


def test_cells_the_reviewers_disagree_on_are_listed_not_lost(results, tmp_path):
    from mast.gold import reviewer_disagreements

    code = load_taxonomy().codes[0]
    gold = tmp_path / "gold.jsonl"
    for who, value in (("ana", "present"), ("bo", "absent")):
        session = ReviewSession(results, gold, reviewer=who)
        for position in range(4):
            session.record(position, [{"field": "accept"}])
        session.record(1, [{"field": "mode", "code": code, "value": value}])
        session.close()
    session = ReviewSession(results, gold, reviewer="ana")
    split = reviewer_disagreements(iter_events(gold))
    assert split == [
        {
            "trace_id": session.item(1).trace_id,
            "key": session.item(1).key,
            "code": code,
            "values": "ana=present; bo=absent",
        }
    ]
    server = ReviewServer(session)
    assert server.session is session
    session.close()
    out = tmp_path / "v"
    shown = CliRunner().invoke(main, ["validate", "--gold", str(gold), "--n-boot", "0", "-o", str(out)])
    assert shown.exit_code == 0, shown.output
    assert "1 cell where reviewers disagree, left out of the gold" in shown.stdout
    listed = (out / "reviewer_disagreements.csv").read_text(encoding="utf-8").splitlines()
    assert listed[0] == "trace_id,key,code,values" and len(listed) == 2
    assert code in listed[1] and "ana=present; bo=absent" in listed[1]


def test_a_first_failing_step_outside_the_trace_is_refused(results, tmp_path):
    session = ReviewSession(results, tmp_path / "g.jsonl", reviewer="ana")
    with pytest.raises(UsageError, match="not a step of this trace"):
        session.record(0, [{"field": "first_step", "value": 99}], steps=list(range(4)))
    session.record(0, [{"field": "first_step", "value": 3}], steps=list(range(4)))
    assert session.values(0)["first_step"] == 3
    session.close()


# -- the server's guards ------------------------------------------------------------------------------


def _request(
    server: ReviewServer,
    path: str,
    *,
    body: dict | None = None,
    headers: dict | None = None,
    token: bool = True,
) -> tuple[int, dict[str, str], bytes]:
    sent = dict(headers or {})
    if token:
        sent.setdefault("X-Mast-Token", server.token)
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        sent.setdefault("Content-Type", "application/json")
    request = urllib.request.Request(
        f"http://127.0.0.1:{server.port}{path}",
        data=data,
        headers=sent,
        method="POST" if body is not None else "GET",
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_requests_without_the_token_or_from_another_origin_change_nothing(results, tmp_path):
    gold = tmp_path / "gold.jsonl"
    server = ReviewServer(ReviewSession(results, gold, reviewer="ana")).start()
    try:
        change = {"position": 0, "changes": [{"field": "accept"}]}
        assert _request(server, "/api/save", body=change, token=False)[0] == 403
        assert _request(server, "/api/save", body=change, headers={"X-Mast-Token": "guess"})[0] == 403
        assert _request(server, "/api/save", body=change, headers={"Origin": "http://evil.example"})[0] == 403
        assert _request(server, "/api/save", body=change, headers={"Origin": "null"})[0] == 403
        assert _request(server, "/api/save", body=change, headers={"Sec-Fetch-Site": "cross-site"})[0] == 403
        assert (
            _request(server, "/api/save", body=change, headers={"Host": f"attacker.example:{server.port}"})[0]
            == 403
        )
        assert _request(server, "/", token=False)[0] == 403
        assert _request(server, "/api/trace/0", token=False)[0] == 403
        assert not gold.exists() or gold.read_bytes() == b""
        # the same request with the token, from the page's own origin, is saved
        status, headers, body = _request(
            server, "/api/save", body=change, headers={"Origin": f"http://127.0.0.1:{server.port}"}
        )
        assert status == 200 and json.loads(body)["saved"] > 0
        assert len(list(iter_events(gold))) == json.loads(body)["saved"]
        status, headers, page = _request(server, f"/?token={server.token}", token=False)
        assert status == 200
        policy = headers["Content-Security-Policy"]
        assert (
            "default-src 'none'" in policy
            and "connect-src 'self'" in policy
            and "'unsafe-inline'" not in policy
        )
        assert b"http://" not in page.replace(b"http://127.0.0.1", b"") and b"https://" not in page
    finally:
        server.stop()


def test_a_bad_request_is_a_one_line_error_and_the_server_goes_on(results, tmp_path):
    server = ReviewServer(ReviewSession(results, tmp_path / "g.jsonl", reviewer="ana")).start()
    try:
        status, _, body = _request(
            server, "/api/save", body={"position": 0, "changes": [{"field": "mode", "code": "x"}]}
        )
        assert status == 400 and "not a mode" in json.loads(body)["error"]
        assert _request(server, "/api/trace/999")[0] == 404
        assert _request(server, "/api/trace/0")[0] == 200
    finally:
        server.stop()


def test_the_trace_payload_is_the_reports_redacted_row_with_marks(tmp_path):
    results = write_results(tmp_path, 2)
    server = ReviewServer(ReviewSession(results, tmp_path / "g.jsonl", reviewer="ana"))
    payload = server.trace_payload(0)
    row = payload["row"]
    assert row["steps"], row["note"]
    cited = [s for s in row["steps"] if s["marks"]]
    assert cited and all(s["text"][a:b] == "retry the deployment" for s in cited for a, b in s["marks"])
    server.session.close()


def test_bidi_controls_show_as_escapes_in_the_app_and_the_report(tmp_path):
    from mast._render import BIDI_CONTROLS, neutralise_bidi

    assert neutralise_bidi("\u202eevil") == "\\u202eevil"
    assert all(neutralise_bidi(c) == f"\\u{ord(c):04x}" for c in BIDI_CONTROLS)
    assert set(BIDI_CONTROLS) >= {
        chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A), 0x200E, 0x200F, 0x61C]
    }
    results = write_results(tmp_path, 2, extra=" \u202eevil\u2066")
    server = ReviewServer(ReviewSession(results, tmp_path / "g.jsonl", reviewer="ana"))
    server.session.record(0, [{"field": "note", "value": "odd \u202eevil"}])
    payload = server.trace_payload(0)
    shown = json.dumps(payload, ensure_ascii=False)
    assert not set(BIDI_CONTROLS) & set(
        shown.replace(payload["values"]["note"], "")
    )  # only the raw note keeps it
    assert "\\u202eevil\\u2066" in payload["row"]["task"]
    assert any("\\u202eevil" in s["text"] for s in payload["row"]["steps"])
    assert (
        payload["values"]["note_shown"] == "odd \\u202eevil" and payload["values"]["note"] == "odd \u202eevil"
    )
    server.session.close()
    # the HTML report draws the same rows
    page = tmp_path / "report.html"
    result = CliRunner().invoke(main, ["report", str(results), "-o", str(page)])
    assert result.exit_code == 0, result.output
    text = page.read_text(encoding="utf-8")
    assert "\u202e" not in text and "\\\\u202eevil" in text  # the visible escape, JSON-escaped in the page


# -- label, export, import ----------------------------------------------------------------------------


def test_relabelling_does_not_touch_the_gold(tmp_path):
    examples = Path(__file__).resolve().parent.parent / "data" / "examples"
    out = tmp_path / "results.jsonl"
    assert (
        CliRunner().invoke(main, ["label", str(examples), "-o", str(out), "--judge", "detectors"]).exit_code
        == 0
    )
    gold = tmp_path / "gold.jsonl"
    session = ReviewSession(out, gold, reviewer="ana")
    session.record(0, [{"field": "accept"}])
    session.close()
    before = hashlib.sha256(gold.read_bytes()).hexdigest()
    result = CliRunner().invoke(
        main, ["label", str(examples), "-o", str(out), "--judge", "detectors", "--overwrite"]
    )
    assert result.exit_code == 0, result.output
    assert hashlib.sha256(gold.read_bytes()).hexdigest() == before


def _reviewed_gold(results: Path, gold: Path, *, unsure: bool = True) -> None:
    session = ReviewSession(results, gold, reviewer="ana")
    for position in range(6):
        session.record(position, [{"field": "accept"}])
    if unsure:
        session.record(0, [{"field": "mode", "code": "3.3", "value": "unsure"}])
    session.record(1, [{"field": "mode", "code": "1.1", "value": "present"}])
    session.record(
        2,
        [
            {"field": "note", "value": "the retry is the real failure"},
            {"field": "first_step", "value": 2},
            {"field": "first_agent", "value": "planner"},
        ],
    )
    session.close()


def test_the_gold_reads_as_labels_and_exports_to_the_csv_evaluate_reads(results, tmp_path):
    gold = tmp_path / "gold.jsonl"
    _reviewed_gold(results, gold)
    direct = read_labels(gold, role="gold")
    assert len(direct) == 6 * 14 - 1  # the unsure cell is not a label
    csv = write_gold_csv(gold, tmp_path / "gold.csv")
    from_csv = read_labels(csv, role="gold")
    assert direct[["trace_id", "code", "present", "annotator"]].equals(
        from_csv[["trace_id", "code", "present", "annotator"]]
    )
    import csv as csv_module

    with csv.open(encoding="utf-8", newline="") as handle:
        exported = list(csv_module.DictReader(handle))
    kept = [r for r in exported if r["note"]]
    # the reviewer's note and first-failure correction ride along, on every row of their trace
    assert kept and {r["note"] for r in kept} == {"the retry is the real failure"}
    assert {r["first_step"] for r in kept} == {"2"} and {r["first_agent"] for r in kept} == {"planner"}
    assert len({r["trace_id"] for r in kept}) == 1 and len(kept) == 14
    assert all(r["note"] == "" for r in exported if r not in kept)
    report = evaluate(results, csv, n_boot=0)
    assert (
        report.n_cells == 6 * 14 - 1 and report.pooled.fn == 1 and report.pooled.fp == 0
    )  # the one cell changed to present
    result = CliRunner().invoke(
        main, ["evaluate", "--pred", str(results), "--gold", str(gold), "--json", "--n-boot", "0"]
    )
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("suffix", [".csv", ".json", ".yaml"])
def test_scout_validation_sets_round_trip_to_identical_cells(results, tmp_path, suffix):
    gold = tmp_path / "gold.jsonl"
    _reviewed_gold(results, gold, unsure=suffix != ".csv")
    if suffix == ".csv":
        # Scout's CSV reader reads an empty label_<code> cell as true: a gold with a gap is refused as CSV
        gapped = tmp_path / "gapped.jsonl"
        _reviewed_gold(results, gapped)
        with pytest.raises(UsageError, match="empty label_<code> cell"):
            write_scout(gapped, tmp_path / "gapped.csv")
    scout = write_scout(gold, tmp_path / f"validation{suffix}", split="dev")
    if suffix == ".csv":
        header = scout.read_text().splitlines()[0].split(",")
        assert (
            header[0] == "id" and "label_1.1" in header and not any(h.startswith("target_") for h in header)
        )
    if suffix == ".yaml":
        import yaml

        first = yaml.safe_load(scout.read_text())[0]
        assert set(first) == {"id", "labels", "split"} and first["labels"]["1.1"] in (True, False)
    back = read_scout(scout)
    mine = gold_frame(gold, queues=("random",))
    assert sorted(zip(back["trace_id"], back["code"], back["present"], strict=True)) == sorted(
        zip(mine["trace_id"], mine["code"], mine["present"], strict=True)
    )
    again = tmp_path / "imported.jsonl"
    assert import_scout(scout, again) == len(mine)
    cells = gold_frame(again)
    assert sorted(zip(cells["trace_id"], cells["code"], cells["present"], strict=True)) == sorted(
        zip(mine["trace_id"], mine["code"], mine["present"], strict=True)
    )


def test_the_gold_cli_exports_and_imports(results, tmp_path):
    gold = tmp_path / "gold.jsonl"
    _reviewed_gold(results, gold)
    runner = CliRunner()
    assert runner.invoke(main, ["gold", "export", str(gold), str(tmp_path / "g.csv")]).exit_code == 0
    assert runner.invoke(main, ["gold", "export", str(gold), str(tmp_path / "v.yaml")]).exit_code == 0
    assert (
        runner.invoke(
            main, ["gold", "import", str(tmp_path / "v.yaml"), "-o", str(tmp_path / "i.jsonl")]
        ).exit_code
        == 0
    )
    bad = runner.invoke(main, ["gold", "export", str(gold), str(tmp_path / "g.txt"), "--format", "long"])
    assert bad.exit_code == 2 and "csv" in bad.output


def test_a_scripted_verdict_pattern_is_what_the_results_hold(results):
    # the fixture's own promise, which the browser and validate tests build on
    first = json.loads(results.read_text().splitlines()[0])
    assert [v["present"] for v in first["failure_modes"]] == [
        judge_present(0, c) for c in load_taxonomy().codes
    ]


def test_validate_gold_gives_per_mode_figures_and_leaves_the_improve_queue_out(results, tmp_path):
    from mast.validation.gold import split_traces, validate_gold

    gold = tmp_path / "gold.jsonl"
    _reviewed_gold(results, gold)
    report = validate_gold(gold, output=tmp_path / "v", n_boot=200)
    assert {m.code for m in report.modes} == set(load_taxonomy().codes)
    assert (tmp_path / "v" / "per_mode.csv").is_file() and (tmp_path / "v" / "report.html").is_file()
    # each disagreement names its trace's source file (a plain-text trace's id is only a hash)
    differ = pd.read_csv(tmp_path / "v" / "disagreements.csv")
    changed = ReviewSession(results, tmp_path / "other.jsonl", reviewer="x").item(1)
    assert list(differ["trace_id"]) == [changed.trace_id]
    assert list(differ["source"]) == [changed.source_path] and changed.source_path
    baseline = report.pooled.pooled.kappa
    # improve-queue reviews that all disagree with the judge do not move the reported kappa
    improve = ReviewSession(results, gold, reviewer="bo", queue="improve")
    for position in range(len(improve)):
        item = improve.item(position)
        flips = [
            {"field": "mode", "code": c, "value": "absent" if v == "present" else "present"}
            for c, v in item.judge.items()
            if v is not None
        ]
        improve.record(position, flips)
    improve.close()
    again = validate_gold(gold, output=None, n_boot=0)
    assert again.pooled.pooled.kappa == baseline
    assert "improve-queue cells left out" in again.verdict
    # dev and test never share a trace, and the split is the same each time
    table = read_labels(gold, role="gold")
    split = split_traces(table, seed=3)
    assert split == split_traces(table, seed=3) and set(split.values()) == {"dev", "test"}
    result = CliRunner().invoke(
        main,
        ["validate", "--gold", str(gold), "--split", "test", "-o", str(tmp_path / "t"), "--n-boot", "50"],
    )
    assert result.exit_code == 0, result.output
    assert "test split" in result.output


def test_two_reviewers_on_overlapping_traces_give_their_agreement_per_mode(results, tmp_path):
    from mast.validation.gold import validate_gold

    codes = load_taxonomy().codes
    agreed, split_on = codes[0], codes[1]
    gold = tmp_path / "gold.jsonl"
    ana = ReviewSession(results, gold, reviewer="ana")
    for position in range(10):
        ana.record(position, [{"field": "accept"}])
    ana.close()
    bo = ReviewSession(results, gold, reviewer="bo")
    flipped = 0
    for position in range(2, 12):  # 8 traces in common with ana, 2 of his own
        bo.record(position, [{"field": "accept"}])
        judge = bo.item(position).judge[split_on]
        if position < 10 and (judge == "present" or flipped < 3):
            bo.record(
                position,
                [{"field": "mode", "code": split_on, "value": "absent" if judge == "present" else "present"}],
            )
            flipped += 1
    bo.close()
    report = validate_gold(gold, output=tmp_path / "v", n_boot=0)
    human = {m.code: m.human_kappa for m in report.modes}
    assert human[agreed] == pytest.approx(1.0)
    assert human[split_on] is not None and human[split_on] < 0.5
    shown = CliRunner().invoke(
        main, ["validate", "--gold", str(gold), "--n-boot", "0", "--json", "-o", str(tmp_path / "v2")]
    )
    assert shown.exit_code == 0, shown.output
    modes = {m["code"]: m for m in json.loads(shown.stdout)["modes"]}
    assert modes[agreed]["human_kappa"] == pytest.approx(1.0)
    assert modes[split_on]["human_kappa"] == pytest.approx(human[split_on])


# -- the command ------------------------------------------------------------------------------------

URL = re.compile(r"^http://127\.0\.0\.1:(\d+)/\?token=[\w-]+$", re.MULTILINE)


def _until_interrupted(monkeypatch: pytest.MonkeyPatch, seen: list[str]) -> None:
    """The command's wait raises KeyboardInterrupt at once (Ctrl-C), after one request to the page."""
    import mast.cli.review as command

    lines: list[str] = []
    write_line = command.write_line

    def record(text: str) -> None:
        lines.append(text)
        write_line(text)

    def wait() -> None:
        url = next((m.group(0) for line in lines if (m := URL.match(line))), None)
        if url is not None:
            with urllib.request.urlopen(url, timeout=10) as response:
                seen.append(str(response.status))
        raise KeyboardInterrupt

    monkeypatch.setattr(command, "write_line", record)
    monkeypatch.setattr(command, "_wait", wait)


def test_the_command_prints_the_url_and_opens_the_browser(results, tmp_path, monkeypatch):
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: opened.append(url) or True)
    monkeypatch.setenv("DISPLAY", ":0")
    seen: list[str] = []
    _until_interrupted(monkeypatch, seen)
    gold = tmp_path / "gold.jsonl"
    result = CliRunner().invoke(main, ["review", str(results), "-o", str(gold), "--reviewer", "ana"])
    assert result.exit_code == 0, result.output
    url = URL.search(result.stdout)
    assert url is not None, result.stdout
    assert opened == [url.group(0)]
    assert "stopped" in result.stderr and "Traceback" not in result.output


def test_no_open_opens_nothing_and_still_prints_the_url(results, tmp_path, monkeypatch):
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: opened.append(url) or True)
    monkeypatch.setenv("DISPLAY", ":0")
    seen: list[str] = []
    _until_interrupted(monkeypatch, seen)
    args = ["review", str(results), "-o", str(tmp_path / "g.jsonl"), "--reviewer", "ana", "--no-open"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert URL.search(result.stdout) is not None and opened == []
    assert seen == ["200"]  # the server was up while the command waited


def test_without_a_display_no_browser_is_started_and_the_url_is_said(results, tmp_path, monkeypatch):
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: opened.append(url) or True)
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("sys.platform", "linux")
    _until_interrupted(monkeypatch, [])
    result = CliRunner().invoke(
        main, ["review", str(results), "-o", str(tmp_path / "g.jsonl"), "--reviewer", "a"]
    )
    assert result.exit_code == 0, result.output
    assert opened == [] and "no browser opened" in result.stderr and "open the URL above" in result.stderr


def _one_line_error(result, *words: str) -> None:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert "Traceback" not in result.output and len(lines) <= 3, result.output  # click's usage lines at most
    assert all(w in result.output for w in words), result.output


def test_bad_inputs_are_one_line_errors(results, tmp_path, monkeypatch):
    monkeypatch.setattr("mast.cli.review._wait", lambda: pytest.fail("the server should not start"))
    runner = CliRunner()
    gold = str(tmp_path / "g.jsonl")
    _one_line_error(
        runner.invoke(main, ["review", str(tmp_path / "nope.jsonl"), "-o", gold]), "does not exist"
    )
    _one_line_error(runner.invoke(main, ["review", str(tmp_path), "-o", gold]), "is a directory")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(results.read_text().splitlines()[0] + "\nnot json\n{}\n")
    _one_line_error(
        runner.invoke(main, ["review", str(bad), "-o", gold, "--reviewer", "a"]), "bad.jsonl:2", "not JSON"
    )
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps([{"role": "user", "content": "hi"}]))
    _one_line_error(
        runner.invoke(main, ["review", str(trace), "-o", gold, "--reviewer", "a"]), "not a mast diagnosis"
    )
    _one_line_error(
        runner.invoke(main, ["review", str(results), "-o", str(results), "--reviewer", "a"]),
        "is the results file",
    )
    _one_line_error(
        runner.invoke(main, ["review", str(results), "-o", gold, "--reviewer", "a", "--taxonomy", "no-such"]),
    )

    def no_name() -> str:
        raise KeyError("getpwuid(): uid not found: 4242")

    monkeypatch.setattr("getpass.getuser", no_name)
    _one_line_error(runner.invoke(main, ["review", str(results), "-o", gold]), "--reviewer NAME")


def test_a_port_in_use_is_a_clear_error_and_the_gold_is_closed(results, tmp_path, monkeypatch):
    monkeypatch.setattr("mast.cli.review._wait", lambda: pytest.fail("the server should not start"))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        args = [
            "review",
            str(results),
            "-o",
            str(tmp_path / "g.jsonl"),
            "--reviewer",
            "a",
            "--port",
            str(port),
        ]
        result = CliRunner().invoke(main, args)
    _one_line_error(result, f"port {port} on 127.0.0.1 is in use", "--port 0")
    session = ReviewSession(results, tmp_path / "g2.jsonl", reviewer="a")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        with pytest.raises(UsageError, match="in use"):
            ReviewServer(session, port=taken.getsockname()[1]).start()
    assert session._store is not None and session._store._fd == -1  # closed: no descriptor left open


def test_a_results_file_rewritten_under_the_app_is_a_one_line_api_error(results, tmp_path):
    server = ReviewServer(ReviewSession(results, tmp_path / "g.jsonl", reviewer="ana")).start()
    try:
        results.write_text("x" * 100_000 + "\n")
        status, _, body = _request(server, "/api/trace/0")
        assert status == 400 and "restart mast review" in json.loads(body)["error"]
    finally:
        server.stop()
    server.stop()  # a second stop does nothing


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process")
def test_ctrl_c_stops_the_server_cleanly(results, tmp_path):
    """A real `mast review` process: the URL on stdout, the page served, SIGINT ends it with exit 0."""
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    gold = tmp_path / "gold.jsonl"
    command = [
        sys.executable,
        "-m",
        "mast",
        "review",
        str(results),
        "-o",
        str(gold),
        "--reviewer",
        "ana",
        "--no-open",
    ]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = None
        assert process.stdout is not None
        for line in process.stdout:  # the URL comes once the port is bound
            if URL.match(line.strip()):
                url = line.strip()
                break
        assert url is not None, process.stderr.read() if process.stderr else ""
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.status == 200
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr and "stopped" in stderr
    with pytest.raises(OSError):
        urllib.request.urlopen(url, timeout=5)
