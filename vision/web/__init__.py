"""Dealer display: a small read-only web app showing the live annotated picture, each
position's hands, results and alerts, and pushing every settled round to the browser.

- :mod:`vision.web.feed`: :class:`~vision.web.feed.LiveFeed` (background thread publishing the
  latest annotated JPEG, the current positions view and settled round events), with
  :class:`~vision.web.feed.FakeFeed` (scripted, for tests and demos) and
  :class:`~vision.web.feed.PipelineFeed` (frames from :func:`vision.capture.open_source`
  through :class:`vision.pipeline.Pipeline`).
- :mod:`vision.web.app`: :func:`~vision.web.app.create_app` (FastAPI).

The CLI is ``paigow serve`` (:mod:`vision.commands.serve`).
"""

from __future__ import annotations

__all__ = ["create_app", "LiveFeed", "FakeFeed", "PipelineFeed"]


def __getattr__(name: str):  # lazy: importing the package loads neither FastAPI nor OpenCV
    if name == "create_app":
        from .app import create_app

        return create_app
    if name in ("LiveFeed", "FakeFeed", "PipelineFeed"):
        from . import feed

        return getattr(feed, name)
    raise AttributeError(name)
