"""The dealer display web app (FastAPI): live picture, positions, results, alerts.

Routes (all read-only except ``/api/control/*``):

================================  ==========================================================
``GET /``                         the page (plain HTML + vanilla JS from ``/static``; no CDN)
``GET /video.mjpeg``              MJPEG stream (``multipart/x-mixed-replace``) of the annotated
                                  picture; ``?frames=N`` ends after N pictures (0: endless)
``GET /snapshot.jpg``             the latest picture (503 before the first)
``GET /api/state``                :meth:`vision.web.hub.LiveFeed.state` as JSON, plus
                                  ``"control"`` (whether control endpoints are enabled)
``GET /api/events``               server-sent events: ``event: round`` with each settled round
                                  event (docs/round-event.md) as ``data``, ``id`` = round_id;
                                  ``?replay=N`` first sends the last N rounds already settled,
                                  ``?limit=N`` ends after N rounds; a ``Last-Event-ID`` header
                                  (browser reconnect) replays the rounds settled after that id
``GET /api/stats``                the table's live figures (:meth:`LiveFeed.live_stats`: camera
                                  / processed / skipped fps over the last 10 s, totals, the
                                  detector, round latencies, behind / stuck); 503 before there
                                  are any (docs/web-api.md)
``GET /healthz``                  200 ``{"ok": true, ...}`` while the display is usable; 503
                                  ``{"ok": false, "state", "lost_s", "lost_since", "reason",
                                  ...}`` once the camera has been lost for longer than
                                  ``health_grace_s`` (:mod:`vision.web.health`)
``GET /dealer``, ``/?mode=dealer`` the dealer mode: full screen, readable at two metres
``POST /api/control/reset``       start a new round (forget the current one); needs the token
``POST /api/control/ack``         acknowledge an alert (``{"round_id", "kind", "position",
                                  "by"}``), recorded in the audit store; needs the token
``POST /api/control/manual``      a supervisor's face for a tile the camera could not read
                                  (``{"round_id", "tile", "face", "by"}``), stored as a manual
                                  entry beside the camera's record; needs the token
================================  ==========================================================

Control endpoints need ``Authorization: Bearer <token>`` or ``X-Token: <token>``: 401 without a
token, 403 with a wrong one, and 403 for every request when the app was created without a token
(control disabled). Tokens are compared in constant time (:func:`hmac.compare_digest`).

With a viewer token (``view_token``) the picture, ``/api/state``, ``/api/events`` and
``/api/stats`` need it or the control token (header, ``?token=`` or the cookie a page opened
with ``?token=`` gets: :mod:`vision.web.guard`); ``allowed_hosts`` answers a request with a
``Host`` it does not allow 400 (:class:`vision.web.guard.HostCheck`). ``/``, ``/dealer``,
``/static``, ``/layout`` and ``/healthz`` stay open.

Request bodies are capped before they are read (:class:`BodyLimit`, :data:`MAX_BODY_BYTES`:
413), parsed with a nesting limit and validated by pydantic models (:class:`AckRequest`,
:class:`ManualRequest`: 422 with FastAPI's ``detail`` list, never 500); every string field is
bounded. A second acknowledgement of the same alert is refused (409).
"""

from __future__ import annotations

import asyncio
import hmac
import json
import time
from pathlib import Path
from typing import Any, AsyncIterator

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from starlette.requests import ClientDisconnect

from scoring.errors import InputError, StateConflict

from vision.web.guard import HostCheck, HostPolicy, ViewCookie, ViewGuard, client_gone
from vision.web.health import health_router
from vision.web.hub import LiveFeed

__all__ = ["create_app", "MJPEG_BOUNDARY", "BodyLimit", "AckRequest", "ManualRequest",
           "MAX_BODY_BYTES"]

#: The largest request body read (bytes): a control request is a few hundred bytes; larger
#: ones are refused with 413 before they are read (a 1 GB POST grew serve by 3 GB).
MAX_BODY_BYTES = 16 * 1024
#: Deepest JSON nesting accepted in a request body (a control request nests 3 deep).
MAX_JSON_DEPTH = 8


