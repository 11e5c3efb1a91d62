"""The dealer display's feed: the session's frame loop publishing to the web hub.

:class:`PipelineFeed` is a :class:`vision.web.hub.LiveFeed` whose thread runs one
:class:`vision.session.Session` (the same frame loop as ``paigow run``) with itself as one
more sink: every annotated picture and the live positions go to the hub, every round -- after
the audit store, when there is one, has stored it -- goes to the page's subscribers. So
``paigow serve --audit DB`` records every round it shows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from vision.config import OutputConfig, PipelineConfig, RunConfig
from vision.schema import RoundEvent
from vision.session import Session
from vision.io.sinks import Sink
from vision.io.stats import LiveStats
from vision.web.hub import LiveFeed

__all__ = ["PipelineFeed"]


class _HubSink(Sink):
    """Publishes a session's frames and rounds to a :class:`LiveFeed`."""

    def __init__(self, feed: LiveFeed, rules: str) -> None:
        self.feed, self.rules = feed, rules

    def frame(self, image, frame, result) -> bool:
        img = image if image is not None else frame.image
        if img is not None and getattr(img, "ndim", 0) == 3:  # for the layout editor
            self.feed.frame_size = (int(img.shape[1]), int(img.shape[0]))
        self.feed.raw_frame = frame.image  # the camera's own picture: the set check's
        reads = getattr(result, "reads", None)
        if reads:
            self.feed.last_reads = list(reads)
        positions = getattr(result, "positions", None)
        alerts = getattr(result, "alerts", None)
        self.feed.publish_frame(image if image is not None else frame.image,
                                frame_index=frame.index,
                                positions=positions if isinstance(positions, Mapping) else None,
                                alerts=alerts, rules=self.rules,
                                reading=bool(getattr(result, "provisional", False)))
        return True

    def watched(self) -> bool:
        """Someone looked at the feed's pictures lately
        (:meth:`vision.web.hub.LiveFeed.pictures_wanted`)."""
        return self.feed.pictures_wanted()

    def round(self, event: RoundEvent) -> None:
        self.feed.publish_event(event)


class PipelineFeed(LiveFeed):
    """Frames from a source through the recognition pipeline, published live.

    Args:
        source: camera index, URL, video file, image file, folder or glob.
        config: the :class:`vision.config.RunConfig` (``paigow serve`` builds it like
            ``paigow run``); None builds one from ``layout``, ``models_dir``, ``backend`` and
            ``pipeline_kwargs``.
        loop: replay a file source from the start when it ends (demos).
        realtime: pace file sources to their timestamps (False: as fast as the pipeline runs).
        pipeline: an already built object with ``process(frame)`` (tests); no models loaded.
        pipeline_kwargs: more :meth:`vision.config.PipelineConfig.build` settings, plus
            ``tile_detector`` / ``pip_detector`` to inject detectors.
        **kw: :class:`vision.web.hub.LiveFeed` arguments.

    Raises:
        InputError: bad source, layout, settings, audit store or models (before the thread
            starts).
    """

    def __init__(self, source: str | Path, config: RunConfig | None = None, *,
                 layout: Any = None, models_dir: str | Path | None = None,
                 backend: str | None = None, loop: bool = False, realtime: bool = True,
                 pipeline: Any = None, pipeline_kwargs: Mapping[str, Any] | None = None,
                 **kw: Any) -> None:
        spec = str(source)
        extra = dict(pipeline_kwargs or {})
        detectors = {k: extra.pop(k) for k in ("tile_detector", "pip_detector") if k in extra}
        if config is None:
            extra.setdefault("source", spec)
            config = RunConfig(spec, PipelineConfig.build(layout=layout, models_dir=models_dir,
                                                          backend=backend, **extra),
                               OutputConfig(progress=False))
        self.loop, self.realtime = bool(loop), bool(realtime)
        self._sink = _HubSink(self, "pa")
        #: the live figures of ``GET /api/stats`` (a sink of the session)
        self.stats = LiveStats(source=lambda: self.session.src,
                               pipeline=lambda: self.session.pipeline)
        self.session = Session(config, pipeline=pipeline, sinks=[self._sink, self.stats],
                               pace=realtime, loop=loop, **detectors)
        self.pipeline = self.session.pipeline
        self.rules = self._sink.rules = str(getattr(self.pipeline, "rules", None) or "pa")
        kw.setdefault("source", spec)
        kw.setdefault("audit", config.output.audit)  # the page's acks and manual entries
        kw.setdefault("table_id", getattr(self.pipeline, "table_id", None) or "table-1")
        super().__init__(**kw)
        self.stats.table_id = self.table_id
        self.summary: dict | None = None
        #: the newest frame's (width, height) px and tiles (the layout editor's proposal)
        self.frame_size: tuple[int, int] | None = None
        self.last_reads: list | None = None

    def feed_state(self):
        """The session's source's :class:`vision.io.frames.FeedState` (None before it is open)."""
        src = self.session.src
        return src.feed_state() if src is not None else None

    def live_stats(self) -> dict:
        """:meth:`vision.io.stats.LiveStats.snapshot` of the session."""
        return self.stats.snapshot()

    def _run(self) -> None:
        self.stats.watch()  # a table falling behind is logged while nobody reads the figures
        self.summary = self.session.run()

    def _on_stop(self) -> None:
        self.session.stop()

    def _reset(self) -> dict:
        self.session.request_reset()  # applied in the feed thread, between frames
        return {"pending": True}
