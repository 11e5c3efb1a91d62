"""Live sources: cameras and RTSP/HTTP streams (and video files replayed live), read by a
thread that keeps the newest frame (:class:`LiveSource`) or in the calling thread without
dropping any (:class:`SequentialLive`).

Once opened, a live source never gives up: a drop, or a stall longer than the FFmpeg read
timeout, releases the capture and reopens it with exponential backoff capped at
``max_delay_s`` (:class:`ReconnectPolicy`) for as long as the process runs. Each outage is
logged (logger ``vision.io.capture``) with its true length, from the last frame before it to the
first frame after it, and counted; :meth:`vision.io.frames.FrameSource.feed_state` tells the
feed's state meanwhile. Open them with :func:`vision.io.capture.open_source`.

An MJPEG stream (HTTP or RTSP, FFmpeg reports the codec ``MJPG``) is read as its packets: every
packet is a whole JPEG picture, kept as it came (:class:`EncodedFrame`) and decoded only when the
frame loop takes it (:class:`MjpegPackets`). A table that takes one frame in three no longer
pays for decoding the two it skips: decoding a 1080p stream at 15 fps cost 0.93 s of CPU per
10 s against 0.33 s when one packet in three is decoded (docs/pit.md). A stream whose packets
OpenCV cannot decode on their own (an MJPEG without Huffman tables) is read decoded, as before.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol

import cv2
import numpy as np

from scoring.errors import InputError

from vision.io.frames import Frame, FrameSource
from vision.io.images import to_bgr
from vision.sources import redact_text

__all__ = ["ReconnectPolicy", "Capture", "LiveSource", "SequentialLive", "default_opener",
           "EncodedFrame", "MjpegPackets"]

log = logging.getLogger("vision.io.capture")
_URL_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


@dataclass
class ReconnectPolicy:
    """Exponential backoff for opening and reopening live sources.

    Waits ``initial_delay_s``, then multiplies by ``factor`` up to ``max_delay_s`` between
    attempts. Reopening after a drop gives up after ``max_attempts`` failed attempts or
    ``max_total_s`` seconds (None, the default: never -- a live source is retried for as long
    as the process runs, at most ``max_delay_s`` apart, so the picture comes back at most that
    long after the camera does). The first opening (in :func:`open_source`) is also bounded by
    ``open_attempts`` / ``open_total_s`` (the tighter of the two pairs), so a wrong URL is an
    error instead of a silent wait. ``open_timeout_ms`` / ``read_timeout_ms`` are passed to
    OpenCV's FFmpeg backend for URLs: a stream that sends nothing for ``read_timeout_ms`` is a
    stall, handled like a drop.

    ``wait_at_start`` (``paigow serve`` and the pit's workers): a camera that is down when the
    source is opened is not an error -- the source opens at once and its reader thread tries
    to connect with the same backoff and limits as a reconnection (by default forever), the
    feed state ``reconnecting`` meanwhile (so ``/healthz`` answers 503 with the state).
    """

    initial_delay_s: float = 0.5
    factor: float = 2.0
    # 2 s: an attempt every 2 s to a lost camera costs nothing, and the display (and the logged
    # gap) is back within about 2 s of the camera (with 10 s a 60 s outage logged ~65 s).
    max_delay_s: float = 2.0
    max_attempts: int | None = None
    max_total_s: float | None = None
    open_attempts: int | None = 6
    open_total_s: float | None = 30.0
    open_timeout_ms: int = 3000
    read_timeout_ms: int = 5000
    wait_at_start: bool = False

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return min(self.max_delay_s, self.initial_delay_s * self.factor ** min(attempt - 1, 64))

    def limits(self, initial: bool) -> tuple[int | None, float | None]:
        """``(attempts, seconds)`` after which opening (``initial``) or reopening gives up
        (None: no limit)."""
        if not initial:
            return self.max_attempts, self.max_total_s

        def tighter(a, b):
            return b if a is None else a if b is None else min(a, b)

        return tighter(self.max_attempts, self.open_attempts), \
            tighter(self.max_total_s, self.open_total_s)


class Capture(Protocol):
    """What a live opener returns: the part of ``cv2.VideoCapture`` used here."""

    def isOpened(self) -> bool: ...  # noqa: E704,N802
    def read(self) -> tuple[bool, np.ndarray | None]: ...  # noqa: E704
    def release(self) -> None: ...  # noqa: E704


def _try_open(spec: str, opener: Callable[[str], Capture]) -> Capture | None:
    """One opening attempt; None when it fails (an opener that raises counts as failing)."""
    try:
        cap = opener(spec)
    except Exception as exc:
        log.debug("%s", redact_text(f"opening {spec} raised {exc!r}"))
        return None
    if cap is None:
        return None
    if not cap.isOpened():
        cap.release()
        return None
    return cap


def _connect(src: FrameSource, opener: Callable[[str], Capture], policy: ReconnectPolicy,
             stop: threading.Event, history: list[float], initial: bool,
             prior_failures: int = 0) -> Capture | None:
    """Open ``src.spec`` with exponential backoff; the capture, or None when ``stop`` is set.

    ``prior_failures`` counts earlier connections that opened but gave no frame (they count as
    failed attempts, so a source that opens and fails at once cannot spin). Each wait is
    appended to ``history`` (seconds). Reopening (``initial=False``) goes on for as long as
    the policy's ``max_attempts`` / ``max_total_s`` allow (default: forever). Raises
    InputError naming the spec when the policy gives up.
    """
    spec, kind = src.spec, src.kind
    max_attempts, max_total = policy.limits(initial)
    t0 = time.monotonic()
    attempt = prior_failures
    next_note = 60.0
    while not stop.is_set():
        if attempt > 0:
            elapsed = time.monotonic() - t0
            if (max_attempts is not None and attempt >= max_attempts) or \
                    (max_total is not None and elapsed >= max_total):
                what = "cannot open" if initial else "lost and could not reconnect to"
                raise InputError(f"{what} {kind} {spec} after {attempt} attempt(s) "
                                 f"in {elapsed:.1f} s")
            d = policy.delay(attempt)
            if max_total is not None:
                d = max(0.0, min(d, max_total - elapsed))
            history.append(d)
            if len(history) > 1000:  # a day-long outage must not grow it without bound
                del history[:500]
            if elapsed >= next_note:  # a long outage: a warning a minute, the rest at INFO
                next_note += 60.0
                log.warning("%s %s still not available after %.0f s (%d attempts); retrying "
                            "every %.1f s", kind, spec, elapsed, attempt, d)
            else:
                log.info("%s %s not available (attempt %d); retrying in %.2f s", kind, spec,
                         attempt, d)
            if stop.wait(d):
                break
        cap = _try_open(src.open_spec, opener)
        if cap is not None:
            return cap
        attempt += 1
        src._attempt_failed()
    return None


def _usable(img) -> bool:
    if isinstance(img, EncodedFrame):
        return img.whole()
    return img is not None and getattr(img, "size", 0) > 0


class EncodedFrame:
    """One picture of an MJPEG stream as the camera sent it: a whole JPEG, not yet decoded.

    Attributes:
        data: uint8 (N,) the JPEG's bytes.
    """

    __slots__ = ("data",)

    def __init__(self, data: np.ndarray) -> None:
        self.data = np.ascontiguousarray(np.asarray(data, np.uint8).reshape(-1))

    @property
    def size(self) -> int:
        """Bytes."""
        return int(self.data.size)

    def whole(self) -> bool:
        """The bytes begin with a JPEG's start marker and end with its end marker (a packet
        cut short by a failing camera or network is not whole); up to 62 bytes of padding
        after the end marker allowed."""
        d = self.data
        if d.size < 4 or d[0] != 0xFF or d[1] != 0xD8:
            return False
        tail = d[-64:].tobytes()
        return b"\xff\xd9" in tail

    def decode(self) -> np.ndarray | None:
        """uint8 (H, W, 3) BGR, or None where OpenCV cannot decode the bytes."""
        try:
            img = cv2.imdecode(self.data, cv2.IMREAD_COLOR)
        except cv2.error:
            return None
        return img if _usable(img) else None


class MjpegPackets:
    """An FFmpeg capture of an MJPEG stream in OpenCV's raw mode (``CAP_PROP_FORMAT = -1``):
    ``read()`` gives each packet as an :class:`EncodedFrame`, undecoded (the :class:`Capture`
    protocol otherwise). Made by :func:`default_opener`."""

    def __init__(self, cap: Any) -> None:
        self._cap = cap

    def isOpened(self) -> bool:  # noqa: N802 - cv2.VideoCapture's name
        return bool(self._cap.isOpened())

    def read(self) -> tuple[bool, EncodedFrame | None]:
        """``(ok, the next packet)``; ``(ok, None)`` where the read failed or gave nothing."""
        ok, buf = self._cap.read()
        if not ok or buf is None or getattr(buf, "size", 0) == 0:
            return bool(ok), None
        return True, EncodedFrame(buf)

    def release(self) -> None:
        self._cap.release()


def _taken(frame: Frame) -> Frame | None:
    """``frame`` with its picture decoded where it came encoded (None: undecodable)."""
    if not isinstance(frame.image, EncodedFrame):
        return frame
    img = frame.image.decode()
    if img is None:
        return None
    return Frame(img, frame.timestamp, frame.index, frame.source, frame.path)


class LiveSource(FrameSource):
    """A camera, stream (or a file replayed live) read by a thread that keeps the newest frame.

    The reader thread opens the source with ``opener(spec)``, reads frames as fast as they come
    and stores only the newest; the consumer gets the newest frame it has not seen yet (earlier
    unread frames are counted as ``dropped``). When ``read()`` fails on a camera or stream (a
    drop, or a stall longer than the read timeout) the capture is released and reopened with
    the backoff of ``policy`` -- by default for as long as the process runs; meanwhile
    :meth:`feed_state` says ``"reconnecting"`` and the consumer simply waits for the next
    frame. The outage ends with the first frame after it: its true length is logged and counted.
    When a policy with limits gives up, iteration raises :class:`InputError` naming the spec.
    For a file replayed live (``replay_fps`` set), reads are paced to that rate and the end of
    the file ends the source.

    The first connection is made in ``__init__`` (bounded by the policy's ``open_attempts`` /
    ``open_total_s``), so an unreachable source raises :class:`InputError` from
    :func:`open_source`.
    """

    def __init__(self, spec: str, kind: str, opener: Callable[[str], Capture],
                 policy: ReconnectPolicy, replay_fps: float | None = None,
                 max_consecutive_corrupt: int = 30) -> None:
        super().__init__(spec)
        self.kind = kind
        self.live = True
        self._opener = opener
        self.policy = policy
        self._replay_fps = replay_fps
        self.fps = None
        self._max_corrupt = max_consecutive_corrupt
        #: seconds waited before each reopening attempt, in order (for inspection/tests).
        self.backoff_history: list[float] = []
        self._cond = threading.Condition()
        self._latest: Frame | None = None
        self._latest_seq = -1
        self._taken_seq = -1
        self._done = False
        self._error: InputError | None = None
        self._stop = threading.Event()
        self._cap = None if policy.wait_at_start else self._connect(initial=True)
        self._thread = threading.Thread(target=self._run, name=f"capture:{self.spec}", daemon=True)
        self._thread.start()

    def _connect(self, initial: bool, prior_failures: int = 0) -> Capture | None:
        return _connect(self, self._opener, self.policy, self._stop, self.backoff_history,
                        initial, prior_failures)

    # -- reader thread
    def _publish(self, frame: Frame) -> None:
        with self._cond:
            if self._latest is not None and self._latest_seq > self._taken_seq:
                self._stats.dropped += 1
            self._latest = frame
            self._latest_seq = frame.index
            self._cond.notify_all()

    def _finish(self, error: InputError | None = None) -> None:
        self._ended(None if error is None else str(error))
        with self._cond:
            self._done = True
            self._error = error
            self._cond.notify_all()

    def _run(self) -> None:
        seq = 0
        corrupt_run = 0
        got_frame, barren = False, 0   # barren: connections in a row that gave no frame
        period = 1.0 / self._replay_fps if self._replay_fps else None
        next_t = time.monotonic()
        try:
            if self._cap is None and self.policy.wait_at_start:
                # down at start: connect here, like a reconnection (the feed is reconnecting)
                self._cap = _try_open(self.open_spec, self._opener)
                if self._cap is None:
                    self._attempt_failed()
                    self._lost("not reachable at start")
                    self._cap = self._connect(initial=False, prior_failures=1)
                    if self._cap is not None:
                        log.info("%s %s opened; waiting for frames", self.kind, self.spec)
            while not self._stop.is_set():
                cap = self._cap
                if cap is None:
                    break
                if period is not None:
                    wait = next_t - time.monotonic()
                    if wait > 0 and self._stop.wait(wait):
                        break
                    next_t = max(next_t + period, time.monotonic() - period)
                ok, img = cap.read()
                if self._stop.is_set():
                    break
                if ok and _usable(img):
                    corrupt_run = 0
                    got_frame = True
                    self._count_read()
                    img = img if isinstance(img, EncodedFrame) else to_bgr(img)
                    self._publish(Frame(img, time.monotonic(), seq, self.spec))
                    seq += 1
                    continue
                if ok:  # a frame came but is empty / undecodable
                    corrupt_run += 1
                    self._count_corrupt(f"frame {seq}")
                    seq += 1
                    if corrupt_run < self._max_corrupt:
                        continue
                # the source dropped or stalled (or sent only garbage for a while)
                if self._replay_fps is not None and not ok:
                    break  # end of a replayed file
                cap.release()
                self._cap = None
                self._lost(f"dropped after frame {seq - 1}")
                barren = 0 if got_frame else barren + 1
                got_frame = False
                new = self._connect(initial=False, prior_failures=barren)
                if new is None:
                    break
                corrupt_run = 0
                with self._lock:
                    self._stats.reconnects += 1
                log.info("%s %s reopened; waiting for frames", self.kind, self.spec)
                self._cap = new
            self._finish()
        except InputError as exc:
            log.error("%s", exc)
            self._finish(exc)
        except Exception as exc:  # keep the consumer from waiting forever
            self._finish(InputError(redact_text(f"reading {self.spec} failed: {exc!r}")))
        finally:
            # closed while this thread was still reading or reopening: close() left the
            # capture to it (never released under a read in progress)
            if self._stop.is_set() and self._cap is not None:
                self._cap.release()
                self._cap = None

    # -- consumer
    def _frames(self) -> Iterator[Frame]:
        while True:
            with self._cond:
                while self._latest_seq <= self._taken_seq and not self._done:
                    self._cond.wait(0.5)
                if self._latest_seq > self._taken_seq:
                    frame = self._latest
                    self._taken_seq = self._latest_seq
                else:
                    if self._error is not None:
                        raise self._error
                    return
            # an MJPEG packet is decoded here, only for the frame the loop takes
            taken = _taken(frame)
            if taken is None:
                self._count_corrupt(f"frame {frame.index} (undecodable JPEG)")
                continue
            yield taken

    def close(self) -> None:
        self._stop.set()
        t = getattr(self, "_thread", None)
        if t is not None and t.is_alive() and t is not threading.current_thread():
            t.join(timeout=5.0)
        cap = getattr(self, "_cap", None)
        if cap is not None and (t is None or not t.is_alive()):
            cap.release()
            self._cap = None
        self._finish()


def default_opener(policy: ReconnectPolicy) -> Callable[[str], Capture]:
    """The opener of cameras (an index: ``cv2.VideoCapture``) and streams (a URL: FFmpeg with
    the policy's open and read timeouts; an MJPEG stream as its packets, :class:`MjpegPackets`,
    where OpenCV decodes them on their own); anything else ``cv2.VideoCapture(spec)``."""

    def opener(spec: str) -> Capture:
        if spec.isdigit():
            return cv2.VideoCapture(int(spec))
        if _URL_RE.match(spec):
            params = [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, policy.open_timeout_ms,
                      cv2.CAP_PROP_READ_TIMEOUT_MSEC, policy.read_timeout_ms]
            cap = cv2.VideoCapture(spec, cv2.CAP_FFMPEG, params)
            if not _mjpeg(cap) or not cap.set(cv2.CAP_PROP_FORMAT, -1):
                return cap
            # raw packets, if this stream's first packet is a whole JPEG that OpenCV decodes
            # on its own (the packet is given up to the check); else the stream opened again,
            # decoded (a camera whose packets never looked whole would otherwise be
            # reconnected for ever)
            ok, first = cap.read()
            if ok and first is not None and getattr(first, "size", 0) > 0:
                packet = EncodedFrame(first)
                if packet.whole() and packet.decode() is not None:
                    return MjpegPackets(cap)
            cap.release()
            log.info("stream %s: its MJPEG packets are not whole JPEGs OpenCV decodes; "
                     "read decoded", redact_text(spec))
            return cv2.VideoCapture(spec, cv2.CAP_FFMPEG, params)
        return cv2.VideoCapture(spec)
    return opener


def _mjpeg(cap: Any) -> bool:
    """An opened FFmpeg capture whose codec is MJPEG (four-character code ``MJPG``)."""
    try:
        if not cap.isOpened():
            return False
        code = int(cap.get(cv2.CAP_PROP_FOURCC)) & 0xFFFFFFFF
    except (cv2.error, TypeError, ValueError):
        return False
    return code.to_bytes(4, "little") == b"MJPG"


class SequentialLive(FrameSource):
    """A camera or stream read in the calling thread (``live=False``): no frame dropped.

    Drops and stalls are reconnected with the same policy as :class:`LiveSource` (by default
    for as long as the process runs), with the same feed state and gap accounting; timestamps
    are ``time.monotonic()`` at read.
    """

    def __init__(self, spec: str, kind: str, opener: Callable[[str], Capture],
                 policy: ReconnectPolicy, max_consecutive_corrupt: int = 30) -> None:
        super().__init__(spec)
        self.kind = kind
        self._max_corrupt = max_consecutive_corrupt
        self._opener = opener
        self.policy = policy
        self._stop = threading.Event()
        #: seconds waited before each reopening attempt, in order.
        self.backoff_history: list[float] = []
        self._cap_lock = threading.Lock()
        self._reading = False
        self._cap = None if policy.wait_at_start else self._connect(initial=True)
        self._waiting = policy.wait_at_start

    def _connect(self, initial: bool, prior_failures: int = 0) -> Capture | None:
        return _connect(self, self._opener, self.policy, self._stop, self.backoff_history,
                        initial, prior_failures)

    def _read(self) -> tuple[bool, Any]:
        """One read; (False, None) when closed. The capture is released by whoever finishes
        last: close() from another thread never frees it under a read in progress."""
        with self._cap_lock:
            cap = self._cap
            if cap is None or self._stop.is_set():
                return False, None
            self._reading = True
        try:
            return cap.read()
        finally:
            with self._cap_lock:
                self._reading = False
                if self._stop.is_set() and self._cap is not None:
                    self._cap.release()
                    self._cap = None

    def _frames(self) -> Iterator[Frame]:
        seq = 0
        corrupt_run = 0
        got_frame, barren = False, 0   # barren: connections in a row that gave no frame
        if self._cap is None and self._waiting:  # down at start: connect like a reconnection
            self._waiting = False
            cap = _try_open(self.open_spec, self._opener)
            if cap is None:
                self._attempt_failed()
                self._lost("not reachable at start")
                cap = self._connect(initial=False, prior_failures=1)
            with self._cap_lock:
                if cap is not None and self._stop.is_set():
                    cap.release()
                    cap = None
                self._cap = cap
        while self._cap is not None and not self._stop.is_set():
            ok, img = self._read()
            if self._stop.is_set():
                return
            if ok and isinstance(img, EncodedFrame):
                img = img.decode() if img.whole() else None
            if ok and _usable(img):
                corrupt_run = 0
                got_frame = True
                self._count_read()
                yield Frame(to_bgr(img), time.monotonic(), seq, self.spec)
                seq += 1
                continue
            if ok:
                corrupt_run += 1
                self._count_corrupt(f"frame {seq}")
                seq += 1
                if corrupt_run < self._max_corrupt:
                    continue
            corrupt_run = 0
            barren = 0 if got_frame else barren + 1
            got_frame = False
            with self._cap_lock:
                if self._cap is not None:
                    self._cap.release()
                    self._cap = None
            self._lost(f"dropped after frame {seq - 1}")
            cap = self._connect(initial=False, prior_failures=barren)
            with self._cap_lock:
                if cap is not None and self._stop.is_set():
                    cap.release()
                    cap = None
                self._cap = cap
            if cap is None:
                return
            with self._lock:
                self._stats.reconnects += 1
            log.info("%s %s reopened; waiting for frames", self.kind, self.spec)

    def close(self) -> None:
        self._stop.set()
        with self._cap_lock:
            if self._cap is not None and not self._reading:
                self._cap.release()
                self._cap = None
        super().close()
