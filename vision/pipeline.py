"""The per-frame process: gate, detect, decode, group, track, settle, draw (no I/O).

:class:`Pipeline` takes one frame at a time and returns the annotated frame and a
:class:`FrameResult` (the reads, the positions, and the :class:`vision.schema.RoundEvent` when
the frame ends a round). It is the only module that knows every stage
(docs/architecture.md); reading sources and writing results is the session's
(:mod:`vision.session`), still images are :mod:`vision.recognition.identify`'s.

Speed (the target is >= 10 fps at 1080p with 32 tiles on 2 CPU cores) comes from two caches,
both safe because anything that changes the picture of a tile invalidates them: the motion gate
in front of the tile detector (:mod:`vision.recognition.gate`) and the identity cache in front of the pip
model (:mod:`vision.recognition.identity`). On a still table the per-frame cost is then the thumbnail
comparison, the table logic and the drawing -- and the drawing only where a picture is looked at:
the session asks its sinks (:meth:`vision.io.sinks.Sink.wants_picture`) and, when none wants
this frame's picture, the frame is not drawn unless a round keeps it as its key frame
(``process(frame, draw=False)``; about 5 ms of CPU a 1080p frame saved, the key frames byte for
byte the same). Independent still images use neither cache; each
is read at several detector input sizes and the reads fused (``ReadMode.STILL`` of
:class:`vision.recognition.engine.RecognitionEngine`, :mod:`vision.recognition.scales`).

Measured (2-core machine, no other job; ``scripts/bench_run.py --deal 60 --still 60``:
``paigow run`` on a 1080p mp4 of a rendered round, 32 face-up tiles, ONNX Runtime): 17.5 fps
end to end (video decoding and annotated-video writing included); ``Pipeline.process`` 64 ms
mean (15.6 fps) on the 60 frames whose picture changes, 19 ms (53 fps) on the still ones.
Without the caches every frame costs about 200-220 ms (``scripts/bench_vision.py``). Timings
per stage (capture, detect, decode, score, draw) are kept in seconds and reported by
:meth:`Pipeline.summary` (mean ms per frame and fps).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from scoring.errors import InputError

from vision.config import PipelineConfig
from vision.sources import redact_url
from vision.io.views import round_view
from vision.recognition.decode import TileRead
from vision.recognition.engine import Detectors, ReadMode, RecognitionEngine
from vision.schema import RoundEvent, TileRecord
from vision.table.events import build_round
from vision.table.rounds import (FrameHeader, PositionState, RoundTracker, SettledRound,
                                 build_positions, position_of)
from vision.table.seats import group_seats

__all__ = ["Pipeline", "FrameResult", "STAGES", "LIVE_FPS", "WORTH_OUTLINES"]

#: Live: an unknown tile gets a second look only in a position holding at least this many
#: outlines (face up or unknown; a position holds four tiles): :meth:`Pipeline.worth_a_look`.
WORTH_OUTLINES = 2

STAGES = ("capture", "detect", "decode", "score", "draw")

#: Live sources: the stability window is ``n_stable`` frames of a camera at this rate, in
#: seconds of the camera's clock (``(n_stable - 1) / LIVE_FPS``: 0.6 s for 10), with at least
#: :data:`vision.table.rounds.MIN_FRAMES` frames (:meth:`Pipeline.set_live`).
LIVE_FPS = 15.0


@dataclass
class FrameResult:
    """Everything the pipeline learnt from one frame.

    Attributes:
        index: frame index in the source; timestamp: seconds; source: spec; path: the file the
            frame came from (image file or video file; None for cameras and streams).
        reads: the :class:`vision.recognition.decode.TileRead` of every detected tile.
        tile_positions: position id (or None) of each read, same order.
        positions: position id -> :class:`vision.table.rounds.PositionState` (positions with tiles).
        settled: the :class:`vision.table.rounds.SettledRound` when this frame ended a round.
        round: the :class:`vision.schema.RoundEvent` of that round (settled or not).
        key_frame: the picture stored with the round (the annotated frame that showed it).
        timings: stage -> seconds spent on this frame (detect, decode, score, draw).
        decoded: how many tiles were decoded afresh (the rest came from the cache).
        provisional: live: the reads are a first look not yet vetted by the fused still
            reading (being made beside the loop): shown, never settled on.
    """

    index: int
    timestamp: float
    source: str
    path: str | None
    reads: list[TileRead]
    tile_positions: list[str | None]
    positions: dict[str, PositionState]
    settled: SettledRound | None = None
    round: RoundEvent | None = None
    key_frame: np.ndarray | None = None
    timings: dict[str, float] = field(default_factory=dict)
    decoded: int = 0
    provisional: bool = False

    @property
    def event(self) -> dict | None:
        """The round event in its JSON form (``round.to_dict()``), or None."""
        if self.round is None:
            return None
        if getattr(self, "_event", None) is None or self._event["round_id"] != self.round.round_id:
            self._event = self.round.to_dict()
        return self._event

    @property
    def alerts(self) -> list[dict]:
        """Live alerts of this frame: ``{"kind", "position", "detail"}`` for every position
        problem (``unknown_tile``, ``wrong_tile_count``; face-down tiles are not alerts)."""
        return [{"kind": k, "position": p, "detail": d}
                for p, st in self.positions.items() for k, d in st.problems if k != "face_down"]


class _Deferred:
    """An annotated picture not drawn yet: the frame and its round view at the time
    (:meth:`Pipeline.round_view`), drawn by :func:`vision.io.overlay.draw_round` -- as
    :meth:`Pipeline.draw` would have drawn it then -- the first time :meth:`get` is called.

    Attributes:
        image: uint8 (H, W, 3) BGR, the frame (not copied: it must not change).
        view: the round view dict of that frame.
    """

    __slots__ = ("image", "view", "_out")

    def __init__(self, image: np.ndarray, view: dict) -> None:
        self.image, self.view, self._out = image, view, None

    def get(self) -> np.ndarray:
        """The annotated picture, uint8 (H, W, 3) BGR (drawn once)."""
        if self._out is None:
            from vision.io.overlay import draw_round

            self._out = draw_round(self.image, self.view)
        return self._out


def _drawn(picture):
    """A pending picture as an array (a :class:`_Deferred` drawn now), or None."""
    return picture.get() if isinstance(picture, _Deferred) else picture


class Pipeline:
    """Detect, decode, group, track and settle, frame by frame.

    Args:
        config: a :class:`vision.config.PipelineConfig` (validated); None builds one from
            ``options``.
        tile_detector, pip_detector, second_detector: inject detectors (tests; a
            :class:`vision.recognition.engine.Detectors` as ``tile_detector`` also does):
            then no model files are read, and every strategy of the configuration runs on
            them as on the models (:class:`vision.recognition.engine.RecognitionEngine`).
        options: flat settings for :meth:`vision.config.PipelineConfig.build` when no config
            is given (``layout``, ``n_stable``, ``banker``, ``motion_threshold``, ``draw``...).

    Raises:
        InputError: bad settings, missing/corrupt models, bad layout file.
    """

    def __init__(self, config: PipelineConfig | None = None, *, tile_detector=None,
                 pip_detector=None, second_detector=None, **options: Any) -> None:
        if config is None:
            config = PipelineConfig.build(**options)
        elif options:
            raise InputError(f"give a PipelineConfig or settings, not both: {sorted(options)}")
        self.config = cfg = config
        tab = cfg.table
        injected = (None if tile_detector is None and pip_detector is None else
                    tile_detector if isinstance(tile_detector, Detectors) else
                    Detectors(tile_detector, pip_detector, second_detector))
        if injected is not None and (injected.tile is None or injected.pip is None):
            raise InputError("inject both a tile and a pip detector, or neither")
        #: recognition (:class:`vision.recognition.engine.RecognitionEngine`): what it does is
        #: the configuration's, whatever detectors it was given
        self.engine = RecognitionEngine(cfg.recognition, cfg.gate, cfg.cache, injected)
        self.model_version = self.engine.model_version
        self.layout = cfg.layout
        self._checked_size: tuple | None = None  # picture size the layout was checked against
        self.banker, self.rules, self.table_id = tab.banker, tab.rules, tab.table_id
        self.n_stable = tab.n_stable or 10
        self.tracker = RoundTracker(n_stable=self.n_stable, banker=tab.banker, rules=tab.rules,
                                    commission=tab.commission, house_way=tab.house_way,
                                    bets=dict(tab.bets), co_bank=tab.co_bank)
        #: independent still images: no motion gate, no identity cache, no decode budget
        self.still_images = False
        self.source = redact_url(cfg.source) if cfg.source is not None else cfg.source
        self._pending_picture: np.ndarray | None = None
        self.round_no = 0
        #: round ids continue from here (``r{round_base + round_no:06d}``); the session sets
        #: it from the audit store so a restarted table keeps unique round ids
        self.round_base = 0
        self.last_event: dict | None = None
        self.totals = {s: 0.0 for s in STAGES}
        self.frames = 0
        self.decoded_total = 0
        self.tiles_total = 0
        #: a live source (:meth:`set_live`)
        self.live = False
        self._still_from: float | None = None  # camera time the picture last moved

    def set_live(self, on: bool = True) -> None:
        """A live source (a camera, a stream, a recording played in real time): the fused
        still reading runs beside the frame loop (:meth:`vision.recognition.engine.
        RecognitionEngine.set_background`; its first look is shown as provisional, never
        settled on) and stability is measured on the camera's clock, ``(n_stable - 1) /``
        :data:`LIVE_FPS` seconds with at least :data:`vision.table.rounds.MIN_FRAMES` frames
        (a table that falls behind still settles; one that keeps up is not slower). Off:
        both as for files read as fast as possible (the same frames give the same rounds)."""
        from vision.table.rounds import MIN_FRAMES

        self.live = bool(on)
        self.engine.set_background(self.live and not self.still_images)
        self.engine.unread_worth = self.worth_a_look if self.live else None
        tr = self.tracker
        if self.live and self.n_stable > 1:
            tr.stable_s = (self.n_stable - 1) / LIVE_FPS
            tr.min_frames = min(MIN_FRAMES, self.n_stable)
        else:
            tr.stable_s = None

    @property
    def reading(self) -> bool:
        """True while a live table's still reading runs beside the frame loop."""
        return self.engine.still_pending

    @property
    def resting(self) -> bool:
        """True when the last frame was a still table answered by its standing reading
        (nothing ran, nothing moved): live, the loop may take fewer frames until something
        moves (:data:`vision.session.RESTING_FPS`)."""
        return bool(getattr(self.engine, "standing", False))

    def wait_reading(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds while a live table's still reading runs beside the
        loop, no longer than until it lands (:meth:`vision.recognition.engine.
        RecognitionEngine.wait_reading`)."""
        self.engine.wait_reading(timeout)

    def close(self) -> None:
        """Stop what runs beside the loop (the background still reading)."""
        self.engine.close()

    def worth_a_look(self, reads: Sequence[TileRead], unknown: list[TileRead],
                     frame_size: tuple[int, int]) -> list[TileRead]:
        """Live: the reads of ``unknown`` (a subset of ``reads``, image px) whose second look
        could change a settlement -- those lying in a position that holds at least
        :data:`WORTH_OUTLINES` outlines face up or unknown. An unknown in no position (felt
        lettering, a chip: a tile in no position is reported, never settled) or alone in one
        (a position holds four tiles) is left unread: on bench_live's 1080p tables such
        lettering cost each reading a second look of 0.5-1.3 s (2026-12-05). Where the
        positions cannot be placed (no layout and no fit of the table model) every unknown is
        kept. Pure (called from the reading beside the loop, :meth:`set_live`)."""
        where, g = self._where(reads, frame_size)
        if g is not None and not g.groups:
            return list(unknown)
        held = Counter(p for r, p in zip(reads, where) if p is not None
                       and r.state != "face_down")
        at = {id(r): p for r, p in zip(reads, where)}
        return [u for u in unknown if at.get(id(u)) is not None
                and held[at[id(u)]] >= WORTH_OUTLINES]

    def _where(self, reads: Sequence[TileRead], frame_size: tuple[int, int]):
        """``(position per read or None, the seat grouping or None with a layout)``: the
        layout's positions or, without one, :func:`vision.table.seats.group_seats`. Pure."""
        layout = self.layout  # once: the layout editor may replace it meanwhile
        if layout is not None:
            return position_of(reads, layout), None
        g = group_seats(reads, frame_size)
        ids = {id(r): p for p, rs in g.groups.items() for r in rs}
        return [ids.get(id(r)) for r in reads], g

    def group(self, reads: Sequence[TileRead], frame_size: tuple[int, int]):
        """``(position per read, groups)`` from the layout or, without one, seats named by
        table place (:func:`vision.table.seats.group_seats`); the seats whose grouping is unclear
        are in :attr:`seat_problems` (position -> ``[(kind, reason)]``), never settled."""
        self.seat_problems: dict[str, list[tuple[str, str]]] = {}
        #: why no position could be named in this frame (no layout, no table model fit)
        self.placement: str | None = None
        where, g = self._where(reads, frame_size)
        if g is not None:
            self.seat_problems = {p: list(v) for p, v in g.problems.items()}
            if g.reason is not None and any(r.state != "face_down" for r in reads):
                # not placed another way: seat numbers guessed here could pay the wrong seat
                # (a layout, checked by the user, pins them: paigow layout propose)
                self.placement = (f"no layout: the positions could not be placed "
                                  f"({g.reason}); give a layout (paigow layout propose)")
        groups: dict[str, list[TileRead]] = {}
        for r, p in zip(reads, where):
            if p is not None:
                groups.setdefault(p, []).append(r)
        return where, groups

    # ------------------------------------------------------------------ one frame
    def process(self, frame: Any, draw: bool = True) -> tuple[np.ndarray, FrameResult]:
        """Run every stage on one frame.

        Args:
            frame: a :class:`vision.io.capture.Frame` or a uint8 (H, W, 3) BGR array.
            draw: return this frame annotated. False (the session, when no sink looks at this
                frame's picture): the frame itself is returned and the annotated picture is
                drawn only if a round takes it as its key frame (the same picture, drawn from
                the view of this frame, :class:`_Deferred`); the frame's pixels must then stay
                unchanged (a capture's frames are new arrays).

        Returns:
            ``(annotated frame uint8 (H, W, 3) -- the frame itself with ``draw=False`` --,
            FrameResult)``.

        Raises:
            InputError: the frame is not an (H, W, 3) image.
        """
        if isinstance(frame, np.ndarray):
            image, index, ts, src, path = frame, self.frames, self.frames / 30.0, self.source, None
        else:
            image, index, ts = frame.image, frame.index, frame.timestamp
            src, path = frame.source or self.source, frame.path
        if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] != 3:
            raise InputError(f"frame must be an (H, W, 3) image, got {getattr(image, 'shape', image)!r}")
        if path is None and src and Path(str(src)).is_file():
            path = str(src)  # a video file names its frames' file
        if self.layout is not None and self._checked_size != image.shape[:2]:
            self.layout.check_frame(image.shape[1], image.shape[0])  # InputError: bad layout
            self._checked_size = image.shape[:2]
        t0 = time.perf_counter()
        got = self.engine.read(image, ReadMode.STILL if self.still_images else ReadMode.VIDEO,
                               clock=ts)
        reads, n_dec, stale = list(got.tiles), got.decoded, got.stale
        t2 = time.perf_counter()
        t1 = t0 + got.timings.get("detect", t2 - t0)
        where, groups = self.group(reads, (image.shape[1], image.shape[0]))
        positions = build_positions(groups, self.rules, problems=self.seat_problems)
        settled = None
        if got.still_frames == 0 or got.stale:
            self._still_from = ts  # the picture moved here (or is a still image)
        # live: a fused reading of a picture that has not moved since _still_from holds for
        # every frame since then (the motion gate), so the run of what it shows began there
        since = (self._still_from if self.live and got.vetted and self._still_from is not None
                 else None)
        if not stale:  # a frame with outdated detections does not count for stability
            tiles = [TileRecord.from_read(r, p) for r, p in zip(reads, where)]
            loose = [r for r, p in zip(reads, where) if p is None]
            settled = self.tracker.update(positions, FrameHeader(index, ts, src, path,
                                                                 tuple(tiles)),
                                          loose=loose, placement=self.placement,
                                          provisional=got.provisional, since=since)
        key = self._pending_picture
        rnd = self._round(settled) if settled is not None else None
        t3 = time.perf_counter()
        res = FrameResult(index, ts, src, path, reads, where, positions, settled, rnd,
                          decoded=n_dec, provisional=got.provisional)
        if not self.config.draw:
            out = picture = image
        elif draw:
            out = picture = self.draw(image, res)
        else:  # nobody looks at it now: drawn only if a round keeps it (its view of now)
            out, picture = image, _Deferred(image, self.round_view(res))
        t4 = time.perf_counter()
        if rnd is not None:
            res.key_frame = _drawn(picture if settled.result is not None or key is None
                                   else key)
        if (positions or any(p is None and r.state != "face_down" for r, p in zip(reads, where))
                ) and not stale:
            self._pending_picture = picture
        elif rnd is not None:
            self._pending_picture = None
        res.timings = dict(detect=t1 - t0, decode=t2 - t1, score=t3 - t2, draw=t4 - t3)
        for k, v in res.timings.items():
            self.totals[k] += v
        self.frames += 1
        self.decoded_total += n_dec
        self.tiles_total += sum(r.state != "face_down" for r in reads)
        self.engine.tick()
        return out, res

    def _round(self, settled: SettledRound) -> RoundEvent:
        """The round event of a tracked round (its own frame's header fields)."""
        self.round_no += 1
        f = settled.frame
        rnd = build_round(settled, f"r{self.round_base + self.round_no:06d}", self.table_id,
                          f.source or self.source, f.index, model_version=self.model_version,
                          tiles=None if f.tiles is None else list(f.tiles),
                          source_file=f.path)
        self.last_event = rnd.to_dict()
        return rnd

    def set_layout(self, layout) -> None:
        """Use ``layout`` (a :class:`vision.table.rounds.Layout`, or None for none) from the next frame
        on (the layout editor of ``paigow serve`` saves and hands it over; the frame being
        processed keeps the one it started with)."""
        self.layout = layout
        self._checked_size = None

    def flush(self) -> FrameResult | None:
        """End of the source (or of one still image): the open round that never settled, as a
        FrameResult with its unsettled :class:`vision.schema.RoundEvent` (None if none)."""
        settled = self.tracker.flush()
        if settled is None:
            return None
        rnd = self._round(settled)
        f = settled.frame
        res = FrameResult(f.index, f.timestamp, f.source, f.path, [], [],
                          dict(settled.positions), settled, rnd,
                          key_frame=_drawn(self._pending_picture))
        self._pending_picture = None
        return res

    def round_view(self, res: FrameResult) -> dict:
        """The overlay's view of a frame (:func:`vision.io.views.round_view`)."""
        return round_view(res, rules=self.rules, banker=self.banker, table_id=self.table_id,
                          layout=self.layout, last_event=self.last_event,
                          round_open=self.tracker.open, is_final=self.tracker.is_final)

    def draw(self, image: np.ndarray, res: FrameResult) -> np.ndarray:
        """Annotated copy of ``image`` (:func:`vision.io.overlay.draw_round` of
        :meth:`round_view`)."""
        from vision.io.overlay import draw_round

        return draw_round(image, self.round_view(res))

    def reset(self) -> None:
        """Forget tracking state and the caches (a new, unrelated source or image); call
        :meth:`flush` first to keep an open round."""
        self.engine.reset()
        self.tracker.reset()
        self._pending_picture = None
        self._still_from = None

    def summary(self, capture_s: float = 0.0, wall_s: float | None = None) -> dict:
        """Per-stage mean milliseconds per frame and fps (processing and wall clock)."""
        n = max(self.frames, 1)
        totals = dict(self.totals, capture=capture_s)
        proc = sum(totals.values())
        out = {
            "frames": self.frames,
            "rounds": self.round_no,
            "ms_per_frame": {s: round(1000 * totals[s] / n, 2) for s in STAGES},
            "fps_pipeline": round(self.frames / proc, 2) if proc > 0 else None,
            "tiles_decoded": self.decoded_total,
            "detector_runs": self.engine.detector_runs,
            "region_runs": self.engine.region_runs,
            "tiles_seen": self.tiles_total,
        }
        if wall_s is not None:
            out["wall_s"] = round(wall_s, 3)
            out["fps_wall"] = round(self.frames / wall_s, 2) if wall_s > 0 else None
        return out
