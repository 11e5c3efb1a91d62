"""The dealer display's hub: what the feed thread publishes and the web app reads.

A :class:`LiveFeed` (usually :class:`vision.web.feed.PipelineFeed`) publishes three things:

- the latest annotated picture as JPEG bytes (:meth:`LiveFeed.latest_jpeg`; consumers can wait
  for the next one with :meth:`LiveFeed.wait_frame` / :meth:`LiveFeed.next_frame`);
- the current view (:meth:`LiveFeed.state`): per position the hands, result, net and alerts of
  the last round, and what the camera shows now (live reads) -- built by :mod:`vision.io.views`;
- every round event (JSON form of :class:`vision.schema.RoundEvent`, docs/round-event.md) to
  each subscriber (:meth:`LiveFeed.subscribe` -> :class:`Subscription`, usable from threads and
  from asyncio).

Thread safety: publishing happens in the feed thread (or a test thread); reading happens in the
web server's event loop or its worker threads. All shared state is guarded by one lock; async
consumers are woken with ``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from typing import Any, Mapping, Sequence

import numpy as np

from scoring.errors import InputError, StateConflict

from vision.table.events import utc_now_iso
from vision.schema import RoundEvent
from vision.sources import redact_text, redact_url
from vision.io.views import (DEALING, READING, live_positions_view, plain_reason, position_name,
                             positions_view, round_summary)

__all__ = ["LiveFeed", "Subscription", "encode_jpeg"]

log = logging.getLogger("vision.web")


def encode_jpeg(image: np.ndarray, quality: int = 80, max_width: int | None = 1280) -> bytes:
    """JPEG bytes of a BGR picture.

    Args:
        image: uint8 (H, W, 3) BGR or (H, W) grey.
        quality: JPEG quality 1..100.
        max_width: pictures wider than this many pixels are scaled down first (aspect kept);
            None keeps the size.

    Raises:
        InputError: not an image array, or OpenCV cannot encode it.
    """
    import cv2

    img = np.asarray(image)
    if img.dtype != np.uint8 or img.ndim not in (2, 3) or img.size == 0:
        raise InputError(f"frame must be a non-empty uint8 (H, W[, 3]) array, got dtype "
                         f"{img.dtype} shape {img.shape}")
    if max_width and img.shape[1] > max_width:
        h = max(1, round(img.shape[0] * max_width / img.shape[1]))
        img = cv2.resize(img, (int(max_width), int(h)), interpolation=cv2.INTER_AREA)
    ok, buf = cv2.imencode(".jpg", img, [int(cv2.IMWRITE_JPEG_QUALITY), int(quality)])
    if not ok:
        raise InputError(f"cannot encode frame of shape {img.shape} as JPEG")
    return buf.tobytes()


# --------------------------------------------------------------------------- wake-ups


class _Notifier:
    """A version counter that threads and asyncio tasks can wait on."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.version = 0
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()

    def notify(self) -> None:
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


