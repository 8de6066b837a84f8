"""The per-trace view of ``mast report``: a filterable table of traces and, per trace, what the judge read.

Like a log viewer: the table lists every trace (filter by mode, status and agent; sort by number of
modes or cost), and opening one shows the numbered transcript the judge saw with each cited quote
highlighted inside its step, the verdicts with explanation and confidence, the first failure, usage,
and the gold labels next to the prediction when given.

The data travels as one JSON block inside the page; a small script draws only the visible page of
the table and the one open trace, so a report of thousands of traces stays responsive and the file
still works offline with no external URL.

The page is made to be shared, so it shows what the judge read and nothing more. Transcripts are
re-read from each result's ``source`` (path and record) only when the result carries the trace's
content hash, and a trace is shown only when the file still holds a trace with that hash: a results
line naming ``/etc/passwd`` (or a file that changed since) shows the verdicts with a note, never
the file. The transcript is rebuilt as the judge read it (:func:`mast.judge.material.prepare`),
redacted with the run's options (``redact_ips``, custom patterns: the same ``MAST_REDACT_PATTERNS``
file, checked by its fingerprint); the judge's own texts (explanations, quotes, summary) pass the
same rules. A run that did not redact is still redacted here, with the default rules, and says so.

Example:
    >>> section = trace_view_section(read_diagnoses("results.jsonl"))   # doctest: +SKIP
"""

from __future__ import annotations

import html
import io
import json
import re
import shutil
import tempfile
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO

import pandas as pd

from mast._render import neutralise_bidi
from mast.diagnosis import Diagnosis, Evidence
from mast.errors import MastError, TraceFormatError, one_line
from mast.redact import Redactor, current_redactor
from mast.trace import Trace

# A step longer than this keeps its head and tail around a marker, so one huge tool output cannot
# make the page unusable; cited quotes are located before the cut and kept when they fall inside it.
STEP_CHARS = 6_000
PAGE_ROWS = 100
DETAIL_FINDINGS = 2_000
"""Traces with a mode found, or not judged, whose transcript and evidence the page carries (the first ones)."""
DETAIL_CLEAN = 500
"""Judged traces with no mode found whose transcript the page carries (the first ones)."""
_SPOOL_BYTES = 8 * 2**20
_CACHED_FILES = 4


def trace_view_section(diagnoses: Iterable[Diagnosis], gold: pd.DataFrame | None = None) -> str:
    """The ``<section id='traces'>`` of the report: the embedded data, the controls and the script."""
    view = TraceView(gold)
    try:
        for diagnosis in diagnoses:
            view.add(diagnosis)
        out = io.StringIO()
        view.write_section(out)
        return out.getvalue()
    finally:
        view.close()


