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
import logging
import os
import queue
import threading
import time
from pathlib import Path
from typing import IO, Any

import numpy as np

from scoring.errors import InputError

from vision.table.events import EventWriter
from vision.schema import RoundEvent, round_number

__all__ = ["Sink", "AnnotatedOutput", "EventsFile", "EventStream", "Window", "AuditSink",
           "round_number", "AUDIT_RETRY_S"]

log = logging.getLogger(__name__)


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

    def watched(self) -> bool:
        """Whether someone sees this sink's pictures as they come (a window, a video being
        recorded, a pit table's display while it is looked at). A live loop with no watched
        sink takes fewer frames of a still table (:data:`vision.session.UNWATCHED_FPS`).
        Default True: a sink that does not say otherwise is watched."""
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

    def watched(self) -> bool:
        """Rounds only: nobody sees its pictures."""
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

    def watched(self) -> bool:
        """Rounds only: nobody sees its pictures."""
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


class _Unreachable(Exception):
    """The audit store could not be reached again (reconnecting failed)."""


#: Seconds between attempts to reach an unreachable audit store: doubling from the first to
#: the last (:class:`AuditSink`).
AUDIT_RETRY_S = (0.5, 5.0)


class AuditSink:
    """The audit store (:mod:`vision.audit`) as the session's first consumer of rounds.

    Exactly once: each round gets the next number of its table inside the store's write
    transaction, and a round the store already holds (same table, source and content: the
    settled round still in view after a restart, a second process on the same source) is not
    stored again -- :meth:`store_round` returns None and the session does not report it.

    A database outage is ridden out (docs/audit.md, "When the database is down"): when the
    store cannot be reached (:meth:`vision.audit.AuditStore.unreachable`: PostgreSQL stopped
    or the connection lost, an SQLite file made read-only or failing with I/O errors) the
    round goes to the spool (:class:`vision.audit.spool.Spool`, ``spool.jsonl`` in the
    key-frame folder, fsynced) and is reported with the number it will get; a thread retries
    (reconnecting) every :data:`AUDIT_RETRY_S` seconds, doubling, and so does every later
    round; once the store answers, the spool is drained in order, each round stored once, and
    later rounds are stored directly again. A spool left by a killed process is drained when
    the sink opens the store. :meth:`status` says where it stands (``/healthz``,
    ``/api/state``); :meth:`close` tries once more, and rounds still spooled then wait for the
    next session on this store (``summary()["spooled"]``).

    Args:
        audit: a path (SQLite file, created when missing), a ``postgresql://`` URL or an open
            :class:`vision.audit.AuditStore` (left open at the end).
        frames_dir: the store's key-frame folder (default ``<db>.frames``; required for a
            PostgreSQL URL). The spool lives in it.
        key_file: the store's secret key file (default: ``$PAIGOW_AUDIT_KEY`` when set;
            :func:`vision.audit.keys.load_key`).
        retry_s: ``(first, most)`` seconds between attempts while the store is unreachable.

    Raises:
        InputError: a bad path, a foreign or damaged file, a bad key or a key that does not
            fit the store, a store that cannot be reached when the sink opens it, a spool
            that is a symlink or holds a line that is not a round.
    """

    def __init__(self, audit, frames_dir=None, key_file=None,
                 retry_s: tuple[float, float] = AUDIT_RETRY_S) -> None:
        from vision.audit import AuditStore
        from vision.audit.keys import load_key
        from vision.audit.spool import SPOOL_NAME, Spool

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
        #: rounds that went through the spool (stored since or still waiting)
        self.spooled_total = 0
        #: UTC epoch seconds since the store is unreachable (None while it answers)
        self.unreachable_since: float | None = None
        self.last_error: str | None = None
        self.attempts = 0  # failed attempts in this outage
        self._retry = (float(retry_s[0]), float(retry_s[1]))
        self._delay = self._retry[0]
        self._next_try = 0.0  # time.monotonic() of the next attempt
        self._lock = threading.RLock()
        self._wake = threading.Event()
        self._closing = False
        self._thread: threading.Thread | None = None
        try:
            fdir = self.store.frames_dir
            if fdir is None:
                raise InputError(f"audit store {self.store.label!r} has no key-frame folder "
                                 "for its spool (pass --audit-frames DIR)")
            self.spool = Spool(Path(fdir) / SPOOL_NAME)
        except BaseException:
            self.close()
            raise
        if len(self.spool):  # left by a process that was killed: stored first
            log.warning("audit spool %s holds %d round(s) from an earlier session: storing "
                        "them", self.spool.path, len(self.spool))
            with self._lock:
                self._drain()

    # -- state -------------------------------------------------------------------------------
    @property
    def spooled(self) -> int:
        """Rounds waiting in the spool now."""
        return len(self.spool)

    def status(self) -> dict:
        """Where the store stands, for ``/healthz`` and ``/api/state``
        (:func:`vision.web.health.audit_view`).

        Returns:
            ``{"store" (label), "reachable" (bool), "spooled" (rounds waiting), "spool"
            (the spool file), "unreachable_since" (UTC epoch s or None), "unreachable_s",
            "attempts" (failed attempts in this outage), "error" (the last failure, or
            None), "message" (``"audit store unreachable, N round(s) spooled"`` or None)}``.
        """
        since = self.unreachable_since
        n = self.spooled
        down = since is not None
        msg = None
        if down or n:
            msg = (f"audit store {'unreachable' if down else 'back'}, {n} round(s) spooled"
                   + (f" ({self.last_error})" if down and self.last_error else ""))
        return {"store": self.store.label, "reachable": not down, "spooled": n,
                "spool": str(self.spool.path), "unreachable_since": since,
                "unreachable_s": round(time.time() - since, 2) if down else 0.0,
                "attempts": self.attempts, "error": self.last_error if down else None,
                "message": msg}

    def _went_down(self, exc: BaseException) -> None:
        text = " ".join(str(exc).split()) or type(exc).__name__
        name = "" if isinstance(exc, _Unreachable) else f"{type(exc).__name__}: "
        self.last_error = f"{name}{text}"[:300]
        if self.unreachable_since is None:
            self.unreachable_since = time.time()
            self.attempts = 0
            self._delay = self._retry[0]
            log.warning("audit store %s unreachable (%s): rounds are spooled to %s",
                        self.store.label, self.last_error, self.spool.path)
        else:
            self.attempts += 1
            self._delay = min(self._delay * 2, self._retry[1])
        self._next_try = time.monotonic() + self._delay
        if self._thread is None and not self._closing:
            self._thread = threading.Thread(target=self._retry_loop, name="audit-retry",
                                            daemon=True)
            self._thread.start()

    def _came_back(self) -> None:
        if self.unreachable_since is not None:
            log.warning("audit store %s reachable again after %.1f s", self.store.label,
                        time.time() - self.unreachable_since)
        self.unreachable_since = None
        self.last_error = None
        self.attempts = 0

    def _retry_loop(self) -> None:
        """The retry thread: while the store is unreachable or rounds wait, try at the
        backoff's times (a round stored meanwhile by the frame loop may have drained it)."""
        while not self._closing:
            with self._lock:
                if self.unreachable_since is None and not len(self.spool):
                    self._thread = None
                    return
                wait = self._next_try - time.monotonic()
            if wait > 0:
                self._wake.wait(wait)
                self._wake.clear()
                continue
            with self._lock:
                if self._closing:
                    break
                try:
                    self._drain()
                except Exception:  # noqa: BLE001 - raised again by the frame loop's next round
                    log.exception("audit spool: a round could not be stored")
                    self._thread = None
                    return

    # -- storing -----------------------------------------------------------------------------
    def _append(self, event, frame, replay):
        """One append after reconnecting where needed; the record, None for a round already
        stored; the store's connection errors propagate."""
        from vision.audit.store import DuplicateRound

        try:
            self.store.reconnect()  # a lost connection: a new one (the server may be down)
        except InputError as exc:  # "cannot connect ...": still down
            raise _Unreachable(str(exc)) from None
        try:
            rec = self.store.append(event, frame=frame, renumber=True, replay=replay)
        except DuplicateRound:
            self.already_recorded += 1
            return None
        self.appended += 1
        self.head_hash = rec.hash
        self.last_number = round_number(rec.round_id)
        return rec

    def _down(self, exc: BaseException) -> bool:
        """Whether ``exc`` means the store is unreachable for now (then noted)."""
        if isinstance(exc, _Unreachable):
            self._went_down(exc)
            return True
        try:
            down = self.store.unreachable(exc)
        except Exception:  # noqa: BLE001 - a backend that cannot say: not an outage
            down = False
        if down:
            self._went_down(exc)
        return down

    def _drain(self) -> bool:
        """Store the spooled rounds in order (lock held); True when none is left. Rounds
        stored are removed from the spool together at the end (or at the first failure); a
        round stored before a crash kept it in the spool is recognised on the next drain
        (exactly once) and not stored twice."""
        from vision.audit.spool import Spool

        done = 0
        try:
            for entry in self.spool.entries:
                self._append(entry["event"], Spool.frame_of(entry), entry.get("replay"))
                done += 1
        except Exception as exc:  # noqa: BLE001 - an outage is noted, anything else raised
            self.spool.remove_first(done)
            if not self._down(exc):
                raise
            return False
        self.spool.remove_first(done)
        self._came_back()
        if done:
            log.warning("audit spool drained: %d round(s) stored", done)
        return True

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

        While the store is unreachable, or rounds still wait in the spool (order is kept),
        the round is spooled (fsynced) instead and the event returned is the one that will be
        stored: alerts merged, the next round number of the table (the store gives it when
        the spool drains; another writer of the table meanwhile would move it on).

        Raises:
            OSError: ``ENOSPC`` when the disk is full (nothing of this round is stored).
            InputError: a round the store refuses, or the store unreachable and the spool
                unwritable (naming both)."""
        with self._lock:
            if len(self.spool) and time.monotonic() >= self._next_try:
                self._drain()
            if not len(self.spool):
                try:
                    rec = self._append(event, key_frame, replay)
                except Exception as exc:  # noqa: BLE001 - an outage is spooled
                    if not self._down(exc):
                        raise
                else:
                    self._came_back()
                    return None if rec is None else RoundEvent.from_dict(rec.payload)
            return self._spool(event, key_frame, replay)

    def _spool(self, event, key_frame, replay) -> RoundEvent:
        from vision.audit.store import _frame_bytes

        st = self.store
        given = event.to_dict() if isinstance(event, RoundEvent) else dict(event)
        payload = st._prepare(given, True)  # refused now, not when the spool drains
        frame = _frame_bytes(key_frame, st.jpeg_quality) if key_frame is not None else None
        try:
            self.spool.add(given, frame, replay, st.label)
        except OSError as exc:
            raise InputError(f"audit store {st.label!r} unreachable ({self.last_error}) and "
                             f"its spool cannot be written: {exc}") from None
        self.spooled_total += 1
        if payload.get("kind") in (None, "round"):
            self.last_number += 1
            payload["round_id"] = f"r{self.last_number:06d}"
        log.warning("audit store unreachable: round %s spooled (%d waiting)",
                    payload["round_id"], len(self.spool))
        self._wake.set()
        return RoundEvent.from_dict(payload)

    def summary(self) -> dict:
        """``{"store", "appended", "already_recorded", "head_hash"}``; when the store was
        unreachable in this session (any round went through the spool) also ``"spooled"``
        (rounds still waiting in the spool), ``"spooled_total"``, ``"spool"`` (its file) and
        ``"unreachable"`` (the last error while the store is unreachable, else None)."""
        s = {"store": self.store.label, "appended": self.appended,
             "already_recorded": self.already_recorded, "head_hash": self.head_hash}
        if self.spooled_total or self.spooled or self.unreachable_since is not None:
            s.update(spooled=self.spooled, spooled_total=self.spooled_total,
                     spool=str(self.spool.path),
                     unreachable=self.last_error if self.unreachable_since is not None
                     else None)
        return s

    def close(self) -> None:
        """Try once more to store the spooled rounds (those left wait for the next session on
        this store), stop the retry thread, close the store when the sink opened it."""
        with self._lock:
            self._closing = True
            self._wake.set()
            try:
                if hasattr(self, "spool") and len(self.spool):
                    self._next_try = 0.0
                    if not self._drain():
                        log.warning("audit store %s unreachable: %d round(s) left in the "
                                    "spool %s, stored at the next start on this store",
                                    self.store.label, len(self.spool), self.spool.path)
            finally:
                t, self._thread = self._thread, None
        if t is not None and t is not threading.current_thread():
            t.join(10)
        if self._own:
            self.store.close()
