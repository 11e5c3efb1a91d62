"""Live feeds for the dealer display: what the web app (:mod:`vision.web.app`) shows.

A :class:`LiveFeed` runs in a background thread and publishes three things:

- the latest annotated picture as JPEG bytes (:meth:`LiveFeed.latest_jpeg`; consumers can wait
  for the next one with :meth:`LiveFeed.wait_frame` / :meth:`LiveFeed.next_frame`);
- the current view (:meth:`LiveFeed.state`): per position the hands, result, net and alerts of
  the last settled round, and what the camera shows now (live reads);
- every settled round event (the dict of .agents/EVENT_SCHEMA.md) to each subscriber
  (:meth:`LiveFeed.subscribe` -> :class:`Subscription`, usable from threads and from asyncio).

Implementations:

- :class:`FakeFeed`: scripted frames and events (tests, demos); also driven by hand with
  :meth:`LiveFeed.publish_frame` / :meth:`LiveFeed.publish_event`.
- :class:`PipelineFeed`: frames from :func:`vision.capture.open_source` through
  :meth:`vision.pipeline.Pipeline.process` (``-> (annotated_frame, FrameResult)``).

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
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from scoring.errors import InputError

__all__ = [
    "LiveFeed",
    "FakeFeed",
    "PipelineFeed",
    "Subscription",
    "encode_jpeg",
    "positions_view",
    "live_positions_view",
    "event_from_deal",
]

log = logging.getLogger("vision.web")

#: Table order of positions (dealer first), as in :data:`scoring.settle.POSITIONS`.
POSITION_ORDER = ("dealer", "1", "2", "3", "4", "5", "6", "7")


def _utc_now_iso() -> str:
    from datetime import datetime, timezone

    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _order(pos: str) -> int:
    return POSITION_ORDER.index(pos) if pos in POSITION_ORDER else len(POSITION_ORDER)


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


# --------------------------------------------------------------------------- views


def _text(v) -> str | None:
    return None if v is None else str(v)


def positions_view(event: Mapping | None) -> dict[str, dict]:
    """Per-position view of a settled round event, for the display.

    Returns:
        position -> ``{"position", "role" ("banker"|"player"), "tiles", "high", "low",
        "high_hand", "low_hand", "result" ("win"|"lose"|"push"|"not_settled", or "in_play"
        while the position has no result yet; for the banker
        derived from its net: "win"/"lose"/"push"), "net", "bet", "commission", "mis_set",
        "is_house_way", "reason", "alerts" (this position's ``{"kind", "detail"}``)}``, in
        table order. Money values stay exact decimal strings.
    """
    if not event:
        return {}
    banker = event.get("banker_position", "dealer")
    alerts: dict[str, list[dict]] = {}
    for a in event.get("alerts") or []:
        if isinstance(a, Mapping):
            alerts.setdefault(str(a.get("position")), []).append(
                {"kind": str(a.get("kind", "alert")), "detail": a.get("detail")})
    out: dict[str, dict] = {}
    positions = event.get("positions") or {}
    for pos in sorted(positions, key=_order):
        p = positions[pos] or {}
        role = "banker" if (pos == banker or p.get("role") == "banker") else "player"
        result = p.get("result")
        net = _text(p.get("net"))
        if result is None and role == "banker":
            if net is None:
                result = "in_play"
            else:
                from decimal import Decimal, InvalidOperation

                try:
                    d = Decimal(net)
                    result = "win" if d > 0 else "lose" if d < 0 else "push"
                except InvalidOperation:
                    result = None
        out[pos] = {
            "position": pos,
            "role": role,
            "tiles": list(p.get("tiles") or []),
            "high": p.get("high"),
            "low": p.get("low"),
            "high_hand": p.get("high_hand"),
            "low_hand": p.get("low_hand"),
            "result": result or "in_play",
            "net": net,
            "bet": _text(p.get("bet")),
            "commission": _text(p.get("commission")),
            "mis_set": bool(p.get("mis_set", False)),
            "is_house_way": p.get("is_house_way"),
            "reason": p.get("reason"),
            "alerts": alerts.get(pos, []),
        }
    return out


def live_positions_view(positions: Mapping[str, Any] | None, rules: str = "pa"
                        ) -> dict[str, dict]:
    """Per-position view of what the camera shows now (not settled).

    Args:
        positions: position -> :class:`vision.table.PositionState` (or an already JSON-ready
            dict, passed through).
        rules: rule profile name for the hand names.

    Returns:
        position -> ``{"position", "tiles" (faces, None for unknown / face down), "high",
        "low", "high_hand", "low_hand", "status" ("set" | "problem"), "detail"}``.
    """
    out: dict[str, dict] = {}
    for pos in sorted(positions or {}, key=_order):
        st = positions[pos]
        if isinstance(st, Mapping):
            out[pos] = dict(st, position=pos)
            continue
        view: dict[str, Any] = {"position": pos,
                                "tiles": [getattr(r, "face", None) for r in st.tiles],
                                "high": None, "low": None, "high_hand": None, "low_hand": None,
                                "status": "set" if st.setting is not None else "problem",
                                "detail": getattr(st, "reason", None)}
        if st.setting is not None:
            c = st.setting.canonical()
            view["high"] = [t.face for t in c.high]
            view["low"] = [t.face for t in c.low]
            try:
                view["high_hand"] = st.setting.high_value(rules).name
                view["low_hand"] = st.setting.low_value(rules).name
            except Exception:  # noqa: BLE001 - names are decoration; never break the feed
                pass
        out[pos] = view
    return out


def _round_summary(event: Mapping) -> dict:
    view = positions_view(event)
    return {"round_id": event.get("round_id"), "time": event.get("time"),
            "frame_index": event.get("frame_index"),
            "results": {p: v["result"] for p, v in view.items() if v["role"] != "banker"},
            "banker_net": next((v["net"] for v in view.values() if v["role"] == "banker"), None),
            "alerts": len(event.get("alerts") or [])}


# --------------------------------------------------------------------------- feeds


class LiveFeed:
    """Base feed: shared state, publishing and consumer API (module docstring).

    Subclasses implement :meth:`_run` (the thread body: loop until :attr:`stopping` is set,
    calling :meth:`publish_frame` and :meth:`publish_event`) and optionally :meth:`_reset`.

    Args:
        table_id: shown on the page and in :meth:`state` (events carry their own).
        source: the source spec shown on the page.
        history: settled rounds kept for :meth:`state` (newest first).
        jpeg_quality: 1..100.
        max_width: pictures wider than this (px) are scaled down before JPEG encoding.
    """

    def __init__(self, *, table_id: str = "table-1", source: str = "", history: int = 20,
                 jpeg_quality: int = 80, max_width: int | None = 1280) -> None:
        self.table_id = str(table_id)
        self.source = str(source)
        self.jpeg_quality = int(jpeg_quality)
        self.max_width = max_width
        self._lock = threading.Lock()
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
            self._error = error
        self._frames.notify()

    # -- publishing -------------------------------------------------------------------------
    def publish_frame(self, image: np.ndarray | bytes | None, *, frame_index: int | None = None,
                      positions: Mapping[str, Any] | None = None,
                      alerts: Sequence[Mapping] | None = None, rules: str = "pa") -> None:
        """Publish the newest annotated picture and the live positions.

        Args:
            image: uint8 BGR (H, W, 3) array (encoded here) or JPEG bytes, or None to keep the
                previous picture.
            frame_index: the source's frame number.
            positions: position -> :class:`vision.table.PositionState` or view dict
                (:func:`live_positions_view`); None keeps the previous live view.
            alerts: live alerts ``[{"kind", "position", "detail"}]``; None keeps the previous.
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
            if live is not None:
                self._live_positions = live
            if alerts is not None:
                self._live_alerts = [dict(a) for a in alerts]
            if frame_index is not None:
                self._frame_index = int(frame_index)
            self._frame_count += 1
            self._frame_times.append(now)
            self._updated = _utc_now_iso()
        self._frames.notify()

    def publish_event(self, event: Mapping) -> None:
        """Publish one settled round event (EVENT_SCHEMA dict) to the state and every
        subscriber."""
        ev = dict(event)
        with self._lock:
            self._rounds.appendleft(ev)
            self._round_count += 1
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
            "last_round" (the full event or None), "live": {"positions"
            (:func:`live_positions_view`), "alerts"}, "rounds" (summaries, newest first),
            "round_count"}``.
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
                "round_count": self._round_count,
                "rounds": list(self._rounds),
            }
        st["positions"] = positions_view(last)
        st["alerts"] = list((last or {}).get("alerts") or [])
        st["rounds"] = [_round_summary(e) for e in st["rounds"]]
        return st

    # -- control ----------------------------------------------------------------------------
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


