"""The dealer display's publish/subscribe parts, composed by :class:`vision.web.hub.LiveFeed`.

- :class:`Notifier`: a version counter threads and asyncio tasks wait on (the wake-up of
  every consumer);
- :class:`Pictures`: the newest annotated picture (JPEG bytes) and the frame counters
  (:meth:`vision.web.hub.LiveFeed.latest_frame`, ``wait_frame``, ``next_frame``);
- :class:`RoundHistory`: the settled round events kept for the page, newest first (a manual
  record takes the place of the round it re-settles);
- :class:`Subscription` and :class:`Subscribers`: every round event to each consumer, usable
  from threads and from asyncio.

Thread safety: :class:`Notifier`, :class:`Subscription` and :class:`Subscribers` guard their
own state; :class:`Pictures` and :class:`RoundHistory` are plain state read and written with
the feed's lock held (so :meth:`vision.web.hub.LiveFeed.state` sees one consistent view).
Async consumers are woken with ``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import deque
from typing import Any

from vision.table.events import utc_now_iso

__all__ = ["Notifier", "Pictures", "RoundHistory", "Subscription", "Subscribers"]


class Notifier:
    """A version counter that threads and asyncio tasks can wait on.

    :meth:`notify` adds one to :attr:`version` and wakes every waiter (threads blocked in
    :meth:`wait`, tasks awaiting :meth:`async_wait` on any event loop).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.version = 0
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    def notify(self) -> None:
        """Add one to the version and wake every waiter (a closed loop's waiter is skipped)."""
        with self._cond:
            self.version += 1
            self._cond.notify_all()
            waiters = list(self._waiters)
        for loop, ev in waiters:
            try:
                loop.call_soon_threadsafe(ev.set)
            except RuntimeError:  # loop closed
                pass

    def wait(self, seen: int, timeout: float | None) -> int:
        """Block until the version differs from ``seen`` (or ``timeout`` s); the version."""
        with self._cond:
            self._cond.wait_for(lambda: self.version != seen, timeout)
            return self.version

    async def async_wait(self, seen: int, timeout: float | None) -> int:
        """Await until the version differs from ``seen`` (or ``timeout`` s); the version."""
        loop = asyncio.get_running_loop()
        ev = asyncio.Event()
        key = (loop, ev)
        with self._cond:
            if self.version != seen:
                return self.version
            self._waiters.add(key)
        try:
            await asyncio.wait_for(ev.wait(), timeout)
        except asyncio.TimeoutError:
            pass
        finally:
            with self._cond:
                self._waiters.discard(key)
        return self.version


