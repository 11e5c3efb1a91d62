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
Image sizes are read from the file header (Pillow, no pixel decoded) before decoding: an
image of more than :data:`MAX_IMAGE_PIXELS` pixels (a decompression bomb: a small PNG that
declares 30000 x 30000) is refused with an :class:`InputError` naming the file and its size.

Corrupt frames (decode failure, empty array) are skipped, logged and counted; in a folder a file
that does not decode is such a frame, and a folder or glob in which no file decodes is an error.
A video whose decoder fails mid-file (damaged bytes) is read on past the damage: OpenCV's
FFmpeg reader resumes at the next decodable packet, the frames' indices follow the stream's
presentation times, and the frames lost in between are counted as skipped.

Live sources (cameras, streams) never give up once opened: a drop or a stall (no frame for the
FFmpeg read timeout) releases the capture and reopens it with exponential backoff capped at
``max_delay_s`` (:class:`ReconnectPolicy`), for as long as the process runs. Each gap is logged
(``logging``, logger ``vision.capture``) with its true length -- from the last frame before the
drop to the first frame after it -- and counted. :meth:`FrameSource.feed_state` tells the feed's
state now (connected / reconnecting / ended, since when, the current and the last gap, how many
gaps), for health checks and the display. :meth:`FrameSource.stats` reports frames read, corrupt
frames skipped, frames dropped (replaced by a newer one before being consumed), reconnects, gaps,
total gap seconds and the measured frames per second.

Errors are :class:`scoring.errors.InputError` naming the path or URL: missing path, a file that
is neither a readable image nor a readable video, an image above the pixel cap, an empty folder,
a glob matching no image, a folder or video with no readable frame, a camera or stream that
cannot be opened at first within the policy's ``open_attempts`` / ``open_total_s``.
"""

from __future__ import annotations

import glob as _glob
import logging
import os
import re
import sys
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
    "FeedState",
    "open_source",
    "image_size",
    "check_image_size",
    "MAX_IMAGE_PIXELS",
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
#: Largest image (or video frame) accepted, pixels (width x height): 100 megapixels, ten times
#: an 8K frame. Larger images are refused from their header, before any pixel is decoded (an
#: 876 KB PNG declaring 30000 x 30000 took 5.8 GB to decode).
MAX_IMAGE_PIXELS = 100_000_000
# OpenCV's own decoder limit (read once, at its first decode): the same cap as a second guard
# for formats whose header Pillow cannot read.
os.environ.setdefault("OPENCV_IO_MAX_IMAGE_PIXELS", str(MAX_IMAGE_PIXELS))
#: Failed reads in a row after which a damaged video is taken to have ended.
MAX_VIDEO_READ_FAILURES = 64
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
    """

    initial_delay_s: float = 0.5
    factor: float = 2.0
    # 10 s: one connection attempt every 10 s costs nothing, and bounds how long the display
    # stays frozen after the camera returns (the issue allows up to 30 s).
    max_delay_s: float = 10.0
    max_attempts: int | None = None
    max_total_s: float | None = None
    open_attempts: int | None = 6
    open_total_s: float | None = 30.0
    open_timeout_ms: int = 3000
    read_timeout_ms: int = 5000

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


def image_size(path: str | os.PathLike) -> tuple[int, int] | None:
    """``(width, height)`` of an image file from its header (Pillow; no pixel is decoded).

    Returns None when Pillow does not recognise the file (OpenCV may still decode it).

    Raises:
        InputError: the header declares so many pixels that Pillow refuses to open it (over
            twice Pillow's own limit, about 179 megapixels; always above
            :data:`MAX_IMAGE_PIXELS`), naming the file.
    """
    import warnings

    from PIL import Image

    # ultralytics replaces Image.open by a wrapper that, for a file Pillow cannot identify,
    # tries to install and import a HEIF plugin (ModuleNotFoundError offline): use the
    # original when it is there.
    patches = sys.modules.get("ultralytics.utils.patches")
    opener = getattr(patches, "_image_open", None) or Image.open
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Pillow's own bomb warning: judged here instead
            with opener(path) as im:
                return int(im.size[0]), int(im.size[1])
    except Image.DecompressionBombError as exc:
        # raised before the size is handed out; the message carries the pixel count
        m = re.search(r"\((\d+) pixels\)", str(exc))
        count = f"{int(m.group(1))} pixels" if m else "more pixels than Pillow opens"
        raise InputError(f"image too large ({count}; the limit is {MAX_IMAGE_PIXELS:,} "
                         f"pixels, refused before decoding): {path}") from None
    except Exception:  # noqa: BLE001 - unidentified or broken header: OpenCV decides
        return None


def check_image_size(width: int, height: int, what: str) -> None:
    """Refuse an image (or video frame) of more than :data:`MAX_IMAGE_PIXELS` pixels.

    Raises:
        InputError: naming ``what`` and its size.
    """
    if width * height > MAX_IMAGE_PIXELS:
        raise InputError(f"image too large ({width} x {height}; the limit is "
                         f"{MAX_IMAGE_PIXELS:,} pixels, refused before decoding): {what}")


def _decode_file(path: str) -> np.ndarray | None:
    """cv2.imread (unchanged, any depth) normalised by :func:`to_bgr`; None when it fails.

    Raises:
        InputError: the header declares more than :data:`MAX_IMAGE_PIXELS` pixels.
    """
    size = image_size(path)
    if size is not None:
        check_image_size(size[0], size[1], path)
    img = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    if img is None or img.size == 0:
        return None
    return to_bgr(img)


