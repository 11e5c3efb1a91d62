"""The pit view of ``paigow serve --tables`` (FastAPI): every table on one page, each table's
dealer display under ``/tables/<id>/`` (docs/pit.md).

================================  ==========================================================
``GET /``                         the pit page (plain HTML + JS from ``/static``; no CDN)
``GET /api/pit``                  :meth:`vision.pit.Pit.state` as JSON
``GET /api/pit/tables``           per table: thumbnail URL, alerts in words (each once),
                                  game pace (:mod:`vision.web.pit_view`)
``GET /api/stats``                :meth:`vision.pit.Pit.stats`: every table's live figures
                                  (``{"time", "tables": {id: {...}}, "detector": {...}}``)
``GET /healthz``                  ``{"ok", "tables": {id: status}, "failed": [id]}``: 503
                                  when a table's worker keeps dying (``failed``)
``/tables/<id>/...``              the table's dealer display, every route of
                                  :func:`vision.web.app.create_app` (docs/web-api.md)
================================  ==========================================================

With a viewer token, ``/api/pit``, ``/api/stats`` and every table's picture, state, events and
figures need it (or the control token); ``allowed_hosts`` checks the ``Host`` of every request,
the tables' too (:mod:`vision.web.guard`, docs/web-api.md "Access").
"""

from __future__ import annotations

from fastapi import Depends, FastAPI
from fastapi.responses import FileResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles

from vision.web.app import _NO_STORE, STATIC_DIR, create_app, secure_headers
from vision.web.guard import HostCheck, HostPolicy, ViewCookie, ViewGuard

__all__ = ["create_pit_app"]


def create_pit_app(pit, *, token: str | None = None, title: str = "Pai gow pit",
                   view_token: str | None = None,
                   allowed_hosts: HostPolicy | None = None) -> FastAPI:
    """Build the pit app over a :class:`vision.pit.Pit` (started by the caller).

    Args:
        pit: the pit (its :attr:`~vision.pit.Pit.feeds` and :meth:`~vision.pit.Pit.state`).
        token: control token of the tables' dealer displays (None: control disabled).
        title: page title.
        view_token: viewer token of the pit and the tables (None: their views are open).
        allowed_hosts: the ``Host`` names answered (None: no check).

    Returns:
        The FastAPI application.
    """
    app = FastAPI(title=title, docs_url=None, redoc_url=None, openapi_url=None)

    view = ViewGuard(view_token, token)
    guard = [Depends(view.require)]
    secure_headers(app)
    app.add_middleware(ViewCookie, guard=view)
    if allowed_hosts is not None:
        app.add_middleware(HostCheck, policy=allowed_hosts)  # outermost: the tables' too

    @app.get("/", include_in_schema=False)
    async def index() -> FileResponse:
        return FileResponse(STATIC_DIR / "pit.html", media_type="text/html", headers=_NO_STORE)

    @app.get("/api/pit", dependencies=guard)
    async def api_pit() -> JSONResponse:
        st = pit.state()
        st["title"] = title
        return JSONResponse(st, headers=_NO_STORE)

    @app.get("/api/stats", dependencies=guard)
    async def api_stats() -> JSONResponse:
        stats = getattr(pit, "stats", None)
        body = stats() if stats is not None else {"tables": {}, "detector": None}
        return JSONResponse(body, headers=_NO_STORE)

    @app.get("/api/pit/tables", dependencies=guard)
    async def api_pit_tables() -> JSONResponse:  # thumbnails, alerts in words, pace
        from vision.web.pit_view import table_view

        for feed in pit.feeds.values():
            feed.want_pictures()  # the pit page shows each table's thumbnail
        body = {"tables": [table_view(tid, feed.state(), f"/tables/{tid}/")
                           for tid, feed in pit.feeds.items()], "control": token is not None}
        return JSONResponse(body, headers=_NO_STORE)

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        tables = pit.state()["tables"]
        failed = [t["table_id"] for t in tables if (t.get("worker") or {}).get("failed")]
        body = {"ok": not failed,
                "tables": {t["table_id"]: "failed" if t["table_id"] in failed else t["status"]
                           for t in tables},
                "failed": failed}
        if failed:
            body["errors"] = {t["table_id"]: t["worker"].get("note") for t in tables
                              if t["table_id"] in failed}
        return JSONResponse(body, status_code=503 if failed else 200, headers=_NO_STORE)

    for tid, feed in pit.feeds.items():
        app.add_api_route(f"/tables/{tid}", _redirect(f"/tables/{tid}/"),
                          include_in_schema=False)
        app.mount(f"/tables/{tid}", create_app(feed, token=token, view_token=view_token,
                                               title=f"{tid}: dealer display"))
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    return app


def _redirect(to: str):
    async def go() -> RedirectResponse:
        return RedirectResponse(to, status_code=307)

    return go
