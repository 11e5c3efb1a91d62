"""Where a session's frames and rounds go: one class per output (docs/architecture.md).

A sink sees every processed frame (:meth:`Sink.frame`) and every round
(:meth:`Sink.round`, a :class:`vision.schema.RoundEvent`); the session
(:mod:`vision.session`) calls them in its one frame loop. The audit store is not a sink like
the others: :class:`AuditSink` *stores* a round before any sink *reports* it (the order is
written once, in :meth:`vision.session.Session._emit`).

Sinks here: :class:`AnnotatedOutput` (annotated video or images), :class:`EventsFile`
(``events.jsonl``, fsynced per round), :class:`EventStream` (JSON lines on stdout),
:class:`Window` (an OpenCV window), :class:`AuditSink`. The dealer display's sink is
:class:`vision.web.feed.PipelineFeed` (it publishes frames and rounds to the web hub).
"""

from __future__ import annotations

import errno
import os
import queue
import threading
from pathlib import Path
from typing import IO, Any

import numpy as np

from scoring.errors import InputError

from vision.table.events import EventWriter
from vision.schema import RoundEvent, round_number

__all__ = ["Sink", "AnnotatedOutput", "EventsFile", "EventStream", "Window", "AuditSink",
           "round_number"]


class Sink:
    """Base sink: does nothing. Subclasses override what they need."""

    def frame(self, image: np.ndarray, frame: Any, result: Any) -> bool:
        """One processed frame: the annotated picture (uint8 (H, W, 3) BGR), the source
        :class:`vision.io.capture.Frame` and the :class:`vision.pipeline.FrameResult`. Returns
        False to stop the session (a window closed by the user)."""
        return True

    def wants_picture(self) -> bool:
        """Whether the next :meth:`frame` call uses the annotated picture (asked before the
        frame is processed; False lets the session skip drawing frames nobody looks at).
        Default True: a sink that does not say otherwise gets every picture drawn."""
        return True

    def round(self, event: RoundEvent) -> None:
        """One round (settled or not), after it was stored."""

    def close(self) -> None:
        """Flush and release files and windows."""


#: Free bytes the annotated video keeps in hand on its disk beyond four encoded frames (the
#: largest growth of the file per frame seen so far): room for the container's index written
#: at the end. OpenCV's video writer reports no failed write (FFmpeg only warns, and the file
#: cannot be opened afterwards), so a frame is written only while that much is free, and the
#: closed file is opened again to check it plays.
VIDEO_SPACE_MARGIN = 64 << 10
#: Annotated video frames that may wait for the encoder thread (8 x 6 MiB at 1080p).
VIDEO_QUEUE = 8


