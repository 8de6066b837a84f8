"""Read traces from an MLflow tracking server: ``mlflow://HOST:PORT/EXPERIMENT_NAME``.

The experiment's traces are listed with MLflow's trace search (``POST /api/3.0/mlflow/traces/search``,
oldest first by start time, a page at a time); only finished traces (state ``OK`` or ``ERROR``) are
listed. Their spans come from ``GET /api/3.0/mlflow/traces/batchGet`` (OTLP spans, as MLflow keeps
them) and are read by the MLflow trace reader (:mod:`mast.normalize.mlflow_trace`), which takes a
span's meaning from ``mlflow.spanType``, ``mlflow.spanInputs`` and ``mlflow.spanOutputs``; the OTLP
reader hands MLflow spans to the same code, so a trace read here gives the same steps as the OTLP
export of its spans. A trace's id is MLflow's (``tr-...``), which is where feedback is written
(:mod:`mast.integrations.mlflow`).

``mlflow://`` talks plain HTTP; ``mlflow+https://`` talks HTTPS. Credentials are MLflow's own
variables: ``MLFLOW_TRACKING_TOKEN`` (a bearer token) or ``MLFLOW_TRACKING_USERNAME`` and
``MLFLOW_TRACKING_PASSWORD`` (basic auth). Only ``httpx`` is needed, to read and to write.

Filters: since/until bound the start time, ``limit`` takes the newest N, ``trace_ids`` and
``root_names`` pick by id and trace name, and ``filter`` is passed to MLflow as its own search
filter (``tags.env = 'prod'``, ``trace.status = 'ERROR'``...), joined to the others with AND.

Positions (for ``mast watch``) follow the order traces *arrive*: MLflow's tracing logs a trace when
its root span ends, so a long run that started early arrives late. A position is the end time and
id of the last trace listed, plus the ids of the traces that ended within :data:`LOOKBACK_MS` before
it; the next listing asks for traces that ended since then (less the look-back, for exports that
arrive a little out of order) and leaves out the ids already listed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, unquote

import httpx

from mast.errors import SourceError, StoreNotFoundError, UsageError
from mast.sources import RootSpan, TraceQuery, public_url, split_store_url
from mast.trace import Trace

PAGE = 500
"""Traces per search request (the server's maximum)."""
IDS_PER_REQUEST = 50
"""Trace ids per batchGet request (keeps the query string short)."""
TIMEOUT_S = 60.0
FINISHED = ("OK", "ERROR")
LOOKBACK_MS = 120_000
"""How far before a position's end time the next listing looks again (late exports)."""


@dataclass(frozen=True)
class MLflowURL:
    """``mlflow://HOST:PORT/EXPERIMENT_NAME`` taken apart."""

    base_url: str
    """``http(s)://HOST:PORT``."""
    experiment: str
    """The experiment's name (may hold ``/``, as Databricks paths do)."""

    @classmethod
    def parse(cls, url: str) -> MLflowURL:
        """Split a source URL.

        Raises:
            UsageError: no host or no experiment.
        """
        parts = split_store_url(url, "mlflow://HOST:PORT/EXPERIMENT_NAME")
        http = "https" if parts.scheme.lower() in ("mlflow+https", "mlflows") else "http"
        name = unquote(parts.path.strip("/"))
        if not parts.netloc or not name:
            raise UsageError(f"{public_url(url)}: expected mlflow://HOST:PORT/EXPERIMENT_NAME")
        return cls(base_url=f"{http}://{parts.netloc}", experiment=name)


def http_client(base_url: str) -> httpx.Client:
    """An HTTP client for MLflow's REST API, with MLflow's own credential variables."""
    token = os.environ.get("MLFLOW_TRACKING_TOKEN")
    user, password = os.environ.get("MLFLOW_TRACKING_USERNAME"), os.environ.get("MLFLOW_TRACKING_PASSWORD")
    headers = {"authorization": f"Bearer {token}"} if token else {}
    auth = httpx.BasicAuth(user, password or "") if user and not token else None
    return httpx.Client(base_url=base_url, headers=headers, auth=auth, timeout=TIMEOUT_S)


class MLflowClient:
    """The few REST calls mast makes, with one-line errors (shared by the source and the feedback writer)."""

    def __init__(self, url: str, client: httpx.Client | None = None) -> None:
        self.url = public_url(url)
        self.location = MLflowURL.parse(url)
        self.http = client or http_client(self.location.base_url)  # a user:password in the URL is used here
        self._experiment_id: str | None = None

    @property
    def experiment_id(self) -> str:
        """The experiment's id, looked up by name once."""
        if self._experiment_id is None:
            body = self.call("GET", "api/2.0/mlflow/experiments/get-by-name",
                             params={"experiment_name": self.location.experiment}, missing="experiment")
            self._experiment_id = str(body["experiment"]["experiment_id"])
        return self._experiment_id

    def call(self, method: str, path: str, *, params: dict[str, Any] | None = None, json: Any = None,
             missing: str = "trace") -> dict[str, Any]:
        """One request; the JSON answer.

        Raises:
            SourceError: unreachable, refused, missing, or any other error answer.
        """
        where = public_url(f"{self.location.base_url}/{path}")
        try:
            response = self.http.request(method, path, params=params, json=json)
        except httpx.HTTPError as exc:
            raise SourceError(f"{self.url}: cannot reach MLflow at {where}: {exc}") from exc
        if response.status_code in (401, 403):
            raise SourceError(f"{self.url}: MLflow refused the request ({response.status_code}); set "
                              "MLFLOW_TRACKING_TOKEN or MLFLOW_TRACKING_USERNAME/PASSWORD")
        if response.status_code == 404 and missing == "experiment":
            raise StoreNotFoundError(f"{self.url}: MLflow has no experiment {self.location.experiment!r} (404)")
        if response.status_code == 404:
            raise SourceError(f"{self.url}: MLflow has no {missing} ({path}) (404)")
        if response.status_code >= 400:
            raise SourceError(f"{self.url}: MLflow answered {response.status_code}: {_message(response)}")
        body: dict[str, Any] = response.json() if response.content else {}
        return body

    def search(self, filter_string: str, order: str, page_size: int, stop_after: int | None = None
               ) -> Iterator[dict[str, Any]]:
        """Trace infos matching ``filter_string``, page after page."""
        token: str | None = None
        seen = 0
        while True:
            size = page_size if stop_after is None else min(page_size, stop_after - seen)
            body: dict[str, Any] = {
                "locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": self.experiment_id}}],
                "max_results": size, "order_by": [f"timestamp_ms {order}", f"request_id {order}"],
            }
            if filter_string:
                body["filter"] = filter_string
            if token:
                body["page_token"] = token
            page = self.call("POST", "api/3.0/mlflow/traces/search", json=body)
            traces = page.get("traces") or []
            yield from traces
            seen += len(traces)
            token = page.get("next_page_token")
            if not token or not traces or (stop_after is not None and seen >= stop_after):
                return

    def traces(self, trace_ids: Sequence[str]) -> list[dict[str, Any]]:
        """Whole traces (``trace_info`` + OTLP ``spans``), by id, a batch at a time."""
        found: list[dict[str, Any]] = []
        for start in range(0, len(trace_ids), IDS_PER_REQUEST):
            batch = list(trace_ids[start : start + IDS_PER_REQUEST])
            body = self.call("GET", "api/3.0/mlflow/traces/batchGet", params={"trace_ids": batch})
            found.extend(body.get("traces") or [])
        return found

    def trace_info(self, trace_id: str) -> dict[str, Any]:
        """One trace's info, its assessments included."""
        body = self.call("GET", f"api/3.0/mlflow/traces/{quote(trace_id, safe='')}")
        info: dict[str, Any] = body["trace"]["trace_info"]
        return info

    def close(self) -> None:
        """Close the HTTP connections."""
        self.http.close()


