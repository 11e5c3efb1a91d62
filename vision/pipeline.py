"""The pipeline: capture -> detect -> decode -> table -> settle -> overlay / events.

The only module that knows every stage (../shared/docs/architecture.md). Public entry points:
:class:`Pipeline` (one frame at a time), :func:`identify` (still images -> tile JSON),
:func:`run` (a source -> annotated video or images, events.jsonl, summary) and :func:`demo`
(a rendered round through the whole pipeline).

Speed (the target is >= 10 fps at 1080p with 32 tiles on 2 CPU cores) comes from two caches,
both safe because anything that changes the picture of a tile invalidates them:

* **Motion gate for the tile detector.** Each frame is reduced to a 192 x 108 grey thumbnail
  (``cv2.INTER_AREA``) and compared in 6 x 6 blocks with the thumbnail of the frame the tile
  detector last ran on. When no block's mean absolute difference exceeds ``motion_threshold``
  (8 grey levels) the previous detections are reused; a hand, a moved or swapped tile or a
  camera move changes blocks and the detector runs. It runs at least every ``redetect_every``
  frames (default 10) anyway. While the picture keeps changing it runs on every
  ``motion_detect_every``-th frame (default 2); the frames in between are drawn with the
  previous detections but are *stale*: the round tracker does not count them, so stability
  (and settlement) rests only on frames the detector saw or that did not change.
* **Identity cache for the pip model.** A face-up tile whose axis-aligned box overlaps a cached
  face-up tile of the previous frame with IoU > ``cache_iou`` (0.9) keeps that tile's face,
  confidence and spots without running the pip model again -- unless it *looks* different:
  each decoded tile keeps a 16 x 32 grey thumbnail of its box (:func:`tile_look`; a spot is
  about 3 of its pixels), and when the thumbnail of the same box (same pixels, so detector
  jitter does not count) in the current frame differs from it by more than
  ``look_threshold`` grey levels on average (a hand over it, a tile swapped in place, a change
  of light) the tile is decoded again. Only new, moved, changed and unknown tiles are rectified
  and decoded. As a last guard a cached identity older than ``reverify_every`` frames (default
  150, 5 s at 30 fps) is decoded again, at most ``reverify_budget`` (default 1) tile per
  frame, oldest first. At most ``decode_budget`` (default 8) tiles are decoded per frame (new
  and changed tiles first); a new tile beyond the budget is "unknown, not decoded yet" for that
  frame, so its position cannot become final on a guess.

On a still table the per-frame cost is then the thumbnail comparison, the table logic and the
drawing. Independent still images (:func:`identify`, :func:`run` on image files) use neither
cache: every tile of every image is detected and decoded.

Measured (2-core machine, no other job; ``scripts/bench_run.py --deal 60 --still 60``:
``paigow run`` on a 1080p mp4 of a rendered round, 32 face-up tiles, ONNX Runtime): 17.5 fps
end to end (video decoding and annotated-video writing included); ``Pipeline.process`` 64 ms
mean (15.6 fps) on the 60 frames whose picture changes (dealing: tiles appear, a hand moves),
19 ms (53 fps) on the still ones. Without the caches every frame costs about 200-220 ms
(``scripts/bench_vision.py``: tile model 66-89 ms at 384 x 640, pip model 2.1-3.0 ms a crop in
one batch). Timings per stage (capture, detect, decode, score, draw) are kept in seconds and
reported by :func:`run` (mean ms per frame and fps).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from scoring.errors import InputError

from . import MODELS_DIR
from .decode import TileRead, read_from_pips, run_pip_detector, tile_aspect
from .detections import TILE, TILE_BACK, Detections
from .events import EventWriter, round_event, tile_dict
from .geometry import order_polygon, rectify
from .scales import STILL_SCALES, fuse_scale_reads
from .table import (Layout, PositionState, RoundTracker, SettledRound, auto_group,
                    build_positions, load_layout, position_of)

__all__ = ["Pipeline", "FrameResult", "identify", "run", "demo", "STAGES", "DEMO_SEED",
           "model_version", "load_detectors", "demo_frames", "demo_deal",
           "settlement_table"]

STAGES = ("capture", "detect", "decode", "score", "draw")
DEMO_SEED = 1_000_777


@dataclass
class FrameResult:
    """Everything the pipeline learnt from one frame.

    Attributes:
        index: frame index in the source; timestamp: seconds; source: spec; path: image file.
        reads: the :class:`vision.decode.TileRead` of every detected tile.
        tile_positions: position id (or None) of each read, same order.
        positions: position id -> :class:`vision.table.PositionState` (positions with tiles).
        settled: the :class:`vision.table.SettledRound` when this frame settled a round.
        event: the round event dict (EVENT_SCHEMA.md) when this frame settled a round.
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
    event: dict | None = None
    timings: dict[str, float] = field(default_factory=dict)
    decoded: int = 0

    @property
    def alerts(self) -> list[dict]:
        """Live alerts of this frame: ``{"kind", "position", "detail"}`` for every position
        problem (``unknown_tile``, ``wrong_tile_count``; face-down tiles are not alerts)."""
        return [{"kind": k, "position": p, "detail": d}
                for p, st in self.positions.items() for k, d in st.problems if k != "face_down"]


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()[:8]


def model_version(models_dir: str | Path = MODELS_DIR, backend: str = "onnx") -> str:
    """``"tiles-<sha8>+pips-<sha8>"`` from the model files' SHA-256 (``"unknown"`` parts for
    missing files)."""
    ext = ".onnx" if backend == "onnx" else ".pt"
    parts = []
    for name in ("tiles", "pips"):
        p = Path(models_dir) / f"{name}{ext}"
        parts.append(f"{name}-{_file_digest(p)}" if p.is_file() else f"{name}-unknown")
    return "+".join(parts)


def load_detectors(models_dir: str | Path = MODELS_DIR, backend: str = "onnx",
                   tile_conf: float | None = None, pip_conf: float | None = None):
    """The tile and pip detectors of :mod:`vision.detect` from ``models_dir``.

    Raises:
        InputError: unknown backend, a missing or corrupt model file (naming it).
    """
    if backend not in ("onnx", "ultralytics"):
        raise InputError(f"unknown backend {backend!r}: choose onnx or ultralytics")
    models_dir = Path(models_dir)
    if not models_dir.is_dir():
        raise InputError(f"models folder not found: {models_dir}")
    ext = ".onnx" if backend == "onnx" else ".pt"
    for name in ("tiles", "pips"):
        p = models_dir / f"{name}{ext}"
        if not p.is_file():
            raise InputError(f"model file not found: {p}")
    from . import detect

    kw_t = {} if tile_conf is None else {"conf": tile_conf}
    kw_p = {} if pip_conf is None else {"conf": pip_conf}
    tiles = detect.TileDetector(models_dir / f"tiles{ext}", backend=backend, **kw_t)
    pips = detect.PipDetector(models_dir / f"pips{ext}", backend=backend, **kw_p)
    return tiles, pips


def _run_tile_detector(detector, image: np.ndarray, imgsz: int | None = None) -> Detections:
    fn = getattr(detector, "detect", None) or detector
    out = fn(image) if imgsz is None else fn(image, imgsz=imgsz)
    if not isinstance(out, Detections):
        raise TypeError(f"tile detector returned {type(out).__name__}, expected Detections")
    return out


