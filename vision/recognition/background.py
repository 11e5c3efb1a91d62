"""Recognition beside the frame loop (issue 45: nothing heavy in the frame loop).

:class:`StillReader` makes a live table's fused still reading on a thread of its own while the
frame loop goes on taking the camera's frames (:meth:`vision.recognition.engine.
RecognitionEngine.set_background`); :class:`Locked` lets the loop and that thread share one
detector, one inference call at a time (an OpenVINO request and the pit's shared-memory block
take one call at a time).
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Locked", "StillReader", "ReadingGate", "Felt", "GATE_WAIT_S", "FOLLOW_WAIT_S",
           "FELT_MAX", "cpu_contended", "LOAD_SAMPLES", "adds_faces_only"]

#: The most unread outlines of empty tables a :class:`Felt` keeps.
FELT_MAX = 64

#: Seconds a reading waits for the pit's gate (:class:`StillReader`) before it goes ahead.
GATE_WAIT_S = 10.0

#: Seconds between a follow-up reading's tries for a free permit of the pit's gate
#: (:class:`StillReader`: it never waits in line ahead of another table's first reading).
FOLLOW_WAIT_S = 0.1


def adds_faces_only(standing, follow_up) -> bool:
    """True when the reads ``follow_up`` only add faces to ``standing``: every face
    ``standing`` names is named the same by a read of ``follow_up`` on the same tile (polygon
    IoU >= :data:`vision.recognition.scales.SAME_TILE_IOU`, the input-size fusion's
    criterion). A full reading that follows a light one (:class:`StillReader`) replaces it
    only then: a face that stands is never renamed while the table stands still, so a round
    settled on it is never reported again with other faces.

    Args:
        standing, follow_up: sequences of :class:`vision.recognition.decode.TileRead`
            (``polygon`` float (4, 2) image px, ``face`` or None).
    """
    from vision.geometry import polygon_iou_matrix
    from vision.recognition.scales import SAME_TILE_IOU

    named = [r for r in standing if r.face]
    if not named:
        return True
    if not follow_up:
        return False
    iou = polygon_iou_matrix(np.stack([np.asarray(r.polygon, np.float32) for r in named]),
                             np.stack([np.asarray(r.polygon, np.float32) for r in follow_up]))
    faces = np.array([r.face or "" for r in follow_up])
    return all(bool(((iou[i] >= SAME_TILE_IOU) & (faces == r.face)).any())
               for i, r in enumerate(named))


class Locked:
    """A detector whose inference calls (``detect``, ``detect_batch``, a call) hold one lock:
    the frame loop and the still reading beside it (:class:`StillReader`) share one model
    (an OpenVINO request, the pit's shared-memory block) one call at a time. Every other
    attribute is the detector's own."""

    _CALLS = ("detect", "detect_batch")

    def __init__(self, inner, lock: threading.Lock) -> None:
        self._inner, self._lock = inner, lock

    def __getattr__(self, name: str):
        value = getattr(self._inner, name)
        if name in self._CALLS and callable(value):
            def call(*args, **kw):
                with self._lock:
                    return value(*args, **kw)
            return call
        return value

    def __call__(self, *args, **kw):
        with self._lock:
            return self._inner(*args, **kw)


#: samples of the kernel's runnable-task count a reading looks at before it starts
#: (:func:`cpu_contended`), :data:`LOAD_GAP_S` seconds apart
LOAD_SAMPLES = 5
LOAD_GAP_S = 0.01


def _own_running() -> int:
    """This process's threads in state ``R`` (``/proc/self/task/*/stat``; 0 elsewhere)."""
    own = 0
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        tids = []
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # a thread that ended meanwhile
        # "pid (comm) S ...": the state follows the last ")" (comm may hold one)
        own += stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] == b"R"
    return own


def _runnable() -> int | None:
    """Tasks runnable on the machine now, less this process's own running threads: Linux
    ``/proc/loadavg`` (4th field ``running/total``) less the threads of ``/proc/self/task``
    in state ``R`` (the caller, a frame loop, the models' inference threads), counted just
    before and just after the kernel's figure and the larger taken (a thread of ours that ran
    when the kernel counted and waits for the GIL a moment later is still ours: CI once took
    a lone process's own spinning threads for another program's load); None where there is
    no such file."""
    before = _own_running()
    try:
        with open("/proc/loadavg", "rb") as f:
            total = int(f.read().split()[3].split(b"/")[0])
    except (OSError, ValueError, IndexError):
        return None
    return max(0, total - max(before, _own_running()))


