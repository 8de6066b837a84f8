"""`mast review` driven in a real Chromium: the page's own script, with the keyboard alone.

A real `mast review` process serves the page; Playwright's Chromium (the same mechanism as
tests/test_report_viewer.py: a system Chromium by `executable_path`, skipped without one) reviews 20
traces with keys only, the server is killed with SIGKILL midway and restarted on the same gold, and
`mast validate --gold` measures the judge on what was reviewed. Hostile text in traces and notes must
stay text, and a page of another origin must change nothing.

The docs' pictures of the page (docs/img/review-*.png) are retaken with MAST_UPDATE_GOLDEN=1, as the
report's (tests/conftest.py keeps that one MAST_ variable for the tests).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _review_data import HOSTILE, write_results

from mast.gold import current_cells, iter_events
from mast.review import ReviewServer, ReviewSession
from mast.review.page import mode_keys
from mast.taxonomy import load_taxonomy

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Dialog, Page

REPO = Path(__file__).resolve().parent.parent
URL = re.compile(r"^http://127\.0\.0\.1:(\d+)/\?token=[\w-]+$")
OWN = re.compile(r"^http://127\.0\.0\.1:\d+/(\?token=[\w-]+|api/(trace/\d+|save|stats))$")
"""The only requests the page makes: itself and its API."""
CODES = load_taxonomy().codes
KEYS = mode_keys(CODES)
CYCLE = {"present": "absent", "absent": "unsure", "unsure": "present"}
N_TRACES = 24
REVIEWED = 20
KILLED_AT = 10


def _chromium() -> str | None:
    named = os.environ.get("MAST_CHROMIUM")
    if named:
        return named
    return next(
        (p for n in ("chromium", "chromium-browser", "google-chrome") if (p := shutil.which(n))), None
    )


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (in the test extra)")
    executable = _chromium()
    if executable is None:
        pytest.skip(
            "no Chromium found: `apt-get install -y chromium` (Debian) or set MAST_CHROMIUM to a binary"
        )
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(
            executable_path=executable, args=["--no-sandbox", "--headless=new"]
        )
        try:
            yield instance
        finally:
            instance.close()


# -- a real `mast review` process ------------------------------------------------------------------


class Server:
    """`mast review RESULTS -o GOLD --no-open --port 0` as a child process, and the URL it printed."""

    def __init__(self, results: Path, gold: Path, log: Path, *, reviewer: str = "ana") -> None:
        env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER")}
        env["PYTHONPATH"] = str(REPO)
        command = [sys.executable, "-m", "mast", "review", str(results), "-o", str(gold),
                   "--reviewer", reviewer, "--no-open", "--port", "0"]  # fmt: skip
        self._log = log.open("a")
        self.process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=self._log, text=True)
        assert self.process.stdout is not None
        self.url = ""
        for line in self.process.stdout:  # the URL comes once the port is bound
            if URL.match(line.strip()):
                self.url = line.strip()
                break
        assert self.url, f"no URL printed: {log.read_text()}"

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self._log.close()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


# -- the page ---------------------------------------------------------------------------------------


def _open(browser: Browser, url: str) -> tuple[Page, list[str]]:
    page = browser.new_page(viewport={"width": 1280, "height": 860})
    problems: list[str] = []
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))

    def dialog(opened: Dialog) -> None:  # an alert() that ran
        problems.append(f"dialog: {opened.message}")
        opened.dismiss()

    page.on("dialog", dialog)
    page.on("request", lambda req: None if OWN.match(req.url) else problems.append(f"request to {req.url}"))
    page.goto(url)
    _settle(page)
    return page, problems


def _settle(page: Page) -> None:
    """Every save and load the page started has been answered."""
    page.wait_for_function("() => window.mastReview && window.mastReview.idle()")


SHOWN = """() => {
  const modes = {};
  for (const tr of document.querySelectorAll('#verdicts tr[data-code]')) {
    if (tr.dataset.saved === '1') modes[tr.dataset.code] = tr.dataset.mine;
  }
  const note = document.getElementById('note-saved').textContent;
  return {position: window.mastReview.position(), modes, note,
          state: document.getElementById('save-state').textContent,
          header: document.getElementById('position').textContent};
}"""


def _shown(page: Page) -> dict[str, Any]:
    """What the page shows as saved for the trace it shows."""
    shown: dict[str, Any] = page.evaluate(SHOWN)
    return shown


def _screenshot(page: Page, name: str, tmp_path: Path, selector: str | None = None) -> None:
    """The page from its top (or the element ``selector`` names) into docs/img/ with MAST_UPDATE_GOLDEN=1."""
    docs = REPO / "docs" / "img"
    target = docs / name if os.environ.get("MAST_UPDATE_GOLDEN") else tmp_path / name
    page.evaluate("() => { document.activeElement && document.activeElement.blur(); window.scrollTo(0, 0); }")
    if selector is None:
        page.screenshot(path=str(target))
    else:
        page.locator(selector).screenshot(path=str(target))
    assert target.stat().st_size > 1000
    assert (docs / name).is_file(), f"docs/img/{name} is missing: run this test with MAST_UPDATE_GOLDEN=1"


# -- what the keys should do ------------------------------------------------------------------------


def _first_press(judged: str | None) -> str:
    return "absent" if judged == "present" else "present"


def _review_one(page: Page, position: int, judge: dict[str, str | None]) -> dict[str, Any]:
    """Review the trace at ``position`` with keys only, as fast as they can be typed; what must be saved."""
    code = CODES[position % len(CODES)]
    want: dict[str, Any] = {"modes": {c: v for c, v in judge.items() if v is not None}}
    kind = position % 4
    if kind == 1:  # mark one mode against the judge, accept the rest
        page.keyboard.press(KEYS[code])
        want["modes"][code] = _first_press(judge[code])
    elif kind == 2:  # cycle one mode twice, set the first failing step
        page.keyboard.press(KEYS[code])
        page.keyboard.press(KEYS[code])
        want["modes"][code] = CYCLE[_first_press(judge[code])]
        page.keyboard.press("s")
        page.keyboard.type("2")
        page.keyboard.press("Enter")
        want["first_step"] = 2
    elif kind == 3:  # a note, then accept
        page.keyboard.press("n")
        page.keyboard.type(f"checked trace {position} by hand")
        page.keyboard.press("Enter")
        want["note"] = f"checked trace {position} by hand"
    page.keyboard.press("a")
    return want


def _gold_values(gold: Path, key: str, reviewer: str = "ana") -> dict[str, Any]:
    cells = current_cells(iter_events(gold))
    out: dict[str, Any] = {"modes": {}}
    for (k, field, code, who), event in cells.items():
        if k != key or who != reviewer:
            continue
        if field == "mode":
            out["modes"][code] = event.value
        else:
            out[field] = event.value
    return out


def test_twenty_traces_by_keyboard_survive_a_kill_and_validate(browser: Browser, tmp_path: Path) -> None:
    results = write_results(tmp_path, N_TRACES)
    gold = tmp_path / "gold.jsonl"
    log = tmp_path / "server.log"
    order = ReviewSession(results, tmp_path / "scratch.jsonl", reviewer="order")  # the queue the app serves
    items = [order.item(p) for p in range(len(order))]
    order.close()

    server = Server(results, gold, log)
    try:
        page, problems = _open(browser, server.url)
        shown_saved: dict[int, dict[str, Any]] = {}
        wanted: dict[int, dict[str, Any]] = {}
        assert _shown(page)["header"] == f"trace 1 of {N_TRACES}"
        for position in range(KILLED_AT):
            assert _shown(page)["position"] == position
            wanted[position] = _review_one(page, position, items[position].judge)
            page.keyboard.press("j")  # on at once, before the saves are answered
            _settle(page)
            if position == 5:
                page.keyboard.press("k")
                _settle(page)
                shown_saved[position] = _shown(page)
                _screenshot(page, "review-trace.png", tmp_path)
                page.keyboard.press("j")
                _settle(page)
        # every trace reviewed so far shows, going back, exactly what was typed; and the gold holds it
        for position in range(KILLED_AT - 1, -1, -1):
            page.keyboard.press("k")
            _settle(page)
            shown = _shown(page)
            assert shown["position"] == position
            assert shown["modes"] == wanted[position]["modes"], position
            assert "(reviewed)" in shown["header"]
            if "note" in wanted[position]:
                assert wanted[position]["note"] in shown["note"]
            assert _gold_values(gold, items[position].key) == {
                "modes": wanted[position]["modes"],
                **{k: v for k, v in wanted[position].items() if k != "modes"},
            }
        for _ in range(KILLED_AT):
            page.keyboard.press("j")
        _settle(page)
        assert _shown(page)["position"] == KILLED_AT

        # a change saved, one in flight when the server dies, one after: the page says which were saved
        first, second, third = CODES[0], CODES[1], CODES[2]
        page.keyboard.press(KEYS[first])
        _settle(page)
        assert _shown(page)["state"].startswith("saved")
        page.keyboard.press(KEYS[second])
        server.kill()
        _settle(page)
        page.keyboard.press(KEYS[third])
        _settle(page)
        before_restart = _shown(page)
        assert before_restart["state"].startswith("NOT saved")
        assert third not in before_restart["modes"]
        on_disk = _gold_values(gold, items[KILLED_AT].key)["modes"]
        assert first in before_restart["modes"]
        for code, value in before_restart["modes"].items():  # every cell shown as saved is on disk
            assert on_disk.get(code) == value, (code, value, on_disk)
        assert third not in on_disk

        # restarted on the same gold: the app resumes at the first trace not finished
        server = Server(results, gold, log)
        page.goto(server.url)
        _settle(page)
        resumed = _shown(page)
        assert (
            resumed["position"] == KILLED_AT and resumed["header"] == f"trace {KILLED_AT + 1} of {N_TRACES}"
        )
        assert resumed["modes"] == on_disk
        page.keyboard.press("a")
        _settle(page)
        wanted[KILLED_AT] = {"modes": {**{c: v for c, v in items[KILLED_AT].judge.items() if v}, **on_disk}}
        assert _shown(page)["modes"] == wanted[KILLED_AT]["modes"]
        page.keyboard.press("j")
        _settle(page)
        for position in range(KILLED_AT + 1, REVIEWED):
            assert _shown(page)["position"] == position
            wanted[position] = _review_one(page, position, items[position].judge)
            _settle(page)
            shown_saved[position] = _shown(page)
            assert shown_saved[position]["modes"] == wanted[position]["modes"], position
            page.keyboard.press("j")
            _settle(page)
        _screenshot(page, "review-stats.png", tmp_path, "#stats")
        assert problems == [], problems
    finally:
        server.stop()

    for position in range(REVIEWED):
        on_disk = _gold_values(gold, items[position].key)
        assert on_disk["modes"] == wanted[position]["modes"], position
        for name in ("first_step", "note"):
            if name in wanted[position]:
                assert on_disk[name] == wanted[position][name]
    # the next start resumes after the 20 reviewed
    again = ReviewSession(results, gold, reviewer="ana")
    assert again.resume_position() == REVIEWED
    again.close()

    out = tmp_path / "validation"
    command = [sys.executable, "-m", "mast", "validate", "--gold", str(gold), "--results", str(results),
               "-o", str(out), "--n-boot", "50"]  # fmt: skip
    done = subprocess.run(command, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    with (out / "per_mode.csv").open() as handle:
        rows = {row["code"]: row for row in csv.DictReader(handle)}
    assert set(rows) == set(CODES)
    # the unsure cells are not labels; every other reviewed cell is
    unsure = sum(1 for w in wanted.values() for v in w["modes"].values() if v == "unsure")
    assert sum(int(r["n"]) for r in rows.values()) == REVIEWED * len(CODES) - unsure
    assert any(r["kappa"] for r in rows.values())
    assert "pooled kappa" in done.stdout and f"over {REVIEWED} human-labelled traces" in done.stdout


# -- hostile text ------------------------------------------------------------------------------------

LONG = "x" * 6000
ATTACK = (
    HOSTILE
    + "<img src=y onerror=alert(1)><svg onload=alert(2)></svg><a href='javascript:alert(3)'>link</a>"
    + "<iframe srcdoc='<script>parent.pwned=3</script>'></iframe>\"'><b onmouseover=alert(4)>"
    + "<link rel=stylesheet href=//evil.example/x.css><meta http-equiv=refresh content='0;url=//evil.example'>"
    + LONG
)

INERT = """() => ({
  pwned: window.pwned === undefined ? null : String(window.pwned),
  injected: document.querySelectorAll(['img', 'svg', 'iframe', 'script', 'style', 'link', 'meta', 'a',
    '[onerror]', '[onload]', '[onmouseover]'].map((s) => 'main ' + s).join(',')).length,
  hidden: getComputedStyle(document.body).display === 'none',
  overflow: document.documentElement.scrollWidth - window.innerWidth,
  text: document.querySelector('main').innerText,
})"""


def test_hostile_traces_and_notes_stay_text_in_chromium(browser: Browser, tmp_path: Path) -> None:
    results = write_results(tmp_path, 3, extra=ATTACK)
    gold = tmp_path / "gold.jsonl"
    log = tmp_path / "server.log"
    server = Server(results, gold, log, reviewer="<img src=z onerror=alert(5)>")
    try:
        page, problems = _open(browser, server.url)
        page.keyboard.press("n")
        page.keyboard.insert_text(ATTACK)  # the reviewer pastes it into the note
        page.keyboard.press("Enter")
        page.keyboard.press("a")
        _settle(page)
        assert _shown(page)["state"].startswith("saved")
        page.reload()  # drawn again from the gold: it resumes at the next trace, so back one
        _settle(page)
        assert _shown(page)["position"] == 1
        page.keyboard.press("k")
        _settle(page)
        page.mouse.move(400, 300)
        page.mouse.move(900, 400)
        state = page.evaluate(INERT)
        assert state["pwned"] is None and state["injected"] == 0 and not state["hidden"]
        assert state["overflow"] <= 1, "a long line widens the page"
        assert "<script>window.pwned=1</script>" in state["text"]  # shown, as text
        assert page.input_value("#note") == ATTACK
        assert page.inner_text("#reviewer") == "<img src=z onerror=alert(5)>"
        assert problems == [], problems
    finally:
        server.stop()
    assert next(e for e in iter_events(gold) if e.field == "note").value == ATTACK


# -- another origin -----------------------------------------------------------------------------------

FOREIGN = """async ([base, token]) => {
  const body = JSON.stringify({position: 0, changes: [{field: 'accept'}]});
  const out = [];
  const attempt = async (label, url, opts) => {
    try { const r = await fetch(url, opts); out.push(label + ':' + r.type + ':' + r.status); }
    catch (e) { out.push(label + ':refused'); }
  };
  await attempt('simple', base + '/api/save', {method: 'POST', mode: 'no-cors', headers: {'Content-Type': 'text/plain'}, body});
  await attempt('json', base + '/api/save', {method: 'POST', headers: {'Content-Type': 'application/json', 'X-Mast-Token': token}, body});
  await attempt('read', base + '/api/trace/0', {headers: {'X-Mast-Token': token}});
  await attempt('page', base + '/?token=' + token, {mode: 'no-cors'});
  return out;
}"""


def test_a_page_of_another_origin_changes_nothing(browser: Browser, tmp_path: Path) -> None:
    """Even knowing the token, a page elsewhere can neither save nor read: its Origin is refused."""
    results = write_results(tmp_path, 3)
    gold = tmp_path / "gold.jsonl"
    server = ReviewServer(ReviewSession(results, gold, reviewer="ana")).start()
    base = f"http://127.0.0.1:{server.port}"
    try:
        page = browser.new_page()
        page.route("http://evil.example/**", lambda route: route.fulfill(
            status=200, content_type="text/html",
            body="<form id=f method=post enctype=text/plain><input name='{\"position\":0,\"changes\":[{\"field\":\"accept\"}],\"x\":\"' value='\"}'></form>",
        ))  # fmt: skip
        page.goto("http://evil.example/")
        outcomes = page.evaluate(FOREIGN, [base, server.token])
        assert not any(o.endswith((":cors:200", ":basic:200")) for o in outcomes), outcomes
        # a form posted across origins (a navigation, which no CORS check stops)
        with page.expect_navigation():
            page.evaluate("(url) => { const f = document.getElementById('f'); f.action = url; f.submit(); }",
                          f"{base}/api/save")  # fmt: skip
        assert "error" in page.content()
        # the token-less page itself is refused too
        page.goto(f"{base}/")
        assert json.loads(page.inner_text("body"))["error"] == "missing or wrong token"
    finally:
        server.stop()
    assert not gold.exists() or gold.read_bytes() == b""


# -- what a new reviewer ran into ---------------------------------------------------------------------

BIDI = "\u202eevil\u202c"


def test_esc_saves_the_note_steps_are_range_checked_and_the_status_is_the_traces(
    browser: Browser, tmp_path: Path
) -> None:
    results = write_results(tmp_path, 3, extra=" " + BIDI)
    gold = tmp_path / "gold.jsonl"
    server = Server(results, gold, tmp_path / "server.log")
    try:
        page, problems = _open(browser, server.url)
        # Esc leaves the note field and keeps the note: saved, as Enter would
        page.keyboard.press("n")
        page.keyboard.type("looked twice " + BIDI)
        page.keyboard.press("Escape")
        _settle(page)
        shown = _shown(page)
        assert shown["state"].startswith("saved"), shown
        assert (
            shown["note"] == "saved note: looked twice \\u202eevil\\u202c"
        )  # the override shown, not obeyed
        # a first failing step the trace does not have is refused, and the page says why
        page.keyboard.press("s")
        page.keyboard.type("99")
        page.keyboard.press("Enter")
        _settle(page)
        state = _shown(page)["state"]
        assert state.startswith("NOT saved") and "not a step of this trace" in state, state
        # the transcript shows BiDi controls as escapes: "evil" never drawn as "live"
        text = page.inner_text("#transcript")
        assert "\\u202eevil\\u202c" in text and "\u202e" not in text
        page.keyboard.press("a")
        _settle(page)
        assert _shown(page)["state"].startswith("saved")
        page.keyboard.press("j")  # the next trace's header says nothing of the last one's saves
        _settle(page)
        shown = _shown(page)
        assert shown["position"] == 1 and shown["state"] == "", shown
        assert problems == [], problems
    finally:
        server.stop()
    events = list(iter_events(gold))
    assert [e.value for e in events if e.field == "note"] == ["looked twice " + BIDI]  # kept as typed
    assert not [e for e in events if e.field == "first_step"]


def test_a_plain_text_trace_is_titled_by_its_source_file(browser: Browser, tmp_path: Path) -> None:
    results = write_results(tmp_path, 2)
    lines = []
    for i, line in enumerate(results.read_text(encoding="utf-8").splitlines()):
        row = json.loads(line)
        row["trace_id"] = "sha256:" + f"{i:x}" * 64  # what a plain-text trace is called
        lines.append(json.dumps(row))
    results.write_text("\n".join(lines) + "\n", encoding="utf-8")
    names = {Path(json.loads(line)["source"]["path"]).name for line in lines}
    server = Server(results, tmp_path / "gold.jsonl", tmp_path / "server.log")
    try:
        page, problems = _open(browser, server.url)
        title = page.inner_text("#transcript h3")
        assert any(title.startswith(name + " ") for name in names) and "sha256:" in title, (title, names)
        assert problems == [], problems
    finally:
        server.stop()
