"""The review app's local web server (aiohttp): one page, a small JSON API, and the guards around both.

aiohttp is the server (a maintained HTTP implementation; mast already uses it for the fake provider).
It listens on 127.0.0.1 only, on a free port, and every request must carry the session's random
token (``?token=`` on the page, the ``X-Mast-Token`` header on the API). A request that lacks it, that
names another host (DNS rebinding), or that comes from another origin (a page elsewhere posting to
localhost) is refused with 403 before anything is read or written. Responses carry the report's
strict CSP (only the page's own script and style, by hash; ``connect-src 'self'`` for the API), so
nothing is loaded from the network and text from traces or notes cannot run.

Example:
    >>> server = ReviewServer(session).start()   # doctest: +SKIP
    >>> print(server.url)                        # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import errno
import hmac
import html
import json
import secrets
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from mast._outputs import csp_policy
from mast._render import neutralise_bidi
from mast.errors import MastError, UsageError
from mast.evaluation.viewer import TraceRows
from mast.gold import reviewer_disagreements
from mast.review.page import SCRIPT, STYLE, mode_keys
from mast.review.session import ReviewSession

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ReviewServer:
    """Serves one :class:`ReviewSession` from a background thread until :meth:`stop`."""

    def __init__(
        self, session: ReviewSession, *, port: int = 0, redact_patterns: tuple[tuple[str, str], ...] = ()
    ) -> None:
        self.session = session
        self.token = secrets.token_urlsafe(24)
        self._port = port
        self._rows = TraceRows(redact_patterns=redact_patterns)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.port = 0
        self._policy = csp_policy(scripts=(SCRIPT,), styles=(STYLE,), connect_self=True)

    @property
    def url(self) -> str:
        """The page, with the token: what the reviewer opens."""
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> ReviewServer:
        """Start serving (returns once the port is bound).

        Raises:
            UsageError: the port cannot be bound (in use, or below 1024 without root); the session's
                gold file is closed then.
        """

        def run() -> None:
            loop = asyncio.new_event_loop()
            try:
                loop.run_until_complete(self._serve_start())
            except BaseException as exc:  # the port could not be bound: said in start()
                self._error = exc
                loop.run_until_complete(self._serve_stop())
                loop.close()
                self._ready.set()
                return
            self._loop = loop
            self._ready.set()
            loop.run_forever()
            loop.run_until_complete(self._serve_stop())
            loop.close()

        self._thread = threading.Thread(target=run, name="mast-review", daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self.session.close()  # nothing will serve it (and a ``with`` block's __exit__ does not run)
            raise _listen_error(self._port, self._error) from self._error
        return self

    def stop(self) -> None:
        """Stop serving and close the gold file (a second call does nothing)."""
        loop, self._loop = self._loop, None
        if loop is not None and self._thread is not None:
            loop.call_soon_threadsafe(loop.stop)
            self._thread.join(timeout=10)
        self.session.close()

    def __enter__(self) -> ReviewServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _serve_start(self) -> None:
        app = web.Application(middlewares=[self._guard], client_max_size=256 * 1024)
        app.router.add_get("/", self._page)
        app.router.add_get("/api/trace/{position}", self._trace)
        app.router.add_post("/api/save", self._save)
        app.router.add_get("/api/stats", self._stats)
        # A request in flight gets 2 s to finish when the server stops (Ctrl-C); idle connections close at once.
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self._port)
        await site.start()
        self.port = int(self._runner.addresses[0][1])  # the port bound (a free one for port 0)

    async def _serve_stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # -- the guards -------------------------------------------------------------------------------

    @web.middleware
    async def _guard(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        refusal = self._refusal(request)
        if refusal is not None:
            response: web.StreamResponse = web.json_response({"error": refusal}, status=403)
        else:
            try:
                response = await handler(request)
            except web.HTTPException as exc:
                response = web.json_response({"error": exc.reason}, status=exc.status)
            except MastError as exc:
                response = web.json_response({"error": str(exc)}, status=400)
        response.headers["Content-Security-Policy"] = self._policy
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Referrer-Policy"] = "no-referrer"
        response.headers["X-Frame-Options"] = "DENY"
        response.headers["Cache-Control"] = "no-store"
        return response

    def _refusal(self, request: web.Request) -> str | None:
        """Why ``request`` is refused, or ``None``: wrong host, foreign origin, no or wrong token."""
        allowed_hosts = {f"127.0.0.1:{self.port}", f"localhost:{self.port}"}
        if request.host not in allowed_hosts:
            return "wrong host"
        origin = request.headers.get("Origin")
        if origin is not None and origin not in {f"http://{h}" for h in allowed_hosts}:
            return "foreign origin"
        if request.method != "GET" and request.headers.get("Sec-Fetch-Site", "same-origin") not in (
            "same-origin",
            "none",
        ):
            return "cross-site request"
        token = request.query.get("token") if request.path == "/" else request.headers.get("X-Mast-Token")
        if not token or not hmac.compare_digest(token.encode(), self.token.encode()):
            return "missing or wrong token"
        return None

    # -- the handlers -----------------------------------------------------------------------------

    async def _page(self, request: web.Request) -> web.Response:
        return web.Response(text=self.page(), content_type="text/html", charset="utf-8")

    def page(self) -> str:
        """The page's HTML: the layout, the session's settings as JSON, the script."""
        session = self.session
        modes = [
            {"code": c, "name": session.tax.mode(c).name, "key": k}
            for c, k in mode_keys(session.tax.codes).items()
        ]
        config = {
            "token": self.token,
            "reviewer": session.reviewer,
            "queue": session.queue,
            "total": len(session),
            "start": session.resume_position(),
            "modes": modes,
        }
        data = json.dumps(config, ensure_ascii=False).replace("<", "\\u003c")
        title = html.escape(f"mast review: {session._path.name}")
        return (
            "<!DOCTYPE html>\n<html lang='en'><head><meta charset='utf-8'>"
            f"<title>{title}</title><style>{STYLE}</style></head><body>"
            f"<header><b>{title}</b> · reviewer <span id='reviewer'></span> · <span id='position'></span> "
            "<span id='queue-tag'></span> <span id='save-state' class='note'></span></header>"
            "<p class='note' id='help'>j / k: next / previous trace · a: accept the judge's verdicts · the key shown "
            "beside a mode cycles it (present, absent, unsure) · s: first failing step · g: its agent · n: note "
            "(Enter saves, Esc leaves the field). Buttons do the same with the mouse.</p>"
            "<main><div id='transcript'></div><div id='side'><div id='verdicts'></div><div id='first'></div>"
            "<div id='note-box'></div><h3>Agreement so far (random queue)</h3><div id='stats'></div></div></main>"
            f"<script type='application/json' id='mast-review-config'>{data}</script>"
            f"<script>{SCRIPT}</script></body></html>\n"
        )

    def _position(self, raw: str) -> int:
        try:
            position = int(raw)
        except ValueError:
            raise web.HTTPBadRequest(reason="position must be a number") from None
        if not 0 <= position < len(self.session):
            raise web.HTTPNotFound(reason=f"no trace at position {position}")
        return position

    def trace_payload(self, position: int) -> dict[str, Any]:
        """What the page draws for one trace."""
        session = self.session
        item = session.item(position)
        return {
            "position": position,
            "total": len(session),
            "key": item.key,
            "queue": session.queue,
            "row": self._rows.row(session.diagnosis(position)),
            "judge": item.judge,
            "judge_first": {"step": item.first_step, "agent": item.first_agent},
            "values": self._values(position),
            "reviewed": session.reviewed(position),
        }

    def _values(self, position: int) -> dict[str, Any]:
        """The reviewer's values, with the note as the page shows it (BiDi controls as visible escapes)."""
        values = self.session.values(position)
        values["note_shown"] = neutralise_bidi(values["note"]) if isinstance(values["note"], str) else None
        return values

    async def _trace(self, request: web.Request) -> web.Response:
        return web.json_response(self.trace_payload(self._position(request.match_info["position"])))

    async def _save(self, request: web.Request) -> web.Response:
        if request.content_type != "application/json":
            raise web.HTTPUnsupportedMediaType(reason="send JSON")
        try:
            body = await request.json()
        except ValueError:
            raise web.HTTPBadRequest(reason="not JSON") from None
        if not isinstance(body, dict) or not isinstance(body.get("changes"), list):
            raise web.HTTPBadRequest(reason="expected {position, changes: [...]}")
        position = self._position(str(body.get("position")))
        changes = [c for c in body["changes"] if isinstance(c, dict)]
        steps = None
        if any(c.get("field") == "first_step" for c in changes):
            # The trace's own step numbers (when its transcript can be read): a first failing step is one of them.
            row = self._rows.row(self.session.diagnosis(position))
            steps = [int(s["i"]) for s in row["steps"]] or None
        events = self.session.record(position, changes, steps=steps)
        return web.json_response(
            {
                "saved": len(events),
                "values": self._values(position),
                "reviewed": self.session.reviewed(position),
                "next_unreviewed": self.session.resume_position(),
            }
        )

    async def _stats(self, request: web.Request) -> web.Response:
        session = self.session
        done = sum(1 for p in range(len(session)) if session.reviewed(p))
        return web.json_response(
            {
                "reviewed": done,
                "total": len(session),
                "modes": [s.as_dict() for s in session.stats()],
                "reviewer_disagreements": reviewer_disagreements(session.cells.values()),
            }
        )


def _listen_error(port: int, exc: BaseException) -> UsageError:
    """The one-line error for a port that could not be bound."""
    number = getattr(exc, "errno", None)
    if number == errno.EADDRINUSE:
        return UsageError(
            f"port {port} on 127.0.0.1 is in use (another mast review?): "
            "pick another with --port, or --port 0 for a free one"
        )
    if number == errno.EACCES:
        return UsageError(
            f"no permission to listen on port {port} of 127.0.0.1 (ports below 1024 need root): "
            "pick another with --port, or --port 0 for a free one"
        )
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return UsageError(f"cannot listen on 127.0.0.1:{port}: {reason}")