class BodyLimit:
    """ASGI middleware: a request whose ``Content-Length`` is above ``limit`` bytes, or whose
    body grows past it while it is received (chunked), is answered 413 without reading more."""

    def __init__(self, app, limit: int = MAX_BODY_BYTES) -> None:
        self.app, self.limit = app, int(limit)

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        for k, v in scope.get("headers") or ():
            if k == b"content-length":
                try:
                    n = int(v)
                except ValueError:
                    n = self.limit + 1
                if n > self.limit:
                    return await _too_large(send, self.limit)
        seen = 0
        started = False

        async def limited():
            nonlocal seen
            msg = await receive()
            if msg["type"] == "http.request":
                seen += len(msg.get("body") or b"")
                if seen > self.limit:
                    raise _BodyTooLarge
            return msg

        async def tracking_send(msg):
            nonlocal started
            if msg["type"] == "http.response.start":
                started = True
            await send(msg)

        try:
            await self.app(scope, limited, tracking_send)
        except _BodyTooLarge:
            if not started:
                await _too_large(send, self.limit)


class _BodyTooLarge(Exception):
    pass


async def _too_large(send, limit: int) -> None:
    body = json.dumps({"detail": f"request body larger than {limit} bytes"}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})


_Short = Field(default=None, max_length=80)


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    round_id: str = Field(min_length=1, max_length=32, pattern=r"^[A-Za-z0-9_.:-]+$")
    by: str | None = Field(default=None, max_length=80)


class AckRequest(_Request):
    """``POST /api/control/ack``: which alert of which round, who, a note (all bounded)."""

    kind: str = Field(min_length=1, max_length=40, pattern=r"^[a-z_]+$")
    position: str | None = Field(default=None, max_length=8)
    note: str | None = Field(default=None, max_length=500)


class ManualTile(BaseModel):
    """One manual face: the tile's index in the round's ``tiles`` and the face."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    tile: int = Field(ge=0, le=1000, strict=True)
    face: str = Field(min_length=3, max_length=3, pattern=r"^[1-6]-[1-6]$")


class ManualRequest(_Request):
    """``POST /api/control/manual``: ``tile`` + ``face``, or ``entries`` (at most 32); a
    ``supersedes`` flag marks a correction of faces entered before (issue 22)."""

    tile: int | None = Field(default=None, ge=0, le=1000, strict=True)
    face: str | None = Field(default=None, min_length=3, max_length=3, pattern=r"^[1-6]-[1-6]$")
    entries: list[ManualTile] | None = Field(default=None, min_length=1, max_length=32)
    correction: bool = False

    def tiles(self) -> list[dict]:
        if self.entries is not None:
            return [e.model_dump() for e in self.entries]
        if self.tile is None or self.face is None:
            raise RequestValidationError([{"type": "missing", "loc": ("body", "entries"),
                                           "msg": "give tile and face, or entries"}])
        return [{"tile": self.tile, "face": self.face}]


def _depth_ok(raw: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the JSON text nests at most ``limit`` deep (brackets outside strings)."""
    depth, in_str, esc = 0, False, False
    for c in raw:
        if in_str:
            if esc:
                esc = False
            elif c == 0x5C:
                esc = True
            elif c == 0x22:
                in_str = False
        elif c == 0x22:
            in_str = True
        elif c in (0x5B, 0x7B):
            depth += 1
            if depth > limit:
                return False
        elif c in (0x5D, 0x7D):
            depth -= 1
    return True


async def _parse(request: Request, model: type[BaseModel]) -> BaseModel:
    """The request body validated by ``model`` (413 / 422, never 500)."""
    raw = await request.body()
    if len(raw) > MAX_BODY_BYTES:
        raise HTTPException(413, f"request body larger than {MAX_BODY_BYTES} bytes")
    if not _depth_ok(raw):
        raise RequestValidationError([{"type": "json_invalid", "loc": ("body",),
                                       "msg": f"JSON nested deeper than {MAX_JSON_DEPTH}"}])
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise RequestValidationError([{"type": "json_invalid", "loc": ("body",),
                                       "msg": f"the request body is not JSON ({exc})"[:200]}]
                                     ) from None
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        # the offending input is not echoed (it may be huge, or a float JSON cannot carry)
        raise RequestValidationError([{"type": e["type"], "loc": ("body", *e["loc"]),
                                       "msg": e["msg"]} for e in exc.errors()]) from None

