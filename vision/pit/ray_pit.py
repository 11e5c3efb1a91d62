"""The pit beyond one machine: table workers as Ray actors (``paigow serve --tables FILE
--address ray://HEAD:10001`` or ``--address auto``; docs/pit.md).

:class:`RayPit` is a :class:`vision.pit.supervisor.Pit` whose workers are Ray actors placed by
the Ray cluster instead of local processes; the pit view, the relay feeds and the dealer
displays are the same. Each actor (:class:`_TableActor`, 1 CPU) runs the unchanged worker loop
(:func:`vision.pit.worker.worker_main`) in a thread, buffering what it would send over the pipe;
the pit's reader thread of the table collects the buffer every 0.1 s and publishes it as
:meth:`Pit._read` does. Control messages (``"reset"``, ``"stop"``) are actor calls.

An actor that dies (its process killed, its node lost) is re-placed by Ray
(``max_restarts=-1``) on any node with a free CPU; its session starts again and continues the
table's round numbering from the audit store, which holds every round once (a round the store
already holds is not stored again). The pit view counts the restart and its reason.

The re-placed actor is built again from its creation arguments. Ray keeps an argument that is
large (over 100 KiB: detectors that carry pictures) in its object store and may free it once the
first actor is built, after which a restart cannot start (ray-project/ray#53727, #47043: the
actor stays "restarting" for good). So the pit puts each actor's arguments in the store itself
(``ray.put``) and holds the reference until it stops.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from typing import Any, Mapping, Sequence

from scoring.errors import InputError

from vision.table.events import utc_now_iso
from vision.pit.supervisor import Pit
from vision.pit.tables import TableSpec

log = logging.getLogger("vision.pit")

__all__ = ["RayPit", "connect_ray"]

POLL_S = 0.1


class _Outbox:
    """The sending end a worker thread writes to (``send``), drained by the pit."""

    def __init__(self) -> None:
        self.items: list = []
        self.lock = threading.Lock()

    def send(self, msg) -> None:
        with self.lock:
            self.items.append(msg)

    def take(self) -> list:
        with self.lock:
            out, self.items = self.items, []
        return out


class _Inbox:
    """The receiving end of the control messages (``recv`` blocks)."""

    def __init__(self) -> None:
        self.q: queue.Queue = queue.Queue()

    def recv(self):
        return self.q.get()


class _TableActor:
    """One table's worker inside a Ray actor (module docstring)."""

    def __init__(self, spec: TableSpec, detectors: Any, max_picture_fps: float,
                 threads: int) -> None:
        import os

        from vision.pit.worker import worker_main

        self.outbox, self.inbox = _Outbox(), _Inbox()
        self.pid = os.getpid()

        def run() -> None:
            try:
                worker_main(spec, self.outbox, self.inbox, detectors, max_picture_fps,
                            None, threads, signals=False)
            except SystemExit as exc:
                self.outbox.send(("exit", {"code": exc.code or 0}))
            else:
                self.outbox.send(("exit", {"code": 0}))

        self.thread = threading.Thread(target=run, daemon=True, name="pit-table")
        self.thread.start()

    def drain(self) -> tuple[int, list]:
        """``(pid, messages sent since the last call)``."""
        return self.pid, self.outbox.take()

    def node(self) -> str:
        """The Ray node id this actor runs on."""
        import ray

        return ray.get_runtime_context().get_node_id()

    def control(self, message: str) -> bool:
        self.inbox.q.put(message)
        return True


def connect_ray(address: str | None):
    """Connect to the Ray cluster at ``address`` (``ray://HOST:10001``, ``HOST:6379`` or
    ``auto``); None starts a local one. Returns the ``ray`` module.

    Raises:
        InputError: Ray not installed, or no cluster at ``address`` (naming it).
    """
    try:
        import ray
    except ImportError:
        raise InputError("--address needs Ray: pip install 'paigow-vision[ray]'") from None
    if not ray.is_initialized():
        kw = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
        try:
            ray.init(address=address, **kw) if address else ray.init(**kw)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise InputError(f"cannot connect to the Ray cluster at {address!r}: {exc}") \
                from None
    return ray


