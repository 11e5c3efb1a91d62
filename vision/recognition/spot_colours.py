"""Spot colours calibrated on the table: the set's own red and white, learnt from the tiles
already identified in the same picture, decide the colour of spots the pip model was unsure of.

One table is dealt from one set (docs/rules.md sections 1 and 5), so its red
spots share one red and its white spots one white. Some sets' whites are a pale pink or cream
and some reds a pale pink: the pip model, which judges each spot alone, then calls a white
spot red (or a red one white) on a few tiles, read A names a colour count no face has, and the
tile stays unknown although its layout (read B) is clear.

:func:`recolour_unknowns` measures the CIELAB a* (:func:`vision.recognition.decode.spot_redness`) of every
spot on the identified tiles of the picture. Where the spots called red and those called white
are cleanly apart (every red above every white by at least :data:`CALIBRATION_GAP_MIN` a*
units, with at least :data:`CALIBRATION_SPOTS_MIN` spots of each colour from at least
:data:`CALIBRATION_TILES_MIN` tiles), each spot of an unknown tile is called red when its a*
is at least the lowest red minus a quarter of the gap, white when at most the highest white
plus a quarter of the gap; a spot between the two leaves the tile unknown. The tile is then
decoded again by the same rules (:func:`vision.recognition.decode.read_from_pips`): reads A and B must
still agree, the shapes must hold and the within-tile colour check must pass. Nothing else
changes: an identified tile is never touched, and a picture whose identified tiles do not
separate their colours recolours nothing.

This is set-level decoding (issue 8: "what the rest of the table shows"), applied to colour.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from vision.recognition.decode import TileRead, read_from_pips
from vision.detections import PIP_RED, PIP_WHITE, Detections

__all__ = ["SpotCalibration", "calibrate", "recolour_unknowns",
           "CALIBRATION_GAP_MIN", "CALIBRATION_SPOTS_MIN", "CALIBRATION_TILES_MIN"]

#: The identified tiles' red spots must all be redder than their white spots by this many a*
#: units (OpenCV 8-bit CIELAB) for the picture to be calibrated; the within-tile colour check
#: (vision.recognition.decode.COLOUR_SEPARATION_MIN) asks 3. Set once, before measuring, well above that
#: check; not tuned on ../shared or on the held-out tables.
CALIBRATION_GAP_MIN: float = 8.0
#: At least this many red and this many white spots ...
CALIBRATION_SPOTS_MIN: int = 6
#: ... on at least this many identified tiles.
CALIBRATION_TILES_MIN: int = 3


@dataclass(frozen=True)
class SpotCalibration:
    """The picture's red and white, from its identified tiles' spots.

    Attributes:
        lowest_red: float, the smallest a* of a spot called red on an identified tile.
        highest_white: float, the largest a* of a spot called white on one.
        n_red, n_white: int, spots of each colour measured.
    """

    lowest_red: float
    highest_white: float
    n_red: int
    n_white: int

    @property
    def gap(self) -> float:
        """a* units between the lowest red and the highest white (float)."""
        return self.lowest_red - self.highest_white

    def colours(self, redness: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(red, white)``: bool (k,) each, the spots of a* ``redness`` (float (k,)) within
        a quarter of the gap of the red side, resp. the white side; a spot in the middle half
        of the gap is neither."""
        a = np.asarray(redness, dtype=np.float64).reshape(-1)
        q = self.gap / 4
        return a >= self.lowest_red - q, a <= self.highest_white + q

    def classify(self, redness: np.ndarray) -> np.ndarray | None:
        """Global pip class ids (int64 (k,), PIP_RED / PIP_WHITE) for spots of a* ``redness``
        (float (k,)), or None when any spot falls in the middle half of the gap."""
        red, white = self.colours(redness)
        if not np.all(red | white):
            return None
        return np.where(red, PIP_RED, PIP_WHITE).astype(np.int64)

    def to_dict(self) -> dict:
        """JSON-ready summary (a* rounded to 0.1)."""
        return {"lowest_red": round(self.lowest_red, 1),
                "highest_white": round(self.highest_white, 1),
                "n_red": self.n_red, "n_white": self.n_white}


def calibrate(reads: Sequence[TileRead]) -> SpotCalibration | None:
    """The picture's spot colours from its identified tiles (``state == "face_up"`` with
    measured ``redness``), or None when there are too few or the colours overlap
    (:data:`CALIBRATION_GAP_MIN`, :data:`CALIBRATION_SPOTS_MIN`,
    :data:`CALIBRATION_TILES_MIN`)."""
    reds, whites, tiles = [], [], 0
    for r in reads:
        if r.state != "face_up" or r.redness is None or not len(r.pips):
            continue
        a = np.asarray(r.redness, dtype=np.float64).reshape(-1)
        if len(a) != len(r.pips):
            continue
        cls = np.asarray(r.pips.class_id)
        reds.append(a[cls == PIP_RED])
        whites.append(a[cls == PIP_WHITE])
        tiles += 1
    if tiles < CALIBRATION_TILES_MIN:
        return None
    red = np.concatenate(reds) if reds else np.zeros(0)
    white = np.concatenate(whites) if whites else np.zeros(0)
    if len(red) < CALIBRATION_SPOTS_MIN or len(white) < CALIBRATION_SPOTS_MIN:
        return None
    cal = SpotCalibration(float(red.min()), float(white.max()), len(red), len(white))
    return cal if cal.gap >= CALIBRATION_GAP_MIN else None


def recolour_unknowns(reads: Sequence[TileRead], min_confidence: float = 0.5,
                      allow_diagonal_two: bool = False) -> list[TileRead]:
    """``reads`` (one picture, one reading) with each unknown tile decoded again with its
    spots' colours from the picture's calibration (:func:`calibrate`); a tile whose colours
    do not change, fall between the picture's red and white, or still name no face is kept
    as it was. A tile identified this way records ``evidence.recoloured`` (the calibration).

    Args:
        reads: the picture's reads (any order; face-down reads pass through).
        min_confidence, allow_diagonal_two: as :func:`vision.recognition.decode.read_from_pips`.

    Returns:
        A new list of the same length and order.
    """
    out = list(reads)
    if not any(r.state == "unknown" and r.redness is not None for r in out):
        return out
    cal = calibrate(out)
    if cal is None:
        return out
    for k, r in enumerate(out):
        if r.state != "unknown" or r.redness is None or not len(r.pips):
            continue
        if len(r.redness) != len(r.pips) or r.spots_counted is None:
            continue
        cls = cal.classify(r.redness)
        if cls is None or np.array_equal(cls, r.pips.class_id):
            continue
        p = r.pips
        again = read_from_pips(Detections(p.xyxy, p.confidence, cls, p.polygon),
                               r.polygon, r.xyxy, r.tile_confidence, min_confidence,
                               allow_diagonal_two, redness=r.redness)
        if again.state == "face_up":
            out[k] = again.with_evidence(recoloured=cal.to_dict())
    return out