STATIC_DIR = Path(__file__).resolve().parent / "static"
#: Multipart boundary of the MJPEG stream.
MJPEG_BOUNDARY = "paigowframe"
#: Seconds ``/snapshot.jpg`` waits for a fresh picture where pictures are made only while
#: looked at (:attr:`vision.web.hub.LiveFeed.pictures_on_demand`; then the newest it has).
SNAPSHOT_WAIT_S = 1.0
_NO_STORE = {"Cache-Control": "no-store"}
_CSP = ("default-src 'self'; img-src 'self' data: blob:; style-src 'self'; script-src 'self'; "
        "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")


def secure_headers(app: FastAPI) -> None:
    """Every response of ``app`` (the table's and the pit's) carries the browser hardening
    headers, unless a route set its own: no MIME sniffing, no referrer, and :data:`_CSP`
    (scripts, styles and data only from this server)."""

    @app.middleware("http")
    async def _headers(request: Request, call_next):
        resp = await call_next(request)
        resp.headers.setdefault("X-Content-Type-Options", "nosniff")
        resp.headers.setdefault("Referrer-Policy", "no-referrer")
        resp.headers.setdefault("Content-Security-Policy", _CSP)
        return resp


def _sse(event: dict, name: str = "round") -> bytes:
    data = json.dumps(event, separators=(",", ":"), ensure_ascii=True)
    rid = str(event.get("round_id", "")).replace("\n", " ")
    return f"id: {rid}\nevent: {name}\ndata: {data}\n\n".encode()


def create_app(feed: LiveFeed, *, token: str | None = None, heartbeat_s: float = 10.0,
               max_fps: float = 15.0, title: str = "Pai gow dealer display",
               health_grace_s: float = 10.0, layout_file: str | None = None,
               view_token: str | None = None, allowed_hosts: HostPolicy | None = None
               ) -> FastAPI:
    """Build the dealer display app over a running (or to-be-started) feed (docs/web-api.md).

    Args:
        feed: the :class:`vision.web.hub.LiveFeed` to show. The app neither starts nor stops
            it (the caller owns its lifetime; ``paigow serve`` does both).
        token: control token (None or empty: control endpoints disabled).
        heartbeat_s: seconds between keep-alive comments on the event stream (and picture
            repeats on the MJPEG stream when no new frame arrives), so dead clients are noticed.
        max_fps: most pictures per second sent to one MJPEG client.
        title: page title.
        health_grace_s: seconds the camera may be lost before ``/healthz`` fails (503;
            :mod:`vision.web.health`, :class:`vision.config.ServeConfig`).
        layout_file: the layout file the editor (``/layout``, :mod:`vision.web.layout_editor`)
            saves to (None: it can edit and check, not save).
        view_token: viewer token (None or empty: the picture, state, events and stats are
            open; else they need it or ``token``; :class:`vision.web.guard.ViewGuard`).
        allowed_hosts: the ``Host`` names answered (None: no check; ``paigow serve`` always
            gives one: :func:`vision.web.guard.host_policy`).

    Returns:
        The FastAPI application (serve it with uvicorn).
    """
    token = token or None
    app = FastAPI(title=title, docs_url=None, redoc_url=None, openapi_url=None)
    app.add_middleware(BodyLimit)
    app.state.feed = feed
    app.state.control_enabled = token is not None
    view = ViewGuard(view_token, token)
    guard = [Depends(view.require)]

    secure_headers(app)
    app.add_exception_handler(ClientDisconnect, client_gone)  # a body cut off: not a 500
    app.add_middleware(ViewCookie, guard=view)
    if allowed_hosts is not None:
        app.add_middleware(HostCheck, policy=allowed_hosts)  # outermost
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    app.include_router(page_router(feed, title, token is not None, guard))
    app.include_router(health_router(feed, health_grace_s))
    app.include_router(picture_router(feed, heartbeat_s, max_fps), dependencies=guard)
    app.include_router(event_router(feed, heartbeat_s), dependencies=guard)
    app.include_router(control_router(feed, token))
    from vision.web.layout_editor import layout_router

    app.include_router(layout_router(feed, token, layout_file))
    return app