class TraceView:
    """The per-trace section built one diagnosis at a time: each row goes to a spool file as it comes.

    Memory stays flat in the number of traces: a row is written (as JSON) to a temporary file that
    stays in memory up to a few MB, and only the filter values (modes, statuses, agents) are held.
    The page carries the transcript and evidence of the first :data:`DETAIL_FINDINGS` traces with
    a mode found (or not judged) and of the first :data:`DETAIL_CLEAN` others; later traces get a
    compact row (their verdicts found, first failure, usage, no transcript), so a results file of
    100,000 lines makes a page that opens.
    """

    def __init__(
        self,
        gold: pd.DataFrame | None = None,
        *,
        redact_patterns: tuple[tuple[str, str], ...] = (),
        results: Path | None = None,
    ) -> None:
        self._transcripts = _TranscriptReader(redact_patterns, results=results)
        self._gold = _gold_votes(gold) if gold is not None else {}
        self._spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_BYTES, mode="w+", encoding="utf-8")
        self.count = 0
        self.unshown = 0
        """Detailed rows drawn without their transcript (source gone, changed, unreadable...)."""
        self.first_unshown: str | None = None
        """The reason the first of them gives."""
        self._details = {"finding": 0, "clean": 0}
        self._codes: set[str] = set()
        self._agents: set[str] = set()
        self._statuses: set[str] = set()

    def add(self, diagnosis: Diagnosis) -> None:
        """Draw one trace's row."""
        gold = self._gold.get(diagnosis.trace_id, {})
        kind = "finding" if diagnosis.status != "judged" or diagnosis.present_codes else "clean"
        budget = DETAIL_FINDINGS if kind == "finding" else DETAIL_CLEAN
        if self._details[kind] < budget:
            self._details[kind] += 1
            row = _row(diagnosis, self._transcripts, gold)
            if not row["steps"] and row["note"] and diagnosis.trace_hash:  # one read when judged
                self.unshown += 1
                self.first_unshown = self.first_unshown or row["note"]
        else:
            row = _compact_row(diagnosis, gold, self._transcripts.scrubber(diagnosis)[0])
        self._codes.update(v["code"] for v in row["modes"] if v["present"])
        self._agents.update(row["agents"])
        self._statuses.add(row["status"])
        text = json.dumps(row, ensure_ascii=False).replace("<", "\\u003c")
        self._spool.write(text if not self.count else ", " + text)
        self.count += 1

    def write_section(self, out: TextIO) -> None:
        """Write the section: the controls, the table, the rows drawn so far and the script."""
        codes = sorted(self._codes, key=_code_key)
        controls = (
            "<div class='controls'>"
            + _select("f-mode", "Mode", [("", "any")] + [(c, c) for c in codes])
            + _select("f-status", "Status", [("", "any")] + [(s, s) for s in sorted(self._statuses)])
            + _select("f-agent", "Agent", [("", "any")] + [(a, a) for a in sorted(self._agents)])
            + _select("f-sort", "Sort by", [("modes", "modes found"), ("cost", "cost"), ("id", "trace id")])
            + "<span id='f-count' class='note'></span></div>"
        )
        table = (
            "<table id='trace-table'><thead><tr><th class='text'>trace</th><th class='text'>status</th>"
            "<th class='text'>modes found</th><th>n</th><th class='text'>first failure</th><th>cost (USD)</th>"
            "<th class='text'>agents</th></tr></thead><tbody></tbody></table>"
            "<div id='pager'><button id='prev' type='button'>previous</button> <span id='page'></span> "
            "<button id='next' type='button'>next</button></div>"
        )
        out.write(
            f"<section id='traces'><h2>Traces ({self.count})</h2>"
            "<p class='note'>Click a trace to open it: the transcript is the one the judge read, redacted with the "
            "same rules and options as the run (secrets show as [REDACTED:kind]); it is shown only when the source "
            "file still holds the judged trace (same content hash). Each cited quote is highlighted in its step; "
            "unverified quotes (not found in the cited step) are listed in red.</p>"
            + controls
            + table
            + "<div id='trace-detail' hidden></div>"
            + "<script type='application/json' id='mast-traces'>["
        )
        self._spool.seek(0)
        shutil.copyfileobj(self._spool, out)
        self._spool.seek(0, io.SEEK_END)
        out.write("]</script>" + f"<script>{script_text()}</script></section>")

    def close(self) -> None:
        """Drop the spooled rows."""
        self._spool.close()


class TraceRows:
    """One trace's detailed row as this view draws it: the redacted transcript, marks, verdicts (``mast review``).

    The same rules as the report: the transcript is shown only when the source file still holds the
    judged trace (same content hash), redacted with the run's options.
    """

    def __init__(self, *, redact_patterns: tuple[tuple[str, str], ...] = ()) -> None:
        self._transcripts = _TranscriptReader(redact_patterns)

    def row(self, diagnosis: Diagnosis) -> dict[str, Any]:
        """The row of ``diagnosis`` (JSON-ready), with its transcript and evidence."""
        return _row(diagnosis, self._transcripts, {})


def script_text() -> str:
    """The text of the section's ``<script>`` element, as written (its hash goes into the page's CSP)."""
    return _SCRIPT.replace("__PAGE_ROWS__", str(PAGE_ROWS))


STYLE = """
.controls label{margin-right:1rem;font-size:.85rem}#trace-table tbody tr{cursor:pointer}#trace-table tbody tr:hover{background:#f6f8ff}
#trace-detail{border:1px solid #ccd;padding:.5rem 1rem;margin-top:1rem;background:#fcfcff}
.step{border-left:3px solid #ddd;margin:.4rem 0;padding:.2rem .6rem;white-space:pre-wrap;font-family:ui-monospace,monospace;font-size:.78rem}
.step.cited{border-left-color:#d9534f}mark{background:#ffe08a}
.verdict.present{color:#b02a2a}.unverified{color:#b02a2a}.gold-miss{background:#fde2e2}
.src{color:#667;font-size:.8em}
"""