def free_bytes(path: Path) -> int:
    """Bytes free for an unprivileged writer on the file system holding ``path`` (a folder)."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


class AnnotatedOutput(Sink):
    """Annotated output in ``out_dir``: a video file (mp4v ``annotated.mp4``, else MJPG
    ``annotated.avi``) at the source's frame rate, or ``annotated/<name>.jpg`` per image for
    image sources.

    Video frames are encoded by a thread of their own, in order (:meth:`_encode`); the frame
    loop waits only when :data:`VIDEO_QUEUE` frames are queued, and :meth:`close` writes every
    queued frame before the file is closed (nothing is lost).

    Every write is checked: a picture that ``cv2.imwrite`` could not write, a video frame
    with less than four encoded frames plus :data:`VIDEO_SPACE_MARGIN` free on the disk once
    the queued frames are written (never judged on how far the encoder lags), or a closed
    video that does not open again, raises ``OSError(ENOSPC, ..., filename)`` (the session
    ends with ``disk full: FILE``, exit 2, committed rounds kept) and :attr:`output` no
    longer names the broken file.

    Raises:
        InputError: no video writer can be opened in ``out_dir``.
    """

    def __init__(self, out_dir: Path, kind: str, fps: float | None) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.images_mode = kind in ("image", "images")
        self.fps = fps or 30.0
        self.writer = None
        self.path: Path | None = None
        self.images: list[Path] = []
        #: the file whose write failed (then :attr:`output` is None)
        self.broken: Path | None = None
        self._size = 0           # the video file's size after the last write
        self._per_frame = 32 << 10  # the largest growth per frame seen (bytes)
        #: video frames handed to the encoder thread, not yet written (bounded: a slow disk
        #: holds the frame loop back instead of filling the memory)
        self._queue: queue.Queue = queue.Queue(maxsize=VIDEO_QUEUE)
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None  # the encoder thread's failure, unraised
        self._failed = False

    def _full(self, path: Path) -> OSError:
        self.broken = path
        return OSError(errno.ENOSPC, "No space left on device (the annotated output could "
                                     "not be written)", str(path))

    @property
    def output(self) -> str | None:
        """The video file or the images folder (None before the first frame, and once a
        write failed)."""
        if self.broken is not None:
            return None
        if self.path is not None:
            return str(self.path)
        return str(self.out_dir / "annotated") if self.images else None

    def frame(self, image: np.ndarray, frame: Any, result: Any) -> bool:
        import cv2

        if self.images_mode:
            d = self.out_dir / "annotated"
            d.mkdir(parents=True, exist_ok=True)
            name = Path(getattr(frame, "path", None) or f"frame{frame.index:06d}.png").stem
            p = d / f"{name}.jpg"
            try:
                ok = cv2.imwrite(str(p), image)
            except cv2.error:
                ok = False
            if not ok:
                raise self._full(p)
            self.images.append(p)
            return True
        if self.writer is None:
            h, w = image.shape[:2]
            for ext, fourcc in ((".mp4", "mp4v"), (".avi", "MJPG")):
                p = self.out_dir / f"annotated{ext}"
                wr = cv2.VideoWriter(str(p), cv2.VideoWriter_fourcc(*fourcc), self.fps, (w, h))
                if wr.isOpened():
                    self.writer, self.path = wr, p
                    break
                wr.release()
            if self.writer is None:
                raise InputError(f"cannot write a video into {self.out_dir}")
            self._thread = threading.Thread(target=self._encode, name="annotated-video",
                                            daemon=True)
            self._thread.start()
        self._raise_encoder_error()
        # room for the frames still queued too (they are written after this check); where
        # that is short, wait for the encoder to write them and judge on the file as it is,
        # so whether the disk counts as full never depends on how far the encoder lags
        if not self._room(self._queue.qsize()):
            self._queue.join()
            self._raise_encoder_error()
            if not self._room(0):
                raise self._full(self.path)
        self._queue.put(image)  # a fresh array per frame (Pipeline.draw): no copy
        return True

    def _raise_encoder_error(self) -> None:
        """Raise the encoder thread's failure, once (here or by :meth:`close`); the file it
        was writing is then :attr:`broken`."""
        if self._error is not None:
            err, self._error, self.broken = self._error, None, self.path
            raise err

    def _room(self, queued: int) -> bool:
        """Whether the disk holds ``queued`` waiting frames, four more and
        :data:`VIDEO_SPACE_MARGIN` (bytes, judged on the largest growth per frame seen)."""
        return free_bytes(self.out_dir) >= VIDEO_SPACE_MARGIN + (4 + queued) * self._per_frame

    def _encode(self) -> None:
        """The encoder thread: writes queued frames in order until the None sentinel.
        OpenCV encodes without holding the GIL, so encoding runs beside the frame loop on a
        2-core box (docs/pit.md, session 12). A failure is kept for the frame loop's next call (or close)."""
        while True:
            image = self._queue.get()
            try:
                if image is None:
                    return
                if self._failed:
                    continue  # drain: the frame loop raises the first failure
                try:
                    self.writer.write(image)
                    try:
                        size = self.path.stat().st_size
                    except OSError:
                        size = self._size
                    self._per_frame = max(self._per_frame, size - self._size)
                    self._size = size
                except BaseException as exc:  # noqa: BLE001 - handed to the frame loop
                    self._error, self._failed = exc, True
            finally:
                self._queue.task_done()  # the frame loop may wait on join() (frame)

    def close(self) -> None:
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self.writer is not None:
            self.writer.release()
            self.writer = None
            self._raise_encoder_error()
            if self.broken is None and self.path is not None and not _plays(self.path):
                raise self._full(self.path)


def _plays(path: Path) -> bool:
    """True when the video file opens and gives its first frame."""
    import cv2

    cap = cv2.VideoCapture(str(path))
    try:
        return bool(cap.isOpened() and cap.read()[0])
    finally:
        cap.release()


