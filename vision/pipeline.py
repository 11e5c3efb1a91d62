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
comparison, the table logic and the drawing. Independent still images use neither cache; each
is read at several detector input sizes and the reads fused (:meth:`Pipeline.read_still`,
:mod:`vision.recognition.scales`).

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from scoring.errors import InputError

from vision.config import PipelineConfig
from vision.recognition.decode import TileRead, read_from_pips, run_pip_detector
from vision.detections import TILE, TILE_BACK, Detections
from vision.table.events import build_round
from vision.recognition.gate import MotionGate
from vision.geometry import iou_matrix, rectify
from vision.recognition.identity import IdentityCache
from vision.recognition.fill import SECOND_MODEL_SIZE, disputed_outlines, fill_from_second_model
from vision.recognition.flush import flush_beside
from vision.recognition.models import load_detectors, load_second_tile_detector, model_version
from vision.recognition.overlaps import drop_straddlers, resolve_overlapping_reads
from vision.recognition.scales import STILL_SCALES, fuse_scale_reads
from vision.schema import RoundEvent, TileRecord
from vision.table.seats import group_seats
from vision.io.sources import redact_url
from vision.recognition.spot_colours import recolour_unknowns
from vision.table.rounds import PositionState, RoundTracker, SettledRound, build_positions, position_of
from vision.io.views import round_view
from vision.recognition.zoom import (ZOOM_INPUT, ZOOM_WINDOWS, cut_short_faces, inside_window, tile_sized,
                   zoom_windows)

__all__ = ["Pipeline", "FrameResult", "STAGES"]

#: Video: new faces are vetted by the fused still reading after this many consecutive frames
#: without motion (dealing is over; one fused reading per new set of faces, not one per card).
VET_AFTER_STILL = 3
STAGES = ("capture", "detect", "decode", "score", "draw")


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


def _run_tile_detector(detector, image: np.ndarray, imgsz: int | None = None) -> Detections:
    fn = getattr(detector, "detect", None) or detector
    out = fn(image) if imgsz is None else fn(image, imgsz=imgsz)
    if not isinstance(out, Detections):
        raise TypeError(f"tile detector returned {type(out).__name__}, expected Detections")
    return out


