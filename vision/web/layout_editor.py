"""The layout editor of ``paigow serve`` (``/layout``): the table's positions as draggable
polygons over the live picture, validated as they are edited, saved to the layout file and used
from the next frame on without a restart (docs/web-api.md, "Layout editor").

Routes (every ``/api/layout*`` route needs the control token, like ``/api/control/*``:
``Authorization: Bearer <token>`` or ``X-Token``; 401 without, 403 wrong or control disabled):

``GET  /layout``               the editor page (static; it asks for the token)
``GET  /api/layout``           ``{"layout": the layout in use (dict) or null, "file": path or null,
                               "frame_size": [w, h] or null, "proposal": {"layout", "left_out"}
                               or {"error"}}``; ``?dealer_at=X,Y`` for the proposal
                               (:func:`vision.table.propose.propose_from_reads` over the
                               newest frame's tiles)
``POST /api/layout/check``     body: a layout dict; ``{"ok": true}`` or ``{"ok": false,
                               "error": "... position '3' ..."}`` (:meth:`vision.table.rounds.Layout.
                               from_dict` and :meth:`~vision.table.rounds.Layout.check_frame`)
``POST /api/layout``           body: a layout dict; 400 with the error when it is invalid, 409
                               when serve has no layout file (``--layout FILE``); else the file is
                               written (atomically: a temporary file renamed over it) and the
                               pipeline uses the layout from its next frame: ``{"saved": path}``
"""

from __future__ import annotations

import hmac
import os
import tempfile
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import FileResponse, JSONResponse

from scoring.errors import InputError

__all__ = ["layout_router"]

STATIC_DIR = Path(__file__).resolve().parent / "static"
_NO_STORE = {"Cache-Control": "no-store"}
#: Largest layout request body (bytes): eight polygons of a few hundred points at most.
MAX_BODY = 256 * 1024


def _guard(token: str | None):
    def require_token(request: Request) -> None:
        if token is None:
            raise HTTPException(403, "control is disabled: start the server with --token or "
                                     "PAIGOW_TOKEN")
        auth = request.headers.get("authorization", "")
        given = auth[7:] if auth.lower().startswith("bearer ") else None
        given = given or request.headers.get("x-token")
        if not given:
            raise HTTPException(401, "the layout editor needs the token (Authorization: Bearer "
                                     "or X-Token)", headers={"WWW-Authenticate": "Bearer"})
        if not hmac.compare_digest(given.encode(), token.encode()):
            raise HTTPException(403, "wrong token")
    return require_token


async def _body(request: Request) -> dict:
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise HTTPException(413, f"layout body over {MAX_BODY} bytes")
    import json

    try:
        data = json.loads(raw or b"null")
    except ValueError:
        raise HTTPException(400, "body is not JSON") from None
    if not isinstance(data, dict):
        raise HTTPException(400, "body must be a layout object with 'positions'")
    return data


def _validate(feed, data: dict, where: str):
    """The :class:`vision.table.rounds.Layout` of ``data`` checked against the picture size.

    Raises:
        InputError: naming the position and what is wrong.
    """
    from vision.table.rounds import Layout

    lay = Layout.from_dict(data, where=where)
    size = getattr(feed, "frame_size", None)
    if size:
        lay.check_frame(*size)
    return lay


def layout_router(feed: Any, token: str | None, layout_file: str | Path | None) -> APIRouter:
    """The editor's routes (module docstring) over ``feed`` (a
    :class:`vision.web.feed.PipelineFeed`: its ``pipeline``, ``frame_size`` and
    ``last_reads``); ``layout_file``: where saving writes (None: saving answers 409)."""
    r = APIRouter()
    guard = [Depends(_guard(token or None))]
    path = Path(layout_file) if layout_file else None

    @r.get("/layout", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC_DIR / "layout.html", media_type="text/html",
                            headers=_NO_STORE)

    @r.get("/api/layout", dependencies=guard)
    async def current(dealer_at: str | None = Query(None, max_length=40)) -> JSONResponse:
        from vision.table.propose import propose_from_reads

        pipe = getattr(feed, "pipeline", None)
        lay = getattr(pipe, "layout", None)
        size = getattr(feed, "frame_size", None)
        reads = getattr(feed, "last_reads", None)
        proposal: dict[str, Any]
        at = None
        if dealer_at:
            try:
                at = tuple(float(v) for v in dealer_at.split(","))
                if len(at) != 2:
                    raise ValueError
            except ValueError:
                raise HTTPException(400, f"dealer_at {dealer_at!r}: give X,Y px") from None
        if not reads or not size:
            proposal = {"error": "no tiles seen yet: lay out a round"}
        else:
            try:
                layout, _, left = propose_from_reads(reads, size, dealer_at=at)
                proposal = {"layout": layout, "left_out": left}
            except InputError as exc:
                proposal = {"error": str(exc)}
        return JSONResponse({"layout": lay.to_dict() if lay is not None else None,
                             "file": str(path) if path else None,
                             "frame_size": list(size) if size else None,
                             "proposal": proposal}, headers=_NO_STORE)

    @r.post("/api/layout/check", dependencies=guard)
    async def check(request: Request) -> JSONResponse:
        data = await _body(request)
        try:
            _validate(feed, data, "layout")
        except InputError as exc:
            return JSONResponse({"ok": False, "error": str(exc)}, headers=_NO_STORE)
        return JSONResponse({"ok": True}, headers=_NO_STORE)

    @r.post("/api/layout", dependencies=guard)
    async def save(request: Request) -> JSONResponse:
        import yaml

        data = await _body(request)
        try:
            lay = _validate(feed, data, "layout")
        except InputError as exc:
            raise HTTPException(400, str(exc)) from None
        if path is None:
            raise HTTPException(409, "serve was started without --layout FILE: nowhere to save")
        text = ("# layout saved by the layout editor of `paigow serve`\n"
                + yaml.safe_dump(lay.to_dict(), sort_keys=False))
        try:
            fd, tmp = tempfile.mkstemp(prefix=".layout-", dir=str(path.parent))
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except OSError as exc:
            raise HTTPException(500, f"cannot write {path}: {exc.strerror}") from None
        lay.path = f"layout {path}"
        pipe = getattr(feed, "pipeline", None)
        if pipe is not None:
            set_layout = getattr(pipe, "set_layout", None)
            if callable(set_layout):
                set_layout(lay)
            else:
                pipe.layout = lay
        return JSONResponse({"saved": str(path)}, headers=_NO_STORE)

    return r
