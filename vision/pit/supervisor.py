"""Starting, watching and restarting the table workers; one relay feed per table.

:class:`Pit` starts one worker process per table (:func:`vision.pit.worker.worker_main`, the
``spawn`` start method: a fresh interpreter, no threads or locks inherited from the web
server). Each worker has its own pipes (a worker killed mid-message breaks only its own pipe,
never another table's) and its own reader thread here, which publishes what the worker sends to
the table's :class:`TableFeed` -- a :class:`vision.web.hub.LiveFeed`, so the dealer display
(:func:`vision.web.app.create_app`) serves it unchanged.

A worker that exits without having ended its source (killed, crashed, camera lost beyond the
capture's own reconnects) is restarted after a back-off (``restart_delay``: 0.5 s doubling up
to 10 s; back to 0.5 s after a worker ran a minute); the pit view shows how often and why
(:meth:`Pit.state`). One table's failures never stop another's worker.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import signal
import threading
import time
from typing import Any, Mapping, Sequence

from vision.io.views import round_summary
from vision.table.events import utc_now_iso
from vision.sources import redact_text
from vision.web.hub import LiveFeed
from vision.pit.tables import TableSpec
from vision.pit.worker import worker_main

log = logging.getLogger("vision.pit")

#: A table whose worker has died this many times in a row (each within a minute of its
#: start) is ``failed`` on the pit's ``/healthz`` (503) -- it is still restarted, with the
#: longest back-off, so it comes back by itself once the cause is mended.
FAILED_AFTER = 3

__all__ = ["Pit", "TableFeed"]


class TableFeed(LiveFeed):
    """The relay feed of one table: published by the pit's reader thread of its worker; a
    reset is sent to the worker (applied between two frames there)."""

    def __init__(self, pit: "Pit", spec: TableSpec) -> None:
        # the tables file's audit store: acks and manual entries of this table's display
        super().__init__(table_id=spec.table_id, source=spec.source,
                         audit=spec.options.get("audit"))
        self.pit, self.spec = pit, spec
        #: the camera's state as the worker last sent it (None before the first)
        self.camera = None
        #: the live figures as the worker last sent them, and when (``time.monotonic()``)
        self.stats: dict | None = None
        self.stats_at: float | None = None

    def feed_state(self):
        """The camera's :class:`vision.io.frames.FeedState` as the table's worker last reported
        it (about once a second), or None before any report: the table's ``/healthz``."""
        return self.camera

    def live_stats(self) -> dict | None:
        """The table's live figures (``/tables/<id>/api/stats``): what its worker last sent
        (:meth:`vision.io.stats.LiveStats.snapshot`, about once a second), with
        ``reported_s`` (seconds since) and the pit's detector service's queue; ``stuck`` also
        when a running worker has sent nothing for :data:`vision.io.stats.STUCK_AFTER_S`.
        None before its first report."""
        return self.pit.table_stats(self.table_id)

    #: the worker draws and sends pictures only while someone looks (issue 45)
    pictures_on_demand = True

    def _on_demand(self) -> None:
        self.pit.sync_pictures(self.table_id)

    def _reset(self) -> dict:
        return {"pending": self.pit.send(self.table_id, "reset")}


class _Worker:
    """Book-keeping of one table's current worker process."""

    def __init__(self) -> None:
        self.process = None
        self.conn = None      # receiving end (here)
        self.control = None   # sending end (here)
        self.pid: int | None = None
        self.state = "starting"  # starting | running | restarting | ended | stopped
        self.started_at: float | None = None
        self.started_iso: str | None = None
        self.restarts = 0
        self.failures = 0     # consecutive, for the back-off
        self.ended = False
        self.error: str | None = None
        self.last_exit: dict | None = None
        self.next_start = 0.0
        self.model_version: str | None = None
        #: what the worker was last told: pictures on (True), off (False), nothing (None;
        #: a worker starts with them on)
        self.pictures: bool | None = None