class MLflowSource:
    """An MLflow experiment as a :class:`~mast.sources.TraceSource`."""

    def __init__(self, url: str, *, client: httpx.Client | None = None) -> None:
        self.url = public_url(url)
        self.api = MLflowClient(url, client)
        self.location = self.api.location

    # -- listing ---------------------------------------------------------------------------------

    def roots(self, query: TraceQuery) -> Iterator[RootSpan]:
        """Finished traces matching ``query``, oldest first (``limit``: the newest N)."""
        clauses = []
        if query.since is not None:
            clauses.append(f"trace.timestamp_ms >= {_ms(query.since)}")
        if query.until is not None:
            clauses.append(f"trace.timestamp_ms < {_ms(query.until)}")
        if query.trace_ids:
            clauses.append(f"trace.request_id IN ({_quoted(query.trace_ids)})")
        names = set(query.root_names)
        if len(names) == 1:  # the trace name is a tag to MLflow's search: '=' only, no IN
            clauses.append(f"trace.name = {_quoted(query.root_names)}")
        if query.filter:
            clauses.append(query.filter)  # MLflow's grammar joins clauses with AND only
        if query.after is not None:
            yield from self._arrived_after(query.after, clauses, names)
            return
        where = " AND ".join(clauses)
        if query.limit is not None:
            newest = list(self.api.search(where, "DESC", PAGE, stop_after=query.limit))
            found = [_root(info) for info in reversed(newest[: query.limit]) if info.get("state") in FINISHED]
            yield from (r for r in found if not names or r.name in names)
            return
        for info in self.api.search(where, "ASC", PAGE):
            root = _root(info)
            if info.get("state") in FINISHED and (not names or root.name in names):
                yield root

    def _arrived_after(self, after: str, clauses: list[str], names: set[str]) -> Iterator[RootSpan]:
        """Finished traces that ended since the position (less the look-back), in the order they ended."""
        end, last, recent = _position(after) if after else (None, "", set())
        if end is not None:
            clauses = [*clauses, f"trace.end_time_ms >= {end - LOOKBACK_MS}"]
        # MLflow's search cannot sort by end time: the traces ended since the last poll are sorted here
        # (trace infos only; the first poll of a watch lists the whole experiment once).
        found = sorted(((_end_ms(info), str(info["trace_id"]), info) for info in self.api.search(
            " AND ".join(clauses), "ASC", PAGE) if info.get("state") in FINISHED), key=lambda x: (x[0], x[1]))
        window = [(e, t) for e, t, _ in found if end is not None and e <= end and t in recent]
        for ended, trace_id, info in found:
            if trace_id in recent or trace_id == last:
                continue
            window = [(e, t) for e, t in window if e >= ended - LOOKBACK_MS] + [(ended, trace_id)]
            root = _root(info, position=_encode(ended, trace_id, [t for _, t in window]))
            if not names or root.name in names:
                yield root

    def span_counts(self, trace_ids: Sequence[str]) -> dict[str, int]:
        """Spans held per trace id (from the size statistics MLflow keeps, else by reading the trace)."""
        counts: dict[str, int] = dict.fromkeys(trace_ids, 0)
        for whole in self.api.traces(trace_ids):
            info = whole.get("trace_info") or {}
            counts[str(info.get("trace_id"))] = len(whole.get("spans") or [])
        return counts

    # -- reading ---------------------------------------------------------------------------------

    def read(self, trace_ids: Sequence[str]) -> dict[str, Trace]:
        """The traces, normalised by the MLflow trace reader, by trace id."""
        traces: dict[str, Trace] = {}
        for whole in self.api.traces(trace_ids):
            info = whole.get("trace_info") or {}
            spans = whole.get("spans") or []
            if spans:
                trace = self._normalise(info, spans)
                traces[trace.trace_id] = trace
        return {t: traces[t] for t in trace_ids if t in traces}

    def _normalise(self, info: dict[str, Any], spans: list[dict[str, Any]]) -> Trace:
        from mast.normalize import iter_traces
        from mast.normalize._otel_attrs import hex_id

        record = {"info": _info_without_assessments(info), "data": {"spans": [as_mlflow_span(s) for s in spans]}}
        got = next(iter(iter_traces(record, format="mlflow")))
        if not isinstance(got, Trace):
            raise got
        got.source.path = self.url
        got.metadata["mlflow"] = {"experiment": self.location.experiment, "trace_id": got.trace_id}
        root = next((s for s in spans if not (s.get("parent_span_id") or s.get("parentSpanId"))), None)
        if root is not None:
            got.metadata["root_span_id"] = hex_id(root.get("span_id") or root.get("spanId"))
        return got

    def close(self) -> None:
        """Close the HTTP connections."""
        self.api.close()