class FakeFeed(LiveFeed):
    """A scripted feed for tests and demos.

    Args:
        steps: played in order by the thread, each a mapping with any of ``"frame"`` (BGR
            array or JPEG bytes), ``"positions"`` (live view dicts), ``"alerts"``, ``"event"``
            (a settled round event) and ``"delay"`` (seconds to wait after the step, default
            ``interval_s``).
        interval_s: default pause between steps, seconds.
        loop: replay the steps until stopped.
        **kw: :class:`LiveFeed` arguments.

    Without steps the thread only waits; drive it with :meth:`publish_frame` and
    :meth:`publish_event` (deterministic tests). ``resets`` counts control resets.
    """

    def __init__(self, steps: Iterable[Mapping] = (), *, interval_s: float = 0.05,
                 loop: bool = False, **kw: Any) -> None:
        kw.setdefault("source", "fake")
        super().__init__(**kw)
        self.steps = [dict(s) for s in steps]
        self.interval_s = float(interval_s)
        self.loop = bool(loop)
        self.resets = 0

    def _run(self) -> None:
        if not self.steps:
            self.stopping.wait()
            return
        while not self.stopping.is_set():
            for i, step in enumerate(self.steps):
                if self.stopping.is_set():
                    return
                if any(k in step for k in ("frame", "positions", "alerts")):
                    self.publish_frame(step.get("frame"), frame_index=step.get("frame_index", i),
                                       positions=step.get("positions"), alerts=step.get("alerts"))
                if step.get("event") is not None:
                    self.publish_event(step["event"])
                if self.stopping.wait(float(step.get("delay", self.interval_s))):
                    return
            if not self.loop:
                return

    def _reset(self) -> dict:
        self.resets += 1
        return {"resets": self.resets}


