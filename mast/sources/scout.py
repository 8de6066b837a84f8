"""An Inspect Scout transcript database as a trace store: ``mast label scout:///path/to/db``.

Scout imports transcripts into a database of its own (a folder of Parquet files, local or on S3)
from stores mast does not read (LangSmith, Logfire, Weave, ...) and from Inspect logs. This source
reads it with Scout's public reader (:func:`inspect_scout.transcripts_from`): each transcript is
one :class:`~mast.trace.Trace` whose messages are read exactly as mast's Inspect log reader reads
a sample's (:func:`trace_from_transcript`), whose trace id is Scout's transcript id (the id Scout's
scan results and validation sets use) and whose ``source.path`` is the ``scout://`` URL.

The URL is ``scout://`` followed by the database's location: ``scout:///abs/path``,
``scout://relative/path``, ``scout://~/db`` or ``scout://s3://bucket/db``. ``--filter`` takes
Scout's own SQL ``WHERE`` clause over the transcript columns (``--filter "task_set = 'cybench'"``);
``--since``/``--until`` bound the transcript's date. Listing is ordered by date; the database has no
order of arrival, so ``mast watch`` does not follow one (label it again: the run resumes).

Reading needs the ``scout`` extra: ``pip install 'mast-judge[scout]'``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mast._sync import run_sync
from mast.errors import UsageError
from mast.sources import RootSpan, TraceQuery
from mast.trace import SourceInfo, Trace

if TYPE_CHECKING:
    from inspect_scout import Transcript, TranscriptInfo, Transcripts

__all__ = ["ScoutSource", "open_url", "trace_from_transcript"]

INSTALL_HINT = "reading a Scout transcript database needs Inspect Scout: pip install 'mast-judge[scout]'"


def _dump(value: Any) -> Any:
    return value.model_dump(mode="json", exclude_none=True) if hasattr(value, "model_dump") else value


def trace_from_transcript(transcript: Transcript, *, path: str | None = None) -> Trace:
    """A Scout transcript as a :class:`~mast.trace.Trace`, its trace id the Scout transcript id.

    The messages are read as an Inspect log sample's are
    (:func:`mast.normalize.file_formats.inspect_log.sample_trace`), so each step keeps its message
    id (:attr:`~mast.trace.Step.id`); the transcript's ``model`` events, where it was read with
    them, give each assistant step its model, token usage and time, as in the log. ``path``: the trace's ``source.path`` (default: where Scout
    says the transcript came from, ``source_uri``).
    """
    from mast.normalize.file_formats.inspect_log import sample_trace

    sample = {
        "id": transcript.task_id,
        "epoch": transcript.task_repeat,
        "messages": [_dump(m) for m in transcript.messages],
        "metadata": dict(transcript.metadata or {}),
        # model events, where read, give each assistant step its model, usage and time
        "events": [_dump(e) for e in transcript.events],
    }
    info = {"eval_id": transcript.source_id, "task": transcript.task_set, "model": transcript.model}
    source = SourceInfo(format="inspect_log", variant="scout", path=path or transcript.source_uri)
    trace = sample_trace(sample, eval_info={k: v for k, v in info.items() if v}, source=source)
    # Scout keys results, validation cases and its database by transcript id: the trace says the same.
    scout = trace.metadata.setdefault("scout", {})
    scout["transcript_id"] = transcript.transcript_id
    if transcript.source_uri:
        scout["source_uri"] = transcript.source_uri
    return trace.model_copy(update={"trace_id": transcript.transcript_id})


def location_of(url: str) -> str:
    """The database location a ``scout://`` URL names (``~`` expanded; another URL kept as it is).

    Raises:
        UsageError: the URL names no location, or a local one that does not exist.
    """
    _, sep, rest = url.partition("://")
    if not sep or not rest:
        raise UsageError(f"{url}: name the Scout database, as in scout:///path/to/db")
    if "://" in rest:  # s3://bucket/db and other locations Scout reads itself
        return rest
    local = Path(rest).expanduser()
    if not local.exists():
        raise UsageError(f"{url}: no Scout transcript database at {local}")
    return str(local)


def _date(info: TranscriptInfo) -> datetime | None:
    if not info.date:
        return None
    try:
        when = datetime.fromisoformat(info.date)
    except ValueError:
        return None
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


class ScoutSource:
    """The transcripts of one Scout database, as a :class:`~mast.sources.TraceSource`."""

    def __init__(self, url: str) -> None:
        """Open the database ``url`` names (nothing is read until :meth:`roots`).

        Raises:
            UsageError: Inspect Scout is not installed, or the URL names no database.
        """
        try:
            import inspect_scout  # noqa: F401 - only whether it is there
        except ImportError as exc:
            raise UsageError(INSTALL_HINT) from exc
        self.url = url
        self.location = location_of(url)
        self._infos: dict[str, TranscriptInfo] = {}

    def _collection(self, query: TraceQuery) -> Transcripts:
        from inspect_scout import columns, transcripts_from

        found = transcripts_from(self.location)
        if query.filter:
            found = found.where(query.filter)
        if query.trace_ids:
            found = found.where(columns.transcript_id.in_(list(query.trace_ids)))
        return found

    def roots(self, query: TraceQuery) -> Iterator[RootSpan]:
        """The transcripts matching ``query``, oldest first (by date, then id).

        Raises:
            UsageError: ``query.after`` is set (``mast watch``), or Scout refuses the filter.
        """
        if query.after is not None:
            raise UsageError(
                f"{self.url}: a Scout database has no order of arrival to follow; run mast label on it again "
                "(it resumes) instead of mast watch"
            )
        if query.root_names:
            raise UsageError(f"{self.url}: --root-span is for span stores; use --filter \"task_set = '...'\"")
        try:
            infos = run_sync(self._index(self._collection(query)))
        except UsageError:
            raise
        except Exception as exc:  # Scout's query and storage errors: translated here, once
            raise UsageError(f"{self.url}: Scout cannot list the transcripts ({exc})") from exc
        kept = [
            (when, info)
            for info in infos
            if ((when := _date(info)) is None or query.since is None or when >= query.since)
            and (when is None or query.until is None or when < query.until)
        ]
        kept.sort(key=lambda pair: (pair[0] or datetime.min.replace(tzinfo=UTC), pair[1].transcript_id))
        if query.limit is not None:
            kept = kept[-query.limit :] if query.limit > 0 else []
        for position, (when, info) in enumerate(kept):
            self._infos[info.transcript_id] = info
            yield RootSpan(
                trace_id=info.transcript_id,
                span_id=info.transcript_id,
                name=info.task_set or info.source_type or "transcript",
                start=when,
                position=f"{position:012d}",
            )

    @staticmethod
    async def _index(collection: Transcripts) -> list[TranscriptInfo]:
        async with collection.reader() as reader:
            return [info async for info in reader.index()]

    def read(self, trace_ids: Sequence[str]) -> dict[str, Trace]:
        """The given transcripts (listed by :meth:`roots` first) as traces, by transcript id.

        Raises:
            UsageError: Scout cannot read the database.
        """
        wanted = [self._infos[t] for t in trace_ids if t in self._infos]
        if not wanted:
            return {}
        try:
            transcripts = run_sync(self._read(wanted))
        except Exception as exc:  # as in roots: one boundary for Scout's errors
            raise UsageError(f"{self.url}: Scout cannot read the transcripts ({exc})") from exc
        traces = (trace_from_transcript(t, path=self.url) for t in transcripts)
        return {trace.trace_id: trace for trace in traces if trace.steps}

    async def _read(self, infos: list[TranscriptInfo]) -> list[Transcript]:
        from inspect_scout import TranscriptContent

        collection = self._collection(TraceQuery(trace_ids=[i.transcript_id for i in infos]))
        async with collection.reader() as reader:
            return [
                await reader.read(info, TranscriptContent(messages="all", events=["model"])) for info in infos
            ]

    def span_counts(self, trace_ids: Sequence[str]) -> dict[str, int]:
        """The message count Scout holds for each transcript listed."""
        return {t: info.message_count or 0 for t in trace_ids if (info := self._infos.get(t)) is not None}

    def close(self) -> None:
        """Nothing to release: each read opens and closes Scout's reader."""
        self._infos.clear()


def open_url(url: str) -> ScoutSource:
    """The source of a ``scout://`` URL (see the module docs)."""
    return ScoutSource(os.fspath(url))
