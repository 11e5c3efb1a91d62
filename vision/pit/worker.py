"""The worker process of one table (``paigow serve --tables``): the table's session, its
pictures and rounds sent to the web server's process.

Runs :class:`vision.session.Session` -- the frame loop of ``paigow run`` (capture, detect,
decode, table, audit: a round is stored before it is sent) -- with one more sink that sends
over a pipe, as plain picklable values:

* ``("started", {"pid", "model_version", "rules"})`` once the models are loaded;
* ``("frame", {"frame_index", "jpeg" (bytes or None), "positions", "alerts", "reading"})`` for every
  processed frame (``jpeg``: the annotated picture, at most ``max_picture_fps`` per second; the
  others carry None and keep the previous picture); ``positions`` is the live view
  (:func:`vision.io.views.live_positions_view`); ``reading``: a first look at a new deal
  whose still reading is being made (``FrameResult.provisional``);
* ``("round", event dict)`` for every round (docs/round-event.md), after the audit store;
* ``("feed", FeedState)`` about once a second: the camera's state
  (:meth:`vision.io.frames.FrameSource.feed_state`), also while it is down and no frame comes, so
  the table's ``/healthz`` says ``reconnecting`` (503 after the grace);
* ``("stats", dict)`` with it: the table's live figures
  (:meth:`vision.io.stats.LiveStats.snapshot`: camera, processed and skipped frames per
  second, the detector, round latencies, behind / stuck), for ``/api/stats``;
* ``("error", text)`` before a failing worker exits (exit code 1);
* ``("ended", {"frames", "rounds"})`` when the source ended.

A second pipe carries ``"reset"`` (the dealer display's control), ``"pictures on"`` /
``"pictures off"`` (someone looks at the table's pictures, or nobody: none are drawn then)
and ``"stop"``. The worker
ignores SIGINT (the supervisor stops it) and stops cleanly on SIGTERM.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from typing import Any, Mapping

from scoring.errors import InputError

from vision.session import Session
from vision.io.sinks import Sink
from vision.io.stats import LiveStats
from vision.pit.tables import TableSpec

log = logging.getLogger("vision.pit")


class _PipeSink(Sink):
    """Sends a session's frames and rounds over a pipe (module docstring)."""

    def __init__(self, conn, rules: str, max_picture_fps: float) -> None:
        self.conn, self.rules = conn, rules
        self.min_interval = 1.0 / max_picture_fps if max_picture_fps > 0 else 0.0
        self._last_picture = 0.0
        self._due: bool | None = None  # what wants_picture() said for the next frame
        #: pictures are drawn and sent (the supervisor's ``"pictures on"`` / ``"off"``: only
        #: while someone looks at the table, :meth:`vision.pit.supervisor.Pit.sync_pictures`)
        self.pictures = True

    def _picture_due(self) -> bool:
        return self.pictures and time.monotonic() - self._last_picture >= self.min_interval

    def watched(self) -> bool:
        """Someone looks at the table's pictures (:attr:`pictures`)."""
        return bool(self.pictures)

    def wants_picture(self) -> bool:
        """A picture is sent at most ``max_picture_fps`` a second, and only while pictures
        are on (:attr:`pictures`): only those are drawn; the answer stands for the next
        :meth:`frame` (which sends a picture exactly then)."""
        self._due = self._picture_due()
        return self._due

    def frame(self, image, frame, result) -> bool:
        from vision.io.views import live_positions_view
        from vision.io.images import encode_jpeg

        now = time.monotonic()
        jpeg = None
        picture = image if image is not None else getattr(frame, "image", None)
        due = self._due if self._due is not None else self._picture_due()
        self._due = None
        if picture is not None and due:
            jpeg = encode_jpeg(picture)
            self._last_picture = now
        positions = getattr(result, "positions", None)
        alerts = getattr(result, "alerts", None)
        self.conn.send(("frame", {
            "frame_index": int(frame.index),
            "jpeg": jpeg,
            "positions": live_positions_view(positions, self.rules)
            if isinstance(positions, Mapping) else None,
            "alerts": [dict(a) for a in alerts] if alerts is not None else None,
            "reading": bool(getattr(result, "provisional", False))}))
        return True

    def round(self, event) -> None:
        self.conn.send(("round", event.to_dict()))


def _split(detectors: Any) -> tuple[Any, Any]:
    if detectors is None:
        return None, None
    if isinstance(detectors, tuple):
        return detectors
    return detectors, detectors


def _shared_config(cfg, service):
    """``cfg`` with its models run by the pit's detector service (backend ``shared``,
    :mod:`vision.recognition.service`); unchanged for the ultralytics backend."""
    from dataclasses import replace

    from vision.recognition.service import use_shared_detector

    rec = cfg.pipeline.recognition
    if rec.backend == "ultralytics":
        return cfg
    name = use_shared_detector(service, rec.backend)
    return replace(cfg, pipeline=replace(cfg.pipeline, recognition=replace(rec, backend=name)))