class RayPit(Pit):
    """A :class:`Pit` whose table workers are Ray actors (module docstring).

    Args:
        specs: the tables.
        address: the Ray cluster (:func:`connect_ray`).
        detectors, max_picture_fps: as :class:`Pit` (``detectors`` must pickle).
        threads: inference threads of each actor (default 1: an actor holds 1 CPU).
    """

    def __init__(self, specs: Sequence[TableSpec], *, address: str | None = None,
                 detectors: Mapping[str, Any] | None = None, max_picture_fps: float = 10.0,
                 threads: int = 1) -> None:
        super().__init__(specs, detectors=detectors, max_picture_fps=max_picture_fps,
                         shared_detector=False, threads=threads)
        self.address = address
        self.worker_threads = int(threads)
        self.actors: dict[str, Any] = {}
        self._creation_args: dict[str, Any] = {}  # ObjectRefs held for restarts (module doc)
        self.ray = None

    def start(self) -> "RayPit":
        """Connect to Ray, start one actor per table and their reader threads."""
        self.ray = connect_ray(self.address)
        cls = self.ray.remote(num_cpus=1, max_restarts=-1, max_task_retries=0,
                              max_concurrency=4)(_TableActor)
        for tid, feed in self.feeds.items():
            feed.start()
            args = self._creation_args[tid] = [
                self.ray.put(a) for a in (self.specs[tid], self.detectors.get(tid),
                                          self.max_picture_fps, self.worker_threads)]
            actor = cls.remote(*args)  # top-level ObjectRefs reach __init__ as their values
            self.actors[tid] = actor
            w = self.workers[tid]
            w.state, w.started_at, w.started_iso = "starting", time.monotonic(), utc_now_iso()
            threading.Thread(target=self._collect, args=(tid, actor), daemon=True,
                             name=f"pit-ray-{tid}").start()
        return self

    def _stop(self, timeout: float) -> None:
        self._stopping.set()
        for tid in self.specs:
            self.send(tid, "stop")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and any(
                w.state in ("starting", "running", "restarting") for w in self.workers.values()):
            time.sleep(POLL_S)
        for tid, actor in self.actors.items():
            try:
                self.ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - already gone
                pass
            w = self.workers[tid]
            if w.state in ("starting", "running", "restarting"):
                w.state = "stopped"
        for feed in self.feeds.values():
            feed.stop()
        self._creation_args.clear()

    def send(self, table_id: str, message: str) -> bool:
        """A control message to the table's actor; False when it has none."""
        actor = self.actors.get(table_id)
        if actor is None or self.workers[table_id].state in ("ended", "stopped"):
            return False
        try:
            actor.control.remote(message)
            return True
        except Exception:  # noqa: BLE001 - the actor is being restarted
            return False

    def _collect(self, tid: str, actor) -> None:
        """Publish what the table's actor sends; count its restarts (a new pid)."""
        ray = self.ray
        w, feed = self.workers[tid], self.feeds[tid]
        last_pid = None
        while not self._stopped and w.state not in ("ended", "stopped"):
            try:
                pid, msgs = ray.get(actor.drain.remote(), timeout=60)
            except Exception as exc:  # noqa: BLE001 - the actor died: Ray re-places it
                if self._stopping.is_set():
                    return
                with self._lock:
                    if w.state != "restarting":
                        w.restarts += 1
                        w.last_exit = {"code": None, "signal": None, "time": utc_now_iso(),
                                       "ran_s": round(time.monotonic() -
                                                      (w.started_at or time.monotonic()), 1),
                                       "error": f"actor lost: {type(exc).__name__}"}
                        w.state = "restarting"
                feed._set_status("restarting", "the table's actor is being re-placed")
                time.sleep(0.5)
                continue
            if last_pid is not None and pid != last_pid and w.state != "restarting":
                with self._lock:  # restarted between two polls
                    w.restarts += 1
                    w.last_exit = {"code": None, "signal": None, "time": utc_now_iso(),
                                   "ran_s": None, "error": "actor restarted"}
            last_pid = pid
            with self._lock:
                w.pid = pid
                if w.state == "restarting":
                    w.state, w.started_at, w.started_iso = ("starting", time.monotonic(),
                                                            utc_now_iso())
            for kind, body in msgs:
                if self._handle(tid, kind, body):  # the local pit's handling (Pit._handle)
                    continue
                if kind == "exit":
                    with self._lock:
                        if w.ended and body.get("code") == 0:
                            w.state = "ended"
                            feed._set_status("ended")
                        elif not self._stopping.is_set():
                            # a failed session: its actor is restarted by Ray, as a failed
                            # worker process is by the local pit
                            w.restarts += 1
                            w.last_exit = {"code": body.get("code"), "signal": None,
                                           "time": utc_now_iso(), "ran_s": None,
                                           "error": w.error}
                            w.state = "restarting"
                            time.sleep(1.0)
                            try:
                                ray.kill(actor, no_restart=False)
                            except Exception:  # noqa: BLE001 - already gone
                                pass
            time.sleep(POLL_S)