class Subscription:
    """Settled round events for one consumer, oldest first (from :meth:`LiveFeed.subscribe`).

    Holds at most ``maxsize`` undelivered events (older ones are dropped and counted in
    ``dropped``). Use :meth:`get` from a thread, ``await`` :meth:`aget` or ``async for`` from
    asyncio; :meth:`close` (or leaving a ``with`` block) unsubscribes. Iteration ends when the
    feed stops.
    """

    def __init__(self, feed: "LiveFeed", maxsize: int = 100) -> None:
        self._feed = feed
        self._items: deque = deque()
        self._maxsize = int(maxsize)
        self._notifier = _Notifier()
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
            self._feed._unsubscribe(self)
            self._notifier.notify()

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class LiveFeed:
    """Base feed: shared state, publishing and consumer API (module docstring).

    Subclasses implement :meth:`_run` (the thread body: loop until :attr:`stopping` is set,
    calling :meth:`publish_frame` and :meth:`publish_event`) and optionally :meth:`_reset`.

    Args:
        table_id: shown on the page and in :meth:`state` (events carry their own).
        source: the source spec shown on the page.
        audit: the audit store (path or URL, or an open store whose ``label`` is its path)
            where acknowledgements and manual entries from the page are recorded; None: they
            are refused.
        dealing_frames: a position showing fewer than four tiles is "being dealt" (live
            status ``dealing``, no alert) until its tiles have stayed the same this many
            published frames.
        history: settled rounds kept for :meth:`state` (newest first).
        jpeg_quality: 1..100.
        max_width: pictures wider than this (px) are scaled down before JPEG encoding.
    """

    def __init__(self, *, table_id: str = "table-1", source: str = "", history: int = 20,
                 jpeg_quality: int = 80, max_width: int | None = 1280, audit=None,
                 dealing_frames: int = 10) -> None:
        self.audit = None if audit is None else (
            getattr(audit, "label", None) or str(audit))  # path / URL: own connection per use
        self.dealing_frames = int(dealing_frames)
        self._streaks: dict[str, tuple[tuple, int]] = {}
        self._last_current = False  # the table still shows the last round
        self._acked: dict[tuple, dict] = {}
        self.table_id = str(table_id)
        self.source = redact_url(source)  # shown on the page and the API: no credentials
        self.jpeg_quality = int(jpeg_quality)
        self.max_width = max_width
        self._lock = threading.Lock()
        self._control_lock = threading.Lock()  # acks and manual entries, one at a time
        self._jpeg: bytes | None = None
        self._frames = _Notifier()
        self._subs: set[Subscription] = set()
        self._rounds: deque = deque(maxlen=int(history))
        self._round_count = 0
        self._live_positions: dict[str, dict] = {}
        self._live_alerts: list[dict] = []
        self._status = "idle"
        self._error: str | None = None
        self._frame_index: int | None = None
        self._frame_count = 0
        self._frame_times: deque = deque(maxlen=30)
        self._updated: str | None = None
        self._thread: threading.Thread | None = None
        self.stopping = threading.Event()

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> "LiveFeed":
        """Start the background thread (idempotent); returns self."""
        if self._thread is None:
            self.stopping.clear()
            self._set_status("running")
            self._thread = threading.Thread(target=self._run_guarded, daemon=True,
                                            name=f"{type(self).__name__}")
            self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread (waits up to ``timeout`` s), end every subscription and frame
        stream."""
        self.stopping.set()
        self._on_stop()
        t = self._thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout)
        if self._status == "running":
            self._set_status("stopped")
        with self._lock:
            subs = list(self._subs)
        for s in subs:
            s.close()
        self._frames.notify()

    @property
    def closed(self) -> bool:
        """True once :meth:`stop` was called."""
        return self.stopping.is_set()

    def __enter__(self) -> "LiveFeed":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _run_guarded(self) -> None:
        try:
            self._run()
        except InputError as exc:
            log.error("feed stopped: %s", exc)
            self._set_status("error", str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - shown on the page, logged with traceback
            log.exception("feed crashed")
            self._set_status("error", f"{type(exc).__name__}: {exc}")
            return
        if not self.stopping.is_set():
            self._set_status("ended")

    def _run(self) -> None:
        """Thread body (subclasses). The base feed publishes only what is pushed to it."""
        self.stopping.wait()

    def _on_stop(self) -> None:
        """Hook: release what blocks :meth:`_run` (subclasses)."""

    def _set_status(self, status: str, error: str | None = None) -> None:
        with self._lock:
            self._status = status
            self._error = redact_text(error) if error is not None else None
        self._frames.notify()

    # -- publishing -------------------------------------------------------------------------
    def publish_frame(self, image: np.ndarray | bytes | None, *, frame_index: int | None = None,
                      positions: Mapping[str, Any] | None = None,
                      alerts: Sequence[Mapping] | None = None, rules: str = "pa",
                      reading: bool = False) -> None:
        """Publish the newest annotated picture and the live positions.

        Args:
            image: uint8 BGR (H, W, 3) array (encoded here) or JPEG bytes, or None to keep the
                previous picture.
            frame_index: the source's frame number.
            positions: position -> :class:`vision.table.rounds.PositionState` or view dict
                (:func:`live_positions_view`); None keeps the previous live view.
            alerts: live alerts ``[{"kind", "position", "detail"}]``; None keeps the previous.
            reading: the positions are a first look at a new deal whose still reading is
                being made (``FrameResult.provisional``): a position with a problem is shown
                as ``reading`` ("reading the deal"), not as a hand to move, and raises no
                live alert.
        """
        jpeg = None
        if image is not None:
            jpeg = bytes(image) if isinstance(image, (bytes, bytearray, memoryview)) else \
                encode_jpeg(image, self.jpeg_quality, self.max_width)
        live = live_positions_view(positions, rules) if positions is not None else None
        now = time.monotonic()
        with self._lock:
            if jpeg is not None:
                self._jpeg = jpeg
            dealing = set()
            if live is not None:
                dealing = self._mark_dealing(live, reading)
                self._live_positions = live
                self._last_current = self._still_last_round(live)
            if alerts is not None:
                self._live_alerts = [
                    dict(a, say=plain_reason(a.get("position"), a.get("detail"), a.get("kind")))
                    for a in alerts if a.get("position") not in dealing]
            if frame_index is not None:
                self._frame_index = int(frame_index)
            self._frame_count += 1
            self._frame_times.append(now)
            self._updated = utc_now_iso()
        self._frames.notify()

    def _still_last_round(self, live: dict[str, dict]) -> bool:
        """True while the table still shows the last round: its banker's tiles are the
        banker's tiles now (else the last round is shown as the last round, not the one on
        the table). Called with the lock held."""
        last = self._rounds[0] if self._rounds else None
        if not last:
            return False
        bank = str(last.get("banker_position", "dealer"))
        was = (last.get("positions") or {}).get(bank) or {}
        now = live.get(bank) or {}
        return sorted(f or "" for f in was.get("tiles") or []) == \
            sorted(f or "" for f in now.get("tiles") or []) and bool(now)

    def _mark_dealing(self, live: dict[str, dict], reading: bool = False) -> set[str]:
        """Positions still being dealt (fewer than four tiles, changed within the last
        ``dealing_frames`` frames): status ``dealing``, no problems, no alert; while the
        deal's still reading is being made (``reading``), a position with a problem: status
        ``reading``, "reading the deal", no alert. Adds ``say`` (plain words) to the others.
        Called with the lock held."""
        dealing = set()
        streaks = {}
        for pos, v in live.items():
            sig = tuple(v.get("tiles") or ())
            old = self._streaks.get(pos)
            n = old[1] + 1 if old is not None and old[0] == sig else 1
            streaks[pos] = (sig, n)
            if len(sig) < 4 and n < self.dealing_frames:
                dealing.add(pos)
                v.update(status=DEALING, detail=None, problems=[], say=None)
            elif reading and v.get("status") != "set":
                dealing.add(pos)
                v.update(status=READING, detail=None, problems=[],
                         say=f"{position_name(pos)}: reading the deal")
            else:
                v["say"] = plain_reason(pos, v.get("detail")) if v.get("detail") else None
        self._streaks = streaks
        return dealing

    def publish_event(self, event: RoundEvent | Mapping) -> None:
        """Publish one round event (a :class:`vision.schema.RoundEvent` or its JSON form) to
        the state and every subscriber. A manual record of a round already shown (a
        supervisor's entry) takes the shown round's place in the history."""
        ev = event.to_dict() if isinstance(event, RoundEvent) else dict(event)
        with self._lock:
            if ev.get("kind") == "manual":
                kept = [e for e in self._rounds if (e.get("table_id"), e.get("round_id")) !=
                        (ev.get("table_id"), ev.get("round_id"))]
                self._round_count -= len(self._rounds) - len(kept)  # the same round again
                self._rounds.clear()
                self._rounds.extend(kept)
            self._rounds.appendleft(ev)
            self._round_count += 1
            # a round just reported is the table's until a frame shows the table changed
            self._last_current = True
            subs = list(self._subs)
        for s in subs:
            s._put(ev)

    # -- consumers -------------------------------------------------------------------------
    def latest_jpeg(self) -> bytes | None:
        """The latest annotated picture as JPEG bytes (None before the first frame)."""
        with self._lock:
            return self._jpeg

    def latest_frame(self) -> tuple[int, bytes | None]:
        """``(version, jpeg)``: pass the version to :meth:`wait_frame` / :meth:`next_frame`."""
        with self._lock:
            return self._frames.version, self._jpeg

    def wait_frame(self, after: int, timeout: float | None = None) -> tuple[int, bytes | None]:
        """Block until something newer than version ``after`` is published (or ``timeout``
        s, or the feed stops); returns :meth:`latest_frame`."""
        if not self.closed:
            self._frames.wait(after, timeout)
        return self.latest_frame()

    async def next_frame(self, after: int, timeout: float | None = None
                         ) -> tuple[int, bytes | None]:
        """Async :meth:`wait_frame`."""
        if not self.closed:
            await self._frames.async_wait(after, timeout)
        return self.latest_frame()

    def feed_state(self):
        """The source's :class:`vision.io.frames.FeedState` now (camera connected / reconnecting /
        ended, gaps), or None when the feed has no source to ask (this base feed; subclasses
        with a source override it). Read by the page and ``/healthz``
        (:mod:`vision.web.health`)."""
        return None

    def live_stats(self) -> dict | None:
        """The table's live figures (camera, processed and skipped frames per second, the
        detector, round latencies: :meth:`vision.io.stats.LiveStats.snapshot`), or None when
        the feed has none (this base feed; subclasses with a frame loop override it). Read by
        ``GET /api/stats``."""
        return None

    def picture_age(self) -> float | None:
        """Seconds since the last picture was published (None before the first)."""
        with self._lock:
            return time.monotonic() - self._frame_times[-1] if self._frame_times else None

    def history(self) -> list[dict]:
        """The settled round events kept (``history`` of them), newest first."""
        with self._lock:
            return list(self._rounds)

    @property
    def subscriber_count(self) -> int:
        """Open subscriptions (event stream clients)."""
        with self._lock:
            return len(self._subs)

    def subscribe(self, maxsize: int = 100) -> Subscription:
        """A :class:`Subscription` receiving every round settled from now on."""
        sub = Subscription(self, maxsize)
        with self._lock:
            self._subs.add(sub)
        if self.closed:
            sub.close()
        return sub

    def _unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            self._subs.discard(sub)

    def state(self) -> dict:
        """The current view (JSON-ready).

        Returns:
            ``{"table_id", "source", "status" ("idle"|"running"|"ended"|"stopped"|"error"),
            "error", "frame_index", "frames", "fps" (published frames per second over the last
            30), "updated" (UTC ISO time of the last frame), "has_picture", "positions"
            (:func:`positions_view` of the last settled round), "alerts" (its alerts),
            "last_round" (the full event or None), "last_round_on_table" (the table still
            shows it: its banker's tiles lie there; False once the table changed: the page
            says "last round"), "live": {"positions"
            (:func:`live_positions_view`), "alerts"}, "rounds" (summaries, newest first),
            "round_count", "feed" (the camera's state, :func:`vision.web.health.feed_view`;
            None without a source)}``.
        """
        with self._lock:
            last = self._rounds[0] if self._rounds else None
            times = list(self._frame_times)
            fps = (len(times) - 1) / (times[-1] - times[0]) if len(times) > 1 and \
                times[-1] > times[0] else 0.0
            st = {
                "table_id": (last or {}).get("table_id", self.table_id) if last else self.table_id,
                "source": self.source,
                "status": self._status,
                "error": self._error,
                "frame_index": self._frame_index,
                "frames": self._frame_count,
                "fps": round(fps, 2),
                "updated": self._updated,
                "has_picture": self._jpeg is not None,
                "live": {"positions": dict(self._live_positions),
                         "alerts": list(self._live_alerts)},
                "last_round": last,
                "last_round_on_table": bool(last) and self._last_current,
                "round_count": self._round_count,
                "rounds": list(self._rounds),
            }
        from vision.web.health import feed_view

        st["feed"] = feed_view(self)
        st["positions"] = positions_view(last)
        rid = (last or {}).get("round_id")
        st["alerts"] = [dict(a, say=plain_reason(a.get("position"), a.get("detail"),
                                                 a.get("kind")),
                             acknowledged=(rid, a.get("kind"), a.get("position")) in self._acked)
                        for a in (last or {}).get("alerts") or []]
        for v in st["positions"].values():
            for a in v["alerts"]:
                a["acknowledged"] = (rid, a["kind"], v["position"]) in self._acked
        st["settled_by"] = "manual" if (last or {}).get("kind") == "manual" else (
            "camera" if last else None)
        st["audit"] = self.audit is not None
        # the face picker: per tile the camera did not read (or a face entered by hand), the
        # faces the set still holds for it (vision.audit.entries.possible_faces)
        from vision.audit.entries import possible_faces

        entered = {int(e["tile"]) for e in ((last or {}).get("manual") or {}).get("entries")
                   or []}
        st["manual_faces"] = {
            str(i): possible_faces(last, i) for i, t in enumerate((last or {}).get("tiles")
                                                                 or [])
            if t.get("position") and (t.get("state") == "unknown" or i in entered)}
        st["rounds"] = [round_summary(e) for e in st["rounds"]]
        return st

    # -- control ----------------------------------------------------------------------------
    def _stored_event(self, round_id: str) -> dict:
        for e in self.history():
            if e.get("round_id") == round_id:
                return e
        raise InputError(f"round {round_id!r} is not among the rounds shown")

    def _store(self):
        if self.audit is None:
            raise StateConflict("no audit store: start the display with --audit DB to record "
                             "acknowledgements and manual entries")
        from vision.audit import AuditStore

        return AuditStore(self.audit, create=False)

    def acknowledge(self, round_id: str, kind: str, position: str | None,
                    by: str | None = None, note: str | None = None) -> dict:
        """Control action: acknowledge one alert of a shown round, recorded in the audit
        store (:func:`vision.audit.entries.append_ack`).

        Returns:
            ``{"ok": True, "action": "ack", "record": seq, "round_id", "kind", "position"}``.

        Raises:
            InputError: no audit store, a round not shown, an alert the round does not have.
        """
        from vision.audit.entries import append_ack

        ev = self._stored_event(round_id)
        with self._control_lock, self._store() as st:  # one control write at a time
            rec = append_ack(st, str(ev.get("table_id")), round_id,
                             {"kind": kind, "position": position}, by=by, note=note)
        with self._lock:
            self._acked[(round_id, kind, position)] = {"record": rec.seq, "by": by}
        self._frames.notify()
        return {"ok": True, "action": "ack", "record": rec.seq, "round_id": round_id,
                "kind": kind, "position": position}

    def manual_entry(self, round_id: str, entries, by: str | None = None,
                     correction: bool = False) -> dict:
        """Control action: a supervisor's faces for tiles the camera could not read, stored
        in the audit store as a manual record beside the camera's
        (:func:`vision.audit.entries.append_manual`); the round re-settled from it is shown
        and sent to subscribers (``kind`` ``"manual"``).

        Args:
            entries: ``[{"tile": index in the event's tiles, "face": "2-4"}]``.
            correction: change faces entered before (a record superseding the newest
                manual record; :func:`vision.audit.entries.append_manual`).

        Returns:
            ``{"ok": True, "action": "manual", "record": seq, "round_id", "settled"}``.

        Raises:
            InputError: no audit store, a round not shown, a bad tile or face.
        """
        from vision.audit.entries import append_manual

        ev = self._stored_event(round_id)
        with self._control_lock, self._store() as st:
            rec = append_manual(st, str(ev.get("table_id")), round_id, entries, by=by,
                                correction=correction)
        self.publish_event(rec.payload)
        self._frames.notify()
        return {"ok": True, "action": "manual", "record": rec.seq, "round_id": round_id,
                "settled": bool(rec.payload.get("settled"))}

    def reset(self) -> dict:
        """Control action: forget the current round (the next stable table opens a new one).

        Returns:
            ``{"ok": True, "action": "reset"}`` plus whatever :meth:`_reset` adds.
        """
        extra = self._reset() or {}
        with self._lock:
            self._live_positions = {}
            self._live_alerts = []
        self._frames.notify()
        return {"ok": True, "action": "reset", **extra}

    def _reset(self) -> dict | None:
        """Hook: reset the round tracking (subclasses)."""
        return None