def read_image(path: str | os.PathLike) -> np.ndarray:
    """Read one image file as uint8 (H, W, 3) BGR (alpha composited onto grey 128).

    Raises:
        InputError: the file is missing, declares more than :data:`MAX_IMAGE_PIXELS` pixels,
            or does not decode as an image (the message names it).
    """
    p = str(path)
    if not os.path.exists(p):
        raise InputError(f"image file not found: {p}")
    img = _decode_file(p)
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
                self._end_error = error

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


class ImageSource(FrameSource):
    """Still images in a given order; a file that does not decode is skipped and counted.

    Iteration raises :class:`InputError` when no file of a folder or glob decodes (or a
    single image does not), and for an image above :data:`MAX_IMAGE_PIXELS`.
    """

    def __init__(self, spec: str, paths: list[str], kind: str, fps: float) -> None:
        super().__init__(spec)
        self.paths = paths
        self.kind = kind
        self.fps = fps
        self.frame_count = len(paths)

    def _frames(self) -> Iterator[Frame]:
        n_read = 0
        for i, p in enumerate(self.paths):
            img = _decode_file(p)
            if img is None:
                if self.kind == "image":
                    raise InputError(f"not a readable image: {p}")
                self._count_corrupt(p)
                continue
            self._count_read()
            n_read += 1
            yield Frame(img, i / self.fps, i, self.spec, p)
        if n_read == 0 and self.paths:
            raise InputError(f"no readable image among the {len(self.paths)} file(s) of "
                             f"{self.spec}")


class VideoSource(FrameSource):
    """A video file read frame by frame in order (no dropping); timestamp = index / fps.

    A frame the decoder cannot deliver does not end the file: reading goes on (OpenCV's FFmpeg
    reader resumes at the next decodable packet) until the reported frame count is reached or
    :data:`MAX_VIDEO_READ_FAILURES` reads in a row fail. After the first failure a frame's
    index comes from its presentation time (``CAP_PROP_POS_MSEC`` x the file's own frame
    rate), so timestamps stay true across the damage; the frames missing between two readable
    ones are counted in ``stats().skipped_corrupt`` and logged.

    Raises:
        InputError: (from ``__init__``) not a video, no readable frame at all, or frames larger
            than :data:`MAX_IMAGE_PIXELS`; the message names the file.
    """

    kind = "video"

    def __init__(self, spec: str, fps: float | None = None) -> None:
        super().__init__(spec)
        cap = cv2.VideoCapture(spec)
        if not cap.isOpened():
            cap.release()
            raise InputError(f"not a readable video or image: {spec}")
        w, h = int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT))
        try:
            check_image_size(w, h, spec)
        except InputError:
            cap.release()
            raise
        self._cap = cap
        reported = cap.get(cv2.CAP_PROP_FPS)
        self._native_fps = float(reported) if reported and reported > 0 else None
        self.fps = float(fps or self._native_fps or DEFAULT_VIDEO_FPS)
        n = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        self.frame_count = n if n > 0 else None
        self._next = 0          # index the next frame gets (when nothing was lost)
        self._damaged = False   # a read failed: indices follow presentation times from now on
        first = self._read_next()
        if first is None:
            self.close()
            raise InputError(f"video has no readable frame: {spec}")
        self._first: tuple[int, np.ndarray] | None = first

    def _read_next(self) -> tuple[int, np.ndarray] | None:
        """The next readable frame as ``(index, image)``, or None at the end of the file."""
        failures = 0
        while self._cap is not None:
            ok, img = self._cap.read()
            if ok and img is not None and img.size > 0:
                idx = self._next
                if self._damaged and self._native_fps:
                    pos_ms = self._cap.get(cv2.CAP_PROP_POS_MSEC)
                    if pos_ms is not None and pos_ms >= 0:
                        idx = max(idx, int(round(pos_ms * self._native_fps / 1000.0)))
                if idx > self._next:
                    self._count_corrupt(f"{idx - self._next} frame(s) before frame {idx} "
                                        f"could not be decoded", idx - self._next)
                self._next = idx + 1
                return idx, img
            failures += 1
            self._damaged = True
            at_end = self.frame_count is not None and self._next >= self.frame_count
            if at_end or failures >= MAX_VIDEO_READ_FAILURES:
                if not at_end and self.frame_count is not None and self._next > 0:
                    log.warning("video %s ends at frame %d of %d: %d reads in a row failed",
                                self.spec, self._next, self.frame_count, failures)
                return None
        return None

    def _frames(self) -> Iterator[Frame]:
        pending, self._first = self._first, None
        while True:
            item = pending if pending is not None else self._read_next()
            pending = None
            if item is None:
                return
            i, img = item
            self._count_read()
            yield Frame(to_bgr(img), i / self.fps, i, self.spec)

    def close(self) -> None:
        if getattr(self, "_cap", None) is not None:
            self._cap.release()
            self._cap = None
        super().close()


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
        cap = _try_open(spec, opener)
        if cap is not None:
            return cap
        attempt += 1
        src._attempt_failed()
    return None


def _usable(img) -> bool:
    return img is not None and getattr(img, "size", 0) > 0


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
        self._cap = self._connect(initial=True)
        self._thread = threading.Thread(target=self._run, name=f"capture:{spec}", daemon=True)
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
                    self._publish(Frame(to_bgr(img), time.monotonic(), seq, self.spec))
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
            self._finish(InputError(f"reading {self.spec} failed: {exc!r}"))
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
        if _decode_file(spec) is None:
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
        self._cap = self._connect(initial=True)

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
        while self._cap is not None and not self._stop.is_set():
            ok, img = self._read()
            if self._stop.is_set():
                return
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
