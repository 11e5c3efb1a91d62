"""Video: re-detect only the part of the frame the motion gate fired on (issue 21).

While a round is dealt only one position and the dealer's hand change, yet the tile model ran on
the whole frame (a 1080p frame letterboxed to 384 x 640) every ``motion_detect_every`` frames.
With :attr:`vision.config.GateConfig.region_detect` the engine
(:meth:`vision.recognition.engine.RecognitionEngine._detect_gated`) runs it on a crop instead:

1. *core*: the bounding box of the gate's fired blocks
   (:attr:`vision.recognition.gate.GateDecision.blocks`, frame px), grown to contain every
   previous detection it touches (a tile partly inside the change is re-detected whole);
2. *region*: the core grown by a margin of at least one tile length (the median long side of
   the previous detections, :func:`tile_length`) on each side, clipped to the frame, then
   widened so the crop, resized by the full-frame pass's letterbox gain, fills a whole input of
   the model's stride (:func:`plan_region`): the model sees the tiles at the SAME size (pixels
   per tile) as in the full-frame pass, on an input a fraction of its size;
3. *merge* (:func:`merge_region`): the previous detections whose centre lies outside the core,
   plus the crop's detections whose centre lies inside it and that do not touch a border of
   the crop inside the frame.

Why this gives the detections a full-frame pass would: the gate's blocks outside the core did
not change (mean block difference within ``motion_threshold``) against the picture the previous
detections there were made of -- the gate keeps that picture per block
(:meth:`vision.recognition.gate.MotionGate.ran` renews its reference only inside the core), so
a slow change there still adds up and fires the gate. Every tile whose centre is in the core
lies whole inside the crop (the margin is a tile length), at the full pass's scale, with a tile
length of context around it. A region larger than
:attr:`vision.config.GateConfig.region_max_area` of the frame, the first frame, a frame with no
previous detections and the gate's periodic re-detection of a still picture run the full frame
(the latter corrects anything a region run may have left). The still reading
(:meth:`vision.recognition.engine.RecognitionEngine._read_still`) never uses regions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from vision.detections import Detections
from vision.recognition.overlaps import drop_straddlers

__all__ = ["RegionPlan", "tile_length", "plan_region", "merge_region", "BORDER_PX"]

#: A crop detection with a corner within this many px of a crop side inside the frame touches
#: it (a tile cut by the crop: its outline is not the tile's).
BORDER_PX = 2.0


@dataclass(frozen=True)
class RegionPlan:
    """Where to re-detect.

    Attributes:
        core: ``(x0, y0, x1, y1)`` float frame px: detections are taken from the crop inside
            it, kept from the previous ones outside it.
        crop: ``(x0, y0, x1, y1)`` int frame px, the crop handed to the tile model.
        imgsz: the model's input size for the crop (longer side, a multiple of the stride):
            the letterbox then resizes the crop by the full-frame pass's gain.
        area: the crop's share of the frame's area (0, 1].
    """

    core: tuple[float, float, float, float]
    crop: tuple[int, int, int, int]
    imgsz: int
    area: float


def tile_length(dets: Detections) -> float:
    """The median long side of the detections' outlines, px (0.0 for none)."""
    if not len(dets):
        return 0.0
    p = np.asarray(dets.polygon, np.float64)
    sides = np.linalg.norm(p - np.roll(p, -1, axis=1), axis=2)  # (n, 4)
    return float(np.median(sides.max(1)))


def _centres(dets: Detections) -> np.ndarray:
    return np.asarray(dets.polygon, np.float64).mean(1) if len(dets) else np.zeros((0, 2))


def _inside(pts: np.ndarray, box) -> np.ndarray:
    x0, y0, x1, y1 = box
    return ((pts[:, 0] >= x0) & (pts[:, 0] < x1) & (pts[:, 1] >= y0) & (pts[:, 1] < y1))


def _side(lo: float, hi: float, need: int, size: int) -> tuple[int, int]:
    """A span of ``need`` px (<= size) covering [lo, hi] as centred as the frame allows."""
    mid = (lo + hi) / 2
    a = int(round(mid - need / 2))
    a = min(max(a, 0), size - need)
    return a, a + need


