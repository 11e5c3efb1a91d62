"""Live figures of one table's camera and frame loop, as frigate shows them per camera (issue
45): ``GET /api/stats`` of the dealer display and of the pit (docs/web-api.md, docs/pit.md).

:class:`LiveStats` is a sink (:class:`vision.io.sinks.Sink`) of the session: it sees every
processed frame and every round, and reads the camera's own counters
(:meth:`vision.io.frames.FrameSource.stats`: frames read; the newest-frame reader's dropped
frames) each time it samples. From them, over a sliding window of the last :data:`WINDOW_S`
seconds of the clock (``time.monotonic``):

* ``camera_fps`` -- frames the camera delivered per second;
* ``processed_fps`` -- frames through the pipeline per second;
* ``skipped_fps`` -- camera frames not processed per second (delivered minus processed: the
  live reader keeps only the newest frame, so a slow pipeline skips frames);
* ``detector`` -- the detect stage per processed frame (ms, mean and last over the window)
  and, where the pit's shared detector service runs the models, this table's requests waiting
  for it (:func:`vision.recognition.service.client_stats`);
* ``latency_s`` -- for the last few rounds, seconds from the first processed frame that showed
  the round's tiles to the round's event;
* ``behind`` / ``stuck`` -- the table falls behind: processed below ``behind_ratio`` of the
  camera's rate for ``behind_after_s`` seconds, or the last processed frame older than
  ``stale_after_s`` while the camera delivers; it is stuck: a detector request unanswered for
  ``stuck_after_s``, or no frame processed for that long while the camera delivers. Each
  episode is logged once (a WARNING when it begins, INFO when it ends), never per frame.

Memory is bounded whatever the frame rate (:class:`RateWindow` keeps at most two samples per
``resolution_s``; every other history is a ``deque`` with a ``maxlen``); every method is
thread-safe (the frame loop writes, the web server and the pit's report thread read).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections import deque
from typing import Any, Callable, Mapping, Sequence

from vision.io.sinks import Sink
from vision.table.events import utc_now_iso

__all__ = ["LiveStats", "RateWindow", "WINDOW_S", "STUCK_AFTER_S"]

log = logging.getLogger(__name__)

#: Seconds of the sliding window the rates and means are taken over.
WINDOW_S = 10.0
#: A table whose processed rate stays below this share of the camera's rate ...
BEHIND_RATIO = 0.5
#: ... for this many seconds falls behind.
BEHIND_AFTER_S = 10.0
#: Seconds the last processed frame may be old while the camera delivers before the table
#: falls behind.
STALE_AFTER_S = 2.0
#: Seconds a detector request may wait, or the frame loop process nothing while the camera
#: delivers, before the table is stuck.
STUCK_AFTER_S = 5.0
#: Rounds whose latency is kept.
LATENCY_ROUNDS = 8


class RateWindow:
    """Samples of cumulative counters over time; their increase over the last ``window_s``.

    Args:
        window_s: seconds the increase is taken over.
        resolution_s: samples closer than this are merged (the newest kept), so at most
            ``2 * window_s / resolution_s + 4`` samples are held whatever the sampling rate.

    A counter that goes down (its source restarted) starts the window again from that sample.
    """

    def __init__(self, window_s: float = WINDOW_S, resolution_s: float = 0.1) -> None:
        self.window_s, self.resolution_s = float(window_s), float(resolution_s)
        self._samples: deque = deque(maxlen=2 * math.ceil(self.window_s / self.resolution_s)
                                     + 4)

    def add(self, t: float, totals: Sequence[float]) -> None:
        """Record the counters ``totals`` at time ``t`` (seconds, non-decreasing)."""
        totals = tuple(float(x) for x in totals)
        s = self._samples
        if s and any(a < b for a, b in zip(totals, s[-1][1])):
            s.clear()
        if len(s) >= 2 and t - s[-2][0] < self.resolution_s:
            s[-1] = (t, totals)
        else:
            s.append((t, totals))
        while len(s) > 2 and s[1][0] <= t - self.window_s:  # s[0]: the window's baseline
            s.popleft()

    def delta(self, t: float, totals: Sequence[float]) -> tuple[float, tuple[float, ...]]:
        """``(seconds, increases)`` from the window's baseline -- the newest sample at or
        before ``t - window_s``, else the oldest -- to ``totals`` at ``t``; ``(0.0, zeros)``
        before any sample."""
        base = None
        for st, tot in self._samples:
            if base is not None and st > t - self.window_s:
                break
            base = (st, tot)
        if base is None:
            return 0.0, tuple(0.0 for _ in totals)
        return max(0.0, t - base[0]), tuple(float(a) - b for a, b in zip(totals, base[1]))

    def rates(self, t: float, totals: Sequence[float]) -> tuple[float, ...]:
        """Increase per second of each counter over the window (0.0 when it covers no time)."""
        dt, d = self.delta(t, totals)
        return tuple(x / dt if dt > 0 else 0.0 for x in d)


def _value(obj: Any) -> Any:
    """``obj()`` when it is a callable, else ``obj`` (a source, pipeline or detector given
    directly or through a callable that finds it when asked)."""
    if callable(obj):
        try:
            return obj()
        except Exception:  # noqa: BLE001 - nothing to read yet
            return None
    return obj


class LiveStats(Sink):
    """The live figures of one table (module docstring); a session sink.

    Args:
        table_id: shown in the figures and the log lines.
        source: the session's :class:`vision.io.frames.FrameSource`, or a callable returning it
            (None while there is none: a session still opening, in-memory frames); its
            ``stats()`` counters are the camera's. Without one, frames delivered are counted
            from the frames' indices (a live source numbers the frames it read).
        pipeline: the pipeline, or a callable returning it: its ``tracker.open`` (read with
            ``getattr``) says when a new round opens (its first frame with tiles starts the
            round's latency); without it a new round starts after a frame without tiles.
        detector: a callable returning the shared detector client's counters
            (:func:`vision.recognition.service.client_stats`: ``waiting_s``, ``pending``), or
            None (the models run in this process).
        window_s: seconds of the sliding window.
        clock: the monotonic clock, seconds (tests give a fake one).
        behind_ratio, behind_after_s, stale_after_s, stuck_after_s: the thresholds (module
            docstring; :data:`BEHIND_RATIO`, :data:`BEHIND_AFTER_S`, :data:`STALE_AFTER_S`,
            :data:`STUCK_AFTER_S`).
        rounds: rounds whose latency is kept.
    """

    def __init__(self, *, table_id: str = "table-1", source: Any = None, pipeline: Any = None,
                 detector: Callable[[], Mapping | None] | None = None,
                 window_s: float = WINDOW_S, clock: Callable[[], float] = time.monotonic,
                 behind_ratio: float = BEHIND_RATIO, behind_after_s: float = BEHIND_AFTER_S,
                 stale_after_s: float = STALE_AFTER_S, stuck_after_s: float = STUCK_AFTER_S,
                 rounds: int = LATENCY_ROUNDS) -> None:
        self.table_id = str(table_id)
        self.source, self.pipeline, self.detector = source, pipeline, detector
        self.window_s = float(window_s)
        self.clock = clock
        self.behind_ratio, self.behind_after_s = float(behind_ratio), float(behind_after_s)
        self.stale_after_s, self.stuck_after_s = float(stale_after_s), float(stuck_after_s)
        self._lock = threading.Lock()
        self._window = RateWindow(self.window_s)  # (delivered, processed)
        self._since_wall = time.time()
        self._processed = 0
        self._by_index = 0                 # frames delivered, counted from frame indices
        self._last_index: int | None = None
        self._src: Any = None              # the source object last read
        self._src_base = (0, 0)            # (read, dropped) of the sources before it
        self._src_last = (0, 0)            # its (read, dropped) when last read
        self._delivered_last = 0
        self._delivered_at: float | None = None  # clock time the delivered count last rose
        self._frame_at: float | None = None      # clock time of the last processed frame
        #: (clock time, ms) of the detect stage of each processed frame
        self._detect: deque = deque(maxlen=1024)
        #: (round_id, seconds, settled) of the last rounds, oldest first
        self._latency: deque = deque(maxlen=int(rounds))
        self._first_seen: float | None = None
        self._armed = True
        self._slow_since: float | None = None
        self._warned: set[str] = set()
        self._episode_at: float | None = None
        self._watch: threading.Thread | None = None
        self._closed = threading.Event()
        with self._lock:
            self._sample(self.clock())

    # -- counting (the caller holds the lock) ------------------------------------------------
    def _camera(self) -> tuple[int, int, bool]:
        """``(delivered, dropped, from_source)`` since the start: the camera's counters summed
        over every source object seen (a looped file is opened again), else the count from
        frame indices."""
        src = _value(self.source)
        stats = getattr(src, "stats", None)
        if stats is None:
            return self._by_index, 0, False
        try:
            st = stats()
            cur = (int(st.frames_read), int(getattr(st, "dropped", 0)))
        except Exception:  # noqa: BLE001 - a source closing under us: its last counts
            return self._src_base[0] + self._src_last[0], \
                self._src_base[1] + self._src_last[1], True
        if src is not self._src:
            if self._src is not None:
                self._src_base = (self._src_base[0] + self._src_last[0],
                                  self._src_base[1] + self._src_last[1])
            self._src = src
        self._src_last = cur
        return self._src_base[0] + cur[0], self._src_base[1] + cur[1], True

    def _sample(self, now: float) -> tuple[int, int, bool]:
        delivered, dropped, real = self._camera()
        if delivered > self._delivered_last:
            self._delivered_at = now
        self._delivered_last = delivered
        if real or self._processed or delivered:
            self._window.add(now, (delivered, self._processed))
        return delivered, dropped, real

    # -- the sink ------------------------------------------------------------------------
    def wants_picture(self) -> bool:
        """No picture needed: the figures only."""
        return False

    def watched(self) -> bool:
        """The figures only: nobody sees its pictures."""
        return False

    def frame(self, image, frame, result) -> bool:
        """One processed frame: counted, its detect time kept, the round's first sight noted."""
        now = self.clock()
        with self._lock:
            self._processed += 1
            self._frame_at = now
            idx = getattr(frame, "index", None)
            if isinstance(idx, int):
                last = self._last_index
                self._by_index += idx - last if last is not None and idx > last else 1
                self._last_index = idx
            detect = (getattr(result, "timings", None) or {}).get("detect")
            if detect is not None:
                self._detect.append((now, 1000.0 * float(detect)))
            tiles = bool(getattr(result, "positions", None))
            tracker = getattr(_value(self.pipeline), "tracker", None)
            if getattr(tracker, "open", None) is True or not tiles:
                self._armed = True  # a new round may start (table clear, or a new deal)
            if self._armed and tiles and self._first_seen is None:
                self._first_seen = now
            self._sample(now)
        return True

    def round(self, event) -> None:
        """One round: its latency, from the first frame that showed its tiles (the event's
        own ``first_seen`` on this clock where the pipeline gives one) to now."""
        now = self.clock()
        first = getattr(event, "first_seen", None)
        if first is None:
            first = (getattr(event, "extra", None) or {}).get("first_seen")
        with self._lock:
            if not isinstance(first, (int, float)) or isinstance(first, bool) or first > now:
                first = self._first_seen
            if first is not None:
                self._latency.append((getattr(event, "round_id", None), now - first,
                                      bool(getattr(event, "settled", False))))
            self._first_seen, self._armed = None, False

    def close(self) -> None:
        """Stop the :meth:`watch` thread (the session closes its sinks at its end)."""
        self._closed.set()

    # -- reading -------------------------------------------------------------------------
    def watch(self, every_s: float = 1.0) -> "LiveStats":
        """Take a :meth:`snapshot` every ``every_s`` seconds on a thread of its own until
        :meth:`close`, so a table that falls behind is logged while nobody reads the figures
        (``paigow serve``; the pit's worker reports its figures each second instead)."""
        if self._watch is None:
            def run() -> None:
                while not self._closed.wait(every_s):
                    self.snapshot()

            self._watch = threading.Thread(target=run, daemon=True, name="live-stats")
            self._watch.start()
        return self

    def snapshot(self) -> dict:
        """The figures now (plain JSON values; docs/web-api.md, ``/api/stats``).

        Returns:
            ``{"table_id", "time" (UTC ISO), "since" (UTC ISO, the start of the totals),
            "window_s", "span_s" (seconds the rates cover: the window, or less since the
            start), "camera_fps", "processed_fps", "skipped_fps" (frames/s), "totals":
            {"delivered", "processed", "skipped", "dropped"} (frames since the start;
            ``dropped``: by the newest-frame reader), "last_frame_age_s" (seconds since the
            last processed frame; None before), "camera_age_s" (seconds since the camera's
            last frame; None before), "detector": {"infer_ms_mean", "infer_ms_last" (the
            detect stage per processed frame over the window, ms; None without one),
            "frames" (frames measured), "pending" (this table's requests to the shared
            detector in flight; None without it), "waiting_s" (the oldest one's wait, s),
            "queue" (None here; the pit fills in its service's requests not answered),
            "still_pending" (a fused still reading runs beside the loop), "stuck"},
            "readings": {"made", "light" (of them made at ``busy_scales``: the machine was busy,
            :class:`vision.recognition.background.StillReader`), "followed" (of them the
            full readings that followed a light one which left a tile unread), "last_s"
            (seconds the last one took)} (None without readings beside the loop),
            "latency_s" (seconds, newest round first), "latency_rounds" (their round ids),
            "behind", "stuck" (bools), "resting" (a still table whose reading stands: the
            loop takes few frames by design), "reasons" (why, in words)}``.
        """
        now = self.clock()
        with self._lock:
            delivered, dropped, real = self._sample(now)
            span, (d_del, d_proc) = self._window.delta(now, (delivered, self._processed))
            cam = d_del / span if span > 0 else 0.0
            proc = d_proc / span if span > 0 else 0.0
            skipped = max(0.0, d_del - d_proc) / span if span > 0 else 0.0
            frame_age = None if self._frame_at is None else now - self._frame_at
            cam_age = self._camera_age(now, real)
            recent = [ms for t, ms in self._detect if t >= now - self.window_s]
            det_mean = sum(recent) / len(recent) if recent else None
            det_last = self._detect[-1][1] if self._detect else None
            latency = list(reversed(self._latency))
            processed = self._processed
            client = _value(self.detector) if self.detector is not None else None
            waiting = None if not client else float(client.get("waiting_s") or 0.0)
            pending = None if not client else int(client.get("pending") or 0)
            engine = getattr(_value(self.pipeline), "engine", None)
            still = bool(getattr(engine, "still_pending", False))
            reader = getattr(engine, "background", None)
            readings = None if reader is None else {
                "made": int(getattr(reader, "made", 0)),
                "light": int(getattr(reader, "light_made", 0)),
                "followed": int(getattr(reader, "followed", 0)),
                "last_s": _r(getattr(reader, "last_s", None))}
            resting = bool(getattr(engine, "standing", False))
            det_stuck = waiting is not None and waiting > self.stuck_after_s
            delivering = cam_age is not None and cam_age <= self.stale_after_s
            reasons_behind, reasons_stuck = [], []
            # frames skipped by design (a reading beside the loop, a still table resting:
            # vision.session READING_FPS, RESTING_FPS) are no sign of falling behind
            slow = cam > 0 and proc < self.behind_ratio * cam and not (still or resting)
            if not slow:
                self._slow_since = None
            elif self._slow_since is None:
                self._slow_since = now
            if slow and now - self._slow_since >= self.behind_after_s:
                reasons_behind.append(f"processing {proc:.1f} of the camera's {cam:.1f} "
                                      f"frames/s for {now - self._slow_since:.0f} s")
            if delivering and frame_age is not None and frame_age > self.stale_after_s:
                reasons_behind.append(f"last processed frame {frame_age:.1f} s ago while the "
                                      f"camera delivers")
                if frame_age > self.stuck_after_s:
                    reasons_stuck.append(f"no frame processed for {frame_age:.1f} s")
            if det_stuck:
                reasons_stuck.append(f"the detector has not answered for {waiting:.1f} s")
            behind, stuck = bool(reasons_behind), bool(reasons_stuck)
            notes = self._episode(now, behind, stuck, reasons_behind + reasons_stuck)
        for level, msg, args in notes:
            log.log(level, msg, *args)
        return {
            "table_id": self.table_id, "time": utc_now_iso(),
            "since": _iso(self._since_wall), "window_s": self.window_s,
            "span_s": round(span, 3), "camera_fps": round(cam, 2),
            "processed_fps": round(proc, 2), "skipped_fps": round(skipped, 2),
            "totals": {"delivered": int(delivered), "processed": int(processed),
                       "skipped": int(max(0, delivered - processed)), "dropped": int(dropped)},
            "last_frame_age_s": _r(frame_age), "camera_age_s": _r(cam_age),
            "detector": {"infer_ms_mean": _r(det_mean, 1), "infer_ms_last": _r(det_last, 1),
                         "frames": len(recent), "pending": pending, "waiting_s": _r(waiting),
                         "queue": None, "still_pending": still, "stuck": det_stuck},
            "readings": readings,
            "latency_s": [_r(s) for _, s, _ in latency],
            "latency_rounds": [rid for rid, _, _ in latency],
            "behind": behind, "stuck": stuck, "resting": resting,
            "reasons": reasons_behind + reasons_stuck,
        }

    def _camera_age(self, now: float, real: bool) -> float | None:
        """Seconds since the camera's last frame: the source's own clock where it has one,
        else since the delivered count last rose."""
        if real:
            fs = getattr(_value(self.source), "feed_state", None)
            if fs is not None:
                try:
                    age = fs().last_frame_age_s
                    return None if age is None else float(age)
                except Exception:  # noqa: BLE001 - fall back to the counters
                    pass
        return None if self._delivered_at is None else now - self._delivered_at

    def _episode(self, now: float, behind: bool, stuck: bool, reasons: list[str]) -> list:
        """Log lines for episodes that begin or end (lock held; logged after it is
        released)."""
        out = []
        for kind, on, what in (("behind", behind, "falling behind"),
                               ("stuck", stuck, "stuck")):
            if on and kind not in self._warned:
                self._warned.add(kind)
                if self._episode_at is None:
                    self._episode_at = now
                out.append((logging.WARNING, "table %s %s: %s",
                            (self.table_id, what, "; ".join(reasons))))
            elif not on:
                self._warned.discard(kind)
        if not self._warned and self._episode_at is not None:
            out.append((logging.INFO, "table %s caught up after %.1f s",
                        (self.table_id, now - self._episode_at)))
            self._episode_at = None
        return out


def _r(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(float(x), digits)


def _iso(t: float) -> str:
    """``time.time()`` seconds as :func:`vision.table.events.utc_now_iso` writes now."""
    from datetime import datetime, timezone

    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