def _iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of axis-aligned boxes a (n, 4) x b (m, 4) -> (n, m) float64."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros((len(a), len(b)))
    a = a.astype(np.float64)[:, None]
    b = b.astype(np.float64)[None]
    iw = np.clip(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    ih = np.clip(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0, None)
    inter = iw * ih
    area_a = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
    area_b = (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
    return inter / np.maximum(area_a + area_b - inter, 1e-9)


def inside_fractions(polygons: np.ndarray) -> np.ndarray:
    """How much of each tile outline lies inside each other one.

    Args:
        polygons: float (n, 4, 2) convex outlines, px.

    Returns:
        float64 (n, n): ``[i, j]`` = area of (i intersect j) / area of i (0 on the diagonal);
        exact polygon intersection (``cv2.intersectConvexConvex``) for pairs whose bounding
        boxes overlap, 0 for the others.
    """
    import cv2

    polys = np.asarray(polygons, np.float32).reshape(-1, 4, 2)
    n = len(polys)
    out = np.zeros((n, n))
    if n < 2:
        return out
    lo, hi = polys.min(1), polys.max(1)
    touch = ((lo[:, None, 0] < hi[None, :, 0]) & (lo[None, :, 0] < hi[:, None, 0])
             & (lo[:, None, 1] < hi[None, :, 1]) & (lo[None, :, 1] < hi[:, None, 1]))
    np.fill_diagonal(touch, False)
    areas = np.array([max(float(cv2.contourArea(p)), 1e-6) for p in polys])
    for i, j in zip(*np.nonzero(np.triu(touch))):
        inter = float(cv2.intersectConvexConvex(polys[i], polys[j])[0])
        out[i, j], out[j, i] = inter / areas[i], inter / areas[j]
    return out


@dataclass
class _Cached:
    xyxy: np.ndarray
    read: TileRead
    verified: int  # frame counter when last decoded
    look: np.ndarray | None = None  # tile_look() when last decoded
    look_xyxy: np.ndarray | None = None  # the box the look was taken from


#: Size (w, h) of the grey thumbnail of a tile's box used to notice a changed tile, px.
LOOK_SIZE = (16, 32)


def tile_look(image: np.ndarray, xyxy) -> np.ndarray:
    """Grey LOOK_SIZE thumbnail (int16) of the box ``xyxy`` (px) of ``image``: what a tile
    looked like when it was decoded (spots included: a spot is about 3 thumbnail px)."""
    import cv2

    h, w = image.shape[:2]
    x1, y1, x2, y2 = (int(round(float(v))) for v in xyxy)
    x1, y1 = max(0, min(x1, w - 1)), max(0, min(y1, h - 1))
    x2, y2 = max(x1 + 1, min(x2, w)), max(y1 + 1, min(y2, h))
    roi = cv2.cvtColor(image[y1:y2, x1:x2], cv2.COLOR_BGR2GRAY)
    return cv2.resize(roi, LOOK_SIZE, interpolation=cv2.INTER_AREA).astype(np.int16)


class Pipeline:
    """Detect, decode, group, track and settle, frame by frame.

    Args:
        models_dir: folder with tiles.onnx / pips.onnx (or .pt for backend ultralytics).
        backend: ``"onnx"`` (onnxruntime, default) or ``"ultralytics"``.
        layout: a :class:`vision.table.Layout`, a path to a layout YAML, or None (automatic
            grouping: see :func:`vision.table.auto_group`).
        n_stable: frames a position must stay identical to be final (1 for stills).
        banker, rules, commission, house_way, table_id, bets: override the layout's (or the
            defaults: dealer, pa, the profile's commission, reference, "table-1").
        min_confidence: faces below this confidence are unknown (fraction).
        tile_conf, pip_conf: detector confidence thresholds (None: the detector's default).
        cache_iou: IoU above which a tile counts as not moved (see module docstring).
        reverify_every: frames after which a cached identity is decoded again (>= 1).
        reverify_budget: at most this many re-verifications per frame (>= 1).
        look_threshold: mean grey-level difference (0-255) of a tile's 16 x 32 box thumbnail
            from its look when decoded above which it is decoded again (0: off).
        motion_threshold: grey levels (0-255) of mean block difference that count as motion;
            0 disables the motion gate (the detector runs on every frame).
        redetect_every: run the tile detector at least every this many frames (>= 1).
        motion_detect_every: while the picture changes, run the tile detector on every this
            many frames (>= 1; 1 = every frame); frames in between are drawn with the previous
            detections and not counted by the round tracker.
        decode_budget: most tiles decoded by the pip model per frame (see :meth:`decode`).
        tile_detector, pip_detector: inject detectors (tests); then no model files are read.
        draw: produce annotated frames (False: ``process`` returns the input frame).
        source: the source name written into events.
        allow_diagonal_two: accept diagonal 2s (see :func:`vision.decode.half_shape_ok`; off:
            a diagonal 2 cannot be told from a 3 whose centre spot was missed).
        scales: tile-model input sizes (px, multiples of 32) at which a *still image* is read
            and fused (:mod:`vision.scales`); default :data:`vision.scales.STILL_SCALES`;
            ``()`` or one size: a single pass. Video frames use the model's own size.

    Raises:
        InputError: bad settings, missing/corrupt models, bad layout file.
    """

    def __init__(self, models_dir: str | Path = MODELS_DIR, backend: str = "onnx",
                 layout: Layout | str | Path | None = None, n_stable: int = 10,
                 banker: str | None = None, rules: str | None = None,
                 commission: str | None = None, house_way: str | None = None,
                 table_id: str | None = None, bets: dict | None = None,
                 min_confidence: float = 0.5, tile_conf: float | None = None,
                 pip_conf: float | None = None, cache_iou: float = 0.9,
                 reverify_every: int = 150, reverify_budget: int = 1,
                 look_threshold: float = 12.0,
                 motion_threshold: float = 8.0, redetect_every: int = 10,
                 motion_detect_every: int = 2, decode_budget: int = 8,
                 tile_detector=None, pip_detector=None,
                 draw: bool = True, source: str = "", allow_diagonal_two: bool = False,
                 scales: Sequence[int] | None = None) -> None:
        if isinstance(layout, (str, Path)):
            layout = load_layout(layout)
        self.layout = layout
        if not 0.0 <= min_confidence <= 1.0:
            raise InputError(f"min confidence must be in [0, 1], got {min_confidence!r}")
        if not 0.0 < cache_iou <= 1.0:
            raise InputError(f"cache IoU must be in (0, 1], got {cache_iou!r}")
        if int(reverify_every) < 1:
            raise InputError(f"reverify_every must be >= 1, got {reverify_every!r}")
        self.min_confidence = float(min_confidence)
        self.cache_iou = float(cache_iou)
        self.reverify_every = int(reverify_every)
        self.look_threshold = float(look_threshold)
        if int(reverify_budget) < 1 or int(redetect_every) < 1 or motion_threshold < 0:
            raise InputError(f"reverify_budget and redetect_every must be >= 1 and "
                             f"motion_threshold >= 0, got {reverify_budget!r}, "
                             f"{redetect_every!r}, {motion_threshold!r}")
        self.reverify_budget = int(reverify_budget)
        self.motion_threshold = float(motion_threshold)
        self.redetect_every = int(redetect_every)
        if int(motion_detect_every) < 1 or int(decode_budget) < 1:
            raise InputError(f"motion_detect_every and decode_budget must be >= 1, got "
                             f"{motion_detect_every!r}, {decode_budget!r}")
        self.motion_detect_every = int(motion_detect_every)
        self.decode_budget = int(decode_budget)
        self._last_thumb: np.ndarray | None = None
        self._last_dets: Detections | None = None
        self._last_detect_frame = -1
        self.detector_runs = 0
        self.allow_diagonal_two = bool(allow_diagonal_two)
        if scales is None:  # injected detectors (tests) take no input size: one pass
            scales = STILL_SCALES if tile_detector is None else ()
        self.scales = tuple(int(v) for v in scales)
        if any(v < 32 or v % 32 for v in self.scales):
            raise InputError(f"scales must be multiples of 32 px, got {list(self.scales)!r}")
        if tile_detector is None or pip_detector is None:
            t, p = load_detectors(models_dir, backend, tile_conf, pip_conf)
            tile_detector = tile_detector or t
            pip_detector = pip_detector or p
            self.model_version = model_version(models_dir, backend)
        else:
            self.model_version = getattr(tile_detector, "version", "injected")
        self.tile_detector = tile_detector
        self.pip_detector = pip_detector
        lay = layout
        self.banker = (banker or (lay.banker if lay else "dealer")).strip().lower()
        self.rules = rules or (lay.rules if lay else "pa")
        self.commission = commission if commission is not None else (lay.commission if lay else None)
        self.house_way = house_way or (lay.house_way if lay else "reference")
        self.table_id = table_id or (lay.table_id if lay else "table-1")
        self.bets = dict(bets if bets is not None else (lay.bets if lay else {}))
        if lay is not None and self.banker not in lay.positions:
            raise InputError(f"banker {self.banker!r} is not a position of the layout "
                             f"({', '.join(lay.positions)})")
        self.n_stable = n_stable
        self.tracker = RoundTracker(n_stable=n_stable, banker=self.banker, rules=self.rules,
                                    commission=self.commission, house_way=self.house_way,
                                    bets=self.bets, co_bank=bool(lay.co_bank) if lay else False)
        self.draw_enabled = draw
        #: independent still images: no motion gate, no identity cache, no decode budget
        self.still_images = False
        self.source = source
        self._cache: list[_Cached] = []
        self._frame_no = 0
        self.round_no = 0
        #: round ids continue from here (``r{round_base + round_no:06d}``); :func:`run` sets it
        #: from the audit store so a restarted table keeps unique round ids
        self.round_base = 0
        self.last_event: dict | None = None
        self.totals = {s: 0.0 for s in STAGES}
        self.frames = 0
        self.decoded_total = 0
        self.tiles_total = 0

    # ------------------------------------------------------------------ stages
    def detect(self, image: np.ndarray, imgsz: int | None = None) -> Detections:
        """Tile detections (classes 0/1) of one image, image px (no motion gate), without
        outlines that straddle two neighbouring tiles (:func:`drop_straddlers`); ``imgsz``:
        the tile model's input size (None: its own)."""
        d = _run_tile_detector(self.tile_detector, image, imgsz)
        d = d[np.isin(d.class_id, (TILE, TILE_BACK))] if len(d) else d
        return drop_straddlers(d)

    def read_still(self, image: np.ndarray) -> tuple[list[TileRead], Detections]:
        """Read an independent still image at every size of :attr:`scales` and fuse the reads
        (:func:`vision.scales.fuse_scale_reads`); one size: a single pass. Sizes above the
        image's longer side are skipped (upscaling adds no detail; a small close-up is read
        once at the model's own size).

        Returns:
            ``(reads, detections of the first size)``; the reads are free of overlapping
            outlines (:func:`resolve_overlapping_reads`).
        """
        longer = max(image.shape[:2])
        sizes = tuple(v for v in self.scales if v <= longer) or (None,)
        per_scale, first = [], None
        for size in sizes:
            dets = self.detect(image, size)
            first = dets if first is None else first
            reads, _ = self.decode(image, dets, use_cache=False)
            per_scale.append(resolve_overlapping_reads(reads))
        reads = per_scale[0] if len(per_scale) == 1 else fuse_scale_reads(per_scale)
        return resolve_overlapping_reads(reads), first

    @staticmethod
    def _thumb(image: np.ndarray) -> np.ndarray:
        import cv2

        g = cv2.cvtColor(image, cv2.COLOR_BGR2GRAY)
        return cv2.resize(g, (192, 108), interpolation=cv2.INTER_AREA).astype(np.int16)

    def detect_gated(self, image: np.ndarray) -> tuple[Detections, bool, bool]:
        """Detections of this frame (module docstring: motion gate and motion rate).

        Returns:
            ``(detections, detector_ran, stale)``: ``stale`` is True when the picture changed
            but the detector was skipped by ``motion_detect_every``; such a frame is drawn but
            not counted by the round tracker.
        """
        if self.motion_threshold <= 0:
            self.detector_runs += 1
            return self.detect(image), True, False
        thumb = self._thumb(image)
        if (self._last_dets is not None and self._last_thumb is not None
                and self._last_thumb.shape == thumb.shape):
            since = self._frame_no - self._last_detect_frame
            diff = np.abs(thumb - self._last_thumb).reshape(18, 6, 32, 6).mean((1, 3))
            moved = float(diff.max()) > self.motion_threshold
            if not moved and since < self.redetect_every:
                return self._last_dets, False, False
            if moved and since < self.motion_detect_every:
                return self._last_dets, False, True
        dets = self.detect(image)
        self._last_thumb, self._last_dets = thumb, dets
        self._last_detect_frame = self._frame_no
        self.detector_runs += 1
        return dets, True, False

    def decode(self, image: np.ndarray, dets: Detections, use_cache: bool = True
               ) -> tuple[list[TileRead], int]:
        """Reads for every detection; returns ``(reads, number decoded afresh)``.

        With ``use_cache`` (video): identities are reused per the module docstring and at most
        ``decode_budget`` tiles are decoded per frame, in this order: new tiles, tiles that
        were unknown (longest waiting first), cached identities due for re-verification
        (oldest first, at most ``reverify_budget``). A new tile beyond the budget is reported
        unknown ("not decoded yet") for this frame, so its position is not final -- never
        guessed. Without ``use_cache`` (still images) every face-up tile is decoded.
        """
        n = len(dets)
        reads: list[TileRead | None] = [None] * n
        up = [i for i in range(n) if int(dets.class_id[i]) == TILE]
        for i in range(n):
            if int(dets.class_id[i]) == TILE_BACK:
                c = float(dets.confidence[i])
                reads[i] = TileRead(None, "face_down", c, dets.polygon[i].copy(),
                                    dets.xyxy[i].copy(), tile_confidence=c)
        new_cache: list[_Cached] = []
        backs: set[int] = set()
        if not use_cache:
            todo = list(up)
            # a still's tile backs are read too: a near-blank face (1-1: two red spots on a
            # dark face) is taken for a back by the tile model; a back has no spots, so its
            # reads name no face and it stays face down
            backs = {i for i in range(n) if int(dets.class_id[i]) == TILE_BACK}
            todo += sorted(backs)
        else:
            new_tiles: list[int] = []
            retry: list[tuple[int, int, int]] = []   # (last attempt, det index, cache index)
            due: list[tuple[int, int, int]] = []     # (verified, det index, cache index)
            if self._cache and up:
                iou = _iou_matrix(dets.xyxy[up], np.array([c.xyxy for c in self._cache]))
            else:
                iou = np.zeros((len(up), 0))
            taken: set[int] = set()
            for row, i in enumerate(up):
                j = int(np.argmax(iou[row])) if iou.shape[1] else -1
                if j < 0 or j in taken or iou[row, j] <= self.cache_iou:
                    new_tiles.append(i)
                    continue
                taken.add(j)
                c = self._cache[j]
                if c.read.state == "face_up" and self.look_threshold > 0 and c.look is not None:
                    d = float(np.abs(tile_look(image, c.look_xyxy) - c.look).mean())
                    if d > self.look_threshold:  # the tile looks different: decode it again
                        new_tiles.append(i)
                        continue
                if c.read.state != "face_up":
                    retry.append((c.verified, i, j))
                elif self._frame_no - c.verified >= self.reverify_every:
                    due.append((c.verified, i, j))
                else:
                    self._reuse(reads, new_cache, dets, i, c)
            retry.sort()
            due.sort()
            budget = self.decode_budget
            todo = new_tiles[:budget]
            for i in new_tiles[budget:]:
                c = float(dets.confidence[i])
                r = TileRead(None, "unknown", c, dets.polygon[i].copy(), dets.xyxy[i].copy(),
                             reads={"reason": "not decoded yet"}, reason="not decoded yet",
                             tile_confidence=c)
                reads[i] = r
                new_cache.append(_Cached(dets.xyxy[i].copy(), r, -1))
            budget -= len(todo)
            for _, i, j in retry:
                if budget > 0:
                    todo.append(i)
                    budget -= 1
                else:
                    self._reuse(reads, new_cache, dets, i, self._cache[j])
            for k, (_, i, j) in enumerate(due):
                if budget > 0 and k < self.reverify_budget:
                    todo.append(i)
                    budget -= 1
                else:
                    self._reuse(reads, new_cache, dets, i, self._cache[j])
        crops = [rectify(image, dets.polygon[i])[0] for i in todo]
        pips = run_pip_detector(self.pip_detector, crops)
        for i, p, crop in zip(todo, pips, crops):
            r = read_from_pips(p, dets.polygon[i], dets.xyxy[i], float(dets.confidence[i]),
                               self.min_confidence, self.allow_diagonal_two, crop=crop)
            if i in backs and r.state != "face_up":
                continue  # stays the face-down read
            reads[i] = r
            if use_cache:
                new_cache.append(_Cached(dets.xyxy[i].copy(), r, self._frame_no,
                                         tile_look(image, dets.xyxy[i]), dets.xyxy[i].copy()))
        if use_cache:
            self._cache = new_cache
        return [r for r in reads if r is not None], len(todo)

    @staticmethod
    def _reuse(reads, new_cache, dets, i, c) -> None:
        old = c.read
        reads[i] = TileRead(old.face, old.state, old.confidence, dets.polygon[i].copy(),
                            dets.xyxy[i].copy(), old.pips, old.reads, old.reason,
                            old.tile_confidence)
        new_cache.append(_Cached(dets.xyxy[i].copy(), reads[i], c.verified, c.look,
                                 c.look_xyxy))

    def group(self, reads: Sequence[TileRead], frame_size: tuple[int, int]):
        """``(position per read, groups)`` from the layout or automatic grouping."""
        if self.layout is not None:
            where = position_of(reads, self.layout)
        else:
            groups = auto_group(reads, frame_size)
            ids = {id(r): p for p, rs in groups.items() for r in rs}
            where = [ids.get(id(r)) for r in reads]
        groups: dict[str, list[TileRead]] = {}
        for r, p in zip(reads, where):
            if p is not None:
                groups.setdefault(p, []).append(r)
        return where, groups

    # ------------------------------------------------------------------ one frame
    def process(self, frame: Any) -> tuple[np.ndarray, FrameResult]:
        """Run every stage on one frame.

        Args:
            frame: a :class:`vision.capture.Frame` or a uint8 (H, W, 3) BGR array.

        Returns:
            ``(annotated frame uint8 (H, W, 3), FrameResult)``.
        """
        if isinstance(frame, np.ndarray):
            image, index, ts, src, path = frame, self._frame_no, self._frame_no / 30.0, self.source, None
        else:
            image, index, ts = frame.image, frame.index, frame.timestamp
            src, path = frame.source or self.source, frame.path
        if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] != 3:
            raise InputError(f"frame must be an (H, W, 3) image, got {getattr(image, 'shape', image)!r}")
        tm: dict[str, float] = {}
        t0 = time.perf_counter()
        if self.still_images:
            reads, _ = self.read_still(image)
            stale, n_dec = False, sum(r.state != "face_down" for r in reads)
            self.detector_runs += max(len(self.scales), 1)
            t1 = time.perf_counter()
        else:
            dets, _, stale = self.detect_gated(image)
            t1 = time.perf_counter()
            reads, n_dec = self.decode(image, dets, use_cache=True)
            reads = resolve_overlapping_reads(reads)
        t2 = time.perf_counter()
        where, groups = self.group(reads, (image.shape[1], image.shape[0]))
        positions = build_positions(groups, self.rules)
        settled = None
        if not stale:  # a frame with outdated detections does not count for stability
            settled = self.tracker.update(positions, {"index": index, "timestamp": ts})
        event = None
        if settled is not None:
            self.round_no += 1
            tiles = [tile_dict(r, p) for r, p in zip(reads, where)]
            event = round_event(settled, f"r{self.round_base + self.round_no:06d}",
                                self.table_id, src, index,
                                model_version=self.model_version, tiles=tiles)
            self.last_event = event
        t3 = time.perf_counter()
        res = FrameResult(index, ts, src, path, reads, where, positions, settled, event,
                          decoded=n_dec)
        out = self.draw(image, res) if self.draw_enabled else image
        t4 = time.perf_counter()
        tm.update(detect=t1 - t0, decode=t2 - t1, score=t3 - t2, draw=t4 - t3)
        res.timings = tm
        for k, v in tm.items():
            self.totals[k] += v
        self.frames += 1
        self.decoded_total += n_dec
        self.tiles_total += sum(r.state != "face_down" for r in reads)
        self._frame_no += 1
        return out, res

    def round_view(self, res: FrameResult) -> dict:
        """The dict handed to :func:`vision.overlay.draw`: ``{"tiles": [tile dicts with
        "position"], "positions": {pos: {"tiles", "high", "low", "high_hand", "low_hand",
        "final", "problems", "reason", "result", "net"}}, "position_polygons": {pos: polygon},
        "banker_position", "table_id", "round_id", "event": the last event or None,
        "settled_now": bool}``."""
        last = self.last_event
        pos_view: dict[str, dict] = {}
        for p, st in res.positions.items():
            v: dict[str, Any] = {"tiles": [r.face for r in st.tiles], "final": self.tracker.is_final(p),
                                 "problems": [k for k, _ in st.problems], "reason": st.reason,
                                 "high": None, "low": None, "high_hand": None, "low_hand": None,
                                 "result": None, "net": None}
            if st.setting is not None:
                c = st.setting.canonical()
                v.update(high=[t.face for t in c.high], low=[t.face for t in c.low],
                         high_hand=st.setting.high_value(self.rules).name,
                         low_hand=st.setting.low_value(self.rules).name)
            if last is not None and not self.tracker.open and p in last["positions"]:
                e = last["positions"][p]
                v["result"] = e.get("result")
                v["net"] = e.get("net")
            pos_view[p] = v
        return {
            "tiles": [tile_dict(r, p) for r, p in zip(res.reads, res.tile_positions)],
            "positions": pos_view,
            "position_polygons": ({p: v.tolist() for p, v in self.layout.positions.items()}
                                  if self.layout is not None else {}),
            "banker_position": self.banker,
            "table_id": self.table_id,
            "round_id": last["round_id"] if last is not None and not self.tracker.open else None,
            "event": last if not self.tracker.open else None,
            "settled_now": res.event is not None,
        }

    def draw(self, image: np.ndarray, res: FrameResult) -> np.ndarray:
        """Annotated copy of ``image`` (:func:`vision.overlay.draw_round` of
        :meth:`round_view`; a plain fallback drawing when the overlay module is absent)."""
        view = self.round_view(res)
        try:
            from . import overlay
        except ImportError:
            overlay = None
        fn = None
        if overlay is not None:
            fn = getattr(overlay, "draw_round", None) or getattr(overlay, "draw", None)
        if fn is not None:
            return fn(image, view)
        return _fallback_draw(image, view)

    def reset(self) -> None:
        """Forget tracking state and the identity cache (a new, unrelated source/image)."""
        self.tracker.reset()
        self._cache = []
        self._last_thumb = self._last_dets = None

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


def _fallback_draw(image: np.ndarray, view: dict) -> np.ndarray:
    """Minimal drawing (tile outlines and faces) when vision.overlay is unavailable."""
    import cv2

    out = image.copy()
    colours = {"face_up": (0, 200, 0), "face_down": (200, 120, 0), "unknown": (0, 0, 255)}
    for t in view["tiles"]:
        pts = np.round(np.asarray(t["polygon"])).astype(np.int32)
        cv2.polylines(out, [pts], True, colours.get(t["state"], (255, 255, 255)), 2)
        label = t["face"] or ("?" if t["state"] == "unknown" else "back")
        x, y = pts.min(0)
        cv2.putText(out, label, (int(x), int(y) - 4), cv2.FONT_HERSHEY_SIMPLEX, 0.5,
                    (255, 255, 255), 1, cv2.LINE_AA)
    return out


# ---------------------------------------------------------------------- identify


#: A tile outline that has at least this fraction of its area inside each of two other tile
#: outlines is a straddler: the tile model's box across two touching tiles of a hand.
STRADDLE_OVERLAP: float = 0.25


def drop_straddlers(dets: Detections) -> Detections:
    """Remove tile outlines lying across two other detected tiles.

    Two tiles of a hand lie side by side, touching; a weakly trained tile model sometimes
    adds one box centred on their shared edge. Such a box reads as unknown (it never gives a
    wrong face: decode checks the outline's shape and spots), but it makes a position look like
    five tiles, so nothing there settles. A box is dropped when at least
    :data:`STRADDLE_OVERLAP` of its area lies inside each of two other boxes
    (:func:`inside_fractions`).

    Args:
        dets: tile detections with polygons (n, 4, 2) px.

    Returns:
        The detections without straddlers (same order).
    """
    if len(dets) < 3:
        return dets
    keep = (inside_fractions(dets.polygon) >= STRADDLE_OVERLAP).sum(1) < 2
    return dets[keep] if not keep.all() else dets


DUPLICATE_OVERLAP = 0.35  # fraction of an outline inside another tile's: not two real tiles
#: An unknown outline with at least this fraction of its area inside identified tiles (summed
#: over them) lies across them: a box over two touching tiles of a hand, not a tile.
COVERED_UNKNOWN = 0.5


def resolve_overlapping_reads(reads: Sequence[TileRead]) -> list[TileRead]:
    """Resolve tile outlines that overlap as two real tiles never do.

    Two face-up tiles on a table share at most an edge; an outline with at least
    DUPLICATE_OVERLAP of its area inside another face-up outline is a second box on one tile,
    or a box across two touching tiles of a hand (at angles :func:`drop_straddlers` misses).
    Such a box can read a valid face from the halves of two tiles (seen: the lower halves of
    a 5-6 and its neighbour read "5-5" on a JPEG frame), so:

    * an unknown outline inside an identified one is dropped (the identified read is the tile;
      the duplicate would make its position look like five tiles, never settled), and so is
      one lying at least COVERED_UNKNOWN inside identified tiles taken together (a box across
      two touching tiles; a real tile is never that much under other real tiles);
    * an identified outline lying that much inside two or more other face-up outlines is a
      straddler and is dropped;
    * otherwise, two identified outlines that overlap that much both become unknown
      ("overlapping outlines"): which one is the tile is not known, and nothing is settled
      from a guess.

    Face-down tiles (stacks) are left alone. If a real tile were dropped, its position would
    have three tiles and would not settle.

    Args:
        reads: decoded reads of one frame (image px polygons).

    Returns:
        the reads to report (same order; changed reads are new :class:`TileRead` objects).
    """
    reads = list(reads)
    up = [i for i, r in enumerate(reads) if r.state != "face_down"]
    if len(up) < 2:
        return reads
    inside = inside_fractions(np.stack([reads[i].polygon for i in up]))
    frac = inside >= DUPLICATE_OVERLAP
    known = [k for k, i in enumerate(up) if reads[i].state == "face_up"]
    over = {k: [m for m in known if frac[k, m]] for k in range(len(up))}
    drop = {k for k in over if reads[up[k]].state == "unknown"
            and (over[k] or inside[k, known].sum() >= COVERED_UNKNOWN)}
    drop |= {k for k in known if len(over[k]) >= 2}  # across two identified tiles
    conflict = {x for k in known if k not in drop
                for m in over[k] if m not in drop for x in (k, m)}
    gone = {up[k] for k in drop}
    changed = {up[k] for k in conflict}
    return [r.as_unknown(f"overlapping outlines (read {r.face})") if i in changed else r
            for i, r in enumerate(reads) if i not in gone]


def context_pad(image: np.ndarray, fraction: float) -> tuple[np.ndarray, int]:
    """Add a border of ``fraction`` x the image's longer side around ``image``, filled with
    neutral grey (128, as transparent pixels are composited by :mod:`vision.capture`): a dark
    tile and a light tile both stand out from it, where a border of the picture's own edge
    colour would hide a black tile filling a black picture.

    A close-up whose tile fills the whole picture (a catalogue photo, a single-tile drawing)
    lies outside the tile model's training range (close-ups fill 40-95 % of the frame, see
    vision/synth.py); the border puts it back inside without changing any pixel of the tile.

    Args:
        image: uint8 (H, W, 3) BGR.
        fraction: border width as a fraction of max(H, W) (0 = none).

    Returns:
        ``(padded image, border px)``; detections on the padded image map back by subtracting
        the border from x and y.
    """
    import cv2

    b = int(round(float(fraction) * max(image.shape[:2])))
    if b <= 0:
        return image, 0
    return cv2.copyMakeBorder(image, b, b, b, b, cv2.BORDER_CONSTANT, value=(128, 128, 128)), b


def single_tile_outline(image: np.ndarray) -> np.ndarray:
    """The outline of the one tile a close-up shows (a catalogue photo or drawing of a single
    tile, as in ../shared/realdata): the minimum-area rectangle around the pixels that differ
    from the picture's edge colour, or the whole picture when nothing stands out.

    Args:
        image: uint8 (H, W, 3) BGR; transparent pixels already composited on grey.

    Returns:
        float32 (4, 2) polygon, image px.
    """
    import cv2

    h, w = image.shape[:2]
    whole = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
    ring = np.concatenate([image[0], image[-1], image[:, 0], image[:, -1]]).reshape(-1, 3)
    edge = np.median(ring, axis=0)
    mask = (np.abs(image.astype(np.int16) - edge).max(axis=2) > 40).astype(np.uint8)
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    if not contours:
        return whole
    c = max(contours, key=cv2.contourArea)
    if cv2.contourArea(c) < 0.05 * h * w:  # nothing tile-sized stands out (the tile fills it)
        return whole
    return cv2.boxPoints(cv2.minAreaRect(c)).astype(np.float32)


PICTURE_OUTLINE_CONFIDENCE = 0.9  # tile confidence given to a close-up's picture outline
PICTURE_MIN_AREA = 0.3            # the outline must cover this fraction of the picture
PICTURE_MAX_MODEL_TILES = 3       # more confident tile-model tiles than this: a table picture


def picture_candidate(image: np.ndarray, dets: Detections) -> Detections:
    """The close-up proposal of a still image: when the picture is a close-up of one tile (a
    catalogue photo, a drawing, a labelling tool's crop), its outline from
    :func:`single_tile_outline` as one more face-up tile candidate, for the decoder to verify
    like any other (both reads must agree, or it is unknown).

    Proposed only when the outline is tile-shaped (sides 1.5-3.4 : 1; the decoder checks
    1.6-3.2), covers at least PICTURE_MIN_AREA of the picture, and the tile model found at most
    PICTURE_MAX_MODEL_TILES tiles with confidence >= 0.5 (a table picture has more). Why: the
    tile model is trained on tables and on close-ups filling 40-100 % of the frame, and on
    real catalogue pictures its outlines are loose or missing (models/MODEL_CARD.md); the
    picture's own edge is the better outline there.

    Args:
        image: uint8 (H, W, 3) BGR.
        dets: the tile model's detections on ``image`` (px).

    Returns:
        Detections with 0 or 1 rows: class TILE, confidence PICTURE_OUTLINE_CONFIDENCE.
    """
    h, w = image.shape[:2]
    confident = int(((dets.confidence >= 0.5) & (dets.class_id == TILE)).sum()) if len(dets) else 0
    if confident > PICTURE_MAX_MODEL_TILES:
        return Detections.empty()
    import cv2

    poly = order_polygon(single_tile_outline(image))
    area = float(cv2.contourArea(poly.astype(np.float32)))
    if not (1.5 <= tile_aspect(poly) <= 3.4) or area < PICTURE_MIN_AREA * h * w:
        return Detections.empty()
    return Detections.from_polygons(poly[None], [PICTURE_OUTLINE_CONFIDENCE], [TILE])


def merge_picture_read(reads: list[TileRead], cand: TileRead) -> list[TileRead]:
    """Combine the tile model's reads of a close-up with the picture outline's read.

    The picture read replaces the model reads lying inside it (half or more of their outline
    within its outline, :func:`inside_fractions`) when it names a face and none of them names a different one; when one
    does, every read involved becomes unknown ("close-up reads disagree"): a disagreement is
    never settled. An unknown picture read is dropped (the model reads stand).

    Args:
        reads: reads of the tile model's detections (image px).
        cand: the read of :func:`picture_candidate`'s outline.

    Returns:
        the reads to report.
    """
    if cand.face is None:
        return list(reads)
    if not reads:
        return [cand]
    frac = inside_fractions(np.stack([r.polygon for r in reads] + [cand.polygon]))[:-1, -1]
    inside = [r for r, f in zip(reads, frac) if f >= 0.5]
    rest = [r for r, f in zip(reads, frac) if f < 0.5]
    others = sorted({r.face for r in inside if r.face is not None and r.face != cand.face})
    if others:
        why = (f"close-up reads disagree: picture outline {cand.face}, tile model "
               f"{', '.join(others)}")
        return [*rest, *(r.as_unknown(why) for r in [cand, *inside])]
    return [*rest, cand]


def identify(paths: Sequence[str | Path], models_dir: str | Path = MODELS_DIR,
             backend: str = "onnx", min_confidence: float = 0.5, tile_detector=None,
             pip_detector=None, progress: bool = False, with_reads: bool = False,
             pad: float = 0.0, single: bool = False, closeups: bool = True,
             scales: Sequence[int] | None = None) -> list[dict]:
    """Identify the tiles in still images.

    Each image's tiles come from the tile model; a close-up of one tile also gets its picture
    outline as a candidate (:func:`picture_candidate`, :func:`merge_picture_read`; off with
    ``closeups=False``). Every candidate is verified by the decoder's two reads.

    Args:
        paths: image files, folders or globs (each expanded by :func:`vision.capture.open_source`).
        with_reads: add each tile's decoder evidence (``"reads"``: read A/B counts, reason).
        pad: context border for close-ups (:func:`context_pad`), fraction of the longer side;
            results are in the original image's pixels (clipped to it).
        single: each image shows exactly one tile (a catalogue close-up): its outline comes
            from :func:`single_tile_outline` instead of the tile model; spots and the two reads
            are as always.
        closeups: propose the picture outline of a one-tile close-up (see above).
        scales: tile-model input sizes fused per image (see :class:`Pipeline`).

    Returns:
        ``[{"image": path, "tiles": [{"face": "1-5" | None, "state": "face_up|face_down|unknown",
        "confidence": 0.99, "xyxy": [x1, y1, x2, y2], "polygon": [[x, y] * 4]}]}]``.

    Raises:
        InputError: a path that is missing, not an image, an empty folder; missing models.
    """
    from .capture import open_source

    if not paths:
        raise InputError("no image given")
    sources = [open_source(str(p)) for p in paths]  # validate every path first
    for s in sources:
        if s.kind not in ("image", "images"):
            s.close()
            raise InputError(f"not an image, folder or glob of images: {s.spec}")
    pipe = Pipeline(models_dir, backend, n_stable=1, min_confidence=min_confidence, scales=scales,
                    tile_detector=tile_detector, pip_detector=pip_detector, draw=False)
    out = []
    total = sum(s.frame_count or 0 for s in sources)
    bar = _progress(total, progress, "identify")
    for s in sources:
        with s:
            for fr in s:
                image, border = context_pad(fr.image, pad)
                if single:
                    poly = single_tile_outline(image)
                    dets = Detections.from_polygons(order_polygon(poly)[None], [1.0], [TILE])
                    reads, _ = pipe.decode(image, dets, use_cache=False)
                else:
                    reads, dets = pipe.read_still(image)
                    if closeups:
                        cand = picture_candidate(image, dets)
                        if len(cand):
                            creads, _ = pipe.decode(image, cand, use_cache=False)
                            reads = merge_picture_read(reads, creads[0])
                    reads = resolve_overlapping_reads(reads)
                h, w = fr.image.shape[:2]
                tiles = []
                for r in reads:
                    if border:
                        r.polygon = np.asarray(r.polygon, np.float32) - border
                        r.xyxy = np.clip(np.asarray(r.xyxy, np.float32) - border,
                                         0, [w, h, w, h]).astype(np.float32)
                    d = r.to_dict()
                    if with_reads:
                        d["reads"] = r.reads
                        d["reason"] = r.reason
                    tiles.append(d)
                out.append({"image": fr.path or fr.source, "tiles": tiles})
                if bar is not None:
                    bar.update(1)
    if bar is not None:
        bar.close()
    return out


def _progress(total: int | None, enabled: bool, desc: str):
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total or None, desc=desc, unit="frame", file=sys.stderr, leave=False)


