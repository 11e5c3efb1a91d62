"""Frame sources: camera, video file, RTSP/HTTP stream, image file, folder or glob of images.

``open_source(spec)`` returns a :class:`FrameSource`, an iterable of :class:`Frame`:

===============================  ========  ===================================================
spec                             kind      behaviour
===============================  ========  ===================================================
``"0"``, ``"1"`` (digits)        camera    live: reader thread, newest frame only, reconnects
``rtsp://``, ``http(s)://`` ...  stream    live: reader thread, newest frame only, reconnects
video file (.mp4, .avi, ...)     video     every frame in order; timestamp = index / fps
image file                       image     one frame
folder                           images    its image files in natural sort order
glob (``frames/*.png``)          images    matching image files in natural sort order
===============================  ========  ===================================================

``live=True`` treats a video file as a camera (replayed at its own frame rate by a reader
thread that keeps only the newest frame; the end of the file ends the source);
``live=False`` reads a camera or stream in the calling thread without dropping frames.

Images are read with ``cv2.imread``: 4-channel images (RGBA PNG) are composited onto neutral
grey (128) by their alpha, grey images become BGR, 16-bit images are scaled to 8 bits.
Corrupt frames (decode failure, empty array) are skipped, logged and counted; in a folder a file
that does not decode is such a frame. Live sources that drop are reopened with exponential
backoff (:class:`ReconnectPolicy`); each gap is logged (``logging``, logger ``vision.capture``)
and counted. :meth:`FrameSource.stats` reports frames read, corrupt frames skipped, frames
dropped (replaced by a newer one before being consumed), reconnects, total gap seconds and the
measured frames per second.

Errors are :class:`scoring.errors.InputError` naming the path or URL: missing path, a file that
is neither a readable image nor a readable video, an empty folder, a glob matching no image, a
stream unreachable after the configured attempts (also raised from iteration when a live
source cannot be reconnected).
"""

from __future__ import annotations

import glob as _glob
import logging
import os
import re
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Protocol

import cv2
import numpy as np

from scoring.errors import InputError

__all__ = [
    "Frame",
    "FrameSource",
    "SourceStats",
    "ReconnectPolicy",
    "open_source",
    "read_image",
    "to_bgr",
    "IMAGE_EXTENSIONS",
    "DEFAULT_IMAGE_FPS",
]

log = logging.getLogger("vision.capture")