def open_url(url: str) -> MLflowSource:
    """The registered opener for ``mlflow://`` URLs."""
    return MLflowSource(url)


def as_mlflow_span(span: dict[str, Any]) -> dict[str, Any]:
    """An OTLP span as MLflow's server returns it, in the span layout the MLflow reader takes.

    Attribute values are OTLP ``AnyValue`` s (a span's inputs arrive as a key-value list, or as the
    JSON text MLflow wrote); they become plain values. Ids stay as given (the reader takes base64 or hex).
    """
    from mast.normalize._otel_attrs import key_values

    return {
        "span_id": span.get("span_id") or span.get("spanId"),
        "parent_span_id": span.get("parent_span_id") or span.get("parentSpanId") or None,
        "name": span.get("name"),
        "start_time_unix_nano": span.get("start_time_unix_nano") or span.get("startTimeUnixNano"),
        "end_time_unix_nano": span.get("end_time_unix_nano") or span.get("endTimeUnixNano"),
        "status": span.get("status") or {},
        "attributes": key_values(span.get("attributes") or []),
    }


def _message(response: httpx.Response) -> str:
    """MLflow's own error message (its JSON body's ``message``), else the start of the body."""
    try:
        message = response.json().get("message")
    except ValueError:
        message = None
    return str(message)[:300] if message else response.text[:200]