class _LockedConn:
    """The sending end of the pipe, one sender at a time (the frame loop and the feed-state
    thread)."""

    def __init__(self, conn) -> None:
        self._conn, self._lock = conn, threading.Lock()

    def send(self, msg) -> None:
        with self._lock:
            self._conn.send(msg)


def worker_main(spec: TableSpec, conn, control, detectors: Any = None,
                max_picture_fps: float = 10.0, service: Any = None,
                threads: int | None = None, signals: bool = True, readings: Any = None) -> None:
    """Entry point of a table's worker process (module docstring).

    Args:
        spec: the table.
        conn: the sending end of the pipe to the supervisor.
        control: the receiving end of the control pipe (``"reset"``, ``"stop"``).
        detectors: None (the table's models), one object with ``detect`` and
            ``detect_batch``, or a ``(tile_detector, pip_detector)`` pair (picklable; tests).
        max_picture_fps: most annotated pictures sent per second.
        service: a :class:`vision.recognition.service.ServiceHandle`: the table's models run
            in the pit's one detector process (docs/pit.md); None: in this process.
        threads: this process's inference threads (set once,
            :func:`vision.recognition.backends.configure_threads`); None: the default.
        signals: take SIGINT / SIGTERM as described (the main thread of its own process);
            False in a thread of a Ray actor (:mod:`vision.pit.ray_pit`).
        readings: the pit's gate of fused still readings (a semaphore: so many at a time on
            the machine, :class:`vision.recognition.background.StillReader`), or None.

    Exits with code 0 when the source ended or the worker was stopped, 1 on an error (sent
    first as ``("error", text)``).
    """
    from vision.sources import install_log_redaction, redact_text

    install_log_redaction()  # a fresh (spawned) process: no log line shows a camera password
    if signals:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    session: Session | None = None
    stopped = threading.Event()

    def stop(*_a) -> None:
        stopped.set()
        if session is not None:
            session.stop()

    if signals:
        signal.signal(signal.SIGTERM, stop)
    conn = _LockedConn(conn)
    try:
        if threads is not None:
            from vision.recognition.backends import THREADS_ENV, configure_threads

            os.environ[THREADS_ENV] = str(threads)
            configure_threads(threads)
        cfg = spec.run_config()
        tile, pips = _split(detectors)
        if service is not None and detectors is None:
            cfg = _shared_config(cfg, service)
        rules = cfg.pipeline.table.rules
        sink = _PipeSink(conn, rules, max_picture_fps)
        client = None
        if service is not None and detectors is None:
            from vision.recognition.service import client_stats as client
        stats = LiveStats(table_id=spec.table_id, detector=client,
                          source=lambda: session.src if session is not None else None,
                          pipeline=lambda: session.pipeline if session is not None else None)
        session = Session(cfg, sinks=[sink, stats], pace=spec.realtime, loop=spec.loop,
                          tile_detector=tile, pip_detector=pips, keep_events=False)
        if stopped.is_set():
            session.stop()
        reader = getattr(getattr(session.pipeline, "engine", None), "background", None)
        if reader is not None and readings is not None:
            reader.gate = readings

        def listen() -> None:
            while True:
                try:
                    msg = control.recv()
                except (EOFError, OSError):
                    msg = "stop"  # the supervisor is gone
                if msg == "reset":
                    session.request_reset()
                elif msg in ("pictures on", "pictures off"):
                    sink.pictures = msg == "pictures on"
                elif msg == "stop":
                    stop()
                    return

        threading.Thread(target=listen, daemon=True, name="pit-control").start()

        def report_feed() -> None:  # the camera's state and the figures, also while no frame comes
            while not stopped.wait(1.0):
                src = session.src
                if src is None:
                    continue
                try:
                    conn.send(("feed", src.feed_state()))
                    conn.send(("stats", stats.snapshot()))
                except (OSError, ValueError):
                    return

        threading.Thread(target=report_feed, daemon=True, name="pit-feed").start()
        conn.send(("started", {"pid": os.getpid(),
                               "model_version": getattr(session.pipeline, "model_version", None),
                               "rules": rules}))
        summary = session.run()
        conn.send(("ended", {"frames": summary.get("frames"), "rounds": summary.get("rounds")}))
    except BaseException as exc:  # noqa: BLE001 - reported to the pit view, then exit 1
        if isinstance(exc, SystemExit) and not exc.code:
            raise
        text = redact_text(f"{type(exc).__name__}: {exc}")
        if isinstance(exc, InputError):  # a camera that cannot be opened, a bad store: one line
            log.error("table %s: worker failed: %s", spec.table_id, text)
        else:  # the traceback too, its URLs redacted
            import traceback

            log.error("table %s: worker failed: %s\n%s", spec.table_id, text,
                      redact_text(traceback.format_exc()))
        try:
            conn.send(("error", text))
        except OSError:
            pass
        raise SystemExit(1) from None
