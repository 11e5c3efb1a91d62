"""Decode: tile detections + frame -> :class:`TileRead` (face or unknown, with the evidence).

Design: .agents/VISION_DESIGN.md section 3. Each face-up tile is rectified to the canonical
upright crop (:func:`vision.geometry.rectify`, CROP_W x CROP_H = 96 x 192 px, long axis
vertical, a CROP_MARGIN border), the pip model finds its spots (red / white) in crop pixels, and
two independent reads of those spots must agree before a face is accepted:

* **Read A** (colours): the numbers of red and white spots -> the faces with those counts
  (``Tile.red`` / ``Tile.white`` of :mod:`scoring.tiles`). Unique for every face except
  2-6 / 3-5 (both 0 red, 8 white).
* **Read B** (halves): the spots above and below the crop's horizontal midline
  (y = CROP_H / 2) -> the face ``"low-high"``. Spots within ``midline_band`` of the midline
  belong to neither half; only the 3-3 "long" layout (two spots above, two side by side on the
  midline, two below) has such spots, and there read B is *undetermined*.

Read B also checks each half's *shape* (:func:`half_shape_ok`), because agreement of the two
counts alone does not catch every lost spot: a 6 that loses a white spot is a white 5 (4-6 would
read 4-5, 5-6 would read 5-5), a 3 that loses one is a white 2 (3-3 -> 2-3). The shape rules
hold for the usual layouts, independent of where a maker puts them in the half:

* odd counts (3, 5) have a spot at the centre of the others (the diagonal's middle, the
  quincunx's centre); even counts (4, 6) have none -- a 6 missing a spot, or a 5 with an extra
  one, fails this;
* a 2 is an axis-aligned pair: across the tile (|dy| < 0.5 |dx| in the upright crop, as on
  every Chinese set in ../shared/realdata) or along it (|dx| < 0.5 |dy|); a 3 missing its
  centre (a diagonal pair) or a corner fails this. A *diagonal* 2 (western dies, and one style of
  vision.synth) is geometrically the same as a 3 whose centre spot was missed, so it is read as
  unknown unless ``allow_diagonal_two=True`` -- an unknown is a cost, a wrong face a wrong
  payout.

A face is accepted when read B names one of read A's candidates and both halves pass the shape
rules, or when read B is undetermined by exactly the 3-3 long pattern (2 / 2 on the midline / 2)
and read A is exactly 3-3. Anything else -- a missing or extra spot, a red spot read as white,
spots on the midline of another face -- gives ``state="unknown"`` with the reason; an unknown
tile is never settled. Red/white confusions are caught by read A (halves of 1 and 4 are red,
others white), lost/extra spots by the counts and shapes together.

Confidence of an accepted face = min(tile detection confidence, weakest spot confidence): a
face is as sure as its least sure spot. Below ``min_confidence`` the tile is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from scoring.errors import InputError
from scoring.tiles import FACES, TILES_BY_FACE

from .detections import PIP_RED, PIP_WHITE, TILE, TILE_BACK, Detections
from .geometry import CROP_H, CROP_MARGIN, CROP_W, rectify

__all__ = [
    "TileRead",
    "decode_face",
    "decode_tiles",
    "run_pip_detector",
    "half_shape_ok",
    "read_from_pips",
    "CANDIDATES_BY_COLOUR",
    "MIDLINE_BAND",
]

#: (red, white) spot counts -> faces with those counts (read A). Built from scoring.tiles.
CANDIDATES_BY_COLOUR: dict[tuple[int, int], tuple[str, ...]] = {}
for _t in FACES:
    CANDIDATES_BY_COLOUR.setdefault((_t.red, _t.white), ())
    CANDIDATES_BY_COLOUR[(_t.red, _t.white)] += (_t.face,)

#: Half-width of the midline band, as a fraction of the crop height (0.045 * 192 = 8.6 px).
#: The 3-3 long layout's midline pair sits on the midline; spots of an ordinary face sit at
#: least about 0.19 of a half (about 16 px in the crop) from it (vision.synth_draw layouts).
MIDLINE_BAND: float = 0.045

STATES = ("face_up", "face_down", "unknown")


@dataclass
class TileRead:
    """What the decoder read for one detected tile.

    Attributes:
        face: ``"low-high"`` (e.g. ``"1-5"``) when accepted, else None.
        state: ``"face_up"`` (face accepted), ``"face_down"`` (a tile back), or ``"unknown"``
            (a face-up tile whose face was not accepted; never settled).
        confidence: float in [0, 1]: for face_up min(tile confidence, weakest spot
            confidence); for face_down / unknown the tile detection's confidence.
        polygon: float32 (4, 2) tile corners in image pixels (detector order).
        xyxy: float32 (4,) axis-aligned box ``x1, y1, x2, y2`` in image pixels.
        pips: :class:`Detections` of the spots in *crop* pixels (empty for face-down tiles).
        reads: the evidence: ``{"A": {"red", "white", "candidates"}, "B": {"top", "bottom",
            "midline", "face", "layout"}, "ignored": n}``; empty for face-down tiles.
        reason: why the face is unknown (None when accepted or face down).
        tile_confidence: the tile detector's confidence (float).
    """

    face: str | None
    state: str
    confidence: float
    polygon: np.ndarray
    xyxy: np.ndarray
    pips: Detections = field(default_factory=Detections.empty)
    reads: dict = field(default_factory=dict)
    reason: str | None = None
    tile_confidence: float = 1.0

    @property
    def centre(self) -> np.ndarray:
        """Mean of the polygon's corners, float64 (2,) px."""
        return np.asarray(self.polygon, dtype=np.float64).mean(0)

    @property
    def long_side(self) -> float:
        """Mean length of the polygon's two longer sides, px."""
        p = np.asarray(self.polygon, dtype=np.float64)
        s = np.linalg.norm(np.roll(p, -1, 0) - p, axis=1)
        return float(max(s[0] + s[2], s[1] + s[3]) / 2)

    def to_dict(self) -> dict:
        """JSON-ready ``{"face", "state", "confidence", "xyxy", "polygon"}`` (px rounded to
        0.1, confidence to 0.001)."""
        return {
            "face": self.face,
            "state": self.state,
            "confidence": round(float(self.confidence), 3),
            "xyxy": [round(float(v), 1) for v in np.asarray(self.xyxy).reshape(4)],
            "polygon": [[round(float(x), 1), round(float(y), 1)]
                        for x, y in np.asarray(self.polygon).reshape(4, 2)],
        }