class Pictures:
    """The newest annotated picture and the counters of published frames.

    :attr:`jpeg` (bytes or None before the first picture), :attr:`index` (the source's frame
    number of the newest frame), :attr:`count` (frames published), :attr:`times`
    (``time.monotonic()`` of the last ``keep`` frames), :attr:`updated` (UTC ISO time of the
    newest frame) are read and written with the feed's lock held; :attr:`notifier` wakes the
    consumers waiting for something newer (a frame, a status, an acknowledgement).

    Args:
        keep: frames whose times are kept for :meth:`fps`.
    """

    def __init__(self, keep: int = 30) -> None:
        self.jpeg: bytes | None = None
        self.index: int | None = None
        self.count = 0
        self.times: deque = deque(maxlen=int(keep))
        self.updated: str | None = None
        self.notifier = Notifier()

    @property
    def version(self) -> int:
        """The notifier's version: pass it to :meth:`Notifier.wait` / ``async_wait``."""
        return self.notifier.version

    def put(self, jpeg: bytes | None, frame_index: int | None, now: float) -> None:
        """Count one published frame at ``now`` (``time.monotonic()`` s); ``jpeg`` None keeps
        the previous picture, ``frame_index`` None the previous number. Called with the
        feed's lock held; the caller then calls :meth:`notify`."""
        if jpeg is not None:
            self.jpeg = jpeg
        if frame_index is not None:
            self.index = int(frame_index)
        self.count += 1
        self.times.append(now)
        self.updated = utc_now_iso()

    def notify(self) -> None:
        """Wake every consumer waiting for something newer."""
        self.notifier.notify()

    def fps(self) -> float:
        """Published frames per second over the kept frames (0.0 with fewer than two)."""
        times = list(self.times)
        return (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 and \
            times[-1] > times[0] else 0.0

    def age(self) -> float | None:
        """Seconds since the last frame was published (None before the first)."""
        return time.monotonic() - self.times[-1] if self.times else None


class RoundHistory:
    """The settled round events kept (JSON form, docs/round-event.md), newest first, and how
    many were shown in all. Read and written with the feed's lock held.

    Args:
        keep: round events kept (older ones drop out; :attr:`count` still counts them).
    """

    def __init__(self, keep: int = 20) -> None:
        self.events: deque = deque(maxlen=int(keep))
        self.count = 0

    def add(self, ev: dict) -> None:
        """Show one round event first. A manual record (``kind`` ``"manual"``, a supervisor's
        entry) of a round already shown takes the shown round's place (counted once)."""
        if ev.get("kind") == "manual":
            kept = [e for e in self.events if (e.get("table_id"), e.get("round_id")) !=
                    (ev.get("table_id"), ev.get("round_id"))]
            self.count -= len(self.events) - len(kept)  # the same round again
            self.events.clear()
            self.events.extend(kept)
        self.events.appendleft(ev)
        self.count += 1

    def last(self) -> dict | None:
        """The newest round event, or None before the first."""
        return self.events[0] if self.events else None

    def __len__(self) -> int:
        return len(self.events)

    def __iter__(self):
        return iter(self.events)


class Subscription:
    """Settled round events for one consumer, oldest first (from
    :meth:`vision.web.hub.LiveFeed.subscribe`).

    Holds at most ``maxsize`` undelivered events (older ones are dropped and counted in
    ``dropped``). Use :meth:`get` from a thread, ``await`` :meth:`aget` or ``async for`` from
    asyncio; :meth:`close` (or leaving a ``with`` block) unsubscribes. Iteration ends when the
    feed stops.

    Args:
        owner: the :class:`Subscribers` that delivers to it (its ``_unsubscribe`` is called
            on :meth:`close`).
        maxsize: undelivered events held.
    """

    def __init__(self, owner: "Subscribers", maxsize: int = 100) -> None:
        self._owner = owner
        self._items: deque = deque()
        self._maxsize = int(maxsize)
        self._notifier = Notifier()
        self.dropped = 0
        self.closed = False

    def _put(self, event: dict) -> None:
        with self._notifier._cond:
            if len(self._items) >= self._maxsize:
                self._items.popleft()
                self.dropped += 1
            self._items.append(event)
        self._notifier.notify()

    def _pop(self) -> dict | None:
        with self._notifier._cond:
            return self._items.popleft() if self._items else None

    def get(self, timeout: float | None = None) -> dict | None:
        """The next event, waiting up to ``timeout`` seconds (None: forever); None on timeout
        or when the subscription or the feed is closed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            seen = self._notifier.version
            ev = self._pop()
            if ev is not None or self.closed:
                return ev
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return None
            self._notifier.wait(seen, left)

    async def aget(self, timeout: float | None = None) -> dict | None:
        """Async :meth:`get`."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            seen = self._notifier.version
            ev = self._pop()
            if ev is not None or self.closed:
                return ev
            left = None if deadline is None else deadline - loop.time()
            if left is not None and left <= 0:
                return None
            await self._notifier.async_wait(seen, left)

    def __aiter__(self) -> "Subscription":
        return self

    async def __anext__(self) -> dict:
        ev = await self.aget()
        if ev is None:
            raise StopAsyncIteration
        return ev

    def close(self) -> None:
        """Unsubscribe (wakes any waiter)."""
        if not self.closed:
            self.closed = True
            self._owner._unsubscribe(self)
            self._notifier.notify()

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Subscribers:
    """The open :class:`Subscription` objects of one feed (its own lock).

    Lock order: a caller holding the feed's lock may call :meth:`members` (the feed takes the
    subscribers of a round in the same step as it adds the round to its history, so a consumer
    that subscribes before reading the history misses no round); nothing here takes the
    feed's lock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: set[Subscription] = set()

    def subscribe(self, maxsize: int = 100) -> Subscription:
        """A new open :class:`Subscription` (``maxsize`` undelivered events)."""
        sub = Subscription(self, maxsize)
        with self._lock:
            self._subs.add(sub)
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            self._subs.discard(sub)

    def members(self) -> list[Subscription]:
        """The open subscriptions now."""
        with self._lock:
            return list(self._subs)

    def __len__(self) -> int:
        with self._lock:
            return len(self._subs)

    @staticmethod
    def send(event: dict, subs: list[Subscription]) -> None:
        """Deliver ``event`` to each of ``subs`` (taken with :meth:`members`)."""
        for s in subs:
            s._put(event)

    def close_all(self) -> None:
        """Close every open subscription (their consumers end)."""
        for s in self.members():
            s.close()
