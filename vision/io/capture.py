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
(``logging``, logger ``vision.io.capture``) with its true length -- from the last frame before the
drop to the first frame after it -- and counted. :meth:`FrameSource.feed_state` tells the feed's
state now (connected / reconnecting / ended, since when, the current and the last gap, how many
gaps), for health checks and the display. :meth:`FrameSource.stats` reports frames read, corrupt
frames skipped, frames dropped (replaced by a newer one before being consumed), reconnects, gaps,
total gap seconds and the measured frames per second.

Errors are :class:`scoring.errors.InputError` naming the path or URL: missing path, a file that
is neither a readable image nor a readable video, an image above the pixel cap, an empty folder,
a glob matching no image, a folder or video with no readable frame, a camera or stream that
cannot be opened at first within the policy's ``open_attempts`` / ``open_total_s``.

This module holds the file sources and :func:`open_source`; the base class, counters and feed
state are in :mod:`vision.io.frames`, image reading in :mod:`vision.io.images`, cameras and streams
in :mod:`vision.io.live` (each re-exported here).
"""

from __future__ import annotations

import glob as _glob
import logging
import os
import re
from pathlib import Path
from typing import Callable, Iterator

import cv2
import numpy as np

from scoring.errors import InputError

from vision.io.frames import FeedState, Frame, FrameSource, SourceStats
from vision.io.images import (IMAGE_EXTENSIONS, MAX_IMAGE_PIXELS, _read_image_file, check_image_size,
                     image_size, read_image, to_bgr)
from vision.io.live import Capture, LiveSource, ReconnectPolicy, SequentialLive, default_opener

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

log = logging.getLogger("vision.io.capture")

#: Nominal frame rate of an image sequence (timestamps = index / fps), frames per second.
DEFAULT_IMAGE_FPS = 30.0
#: Frame rate assumed when a video file does not report one, frames per second.
DEFAULT_VIDEO_FPS = 30.0
#: Failed reads in a row after which a damaged video is taken to have ended.
MAX_VIDEO_READ_FAILURES = 64
_URL_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_GLOB_CHARS = set("*?[")


def _natural_key(path: str) -> list:
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", path)]


# ----------------------------------------------------------------------------- sources

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
            img = _read_image_file(p)
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


# ----------------------------------------------------------------------------- opening

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
    from vision.sources import expand_credentials

    spec = expand_credentials(str(spec))  # ${NAME}: a password from the environment
    if not spec:
        raise InputError("empty source spec")
    policy = policy or ReconnectPolicy()
    if fps is not None and not (fps > 0):
        raise InputError(f"fps must be > 0, got {fps!r}")
    is_camera = spec.isdigit()
    is_url = bool(_URL_RE.match(spec))
    if is_camera or is_url:
        kind = "camera" if is_camera else "stream"
        op = opener or default_opener(policy)
        if live is False:
            src = SequentialLive(spec, kind, op, policy)
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