def _row(diagnosis: Diagnosis, transcripts: _TranscriptReader, gold: dict[str, list[bool]]) -> dict[str, Any]:
    from mast.judge.material import prepare

    scrub, options, withheld = transcripts.scrubber(diagnosis)
    trace, note = transcripts.get(diagnosis) if withheld is None else (None, withheld)
    cited: dict[int, list[Evidence]] = defaultdict(list)
    for verdict in diagnosis.failure_modes:
        for evidence in verdict.evidence:
            if evidence.step is not None:
                cited[evidence.step].append(evidence)
    steps: list[dict[str, Any]] = []
    agents: list[str] = []
    task = ""
    if trace is not None:
        # What the judge read: rendered, capped and redacted by the judge's own preparation.
        material = prepare(trace, redact=True, redact_ips=options[0], redact_patterns=options[1])
        by_index = {s.index: s for s in trace.steps}
        for index, text in material.blocks:
            agent = by_index[index].agent if index in by_index else None
            steps.append(
                _step(
                    index,
                    scrub(agent) if agent else agent,
                    text,
                    [_scrubbed(e, scrub) for e in cited.get(index, [])],
                )
            )
        agents = sorted({scrub(a.name) for a in trace.agents if a.name})
        task = scrub(trace.task or "")
        if diagnosis.judge.params.get("redact") is False:
            note = _UNREDACTED_RUN
    first = diagnosis.first_failure
    # The agent filter offers the trace's own agents; a first failure's agent joins them only when
    # the trace could not be read (an older result may name one the trace does not have).
    if trace is None and first and first.agent and scrub(first.agent) not in agents:
        agents.append(scrub(first.agent))
    modes = [
        {
            "code": v.code,
            "name": v.name,
            "present": v.present,
            "confidence": v.confidence,
            "explanation": scrub(v.explanation),
            "gold": gold.get(v.code),
            "hints": [scrub(h) for h in v.hints or []],
            "evidence": [
                {"step": e.step, "quote": scrub(e.quote), "verified": e.verified} for e in v.evidence
            ],
        }
        for v in diagnosis.failure_modes
    ]
    return _view_row(diagnosis, task=task, note=note, agents=agents, modes=modes, steps=steps, scrub=scrub)


_UNREDACTED_RUN = (
    "This run did not redact what it sent to the judge; the page shows the transcript redacted with "
    "the default rules all the same."
)


def _scrubbed(evidence: Evidence, scrub: Scrub) -> Evidence:
    return evidence.model_copy(update={"quote": scrub(evidence.quote)})


def _compact_row(diagnosis: Diagnosis, gold: dict[str, list[bool]], scrub: Scrub) -> dict[str, Any]:
    """A row past the detail budget: what the table shows and the verdicts found, no transcript or quotes."""
    first = diagnosis.first_failure
    modes = [
        {
            "code": v.code,
            "name": v.name,
            "present": v.present,
            "confidence": v.confidence,
            "explanation": scrub(v.explanation),
            "gold": gold.get(v.code),
            "hints": [scrub(h) for h in v.hints or []],
            "evidence": [],
        }
        for v in diagnosis.failure_modes
        if v.present or v.code in gold or v.hints
    ]
    return _view_row(
        diagnosis,
        task="",
        note=_LEFT_OUT,
        agents=[scrub(first.agent)] if first and first.agent else [],
        modes=modes,
        steps=[],
        scrub=scrub,
    )


def _view_row(
    diagnosis: Diagnosis,
    *,
    task: str,
    note: str | None,
    agents: list[str],
    modes: list[dict[str, Any]],
    steps: list[dict[str, Any]],
    scrub: Scrub,
) -> dict[str, Any]:
    """One row of the trace view; the detailed and the compact row differ only in the arguments."""
    first = diagnosis.first_failure
    usage = diagnosis.usage
    return {
        "key": row_key(diagnosis),
        "id": diagnosis.trace_id,
        "status": diagnosis.status,
        "error": scrub(diagnosis.error.message) if diagnosis.error else None,
        "source": _source_label(diagnosis),
        "task": task,
        "note": note,
        "agents": agents,
        "summary": scrub(diagnosis.summary),
        "task_completed": diagnosis.task_completed,
        "first_failure": first.model_copy(
            update={
                "agent": scrub(first.agent) if first.agent else first.agent,
                "explanation": scrub(first.explanation),
            }
        ).model_dump()
        if first
        else None,
        "usage": {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cost_usd": usage.cost_usd,
            "llm_calls": usage.llm_calls,
            "latency_s": round(usage.latency_s, 3),
            "cached": usage.cached,
        },
        "judge": diagnosis.judge.model or diagnosis.judge.kind,
        # What the judge's run noted about this answer (repaired quotes, detectors that disagree with
        # the LLM under --judge both): shown with the verdicts, never only in the JSON.
        "warnings": [scrub(w) for w in diagnosis.warnings],
        "modes": modes,
        "steps": steps,
    }


