"""One detector service per machine, shared by every table of the pit (docs/pit.md).

frigate's model: the camera (table) processes do not run the models themselves; they send their
letterboxed blobs to one detector process through shared memory and a queue, and get the raw
outputs back. The detector process owns all the machine's inference threads and one copy of each
model, instead of every table loading three models with its own threads and fighting the others
for the same cores.

* :class:`DetectorService` -- started by the pit supervisor (or a benchmark) with one client
  *slot* per table: a shared-memory block (``multiprocessing.shared_memory``, ``slot_bytes``)
  for the table's input blob and a response queue. One request queue serves every slot.
* :class:`ServiceHandle` -- what a table's worker process receives (picklable): the queues and
  the slot's block name.
* :class:`SharedDetectorClient` -- a :class:`vision.recognition.backends.DetectorBackend`
  (backend name ``shared``): ``infer(blob)`` copies the blob into the slot's block, queues a
  request and waits for the outputs, so :class:`vision.recognition.detect.Detector` and the whole pipeline
  run unchanged on top of it (:func:`use_shared_detector` registers it in the worker).

Streams: the service runs ``streams`` inference calls at once (default: one per thread of the
process, each call on one thread; :mod:`vision.recognition.backends`, streams): one call on
two threads costs more CPU than two calls on one thread each (the threads of one call wait for
each other), and a 2-core machine with several tables has a second call to run. The same graph
on the same blob gives the same outputs on any number of threads. Measured with the rest of
issue 21's changes in docs/pit.md (Throughput).

Batching: requests waiting in the queue for the same model and the same input size (and a model
whose batch axis is dynamic, and whose graph answers every image of a batch:
:func:`vision.recognition.obb_nms.batches_right`) are stacked into one inference call (split between the streams);
``batch=False`` runs them one by one. Requests wait in the queue only while every stream is
busy, so they are batched exactly then. scripts/bench_tables.py measures both.

Counters (cheap, for the live figures of ``GET /api/stats``, :mod:`vision.io.stats`): the
detector process counts its inference calls, the requests it answered and received and the
seconds its calls took in a small shared array (:meth:`DetectorService.stats`, read by the pit);
each worker process counts its own requests in flight (:func:`client_stats`: how long the
oldest has waited, so a table whose detector does not answer is seen within seconds).

A request carries its slot, a per-client sequence number and a client nonce, so a restarted
worker never takes an answer meant for the worker it replaces. A blob larger than the slot is
sent through the queue instead (pickled; slower, still right).

Watchdog: a detector process that is alive but no longer takes requests (an inference call that
never returns) would leave every table waiting. :meth:`DetectorService.answering` pings it
through the request queue; a ping left unanswered for :data:`HANG_S` seconds means it hangs, and
:meth:`DetectorService.restart` kills it and starts a new one on fresh queues (the pit then
restarts its table workers, whose handles held the old ones; tests/test_shared_detector.py
stops the process with SIGSTOP).
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import queue as queue_mod
import threading
import time
import uuid
from dataclasses import dataclass
from multiprocessing import shared_memory
from pathlib import Path
from typing import Any

import numpy as np

from scoring.errors import InputError

from vision.recognition.backends import (BUILTIN_BACKENDS, THREADS_ENV, backend_precision,
                                         configure_threads, open_backend, register_backend)
from vision.recognition.obb_nms import batches_right

log = logging.getLogger("vision.recognition")

__all__ = ["DetectorService", "ServiceHandle", "SharedDetectorClient", "use_shared_detector",
           "SLOT_BYTES", "HANG_S", "client_stats"]

#: Bytes of one table's input block: the largest blob of the product (a still image at
#: 1216 px, (1, 3, 704, 1216) float32, 10.3 MB; 32 spot crops, (32, 3, 192, 96), 7.1 MB) fits.
SLOT_BYTES = 16 << 20
#: Seconds a client waits for the service before its ``infer`` fails (the worker then exits
#: and the supervisor restarts it, as for any worker failure).
REPLY_TIMEOUT_S = 120.0
#: Seconds the service may leave a ping unanswered before :meth:`DetectorService.answering`
#: says it hangs (a ping waits at most for the calls running when it came: well under a
#: second each on this project's models, several on a loaded machine).
HANG_S = 30.0
#: Seconds between the pings of :meth:`DetectorService.answering`.
PING_EVERY_S = 2.0

#: The detector process's counters (:meth:`DetectorService.stats`): indexes into its shared
#: array of doubles -- inference calls, requests answered, seconds in calls, the last call's
#: seconds, infer requests received.
_CALLS, _ANSWERED, _INFER_S, _LAST_S, _RECEIVED = range(5)
_N_COUNTERS = 5


@dataclass(frozen=True)
class ServiceHandle:
    """One client slot of a :class:`DetectorService` (picklable; handed to a table worker).

    Attributes:
        slot: the slot index.
        requests: the service's request queue (shared by every slot).
        replies: this slot's reply queue.
        block: name of this slot's shared-memory block.
        block_bytes: its size, bytes.
    """

    slot: int
    requests: Any
    replies: Any
    block: str
    block_bytes: int


class DetectorService:
    """The machine's detector process and its client slots (module docstring).

    Args:
        slots: number of clients (tables).
        threads: inference threads of the detector process (None: the machine's CPU count).
        batch: stack waiting requests of the same model and size into one call.
        streams: inference calls run at once, each on ``threads / streams`` threads
            (module docstring, streams); None: ``threads`` (one thread a call: the least CPU
            per call when several tables keep the service busy); 1: one call at a time on
            every thread (the shortest call for a lone table).
        slot_bytes: size of each slot's input block, bytes.
        start_method: multiprocessing start method (``spawn``).

    Use :meth:`start`, :meth:`handle` (one per slot), :meth:`stop` (or a ``with`` block);
    :meth:`answering` (the watchdog) and :meth:`restart` for a process that hangs or dies.
    """

    def __init__(self, slots: int, *, threads: int | None = None, batch: bool = True,
                 slot_bytes: int = SLOT_BYTES, start_method: str = "spawn",
                 streams: int | None = None) -> None:
        if slots < 1:
            raise InputError(f"a detector service needs >= 1 slot, got {slots}")
        self.ctx = mp.get_context(start_method)
        self.threads = int(threads or os.cpu_count() or 1)
        self.streams = self.threads if streams is None else int(streams)
        if not 1 <= self.streams <= self.threads:
            raise InputError(f"detector service streams must be 1..{self.threads} (its "
                             f"threads), got {streams!r}")
        self.batch = bool(batch)
        self.n_slots = int(slots)
        self.blocks = [shared_memory.SharedMemory(create=True, size=slot_bytes)
                       for _ in range(slots)]
        self.slot_bytes = slot_bytes
        self.process = None
        #: starts of the detector process after the first (:meth:`restart`)
        self.restarts = 0
        self._new_queues()

    def _new_queues(self) -> None:
        """Fresh request, reply and ping queues (a killed process may have died holding a
        queue's lock, so a restarted service never reuses them)."""
        self.requests = self.ctx.Queue()
        self.replies = [self.ctx.Queue() for _ in range(self.n_slots)]
        self.pongs = self.ctx.Queue()
        self._ping: tuple[int, float] | None = None  # (number, sent at) awaiting its answer
        self._pings = 0
        self._answered_at: float | None = None
        #: the process's counters (written there, read here without a lock: figures only)
        self.counters = self.ctx.RawArray("d", _N_COUNTERS)

    def handle(self, slot: int) -> ServiceHandle:
        """The handle of client slot ``slot`` (0-based)."""
        return ServiceHandle(slot, self.requests, self.replies[slot], self.blocks[slot].name,
                             self.slot_bytes)

    def start(self) -> "DetectorService":
        """Start the detector process; returns self."""
        self.process = self.ctx.Process(
            target=_service_main, name="paigow-detector",
            args=(self.requests, self.replies, [b.name for b in self.blocks], self.threads,
                  self.batch, self.streams, self.pongs, self.counters), daemon=True)
        self.process.start()
        self._answered_at = time.monotonic()
        return self

    def alive(self) -> bool:
        """True while the detector process runs."""
        return self.process is not None and self.process.is_alive()

    def answering(self, hang_s: float = HANG_S, every_s: float = PING_EVERY_S) -> bool:
        """The watchdog of a running service, for one caller polling it (the pit's monitor):
        sends a ping every ``every_s`` seconds, collects the answers, and returns False once
        a ping has waited more than ``hang_s`` seconds -- the process is alive but no longer
        takes requests (every table would wait on it; :meth:`restart` it). True otherwise,
        and while no process runs (:meth:`alive` tells that).
        """
        if self.process is None:
            return True
        now = time.monotonic()
        while True:
            try:
                n = self.pongs.get_nowait()
            except (queue_mod.Empty, OSError, ValueError):
                break
            if self._ping is not None and n == self._ping[0]:
                self._ping, self._answered_at = None, now
        if self._ping is None:
            if now - (self._answered_at or now) >= every_s:
                self._pings += 1
                self._ping = (self._pings, now)
                try:
                    self.requests.put(("ping", None, self._pings))
                except (OSError, ValueError):
                    pass
            return True
        return now - self._ping[1] <= hang_s

    def stats(self) -> dict:
        """The detector process's counters since it started (cheap; no lock, no message):
        ``{"alive", "restarts", "calls" (inference calls), "requests" (infer requests
        answered), "infer_ms_total" (ms in calls), "infer_ms_last" (the last call, ms; None
        before one), "queued" (requests in the queue, not yet taken; None where the platform
        cannot count them), "pending" (infer requests received and not answered yet: taken,
        waiting for a stream, or running), "ping_waiting_s" (the watchdog's unanswered ping,
        seconds; 0.0 when none)}``. A restarted process counts from zero again."""
        c = list(self.counters)
        try:
            queued = int(self.requests.qsize())
        except (NotImplementedError, OSError, ValueError):
            queued = None
        ping = self._ping
        return {"alive": self.alive(), "restarts": self.restarts, "calls": int(c[_CALLS]),
                "requests": int(c[_ANSWERED]), "infer_ms_total": 1000.0 * c[_INFER_S],
                "infer_ms_last": 1000.0 * c[_LAST_S] if c[_CALLS] else None,
                "queued": queued, "pending": max(0, int(c[_RECEIVED] - c[_ANSWERED])),
                "ping_waiting_s": 0.0 if ping is None else time.monotonic() - ping[1]}

    def restart(self) -> "DetectorService":
        """Kill the detector process (hung or gone) and start a new one on fresh queues; the
        slots' blocks stay. Handles taken before hold the old queues: the clients must be
        made again (the pit restarts its table workers). Returns self."""
        if self.process is not None:
            if self.process.is_alive():
                self.process.kill()
            self.process.join(5)
            self.process = None
        for q in [self.requests, self.pongs, *self.replies]:
            q.close()
            q.cancel_join_thread()
        self._new_queues()
        self.restarts += 1
        return self.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the detector process and free the shared-memory blocks (idempotent)."""
        if self.process is not None:
            try:
                self.requests.put(None)
            except (OSError, ValueError):
                pass
            self.process.join(timeout)
            if self.process.is_alive():
                self.process.kill()
                self.process.join(2)
            self.process = None
        for b in self.blocks:
            try:
                b.close()
                b.unlink()
            except FileNotFoundError:
                pass
        self.blocks = []

    def __enter__(self) -> "DetectorService":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


# ----------------------------------------------------------------------------- the service

def _service_main(requests, replies, block_names, threads: int, batch: bool,
                  streams: int, pongs, counters=None) -> None:
    """The detector process: answer ``open`` and ``infer`` requests until ``None``.

    ``streams`` threads serve at once (module docstring, streams): each in turn takes the
    request queue, takes what waits there (batched by :func:`_jobs`), keeps one job and leaves
    the others to the next free thread, then runs its job on its own stream. A thread waits
    for the queue only when no job is left over, so requests pile up (and are batched) exactly
    while every stream is busy.
    """
    os.environ[THREADS_ENV] = str(threads)
    configure_threads(threads, shared=True)  # the table workers use the cores too
    blocks = [shared_memory.SharedMemory(name=n) for n in block_names]
    models: dict[tuple[str, str], Any] = {}
    state = {"stop": False, "jobs": []}
    take = threading.Lock()  # one thread at a time reads the queue and the left-over jobs
    count = _Count(counters)
    opening = threading.Lock()  # one model opened at a time (each once)

    def serve_forever() -> None:
        while True:
            with take:
                if state["stop"] and not state["jobs"]:
                    return
                if not state["jobs"]:
                    msg = requests.get()
                    todo = [] if msg is None else [msg]
                    while msg is not None and len(todo) < 4 * len(blocks):
                        try:  # whatever else is waiting now
                            msg = requests.get_nowait()
                        except queue_mod.Empty:
                            break
                        if msg is not None:
                            todo.append(msg)
                    if msg is None:
                        state["stop"] = True
                    state["jobs"] = _jobs(todo, replies, models, batch, streams, opening,
                                          pongs)
                    count.received(sum(len(j[2]) for j in state["jobs"]))
                if not state["jobs"]:
                    continue
                job = state["jobs"].pop(0)
            _run(job, replies, blocks, models, opening, streams, count)

    try:
        workers = [threading.Thread(target=serve_forever, name=f"detector-stream-{k}",
                                    daemon=True) for k in range(max(1, streams))]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
    finally:
        for b in blocks:
            b.close()


class _Count:
    """The detector process's side of :meth:`DetectorService.stats`: adds to the shared
    array (one stream thread at a time; None: not counted)."""

    def __init__(self, counters) -> None:
        self.c, self.lock = counters, threading.Lock()

    def received(self, n: int) -> None:
        if self.c is not None and n:
            with self.lock:
                self.c[_RECEIVED] += n

    def done(self, calls: int, requests: int, seconds: float) -> None:
        if self.c is not None:
            with self.lock:
                self.c[_CALLS] += calls
                self.c[_ANSWERED] += requests
                self.c[_INFER_S] += seconds
                if calls:
                    self.c[_LAST_S] = seconds / calls


def _jobs(todo, replies, models, batch: bool, streams: int, opening, pongs) -> list:
    """Answer the ``ping`` (on ``pongs``) and ``open`` requests of ``todo`` and group its
    ``infer`` requests into jobs
    ``(backend, path, [(slot, tag, shape, inline), ...])``: with ``batch``, the requests of one
    model and input size share a job, split in up to ``streams`` jobs of as even a size as may
    be so that every stream has work; without, one job each."""
    infers: dict[tuple, list] = {}
    for msg in todo:
        kind, slot, tag = msg[0], msg[1], msg[2]
        if kind == "ping":  # the watchdog: a stream thread came back to the queue
            pongs.put(tag)
            continue
        if kind == "open":
            _, _, _, backend, path = msg
            try:
                m = _model(models, backend, path, opening, streams)
                replies[slot].put((tag, "ok", {"metadata": dict(m.metadata),
                                               "input_shape": tuple(m.input_shape),
                                               "precision": getattr(m, "precision", None)}))
            except Exception as exc:  # noqa: BLE001 - the client raises it as its own error
                replies[slot].put((tag, "error", f"{type(exc).__name__}: {exc}"))
            continue
        _, _, _, backend, path, shape, inline = msg
        key = (backend, path, tuple(shape[1:])) if batch else (backend, path, tag)
        infers.setdefault(key, []).append((slot, tag, shape, inline))
    jobs = []
    for (backend, path, _), reqs in infers.items():
        parts = min(len(reqs), max(1, streams))
        size = -(-len(reqs) // parts)
        jobs += [(backend, path, reqs[i:i + size]) for i in range(0, len(reqs), size)]
    return jobs


def _run(job, replies, blocks, models, opening, streams: int = 1, count=None) -> None:
    """Run one job (:func:`_jobs`): one inference call for its requests when the model's
    batch axis is dynamic, else one call each; every request answered (outputs or the
    error), counted on ``count`` (a :class:`_Count`) before it is answered."""
    backend, path, reqs = job
    count = count or _Count(None)
    t0 = time.perf_counter()
    try:
        m = _model(models, backend, path, opening, streams)
        blobs = [inline if inline is not None else
                 np.ndarray(shape, np.float32, buffer=blocks[slot].buf)
                 for slot, _, shape, inline in reqs]
        if len(blobs) > 1 and m.input_shape and m.input_shape[0] is None and batches_right(m):
            outs = m.infer(np.concatenate(blobs))
            ends = np.cumsum([len(b) for b in blobs])
            parts = [[o[e - len(b):e] for o in outs] for b, e in zip(blobs, ends)]
            calls = 1
        else:
            parts = [m.infer(np.ascontiguousarray(b)) for b in blobs]
            calls = len(blobs)
        count.done(calls, len(reqs), time.perf_counter() - t0)
        for (slot, tag, _, _), out in zip(reqs, parts):
            replies[slot].put((tag, "ok", [np.ascontiguousarray(o) for o in out]))
    except Exception as exc:  # noqa: BLE001 - the client raises it as its own error
        count.done(0, len(reqs), time.perf_counter() - t0)
        for slot, tag, _, _ in reqs:
            replies[slot].put((tag, "error", f"{type(exc).__name__}: {exc}"))


def _model(models: dict, backend: str, path: str, opening, streams: int = 1):
    """The service's one copy of a model (opened on first use, ``streams`` at once where the
    backend takes them: the built-in ones, ``BUILTIN_BACKENDS``)."""
    key = (backend, path)
    with opening:
        if key not in models:
            models[key] = (open_backend(backend, path, streams=streams)
                           if streams > 1 and backend in BUILTIN_BACKENDS
                           else open_backend(backend, path))
        return models[key]


# ----------------------------------------------------------------------------- the client

class _InFlight:
    """This process's infer requests to the detector service (every
    :class:`SharedDetectorClient` of it): counted for :func:`client_stats`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._started: dict[int, float] = {}  # request number -> time.monotonic() sent
        self._n = 0
        self.answered = 0
        self.wait_s = 0.0
        self.last_s: float | None = None

    def begin(self) -> int:
        with self._lock:
            self._n += 1
            self._started[self._n] = time.monotonic()
            return self._n

    def end(self, key: int) -> None:
        with self._lock:
            t0 = self._started.pop(key, None)
            if t0 is not None:
                self.last_s = time.monotonic() - t0
                self.wait_s += self.last_s
                self.answered += 1

    def snapshot(self) -> dict:
        with self._lock:
            oldest = min(self._started.values(), default=None)
            return {"requests": self._n, "answered": self.answered,
                    "pending": len(self._started),
                    "waiting_s": 0.0 if oldest is None else time.monotonic() - oldest,
                    "wait_ms_last": None if self.last_s is None else 1000.0 * self.last_s,
                    "wait_ms_mean": 1000.0 * self.wait_s / self.answered
                    if self.answered else None}