def cpu_contended(cores: int | None = None, samples: int = LOAD_SAMPLES,
                  gap_s: float = LOAD_GAP_S, runnable=_runnable) -> bool:
    """True when other work keeps every core busy now: in ``samples`` looks at the kernel's
    count of runnable tasks that are not this process's own threads, ``gap_s`` seconds
    apart, the fewest is at least ``cores``. Two CPU-bound processes of another program on a
    2-core machine count 2 in every look; the quiet machine 0 (measured, session 31). This
    process's threads are left out (a frame loop, the inference threads of a lone table's
    models); the pit's other processes (other tables, the detector service) count: they too
    hold the cores. The fewest of several looks, so a task that runs for a moment is not
    taken for load.

    Args:
        cores: the machine's cores (None: ``os.cpu_count()``).
        runnable: ``() -> int | None`` (tests inject one); None from any look: False (not
            Linux -- only the gate then tells a busy machine).
    """
    cores = int(cores or os.cpu_count() or 1)
    fewest = None
    for i in range(max(1, int(samples))):
        if i:
            time.sleep(gap_s)
        n = runnable()
        if n is None:
            return False
        fewest = n if fewest is None else min(fewest, n)
    return fewest is not None and fewest >= cores


class StillReader:
    """The fused still reading of a live table, made beside the frame loop (issue 45: nothing
    heavy in the frame loop; the display never stands still while it runs).

    One daemon thread runs ``read(image) -> list[TileRead]`` on the newest picture handed to
    :meth:`submit` (a picture handed in while one is being read waits; a newer one replaces
    it); :meth:`take` returns the finished ``(generation, reads or the exception raised)``
    once. The generation is the caller's: a reading of a picture that has since moved is
    thrown away by the engine.

    A pit's tables share the machine: with ``gate`` (a semaphore shared by the pit's workers,
    :class:`vision.pit.supervisor.Pit`: one fused reading at a time per core) a reading starts
    only when the gate lets it, so the readings of tables dealt at the same moment end one
    after another instead of all at the end. With ``light`` too, a reading that finds every
    permit taken (the machine busy with other tables' readings) is made with ``light``, a
    cheaper reading (one input size, ``RecognitionConfig.busy_scales``), once a permit comes
    free: 8 tables dealt at once on 2 cores otherwise queue readings past their tables' clear
    (docs/pit.md, "a busy machine reads with one size"). So is a reading that finds other work
    holding every core (:func:`cpu_contended`: another program's CPU-bound processes, which
    the gate cannot see), with or without a gate: beside two such processes, a table dealt
    every 7 s otherwise never saw its reading land before the next deal. A permit held by a
    worker that was killed is never given back by a plain semaphore; :class:`ReadingGate`'s
    permits are file locks the kernel frees when their process dies. After :data:`GATE_WAIT_S` seconds a reading goes
    ahead anyway (a stuck permit costs a delay, never a round).

    A light reading that leaves a tile unread that matters (``again``: the engine's
    unknowns worth another look, :meth:`vision.recognition.engine.RecognitionEngine._unread`)
    is followed by the full reading of the same picture, made once a permit is free at once
    and no other work holds every core (tried every :data:`FOLLOW_WAIT_S`: it never waits in
    line ahead of another table's first reading, nor holds up the next deal's reading on a
    machine another program keeps busy) and no newer picture waits (a newer one makes it
    moot): the light reading lands at once and the full one, landing later as the same
    generation, replaces it while the table stands still
    (:meth:`vision.recognition.engine.RecognitionEngine._followed`; bench_live, session 40: a
    banker's 1-3 whose one-size outline reached onto its flush 2-2 left a table's round
    unsettled on every run; the full reading names it).

    Args:
        read: the reading, e.g. ``lambda image: engine._read_still(image)[0]``.
        gate: an object with ``acquire(timeout=)`` / ``release()`` (a multiprocessing
            semaphore), or None.
        light: the reading made instead of ``read`` when the gate had no permit free at once,
            or the machine's cores were all held by other work (same signature), or None
            (always ``read``).
        contended: ``() -> bool``, the machine's cores all held by other work now (default
            :func:`cpu_contended`; tests inject one).
        again: ``again(image, reads) -> bool``: a light reading's result (of ``image``) that
            the full reading should follow (None: never). Not asked of an exception.
    """

    def __init__(self, read, gate=None, light=None, contended=None, again=None) -> None:
        self._read = read
        self._light = light
        self._again = again
        #: the picture a light reading left unread tiles in: its full reading comes next
        self._follow: tuple[int, np.ndarray] | None = None
        self._contended = cpu_contended if contended is None else contended
        self.gate = gate
        self._cv = threading.Condition()
        self._job: tuple[int, np.ndarray] | None = None
        self._done: tuple[int, Any] | None = None
        self._running: int | None = None
        self._running_full_after = False  # the reading running follows a light one
        self._closed = False
        #: readings made, of them made with ``light``; seconds of the last one (wall clock)
        self.made = 0
        self.light_made = 0
        #: full readings made after a light one left tiles unread (of ``made``)
        self.followed = 0
        self.last_s: float | None = None
        self._thread = threading.Thread(target=self._run, name="still-reading", daemon=True)
        self._thread.start()

    def submit(self, generation: int, image: np.ndarray) -> None:
        """Read ``image`` (uint8 (H, W, 3) BGR, not changed afterwards) next."""
        with self._cv:
            self._job = (generation, image)
            self._follow = None  # a newer picture: the follow-up of the one before is moot
            self._cv.notify()

    def pending(self, generation: int) -> bool:
        """True while a reading of ``generation`` is queued, running or not yet taken."""
        with self._cv:
            return ((self._job is not None and self._job[0] == generation)
                    or self._running == generation
                    or (self._done is not None and self._done[0] == generation))

    def following(self, generation: int) -> bool:
        """True while the full reading that follows a light one of ``generation`` is
        queued or running, or landed and not yet taken."""
        with self._cv:
            return ((self._follow is not None and self._follow[0] == generation)
                    or (self._running == generation and self._running_full_after)
                    or (self._done is not None and self._done[0] == generation))

    def making(self, generation: int) -> bool:
        """True while a reading of ``generation`` is queued or running (not once landed;
        nor the full reading that follows a light one: the light one has landed)."""
        with self._cv:
            return ((self._job is not None and self._job[0] == generation)
                    or (self._running == generation and not self._running_full_after))

    def busy(self) -> bool:
        """True while a reading is queued or running."""
        with self._cv:
            return self._job is not None or self._running is not None

    def wait_idle(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for no reading to be queued or running (one landed
        wakes the waiter at once); True when idle."""
        with self._cv:
            return self._cv.wait_for(lambda: self._job is None and self._running is None,
                                     timeout=max(0.0, timeout))

    def take(self) -> tuple[int, Any] | None:
        """The finished reading ``(generation, reads or exception)``, once; else None."""
        with self._cv:
            done, self._done = self._done, None
            return done

    def close(self) -> None:
        """Stop the thread after the reading in progress (not waited for)."""
        with self._cv:
            self._closed = True
            self._job = self._follow = None
            self._cv.notify()

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._job is None and self._follow is None and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                follow = self._job is None  # a newer picture goes before a follow-up
                if follow:
                    (gen, image), self._follow = self._follow, None
                else:
                    (gen, image), self._job = self._job, None
                self._running, self._running_full_after = gen, follow
            gate = self.gate
            held = gate is not None and gate.acquire(timeout=0)
            busy = gate is not None and not held
            if follow and (busy or self._contended()):
                # a follow-up never queues for a permit ahead of another table's first
                # reading, nor runs while other work holds every core (it would hold up
                # the next deal's reading): it is tried again after FOLLOW_WAIT_S, unless a
                # newer picture comes
                if held:
                    gate.release()
                with self._cv:
                    self._running, self._running_full_after = None, False
                    if self._job is None and not self._closed:
                        self._follow = (gen, image)
                    self._cv.notify_all()  # wait_idle
                    self._cv.wait(FOLLOW_WAIT_S)
                continue
            if busy:  # every permit taken: the machine is reading other tables
                held = gate.acquire(timeout=GATE_WAIT_S)
            elif self._light is not None and not follow and self._contended():
                busy = True  # other work holds every core: another program, or other tables
            read = self._light if busy and self._light is not None and not follow \
                else self._read
            t0 = time.perf_counter()
            try:
                out: Any = read(image)
            except Exception as exc:  # noqa: BLE001 -- a reading never ends a feed
                out = exc
            finally:
                if held:
                    gate.release()
            again = False
            if read is not self._read and self._again is not None \
                    and not isinstance(out, Exception):
                try:
                    again = bool(self._again(image, out))
                except Exception:  # noqa: BLE001 -- the light reading stands
                    again = False
            with self._cv:
                self.made += 1
                self.light_made += read is not self._read
                self.followed += follow
                self.last_s = time.perf_counter() - t0
                self._running, self._running_full_after = None, False
                self._done = (gen, out)
                if again and self._job is None and not self._closed:
                    self._follow = (gen, image)
                self._cv.notify_all()  # wait_idle


class ReadingGate:
    """So many fused still readings at a time on one machine, across processes (the pit's
    table workers, :class:`StillReader` ``gate``): ``permits`` lock files in ``folder``; a
    reading holds one (``fcntl.flock``), and the kernel frees it when the holding process
    dies, so a worker killed mid-reading never leaves a permit taken. Picklable (paths only;
    each process opens its own descriptors).

    Args:
        folder: an existing folder of this machine (the pit's temporary folder).
        permits: readings at a time (>= 1).
        poll_s: seconds between tries while every permit is held.
    """

    def __init__(self, folder: str | os.PathLike, permits: int, poll_s: float = 0.02) -> None:
        self.paths = [str(Path(folder) / f"reading-{k}.lock") for k in range(max(1, int(permits)))]
        for p in self.paths:
            Path(p).touch()
        self.poll_s = float(poll_s)
        self._held = threading.local()

    def __getstate__(self) -> dict:
        return {"paths": self.paths, "poll_s": self.poll_s}

    def __setstate__(self, state: dict) -> None:
        self.paths, self.poll_s = state["paths"], state["poll_s"]
        self._held = threading.local()

    def acquire(self, timeout: float | None = None) -> bool:
        """Take a permit; False when none came free within ``timeout`` seconds (None: wait)."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            for p in self.paths:
                fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    os.close(fd)
                    continue
                self._held.fd = fd
                return True
            if end is not None and time.monotonic() >= end:
                return False
            time.sleep(self.poll_s)

    def release(self) -> None:
        """Give back the permit this thread holds (closing its descriptor frees the lock)."""
        fd = getattr(self._held, "fd", None)
        if fd is not None:
            self._held.fd = None
            os.close(fd)


class Felt:
    """The unread outlines an empty still table shows (felt lettering, chips taken for tiles):
    once the table is dealt, an unknown read lying on them gets no second look or turned
    reading (:meth:`vision.recognition.engine.RecognitionEngine._unread`; a dealt table's
    still reading of 1080p with lettering: about 3.1 -> 2.5 s here).

    Attributes:
        boxes: float32 (k, 4) xyxy, image px (k <= :data:`FELT_MAX`).
    """

    def __init__(self) -> None:
        self.boxes = np.zeros((0, 4), np.float32)

    def clear(self) -> None:
        """Forget every outline (a new source)."""
        self.boxes = np.zeros((0, 4), np.float32)

    def learn(self, reads) -> None:
        """Add the unknown outlines of an empty table's reads (none when a read is face up:
        not an empty table); an outline already kept (IoU > 0.9) is not added again."""
        from vision.geometry import iou_matrix

        if any(r.state == "face_up" for r in reads):
            return
        for r in reads:
            if r.state != "unknown":
                continue
            box = np.asarray(r.xyxy, np.float32).reshape(1, 4)
            if len(self.boxes) and (iou_matrix(box, self.boxes) > 0.9).any():
                continue
            self.boxes = np.concatenate([self.boxes, box])[-FELT_MAX:]

    def worth(self, unknown: list) -> list:
        """The reads of ``unknown`` whose box lies less than half on the kept outlines
        (their union, sampled on an 8 x 8 grid of the box: an outline on lettering differs a
        little from reading to reading)."""
        f = self.boxes
        if not len(f):
            return list(unknown)
        keep = []
        for r in unknown:
            x0, y0, x1, y1 = (float(v) for v in r.xyxy)
            gx, gy = np.meshgrid(np.linspace(x0, x1, 8), np.linspace(y0, y1, 8))
            px, py = gx.ravel()[:, None], gy.ravel()[:, None]
            on = ((px >= f[:, 0]) & (px <= f[:, 2]) & (py >= f[:, 1]) & (py <= f[:, 3])).any(1)
            if on.mean() < 0.5:
                keep.append(r)
        return keep