_LEFT_OUT = (
    f"Transcript and quotes left out of this page: it carries them for the first {DETAIL_FINDINGS:,} traces with a "
    f"mode found or not judged and the first {DETAIL_CLEAN:,} others. A report on a smaller results file shows them."
)


def _step(index: int, agent: str | None, text: str, evidence: list[Evidence]) -> dict[str, Any]:
    text = neutralise_bidi(text)  # the quotes come scrubbed (neutralised alike), so they still match
    spans = [span for e in evidence if (span := locate(text, e.quote)) is not None]
    text, spans = _cap(text, spans)
    return {"i": index, "agent": agent, "text": text, "marks": sorted(spans)}


def locate(text: str, quote: str) -> tuple[int, int] | None:
    """Where ``quote`` stands in ``text``, ignoring differences of whitespace; ``None`` when absent."""
    words = quote.split()
    if not words:
        return None
    pattern = r"\s+".join(re.escape(w) for w in words)
    found = re.search(pattern, text)
    return (found.start(), found.end()) if found else None


def _cap(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    if len(text) <= STEP_CHARS:
        return text, spans
    # Keep the head, the tail and every highlighted stretch; cut the rest with visible markers.
    keep = [(0, STEP_CHARS // 2), (len(text) - STEP_CHARS // 2, len(text)), *spans]
    keep.sort()
    merged: list[list[int]] = []
    for start, end in keep:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out, new_spans, previous = [], [], 0
    length = 0
    for start, end in merged:
        if start > previous:
            marker = f"[... {start - previous} chars cut ...]"
            out.append(marker)
            length += len(marker)
        for s, e in spans:
            if start <= s and e <= end:
                new_spans.append((length + s - start, length + e - start))
        out.append(text[start:end])
        length += end - start
        previous = end
    return "".join(out), new_spans


Scrub = Callable[[str], str]
"""Redacts one text of the judge's answer (explanation, quote, summary) for the page."""


class _TranscriptReader:
    """Re-reads each result's source, keeping the last few files parsed.

    A JSONL of many traces is parsed once while its results come in a row (results follow their
    files' order); memory holds at most :data:`_CACHED_FILES` parsed files. A result without a
    content hash is never looked up, and a file is shown only through a trace with that hash.
    """

    def __init__(self, patterns: tuple[tuple[str, str], ...] = (), *, results: Path | None = None) -> None:
        # each cached file's records in order (a record that no longer reads as its error), or why none read
        self._files: OrderedDict[str, list[Trace | TraceFormatError] | str] = OrderedDict()
        # each cached file's traces by content hash, built on the first result that names no record
        self._by_hash: dict[str, dict[str, Trace]] = {}
        self._results_dir = results.parent if results is not None else None
        self._patterns = patterns
        self._fingerprint: str | None = None
        self._fingerprinted = False
        self._redactors: dict[bool, Redactor] = {}

    def scrubber(
        self, diagnosis: Diagnosis
    ) -> tuple[Scrub, tuple[bool, tuple[tuple[str, str], ...]], str | None]:
        """How to redact this result's texts, the options for its transcript, and why it is withheld (or ``None``).

        The run's options come from the result (``judge.params``): ``redact_ips`` as it was, custom
        patterns when this report has the same ones (by fingerprint). A run with patterns this report
        lacks gets the default rules for its texts and no transcript.
        """
        params = diagnosis.judge.params
        ips = bool(params.get("redact_ips", False))
        if ips not in self._redactors:
            self._redactors[ips] = current_redactor(ips=ips, patterns=self._patterns)
        redactor = self._redactors[ips]

        def scrub(text: str) -> str:
            # Redacted, then BiDi controls shown as escapes: a page never draws text other than the trace's.
            return neutralise_bidi(redactor.redact(text).text) if text else text

        recorded = params.get("redact_patterns")
        withheld = None
        if recorded and recorded != self._custom_fingerprint():
            withheld = (
                f"the run redacted with custom patterns ({recorded}) this report does not have: transcript not "
                "shown; set MAST_REDACT_PATTERNS to the run's patterns file to show it"
            )
        return scrub, (ips, self._patterns), withheld

    def _custom_fingerprint(self) -> str | None:
        if not self._fingerprinted:
            from mast.judge.config import JudgeConfig

            self._fingerprint = JudgeConfig(redact_patterns=self._patterns).redact_patterns_fingerprint()
            self._fingerprinted = True
        return self._fingerprint

    def get(self, diagnosis: Diagnosis) -> tuple[Trace | None, str | None]:
        path = diagnosis.source.path
        if not path:
            return None, "no source path in the result: transcript not available"
        if not diagnosis.trace_hash:
            # Without the hash nothing ties the path to what was judged: it is not read at all.
            return (
                None,
                f"{path}: the result has no content hash, so the file is not read (transcript not shown)",
            )
        # The path as the run was given it holds from where the run started; the one relative to
        # the results file holds when both moved together; the absolute one holds on the same
        # machine. Each is read only through the content hash, so a wrong file is never shown.
        places = list(dict.fromkeys(self._places(diagnosis)))
        if not any(Path(place).is_file() for place in places):
            return None, f"{path}: source file not found, transcript not available"
        note = None
        for place in places:
            if not Path(place).is_file():
                continue
            trace, note = self._find(place, diagnosis)
            if trace is not None:
                return trace, None
        return None, note

    def _places(self, diagnosis: Diagnosis) -> list[str]:
        source = diagnosis.source
        places = [source.path] if source.path else []
        if source.results_relative_path and self._results_dir is not None:
            places.append(str(self._results_dir / source.results_relative_path))
        if source.absolute_path:
            places.append(source.absolute_path)
        return places

    def _find(self, path: str, diagnosis: Diagnosis) -> tuple[Trace | None, str | None]:
        if path in self._files:
            self._files.move_to_end(path)
        else:
            self._files[path] = self._read(path, diagnosis.source.format)
            if len(self._files) > _CACHED_FILES:
                self._by_hash.pop(self._files.popitem(last=False)[0], None)
        items = self._files[path]
        if isinstance(items, str):
            return None, items
        # A record that no longer reads hides only its own transcript, not its file's other ones.
        record = diagnosis.source.record
        candidates = [t for t in items if isinstance(t, Trace) and t.trace_id == diagnosis.trace_id]
        at = items[record or 0] if 0 <= (record or 0) < len(items) else None
        if isinstance(at, Trace):
            candidates.append(at)
        for trace in candidates:
            if trace.content_hash() == diagnosis.trace_hash:
                return trace, None
        if record is None and diagnosis.trace_hash:
            # A result that names the file but not its place in it (a Scout scan names the Inspect log
            # and its own transcript id) is found by the hash alone: the same check, over every trace.
            if path not in self._by_hash:
                self._by_hash[path] = {t.content_hash(): t for t in reversed(items) if isinstance(t, Trace)}
            found = self._by_hash[path].get(diagnosis.trace_hash)
            if found is not None:
                return found, None
        if isinstance(at, TraceFormatError) and record is not None:
            return None, f"{path}: record {record} no longer reads ({one_line(at)}): transcript not shown"
        first = items[0] if items else None
        if isinstance(first, TraceFormatError) and all(isinstance(i, TraceFormatError) for i in items):
            return None, f"{path}: transcript not available ({one_line(first)})"
        return None, (
            f"{path}: no trace in the file has the judged trace's content hash "
            "(changed or not the judged file): transcript not shown"
        )

    @staticmethod
    def _read(path: str, format: str | None) -> list[Trace | TraceFormatError] | str:
        from mast.normalize import iter_traces

        if not Path(path).is_file():
            what = "is a folder now" if Path(path).is_dir() else "not found"
            return f"{path}: source file {what}, transcript not available"
        try:
            return list(iter_traces(path, format=format or "auto"))
        except (MastError, OSError) as exc:
            return f"{path}: transcript not available ({exc})"


def _gold_votes(gold: pd.DataFrame) -> dict[str, dict[str, list[bool]]]:
    votes: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for trace_id, code, present in zip(gold["trace_id"], gold["code"], gold["present"], strict=True):
        if present is None or pd.isna(present):
            continue
        votes[str(trace_id)][str(code)].append(bool(present))
    return {t: dict(m) for t, m in votes.items()}


def row_key(diagnosis: Diagnosis) -> str:
    """What tells one row of the trace view from another: source file, record and trace id.

    Two files may hold traces of the same id (two runs of one task): the id alone would open the
    first one's transcript for both.
    """
    source = diagnosis.source
    return f"{source.path or ''}#{source.record if source.record is not None else ''}#{diagnosis.trace_id}"


def _source_label(diagnosis: Diagnosis) -> str:
    source = diagnosis.source
    if not source.path:
        return ""
    return source.path + (f"#{source.record}" if source.record else "")


def _select(element_id: str, label: str, options: Iterable[tuple[str, str]]) -> str:
    items = "".join(
        f"<option value='{html.escape(v, quote=True)}'>{html.escape(t)}</option>" for v, t in options
    )
    return f"<label>{html.escape(label)} <select id='{element_id}'>{items}</select></label>"


def _code_key(code: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in code.split("."))


# Plain DOM code, no framework: the page must open from a file with nothing else around it.
_SCRIPT = r"""
(function(){
const rows = JSON.parse(document.getElementById('mast-traces').textContent);
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g, (c) => ({'&':'&amp;','<':'&lt;','>':'&gt;','"':'&quot;',"'":'&#39;'}[c]));
const found = (r) => r.modes.filter((m) => m.present === true).map((m) => m.code);
let page = 0;
function visible(){
  const mode = $('f-mode').value, status = $('f-status').value, agent = $('f-agent').value, sort = $('f-sort').value;
  const out = rows.filter((r) => (!mode || found(r).includes(mode)) && (!status || r.status === status)
                                 && (!agent || r.agents.includes(agent)));
  const key = {modes: (r) => -found(r).length, cost: (r) => -(r.usage.cost_usd ?? -1), id: (r) => r.id}[sort];
  return out.sort((a, b) => { const x = key(a), y = key(b); return x < y ? -1 : x > y ? 1 : (a.id < b.id ? -1 : 1); });
}
function draw(){
  const list = visible(), pages = Math.max(1, Math.ceil(list.length / __PAGE_ROWS__));
  page = Math.min(page, pages - 1);
  const shown = list.slice(page * __PAGE_ROWS__, (page + 1) * __PAGE_ROWS__);
  $('trace-table').tBodies[0].innerHTML = shown.map((r) => {
    const f = r.first_failure;
    const ff = f ? [f.step != null ? `step ${f.step}` : '', f.agent || '', f.code || ''].filter(Boolean).join(', ') : '';
    const cost = r.usage.cost_usd == null ? '–' : r.usage.cost_usd.toFixed(4);
    const file = r.source ? ` <span class="src">${esc(r.source.split('/').pop())}</span>` : '';
    return `<tr data-key="${esc(r.key)}" data-id="${esc(r.id)}"><td class="text">${esc(r.id)}${file}</td><td class="text">${esc(r.status)}</td>` +
      `<td class="text">${esc(found(r).join(', '))}</td><td>${found(r).length}</td><td class="text">${esc(ff)}</td>` +
      `<td>${cost}</td><td class="text">${esc(r.agents.join(', '))}</td></tr>`;
  }).join('');
  $('f-count').textContent = `${list.length} of ${rows.length} traces`;
  $('page').textContent = `page ${page + 1} of ${pages}`;
}
function marked(step){
  let html = '', at = 0;
  for (const [s, e] of step.marks) {
    if (s < at) continue;
    html += esc(step.text.slice(at, s)) + '<mark>' + esc(step.text.slice(s, e)) + '</mark>';
    at = e;
  }
  return html + esc(step.text.slice(at));
}
// A row is found by its key (file, record, id); a link that carries only a trace id (older pages,
// the disagreements table) opens the first row of that id.
function open(key){
  const r = rows.find((x) => x.key === key) || rows.find((x) => x.id === key);
  if (!r) return;
  const cited = new Set(r.modes.flatMap((m) => m.evidence.map((e) => e.step)));
  const verdicts = r.modes.filter((m) => m.present !== null || m.gold || (m.hints || []).length).map((m) => {
    const gold = m.gold ? m.gold.map((v) => v ? 'yes' : 'no').join('/') : '–';
    const miss = m.gold && m.present !== null && m.gold.filter((v) => v === m.present).length * 2 <= m.gold.length;
    const hints = (m.hints || []).map((h) => `<div class="hint">hint: ${esc(h)}</div>`).join('');
    const ev = m.evidence.map((e) => `<div class="${e.verified ? '' : 'unverified'}">S${esc(e.step)}: “${esc(e.quote)}”${e.verified ? '' : ' (not found in the step)'}</div>`).join('');
    return `<tr class="${miss ? 'gold-miss' : ''}" data-code="${esc(m.code)}"><td class="text">${esc(m.code)} ${esc(m.name)}</td>` +
      `<td class="text verdict ${m.present ? 'present' : ''}">${m.present === null ? ((m.hints || []).length ? 'not assessed (hint)' : 'not assessed') : m.present ? 'present' : 'absent'}</td>` +
      `<td>${m.confidence == null ? '–' : m.confidence.toFixed(2)}</td><td class="text">${gold}</td>` +
      `<td class="text">${esc(m.explanation)}${hints}${ev}</td></tr>`;
  }).join('');
  const ff = r.first_failure;
  const u = r.usage;
  $('trace-detail').innerHTML =
    `<h3>${esc(r.id)}</h3><p class="note">${esc(r.source)} · judge ${esc(r.judge)} · status ${esc(r.status)}` +
    `${r.error ? ' · ' + esc(r.error) : ''}</p>` +
    (r.task ? `<p><b>Task:</b> ${esc(r.task.slice(0, 2000))}</p>` : '') +
    (r.summary ? `<p><b>Summary:</b> ${esc(r.summary)}</p>` : '') +
    (r.warnings || []).map((w) => `<p class="note warning">warning: ${esc(w)}</p>`).join('') +
    (ff ? `<p id="trace-first-failure"><b>First failure:</b> ${[ff.step != null ? 'step ' + esc(ff.step) : '', ff.agent ? 'agent ' + esc(ff.agent) : '', esc(ff.code || '')].filter(Boolean).join(', ')}${ff.explanation ? ': ' + esc(ff.explanation) : ''}</p>` : '') +
    `<p class="note">tokens ${u.input_tokens} in / ${u.output_tokens} out · cost ${u.cost_usd == null ? (u.llm_calls === 0 ? '$0.0000' : 'unknown') : '$' + u.cost_usd.toFixed(4)}` +
    ` · ${u.llm_calls} LLM call${u.llm_calls === 1 ? '' : 's'} · ${u.latency_s} s${u.cached ? ' · from cache' : ''}</p>` +
    `<table class="verdicts"><thead><tr><th class="text">mode</th><th class="text">verdict</th><th>confidence</th>` +
    `<th class="text">gold</th><th class="text">explanation and evidence</th></tr></thead><tbody>${verdicts}</tbody></table>` +
    (r.note ? `<p class="note">${esc(r.note)}</p>` : '') +
    `<div class="transcript">${r.steps.map((s) => `<div class="step${cited.has(s.i) ? ' cited' : ''}" data-step="${s.i}">` +
      `${marked(s)}</div>`).join('')}</div>`;
  $('trace-detail').hidden = false;
  history.replaceState(null, '', '#trace=' + encodeURIComponent(r.key));
  $('trace-detail').scrollIntoView();
}
for (const id of ['f-mode', 'f-status', 'f-agent', 'f-sort']) $(id).addEventListener('change', () => { page = 0; draw(); });
$('prev').addEventListener('click', () => { page = Math.max(0, page - 1); draw(); });
$('next').addEventListener('click', () => { page += 1; draw(); });
$('trace-table').tBodies[0].addEventListener('click', (ev) => { const tr = ev.target.closest('tr'); if (tr) open(tr.dataset.key); });
draw();
// A link to `report.html#trace=ID` opens that trace, on load and when the hash changes; a fragment
// that is not valid percent-encoding (decodeURIComponent throws URIError) is ignored.
function follow(){
  let wanted = '';
  try { wanted = decodeURIComponent((location.hash.match(/^#trace=(.*)$/) || [])[1] || ''); } catch (e) { return; }
  if (wanted) open(wanted);
}
window.addEventListener('hashchange', follow);
follow();
})();
"""
