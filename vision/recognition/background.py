"""Recognition beside the frame loop (issue 45: nothing heavy in the frame loop).

:class:`StillReader` makes a live table's fused still reading on a thread of its own while the
frame loop goes on taking the camera's frames (:meth:`vision.recognition.engine.
RecognitionEngine.set_background`); :class:`Locked` lets the loop and that thread share one
detector, one inference call at a time (an OpenVINO request and the pit's shared-memory block
take one call at a time).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

__all__ = ["Locked", "StillReader"]


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


class StillReader:
    """The fused still reading of a live table, made beside the frame loop (issue 45: nothing
    heavy in the frame loop; the display never stands still while it runs).

    One daemon thread runs ``read(image) -> list[TileRead]`` on the newest picture handed to
    :meth:`submit` (a picture handed in while one is being read waits; a newer one replaces
    it); :meth:`take` returns the finished ``(generation, reads or the exception raised)``
    once. The generation is the caller's: a reading of a picture that has since moved is
    thrown away by the engine.

    Args:
        read: the reading, e.g. ``lambda image: engine._read_still(image)[0]``.
    """

    def __init__(self, read) -> None:
        self._read = read
        self._cv = threading.Condition()
        self._job: tuple[int, np.ndarray] | None = None
        self._done: tuple[int, Any] | None = None
        self._running: int | None = None
        self._closed = False
        #: readings made; seconds of the last one (wall clock)
        self.made = 0
        self.last_s: float | None = None
        self._thread = threading.Thread(target=self._run, name="still-reading", daemon=True)
        self._thread.start()

    def submit(self, generation: int, image: np.ndarray) -> None:
        """Read ``image`` (uint8 (H, W, 3) BGR, not changed afterwards) next."""
        with self._cv:
            self._job = (generation, image)
            self._cv.notify()

    def pending(self, generation: int) -> bool:
        """True while a reading of ``generation`` is queued, running or not yet taken."""
        with self._cv:
            return ((self._job is not None and self._job[0] == generation)
                    or self._running == generation
                    or (self._done is not None and self._done[0] == generation))

    def busy(self) -> bool:
        """True while a reading is queued or running."""
        with self._cv:
            return self._job is not None or self._running is not None

    def take(self) -> tuple[int, Any] | None:
        """The finished reading ``(generation, reads or exception)``, once; else None."""
        with self._cv:
            done, self._done = self._done, None
            return done

    def close(self) -> None:
        """Stop the thread after the reading in progress (not waited for)."""
        with self._cv:
            self._closed = True
            self._job = None
            self._cv.notify()

    def _run(self) -> None:
        while True:
            with self._cv:
                while self._job is None and not self._closed:
                    self._cv.wait()
                if self._closed:
                    return
                (gen, image), self._job = self._job, None
                self._running = gen
            t0 = time.perf_counter()
            try:
                out: Any = self._read(image)
            except Exception as exc:  # noqa: BLE001 -- a reading never ends a feed
                out = exc
            with self._cv:
                self.made += 1
                self.last_s = time.perf_counter() - t0
                self._running = None
                self._done = (gen, out)
