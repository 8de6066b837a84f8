"""The gold to a trace store as human annotations, and human annotations in a store back as gold.

:func:`export_gold` writes each current mode cell of a gold file (the last value of each trace,
mode and reviewer) onto the store's trace of the same id:

* Phoenix (``phoenix://HOST:PORT/PROJECT``): a trace annotation named ``mast.<code> <name>``,
  annotator kind ``HUMAN``, label ``present``/``absent``/``unsure`` (score 1 or 0 for the first two),
  explanation = the reviewer's note on the trace, identifier ``mast.gold/<reviewer>``. Phoenix
  upserts on (name, trace, identifier): one annotation per trace, mode and reviewer, updated in place.
* MLflow (``mlflow://HOST:PORT/EXPERIMENT``): a feedback assessment of the same name, source type
  ``HUMAN`` with the reviewer as source id, value ``true``/``false`` (``"unsure"`` as text),
  rationale = the note. The reviewer's entries of mast's names are updated in place, their duplicates
  deleted (:meth:`mast.integrations.mlflow.FeedbackWriter.sync`); nobody else's are touched.

:func:`import_gold` reads the other way: every human annotation or assessment in the store whose
name is a mode of the taxonomy (``mast.1.3 ...``, ``1.3``, or the mode's name) becomes a gold event
of its reviewer (the metadata's ``reviewer``, else the identifier or source id), with its note. The
events name the trace by the store's trace id, the id ``mast label URL`` records.

Example:
    >>> export_gold("gold.jsonl", "phoenix://127.0.0.1:6006/agents")          # doctest: +SKIP
    >>> import_gold("phoenix://127.0.0.1:6006/agents", "gold.jsonl")          # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from mast._words import plural
from mast.errors import UsageError
from mast.gold import GoldEvent, GoldStore, Queue, current_cells, iter_events, trace_key
from mast.sources import TraceQuery, public_url, source_scheme
from mast.taxonomy import Taxonomy, load_taxonomy

GOLD_IDENTIFIER = "mast.gold/"
"""Phoenix identifier prefix of the gold's annotations (then the reviewer's name)."""
_TRUE = {"present", "true", "yes", "1"}
_FALSE = {"absent", "false", "no", "0"}


@dataclass
class StoreReport:
    """What an export did: ``skipped`` names each trace the store does not hold (its cells not written)."""

    traces: int = 0
    cells: int = 0
    skipped: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Cell:
    trace_id: str
    code: str
    value: str
    reviewer: str
    note: str
    queue: Queue
    time: datetime


def _cells(gold: str | os.PathLike[str]) -> list[_Cell]:
    current = current_cells(iter_events(gold))
    notes = {(e.key, e.reviewer): str(e.value or "") for e in current.values() if e.field == "note"}
    return [
        _Cell(
            e.trace_id,
            e.code or "",
            str(e.value),
            e.reviewer,
            notes.get((e.key, e.reviewer), ""),
            e.queue,
            e.time,
        )
        for e in current.values()
        if e.field == "mode" and e.code and e.value in ("present", "absent", "unsure")
    ]


def _held_only(cells: list[_Cell], held: set[str], url: str, report: StoreReport) -> list[_Cell]:
    """The cells on traces the store holds; one ``skipped`` line per trace it lacks.

    A gold file can outlive the store's copy of a trace (a retention policy, another project, a
    trace reviewed from a file): writing its cells would fail the whole request, so they are left
    out and said.
    """
    lacking: dict[str, int] = {}
    for c in cells:
        if c.trace_id not in held:
            lacking[c.trace_id] = lacking.get(c.trace_id, 0) + 1
    for trace_id, count in lacking.items():
        report.skipped.append(
            f"{trace_id}: not in {public_url(url)}; its {plural(count, 'label')} not written"
        )
    return [c for c in cells if c.trace_id in held]


def _name(tax: Taxonomy, code: str) -> str:
    return f"mast.{code} {tax.mode(code).name}"


def _code_of(name: str, tax: Taxonomy) -> str | None:
    """The mode an entry's name means: ``mast.<code> ...``, ``<code>`` or ``<code> <name>``, or the name."""
    text = name.strip()
    head = text.removeprefix("mast.").split(" ", 1)[0]
    codes = set(tax.codes)
    if head in codes:
        return head
    by_name = {m.name.casefold(): m.code for m in tax.modes}
    return by_name.get(text.casefold())