#: A spot is "at the centre" of the others when within this fraction of the half's median
#: nearest-neighbour spot spacing.
CENTRE_TOL: float = 0.35


def half_shape_ok(points, allow_diagonal_two: bool = False) -> tuple[bool, str | None]:
    """Check the arrangement of one half's spots against its count (see module docstring).

    Args:
        points: float array (n, 2) of spot centres in crop pixels (one half of the tile).
        allow_diagonal_two: accept a diagonal pair as a 2 (see module docstring).

    Returns:
        ``(ok, why)``; ``why`` names the failed rule when not ok. Counts 0, 1 and more than 6
        pass (the counts themselves are checked elsewhere).
    """
    p = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    n = len(p)
    if n <= 1 or n > 6:
        return True, None
    if n == 2:
        dx, dy = np.abs(p[1] - p[0])
        if allow_diagonal_two or dy < 0.5 * dx or dx < 0.5 * dy:
            return True, None
        return False, "a diagonal 2 (or a 3 missing a spot)"
    d = np.linalg.norm(p[:, None, :] - p[None, :, :], axis=-1)
    np.fill_diagonal(d, np.inf)
    spacing = float(np.median(d.min(1)))
    if spacing <= 0:
        return False, "coincident spots"
    centred = False
    for i in range(n):
        others = np.delete(p, i, 0).mean(0)
        if np.linalg.norm(p[i] - others) < CENTRE_TOL * spacing:
            centred = True
            break
    if n % 2 == 1 and not centred:
        return False, f"a {n} must have a centre spot"
    if n % 2 == 0 and centred:
        return False, f"a {n} has no centre spot"
    return True, None


def _face_of(a: int, b: int) -> str | None:
    lo, hi = sorted((int(a), int(b)))
    f = f"{lo}-{hi}"
    return f if f in TILES_BY_FACE else None