# ---------------------------------------------------------------------- run


class _Sink:
    """Annotated output: a video file (mp4v .mp4, else MJPG .avi) or image files."""

    def __init__(self, out_dir: Path, kind: str, fps: float | None) -> None:
        self.out_dir = out_dir
        self.kind = kind
        self.fps = fps or 30.0
        self.writer = None
        self.path: Path | None = None
        self.images: list[Path] = []

    def write(self, image: np.ndarray, frame) -> None:
        import cv2

        if self.kind in ("image", "images"):
            d = self.out_dir / "annotated"
            d.mkdir(parents=True, exist_ok=True)
            name = Path(getattr(frame, "path", None) or f"frame{frame.index:06d}.png").stem
            p = d / f"{name}.jpg"
            cv2.imwrite(str(p), image)
            self.images.append(p)
            return
        if self.writer is None:
            h, w = image.shape[:2]
            for ext, fourcc in ((".mp4", "mp4v"), (".avi", "MJPG")):
                p = self.out_dir / f"annotated{ext}"
                wr = cv2.VideoWriter(str(p), cv2.VideoWriter_fourcc(*fourcc), self.fps, (w, h))
                if wr.isOpened():
                    self.writer, self.path = wr, p
                    break
                wr.release()
            if self.writer is None:
                raise InputError(f"cannot write a video into {self.out_dir}")
        self.writer.write(image)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.release()
            self.writer = None


