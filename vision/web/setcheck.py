"""The dealer display's set check: ``POST /api/control/setcheck`` (docs/web-api.md) reads the
newest camera picture as a still and checks the tiles laid out face up as one complete set
(:mod:`vision.setcheck`, :mod:`scoring.setcheck`; 58 Pa. Code 621a.4), recorded in the audit
store as a ``setcheck`` record when the display keeps one (:mod:`vision.audit.entries`).

The picture checked is the camera's own frame (never the annotated one the page shows): the
feed's sink keeps it as ``feed.raw_frame`` (:class:`vision.web.feed.PipelineFeed`). A feed
without one (a pit table relayed from its worker process) answers 409.
"""

from __future__ import annotations

import threading

from pydantic import BaseModel, ConfigDict, Field

from scoring.errors import StateConflict

__all__ = ["SetCheckRequest", "check_feed"]

_ENGINE_LOCK = threading.Lock()


class SetCheckRequest(BaseModel):
    """``POST /api/control/setcheck``: who asks (optional, bounded)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    by: str | None = Field(default=None, max_length=80)


def _engine(feed):
    """The feed's still-reading engine, built once from the session's recognition settings
    (``feed.setcheck_engine`` when set: tests inject one)."""
    with _ENGINE_LOCK:
        eng = getattr(feed, "setcheck_engine", None)
        if eng is None:
            from vision.setcheck import engine_for

            cfg = getattr(getattr(getattr(getattr(feed, "session", None), "config", None),
                                  "pipeline", None), "recognition", None)
            eng = feed.setcheck_engine = engine_for(recognition=cfg)
        return eng


def check_feed(feed, by: str | None = None) -> dict:
    """Check the set on the feed's newest camera picture.

    Args:
        feed: a :class:`vision.web.hub.LiveFeed` with ``raw_frame`` (uint8 (H, W, 3) BGR),
            ``audit`` (store path or URL, or None), ``table_id`` and ``source``.
        by: who asked (stored with the record).

    Returns:
        ``{"ok": True, "action": "setcheck", "record": seq | None, **check}`` where ``check``
        is :func:`vision.setcheck.check_image`'s result (verdict, complete, missing, extra,
        foreign, unread, summary, tiles_read, ...).

    Raises:
        StateConflict: no camera picture yet, or this feed keeps none (409).
        InputError: the audit store cannot be written (400).
    """
    from vision.setcheck import check_image

    image = getattr(feed, "raw_frame", None)
    if image is None:
        raise StateConflict("no camera picture to check: wait for the camera"
                            if hasattr(feed, "raw_frame") else
                            "this display keeps no camera picture for a set check: run "
                            "'paigow setcheck' on the camera")
    res = check_image(image, _engine(feed))
    record = None
    if getattr(feed, "audit", None) is not None:
        from vision.audit import AuditStore
        from vision.audit.entries import append_setcheck
        from vision.audit.keys import load_key
        from vision.sources import redact_url

        with AuditStore(feed.audit, create=False, key=load_key()) as st:
            record = append_setcheck(st, res, table_id=str(feed.table_id),
                                     source=redact_url(getattr(feed, "source", "") or ""),
                                     by=by, model_version=res.get("model_version"),
                                     reads=res["tiles_read"]).seq
    feed.last_setcheck = res
    return {"ok": True, "action": "setcheck", "record": record, **res}