def decode_face(pip_centres, pip_class, pip_conf, crop_size: tuple[int, int] = (CROP_W, CROP_H),
                margin: float = CROP_MARGIN, midline_band: float = MIDLINE_BAND,
                allow_diagonal_two: bool = False) -> tuple[str | None, float, dict]:
    """Decode one tile's face from its spots (pure logic, no image).

    Args:
        pip_centres: float array (k, 2) of spot centres ``(x, y)`` in crop pixels.
        pip_class: int array (k,) of global class ids, 2 = pip_red, 3 = pip_white.
        pip_conf: float array (k,) of spot confidences in [0, 1].
        crop_size: ``(width, height)`` of the crop, default (CROP_W, CROP_H) = (96, 192) px.
        margin: the crop's border fraction (CROP_MARGIN); spots whose centre lies outside the
            tile (beyond half the border) are ignored -- they belong to a neighbouring tile.
        midline_band: half-width of the midline band as a fraction of the crop height.
        allow_diagonal_two: see :func:`half_shape_ok`.

    Returns:
        ``(face, confidence, reads)``: face ``"low-high"`` or None; confidence = weakest
        counted spot's confidence when a face is accepted, else 0.0; ``reads`` the evidence
        (see :class:`TileRead`) with ``reads["reason"]`` saying why when face is None.

    Raises:
        ValueError: arrays of mismatched length or a class id other than 2 / 3.
    """
    c = np.asarray(pip_centres, dtype=np.float64).reshape(-1, 2)
    cls = np.asarray(pip_class, dtype=np.int64).reshape(-1)
    conf = np.asarray(pip_conf, dtype=np.float64).reshape(-1)
    if not (len(c) == len(cls) == len(conf)):
        raise ValueError(f"pip arrays differ in length: {len(c)}, {len(cls)}, {len(conf)}")
    bad = ~np.isin(cls, (PIP_RED, PIP_WHITE))
    if bad.any():
        raise ValueError(f"pip class ids must be {PIP_RED} (red) or {PIP_WHITE} (white), "
                         f"got {sorted(set(cls[bad].tolist()))}")
    w, h = float(crop_size[0]), float(crop_size[1])
    # the tile proper inside the crop (the crop is the polygon enlarged by `margin` per side)
    bx, by = w * margin / (1 + 2 * margin), h * margin / (1 + 2 * margin)
    tol_x, tol_y = bx / 2, by / 2
    inside = ((c[:, 0] >= bx - tol_x) & (c[:, 0] <= w - bx + tol_x)
              & (c[:, 1] >= by - tol_y) & (c[:, 1] <= h - by + tol_y))
    c, cls, conf = c[inside], cls[inside], conf[inside]
    reads: dict[str, Any] = {"ignored": int((~inside).sum())}

    red = int((cls == PIP_RED).sum())
    white = int((cls == PIP_WHITE).sum())
    cand = CANDIDATES_BY_COLOUR.get((red, white), ())
    reads["A"] = {"red": red, "white": white, "candidates": list(cand)}

    mid = h / 2
    band = midline_band * h
    dy = c[:, 1] - mid
    top = int((dy < -band).sum())
    bottom = int((dy > band).sum())
    on_mid = int((np.abs(dy) <= band).sum())
    b_face = _face_of(top, bottom) if on_mid == 0 and top >= 1 and bottom >= 1 else None
    layout = "halves" if on_mid == 0 else ("long" if (top, on_mid, bottom) == (2, 2, 2) else None)
    shape_why = None
    if layout == "halves":
        for name, sel in (("top", dy < -band), ("bottom", dy > band)):
            ok, why = half_shape_ok(c[sel], allow_diagonal_two)
            if not ok:
                shape_why = f"{name} half: {why}"
                break
    reads["B"] = {"top": top, "bottom": bottom, "midline": on_mid, "face": b_face,
                  "layout": layout, "shape": shape_why or "ok"}

    face: str | None = None
    reason: str | None = None
    if len(c) == 0:
        reason = "no spots found"
    elif not cand:
        reason = f"read A: no face has {red} red and {white} white spots"
    elif layout == "long":
        if cand == ("3-3",):
            face = "3-3"
        else:
            reason = f"read B: 3-3 long layout but read A says {'/'.join(cand)}"
    elif b_face is None:
        reason = (f"read B: halves {top}/{bottom} with {on_mid} on the midline name no face")
    elif b_face in cand and shape_why is not None:
        reason = f"read B: {b_face} but {shape_why}"
    elif b_face in cand:
        face = b_face
    else:
        reason = f"reads disagree: A {'/'.join(cand)} ({red} red, {white} white), B {b_face}"
    reads["reason"] = reason
    confidence = float(conf.min()) if face is not None else 0.0
    return face, confidence, reads