class Pit:
    """The workers of several tables and their feeds.

    Args:
        specs: the tables (:func:`vision.pit.tables.load_tables`).
        detectors: table id -> detectors handed to that table's worker (picklable; tests), or
            None: every worker loads its table's models.
        max_picture_fps: most pictures per second a worker sends.
        restart_delay: ``(first, longest)`` seconds before a failed worker is restarted.
        start_method: multiprocessing start method (``spawn``).
        shared_detector: run every table's models in one detector process
            (:class:`vision.recognition.service.DetectorService`, all the machine's inference
            threads; each worker 1 thread) instead of in each worker (the machine's cores split
            between the workers). Not with injected ``detectors``. None (default): shared
            from two tables on; a lone table runs its models itself on every core (its still
            reading's calls then use all of them: issue 45, `scripts/bench_live.py`, 1 table
            at 7 / 2: latency median 8.05 -> 6.53 s, seats right 5 -> 11 of 17).
        threads: the machine's inference threads (None: its CPU count), set once here and
            handed down.
        service_hang_s: seconds the detector service may leave the monitor's ping unanswered
            before it is taken for hung and restarted, with every table's worker
            (:meth:`vision.recognition.service.DetectorService.answering`).

    Use :meth:`start`, :meth:`state`, :attr:`feeds`, :meth:`stop` (or a ``with`` block).
    """

    def __init__(self, specs: Sequence[TableSpec], *,
                 detectors: Mapping[str, Any] | None = None, max_picture_fps: float = 10.0,
                 restart_delay: tuple[float, float] = (0.5, 10.0),
                 start_method: str = "spawn", shared_detector: bool | None = None,
                 threads: int | None = None, service_hang_s: float | None = None) -> None:
        import os

        from vision.recognition.service import HANG_S

        self.specs = {s.table_id: s for s in specs}
        self.detectors = dict(detectors or {})
        self.max_picture_fps = float(max_picture_fps)
        self.restart_delay = restart_delay
        self.ctx = mp.get_context(start_method)
        self.feeds: dict[str, TableFeed] = {t: TableFeed(self, s) for t, s in self.specs.items()}
        self.workers: dict[str, _Worker] = {t: _Worker() for t in self.specs}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._stop_lock = threading.Lock()  # stop() from a signal's thread and from the caller
        self._stopped = False
        self._monitor: threading.Thread | None = None
        machine = int(threads or os.cpu_count() or 1)
        #: the pit's detector service (None: each worker runs its own models)
        self.service = None
        if shared_detector is None:
            shared_detector = len(self.specs) > 1
        self.shared_detector = bool(shared_detector) and not self.detectors
        self.service_hang_s = float(HANG_S if service_hang_s is None else service_hang_s)
        self.slots = {t: i for i, t in enumerate(self.specs)}
        self.machine_threads = machine
        #: inference threads of each worker process
        self.worker_threads = 1 if self.shared_detector else max(1, machine // len(self.specs))
        #: the tables' fused still readings, one at a time per core (issue 45): the readings
        #: of tables dealt at once end one after another (vision.recognition.background)
        import tempfile

        from vision.recognition.background import ReadingGate

        self._gate_dir = tempfile.TemporaryDirectory(prefix="paigow-readings-")
        self.readings = ReadingGate(self._gate_dir.name, max(1, machine))
        from vision.io.stats import RateWindow

        #: the detector service's counters (calls, ms in calls) over the live figures' window
        self._detector_window = RateWindow()

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> "Pit":
        """Start the detector service (when shared), every worker and the monitor thread;
        returns self."""
        if self.shared_detector and self.service is None:
            from vision.recognition.service import DetectorService

            self.service = DetectorService(len(self.specs), threads=self.machine_threads,
                                           start_method=self.ctx.get_start_method()).start()
        for tid, feed in self.feeds.items():
            feed.start()
            self._spawn(tid)
        self._monitor = threading.Thread(target=self._watch, daemon=True, name="pit-monitor")
        self._monitor.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop every worker (``"stop"``, then SIGTERM, then SIGKILL after ``timeout`` s) and
        every feed (idempotent; a second call waits for the first)."""
        with self._stop_lock:
            if self._stopped:
                return
            self._stop(timeout)
            self._stopped = True

    def _stop(self, timeout: float) -> None:
        self._stopping.set()
        if self._monitor is not None:  # no restart may start after this point
            self._monitor.join(10)
        for tid in self.specs:
            self.send(tid, "stop")
        deadline = time.monotonic() + timeout
        for w in self.workers.values():
            p = w.process
            if p is None:
                continue
            p.join(max(0.1, deadline - time.monotonic()))
            if p.is_alive():
                p.terminate()
                p.join(2)
            if p.is_alive():
                p.kill()
                p.join(2)
            if w.state in ("starting", "running", "restarting"):
                w.state = "stopped"
        for feed in self.feeds.values():
            feed.stop()
        gate_dir = getattr(self, "_gate_dir", None)
        if gate_dir is not None:
            gate_dir.cleanup()
        if self.service is not None:
            self.service.stop()
            self.service = None

    def __enter__(self) -> "Pit":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def send(self, table_id: str, message: str) -> bool:
        """Send a control message (``"reset"``, ``"stop"``) to a table's worker; False when it
        has none running."""
        w = self.workers[table_id]
        try:
            if w.control is None:
                return False
            w.control.send(message)
            return True
        except (OSError, ValueError):
            return False

    def sync_pictures(self, tid: str) -> None:
        """Tell table ``tid``'s worker to draw and send its pictures (``"pictures on"``) while
        its feed's pictures are looked at (:meth:`vision.web.hub.LiveFeed.pictures_wanted`)
        and to stop (``"pictures off"``) when nobody looks: a table nobody watches costs no
        drawing or JPEG encoding. Called by the monitor and at once when a look begins."""
        w = self.workers[tid]
        want = self.feeds[tid].pictures_wanted()
        if w.pictures is not want and self.send(tid, "pictures on" if want else "pictures off"):
            w.pictures = want

    # -- workers --------------------------------------------------------------------------
    def _spawn(self, tid: str) -> None:
        w = self.workers[tid]
        recv, send = self.ctx.Pipe(duplex=False)
        crecv, csend = self.ctx.Pipe(duplex=False)
        p = self.ctx.Process(target=worker_main, name=f"paigow-table-{tid}",
                             args=(self.specs[tid], send, crecv, self.detectors.get(tid),
                                   self.max_picture_fps,
                                   self.service.handle(self.slots[tid]) if self.service
                                   else None, self.worker_threads),
                             kwargs={"readings": self.readings}, daemon=True)
        p.start()
        send.close()
        crecv.close()
        with self._lock:
            w.process, w.conn, w.control, w.pid = p, recv, csend, p.pid
            w.pictures = None  # a new worker starts with its pictures on
            w.state, w.ended, w.error = "starting", False, None
            w.started_at, w.started_iso = time.monotonic(), utc_now_iso()
        threading.Thread(target=self._read, args=(tid, p, recv), daemon=True,
                         name=f"pit-read-{tid}").start()

    def _read(self, tid: str, process, conn) -> None:
        """Publish what one worker sends until its pipe ends (EOF, or broken by a kill)."""
        w = self.workers[tid]
        while True:
            try:
                kind, body = conn.recv()
            except Exception:  # noqa: BLE001 - EOF, or a message cut short by a kill
                break
            if w.process is not process:
                continue
            self._handle(tid, kind, body)
        conn.close()

    def _handle(self, tid: str, kind: str, body) -> bool:
        """Act on one message of a table's worker (a process here, a Ray actor in
        :mod:`vision.pit.ray_pit`): ``frame``, ``round``, ``started``, ``feed`` (the camera's
        state), ``error`` (kept with any camera password masked), ``ended``. Returns False for
        a kind it does not know (the caller's own, e.g. the actor's ``exit``)."""
        w, feed = self.workers[tid], self.feeds[tid]
        if kind == "frame":
            feed.publish_frame(body["jpeg"], frame_index=body["frame_index"],
                               positions=body["positions"], alerts=body["alerts"],
                               reading=bool(body.get("reading", False)))
        elif kind == "round":
            feed.publish_event(body)
        elif kind == "started":
            with self._lock:
                w.state, w.model_version = "running", body.get("model_version")
            feed.stats = feed.stats_at = None  # a new worker: its own figures from now on
            feed._set_status("running")
        elif kind == "feed":
            feed.camera = body
        elif kind == "stats":
            feed.stats, feed.stats_at = body, time.monotonic()
        elif kind == "error":
            with self._lock:
                w.error = redact_text(str(body))
        elif kind == "ended":
            with self._lock:
                w.ended = True
        else:
            return False
        return True

    def _watch(self) -> None:
        first, longest = self.restart_delay
        while not self._stopping.wait(0.2):
            svc = self.service
            if svc is not None:
                self.detector_stats()  # a sample for the window, whether or not anyone reads
            if svc is not None and not self._stopping.is_set():
                why = ("exited" if not svc.alive() else
                       None if svc.answering(self.service_hang_s) else
                       f"did not answer for {self.service_hang_s:g} s")
                if why is not None:
                    log.warning("the detector service %s; restarting it and every table's "
                                "worker", why)
                    svc.restart()
                    self._restart_workers(f"the detector service {why} and was restarted")
            for tid, w in self.workers.items():
                p = w.process
                if p is None or w.state in ("ended", "stopped"):
                    continue
                self.sync_pictures(tid)
                if w.state == "restarting":
                    if time.monotonic() >= w.next_start and not self._stopping.is_set():
                        log.warning("table %s: restarting its worker (restart %d)", tid,
                                    w.restarts)
                        self._spawn(tid)
                    continue
                if p.is_alive():
                    continue
                code = p.exitcode
                ran = time.monotonic() - (w.started_at or time.monotonic())
                exit_info = {"code": code, "signal": -code if code is not None and code < 0
                             else None, "time": utc_now_iso(), "ran_s": round(ran, 1),
                             "error": w.error}
                if code is not None and code < 0:
                    try:
                        exit_info["signal_name"] = signal.Signals(-code).name
                    except ValueError:
                        pass
                with self._lock:
                    w.last_exit = exit_info
                    if code == 0 and w.ended:
                        w.state = "ended"
                        self.feeds[tid]._set_status("ended")
                        continue
                    w.failures = 1 if ran >= 60 else w.failures + 1
                    delay = min(longest, first * 2 ** (w.failures - 1))
                    w.state, w.next_start = "restarting", time.monotonic() + delay
                    w.restarts += 1
                    w.control = None
                log.warning("table %s: worker pid %s exited (%s); restarting in %.1f s", tid,
                            w.pid, _exit_text(exit_info), delay)
                self.feeds[tid]._set_status("restarting", _exit_text(exit_info))

    def _restart_workers(self, why: str) -> None:
        """Kill every running worker (the monitor restarts it, with a handle of the restarted
        detector service): its handle holds the queues of the service it was started with."""
        for w in self.workers.values():
            p = w.process
            if p is None or w.state in ("ended", "stopped", "restarting") or not p.is_alive():
                continue
            with self._lock:
                w.error = why
            p.kill()

    # -- the live figures ---------------------------------------------------------------------
    def detector_stats(self) -> dict | None:
        """The shared detector service's figures (None without one):
        :meth:`vision.recognition.service.DetectorService.stats` plus, over the live figures'
        window (:data:`vision.io.stats.WINDOW_S`), ``infer_ms_mean`` (ms per inference call)
        and ``calls_per_s``, and ``stuck`` (its watchdog ping unanswered for
        :data:`vision.io.stats.STUCK_AFTER_S`)."""
        from vision.io.stats import STUCK_AFTER_S

        read = getattr(self.service, "stats", None)  # None: no service (or one without counters)
        if read is None:
            return None
        st = read()
        now = time.monotonic()
        totals = (st["calls"], st["infer_ms_total"])
        with self._lock:
            self._detector_window.add(now, totals)
            span, (calls, ms) = self._detector_window.delta(now, totals)
        st["window_s"] = self._detector_window.window_s
        st["infer_ms_mean"] = round(ms / calls, 1) if calls > 0 else None
        st["calls_per_s"] = round(calls / span, 2) if span > 0 else 0.0
        st["stuck"] = st["ping_waiting_s"] > STUCK_AFTER_S or not st["alive"]
        st["infer_ms_total"] = round(st["infer_ms_total"], 1)
        if st["infer_ms_last"] is not None:
            st["infer_ms_last"] = round(st["infer_ms_last"], 1)
        st["ping_waiting_s"] = round(st["ping_waiting_s"], 3)
        return st

    def table_stats(self, tid: str, detector: dict | None = None) -> dict | None:
        """One table's live figures (:meth:`TableFeed.live_stats`); ``detector``: the
        service's figures when the caller has them already."""
        from vision.io.stats import STUCK_AFTER_S

        feed, w = self.feeds[tid], self.workers[tid]
        body, at = feed.stats, feed.stats_at
        if body is None or at is None:
            return None
        st = dict(body)
        age = time.monotonic() - at
        st["reported_s"] = round(age, 3)
        if detector is None:
            detector = self.detector_stats()
        if detector is not None:  # the service's queue: every table's requests not answered
            det = st["detector"] = dict(st.get("detector") or {}, queue=detector["pending"])
            if detector["stuck"]:
                det["stuck"] = st["stuck"] = True
                st["reasons"] = [*st.get("reasons", []), "the detector service is not answering"]
        if w.state == "running" and age > STUCK_AFTER_S:
            st["stuck"] = True
            st["reasons"] = [*st.get("reasons", []),
                             f"no report from the table's worker for {age:.1f} s"]
        return st

    def stats(self) -> dict:
        """``GET /api/stats`` of the pit: ``{"time", "tables": {id: the table's figures or
        None before its first report}, "detector": the service's figures or None}``."""
        det = self.detector_stats()
        return {"time": utc_now_iso(),
                "tables": {tid: self.table_stats(tid, det) for tid in self.feeds},
                "detector": det}

    # -- the pit view -----------------------------------------------------------------------
    def state(self) -> dict:
        """Every table for the pit view (docs/pit.md).

        Returns:
            ``{"time", "tables": [{"table_id", "source", "url" (its dealer display),
            "status" (the feed's), "fps", "frames", "frame_index", "updated", "round_count",
            "last_round" (round summary or None), "alerts" (open alerts: what the camera shows
            now, then the last round's), "worker": {"pid", "state" (starting | running |
            restarting | ended | stopped), "started", "restarts", "failed" (the worker died
            :data:`FAILED_AFTER` times in a row, each soon after its start), "last_exit" ({"code",
            "signal", "signal_name", "time", "ran_s", "error"} or None), "note" (one line or
            None), "model_version"}, "stats": {"camera_fps", "processed_fps", "skipped_fps",
            "behind", "stuck", "reasons"} or None (the table's live figures, :meth:`stats`)}],
            "detector": the detector service's figures or None}``.
        """
        det = self.detector_stats()
        tables = []
        for tid, feed in self.feeds.items():
            st = feed.state()
            w = self.workers[tid]
            with self._lock:
                worker = {"pid": w.pid, "state": w.state, "started": w.started_iso,
                          "restarts": w.restarts, "last_exit": w.last_exit,
                          "failed": w.failures >= FAILED_AFTER and w.state == "restarting",
                          "model_version": w.model_version,
                          "note": (f"restarted {w.restarts}x; last exit: "
                                   f"{_exit_text(w.last_exit)}") if w.restarts else None}
            last = st.get("last_round")
            open_alerts = list(st["live"]["alerts"]) + list(st.get("alerts") or [])
            tables.append({
                "table_id": tid, "source": feed.source, "url": f"/tables/{tid}/",
                "status": st["status"], "error": st.get("error"), "fps": st["fps"],
                "frames": st["frames"], "frame_index": st["frame_index"],
                "updated": st["updated"], "round_count": st["round_count"],
                "last_round": round_summary(last) if last else None,
                "alerts": open_alerts, "worker": worker,
                "stats": _brief(self.table_stats(tid, det))})
        return {"time": utc_now_iso(), "tables": tables, "detector": det}


def _brief(stats: dict | None) -> dict | None:
    """The pit view's part of a table's live figures."""
    if stats is None:
        return None
    return {k: stats.get(k) for k in ("camera_fps", "processed_fps", "skipped_fps", "behind",
                                      "stuck", "reasons")}


def _exit_text(info: Mapping | None) -> str:
    if not info:
        return "-"
    if info.get("signal"):
        what = f"killed by signal {info['signal']}"
        if info.get("signal_name"):
            what += f" ({info['signal_name']})"
    else:
        what = f"exit code {info.get('code')}"
    if info.get("error"):
        what += f": {info['error']}"
    return f"{what} at {info.get('time')}"
