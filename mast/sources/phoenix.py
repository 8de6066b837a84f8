"""Read traces from an Arize Phoenix server: ``phoenix://HOST:PORT/PROJECT``.

Finished traces are listed from Phoenix's span search (``GET /v1/projects/{project}/spans``, root
spans only, in the order Phoenix received them, paged by cursor); a trace is only listed once its
root span arrived, which OpenTelemetry exports when the span *ends*. Their spans are then read from
the OTLP form of the same search (``.../spans/otlpv1``, by trace id, paged) and normalised by the
OTLP normaliser (:mod:`mast.normalize.file_formats.otlp`), so a trace read here gives the same steps as the OTLP
file export of the same spans.

``phoenix://`` talks plain HTTP; ``phoenixs://`` (or ``phoenix+https://``) talks HTTPS. The API key,
when the server wants one, comes from ``PHOENIX_API_KEY`` (sent as a bearer token).
Only ``httpx`` is needed to read; writing annotations back (:mod:`mast.integrations.phoenix`) needs
``pip install 'mast-judge[phoenix]'``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import httpx

from mast.errors import SourceError, StoreNotFoundError, UsageError
from mast.sources import RootSpan, TraceQuery, public_url, split_store_url
from mast.trace import Trace

PAGE = 1000
"""Spans per request (the server's maximum)."""
IDS_PER_REQUEST = 50
"""Trace ids per span request (keeps the query string short)."""
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class PhoenixURL:
    """``phoenix://HOST:PORT/PROJECT`` taken apart."""

    base_url: str
    """``http(s)://HOST:PORT`` plus any path prefix before the project."""
    project: str

    @classmethod
    def parse(cls, url: str) -> PhoenixURL:
        """Split a source URL.

        Raises:
            UsageError: no host or no project.
        """
        parts = split_store_url(url, "phoenix://HOST:PORT/PROJECT")
        scheme = parts.scheme.lower()
        http = "https" if scheme in ("phoenixs", "phoenix+https") else "http"
        path = parts.path.strip("/")
        if not parts.netloc or not path:
            raise UsageError(f"{public_url(url)}: expected phoenix://HOST:PORT/PROJECT")
        prefix, _, project = path.rpartition("/")
        base = f"{http}://{parts.netloc}" + (f"/{prefix}" if prefix else "")
        return cls(base_url=base, project=project)


def http_client(base_url: str, api_key: str | None = None) -> httpx.Client:
    """An HTTP client for the Phoenix REST API, with the bearer token when there is a key."""
    key = api_key if api_key is not None else os.environ.get("PHOENIX_API_KEY")
    headers = {"authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=base_url, headers=headers, timeout=TIMEOUT_S)


class PhoenixSource:
    """A Phoenix project as a :class:`~mast.sources.TraceSource`."""

    def __init__(self, url: str, *, api_key: str | None = None, client: httpx.Client | None = None) -> None:
        self.url = public_url(url)
        self.location = PhoenixURL.parse(url)
        self.client = client or http_client(self.location.base_url, api_key)

    # -- listing ---------------------------------------------------------------------------------

    def roots(self, query: TraceQuery) -> Iterator[RootSpan]:
        """Finished traces matching ``query``, oldest received first (``limit``: the newest N)."""
        if query.filter:
            raise UsageError(f"{self.url}: Phoenix takes no --filter (use --since, --until, --root-span, --trace-id)")
        params: dict[str, Any] = {"parent_id": "null", "sort": "id"}
        if query.since is not None:
            params["start_time"] = _iso(query.since)
        if query.until is not None:
            params["end_time"] = _iso(query.until)
        if query.trace_ids:
            params["trace_id"] = list(query.trace_ids)
        if query.root_names:
            params["name"] = list(query.root_names)
        if query.limit is not None:
            # The newest N: page backwards, then hand them out in the order they arrived.
            newest = list(self._pages("spans", {**params, "order": "desc"}, stop_after=query.limit))
            found = [_root(span) for span in newest[: query.limit]]
            yield from (r for r in reversed(found) if _after(r, query.after))
            return
        last = -1
        for span in self._pages("spans", {**params, "order": "asc"}, cursor=query.after or None):
            root = _root(span)
            row = _row(root.position)
            if row < last:
                # An older server ignores sort/order and lists newest first: a position would be wrong.
                raise SourceError(f"{self.url}: this Phoenix lists spans newest first whatever mast asks; "
                                  "mast needs a server with sorted span search (arize-phoenix >= 20)")
            last = row
            if _after(root, query.after):
                yield root

    def span_counts(self, trace_ids: Sequence[str]) -> dict[str, int]:
        """Spans held per trace id."""
        counts: dict[str, int] = dict.fromkeys(trace_ids, 0)
        for batch in _batches(trace_ids):
            for span in self._pages("spans", {"trace_id": batch, "sort": "id", "order": "asc"}):
                trace_id = span["context"]["trace_id"]
                counts[trace_id] = counts.get(trace_id, 0) + 1
        return counts

    # -- reading ---------------------------------------------------------------------------------

    def read(self, trace_ids: Sequence[str]) -> dict[str, Trace]:
        """The traces, normalised through the OTLP normaliser, by trace id."""
        spans: dict[str, list[dict[str, Any]]] = {}
        for batch in _batches(trace_ids):
            for span in self._pages("spans/otlpv1", {"trace_id": batch}):
                spans.setdefault(str(span.get("trace_id")), []).append(_drop_nulls(span))
        traces: dict[str, Trace] = {}
        for trace_id in trace_ids:
            if trace_id in spans:
                traces[trace_id] = self._normalise(trace_id, spans[trace_id])
        return traces

    def _normalise(self, trace_id: str, spans: list[dict[str, Any]]) -> Trace:
        from mast.normalize import iter_traces

        # otlpv1 lists newest first; OTLP exports come in the order spans ended (oldest first).
        request = {"resourceSpans": [{"resource": {"attributes": []},
                                      "scopeSpans": [{"scope": {}, "spans": list(reversed(spans))}]}]}
        got = next(iter(iter_traces(request, format="otlp")))
        if not isinstance(got, Trace):
            raise got
        got.source.path = self.url
        got.source.format = "phoenix"
        got.metadata["phoenix"] = {"project": self.location.project, "trace_id": trace_id}
        return got

    # -- transport -------------------------------------------------------------------------------

    def _pages(
        self, endpoint: str, params: dict[str, Any], *, cursor: str | None = None, stop_after: int | None = None
    ) -> Iterator[dict[str, Any]]:
        """Every span of a paged search, following ``next_cursor``."""
        path = f"v1/projects/{quote(self.location.project, safe='')}/{endpoint}"
        seen = 0
        while True:
            page_params = {**params, "limit": PAGE if stop_after is None else min(PAGE, stop_after - seen)}
            if cursor:
                page_params["cursor"] = cursor
            payload = self._get(path, page_params)
            data = payload.get("data") or []
            yield from data
            seen += len(data)
            cursor = payload.get("next_cursor")
            if not cursor or not data or (stop_after is not None and seen >= stop_after):
                return

    def _get(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
        where = public_url(f"{self.location.base_url}/{path}")
        try:
            response = self.client.get(path, params=params)
        except httpx.HTTPError as exc:
            raise SourceError(f"{self.url}: cannot reach Phoenix at {where}: {exc}") from exc
        if response.status_code in (401, 403):
            raise SourceError(f"{self.url}: Phoenix refused the request ({response.status_code}); set PHOENIX_API_KEY")
        if response.status_code == 404:
            raise StoreNotFoundError(f"{self.url}: Phoenix has no project {self.location.project!r} (404)")
        if response.status_code >= 400:
            raise SourceError(f"{self.url}: Phoenix answered {response.status_code}: {response.text[:200]}")
        body: dict[str, Any] = response.json()
        return body

    def close(self) -> None:
        """Close the HTTP connections."""
        self.client.close()


def open_url(url: str) -> PhoenixSource:
    """The registered opener for ``phoenix://`` URLs."""
    return PhoenixSource(url)


def _root(span: dict[str, Any]) -> RootSpan:
    start = span.get("start_time")
    return RootSpan(
        trace_id=str(span["context"]["trace_id"]),
        span_id=str(span["context"]["span_id"]),
        name=str(span.get("name") or ""),
        start=datetime.fromisoformat(start) if isinstance(start, str) else None,
        position=str(span["id"]),
    )


def _after(root: RootSpan, position: str | None) -> bool:
    """Whether Phoenix received ``root`` after ``position`` (a span's global id ``Span:<row>``)."""
    if not position:  # None, or "" (from the start)
        return True
    return _row(root.position) > _row(position)


def _row(global_id: str) -> int:
    """The row number inside a Phoenix global id (base64 of ``Span:<row>``), to compare positions."""
    import base64

    try:
        return int(base64.b64decode(global_id).decode().rpartition(":")[2])
    except ValueError as exc:
        raise UsageError(f"not a Phoenix span position: {global_id!r}") from exc


def _batches(items: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(items), IDS_PER_REQUEST):
        yield list(items[start : start + IDS_PER_REQUEST])


def _drop_nulls(value: Any) -> Any:
    """The server writes every unset OTLP field as null; the normaliser reads a present key as set."""
    if isinstance(value, dict):
        return {k: _drop_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_nulls(v) for v in value]
    return value


def _iso(value: datetime) -> str:
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC).isoformat()