def _open_audit(audit):
    """``(store, owned)`` for :func:`run`'s ``audit`` argument (imports vision.audit only here).

    Raises:
        InputError: a bad path, a foreign or damaged file (from :class:`vision.audit.AuditStore`).
    """
    from .audit import AuditStore

    if isinstance(audit, AuditStore):
        return audit, False
    if not isinstance(audit, (str, os.PathLike)) or not str(audit).strip():
        raise InputError(f"audit store must be a path or an AuditStore, got {audit!r}")
    return AuditStore(audit, create=True), True


def _round_number(round_id: str | None) -> int:
    """The number of a pipeline round id ``"r000042"`` -> 42 (0 for anything else)."""
    if isinstance(round_id, str) and len(round_id) > 1 and round_id[0] == "r" \
            and round_id[1:].isdigit():
        return int(round_id[1:])
    return 0


def run(source: str, layout: Layout | str | Path | None = None, out_dir: str | Path | None = None,
        show: bool = False, json_events: bool = False, models_dir: str | Path = MODELS_DIR,
        backend: str = "onnx", n_stable: int | None = None, banker: str | None = None,
        table_id: str | None = None, progress: bool = True, tile_detector=None,
        pip_detector=None, frames: Iterable | None = None, stdout=None,
        max_frames: int | None = None, audit=None, **pipeline_kw) -> dict:
    """Run the whole pipeline on a source.

    Args:
        source: camera index, video file, stream URL, image file, folder or glob
            (:func:`vision.capture.open_source`).
        layout: layout YAML path or :class:`Layout` (None: automatic grouping).
        out_dir: folder for the annotated output (``annotated.mp4`` or ``annotated/*.jpg``) and
            ``events.jsonl`` (one line per round, flushed and fsynced); None writes no files.
        show: display frames in a window (needs an OpenCV build with GUI; InputError if not).
        json_events: print one JSON line per settled round on ``stdout`` (flushed).
        n_stable: frames for a position to be final. None: 10 for video/live sources; for image
            files each image is its own table (tracker reset per image, N = 1).
        banker, table_id: override the layout's.
        frames: iterate these :class:`vision.capture.Frame` s instead of opening ``source``
            (the demo and tests).
        max_frames: stop after this many frames.
        audit: an audit store -- a path (SQLite file, created when missing; or a
            ``postgresql://`` URL) or an open :class:`vision.audit.AuditStore` -- or None.
            Every settled round is appended (:meth:`vision.audit.AuditStore.append`: one
            durable transaction, alerts of :mod:`vision.alerts` merged in) on the frame that
            settles it, *before* it is written to ``events.jsonl`` and ``stdout``, with that
            frame as key frame (the annotated frame; the raw one when drawing is off). So a
            crash loses at most the round in progress, and the store never holds fewer rounds
            than were reported. The event written out is the stored payload (merged alerts).
            Round ids continue from the store's last ``r<number>`` of the table, so a
            restarted table keeps unique round ids. A path is opened before the first frame
            and closed at the end; a given store is left open. ``vision.audit`` is imported
            only when ``audit`` is given.
        pipeline_kw: passed to :class:`Pipeline` (rules, commission, min_confidence, ...).

    Returns:
        summary dict: ``{"source", "frames", "rounds", "ms_per_frame": {stage: ms},
        "fps_pipeline", "fps_wall", "events": [event dicts], "output": path, "events_path",
        "capture_stats", "model_version"}`` plus, with ``audit``, ``"audit": {"store",
        "appended", "head_hash"}``.

    Raises:
        InputError: bad source, layout or models; a bad audit store path or a file that is not
            an audit store (before any frame is processed); ``--show`` without a GUI.
    """
    from .capture import open_source

    stdout = stdout or sys.stdout
    src = None
    kind = "video"
    fps = None
    total = None
    store, own_store = None, False
    sink = None
    file_writer = stream_writer = None
    bar = None
    appended = 0
    head_hash = None
    try:
        if frames is None:
            src = open_source(source)
            kind, fps, total = src.kind, src.fps, src.frame_count
            frames = src
        stills = kind in ("image", "images") and n_stable is None
        if audit is not None:  # cheap and decisive: before the models are loaded
            store, own_store = _open_audit(audit)
        pipe = Pipeline(models_dir, backend, layout=layout,
                        n_stable=1 if stills else (n_stable or 10), banker=banker,
                        table_id=table_id, tile_detector=tile_detector,
                        pip_detector=pip_detector, source=str(source), **pipeline_kw)
        pipe.still_images = stills
        if store is not None:
            if store.table_id is not None and store.table_id != pipe.table_id:
                raise InputError(f"audit store {store.label!r} records table "
                                 f"{store.table_id!r}, this run is table {pipe.table_id!r}")
            last = store.last_record(pipe.table_id)
            pipe.round_base = _round_number(last.round_id) if last is not None else 0
        out_path = Path(out_dir) if out_dir is not None else None
        if out_path is not None:
            out_path.mkdir(parents=True, exist_ok=True)
            sink = _Sink(out_path, kind, fps)
            file_writer = EventWriter(out_path / "events.jsonl", fsync=True)
        if json_events:
            stream_writer = EventWriter(None, stdout)
        if show:
            import cv2

            try:
                cv2.namedWindow("paigow")
            except cv2.error:
                raise InputError("--show needs an OpenCV build with GUI support "
                                 "(opencv-python-headless has none)") from None
        events: list[dict] = []
        capture_s = 0.0
        bar = _progress(total, progress and total is not None and total > 1, "run")
        t_start = time.perf_counter()
        try:
            it = iter(frames)
            n = 0
            while True:
                tc = time.perf_counter()
                try:
                    fr = next(it)
                except StopIteration:
                    break
                capture_s += time.perf_counter() - tc
                if stills:
                    pipe.reset()
                annotated, res = pipe.process(fr)
                if res.event is not None:
                    ev = res.event
                    if store is not None:  # durable first, then reported
                        rec = store.append(ev, frame=annotated)
                        ev["alerts"] = rec.alerts
                        appended += 1
                        head_hash = rec.hash
                    events.append(ev)
                    if file_writer is not None:
                        file_writer.write(ev)
                    if stream_writer is not None:
                        stream_writer.write(ev)
                if sink is not None:
                    sink.write(annotated, fr)
                if show:
                    import cv2

                    cv2.imshow("paigow", annotated)
                    if cv2.waitKey(1) & 0xFF in (ord("q"), 27):
                        break
                if bar is not None:
                    bar.update(1)
                n += 1
                if max_frames is not None and n >= max_frames:
                    break
        finally:
            wall = time.perf_counter() - t_start
    finally:
        if bar is not None:
            bar.close()
        if sink is not None:
            sink.close()
        for w in (file_writer, stream_writer):
            if w is not None:
                w.close()
        if src is not None:
            src.close()
        if store is not None and own_store:
            store.close()
    summary = pipe.summary(capture_s, wall)
    summary.update({
        "source": str(source),
        "events": events,
        "output": (str(sink.path) if sink is not None and sink.path is not None
                   else (str(out_path / "annotated") if sink is not None and sink.images else None)),
        "events_path": str(out_path / "events.jsonl") if out_path is not None else None,
        "capture_stats": src.stats().to_dict() if src is not None else None,
        "model_version": pipe.model_version,
    })
    if store is not None:
        summary["audit"] = {"store": store.label, "appended": appended, "head_hash": head_hash}
    return summary