#: File name endings read as still images.
IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp"})
#: Nominal frame rate of an image sequence (timestamps = index / fps), frames per second.
DEFAULT_IMAGE_FPS = 30.0
#: Frame rate assumed when a video file does not report one, frames per second.
DEFAULT_VIDEO_FPS = 30.0
_URL_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_GLOB_CHARS = set("*?[")


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
        frames_read: frames decoded successfully.
        frames_yielded: frames handed to the consumer.
        skipped_corrupt: frames or image files that failed to decode (or were empty), skipped.
        dropped: live only: frames replaced by a newer one before the consumer took them.
        reconnects: live only: successful reopenings after a drop.
        gaps_s: live only: total seconds without frames because of drops (seconds).
        fps: measured frames read per second between the first and the last frame read
            (0.0 before two frames).
    """

    frames_read: int = 0
    frames_yielded: int = 0
    skipped_corrupt: int = 0
    dropped: int = 0
    reconnects: int = 0
    gaps_s: float = 0.0
    fps: float = 0.0

    def to_dict(self) -> dict:
        """Plain dict (JSON-ready)."""
        return asdict(self)


@dataclass
class ReconnectPolicy:
    """Exponential backoff for opening and reopening live sources.

    Waits ``initial_delay_s``, then doubles (``factor``) up to ``max_delay_s`` between
    attempts; gives up after ``max_attempts`` failed attempts (None: unlimited) or when
    ``max_total_s`` seconds have passed since the first failure (None: unlimited), whichever
    comes first. ``open_timeout_ms`` / ``read_timeout_ms`` are passed to OpenCV's FFmpeg
    backend for URLs.
    """

    initial_delay_s: float = 0.5
    factor: float = 2.0
    max_delay_s: float = 8.0
    max_attempts: int | None = 6
    max_total_s: float | None = 30.0
    open_timeout_ms: int = 3000
    read_timeout_ms: int = 5000

    def delay(self, attempt: int) -> float:
        """Seconds to wait after failed attempt number ``attempt`` (1-based)."""
        return min(self.max_delay_s, self.initial_delay_s * self.factor ** (attempt - 1))


class Capture(Protocol):
    """What a live opener returns: the part of ``cv2.VideoCapture`` used here."""

    def isOpened(self) -> bool: ...  # noqa: E704,N802
    def read(self) -> tuple[bool, np.ndarray | None]: ...  # noqa: E704
    def release(self) -> None: ...  # noqa: E704


# ----------------------------------------------------------------------------- image decoding

def to_bgr(img: np.ndarray) -> np.ndarray:
    """Normalise a decoded image to uint8 (H, W, 3) BGR.

    Grey (H, W) or (H, W, 1) -> BGR; (H, W, 2) grey+alpha and (H, W, 4) BGRA are composited
    onto neutral grey 128 by alpha; uint16 is scaled by 1/257; float in [0, 1] by 255.
    """
    a = np.asarray(img)
    if a.dtype == np.uint16:
        a = (a.astype(np.float32) / 257.0).round().astype(np.uint8)
    elif a.dtype.kind == "f":
        a = np.clip(a * 255.0, 0, 255).round().astype(np.uint8)
    elif a.dtype != np.uint8:
        a = np.clip(a, 0, 255).astype(np.uint8)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.ndim == 2:
        return cv2.cvtColor(a, cv2.COLOR_GRAY2BGR)
    if a.shape[2] == 2:
        a = np.dstack([a[:, :, 0]] * 3 + [a[:, :, 1]])
    if a.shape[2] == 4:
        alpha = a[:, :, 3:4].astype(np.float32) / 255.0
        out = a[:, :, :3].astype(np.float32) * alpha + 128.0 * (1.0 - alpha)
        return np.clip(out.round(), 0, 255).astype(np.uint8)
    return np.ascontiguousarray(a[:, :, :3])


def _read_image_file(path: str) -> np.ndarray | None:
    """cv2.imread (unchanged, any depth) normalised by :func:`to_bgr`; None when it fails."""
    img = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if img is None or img.size == 0:
        return None
    return to_bgr(img)


def read_image(path: str | os.PathLike) -> np.ndarray:
    """Read one image file as uint8 (H, W, 3) BGR (alpha composited onto grey 128).

    Raises:
        InputError: the file is missing or does not decode as an image (the message names it).
    """
    p = str(path)
    if not os.path.exists(p):
        raise InputError(f"image file not found: {p}")
    img = _read_image_file(p)
    if img is None:
        raise InputError(f"not a readable image: {p}")
    return img


def _natural_key(path: str) -> list:
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", path)]


# ----------------------------------------------------------------------------- sources

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
        self.spec = spec
        self._stats = SourceStats()
        self._t_first: float | None = None
        self._t_last: float | None = None
        self._lock = threading.Lock()

    def _count_read(self) -> None:
        now = time.monotonic()
        with self._lock:
            self._stats.frames_read += 1
            if self._t_first is None:
                self._t_first = now
            self._t_last = now

    def _count_corrupt(self, what: str) -> None:
        with self._lock:
            self._stats.skipped_corrupt += 1
        log.warning("skipped corrupt frame from %s: %s", self.spec, what)

    def stats(self) -> SourceStats:
        """A snapshot of the counters (see :class:`SourceStats`)."""
        with self._lock:
            s = SourceStats(**asdict(self._stats))
            if self._t_first is not None and self._t_last is not None and s.frames_read > 1:
                dt = self._t_last - self._t_first
                s.fps = (s.frames_read - 1) / dt if dt > 0 else 0.0
        return s

    def __iter__(self) -> Iterator[Frame]:
        for frame in self._frames():
            with self._lock:
                self._stats.frames_yielded += 1
            yield frame

    def _frames(self) -> Iterator[Frame]:  # pragma: no cover - abstract
        raise NotImplementedError

    def close(self) -> None:
        """Release the underlying device or file (idempotent)."""

    def __enter__(self) -> "FrameSource":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.kind} {self.spec!r} live={self.live}>"


class ImageSource(FrameSource):
    """Still images in a given order; a file that does not decode is skipped and counted."""

    def __init__(self, spec: str, paths: list[str], kind: str, fps: float) -> None:
        super().__init__(spec)
        self.paths = paths
        self.kind = kind
        self.fps = fps
        self.frame_count = len(paths)

    def _frames(self) -> Iterator[Frame]:
        for i, p in enumerate(self.paths):
            img = _read_image_file(p)
            if img is None:
                if self.kind == "image":
                    raise InputError(f"not a readable image: {p}")
                self._count_corrupt(p)
                continue
            self._count_read()
            yield Frame(img, i / self.fps, i, self.spec, p)


class VideoSource(FrameSource):
    """A video file read frame by frame in order (no dropping); timestamp = index / fps."""

    kind = "video"

    def __init__(self, spec: str, fps: float | None = None) -> None:
        super().__init__(spec)
        cap = cv2.VideoCapture(spec)
        if not cap.isOpened():
            cap.release()
            raise InputError(f"not a readable video or image: {spec}")
        ok, first = cap.read()
        if not ok or first is None:
            cap.release()
            raise InputError(f"video has no readable frame: {spec}")
        self._cap = cap
        self._first = first
        reported = cap.get(cv2.CAP_PROP_FPS)
        self.fps = float(fps or (reported if reported and reported > 0 else DEFAULT_VIDEO_FPS))
        n = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        self.frame_count = n if n > 0 else None

    def _frames(self) -> Iterator[Frame]:
        i = 0
        pending = self._first
        self._first = None
        while True:
            if pending is not None:
                ok, img = True, pending
                pending = None
            else:
                if self._cap is None:
                    return
                ok, img = self._cap.read()
            if not ok:
                return
            if img is None or img.size == 0:
                self._count_corrupt(f"frame {i}")
                i += 1
                continue
            self._count_read()
            yield Frame(to_bgr(img), i / self.fps, i, self.spec)
            i += 1

    def close(self) -> None:
        if getattr(self, "_cap", None) is not None:
            self._cap.release()
            self._cap = None


def _try_open(spec: str, opener: Callable[[str], Capture]) -> Capture | None:
    """One opening attempt; None when it fails (an opener that raises counts as failing)."""
    try:
        cap = opener(spec)
    except Exception as exc:
        log.debug("opening %s raised %r", spec, exc)
        return None
    if cap is None:
        return None
    if not cap.isOpened():
        cap.release()
        return None
    return cap


def _connect(spec: str, kind: str, opener: Callable[[str], Capture], policy: ReconnectPolicy,
             stop: threading.Event, history: list[float], initial: bool,
             prior_failures: int = 0) -> Capture | None:
    """Open with exponential backoff; the capture, or None when ``stop`` is set.

    ``prior_failures`` counts earlier connections that opened but gave no frame (they count as
    failed attempts, so a source that opens and fails at once cannot spin). Each wait is
    appended to ``history`` (seconds). Raises InputError naming the spec when the policy gives
    up (``max_attempts`` failed attempts or ``max_total_s`` seconds).
    """
    t0 = time.monotonic()
    attempt = prior_failures
    while not stop.is_set():
        if attempt > 0:
            elapsed = time.monotonic() - t0
            if (policy.max_attempts is not None and attempt >= policy.max_attempts) or \
                    (policy.max_total_s is not None and elapsed >= policy.max_total_s):
                what = "cannot open" if initial else "lost and could not reconnect to"
                raise InputError(f"{what} {kind} {spec} after {attempt} attempt(s) "
                                 f"in {elapsed:.1f} s")
            d = policy.delay(attempt)
            if policy.max_total_s is not None:
                d = max(0.0, min(d, policy.max_total_s - elapsed))
            history.append(d)
            log.info("%s %s not available (attempt %d); retrying in %.2f s", kind, spec,
                     attempt, d)
            if stop.wait(d):
                break
        cap = _try_open(spec, opener)
        if cap is not None:
            return cap
        attempt += 1
    return None


class LiveSource(FrameSource):
    """A camera, stream (or a file replayed live) read by a thread that keeps the newest frame.

    The reader thread opens the source with ``opener(spec)``, reads frames as fast as they come
    and stores only the newest; the consumer gets the newest frame it has not seen yet (earlier
    unread frames are counted as ``dropped``). When ``read()`` fails on a camera or stream the
    capture is released and reopened with the backoff of ``policy``; the gap is logged and
    counted. When the policy gives up, iteration raises :class:`InputError` naming the spec.
    For a file replayed live (``replay_fps`` set), reads are paced to that rate and the end of
    the file ends the source.

    The first connection is made in ``__init__`` (same policy), so an unreachable source raises
    :class:`InputError` from :func:`open_source`.
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
        self._ended = False
        self._error: InputError | None = None
        self._stop = threading.Event()
        self._cap = self._connect(initial=True)
        self._thread = threading.Thread(target=self._run, name=f"capture:{spec}", daemon=True)
        self._thread.start()

    def _connect(self, initial: bool, prior_failures: int = 0) -> Capture | None:
        return _connect(self.spec, self.kind, self._opener, self.policy, self._stop,
                        self.backoff_history, initial, prior_failures)

    # -- reader thread
    def _publish(self, frame: Frame) -> None:
        with self._cond:
            if self._latest is not None and self._latest_seq > self._taken_seq:
                self._stats.dropped += 1
            self._latest = frame
            self._latest_seq = frame.index
            self._cond.notify_all()

    def _finish(self, error: InputError | None = None) -> None:
        with self._cond:
            self._ended = True
            self._error = error
            self._cond.notify_all()

    def _run(self) -> None:
        seq = 0
        corrupt_run = 0
        got_frame, barren = False, 0   # barren: connections in a row that gave no frame
        period = 1.0 / self._replay_fps if self._replay_fps else None
        next_t = time.monotonic()
        try:
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
                if ok and img is not None and getattr(img, "size", 0) > 0:
                    corrupt_run = 0
                    got_frame = True
                    self._count_read()
                    self._publish(Frame(to_bgr(img), time.monotonic(), seq, self.spec))
                    seq += 1
                    continue
                if ok:  # a frame came but is empty / undecodable
                    corrupt_run += 1
                    self._count_corrupt(f"frame {seq}")
                    seq += 1
                    if corrupt_run < self._max_corrupt:
                        continue
                # the source dropped (or sent only garbage for a while)
                if self._replay_fps is not None and not ok:
                    break  # end of a replayed file
                cap.release()
                self._cap = None
                t_drop = time.monotonic()
                log.warning("%s %s dropped after frame %d; reconnecting", self.kind, self.spec,
                            seq - 1)
                barren = 0 if got_frame else barren + 1
                got_frame = False
                new = self._connect(initial=False, prior_failures=barren)
                if new is None:
                    break
                gap = time.monotonic() - t_drop
                corrupt_run = 0
                with self._lock:
                    self._stats.reconnects += 1
                    self._stats.gaps_s += gap
                log.warning("%s %s reconnected after a gap of %.2f s", self.kind, self.spec, gap)
                self._cap = new
            self._finish()
        except InputError as exc:
            log.error("%s", exc)
            self._finish(exc)
        except Exception as exc:  # keep the consumer from waiting forever
            self._finish(InputError(f"reading {self.spec} failed: {exc!r}"))

    # -- consumer
    def _frames(self) -> Iterator[Frame]:
        while True:
            with self._cond:
                while self._latest_seq <= self._taken_seq and not self._ended:
                    self._cond.wait(0.5)
                if self._latest_seq > self._taken_seq:
                    frame = self._latest
                    self._taken_seq = self._latest_seq
                else:
                    if self._error is not None:
                        raise self._error
                    return
            yield frame

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


