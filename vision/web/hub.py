"""The dealer display's hub: what the feed thread publishes and the web app reads.

A :class:`LiveFeed` (usually :class:`vision.web.feed.PipelineFeed`) publishes three things:

- the latest annotated picture as JPEG bytes (:meth:`LiveFeed.latest_jpeg`; consumers can wait
  for the next one with :meth:`LiveFeed.wait_frame` / :meth:`LiveFeed.next_frame`);
- the current view (:meth:`LiveFeed.state`): per position the hands, result, net and alerts of
  the last round, and what the camera shows now (live reads) -- built by :mod:`vision.io.views`;
- every round event (JSON form of :class:`vision.schema.RoundEvent`, docs/round-event.md) to
  each subscriber (:meth:`LiveFeed.subscribe` -> :class:`Subscription`, usable from threads and
  from asyncio).

:class:`LiveFeed` composes its jobs, each a module of its own: :mod:`vision.web.pubsub` (the
picture and its wake-ups, the rounds shown, the subscribers), :mod:`vision.web.dealing` (the
live positions: dealing and reading streaks, alerts in plain words, the last round still on
the table), :mod:`vision.web.control` (acknowledgements and manual entries into the audit
store) and :func:`vision.io.images.encode_jpeg` (the pictures); here are the thread, the
publishing and the consumer API.

Thread safety: publishing happens in the feed thread (or a test thread); reading happens in the
web server's event loop or its worker threads. All shared state is guarded by one lock; async
consumers are woken with ``loop.call_soon_threadsafe``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Mapping, Sequence

import numpy as np

from scoring.errors import InputError

from vision.schema import RoundEvent
from vision.sources import redact_text, redact_url
from vision.io.images import encode_jpeg
from vision.io.views import live_positions_view, plain_reason, positions_view, round_summary
from vision.web.control import AuditControl, manual_faces
from vision.web.dealing import LiveTable
from vision.web.pubsub import Pictures, RoundHistory, Subscribers, Subscription

__all__ = ["LiveFeed", "Subscription", "encode_jpeg", "PICTURE_DEMAND_S"]

#: Seconds one look at a table's pictures (its MJPEG stream, a snapshot, the pit's list of
#: thumbnails) keeps them coming where they are made only on demand
#: (:meth:`LiveFeed.want_pictures`; a pit's table workers, :class:`vision.pit.supervisor.
#: TableFeed`).
PICTURE_DEMAND_S = 5.0

log = logging.getLogger("vision.web")


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
        self.table_id = str(table_id)
        self.source = redact_url(source)  # shown on the page and the API: no credentials
        self.jpeg_quality = int(jpeg_quality)
        self.max_width = max_width
        self._lock = threading.Lock()  # guards the parts below (the subscribers have their own)
        self._control = AuditControl(audit, self._lock)  # acks and manual entries
        self._pictures = Pictures(30)  # the newest JPEG, frame counters, wake-ups
        self._rounds = RoundHistory(history)  # settled rounds shown, newest first
        self._table = LiveTable(dealing_frames)  # live positions and alerts, dealing streaks
        self._subscribers = Subscribers()
        self._status = "idle"
        self._error: str | None = None
        self._wanted_until = 0.0  # time.monotonic() until which pictures are looked at
        self._thread: threading.Thread | None = None
        self.stopping = threading.Event()

    @property
    def audit(self) -> str | None:
        """The audit store's path or URL where the page's acknowledgements and manual entries
        are recorded (None: refused)."""
        return self._control.audit

    @property
    def dealing_frames(self) -> int:
        """Published frames a position with fewer than four tiles stays "being dealt"."""
        return self._table.dealing_frames

    @property
    def _frame_times(self):
        """``time.monotonic()`` of the last 30 published frames (a deque; tests age it)."""
        return self._pictures.times

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
        self._subscribers.close_all()
        self._pictures.notify()

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
        self._pictures.notify()

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
            self._table.see(live, alerts, reading, self._rounds.last())
            self._pictures.put(jpeg, frame_index, now)
        self._pictures.notify()

    def publish_event(self, event: RoundEvent | Mapping) -> None:
        """Publish one round event (a :class:`vision.schema.RoundEvent` or its JSON form) to
        the state and every subscriber. A manual record of a round already shown (a
        supervisor's entry) takes the shown round's place in the history."""
        ev = event.to_dict() if isinstance(event, RoundEvent) else dict(event)
        with self._lock:
            self._rounds.add(ev)
            # a round just reported is the table's until a frame shows the table changed
            self._table.round_reported()
            subs = self._subscribers.members()  # with the round: no subscriber misses it
        Subscribers.send(ev, subs)

    # -- consumers -------------------------------------------------------------------------
    def latest_jpeg(self) -> bytes | None:
        """The latest annotated picture as JPEG bytes (None before the first frame)."""
        with self._lock:
            return self._pictures.jpeg

    def latest_frame(self) -> tuple[int, bytes | None]:
        """``(version, jpeg)``: pass the version to :meth:`wait_frame` / :meth:`next_frame`."""
        with self._lock:
            return self._pictures.version, self._pictures.jpeg

    def wait_frame(self, after: int, timeout: float | None = None) -> tuple[int, bytes | None]:
        """Block until something newer than version ``after`` is published (or ``timeout``
        s, or the feed stops); returns :meth:`latest_frame`."""
        if not self.closed:
            self._pictures.notifier.wait(after, timeout)
        return self.latest_frame()

    async def next_frame(self, after: int, timeout: float | None = None
                         ) -> tuple[int, bytes | None]:
        """Async :meth:`wait_frame`."""
        if not self.closed:
            await self._pictures.notifier.async_wait(after, timeout)
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

    #: the pictures are made only while someone looks (:meth:`want_pictures`); this base
    #: feed publishes whatever is pushed to it
    pictures_on_demand = False

    def want_pictures(self) -> bool:
        """Someone looks at the pictures (the MJPEG stream on each picture, a snapshot, the
        pit's thumbnails): they are wanted for :data:`PICTURE_DEMAND_S` seconds more. Where
        they are made only on demand (:attr:`pictures_on_demand`) nobody watching costs no
        drawing or JPEG encoding (issue 45: about 10 % of a core a table at 10 pictures a
        second on the 2-core box). Returns True when they were wanted already."""
        now = time.monotonic()
        with self._lock:
            was = self._wanted_until > now
            self._wanted_until = now + PICTURE_DEMAND_S
        if not was:
            self._on_demand()
        return was

    def pictures_wanted(self) -> bool:
        """True while someone looked at the pictures in the last :data:`PICTURE_DEMAND_S`
        seconds (:meth:`want_pictures`)."""
        with self._lock:
            return self._wanted_until > time.monotonic()

    def _on_demand(self) -> None:
        """Hook: pictures are wanted after none were (a feed that makes them only on demand
        starts now)."""

    def picture_age(self) -> float | None:
        """Seconds since the last picture was published (None before the first)."""
        with self._lock:
            return self._pictures.age()

    def history(self) -> list[dict]:
        """The settled round events kept (``history`` of them), newest first."""
        with self._lock:
            return list(self._rounds)

    @property
    def subscriber_count(self) -> int:
        """Open subscriptions (event stream clients)."""
        return len(self._subscribers)

    def subscribe(self, maxsize: int = 100) -> Subscription:
        """A :class:`Subscription` receiving every round settled from now on (closed at once
        when the feed has stopped)."""
        sub = self._subscribers.subscribe(maxsize)
        if self.closed:  # after joining: stop() closes it, or it is closed here
            sub.close()
        return sub

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
        pics, table = self._pictures, self._table
        with self._lock:
            last = self._rounds.last()
            st = {
                "table_id": (last or {}).get("table_id", self.table_id) if last else self.table_id,
                "source": self.source,
                "status": self._status,
                "error": self._error,
                "frame_index": pics.index,
                "frames": pics.count,
                "fps": round(pics.fps(), 2),
                "updated": pics.updated,
                "has_picture": pics.jpeg is not None,
                "live": {"positions": dict(table.positions),
                         "alerts": list(table.alerts)},
                "last_round": last,
                "last_round_on_table": bool(last) and table.last_current,
                "round_count": self._rounds.count,
                "rounds": list(self._rounds),
            }
        from vision.web.health import feed_view

        st["feed"] = feed_view(self)
        st["positions"] = positions_view(last)
        rid = (last or {}).get("round_id")
        acked = self._control.acknowledged
        st["alerts"] = [dict(a, say=plain_reason(a.get("position"), a.get("detail"),
                                                 a.get("kind")),
                             acknowledged=acked(rid, a.get("kind"), a.get("position")))
                        for a in (last or {}).get("alerts") or []]
        for v in st["positions"].values():
            for a in v["alerts"]:
                a["acknowledged"] = acked(rid, a["kind"], v["position"])
        st["settled_by"] = "manual" if (last or {}).get("kind") == "manual" else (
            "camera" if last else None)
        st["audit"] = self.audit is not None
        # the face picker: per tile the camera did not read (or a face entered by hand), the
        # faces the set still holds for it (vision.audit.entries.possible_faces)
        st["manual_faces"] = manual_faces(last)
        st["rounds"] = [round_summary(e) for e in st["rounds"]]
        return st

    # -- control (vision.web.control) ------------------------------------------------
    def acknowledge(self, round_id: str, kind: str, position: str | None,
                    by: str | None = None, note: str | None = None) -> dict:
        """Control action: acknowledge one alert of a shown round, recorded in the audit
        store (:func:`vision.audit.entries.append_ack`).

        Returns:
            ``{"ok": True, "action": "ack", "record": seq, "round_id", "kind", "position"}``.

        Raises:
            InputError: no audit store, a round not shown, an alert the round does not have.
        """
        out = self._control.acknowledge(self.history(), round_id, kind, position, by=by,
                                        note=note)
        self._pictures.notify()
        return out

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
        out, event = self._control.manual_entry(self.history(), round_id, entries, by=by,
                                                correction=correction)
        self.publish_event(event)
        self._pictures.notify()
        return out

    def reset(self) -> dict:
        """Control action: forget the current round (the next stable table opens a new one).

        Returns:
            ``{"ok": True, "action": "reset"}`` plus whatever :meth:`_reset` adds.
        """
        extra = self._reset() or {}
        with self._lock:
            self._table.clear()
        self._pictures.notify()
        return {"ok": True, "action": "reset", **extra}

    def _reset(self) -> dict | None:
        """Hook: reset the round tracking (subclasses)."""
        return None