_IN_FLIGHT = _InFlight()


def client_stats() -> dict:
    """This (worker) process's infer requests to the detector service: ``{"requests" (sent),
    "answered", "pending" (in flight now), "waiting_s" (seconds the oldest in flight has
    waited; 0.0 when none), "wait_ms_last", "wait_ms_mean" (answer times, ms; None before
    one)}``. Cheap; read by the table's live figures (:class:`vision.io.stats.LiveStats`)."""
    return _IN_FLIGHT.snapshot()


class SharedDetectorClient:
    """A :class:`vision.recognition.backends.DetectorBackend` answered by a
    :class:`DetectorService` (backend name ``shared``; module docstring).

    Args:
        path: the model file (opened by the service with ``backend``).
        handle: this table's :class:`ServiceHandle`.
        backend: the backend the service runs the model with (``onnx``, ``openvino``).

    Raises:
        InputError: the service cannot open the model (its reason), or does not answer.
    """

    name = "shared"

    def __init__(self, path: Path, handle: ServiceHandle, backend: str) -> None:
        self.path, self.handle, self.backend = Path(path), handle, backend
        #: the arithmetic the service runs the model in (the engine records ``@bf16``): the
        #: backend's, then what the service's compiled model says it chose
        self.precision = backend_precision(backend)
        self._nonce = uuid.uuid4().hex[:12]
        self._seq = 0
        self._lock = threading.Lock()
        # attaching registers the block with the resource tracker that the spawned processes
        # share with the one that made it, which unlinks it once (DetectorService.stop)
        self._block = shared_memory.SharedMemory(name=handle.block)
        facts = self._call(("open", handle.slot, None, backend, str(self.path)))
        self.metadata = facts["metadata"]
        self.input_shape = tuple(facts["input_shape"])
        # the arithmetic the service's backend chose on its CPU (bf16 asked may run f32)
        self.precision = facts.get("precision") or self.precision

    def infer(self, blob: np.ndarray) -> list[np.ndarray]:
        """The graph's outputs for ``blob``, computed by the service."""
        blob = np.ascontiguousarray(blob, dtype=np.float32)
        with self._lock:  # one request of this slot at a time: the block is reused
            if blob.nbytes <= self.handle.block_bytes:
                np.ndarray(blob.shape, np.float32, buffer=self._block.buf)[...] = blob
                inline = None
            else:
                inline = blob
            key = _IN_FLIGHT.begin()
            try:
                return self._call(("infer", self.handle.slot, None, self.backend,
                                   str(self.path), tuple(blob.shape), inline), locked=True)
            finally:
                _IN_FLIGHT.end(key)

    def _call(self, msg: tuple, locked: bool = False):
        if not locked:
            with self._lock:
                return self._call(msg, locked=True)
        self._seq += 1
        tag = (self._nonce, self._seq)
        self.handle.requests.put(msg[:2] + (tag,) + msg[3:])
        while True:
            try:
                got_tag, status, body = self.handle.replies.get(timeout=REPLY_TIMEOUT_S)
            except queue_mod.Empty:
                raise InputError(f"the detector service did not answer within "
                                 f"{REPLY_TIMEOUT_S:.0f} s ({self.path.name})") from None
            if got_tag != tag:
                continue  # meant for an earlier worker of this slot
            if status != "ok":
                raise InputError(f"detector service: {body} ({self.path})")
            return body

    def close(self) -> None:
        """Detach from the slot's block (the service owns it)."""
        self._block.close()


def use_shared_detector(handle: ServiceHandle, backend: str) -> str:
    """Register the ``shared`` backend in this (worker) process, answered by the service of
    ``handle`` running models with ``backend``; returns ``"shared"``, the name to run with."""
    register_backend("shared", lambda path, **_: SharedDetectorClient(path, handle, backend))
    return "shared"
