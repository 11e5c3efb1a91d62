"""Dealer display: a small read-only web app showing the live annotated picture, each
position's hands, results and alerts, and pushing every round to the browser (docs/web-api.md).

- :mod:`vision.web.hub`: :class:`~vision.web.hub.LiveFeed` (publish/subscribe: the latest
  annotated JPEG, the current view, round events), composed of :mod:`vision.web.pubsub` (the
  picture and its wake-ups, the rounds shown, the subscribers), :mod:`vision.web.dealing` (the
  live positions while a deal is dealt and read) and :mod:`vision.web.control` (acknowledgements
  and manual entries into the audit store).
- :mod:`vision.web.feed`: :class:`~vision.web.feed.PipelineFeed` (the session's frame loop,
  :mod:`vision.session`, publishing to the hub).
- :mod:`vision.web.health`: the camera's state for the page and ``GET /healthz`` (503 once
  the camera has been lost for longer than a grace).
- :mod:`vision.web.app`: :func:`~vision.web.app.create_app` (FastAPI routers).

The views themselves (the page's and the overlay's) are :mod:`vision.io.views`. The CLI is
``paigow serve`` (:mod:`vision.commands.serve`).
"""

from __future__ import annotations

__all__ = ["create_app", "LiveFeed", "PipelineFeed"]


def __getattr__(name: str):  # lazy: importing the package loads neither FastAPI nor OpenCV
    if name == "create_app":
        from vision.web.app import create_app

        return create_app
    if name == "LiveFeed":
        from vision.web.hub import LiveFeed

        return LiveFeed
    if name == "PipelineFeed":
        from vision.web.feed import PipelineFeed

        return PipelineFeed
    raise AttributeError(name)