# ----------------------------------------------------------------------------- opening

def _default_opener(policy: ReconnectPolicy) -> Callable[[str], Capture]:
    def opener(spec: str) -> Capture:
        if spec.isdigit():
            return cv2.VideoCapture(int(spec))
        if _URL_RE.match(spec):
            return cv2.VideoCapture(spec, cv2.CAP_FFMPEG,
                                    [cv2.CAP_PROP_OPEN_TIMEOUT_MSEC, policy.open_timeout_ms,
                                     cv2.CAP_PROP_READ_TIMEOUT_MSEC, policy.read_timeout_ms])
        return cv2.VideoCapture(spec)
    return opener


def open_source(spec: str | os.PathLike, *, live: bool | None = None,
                fps: float | None = None, policy: ReconnectPolicy | None = None,
                opener: Callable[[str], Capture] | None = None) -> FrameSource:
    """Open a frame source from a spec (see the module docstring for the accepted forms).

    Args:
        spec: camera index (``"0"``), URL, video file, image file, folder or glob.
        live: None: cameras and URLs are live, files are not; True: a reader thread keeps only
            the newest frame (a video file is replayed at its frame rate); False: read every
            frame in the calling thread.
        fps: nominal frames per second for file timestamps (default: the video's own rate,
            or :data:`DEFAULT_IMAGE_FPS` for images).
        policy: reconnect/backoff policy for live sources (default :class:`ReconnectPolicy`).
        opener: ``opener(spec) -> capture`` with ``isOpened/read/release`` (default
            ``cv2.VideoCapture``); lets tests inject a fake camera.

    Returns:
        A :class:`FrameSource`.

    Raises:
        InputError: missing path, unreadable file, empty folder, glob matching nothing,
            unreachable camera or stream (after the policy's attempts); the message names it.
    """
    spec = str(spec)
    if not spec:
        raise InputError("empty source spec")
    policy = policy or ReconnectPolicy()
    if fps is not None and not (fps > 0):
        raise InputError(f"fps must be > 0, got {fps!r}")
    is_camera = spec.isdigit()
    is_url = bool(_URL_RE.match(spec))
    if is_camera or is_url:
        kind = "camera" if is_camera else "stream"
        op = opener or _default_opener(policy)
        if live is False:
            src = _SequentialLive(spec, kind, op, policy)
            return src
        return LiveSource(spec, kind, op, policy)

    path = Path(spec)
    if path.is_dir():
        files = [str(p) for p in path.iterdir()
                 if p.is_file() and p.suffix.lower() in IMAGE_EXTENSIONS]
        if not files:
            raise InputError(f"folder contains no images ({', '.join(sorted(IMAGE_EXTENSIONS))})"
                             f": {spec}")
        return ImageSource(spec, sorted(files, key=_natural_key), "images",
                           fps or DEFAULT_IMAGE_FPS)
    if not path.exists():
        if _GLOB_CHARS & set(spec):
            files = [p for p in _glob.glob(spec, recursive=True)
                     if os.path.isfile(p) and Path(p).suffix.lower() in IMAGE_EXTENSIONS]
            if not files:
                raise InputError(f"glob matches no images: {spec}")
            return ImageSource(spec, sorted(files, key=_natural_key), "images",
                               fps or DEFAULT_IMAGE_FPS)
        raise InputError(f"source not found: {spec}")
    if not path.is_file():
        raise InputError(f"not a file or folder: {spec}")
    if path.suffix.lower() in IMAGE_EXTENSIONS:
        if _read_image_file(spec) is None:
            raise InputError(f"not a readable image: {spec}")
        return ImageSource(spec, [spec], "image", fps or DEFAULT_IMAGE_FPS)
    if live:
        # validate it is a video first (clear error), then replay it live
        probe = VideoSource(spec, fps)
        rate = probe.fps
        probe.close()
        src = LiveSource(spec, "video", opener or cv2.VideoCapture, policy, replay_fps=rate)
        src.fps = rate
        return src
    return VideoSource(spec, fps)