def _value(raw: Any) -> str | None:
    if isinstance(raw, bool):
        return "present" if raw else "absent"
    text = str(raw).strip().casefold() if raw is not None else ""
    if text in _TRUE:
        return "present"
    if text in _FALSE:
        return "absent"
    return "unsure" if text == "unsure" else None


def export_gold(gold: str | os.PathLike[str], url: str, *, taxonomy: Taxonomy | None = None) -> StoreReport:
    """Write the gold's current mode cells to the store at ``url`` as human annotations (upserts).

    Raises:
        UsageError: ``url`` is not a Phoenix or MLflow URL, or the gold names a code not in the taxonomy.
        SourceError: the store cannot be reached or refuses the write.
    """
    tax = taxonomy or load_taxonomy()
    cells = _cells(gold)
    unknown = sorted({c.code for c in cells} - set(tax.codes))
    if unknown:
        raise UsageError(
            f"{gold}: codes not in the taxonomy: {', '.join(unknown)} (pass the taxonomy they use)"
        )
    scheme = source_scheme(url)
    if scheme == "phoenix":
        return _to_phoenix(cells, url, tax)
    if scheme == "mlflow":
        return _to_mlflow(cells, url, tax)
    raise UsageError(f"{url}: gold goes to phoenix://HOST:PORT/PROJECT or mlflow://HOST:PORT/EXPERIMENT")


def _to_phoenix(cells: list[_Cell], url: str, tax: Taxonomy) -> StoreReport:
    from mast.integrations.phoenix import log_trace_annotations
    from mast.sources.phoenix import PhoenixSource

    report = StoreReport()
    source = PhoenixSource(url)
    try:
        counts = source.span_counts(sorted({c.trace_id for c in cells}))
    finally:
        source.close()
    cells = _held_only(cells, {t for t, n in counts.items() if n}, url, report)
    rows: list[dict[str, Any]] = []
    for c in cells:
        result: dict[str, Any] = {"label": c.value}
        if c.value != "unsure":
            result["score"] = 1.0 if c.value == "present" else 0.0
        if c.note:
            result["explanation"] = c.note
        rows.append(
            {
                "trace_id": c.trace_id,
                "name": _name(tax, c.code),
                "annotator_kind": "HUMAN",
                "result": result,
                "metadata": {
                    "reviewer": c.reviewer,
                    "code": c.code,
                    "queue": c.queue,
                    "time": c.time.isoformat(),
                },
                "identifier": GOLD_IDENTIFIER + c.reviewer,
            }
        )
    log_trace_annotations(url, rows)
    report.traces, report.cells = len({c.trace_id for c in cells}), len(rows)
    return report


def _to_mlflow(cells: list[_Cell], url: str, tax: Taxonomy) -> StoreReport:
    from mast.integrations.mlflow import Feedback, FeedbackWriter

    names = {_name(tax, code) for code in tax.codes}
    writer = FeedbackWriter(url)
    report = StoreReport()
    try:
        wanted_ids = sorted({c.trace_id for c in cells})
        held = {str((t.get("trace_info") or {}).get("trace_id")) for t in writer.api.traces(wanted_ids)}
        by_trace: dict[tuple[str, str], list[_Cell]] = {}
        for c in _held_only(cells, held, url, report):
            by_trace.setdefault((c.trace_id, c.reviewer), []).append(c)
        for (trace_id, reviewer), group in sorted(by_trace.items()):
            wanted = [
                Feedback(
                    _name(tax, c.code),
                    c.value == "present" if c.value != "unsure" else "unsure",
                    c.note,
                    {"code": c.code, "queue": c.queue, "time": c.time.isoformat()},
                    "HUMAN",
                    reviewer,
                )
                for c in group
            ]

            # Only this reviewer's entries of the modes the gold holds are synced: a mode they never
            # reviewed here, but marked in MLflow's own UI, is left as it is.
            held = {f.name for f in wanted} & names

            def mine(entry: Mapping[str, Any], reviewer: str = reviewer, held: set[str] = held) -> bool:
                source = entry.get("source") or {}
                return (
                    source.get("source_type") == "HUMAN"
                    and source.get("source_id") == reviewer
                    and entry.get("assessment_name") in held
                )

            writer.sync(trace_id, wanted, mine)
            report.cells += len(wanted)
        report.traces = len({t for t, _ in by_trace})
    finally:
        writer.close()
    return report