def _info_without_assessments(info: dict[str, Any]) -> dict[str, Any]:
    # mast's own feedback is not part of the trace: a rerun after a write-back must see the same content.
    return {k: v for k, v in info.items() if k != "assessments"}


def _start(info: dict[str, Any]) -> datetime | None:
    start = info.get("request_time")
    return datetime.fromisoformat(start.replace("Z", "+00:00")) if isinstance(start, str) else None


def _end_ms(info: dict[str, Any]) -> int:
    """When the trace ended: its start plus its duration (``"0.101s"``), in ms."""
    start = _start(info)
    duration = str(info.get("execution_duration") or "0s").removesuffix("s")
    try:
        took = float(duration)
    except ValueError:
        took = 0.0
    return (_ms(start) if start is not None else 0) + round(took * 1000)


def _root(info: dict[str, Any], position: str | None = None) -> RootSpan:
    trace_id = str(info["trace_id"])
    tags = info.get("tags") or {}
    start, end_ms = _start(info), _end_ms(info)
    return RootSpan(trace_id=trace_id, span_id="", name=str(tags.get("mlflow.traceName") or ""), start=start,
                    position=position or _encode(end_ms, trace_id, [trace_id]),
                    end=datetime.fromtimestamp(end_ms / 1000, UTC) if start is not None else None)


def _encode(end_ms: int, trace_id: str, recent: list[str]) -> str:
    """``<end ms>:<trace id>:<ids that ended within the look-back, comma-separated>``."""
    return f"{end_ms}:{trace_id}:{','.join(recent)}"


def _position(text: str) -> tuple[int, str, set[str]]:
    ms, _, rest = text.partition(":")
    trace_id, _, recent = rest.partition(":")
    try:
        return int(ms), trace_id, {t for t in recent.split(",") if t} | {trace_id}
    except ValueError:
        raise UsageError(f"not an MLflow position: {text!r} (expected <end ms>:<trace id>:<recent ids>)") from None


def _quoted(values: Sequence[str]) -> str:
    return ", ".join("'" + v.replace("'", "\\'") + "'" for v in values)


def _ms(value: datetime) -> int:
    return int((value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp() * 1000)