# ---------------------------------------------------------------------- demo


def demo_deal(seed: int = DEMO_SEED) -> dict[str, list[str]]:
    """The demo's deal: 32 tiles shuffled by ``seed``; the dealer's four set by the house way
    (high hand first), the seats' four as dealt."""
    from scoring.setting import house_way_setting
    from scoring.tiles import STANDARD_SET

    rng = np.random.default_rng(seed)
    faces = [STANDARD_SET[i].face for i in rng.permutation(len(STANDARD_SET))]
    order = ["dealer"] + [str(i) for i in range(1, 8)]
    deal = {p: faces[4 * k: 4 * k + 4] for k, p in enumerate(order)}
    s = house_way_setting(deal["dealer"])
    deal["dealer"] = [t.face for t in (*s.high, *s.low)]
    return deal


def demo_frames(seed: int = DEMO_SEED, n_deal: int = 12, n_still: int = 24,
                size=(1920, 1080)):
    """Frames of a short rendered round: the dealing (positions appear one after another while
    a hand-shaped occluder covers the newest), then the still table.

    Returns:
        ``(frames, scene)``: list of :class:`vision.capture.Frame` (``n_deal + n_still``,
        30 fps timestamps) and the final :class:`vision.synth.TableScene`.
    """
    import cv2

    from .capture import Frame
    from .geometry import expand_polygon
    from .synth import render_table

    scene = render_table(seed, size=size, deal=demo_deal(seed))
    full = scene.image
    rng = np.random.default_rng(seed)
    order = ["dealer"] + [str(i) for i in range(1, 8)]
    masks = {p: np.zeros(full.shape[:2], np.uint8) for p in order}
    for t in scene.tiles:
        if t.position in masks:
            cv2.fillConvexPoly(masks[t.position],
                               np.round(expand_polygon(t.polygon, 0.25)).astype(np.int32), 255)
    everything = np.zeros(full.shape[:2], np.uint8)
    for m in masks.values():
        everything |= m
    empty = cv2.inpaint(full, everything, 5, cv2.INPAINT_TELEA)  # the table before the deal
    frames = []
    idx = 0
    shown_mask = np.zeros(full.shape[:2], bool)
    n_shown = 0
    for k in range(n_deal):
        want = int(round((k + 1) / n_deal * len(order)))
        while n_shown < want:
            shown_mask |= masks[order[n_shown]] > 0
            n_shown += 1
        img = np.where(shown_mask[..., None], full, empty)
        pts = np.concatenate([t.polygon for t in scene.tiles if t.position == order[n_shown - 1]])
        c = pts.mean(0) + rng.normal(0, 10, 2)
        cv2.ellipse(img, (int(c[0]), int(c[1])), (90, 55), float(rng.uniform(0, 180)), 0, 360,
                    (60, 80, 110), -1)
        frames.append(Frame(img, idx / 30.0, idx, f"demo:{seed}", None))
        idx += 1
    for _ in range(n_still):
        frames.append(Frame(full, idx / 30.0, idx, f"demo:{seed}", None))
        idx += 1
    return frames, scene