class Pipeline:
    """Detect, decode, group, track and settle, frame by frame.

    Args:
        config: a :class:`vision.config.PipelineConfig` (validated); None builds one from
            ``options``.
        tile_detector, pip_detector: inject detectors (tests); then no model files are read.
        options: flat settings for :meth:`vision.config.PipelineConfig.build` when no config
            is given (``layout``, ``n_stable``, ``banker``, ``motion_threshold``, ``draw``...).

    Raises:
        InputError: bad settings, missing/corrupt models, bad layout file.
    """

    def __init__(self, config: PipelineConfig | None = None, *, tile_detector=None,
                 pip_detector=None, **options: Any) -> None:
        if config is None:
            config = PipelineConfig.build(**options)
        elif options:
            raise InputError(f"give a PipelineConfig or settings, not both: {sorted(options)}")
        self.config = cfg = config
        rec, tab = cfg.recognition, cfg.table
        scales = rec.scales
        if scales is None:  # injected detectors (tests) take no input size: one pass
            scales = STILL_SCALES if tile_detector is None else ()
        #: tile-model input sizes at which a still image is read and fused (vision.recognition.scales)
        self.scales = tuple(scales)
        #: window sides (tile lengths) of the second look at a still's unknown tiles
        #: (vision.recognition.zoom); none with injected detectors (they read whole frames only)
        self.zoom = ZOOM_WINDOWS if self.scales and rec.zoom else ()
        own_tiles = tile_detector is None  # the tile model comes from the models folder
        if tile_detector is None or pip_detector is None:
            t, p = load_detectors(rec.models, rec.backend, rec.tile_conf, rec.pip_conf)
            tile_detector = tile_detector or t
            pip_detector = pip_detector or p
            self.model_version = model_version(rec.models, rec.backend)
        else:
            self.model_version = getattr(tile_detector, "version", "injected")
        self.tile_detector = tile_detector
        self.pip_detector = pip_detector
        #: the optional second tile model for a still image's unread tiles (vision.recognition.fill);
        #: none with an injected tile detector, without still-image sizes, or switched off
        self.second_detector = (
            load_second_tile_detector(rec.models, rec.backend, rec.tile_conf)
            if own_tiles and self.scales and rec.second_model else None)
        self.layout = cfg.layout
        self._checked_size: tuple | None = None  # picture size the layout was checked against
        self.banker, self.rules, self.table_id = tab.banker, tab.rules, tab.table_id
        self.n_stable = tab.n_stable or 10
        self.tracker = RoundTracker(n_stable=self.n_stable, banker=tab.banker, rules=tab.rules,
                                    commission=tab.commission, house_way=tab.house_way,
                                    bets=dict(tab.bets), co_bank=tab.co_bank)
        self.gate = MotionGate(cfg.gate)
        self.cache = IdentityCache(cfg.cache)
        #: independent still images: no motion gate, no identity cache, no decode budget
        self.still_images = False
        #: video: (xyxy, face) already checked against the fused still reading, and those it
        #: contradicted (xyxy, face, what the fused reading says): see :meth:`_vet`
        self._vetted: list[tuple[np.ndarray, str]] = []
        self._vetoed: list[tuple[np.ndarray, str, str]] = []
        self._still_frames = 0  # consecutive video frames without motion
        self._moved = True  # the gate saw motion on the last frame
        #: video: the fused still reading of the picture since it stopped moving (:meth:`_vet`)
        self._still_reading: list[TileRead] | None = None
        self.source = redact_url(cfg.source) if cfg.source is not None else cfg.source
        self._last_dets: Detections | None = None
        self._pending_picture: np.ndarray | None = None
        self.round_no = 0
        #: round ids continue from here (``r{round_base + round_no:06d}``); the session sets
        #: it from the audit store so a restarted table keeps unique round ids
        self.round_base = 0
        self.last_event: dict | None = None
        self.totals = {s: 0.0 for s in STAGES}
        self.frames = 0
        self.detector_runs = 0
        #: video frames answered by the standing fused still reading (no decode, no vet)
        self.still_reuses = 0
        self.decoded_total = 0
        self.tiles_total = 0

    # ------------------------------------------------------------------ stages
    def detect(self, image: np.ndarray, imgsz: int | None = None, detector=None) -> Detections:
        """Tile detections (classes 0/1) of one image, image px (no motion gate), without
        outlines that straddle two neighbouring tiles (:func:`vision.recognition.overlaps.drop_straddlers`);
        ``imgsz``: the tile model's input size (None: its own); ``detector``: another tile
        model (the second model, :mod:`vision.recognition.fill`) instead of :attr:`tile_detector`."""
        d = _run_tile_detector(detector or self.tile_detector, image, imgsz)
        d = d[np.isin(d.class_id, (TILE, TILE_BACK))] if len(d) else d
        return drop_straddlers(d)

    def read_still(self, image: np.ndarray) -> tuple[list[TileRead], Detections]:
        """Read an independent still image at every size of :attr:`scales` and fuse the reads
        (:func:`vision.recognition.scales.fuse_scale_reads`); one size: a single pass. Sizes above the
        image's longer side are skipped (upscaling adds no detail; a small close-up is read
        once at the model's own size).

        Tiles left unknown get a second look (:meth:`second_look`, :mod:`vision.recognition.zoom`) whose
        readings are fused with the others. With a second tile model (:mod:`vision.recognition.fill`) the
        image is read once more: it adds tiles only where none was identified, and a tile it
        outlines otherwise (an outline across it) is made unknown
        (:func:`vision.recognition.fill.disputed_outlines`). Last, a tile with unread spots flush beside
        its long side is made unknown (:func:`vision.recognition.flush.flush_beside`).

        Returns:
            ``(reads, detections of the first size)``; the reads are free of overlapping
            outlines (:func:`vision.recognition.overlaps.resolve_overlapping_reads`).
        """
        longer = max(image.shape[:2])
        sizes = tuple(v for v in self.scales if v <= longer) or (None,)
        per_scale, looks, first = [], [], None
        for size in sizes:
            dets = self.detect(image, size)
            first = dets if first is None else first
            reads, _ = self.decode(image, dets, use_cache=False)
            per_scale.append(resolve_overlapping_reads(reads))
        if len(per_scale) == 1:
            reads = resolve_overlapping_reads(per_scale[0])
        else:
            reads = resolve_overlapping_reads(
                cut_short_faces(fuse_scale_reads(per_scale), per_scale))
        if self.zoom and any(r.state == "unknown" for r in reads):
            looks = self.second_look(image, reads)
            if any(looks):
                fused = fuse_scale_reads(per_scale + looks)
                reads = resolve_overlapping_reads(cut_short_faces(fused, per_scale, looks))
        if self.second_detector is not None and sizes != (None,) \
                and SECOND_MODEL_SIZE <= longer:
            dets = self.detect(image, SECOND_MODEL_SIZE, self.second_detector)
            self.detector_runs += 1
            second, _ = self.decode(image, dets, use_cache=False)
            first_reads = [r for rs in per_scale + looks for r in rs]
            second = resolve_overlapping_reads(second)
            reads = disputed_outlines(fill_from_second_model(reads, second, first_reads), second)
        # a face read from one cut of a flush square whose other half is unread is a guess
        reads = flush_beside(reads, image.shape, lambda polys: self.decode(
            image, Detections.from_polygons(polys, np.ones(len(polys), np.float32),
                                            np.full(len(polys), TILE, np.int64)),
            use_cache=False)[0])
        return reads, first

    def second_look(self, image: np.ndarray, reads: Sequence[TileRead]) -> list[list[TileRead]]:
        """Read windows around the unknown tiles of a still reading magnified
        (:mod:`vision.recognition.zoom`): one list per window size of its identified, tile-sized reads
        (image px), free of overlapping outlines, to be fused with the whole-image readings."""
        looks = []
        for wins in zoom_windows(reads, image.shape, self.zoom):
            parts = []
            for x0, y0, x1, y1 in wins:
                d = self.detect(np.ascontiguousarray(image[y0:y1, x0:x1]), ZOOM_INPUT)
                self.detector_runs += 1
                if not len(d):
                    continue
                off = np.array([x0, y0], np.float32)
                d = Detections(d.xyxy + np.tile(off, 2), d.confidence, d.class_id,
                               d.polygon + off)
                parts.append(d[inside_window(d.polygon, (x0, y0, x1, y1), image.shape)])
            dets = Detections.merge(parts)
            if len(dets):
                found, _ = self.decode(image, dets, use_cache=False)
                found = [r for r in resolve_overlapping_reads(found) if r.state == "face_up"]
                looks.append([r for r, ok in zip(found, tile_sized(found, reads)) if ok])
        return looks

    def detect_gated(self, image: np.ndarray) -> tuple[Detections, bool, bool]:
        """Detections of this frame through the motion gate (:mod:`vision.recognition.gate`).

        Returns:
            ``(detections, detector_ran, stale)``.
        """
        decision = self.gate.decide(image)
        self._moved = decision.moved
        if not decision.detect and self._last_dets is not None:
            return self._last_dets, False, decision.stale
        self._last_dets = self.detect(image)
        self.gate.ran()
        self.detector_runs += 1
        return self._last_dets, True, False

    def decode(self, image: np.ndarray, dets: Detections, use_cache: bool = True
               ) -> tuple[list[TileRead], int]:
        """Reads for every detection; returns ``(reads, number decoded afresh)``.

        With ``use_cache`` (video) identities are reused and decoding is budgeted by the
        identity cache (:mod:`vision.recognition.identity`); without it (still images) every face-up tile
        is decoded.
        """
        n = len(dets)
        reads: list[TileRead | None] = [None] * n
        for i in range(n):
            if int(dets.class_id[i]) == TILE_BACK:
                c = float(dets.confidence[i])
                reads[i] = TileRead(None, "face_down", c, dets.polygon[i].copy(),
                                    dets.xyxy[i].copy(), tile_confidence=c)
        backs: set[int] = set()
        if use_cache:
            todo = self.cache.plan(image, dets, reads)
        else:
            todo = [i for i in range(n) if int(dets.class_id[i]) == TILE]
            # a still's tile backs are read too: a near-blank face (1-1: two red spots on a
            # dark face) is taken for a back by the tile model; a back has no spots, so its
            # reads name no face and it stays face down
            backs = {i for i in range(n) if int(dets.class_id[i]) == TILE_BACK}
            todo += sorted(backs)
        rec = self.config.recognition
        crops = [rectify(image, dets.polygon[i])[0] for i in todo]
        pips = run_pip_detector(self.pip_detector, crops)
        for i, p, crop in zip(todo, pips, crops):
            r = read_from_pips(p, dets.polygon[i], dets.xyxy[i], float(dets.confidence[i]),
                               rec.min_confidence, rec.allow_diagonal_two, crop=crop)
            if i in backs and r.state != "face_up":
                n = r.spots_counted or 0
                if n < 2:
                    continue  # no spots: stays the face-down read
                # spots on a "back" (the fewest a face shows is two, 1-1): a face-up tile
                # not read, never a stack to set aside beside a seat's hand
                r = r.as_unknown(f"{r.reason} (taken for a back, shows {n} spots)")
            reads[i] = r
        if use_cache:
            self.cache.commit(image, dets, {i: reads[i] for i in todo})
            return [r for r in reads if r is not None], len(todo)
        # a still reading: spots the pip model was unsure of take the colours of the set's
        # spots on this picture's identified tiles (vision.recognition.spot_colours)
        out = recolour_unknowns([r for r in reads if r is not None], rec.min_confidence,
                                rec.allow_diagonal_two)
        return out, len(todo)

    def group(self, reads: Sequence[TileRead], frame_size: tuple[int, int]):
        """``(position per read, groups)`` from the layout or, without one, seats named by
        table place (:func:`vision.table.seats.group_seats`); the seats whose grouping is unclear
        are in :attr:`seat_problems` (position -> ``[(kind, reason)]``), never settled."""
        self.seat_problems: dict[str, list[tuple[str, str]]] = {}
        #: why no position could be named in this frame (no layout, no table model fit)
        self.placement: str | None = None
        if self.layout is not None:
            where = position_of(reads, self.layout)
        else:
            g = group_seats(reads, frame_size)
            self.seat_problems = {p: list(v) for p, v in g.problems.items()}
            ids = {id(r): p for p, rs in g.groups.items() for r in rs}
            where = [ids.get(id(r)) for r in reads]
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
    def process(self, frame: Any) -> tuple[np.ndarray, FrameResult]:
        """Run every stage on one frame.

        Args:
            frame: a :class:`vision.io.capture.Frame` or a uint8 (H, W, 3) BGR array.

        Returns:
            ``(annotated frame uint8 (H, W, 3), FrameResult)``.

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
        if self.still_images:
            reads, _ = self.read_still(image)
            stale, n_dec = False, sum(r.state != "face_down" for r in reads)
            self.detector_runs += max(len(self.scales), 1)
            t1 = time.perf_counter()
        else:
            dets, ran, stale = self.detect_gated(image)
            t1 = time.perf_counter()
            if not ran and not stale and not self._moved and self._still_reading is not None \
                    and self._still_frames >= VET_AFTER_STILL:
                # a still table whose fused reading is made (once per still picture): it
                # stands for this unchanged frame as for the last -- no single pass decoded
                # and vetted again (the identity cache is left as it was; a tile that changes
                # moves the gate first, and then everything runs as before)
                self._still_frames += 1
                reads, n_dec = list(self._still_reading), 0
                self.still_reuses += 1
            else:
                reads, n_dec = self.decode(image, dets, use_cache=True)
                reads = resolve_overlapping_reads(reads)
                self._still_frames = 0 if (self._moved or stale) else self._still_frames + 1
                if not self._still_frames:
                    self._still_reading = None  # the picture moved: read it again once still
                if not stale:  # new faces are vetted once the picture has been still a moment
                    reads = self._vet(image, reads, look=self._still_frames >= VET_AFTER_STILL)
        t2 = time.perf_counter()
        where, groups = self.group(reads, (image.shape[1], image.shape[0]))
        positions = build_positions(groups, self.rules, problems=self.seat_problems)
        settled = None
        if not stale:  # a frame with outdated detections does not count for stability
            tiles = [TileRecord.from_read(r, p) for r, p in zip(reads, where)]
            loose = [r for r, p in zip(reads, where) if p is None]
            settled = self.tracker.update(positions, {"index": index, "timestamp": ts,
                                                      "source": src, "path": path,
                                                      "tiles": tiles},
                                          loose=loose, placement=self.placement)
        key = self._pending_picture
        rnd = self._round(settled) if settled is not None else None
        t3 = time.perf_counter()
        res = FrameResult(index, ts, src, path, reads, where, positions, settled, rnd,
                          decoded=n_dec)
        out = self.draw(image, res) if self.config.draw else image
        t4 = time.perf_counter()
        if rnd is not None:
            res.key_frame = out if settled.result is not None or key is None else key
        if (positions or any(p is None and r.state != "face_down" for r, p in zip(reads, where))
                ) and not stale:
            self._pending_picture = out
        elif rnd is not None:
            self._pending_picture = None
        res.timings = dict(detect=t1 - t0, decode=t2 - t1, score=t3 - t2, draw=t4 - t3)
        for k, v in res.timings.items():
            self.totals[k] += v
        self.frames += 1
        self.decoded_total += n_dec
        self.tiles_total += sum(r.state != "face_down" for r in reads)
        self.cache.tick()
        return out, res

    def _round(self, settled: SettledRound) -> RoundEvent:
        """The round event of a tracked round (its own frame's header fields)."""
        self.round_no += 1
        f = settled.frame
        rnd = build_round(settled, f"r{self.round_base + self.round_no:06d}", self.table_id,
                          f.get("source", self.source), f.get("index", 0),
                          model_version=self.model_version, tiles=f.get("tiles"),
                          source_file=f.get("path"))
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
        res = FrameResult(f.get("index", 0), f.get("timestamp", 0.0), f.get("source", ""),
                          f.get("path"), [], [], dict(settled.positions), settled, rnd,
                          key_frame=self._pending_picture)
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

    def _vet(self, image: np.ndarray, reads: list[TileRead], look: bool = True
             ) -> list[TileRead]:
        """Video: the fused still reading (:meth:`read_still`: every input size of
        :attr:`scales`, the second look) stands for a picture that has stopped moving, and
        vetoes faces the single pass named wrongly.

        A video frame is read once at the model's own size, where a tile model has named a
        wrong face from an outline reaching onto a touching tile, and leaves more tiles
        unknown than a still reading. Once ``look`` (the process passes it after
        :data:`VET_AFTER_STILL` frames without motion), the picture is read once as a still
        image; until the gate sees motion again that reading is the frame's reads. A face
        the single pass names at a place (a face and an xyxy box) that the fused reading
        contradicts there (another face, or sizes that disagree) is unknown from then on, also
        in later moving frames, while the tile stays put. A face not yet vetted stands
        meanwhile (a round is final only after its positions are stable for several frames,
        by then the picture is still). Nothing happens with one input size or injected
        detectors.
        """
        if len(self.scales) < 2:
            return reads
        def matches(entries) -> np.ndarray:
            """bool (len(reads), len(entries)): same face on (nearly) the same box."""
            if not reads or not entries:
                return np.zeros((len(reads), len(entries)), bool)
            boxes = np.stack([np.asarray(r.xyxy, np.float32) for r in reads])
            iou = iou_matrix(boxes, np.stack([e[0] for e in entries]))
            return (iou > 0.9) & np.array([[r.face is not None and r.face == e[1]
                                             for e in entries] for r in reads])

        seen = matches(self._vetted)
        new = [i for i, r in enumerate(reads) if r.face and not seen[i].any()]
        if look and self._still_reading is None:
            self._still_reading = self.read_still(image)[0]
        if new and look:
            fused = [f for f in self._still_reading if f.state != "face_down"]
            over = (iou_matrix(np.stack([reads[i].xyxy for i in new]),
                               np.stack([f.xyxy for f in fused])) if fused
                    else np.zeros((len(new), 0)))
            for row, i in enumerate(new):
                r = reads[i]
                against = [f for f, v in zip(fused, over[row]) if v >= 0.5 and (
                    (f.face and f.face != r.face)
                    or (f.face is None and "input sizes disagree" in (f.reason or "")))]
                self._vetted.append((np.asarray(r.xyxy, np.float32).copy(), r.face))
                if against:
                    self._vetoed.append((np.asarray(r.xyxy, np.float32).copy(), r.face,
                                         against[0].face or "unknown"))
            seen = matches(self._vetted)
        hits = matches(self._vetoed)
        out = [r.as_unknown(f"read {r.face} once, the reading at every input size says "
                            f"{self._vetoed[int(np.argmax(hits[k]))][2]}") if hits[k].any() else r
               for k, r in enumerate(reads)]
        # keep only what is still on the table (a long session does not grow the lists)
        self._vetted = [v for j, v in enumerate(self._vetted) if seen[:, j].any()]
        self._vetoed = [v for j, v in enumerate(self._vetoed) if hits[:, j].any()]
        if look and self._still_reading is not None:
            # the picture is still: the fused reading (every input size, the second look)
            # stands for it until something moves -- it adds the faces the single pass left
            # unknown and the outlines it merged; the vetoes above outlast the next motion
            return list(self._still_reading)
        return out

    def reset(self) -> None:
        """Forget tracking state and the caches (a new, unrelated source or image); call
        :meth:`flush` first to keep an open round."""
        self._vetted, self._vetoed = [], []
        self._still_reading, self._still_frames, self._moved = None, 0, True
        self.tracker.reset()
        self.cache.clear()
        self.gate.reset()
        self._last_dets = None
        self._pending_picture = None

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
            "detector_runs": self.detector_runs,
            "tiles_seen": self.tiles_total,
        }
        if wall_s is not None:
            out["wall_s"] = round(wall_s, 3)
            out["fps_wall"] = round(self.frames / wall_s, 2) if wall_s > 0 else None
        return out