def page_router(feed: LiveFeed, title: str, control_enabled: bool, guard=()) -> APIRouter:
    """``GET /``, ``/api/state``, ``/api/stats`` (the last two behind ``guard``, a list of
    dependencies: the viewer check)."""
    r = APIRouter()

    @r.get("/", include_in_schema=False)
    async def index(mode: str = Query("", description="dealer: the dealer mode")
                    ) -> FileResponse:
        page = "dealer.html" if mode == "dealer" else "index.html"
        return FileResponse(STATIC_DIR / page, media_type="text/html", headers=_NO_STORE)

    @r.get("/dealer", include_in_schema=False)
    async def dealer() -> FileResponse:
        return FileResponse(STATIC_DIR / "dealer.html", media_type="text/html",
                            headers=_NO_STORE)

    @r.get("/api/state", dependencies=list(guard))
    async def api_state() -> JSONResponse:
        st = feed.state()
        st["control"] = control_enabled
        st["title"] = title
        return JSONResponse(st, headers=_NO_STORE)

    @r.get("/api/stats", dependencies=list(guard))
    async def api_stats() -> JSONResponse:
        st = await asyncio.to_thread(feed.live_stats)  # reads the camera's counters
        if st is None:
            raise HTTPException(503, "no figures yet")
        return JSONResponse(st, headers=_NO_STORE)

    return r


def picture_router(feed: LiveFeed, heartbeat_s: float, max_fps: float) -> APIRouter:
    """``GET /snapshot.jpg`` and ``GET /video.mjpeg``."""
    r = APIRouter()
    min_interval = 1.0 / max_fps if max_fps and max_fps > 0 else 0.0

    @r.get("/snapshot.jpg")
    async def snapshot() -> Response:
        was = feed.want_pictures()
        version, jpg = feed.latest_frame()
        if not was and feed.pictures_on_demand:
            # made only while looked at: the newest picture may be old, wait for a fresh one
            end = time.monotonic() + SNAPSHOT_WAIT_S
            while (left := end - time.monotonic()) > 0 and not feed.closed:
                version, new = await feed.next_frame(version, timeout=left)
                if new is not None and new is not jpg:
                    jpg = new
                    break
        if jpg is None:
            raise HTTPException(503, "no picture yet")
        return Response(jpg, media_type="image/jpeg", headers=_NO_STORE)

    @r.get("/video.mjpeg")
    async def video(frames: int = Query(0, ge=0, description="end after N pictures (0: endless)")
                    ) -> StreamingResponse:
        return StreamingResponse(
            _mjpeg_parts(feed, frames, heartbeat_s, min_interval),
            media_type=f"multipart/x-mixed-replace; boundary={MJPEG_BOUNDARY}",
            headers={**_NO_STORE, "X-Accel-Buffering": "no"})

    return r


async def _mjpeg_parts(feed: LiveFeed, frames: int, heartbeat_s: float, min_interval: float
                       ) -> AsyncIterator[bytes]:
    # Each picture is followed at once by the next part's boundary and headers: Chrome shows a
    # part only when the next part's headers arrive. No Content-Length (the length of the next
    # picture is not known yet); the boundary delimits the parts.
    part_head = f"--{MJPEG_BOUNDARY}\r\nContent-Type: image/jpeg\r\n\r\n".encode()
    last_tail = f"\r\n--{MJPEG_BOUNDARY}--\r\n".encode()
    sent = 0
    last: bytes | None = None
    last_sent_at = 0.0
    version = -1
    while True:
        feed.want_pictures()  # someone watches: the pictures keep coming
        version, jpg = feed.latest_frame()
        now = time.monotonic()
        if jpg is not None and (jpg is not last or now - last_sent_at >= heartbeat_s):
            wait = min_interval - (now - last_sent_at)
            if wait > 0:
                await asyncio.sleep(wait)
                version, jpg = feed.latest_frame()
            sent += 1
            final = bool(frames) and sent >= frames
            yield (b"" if sent > 1 else part_head) + jpg + \
                (last_tail if final else b"\r\n" + part_head)
            last, last_sent_at = jpg, time.monotonic()
            if final:
                return
        if feed.closed:
            return
        await feed.next_frame(version, timeout=heartbeat_s)


