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
   the model's stride, starting on the full pass's stride grid (:func:`plan_region`): the model
   sees the tiles at the SAME size (pixels per tile) as in the full-frame pass -- away from the
   frame's edges the crop's input is the very pixels of the full pass's input there, on the
   same grid -- on an input a fraction of its size;
3. *merge* (:func:`merge_region`): the previous detections whose centre lies outside the core,
   plus the crop's detections whose centre lies inside it and that do not touch a border of
   the crop inside the frame.

What the merged detections are, and why they cannot settle a round wrongly: each is the tile
model's own outline at the whole-frame pass's scale, of pixels that are the frame's -- inside
the core this frame's, outside it pixels in which the gate saw no change since they were
detected (the gate keeps that picture per block: :meth:`vision.recognition.gate.MotionGate.ran`
renews its reference only inside the core, so a slow change there still adds up and fires the
gate). Every tile whose centre is in the core lies whole inside the crop (the margin is a tile
length). They are not bit for bit a whole-frame pass's: the model's outline of a tile also
depends on the picture beyond the crop (its receptive field and attention span the whole
input; the agreement measured on rendered rounds is in docs/configuration.md). A face is decided from an outline as from any
other (decode's checks of shape and spots, the vet, and the fused still reading, which never
uses regions, stands for a still picture), so a different outline can leave a tile unknown, not
name a wrong face: the same rounds settled with and without regions on five rendered rounds,
and no wrong face was read on any frame of two (tests/test_region.py, docs/configuration.md).

A region larger than :attr:`vision.config.GateConfig.region_max_area` of the frame, the first
frame, a frame with no previous detections and the gate's periodic re-detection of a still
picture run the whole frame (the latter renews every kept outline; while the engine's still
reading stands there is none, and that reading is the frame's reads).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from vision.detections import Detections
from vision.recognition.detect import letterbox_geometry
from vision.recognition.overlaps import drop_straddlers

__all__ = ["RegionPlan", "tile_length", "full_pass_grid", "plan_region", "cut", "merge_region",
           "BORDER_PX"]

#: The margin around the core, in tile lengths (at least 1: a tile whose centre is in the core
#: lies whole inside the crop). 2 and 3 were tried on rendered rounds (1000901-3): the crop's
#: detections agreed no better with a whole-frame pass's, at 1.5-2x the area.
MARGIN_TILES = 1.0

#: A crop detection with a corner within this many px of a crop side inside the frame touches
#: it (a tile cut by the crop: its outline is not the tile's).
BORDER_PX = 2.0


@dataclass(frozen=True)
class RegionPlan:
    """Where to re-detect.

    Attributes:
        core: ``(x0, y0, x1, y1)`` float frame px: detections are taken from the crop inside
            it, kept from the previous ones outside it.
        crop: ``(x0, y0, x1, y1)`` int frame px, the crop handed to the tile model (:func:`cut`;
            it may reach past the frame onto the full pass's padding).
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


def full_pass_grid(shape: tuple[int, ...], imgsz: tuple[int, int], stride: int
                   ) -> tuple[float, tuple[float, float, float, float]]:
    """How the whole-frame pass letterboxes a frame (:func:`vision.recognition.detect.letterbox`
    with ``auto=True``, a dynamic-input model): ``(gain, canvas)``, the gain (input px per
    frame px) and the frame px ``(x0, y0, x1, y1)`` its input covers, padding included
    (1080p at 640: 1/3 and (0, -36, 1920, 1116): 12 input rows of padding above and below)."""
    gain, (uw, uh), (left, top, right, bottom) = letterbox_geometry(
        shape[:2], imgsz, auto=True, stride=stride)
    ox, oy = -left / gain, -top / gain
    return gain, (ox, oy, ox + (uw + left + right) / gain, oy + (uh + top + bottom) / gain)


def _axis(lo: float, hi: float, start: float, end: float, gain: float, stride: int
          ) -> tuple[int, int, int] | None:
    """One side of the crop: ``(start px, length px, model input px)`` covering [lo, hi] on the
    whole-frame pass's canvas [start, end) (frame px, :func:`full_pass_grid`). The crop starts on
    that pass's stride grid (``start + k * stride / gain``) and is a whole number of its cells
    long: its input is the very pixels of the pass's input there, on the same grid. None: it
    does not fit on the canvas."""
    step = stride / gain
    a = start + math.floor((lo - start) / step + 1e-9) * step
    cells = max(1, math.ceil((hi - a) / step - 1e-9))
    if a + cells * step > end + 1e-6:  # back by whole cells (the canvas is whole cells)
        a -= math.ceil((a + cells * step - end) / step - 1e-9) * step
    if a < start - 1e-6:
        return None
    return int(round(a)), int(round(cells * step)), cells * stride


def plan_region(changed: tuple[float, float, float, float], prev: Detections,
                shape: tuple[int, ...], gain: float, stride: int, max_area: float,
                canvas: tuple[float, float, float, float] | None = None) -> RegionPlan | None:
    """The crop to re-detect (module docstring), or None: run the full frame.

    Args:
        changed: ``(x0, y0, x1, y1)`` frame px, the bounding box of the gate's fired blocks.
        prev: the previous detections of the frame (frame px); none: None (no tile length).
        shape: the frame's shape ``(H, W, ...)``.
        gain: the full-frame pass's letterbox gain (model input px per frame px, e.g. 1/3
            for a 1080p frame at 640; :func:`full_pass_grid`).
        stride: the model's stride, px (inputs are multiples of it).
        max_area: the largest share of the frame's area run as a region (0, 1].
        canvas: ``(x0, y0, x1, y1)`` frame px covered by the full pass's input, padding
            included (:func:`full_pass_grid`); None: the frame. The crop lies on it, on its
            stride grid, and may reach into its padding (:func:`cut` pads it the same way).

    Returns:
        :class:`RegionPlan`, or None when there is no previous detection, or the crop would
        exceed ``max_area`` of the frame or the canvas.
    """
    H, W = int(shape[0]), int(shape[1])
    canvas = canvas or (0.0, 0.0, float(W), float(H))
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
    margin = math.ceil(max(MARGIN_TILES, 1.0) * length)
    rx0, ry0 = max(core[0] - margin, 0.0), max(core[1] - margin, 0.0)
    rx1, ry1 = min(core[2] + margin, float(W)), min(core[3] + margin, float(H))
    ax = _axis(rx0, rx1, canvas[0], canvas[2], gain, stride)
    ay = _axis(ry0, ry1, canvas[1], canvas[3], gain, stride)
    if ax is None or ay is None:
        return None
    (cx0, need_w, n_w), (cy0, need_h, n_h) = ax, ay
    area = need_w * need_h / (W * H)
    if area > max_area:
        return None
    return RegionPlan(core, (cx0, cy0, cx0 + need_w, cy0 + need_h), int(max(n_w, n_h)), area)


def cut(image: np.ndarray, plan: RegionPlan, pad_value: int = 114) -> np.ndarray:
    """The crop of ``plan`` (uint8 (h, w, 3), contiguous); where it reaches past the frame onto
    the full pass's padding it is padded with the letterbox's grey (114) as that pass is."""
    H, W = image.shape[:2]
    x0, y0, x1, y1 = plan.crop
    sub = image[max(y0, 0):min(y1, H), max(x0, 0):min(x1, W)]
    pads = (max(0, -y0), max(0, y1 - H), max(0, -x0), max(0, x1 - W))
    if any(pads):
        return cv2.copyMakeBorder(sub, *pads, cv2.BORDER_CONSTANT, value=(pad_value,) * 3)
    return np.ascontiguousarray(sub)


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