class _SequentialLive(FrameSource):
    """A camera or stream read in the calling thread (``live=False``): no frame dropped.

    Drops are reconnected with the same policy as :class:`LiveSource`; timestamps are
    ``time.monotonic()`` at read.
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
        self._cap = self._connect(initial=True)

    def _connect(self, initial: bool, prior_failures: int = 0) -> Capture | None:
        return _connect(self.spec, self.kind, self._opener, self.policy, self._stop,
                        self.backoff_history, initial, prior_failures)

    def _frames(self) -> Iterator[Frame]:
        seq = 0
        corrupt_run = 0
        got_frame, barren = False, 0   # barren: connections in a row that gave no frame
        while self._cap is not None:
            ok, img = self._cap.read()
            if ok and img is not None and getattr(img, "size", 0) > 0:
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
            self._cap.release()
            self._cap = None
            t_drop = time.monotonic()
            log.warning("%s %s dropped after frame %d; reconnecting", self.kind, self.spec,
                        seq - 1)
            self._cap = self._connect(initial=False, prior_failures=barren)
            if self._cap is None:
                return
            gap = time.monotonic() - t_drop
            with self._lock:
                self._stats.reconnects += 1
                self._stats.gaps_s += gap

    def close(self) -> None:
        self._stop.set()
        if self._cap is not None:
            self._cap.release()
            self._cap = None