def plan_region(changed: tuple[float, float, float, float], prev: Detections,
                shape: tuple[int, ...], gain: float, stride: int, max_area: float
                ) -> RegionPlan | None:
    """The crop to re-detect (module docstring), or None: run the full frame.

    Args:
        changed: ``(x0, y0, x1, y1)`` frame px, the bounding box of the gate's fired blocks.
        prev: the previous detections of the frame (frame px); none: None (no tile length).
        shape: the frame's shape ``(H, W, ...)``.
        gain: the full-frame pass's letterbox gain (model input px per frame px, e.g. 1/3
            for a 1080p frame at 640).
        stride: the model's stride, px (inputs are multiples of it).
        max_area: the largest share of the frame's area run as a region (0, 1].

    Returns:
        :class:`RegionPlan`, or None when there is no previous detection, or the crop would
        exceed ``max_area`` of the frame, or cannot be sized at the full pass's gain.
    """
    H, W = int(shape[0]), int(shape[1])
    length = tile_length(prev)
    if length <= 0 or gain <= 0:
        return None
    x0, y0, x1, y1 = (float(v) for v in changed)
    touched = (prev.xyxy[:, 0] < x1) & (prev.xyxy[:, 2] > x0) & \
        (prev.xyxy[:, 1] < y1) & (prev.xyxy[:, 3] > y0)
    if touched.any():
        t = prev.xyxy[touched]
        x0, y0 = min(x0, float(t[:, 0].min())), min(y0, float(t[:, 1].min()))
        x1, y1 = max(x1, float(t[:, 2].max())), max(y1, float(t[:, 3].max()))
    core = (max(x0, 0.0), max(y0, 0.0), min(x1, float(W)), min(y1, float(H)))
    margin = math.ceil(length)
    rx0, ry0 = max(core[0] - margin, 0.0), max(core[1] - margin, 0.0)
    rx1, ry1 = min(core[2] + margin, float(W)), min(core[3] + margin, float(H))
    # model input per side (stride multiples); the crop fills it at the full pass's gain
    n_w = max(stride, math.ceil((rx1 - rx0) * gain / stride) * stride)
    n_h = max(stride, math.ceil((ry1 - ry0) * gain / stride) * stride)
    imgsz = max(n_w, n_h)
    need_w, need_h = round(n_w / gain), round(n_h / gain)
    # the letterbox scales the crop by imgsz / its longer side: that side must be whole
    if (need_w if n_w >= n_h else need_h) > (W if n_w >= n_h else H):
        return None
    need_w, need_h = min(need_w, W), min(need_h, H)
    if need_w * need_h > max_area * W * H:
        return None
    cx0, cx1 = _side(rx0, rx1, need_w, W)
    cy0, cy1 = _side(ry0, ry1, need_h, H)
    return RegionPlan(core, (cx0, cy0, cx1, cy1), int(imgsz), need_w * need_h / (W * H))


def merge_region(prev: Detections, found: Detections, plan: RegionPlan,
                 shape: tuple[int, ...]) -> Detections:
    """The frame's detections after a region run (module docstring, step 3).

    Args:
        prev: the previous detections, frame px.
        found: the crop's detections, already in frame px.
        plan: the region run's :class:`RegionPlan`.
        shape: the frame's shape ``(H, W, ...)``.

    Returns:
        :class:`Detections`, frame px, by descending confidence, without straddling outlines
        (:func:`vision.recognition.overlaps.drop_straddlers`, as the full-frame pass).
    """
    H, W = int(shape[0]), int(shape[1])
    keep_prev = prev[~_inside(_centres(prev), plan.core)] if len(prev) else prev
    if len(found):
        ok = _inside(_centres(found), plan.core)
        x0, y0, x1, y1 = plan.crop
        p = np.asarray(found.polygon, np.float64)
        b = BORDER_PX
        if x0 > 0:
            ok &= p[:, :, 0].min(1) > x0 + b
        if y0 > 0:
            ok &= p[:, :, 1].min(1) > y0 + b
        if x1 < W:
            ok &= p[:, :, 0].max(1) < x1 - b
        if y1 < H:
            ok &= p[:, :, 1].max(1) < y1 - b
        found = found[ok]
    merged = Detections.merge([keep_prev, found])
    if len(merged):
        merged = merged[np.argsort(-merged.confidence, kind="stable")]
    return drop_straddlers(merged)