def event_router(feed: LiveFeed, heartbeat_s: float) -> APIRouter:
    """``GET /api/events`` (server-sent round events)."""
    r = APIRouter()

    @r.get("/api/events")
    async def events(request: Request,
                     replay: int = Query(0, ge=0, le=100,
                                         description="first send the last N settled rounds"),
                     limit: int = Query(0, ge=0, description="end after N rounds (0: endless)")
                     ) -> StreamingResponse:
        sub = feed.subscribe()  # before reading the history: no round falls in between
        history = list(reversed(feed.history()))  # oldest first
        backlog: list[dict] = []
        last_id = request.headers.get("last-event-id")
        if last_id:
            ids = [e.get("round_id") for e in history]
            if last_id in ids:
                backlog = history[ids.index(last_id) + 1:]
        elif replay:
            backlog = history[-replay:]
        return StreamingResponse(_event_stream(feed, sub, backlog, limit, heartbeat_s),
                                 media_type="text/event-stream",
                                 headers={**_NO_STORE, "X-Accel-Buffering": "no"})

    return r


async def _event_stream(feed: LiveFeed, sub, backlog: list[dict], limit: int,
                        heartbeat_s: float) -> AsyncIterator[bytes]:
    sent = 0
    try:
        yield b"retry: 2000\n: connected\n\n"
        seen = set()
        for ev in backlog:
            seen.add(ev.get("round_id"))
            yield _sse(ev)
            sent += 1
            if limit and sent >= limit:
                return
        while True:
            ev = await sub.aget(timeout=heartbeat_s)
            if ev is None:
                if sub.closed or feed.closed:
                    return
                yield b": ping\n\n"
                continue
            if ev.get("round_id") in seen:  # already sent from the backlog
                continue
            yield _sse(ev)
            sent += 1
            if limit and sent >= limit:
                return
    finally:
        sub.close()


def control_router(feed: LiveFeed, token: str | None) -> APIRouter:
    """``POST /api/control/reset``, ``/ack``, ``/manual``, guarded by the token (module
    docstring)."""
    r = APIRouter()

    def require_token(request: Request) -> None:
        if token is None:
            raise HTTPException(403, "control is disabled: start the server with --token or "
                                     "PAIGOW_TOKEN")
        given = None
        auth = request.headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            given = auth[7:].strip()
        given = given or request.headers.get("x-token")
        if not given:
            raise HTTPException(401, "control needs a token (Authorization: Bearer or X-Token)",
                                headers={"WWW-Authenticate": "Bearer"})
        if not hmac.compare_digest(given.encode(), token.encode()):
            raise HTTPException(403, "wrong token")

    @r.post("/api/control/reset", dependencies=[Depends(require_token)])
    async def control_reset() -> dict[str, Any]:
        return feed.reset()

    def run(fn, *args, **kw) -> JSONResponse:
        try:
            return JSONResponse(fn(*args, **kw))
        except InputError as exc:
            code = 409 if isinstance(exc, StateConflict) else 400
            return JSONResponse({"ok": False, "error": str(exc)}, status_code=code)

    @r.post("/api/control/ack", dependencies=[Depends(require_token)])
    async def control_ack(request: Request) -> JSONResponse:
        d = await _parse(request, AckRequest)
        return await asyncio.to_thread(run, feed.acknowledge, d.round_id, d.kind, d.position,
                                       by=d.by or None, note=d.note or None)

    @r.post("/api/control/manual", dependencies=[Depends(require_token)])
    async def control_manual(request: Request) -> JSONResponse:
        d = await _parse(request, ManualRequest)
        entries = d.tiles()
        kw = {"correction": True} if d.correction else {}
        return await asyncio.to_thread(run, feed.manual_entry, d.round_id, entries,
                                       by=d.by or None, **kw)

    @r.post("/api/control/setcheck", dependencies=[Depends(require_token)])
    async def control_setcheck(request: Request) -> JSONResponse:
        from vision.web.setcheck import SetCheckRequest, check_feed  # the tile set check

        d = await _parse(request, SetCheckRequest)
        return await asyncio.to_thread(run, check_feed, feed, by=d.by or None)

    return r