class EventsFile(Sink):
    """``events.jsonl``: one round a line, flushed and fsynced (a reported round survives a
    crash of the machine)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._writer = EventWriter(self.path, fsync=True)

    def wants_picture(self) -> bool:
        """Rounds only: no picture."""
        return False

    def round(self, event: RoundEvent) -> None:
        try:
            self._writer.write(event)
        except OSError as exc:  # e.g. a full disk: name the file
            if exc.filename:
                raise
            raise OSError(exc.errno, exc.strerror, str(self.path)) from None

    def close(self) -> None:
        self._writer.close()


class EventStream(Sink):
    """One JSON line a round on a text stream (``--json``: stdout), flushed."""

    def __init__(self, stream: IO[str]) -> None:
        self._writer = EventWriter(None, stream)

    def wants_picture(self) -> bool:
        """Rounds only: no picture."""
        return False

    def round(self, event: RoundEvent) -> None:
        self._writer.write(event)


class Window(Sink):
    """The annotated frames in an OpenCV window; ``q`` or Esc stops the session.

    Raises:
        InputError: OpenCV has no GUI (opencv-python-headless).
    """

    NAME = "paigow"

    def __init__(self) -> None:
        import cv2

        try:
            cv2.namedWindow(self.NAME)
        except cv2.error:
            raise InputError("--show needs an OpenCV build with GUI support "
                             "(opencv-python-headless has none)") from None

    def frame(self, image: np.ndarray, frame: Any, result: Any) -> bool:
        import cv2

        cv2.imshow(self.NAME, image)
        return (cv2.waitKey(1) & 0xFF) not in (ord("q"), 27)

    def close(self) -> None:
        import cv2

        try:
            cv2.destroyWindow(self.NAME)
        except cv2.error:
            pass


class AuditSink:
    """The audit store (:mod:`vision.audit`) as the session's first consumer of rounds.

    Exactly once: each round gets the next number of its table inside the store's write
    transaction, and a round the store already holds (same table, source and content: the
    settled round still in view after a restart, a second process on the same source) is not
    stored again -- :meth:`store_round` returns None and the session does not report it.

    Args:
        audit: a path (SQLite file, created when missing), a ``postgresql://`` URL or an open
            :class:`vision.audit.AuditStore` (left open at the end).
        frames_dir: the store's key-frame folder (default ``<db>.frames``; required for a
            PostgreSQL URL).
        key_file: the store's secret key file (default: ``$PAIGOW_AUDIT_KEY`` when set;
            :func:`vision.audit.keys.load_key`).

    Raises:
        InputError: a bad path, a foreign or damaged file, a bad key or a key that does not
            fit the store.
    """

    def __init__(self, audit, frames_dir=None, key_file=None) -> None:
        from vision.audit import AuditStore
        from vision.audit.keys import load_key

        if isinstance(audit, AuditStore):
            self.store, self._own = audit, False
        else:
            if not isinstance(audit, (str, os.PathLike)) or not str(audit).strip():
                raise InputError(f"audit store must be a path or an AuditStore, got {audit!r}")
            self.store = AuditStore(audit, create=True, frames_dir=frames_dir,
                                    key=load_key(key_file))
            self._own = True
        self.appended = 0
        self.already_recorded = 0
        self.head_hash: str | None = None
        #: the number of the table's last stored round (``r000042`` -> 42)
        self.last_number = 0

    def attach(self, table_id: str) -> int:
        """Check the store records this table; the round number to continue from.

        Raises:
            InputError: the store records another table.
        """
        st = self.store
        if st.table_id is not None and st.table_id != table_id:
            raise InputError(f"audit store {st.label!r} records table {st.table_id!r}, this "
                             f"run is table {table_id!r}")
        last = st.last_record(table_id)
        if last is None:
            self.last_number = 0
        elif last.payload.get("kind") in (None, "round"):
            self.last_number = round_number(last.round_id)
        else:  # manual entries and acknowledgements (vision.audit.entries) name earlier rounds
            self.last_number = max(round_number(r.round_id)
                                   for r in st.rounds(table_id=table_id))
        return self.last_number

    def store_round(self, event: RoundEvent, key_frame: np.ndarray | None,
                    replay: str | None = None) -> RoundEvent | None:
        """Append one round (one durable transaction, alerts of :mod:`vision.table.alerts` merged
        in, numbered by the store) with its key frame; returns the event as stored, or None
        when the store already holds the round (it is not stored again). ``replay``: the
        session and pass of a recording looped on purpose (each pass is new rounds).

        Raises:
            OSError: ``ENOSPC`` when the disk is full (nothing of this round is stored)."""
        from vision.audit.store import DuplicateRound

        try:
            rec = self.store.append(event, frame=key_frame, renumber=True, replay=replay)
        except DuplicateRound:
            self.already_recorded += 1
            return None
        self.appended += 1
        self.head_hash = rec.hash
        self.last_number = round_number(rec.round_id)
        return RoundEvent.from_dict(rec.payload)

    def summary(self) -> dict:
        """``{"store", "appended", "already_recorded", "head_hash"}``."""
        return {"store": self.store.label, "appended": self.appended,
                "already_recorded": self.already_recorded, "head_hash": self.head_hash}

    def close(self) -> None:
        if self._own:
            self.store.close()