def settlement_table(event: dict) -> str:
    """Readable settlement table of one round event (one line per position)."""
    lines = [f"round {event['round_id']}  table {event['table_id']}  banker "
             f"{event['banker_position']}  rules {event['rules']}  commission {event['commission']}"]
    lines.append(f"{'position':<9}{'high':<12}{'low':<12}{'high hand':<22}{'low hand':<22}"
                 f"{'result':<12}{'net':>8}")
    for p, e in event["positions"].items():
        hi = " ".join(e["high"]) if e.get("high") else "-"
        lo = " ".join(e["low"]) if e.get("low") else "-"
        res = "banker" if e.get("role") == "banker" and e.get("result") is None else e.get("result")
        lines.append(f"{p:<9}{hi:<12}{lo:<12}{str(e.get('high_hand') or '-'):<22}"
                     f"{str(e.get('low_hand') or '-'):<22}{str(res):<12}{str(e.get('net') or '-'):>8}")
    for a in event.get("alerts", []):
        lines.append(f"alert {a['kind']} at {a['position']}: {a['detail']}")
    return "\n".join(lines)


def demo(out_dir: str | Path = "demo_out", models_dir: str | Path = MODELS_DIR,
         backend: str = "onnx", json_events: bool = False, seed: int = DEMO_SEED,
         tile_detector=None, pip_detector=None, stdout=None, n_stable: int = 8,
         prepared: tuple | None = None) -> dict:
    """Render a short table round (held-out seed), run the full pipeline, write
    ``annotated.mp4`` and ``events.jsonl`` to ``out_dir`` and print the settlement table
    (or the events as JSON lines with ``json_events``).

    ``prepared``: ``(frames, scene)`` from :func:`demo_frames` (skips rendering; tests).

    Returns:
        the :func:`run` summary plus ``"truth"``: the rendered deal.

    Raises:
        InputError: missing models (naming the file).
    """
    stdout = stdout or sys.stdout
    if tile_detector is None or pip_detector is None:
        load_detectors(models_dir, backend)  # fail fast, before rendering
    frames, scene = prepared if prepared is not None else demo_frames(seed)
    from .table import Layout as _Layout

    layout = _Layout.from_dict(scene.layout, where="demo layout")
    summary = run(f"demo:{seed}", layout=layout, out_dir=out_dir, json_events=json_events,
                  models_dir=models_dir, backend=backend, n_stable=n_stable, frames=frames,
                  tile_detector=tile_detector, pip_detector=pip_detector, stdout=stdout,
                  progress=False)
    if not json_events:
        for ev in summary["events"]:
            print(settlement_table(ev), file=stdout)
        if not summary["events"]:
            print("no round settled (tiles not read well enough)", file=stdout)
        ms = summary["ms_per_frame"]
        print(f"{summary['frames']} frames, {summary['rounds']} round(s); ms/frame "
              + ", ".join(f"{k} {v}" for k, v in ms.items())
              + f"; {summary['fps_pipeline']} fps; output {summary['output']}", file=stdout)
    summary["truth"] = scene.deal
    return summary