def read_store_gold(url: str, *, taxonomy: Taxonomy | None = None) -> list[GoldEvent]:
    """The human annotations (Phoenix) or assessments (MLflow) at ``url`` that name a mode, as gold events."""
    tax = taxonomy or load_taxonomy()
    scheme = source_scheme(url)
    if scheme == "phoenix":
        return list(_from_phoenix(url, tax))
    if scheme == "mlflow":
        return list(_from_mlflow(url, tax))
    raise UsageError(f"{url}: gold comes from phoenix://HOST:PORT/PROJECT or mlflow://HOST:PORT/EXPERIMENT")


def import_gold(url: str, gold: str | os.PathLike[str], *, taxonomy: Taxonomy | None = None) -> int:
    """Append the store's human labels (:func:`read_store_gold`) to ``gold``; how many events."""
    events = read_store_gold(url, taxonomy=taxonomy)
    with GoldStore(gold) as store:
        return store.append(events)


def _events(
    url: str, trace_id: str, code: str, value: str, reviewer: str, note: str, meta: Mapping[str, Any]
) -> Iterator[GoldEvent]:
    where = public_url(url)
    queue: Queue = "improve" if meta.get("queue") == "improve" else "random"
    common: dict[str, Any] = {
        "key": trace_key(where, None, trace_id),
        "trace_id": trace_id,
        "source_path": where,
        "reviewer": reviewer,
        "queue": queue,
    }
    stamp = _time(meta.get("time"))
    if stamp is not None:
        common["time"] = stamp
    yield GoldEvent(field="mode", code=code, value=value, **common)
    if note:
        yield GoldEvent(field="note", value=note, **common)


def _time(raw: Any) -> datetime | None:
    if not isinstance(raw, str) or not raw:
        return None
    try:
        stamp = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _dedupe_notes(events: Iterator[GoldEvent]) -> Iterator[GoldEvent]:
    # A note is one per trace and reviewer, written beside each of their modes: keep it once.
    seen: set[tuple[str, str, str]] = set()
    for event in events:
        if event.field == "note":
            cell = (event.key, event.reviewer, str(event.value))
            if cell in seen:
                continue
            seen.add(cell)
        yield event


def _from_phoenix(url: str, tax: Taxonomy) -> Iterator[GoldEvent]:
    from mast.integrations.phoenix import read_annotations
    from mast.sources.phoenix import PhoenixSource

    source = PhoenixSource(url)
    try:
        ids = [root.trace_id for root in source.roots(TraceQuery())]
    finally:
        source.close()
    if not ids:
        return
    rows = read_annotations(url, ids, identifier=None)

    def events() -> Iterator[GoldEvent]:
        for row in rows:
            if row.get("annotator_kind") != "HUMAN":
                continue
            code = _code_of(str(row.get("name") or ""), tax)
            result = row.get("result") or {}
            value = _value(result.get("label"))
            if value is None and result.get("score") is not None:
                value = "present" if float(result["score"]) >= 0.5 else "absent"
            if code is None or value is None:
                continue
            meta = row.get("metadata") or {}
            identifier = str(row.get("identifier") or "")
            reviewer = str(
                meta.get("reviewer")
                or identifier.removeprefix(GOLD_IDENTIFIER)
                or row.get("user_id")
                or "phoenix"
            )
            yield from _events(
                url, str(row["trace_id"]), code, value, reviewer, str(result.get("explanation") or ""), meta
            )

    yield from _dedupe_notes(events())


def _from_mlflow(url: str, tax: Taxonomy) -> Iterator[GoldEvent]:
    from mast.sources.mlflow import MLflowSource

    source = MLflowSource(url)
    try:
        ids = [root.trace_id for root in source.roots(TraceQuery())]
        infos = [source.api.trace_info(trace_id) for trace_id in ids]
    finally:
        source.close()

    def events() -> Iterator[GoldEvent]:
        for info in infos:
            for entry in info.get("assessments") or []:
                src = entry.get("source") or {}
                if src.get("source_type") != "HUMAN" or "feedback" not in entry:
                    continue
                code = _code_of(str(entry.get("assessment_name") or ""), tax)
                value = _value((entry.get("feedback") or {}).get("value"))
                if code is None or value is None or entry.get("valid") is False:
                    continue
                reviewer = str(src.get("source_id") or "mlflow")
                yield from _events(
                    url,
                    str(entry.get("trace_id") or info["trace_id"]),
                    code,
                    value,
                    reviewer,
                    str(entry.get("rationale") or ""),
                    entry.get("metadata") or {},
                )

    yield from _dedupe_notes(events())