def run_pip_detector(pip_detector, crops: Sequence[np.ndarray]) -> list[Detections]:
    """Run ``pip_detector`` on a batch of crops; one :class:`Detections` per crop (crop px).

    Accepts the :class:`vision.detect.PipDetector` interface (``detect_batch(crops)`` or
    ``detect(crops)`` returning a list, or ``detect(crop)`` per crop) and any object or callable
    with the same shape (test fakes).
    """
    crops = list(crops)
    if not crops:
        return []
    for name in ("detect_batch", "detect_crops"):
        fn = getattr(pip_detector, name, None)
        if fn is not None:
            return list(fn(crops))
    fn = getattr(pip_detector, "detect", None) or pip_detector
    try:
        out = fn(crops)
        if isinstance(out, (list, tuple)) and len(out) == len(crops):
            return list(out)
    except (TypeError, AttributeError, ValueError):
        pass
    return [fn(c) for c in crops]


def decode_tiles(frame: np.ndarray, tile_dets: Detections, pip_detector,
                 min_confidence: float = 0.5, allow_diagonal_two: bool = False
                 ) -> list[TileRead]:
    """Read every detected tile of one frame.

    Args:
        frame: uint8 (H, W, 3) BGR image the detections refer to.
        tile_dets: :class:`Detections` of class 0 (tile, face up) and 1 (tile_back) in frame
            pixels, with polygons; other classes are ignored.
        pip_detector: the pip model (see :func:`run_pip_detector`); run once on the batch of
            face-up crops.
        min_confidence: a face below this confidence (fraction) is reported as unknown.
        allow_diagonal_two: see :func:`half_shape_ok`.

    Returns:
        list of :class:`TileRead`, one per tile detection, in detection order.

    Raises:
        InputError: ``min_confidence`` outside [0, 1] or a frame that is not an image.
    """
    if not 0.0 <= float(min_confidence) <= 1.0:
        raise InputError(f"min_confidence must be a fraction in [0, 1], got {min_confidence!r}")
    if len(tile_dets) and (not isinstance(frame, np.ndarray) or frame.ndim != 3):
        raise InputError(f"frame must be an (H, W, 3) image, got {getattr(frame, 'shape', frame)!r}")
    reads: list[TileRead | None] = []
    up_idx: list[int] = []
    crops: list[np.ndarray] = []
    for i in range(len(tile_dets)):
        cid = int(tile_dets.class_id[i])
        poly = tile_dets.polygon[i]
        conf = float(tile_dets.confidence[i])
        if cid == TILE_BACK:
            reads.append(TileRead(None, "face_down", conf, poly.copy(), tile_dets.xyxy[i].copy(),
                                  tile_confidence=conf))
        elif cid == TILE:
            crop, _ = rectify(frame, poly)
            up_idx.append(len(reads))
            crops.append(crop)
            reads.append(None)
        else:
            continue
    all_pips = run_pip_detector(pip_detector, crops)
    det_rows = [i for i in range(len(tile_dets)) if int(tile_dets.class_id[i]) in (TILE, TILE_BACK)]
    for k, slot in enumerate(up_idx):
        i = det_rows[slot]
        reads[slot] = read_from_pips(all_pips[k], tile_dets.polygon[i], tile_dets.xyxy[i],
                                     float(tile_dets.confidence[i]), min_confidence,
                                     allow_diagonal_two)
    return [r for r in reads if r is not None]


def read_from_pips(pips: Detections, polygon, xyxy, tile_confidence: float,
                   min_confidence: float = 0.5, allow_diagonal_two: bool = False) -> TileRead:
    """The :class:`TileRead` of one face-up tile from its spot detections (crop px)."""
    centres = (pips.xyxy[:, :2] + pips.xyxy[:, 2:]) / 2 if len(pips) else np.zeros((0, 2))
    face, conf, reads = decode_face(centres, pips.class_id, pips.confidence,
                                    allow_diagonal_two=allow_diagonal_two)
    reason = reads.get("reason")
    if face is not None:
        conf = min(conf, float(tile_confidence))
        if conf < min_confidence:
            reason = f"confidence {conf:.2f} below {min_confidence:.2f} (read {face})"
            reads["reason"] = reason
            face = None
    state = "face_up" if face is not None else "unknown"
    if face is None:
        conf = float(tile_confidence)
    return TileRead(face, state, float(conf), np.asarray(polygon, np.float32).copy(),
                    np.asarray(xyxy, np.float32).copy(), pips, reads, reason,
                    float(tile_confidence))
