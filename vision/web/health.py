"""The dealer display's health: the camera feed's real state for the page and for supervisors.

:func:`feed_view` turns the source's :class:`vision.io.frames.FeedState` (connected /
reconnecting / ended, gaps) into the JSON the page shows (``/api/state``'s ``"feed"``: the
"camera lost for N s -- reconnecting" banner and the gaps); :func:`health` decides what
``GET /healthz`` answers (:func:`health_router`): 200 while the display is usable, 503 once
the camera has been lost for longer than the grace (``paigow serve --health-grace``,
:class:`vision.config.ServeConfig`), so a supervisor (systemd, docker, Kubernetes) can act.
A short outage the capture rides out by itself (it reconnects for as long as the process
runs, :mod:`vision.io.live`) is shown on the page but keeps the server healthy.

``/healthz`` fails (503) when any of these holds, the body naming it in ``"reason"``:

- the camera is lost for longer than the grace: a live source reconnecting for longer (the
  gap so far, from its last frame), or connected but with no new frame for longer (a stall
  the reader has not timed out yet; before the first frame: since it was opened);
- the frame loop stopped on an error (``status == "error"``), or a live source ended (it only
  does so when closed, or under a reconnect policy with limits);
- the picture is frozen: the feed runs and its source is connected, but no picture was
  published for longer than the grace (a frame loop that hangs).

A file source that played to its end is healthy (``"ended"``: a recording finished).

An audit store that cannot be reached (:class:`vision.io.sinks.AuditSink`: rounds are spooled
durably and stored once it answers) keeps ``/healthz`` at 200 -- the display is usable, no
round is lost, and restarting the server would not bring the database back -- but the body's
``"audit"`` (:func:`audit_view`) and ``"warning"`` say "audit store unreachable, N round(s)
spooled", and so does ``/api/state``'s ``"feed"["audit"]``.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any

__all__ = ["feed_view", "audit_view", "health", "health_router", "DEFAULT_GRACE_S"]

#: Default grace, seconds (:class:`vision.config.ServeConfig`).
DEFAULT_GRACE_S = 10.0


def _iso(epoch_s: float | None) -> str | None:
    if epoch_s is None:
        return None
    return datetime.fromtimestamp(epoch_s, timezone.utc).isoformat(timespec="milliseconds") \
        .replace("+00:00", "Z")


def _r(v: float | None, nd: int = 2) -> float | None:
    return None if v is None else round(float(v), nd)


def audit_view(feed: Any) -> dict | None:
    """The audit store's state as JSON (None without an audit store): the session's
    :meth:`vision.io.sinks.AuditSink.status` -- ``{"store", "reachable", "spooled", "spool",
    "unreachable_since", "unreachable_s", "attempts", "error", "message"}``.

    Args:
        feed: a feed whose ``session.audit`` is the sink (:class:`vision.web.feed.PipelineFeed`).
    """
    sink = getattr(getattr(feed, "session", None), "audit", None)
    status = getattr(sink, "status", None)
    if not callable(status):
        return None
    st = dict(status())
    st["unreachable_since"] = _iso(st.get("unreachable_since"))
    return st


def feed_view(feed: Any) -> dict | None:
    """The feed's camera state as JSON for the page and ``/healthz`` (None when the feed has no
    source to ask: a scripted feed).

    Args:
        feed: a :class:`vision.web.hub.LiveFeed`; its ``feed_state()`` returns the source's
            :class:`vision.io.frames.FeedState` or None.

    Returns:
        ``{"state" ("connected"|"reconnecting"|"ended"), "live", "since" (UTC ISO time the
        state began), "state_s", "lost_s" (seconds the camera is lost now: the gap so far while
        reconnecting, the last frame's age while a live source is connected -- since opening
        before any frame --, 0 otherwise), "lost_since" (UTC ISO time of the last frame before
        the loss, None when not lost), "last_frame_age_s", "current_gap_s", "last_gap_s"
        (length of the last outage that ended), "gaps" (outages that ended), "attempts"
        (failed reconnection attempts in this outage), "error", "audit"
        (:func:`audit_view`)}``; seconds rounded to 0.01.
    """
    get = getattr(feed, "feed_state", None)
    st = get() if callable(get) else None
    if st is None:
        return None
    now = time.time()
    lost = 0.0
    if st.state == "reconnecting":
        lost = st.current_gap_s
    elif st.state == "connected" and st.live:
        lost = st.last_frame_age_s if st.last_frame_age_s is not None else st.state_s
    return {"state": st.state, "live": st.live, "since": _iso(st.since),
            "state_s": _r(st.state_s), "lost_s": _r(lost),
            "lost_since": _iso(now - lost) if lost > 0 else None,
            "last_frame_age_s": _r(st.last_frame_age_s), "current_gap_s": _r(st.current_gap_s),
            "last_gap_s": _r(st.last_gap_s), "gaps": st.gaps, "attempts": st.attempts,
            "error": st.error, "audit": audit_view(feed)}


def health(feed: Any, grace_s: float = DEFAULT_GRACE_S) -> tuple[bool, dict]:
    """``(ok, body)`` of ``GET /healthz`` for a feed now (rules in the module docstring).

    Args:
        feed: a :class:`vision.web.hub.LiveFeed` (``state()``, ``feed_state()``).
        grace_s: seconds of camera loss (or frozen picture) tolerated, > 0.

    Returns:
        ``ok`` and the body ``{"ok", "status" (the frame loop's: running, ended, ...), "feed"
        (:func:`feed_view` or None), "state" (the camera's: connected / reconnecting / ended,
        or the loop's status without a source), "lost_s", "lost_since", "since",
        "picture_age_s" (seconds since the last published picture, None before one),
        "grace_s", "reason" (why it fails, None when ok), "audit" (:func:`audit_view`, None
        without a store), "warning" (the audit store's message while it is unreachable or
        rounds wait in its spool, else None; not a failure)}``.
    """
    st = feed.state()
    status = st.get("status")
    view = feed_view(feed)
    age = None
    picture_age = getattr(feed, "picture_age", None)
    if callable(picture_age):
        age = picture_age()
    reason = None
    if status == "error":
        reason = f"the frame loop stopped on an error: {st.get('error')}"
    elif view is not None:
        lost = view["lost_s"] or 0.0
        if view["state"] == "ended" and view["live"] and status != "stopped":
            reason = f"the camera feed ended{': ' + view['error'] if view['error'] else ''}"
        elif lost > grace_s:
            how = "reconnecting" if view["state"] == "reconnecting" else "no new frame"
            reason = f"camera lost for {lost:.1f} s (grace {grace_s:g} s) -- {how}"
        elif status == "running" and view["state"] == "connected" and age is not None \
                and age > grace_s:
            reason = f"picture frozen for {age:.1f} s (grace {grace_s:g} s)"
    body = {"ok": reason is None, "status": status, "feed": view,
            "state": view["state"] if view is not None else status,
            "lost_s": view["lost_s"] if view is not None else None,
            "lost_since": view["lost_since"] if view is not None else None,
            "since": view["since"] if view is not None else None,
            "picture_age_s": _r(age), "grace_s": grace_s, "reason": reason}
    audit = view["audit"] if view is not None else audit_view(feed)
    body["audit"] = audit
    body["warning"] = (audit or {}).get("message")
    return reason is None, body


def health_router(feed: Any, grace_s: float = DEFAULT_GRACE_S):
    """``GET /healthz`` (a FastAPI ``APIRouter``): 200 with :func:`health`'s body while healthy,
    503 with it otherwise (never cached). FastAPI is imported here only: the page's state
    (:func:`feed_view`) needs none."""
    from fastapi import APIRouter
    from fastapi.responses import JSONResponse

    r = APIRouter()

    @r.get("/healthz")
    async def healthz() -> JSONResponse:
        ok, body = health(feed, grace_s)
        return JSONResponse(body, status_code=200 if ok else 503,
                            headers={"Cache-Control": "no-store"})

    return r