class PipelineFeed(LiveFeed):
    """Frames from a source through the recognition pipeline, published live.

    Reads frames with :func:`vision.capture.open_source` (files: every frame, paced to the
    frames' timestamps when ``realtime``; cameras and streams: newest frame), runs
    :meth:`vision.pipeline.Pipeline.process` (``frame -> (annotated_frame, FrameResult)``) and
    publishes the annotated picture, the live positions and each settled round event.

    Args:
        source: camera index, URL, video file, image file, folder or glob (see
            :mod:`vision.capture`).
        layout: layout YAML path or :class:`vision.table.Layout` (None: automatic grouping).
        models_dir: folder with ``tiles.onnx`` / ``pips.onnx`` (or ``.pt``); default
            :data:`vision.MODELS_DIR`.
        backend: ``"onnx"`` (onnxruntime) or ``"ultralytics"``.
        loop: replay a file source from the start when it ends (demos).
        realtime: pace file sources to their timestamps (False: as fast as the pipeline runs).
        pipeline: an already built pipeline object with ``process(frame)`` (tests); the
            models are not loaded then.
        pipeline_kwargs: extra keyword arguments for ``Pipeline(...)`` (e.g. ``n_stable``,
            ``table_id``, ``banker``, or ``tile_detector`` / ``pip_detector`` to inject
            detectors); ``source`` defaults to the source spec.
        **kw: :class:`LiveFeed` arguments.

    Raises:
        InputError: bad source (from :func:`vision.capture.open_source`), bad layout, missing
            models (from the pipeline), unknown backend.
    """

    def __init__(self, source: str | Path, layout: Any = None,
                 models_dir: str | Path | None = None, backend: str = "onnx", *,
                 loop: bool = False, realtime: bool = True, pipeline: Any = None,
                 pipeline_kwargs: Mapping[str, Any] | None = None, **kw: Any) -> None:
        from vision.capture import open_source

        if backend not in ("onnx", "ultralytics"):
            raise InputError(f"unknown backend {backend!r} (onnx, ultralytics)")
        spec = str(source)
        kw.setdefault("source", spec)
        self._open_source: Callable[[], Any] = lambda: open_source(spec)
        self._src = self._open_source()  # InputError for a bad source, before any model load
        self.loop = bool(loop)
        self.realtime = bool(realtime)
        self._reset_requested = threading.Event()
        if pipeline is None:
            try:
                from vision.pipeline import Pipeline
            except ImportError as exc:
                self._src.close()
                raise InputError(f"the recognition pipeline is not available: {exc}") from None
            from vision import MODELS_DIR

            extra = dict(pipeline_kwargs or {})
            extra.setdefault("source", spec)
            try:
                pipeline = Pipeline(layout=layout, models_dir=models_dir or MODELS_DIR,
                                    backend=backend, **extra)
            except BaseException:
                self._src.close()
                raise
        self.pipeline = pipeline
        kw.setdefault("table_id", getattr(pipeline, "table_id", None) or "table-1")
        super().__init__(**kw)
        self.rules = str(getattr(pipeline, "rules", None) or "pa")

    # -- thread ------------------------------------------------------------------------------
    def _run(self) -> None:
        src = self._src
        try:
            while not self.stopping.is_set():
                t0: float | None = None
                first_ts: float | None = None
                live = bool(getattr(src, "live", False)) or \
                    getattr(src, "kind", "") in ("camera", "stream")
                for frame in src:
                    if self.stopping.is_set():
                        return
                    if self._reset_requested.is_set():
                        self._reset_requested.clear()
                        self._reset_pipeline()
                    if self.realtime and not live:  # pace a file to its timestamps
                        if t0 is None:
                            t0, first_ts = time.monotonic(), float(frame.timestamp)
                        wait = (float(frame.timestamp) - first_ts) - (time.monotonic() - t0)
                        if wait > 0 and self.stopping.wait(wait):
                            return
                    self._process(frame)
                if not self.loop or live:
                    return
                src.close()
                src = self._src = self._open_source()
                self._reset_pipeline()
        finally:
            src.close()

    def _process(self, frame) -> None:
        annotated, result = self.pipeline.process(frame)
        positions, alerts, events = _result_parts(result)
        self.publish_frame(annotated if annotated is not None else frame.image,
                           frame_index=frame.index, positions=positions, alerts=alerts,
                           rules=self.rules)
        for ev in events:
            self.publish_event(ev)

    def _reset_pipeline(self) -> None:
        for name in ("reset", "new_round"):
            fn = getattr(self.pipeline, name, None)
            if callable(fn):
                fn()
                return
        tracker = getattr(self.pipeline, "tracker", None)
        if tracker is not None and callable(getattr(tracker, "reset", None)):
            tracker.reset()

    def _on_stop(self) -> None:
        # a live source may block waiting for a camera: closing it (thread-safe) ends the
        # iteration; file sources are closed by the feed thread itself
        src = self._src
        if getattr(src, "live", False):
            src.close()

    def _reset(self) -> dict:
        self._reset_requested.set()  # applied in the feed thread, between frames
        return {"pending": True}


