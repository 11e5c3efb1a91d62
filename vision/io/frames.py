"""Frames and what every frame source shares: :class:`Frame`, the counters
(:class:`SourceStats`), the feed's state (:class:`FeedState`) and the :class:`FrameSource` base
class. The sources themselves are in :mod:`vision.io.capture` (files) and :mod:`vision.io.live`
(cameras and streams); :func:`vision.io.capture.open_source` opens any of them.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Iterator

import numpy as np

from scoring.errors import InputError

__all__ = ["Frame", "SourceStats", "FeedState", "FrameSource"]

log = logging.getLogger("vision.io.capture")


@dataclass
class Frame:
    """One frame from a source.

    Attributes:
        image: uint8 array (H, W, 3), BGR.
        timestamp: seconds (float). Live sources: ``time.monotonic()`` when the frame was read;
            files: ``index / fps``.
        index: frame number within the source, from 0 (for live sources the reader's count, so
            a jump shows frames that were dropped).
        source: the spec the source was opened with.
        path: the image file for image sources, else None.
    """

    image: np.ndarray
    timestamp: float
    index: int
    source: str
    path: str | None = None


@dataclass
class SourceStats:
    """Counters of a :class:`FrameSource` (see :meth:`FrameSource.stats`).

    Attributes:
        frames_read: frames read whole (decoded, or an MJPEG stream's whole JPEG packet).
        frames_yielded: frames handed to the consumer.
        skipped_corrupt: frames or image files that failed to decode (or were empty), and
            frames of a damaged video lost between two readable ones, skipped.
        dropped: live only: frames replaced by a newer one before the consumer took them.
        reconnects: live only: successful reopenings after a drop.
        gaps: live only: outages that ended (frames came back after a drop or a stall).
        gaps_s: live only: their total length, seconds (each from the last frame before the
            outage to the first frame after it).
        fps: measured frames read per second between the first and the last frame read
            (0.0 before two frames).
    """

    frames_read: int = 0
    frames_yielded: int = 0
    skipped_corrupt: int = 0
    dropped: int = 0
    reconnects: int = 0
    gaps: int = 0
    gaps_s: float = 0.0
    fps: float = 0.0

    def to_dict(self) -> dict:
        """Plain dict (JSON-ready)."""
        return asdict(self)


@dataclass(frozen=True)
class FeedState:
    """The state of a source's feed at one moment (:meth:`FrameSource.feed_state`).

    Attributes:
        state: ``"connected"`` (frames arrive), ``"reconnecting"`` (a live source lost its
            frames -- drop or stall -- and is being reopened; it stays so until the first
            frame after the outage) or ``"ended"`` (closed, end of file, or given up).
        since: wall-clock time the state began, seconds since the epoch (``time.time()``).
        state_s: seconds in this state.
        last_frame_age_s: seconds since the last frame was read (None before the first).
        current_gap_s: while reconnecting, seconds since the last frame (the outage so far;
            since the opening when no frame came yet); 0.0 otherwise.
        last_gap_s: length of the last outage that ended, seconds (last frame before it to
            first frame after it); None when none ended yet.
        gaps: outages that ended.
        attempts: failed reopening attempts in the current outage.
        live: the source's ``live`` attribute (a reader thread keeps the newest frame).
        error: why the source ended, when it ended on an error (else None).
    """

    state: str
    since: float
    state_s: float
    last_frame_age_s: float | None
    current_gap_s: float
    last_gap_s: float | None
    gaps: int
    attempts: int
    live: bool
    error: str | None = None

    def to_dict(self) -> dict:
        """Plain dict (JSON-ready)."""
        return asdict(self)


class FrameSource:
    """An iterable of :class:`Frame` with counters; use as a context manager or call close().

    Attributes:
        spec: the spec it was opened with.
        kind: ``"camera"``, ``"stream"``, ``"video"``, ``"image"`` or ``"images"``.
        live: True when a reader thread keeps only the newest frame.
        fps: nominal frames per second (files: reported or assumed; live: None).
        frame_count: number of frames when known in advance (images, videos), else None.
    """

    kind: str = ""
    live: bool = False
    fps: float | None = None
    frame_count: int | None = None

    def __init__(self, spec: str) -> None:
        from vision.sources import redact_url

        #: the spec as shown, logged and stored: its credentials masked (vision.sources)
        self.spec = redact_url(spec)
        #: the spec the source is opened with (may hold credentials: never shown)
        self.open_spec = str(spec)
        self._stats = SourceStats()
        self._t_first: float | None = None
        self._t_last: float | None = None
        self._lock = threading.Lock()
        # feed state (see feed_state); monotonic times, wall clock kept for `since`
        self._state = "connected"
        self._state_t = time.monotonic()
        self._state_wall = time.time()
        self._outage_t0: float | None = None   # start of the current outage (last frame)
        self._last_gap: float | None = None
        self._attempts = 0
        self._end_error: str | None = None

    def _count_read(self) -> None:
        now = time.monotonic()
        gap = None
        with self._lock:
            self._stats.frames_read += 1
            if self._t_first is None:
                self._t_first = now
            self._t_last = now
            if self._state == "reconnecting" and self._outage_t0 is not None:
                gap = now - self._outage_t0
                self._stats.gaps += 1
                self._stats.gaps_s += gap
                self._last_gap = gap
                self._set_state("connected", now)
        if gap is not None:
            log.warning("%s %s: frames back after a gap of %.2f s (gap %d)", self.kind,
                        self.spec, gap, self._stats.gaps)

    def _count_corrupt(self, what: str, n: int = 1) -> None:
        with self._lock:
            self._stats.skipped_corrupt += n
        log.warning("skipped corrupt frame%s from %s: %s", "s" if n > 1 else "", self.spec, what)

    def _set_state(self, state: str, now: float | None = None) -> None:
        """Caller holds ``self._lock``."""
        self._state = state
        self._state_t = time.monotonic() if now is None else now
        self._state_wall = time.time() - (time.monotonic() - self._state_t)
        self._attempts = 0

    def _lost(self, why: str) -> None:
        """A live source lost its frames (drop or stall): the outage starts at the last frame."""
        now = time.monotonic()
        with self._lock:
            if self._state == "reconnecting":
                return  # a reopened connection that gave nothing: the same outage goes on
            self._outage_t0 = self._t_last if self._t_last is not None else self._state_t
            self._set_state("reconnecting", now)
            age = now - self._outage_t0
        log.warning("%s %s %s (last frame %.2f s ago); reconnecting", self.kind, self.spec, why,
                    age)

    def _attempt_failed(self) -> None:
        with self._lock:
            self._attempts += 1

    def _ended(self, error: str | None = None) -> None:
        with self._lock:
            if self._state != "ended":
                self._set_state("ended")
            if error is not None and self._end_error is None:
                from vision.sources import redact_text

                self._end_error = redact_text(error)

    def feed_state(self) -> FeedState:
        """The feed's state now (see :class:`FeedState`); cheap, thread-safe.

        A health check can fail while ``state == "reconnecting"`` and ``current_gap_s`` is above
        its limit, or while ``last_frame_age_s`` grows on a live source (a stall not yet timed
        out by the reader).
        """
        now = time.monotonic()
        with self._lock:
            age = None if self._t_last is None else now - self._t_last
            gap = 0.0
            if self._state == "reconnecting" and self._outage_t0 is not None:
                gap = now - self._outage_t0
            return FeedState(self._state, self._state_wall, now - self._state_t, age, gap,
                             self._last_gap, self._stats.gaps, self._attempts, self.live,
                             self._end_error)

    def stats(self) -> SourceStats:
        """A snapshot of the counters (see :class:`SourceStats`)."""
        with self._lock:
            s = SourceStats(**asdict(self._stats))
            if self._t_first is not None and self._t_last is not None and s.frames_read > 1:
                dt = self._t_last - self._t_first
                s.fps = (s.frames_read - 1) / dt if dt > 0 else 0.0
        return s

    def __iter__(self) -> Iterator[Frame]:
        try:
            for frame in self._frames():
                with self._lock:
                    self._stats.frames_yielded += 1
                yield frame
        except InputError as exc:
            self._ended(str(exc))
            raise
        self._ended()

    def _frames(self) -> Iterator[Frame]:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self) -> None:
        """Release the underlying device or file (idempotent)."""
        self._ended()

    def __enter__(self) -> "FrameSource":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.kind} {self.spec!r} live={self.live}>"