def _result_parts(result: Any) -> tuple[Any, list[dict] | None, list[dict]]:
    """``(positions, live alerts, settled events)`` from a pipeline ``FrameResult`` (an object
    or a dict; attribute names as in vision.pipeline: ``positions``, ``alerts``, ``event`` or
    ``events``)."""
    if result is None:
        return None, None, []

    def get(name: str):
        if isinstance(result, Mapping):
            return result.get(name)
        return getattr(result, name, None)

    events: list[dict] = []
    ev = get("event")
    if isinstance(ev, Mapping):
        events.append(dict(ev))
    more = get("events")
    if isinstance(more, (list, tuple)):
        events += [dict(e) for e in more if isinstance(e, Mapping) and e not in events]
    positions = get("positions")
    if positions is not None and not isinstance(positions, Mapping):
        positions = None
    alerts = get("alerts")
    if alerts is not None:
        alerts = [dict(a) if isinstance(a, Mapping) else {"kind": "alert", "detail": str(a)}
                  for a in alerts]
    return positions, alerts, events


# --------------------------------------------------------------------------- scripted events


def event_from_deal(deal: Mapping[str, Sequence[str]], round_id: str = "r000001", *,
                    table_id: str = "table-1", bets: Mapping[str, str] | None = None,
                    rules: str = "pa", frame_index: int = 0, source: str = "scripted") -> dict:
    """A real settled round event for a deal, computed by the scoring engine (no vision):
    the tiles are taken as read exactly, each position's first two faces one hand and the last
    two the other (like :func:`vision.synth.render_table`'s ``deal``).

    Args:
        deal: position (``"dealer"``, ``"1".."7"``) -> 4 faces (``"low-high"``).
        round_id, table_id, frame_index, source: event header fields.
        bets: position -> wager (exact decimal text; default 1).
        rules: rule profile.

    Returns:
        The EVENT_SCHEMA dict (via :func:`vision.events.round_event`), with the integrity
        alerts of :func:`vision.alerts.round_alerts` merged in.

    Raises:
        InputError: a bad face or position.
    """
    from scoring.tiles import TILES_BY_FACE
    from vision.decode import TileRead
    from vision.events import round_event
    from vision.table import RoundTracker, build_positions

    groups = {}
    for k, (pos, faces) in enumerate(deal.items()):
        reads = []
        for i, face in enumerate(faces):
            if face not in TILES_BY_FACE:
                raise InputError(f"unknown tile face {face!r} at position {pos!r}")
            # two hands lying together: tiles 0,1 touch, 2,3 touch, hands apart
            x = 1000.0 * k + (0 if i < 2 else 300) + 60 * (i % 2)
            poly = np.array([[x, 0], [x + 50, 0], [x + 50, 100], [x, 100]], np.float32)
            reads.append(TileRead(face, "face_up", 0.99, poly,
                                  np.array([x, 0, x + 50, 100], np.float32)))
        groups[str(pos)] = reads
    positions = build_positions(groups, rules)
    tracker = RoundTracker(n_stable=1, rules=rules, bets=bets)
    rnd = tracker.update(positions, {"index": frame_index})
    if rnd is None:
        raise InputError("the deal did not settle (no dealer position?)")
    from vision.alerts import merge_alerts, round_alerts

    ev = round_event(rnd, round_id, table_id=table_id, source=source,
                     frame_index=frame_index, model_version="scripted")
    ev["alerts"] = merge_alerts(ev["alerts"], round_alerts(ev))
    return ev
