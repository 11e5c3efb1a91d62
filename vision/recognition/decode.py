"""Decode: tile detections + frame -> :class:`TileRead` (face or unknown, with the evidence).

Design: docs/architecture.md (the decode stage). Each face-up tile is rectified to the canonical
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
* a 6 is two columns of three along the tile, side by side row by row (:data:`SIX_ROW_TOL`):
  a 5 with a stray spot at a corner, whose centre is then off the others' mean, fails this;
  each column straight along the tile (:data:`SIX_COLUMN_TOL`): a 3's diagonal beside a
  column of a 5, as an outline shifted across two flush tiles shows them, fails this;
* a 2 is a pair across the tile (|dy| < 0.5 |dx| in the upright crop, as on every Chinese set
  in ../shared/realdata); a 3 missing its centre (a diagonal pair) or a corner fails this, and
  so does a pair along the tile, which is what an outline shifted along the tile shows of a 3. A *diagonal* 2 (western dies, and one style of
  vision.synth.render) is geometrically the same as a 3 whose centre spot was missed, so it is read as
  unknown unless ``allow_diagonal_two=True`` -- an unknown is a cost, a wrong face a wrong
  payout.

A face is accepted when read B names one of read A's candidates and both halves pass the shape
rules, or when read B is undetermined by exactly the 3-3 long pattern (2 / 2 on the midline / 2,
or the staggered variant, :func:`_is_long_33`) and read A is exactly 3-3. When the halves at the
midline do not confirm read A, the dividing line is searched near the midline
(:func:`_split_faces`): the face is accepted only when exactly one of read A's candidates is
named by a split that gives both halves a valid shape (this is what 2-6 vs 3-5 then rests on). Anything else -- a missing or extra spot, a red spot read as white,
spots on the midline of another face -- gives ``state="unknown"`` with the reason and its code
(``reason_code``, a :class:`vision.schema.UnreadReason`; the text is the code's ``say()``); an
unknown tile is never settled. Red/white confusions are caught by read A (halves of 1 and 4 are red,
others white), lost/extra spots by the counts and shapes together.

Confidence of an accepted face = min(tile detection confidence, weakest spot confidence): a
face is as sure as its least sure spot. Below ``min_confidence`` the tile is unknown.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, Sequence

import numpy as np

from scoring.tiles import FACES, TILES_BY_FACE

from vision.detections import PIP_RED, PIP_WHITE, Detections
from vision.recognition.evidence import Evidence
from vision.schema import UnreadReason
from vision.geometry import CROP_H, CROP_MARGIN, CROP_W, crop_to_image, side_pairs

__all__ = [
    "Evidence",
    "TileRead",
    "decode_face",
    "run_pip_detector",
    "half_shape_ok",
    "read_from_pips",
    "CANDIDATES_BY_COLOUR",
    "MIDLINE_BAND",
    "counted_spots_px",
]

#: (red, white) spot counts -> faces with those counts (read A). Built from scoring.tiles.
CANDIDATES_BY_COLOUR: dict[tuple[int, int], tuple[str, ...]] = {}
for _t in FACES:
    CANDIDATES_BY_COLOUR.setdefault((_t.red, _t.white), ())
    CANDIDATES_BY_COLOUR[(_t.red, _t.white)] += (_t.face,)

#: Half-width of the midline band, as a fraction of the crop height (0.045 * 192 = 8.6 px).
#: The 3-3 long layout's midline pair sits on the midline; spots of an ordinary face sit at
#: least about 0.19 of a half (about 16 px in the crop) from it (vision.synth.draw layouts).
MIDLINE_BAND: float = 0.045

STATES = ("face_up", "face_down", "unknown")
CORNER_RADIUS = 0.2          # fraction of the tile width: a tile's rounded-corner zone
CORNER_MIN_CONFIDENCE = 0.5  # spots in that zone below this confidence are ignored


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
        reads: the decoder's record of its two reads: ``{"ignored": n, "A": {"red", "white",
            "candidates"}, "B": {"top", "bottom", "midline", "face", "layout", "shape"}}``
            (:attr:`read_a`, :attr:`read_b`); empty for face-down tiles.
        reason: why the face is unknown (None when accepted or face down): the text of
            ``reason_code`` (:meth:`vision.schema.UnreadReason.say`).
        reason_code: the :class:`vision.schema.UnreadReason` of ``reason``: set on every
            ``"unknown"`` read that recognition makes (None when accepted or face down, and on
            a read built by hand with reason text only); consumers switch on it, never on the
            text.
        tile_confidence: the tile detector's confidence (float).
        redness: float64 (k,) CIELAB a* of each of ``pips`` (:func:`spot_redness`), or None
            when the spots' colour was not measured (no crop, a tile narrower than
            COLOUR_CHECK_MIN_WIDTH px).
        evidence: the typed :class:`Evidence` the decoder and the rules recorded (disputed,
            either_cut, spared, ...); set with :meth:`with_evidence` on a new read.
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
    redness: np.ndarray | None = None
    reason_code: UnreadReason | None = None
    evidence: Evidence = field(default_factory=Evidence)

    @property
    def read_a(self) -> dict | None:
        """The decoder's read A, ``{"red", "white", "candidates"}``, or None (not decoded)."""
        return self.reads.get("A") if isinstance(self.reads, dict) else None

    @property
    def read_b(self) -> dict | None:
        """The decoder's read B, ``{"top", "bottom", "midline", "face", "layout", "shape"}``
        (``"split_faces"`` where it searched a divider), or None (not decoded)."""
        return self.reads.get("B") if isinstance(self.reads, dict) else None

    def with_evidence(self, **values: Any) -> "TileRead":
        """A new read, this one with ``values`` recorded in its :attr:`evidence`
        (:meth:`Evidence.record`); this read unchanged.

        Raises:
            TypeError: a name that is no :class:`Evidence` field.
        """
        return replace(self, evidence=self.evidence.record(**values))

    def evidence_dict(self) -> dict:
        """The decoder's record (:attr:`reads`) with the evidence's recorded fields after it,
        a new dict: the ``"reads"`` of ``identify(with_reads=True)``."""
        return {**(self.reads or {}), **self.evidence.as_dict()}

    @property
    def centre(self) -> np.ndarray:
        """Mean of the polygon's corners, float64 (2,) px."""
        return np.asarray(self.polygon, dtype=np.float64).mean(0)

    @property
    def long_side(self) -> float:
        """Mean length of the polygon's two longer sides, px."""
        return max(side_pairs(self.polygon))

    @property
    def spots_counted(self) -> int | None:
        """Spots read A counted on the tile (red + white), or None when the decoder has not
        read it (a face-down read, or video's "not decoded yet")."""
        a = self.read_a
        return None if a is None else int(a.get("red", 0)) + int(a.get("white", 0))

    def as_unknown(self, why: str | UnreadReason, detail: str | None = None, /,
                   **fields: Any) -> "TileRead":
        """This tile as ``"unknown"`` (no face, the detector's confidence); polygon, box and
        spots kept.

        Args:
            why: an :class:`vision.schema.UnreadReason` (then the text is
                ``why.say(detail, **fields)`` and the code is the read's ``reason_code``;
                every stage of :mod:`vision.recognition` passes one), or a reason text alone
                (no code: hand-made reads in tests).
            detail, fields: with a code: its particulars (:meth:`UnreadReason.say`).

        Raises:
            KeyError: a field of the code's template not given.
        """
        code = why if isinstance(why, UnreadReason) else None
        text = code.say(detail, **fields) if code is not None else str(why)
        return TileRead(None, "unknown", self.tile_confidence, self.polygon, self.xyxy, self.pips,
                        dict(self.reads or {}), text, self.tile_confidence, self.redness, code,
                        self.evidence.record(reason=text))

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


#: A 6's two columns pair row by row: the k-th spots of the columns (sorted along the tile)
#: lie within this fraction of the half's median nearest-neighbour spot spacing of each other
#: along the tile. Half a spacing: a rectified crop whose outline is a few degrees off tilts
#: the rows by far less; a spot row apart is a whole spacing.
SIX_ROW_TOL: float = 0.5

#: A 6's columns run along the tile: the three spots of a column lie within this fraction of
#: the half's median nearest-neighbour spot spacing of each other across the tile. Half a
#: spacing, as :data:`SIX_ROW_TOL`: a column tilted by an outline a few degrees off drifts by
#: far less (two spacings along it at 5 degrees: 0.17 of a spacing); a diagonal of a 3 beside
#: a column of a 5 drifts by a spacing.
SIX_COLUMN_TOL: float = 0.5


def _lines_of_three(v: np.ndarray) -> float:
    """How well six coordinates (float (6,), px) fall into two lines of three: the gap
    between the third and fourth sorted value over the larger spread within either three
    (large for two columns' x, about 0.2 for three columns' x)."""
    x = np.sort(np.asarray(v, dtype=np.float64))
    return float((x[3] - x[2]) / max(x[2] - x[0], x[5] - x[3], 1e-6))


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
        if allow_diagonal_two or dy < 0.5 * dx:
            return True, None
        # Pai gow sets draw the 2 across the tile (every Chinese set in ../shared/realdata); a
        # pair along the tile is what a shifted outline shows of a 3 (two of its diagonal).
        return False, "a 2 must lie across the tile (a 3 missing a spot?)"
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
    if n == 3:  # a diagonal line: the middle spot on the line through the outer two
        far = np.unravel_index(np.argmax(np.where(np.isinf(d), -1, d)), d.shape)
        a, b = p[far[0]], p[far[1]]
        m = p[[i for i in range(3) if i not in far][0]]
        ab = b - a
        off = abs(ab[0] * (m - a)[1] - ab[1] * (m - a)[0]) / max(np.linalg.norm(ab), 1e-9)
        if off > CENTRE_TOL * spacing:
            return False, "a 3 must be a line of spots"
        # ... and a diagonal: a line along or across the tile is one column or row of a 6
        # (or 5) whose other spots were missed
        angle = np.degrees(np.arctan2(abs(ab[1]), abs(ab[0])))
        if not 25.0 <= angle <= 65.0:
            return False, f"a 3 must be a diagonal (this line is at {angle:.0f} degrees)"
    if n % 2 == 0 and centred:
        return False, f"a {n} has no centre spot"
    if n == 6 and _lines_of_three(p[:, 0]) < _lines_of_three(p[:, 1]):
        # two columns of three along the tile; two rows of three across it are the halves of
        # two touching tiles seen crosswise (their 6 turned by 90 degrees)
        return False, "a 6 must be two columns of three along the tile"
    if n == 6:
        # ... side by side: the k-th spot of one column beside the k-th of the other. A 5 with
        # a stray detection at a corner passes the test above (seen: a JPEG-compressed 2-5
        # whose corner showed the felt read 2-6), but its rows are a spot row apart.
        xs = np.argsort(p[:, 0], kind="stable")
        left, right = p[xs[:3]], p[xs[3:]]
        dy = np.abs(np.sort(left[:, 1]) - np.sort(right[:, 1])).max()
        if dy > SIX_ROW_TOL * spacing:
            return False, "a 6's two columns must pair row by row"
        # ... and each column runs along the tile: three spots that drift across it by most
        # of a spacing are no column of a 6 (seen: an outline shifted across a flush 1-3 | 1-5
        # took the 3's diagonal and one column of the 5 for a 6 and read 1-6)
        drift = max(np.ptp(left[:, 0]), np.ptp(right[:, 0]))
        if drift > SIX_COLUMN_TOL * spacing:
            return False, "a 6's columns must run along the tile"
    return True, None


#: Fallback split search (see :func:`_split_faces`): the dividing line may lie anywhere within
#: this fraction of the crop height either side of the midline, and must fall in a gap between
#: spot rows of at least MIN_SPLIT_GAP of the crop height (so a row is never cut in two).
SPLIT_RANGE: float = 0.2
MIN_SPLIT_GAP: float = 0.04


#: Red spots a half showing n spots has on casino tiles (docs/rules.md 1): 1 and 4 are red; a 6 is
#: white except on the Teen (6-6), whose halves are half red.
_HALF_RED: dict[int, tuple[int, ...]] = {1: (1,), 2: (0,), 3: (0,), 4: (4,), 5: (0,), 6: (0, 3)}


def _half_colours_ok(n: int, n_red: int) -> bool:
    """True when a half of ``n`` spots with ``n_red`` red ones is coloured as on casino tiles."""
    return n_red in _HALF_RED.get(n, ())


def _split_faces(c: np.ndarray, h: float, allow_diagonal_two: bool,
                 red: np.ndarray | None = None) -> set[str]:
    """Faces named by every horizontal split of the spots ``c`` (k, 2) (crop px) that lies in a
    gap near the midline and leaves both halves with a valid shape (:func:`half_shape_ok`).

    Drawings and small tiles do not always centre each half's spots on its own half: a 1 drawn
    at the tile's end with the 3's diagonal starting at the midline, or a 4's inner row inside
    the midline band of a 55 px wide tile (../shared/realdata). The dividing line between the
    halves is then found where the spots allow one, not assumed at y = h / 2."""
    if len(c) < 2:
        return set()
    ys = np.sort(c[:, 1])
    lo, hi = (0.5 - SPLIT_RANGE) * h, (0.5 + SPLIT_RANGE) * h
    faces: set[str] = set()
    for a, b in zip(ys[:-1], ys[1:]):
        cut = (a + b) / 2
        if b - a < MIN_SPLIT_GAP * h or not lo <= cut <= hi:
            continue
        above = c[:, 1] < cut
        top, bottom = c[above], c[~above]
        f = _face_of(len(top), len(bottom)) if len(top) and len(bottom) else None
        if f is None:
            continue
        if red is not None and not (_half_colours_ok(len(top), int(red[above].sum()))
                                    and _half_colours_ok(len(bottom), int(red[~above].sum()))):
            continue
        if half_shape_ok(top, allow_diagonal_two)[0] and half_shape_ok(bottom, allow_diagonal_two)[0]:
            faces.add(f)
    return faces


def _long_ends(p: np.ndarray, w: float) -> bool:
    """True when the first two and the last two spots of ``p`` (sorted along the tile, crop
    px) are each a pair along the tile's centre line: the ends of the 3-3 long layout."""
    for pair in (p[:2], p[-2:]):
        dx, dy = np.abs(pair[1] - pair[0])
        if not (dx < 0.5 * dy and np.all(np.abs(pair[:, 0] - w / 2) < 0.15 * w)):
            return False
    return True


def _is_long_33(c: np.ndarray, w: float, h: float) -> bool:
    """True when six spots ``c`` (6, 2) (crop px) form the 3-3 "long" layout: a pair along the
    tile's centre line at each end and a pair across the tile near the middle (drawn on the
    midline, or slightly staggered about it as in one realdata drawing)."""
    if len(c) != 6:
        return False
    p = c[np.argsort(c[:, 1])]
    if not _long_ends(p, w):
        return False
    middle = p[2:4]
    xs = np.sort(middle[:, 0])
    return bool(np.all(np.abs(middle[:, 1] - h / 2) < 0.12 * h)
                and xs[0] < w / 2 < xs[1] and xs[1] - xs[0] > 0.3 * w)


def _is_long_33_missing_one(c: np.ndarray, w: float, h: float) -> bool:
    """True when five spots ``c`` (5, 2) look like the 3-3 long layout with one middle spot
    lost (a centred pair at each end, one spot off-centre near the middle): such a tile must
    stay unknown rather than be read as the 2-3 the five white spots also fit."""
    if len(c) != 5:
        return False
    p = c[np.argsort(c[:, 1])]
    if not _long_ends(p, w):
        return False
    middle = p[2]
    return bool(abs(middle[1] - h / 2) < 0.12 * h and abs(middle[0] - w / 2) > 0.1 * w)


def _face_of(a: int, b: int) -> str | None:
    lo, hi = sorted((int(a), int(b)))
    f = f"{lo}-{hi}"
    return f if f in TILES_BY_FACE else None


def _counted_spots(centres, conf, crop_size: tuple[int, int] = (CROP_W, CROP_H),
                  margin: float = CROP_MARGIN) -> np.ndarray:
    """Which spots belong to the tile: bool (k,) mask over ``centres`` (float (k, 2) crop px).

    Left out: centres beyond half the crop border (a neighbouring tile's spots), and spots
    below CORNER_MIN_CONFIDENCE within CORNER_RADIUS tile widths of a corner -- no maker puts
    a spot in a tile's rounded corner (the corner spots of a 6 sit ~0.35 tile widths from it):
    an unsure "spot" there is background showing through the rounding (a cut-out picture's
    corner, seen in ../shared/realdata fintech 1-1).
    """
    c = np.asarray(centres, dtype=np.float64).reshape(-1, 2)
    conf = np.asarray(conf, dtype=np.float64).reshape(-1)
    w, h = float(crop_size[0]), float(crop_size[1])
    # the tile proper inside the crop (the crop is the polygon enlarged by `margin` per side)
    bx, by = w * margin / (1 + 2 * margin), h * margin / (1 + 2 * margin)
    tol_x, tol_y = bx / 2, by / 2
    inside = ((c[:, 0] >= bx - tol_x) & (c[:, 0] <= w - bx + tol_x)
              & (c[:, 1] >= by - tol_y) & (c[:, 1] <= h - by + tol_y))
    corners = np.array([[bx, by], [w - bx, by], [bx, h - by], [w - bx, h - by]])
    if len(c):
        near = np.linalg.norm(c[:, None, :] - corners[None], axis=2).min(axis=1)
        inside &= ~((near < CORNER_RADIUS * (w - 2 * bx)) & (conf < CORNER_MIN_CONFIDENCE))
    return inside


def counted_spots_px(read: "TileRead", polygon=None, min_confidence: float = 0.0
                     ) -> np.ndarray:
    """Centres of the spots the decoder counts on ``read`` (:func:`_counted_spots`), at least
    ``min_confidence`` sure, in image px: float64 (k, 2), (0, 2) for none.

    ``polygon``: the outline ``read`` was decoded on (float (4, 2) image px; None:
    ``read.polygon``), whose crop the spots' crop px are in
    (:func:`vision.geometry.crop_to_image`)."""
    p = read.pips
    if p is None or not len(p):
        return np.zeros((0, 2))
    centres = (p.xyxy[:, :2] + p.xyxy[:, 2:]) / 2
    keep = _counted_spots(centres, p.confidence) & (p.confidence >= min_confidence)
    if not keep.any():
        return np.zeros((0, 2))
    return crop_to_image(centres[keep], read.polygon if polygon is None else polygon)


def decode_face(pip_centres, pip_class, pip_conf, crop_size: tuple[int, int] = (CROP_W, CROP_H),
                margin: float = CROP_MARGIN, midline_band: float = MIDLINE_BAND,
                allow_diagonal_two: bool = False,
                redness=None) -> tuple[str | None, float, dict]:
    """Decode one tile's face from its spots (pure logic, no image).

    Args:
        pip_centres: float array (k, 2) of spot centres ``(x, y)`` in crop pixels.
        pip_class: int array (k,) of global class ids, 2 = pip_red, 3 = pip_white.
        pip_conf: float array (k,) of spot confidences in [0, 1].
        crop_size: ``(width, height)`` of the crop, default (CROP_W, CROP_H) = (96, 192) px.
        margin: the crop's border fraction (CROP_MARGIN); spots whose centre lies outside the
            tile (beyond half the border) are ignored -- they belong to a neighbouring tile; so
            are spots below CORNER_MIN_CONFIDENCE within CORNER_RADIUS tile widths of a corner.
        midline_band: half-width of the midline band as a fraction of the crop height.
        allow_diagonal_two: see :func:`half_shape_ok`.
        redness: optional float array (k,) of the spots' CIELAB a* (:func:`spot_redness`): an
            accepted face with spots of both colours must then pass the colour check
            (:data:`COLOUR_SEPARATION_MIN`; the returned record's ``"colour_separation"``).

    Returns:
        ``(face, confidence, reads)``: face ``"low-high"`` or None; confidence = weakest
        counted spot's confidence when a face is accepted, else 0.0; ``reads`` the evidence
        (``{"ignored", "A", "B"}``, :class:`TileRead`, with ``"colour_separation"`` where
        measured and ``"reason"``, saying why when face is None).

    Raises:
        ValueError: arrays of mismatched length or a class id other than 2 / 3.
    """
    got = _decode_face(pip_centres, pip_class, pip_conf, crop_size, margin, midline_band,
                       allow_diagonal_two, redness)
    sep = {} if got.separation is None else {"colour_separation": got.separation}
    return got.face, got.confidence, {**got.record, **sep, "reason": got.reason}


class _Decoded(NamedTuple):
    """What :func:`_decode_face` read: the face (or None), the weakest counted spot's
    confidence (0.0 without a face), the decoder's record (``{"ignored", "A", "B"}``), the
    :class:`vision.schema.UnreadReason` (None with a face), its text, and the colour check's
    separation (a* units rounded to 0.1, None when not measured)."""

    face: str | None
    confidence: float
    record: dict
    code: UnreadReason | None
    reason: str | None
    separation: float | None


def _decode_face(pip_centres, pip_class, pip_conf, crop_size, margin, midline_band,
                 allow_diagonal_two, redness) -> _Decoded:
    """:func:`decode_face` (same arguments, same errors), its parts apart (:class:`_Decoded`)."""
    c, cls, conf, redness, ignored = _spots_inside(pip_centres, pip_class, pip_conf, crop_size,
                                                   margin, redness)
    w, h = float(crop_size[0]), float(crop_size[1])
    record: dict[str, Any] = {"ignored": ignored}
    red = int((cls == PIP_RED).sum())
    white = int((cls == PIP_WHITE).sum())
    cand = CANDIDATES_BY_COLOUR.get((red, white), ())
    record["A"] = {"red": red, "white": white, "candidates": list(cand)}
    record["B"] = _read_b(c, h, midline_band, allow_diagonal_two)
    face, code, fields, detail = _judge_reads(c, cls, w, h, cand, record["B"], red, white,
                                              allow_diagonal_two)
    if face is not None and record["B"].get("layout") != "long":
        crowd = _crowds_midline(c, h, margin)
        if crowd is not None:
            code, fields = UnreadReason.CROWDS_MIDLINE, {"face": face, "half": crowd}
            face = None
    sep = None
    if face is not None and redness is not None:
        is_red, is_white = cls == PIP_RED, cls == PIP_WHITE
        if is_red.any() and is_white.any():
            raw = float(redness[is_red].min() - redness[is_white].max())
            sep = round(raw, 1)
            if raw < COLOUR_SEPARATION_MIN:
                code, fields = UnreadReason.COLOUR, {"face": face, "sep": raw}
                face = None
    reason = code.say(detail, **fields) if code is not None else None
    confidence = float(conf.min()) if face is not None else 0.0
    return _Decoded(face, confidence, record, code, reason, sep)


def _spots_inside(pip_centres, pip_class, pip_conf, crop_size, margin, redness):
    """The spots the decoder counts (:func:`_counted_spots`): ``(centres float64 (k, 2),
    class ids int64 (k,), confidences float64 (k,), redness float64 (k,) or None, the number
    ignored)``.

    Raises:
        ValueError: arrays of mismatched length or a class id other than 2 / 3."""
    c = np.asarray(pip_centres, dtype=np.float64).reshape(-1, 2)
    cls = np.asarray(pip_class, dtype=np.int64).reshape(-1)
    conf = np.asarray(pip_conf, dtype=np.float64).reshape(-1)
    if not (len(c) == len(cls) == len(conf)):
        raise ValueError(f"pip arrays differ in length: {len(c)}, {len(cls)}, {len(conf)}")
    bad = ~np.isin(cls, (PIP_RED, PIP_WHITE))
    if bad.any():
        raise ValueError(f"pip class ids must be {PIP_RED} (red) or {PIP_WHITE} (white), "
                         f"got {sorted(set(cls[bad].tolist()))}")
    inside = _counted_spots(c, conf, crop_size, margin)
    if redness is not None:
        redness = np.asarray(redness, dtype=np.float64).reshape(-1)[inside]
    return c[inside], cls[inside], conf[inside], redness, int((~inside).sum())


def _read_b(c: np.ndarray, h: float, midline_band: float, allow_diagonal_two: bool) -> dict:
    """Read B of the counted spots ``c`` (float64 (k, 2) crop px) on a crop ``h`` px high:
    ``{"top", "bottom", "midline", "face", "layout", "shape"}`` (module docstring)."""
    band = midline_band * h
    dy = c[:, 1] - h / 2
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
    return {"top": top, "bottom": bottom, "midline": on_mid, "face": b_face,
            "layout": layout, "shape": shape_why or "ok"}


def _judge_reads(c, cls, w, h, cand, b: dict, red: int, white: int, allow_diagonal_two):
    """Whether read A's candidates ``cand`` and read B (``b``, completed here with the
    layout found and ``"split_faces"``) agree on a face: ``(face or None, code or None,
    the code's fields, its detail)`` (module docstring)."""
    b_face, layout = b["face"], b["layout"]
    shape_why = None if b["shape"] == "ok" else b["shape"]
    if len(c) == 0:
        return None, UnreadReason.NO_SPOTS, {}, None
    if not cand:
        return None, UnreadReason.SPOT_COUNTS, {"red": red, "white": white}, None
    if layout == "long" or (cand == ("3-3",) and _is_long_33(c, w, h)):
        if cand == ("3-3",):
            b["layout"] = "long"
            return "3-3", None, {}, None
        return None, UnreadReason.LONG_33_NOT_A, {"faces": "/".join(cand)}, None
    if b_face in cand and shape_why is None:
        return b_face, None, {}, None
    # the halves at y = h/2 do not confirm read A: look for the dividing line where the
    # spots allow one (drawings and small tiles, see _split_faces); still both reads agree
    split = _split_faces(c, h, allow_diagonal_two, cls == PIP_RED) & set(cand)
    b["split_faces"] = sorted(split)
    if _is_long_33_missing_one(c, w, h):
        return None, UnreadReason.LONG_33_MISSING, {}, None
    if len(split) == 1:
        b["layout"] = "split"
        return split.pop(), None, {}, None
    if len(split) > 1:
        return None, UnreadReason.SPLIT_EITHER, {"faces": " and ".join(sorted(split))}, None
    if b_face is None:
        return (None, UnreadReason.HALVES_NO_FACE,
                {"top": b["top"], "bottom": b["bottom"], "midline": b["midline"]}, None)
    if b_face in cand:
        return None, UnreadReason.HALF_SHAPE, {"face": b_face, "shape": shape_why}, None
    return (None, UnreadReason.READS_DISAGREE, {},
            f"A {'/'.join(cand)} ({red} red, {white} white), B {b_face}")


#: A half of 1-3 spots sits centred in its half or toward the tile's end (real sets move the 1
#: and 2 outward), never toward the midline: a centroid beyond this fraction of the half's
#: length from the tile's end means the outline is shifted (a 4-5 cut after the 5's first row
#: shows a "2" against the midline and would read 2-4).
MIDLINE_CROWD: float = 0.68


def _crowds_midline(c: np.ndarray, h: float, margin: float) -> str | None:
    """"top" or "bottom" when that half (1-3 spots) crowds the midline, else None."""
    by = h * margin / (1 + 2 * margin)
    half = (h - 2 * by) / 2
    for name, sel, depth in (("top", c[:, 1] < h / 2, lambda y: (y - by) / half),
                             ("bottom", c[:, 1] > h / 2, lambda y: (h - by - y) / half)):
        n = int(sel.sum())
        if 1 <= n <= 3 and depth(float(c[sel, 1].mean())) > MIDLINE_CROWD:
            return name
    return None


def run_pip_detector(pip_detector, crops: Sequence[np.ndarray]) -> list[Detections]:
    """Run ``pip_detector`` on a batch of crops; one :class:`Detections` per crop (crop px).

    Args:
        pip_detector: a :class:`vision.recognition.detect.PipDetector` or any object with its
            interface, ``detect_batch(crops) -> list[Detections]`` (one per crop, same order).
        crops: uint8 (CROP_H, CROP_W, 3) BGR rectified tile crops.

    Returns:
        list of :class:`Detections`, one per crop, in crop pixels.

    Raises:
        AttributeError: ``pip_detector`` has no ``detect_batch``.
        ValueError: it returned a number of results other than the number of crops.
    """
    crops = list(crops)
    if not crops:
        return []
    out = list(pip_detector.detect_batch(crops))
    if len(out) != len(crops):
        raise ValueError(f"pip detector returned {len(out)} results for {len(crops)} crops")
    return out


#: Long side / short side a tile outline must have to be read (pai gow tiles are about 2:1;
#: drawings up to ~2.8). An outline that covers a tile and a half, or half a tile, can hold
#: spots that look like another valid face (a 4-5 cut after the 5's first row reads 2-4), so
#: such outlines are never decoded.
TILE_ASPECT_RANGE: tuple[float, float] = (1.6, 3.2)


def tile_aspect(polygon) -> float:
    """Mean long side / mean short side of a tile outline (4, 2) px (any corner order)."""
    a, b = side_pairs(polygon)
    return max(a, b) / max(min(a, b), 1e-9)


#: Colour check of an accepted face with both spot colours: every spot the pip model calls red
#: must look redder (median CIELAB a* of its centre, :func:`spot_redness`) than every spot it
#: calls white by at least this many a* units. On 20 held-out rendered tables (266 mixed faces
#: read right) the smallest separation measured was 9, on the 42 mixed real faces of
#: ../shared/realdata 38; a red spot taken for white (pale-red styles) leaves a white-called
#: spot about as red as the red ones (separation near 0 or below), and one such spot plus an
#: outline shifted by a row can make two reads agree on a wrong face.
COLOUR_SEPARATION_MIN: float = 3.0
#: ... when the tile is at least this wide in the picture (px; the operating range starts at
#: a 60 px long side, about 26 px wide): narrower tiles have spots of a few pixels whose colour
#: the video's chroma subsampling smears (4:2:0 halves it), so their colour is not measured.
COLOUR_CHECK_MIN_WIDTH: float = 24.0


def spot_redness(crop: np.ndarray, xyxy: np.ndarray) -> np.ndarray:
    """Redness of each spot: the median CIELAB a* (OpenCV 8-bit scale minus 128: 0 neutral,
    positive red) over the central 60 % of its box.

    Args:
        crop: uint8 (CROP_H, CROP_W, 3) BGR rectified tile crop.
        xyxy: float (k, 4) spot boxes in crop pixels.

    Returns:
        float64 (k,) a* values.
    """
    import cv2

    a = cv2.cvtColor(crop, cv2.COLOR_BGR2LAB)[:, :, 1]
    h, w = a.shape
    out = np.zeros(len(xyxy))
    for k, (x1, y1, x2, y2) in enumerate(np.asarray(xyxy, np.float64).reshape(-1, 4)):
        cx, cy, rw, rh = (x1 + x2) / 2, (y1 + y2) / 2, (x2 - x1) * 0.3, (y2 - y1) * 0.3
        ys = slice(int(max(cy - rh, 0)), int(min(cy + rh, h - 1)) + 1)
        xs = slice(int(max(cx - rw, 0)), int(min(cx + rw, w - 1)) + 1)
        patch = a[ys, xs]
        out[k] = float(np.median(patch)) - 128.0 if patch.size else 0.0
    return out


def read_from_pips(pips: Detections, polygon, xyxy, tile_confidence: float,
                   min_confidence: float = 0.5, allow_diagonal_two: bool = False,
                   crop: np.ndarray | None = None,
                   redness: np.ndarray | None = None) -> TileRead:
    """The :class:`TileRead` of one face-up tile from its spot detections (crop px).

    A tile outline whose aspect (:func:`tile_aspect`) is outside :data:`TILE_ASPECT_RANGE`
    is read as unknown whatever its spots say. With the ``crop`` (uint8 (CROP_H, CROP_W, 3)
    BGR) and a tile at least COLOUR_CHECK_MIN_WIDTH px wide, a face with spots of both
    colours must also pass the colour check
    (:data:`COLOUR_SEPARATION_MIN`, recorded as :attr:`Evidence.colour_separation`). ``redness``
    (float (k,), a* of each spot) may be given instead of the crop: it was measured before
    (:mod:`vision.recognition.spot_colours` decodes again with recalled colours)."""
    centres = (pips.xyxy[:, :2] + pips.xyxy[:, 2:]) / 2 if len(pips) else np.zeros((0, 2))
    if redness is None and (crop is not None and len(pips)
                            and min(side_pairs(polygon)) >= COLOUR_CHECK_MIN_WIDTH):
        redness = spot_redness(crop, pips.xyxy)
    got = _decode_face(centres, pips.class_id, pips.confidence, (CROP_W, CROP_H), CROP_MARGIN,
                       MIDLINE_BAND, allow_diagonal_two, redness)
    face, conf, code, reason = got.face, got.confidence, got.code, got.reason
    ev = Evidence() if got.separation is None else Evidence().record(
        colour_separation=got.separation)
    aspect = tile_aspect(polygon)
    ev = ev.record(reason=reason, aspect=round(aspect, 2))
    if face is not None and not TILE_ASPECT_RANGE[0] <= aspect <= TILE_ASPECT_RANGE[1]:
        code = UnreadReason.ASPECT
        reason = code.say(aspect=aspect, face=face, lo=TILE_ASPECT_RANGE[0],
                          hi=TILE_ASPECT_RANGE[1])
        # what the two reads agreed on, and how surely: the face stays unread here
        # (vision.recognition.aspect may take it where the picture's tiles are as long)
        ev = ev.record(reason=reason, aspect_face=face,
                       aspect_confidence=round(min(conf, float(tile_confidence)), 4))
        face = None
    if face is not None:
        conf = min(conf, float(tile_confidence))
        if conf < min_confidence:
            code = UnreadReason.LOW_CONFIDENCE
            reason = code.say(conf=conf, min=min_confidence, face=face)
            ev = ev.record(reason=reason)
            face = None
    state = "face_up" if face is not None else "unknown"
    if face is None:
        conf = float(tile_confidence)
    return TileRead(face, state, float(conf), np.asarray(polygon, np.float32).copy(),
                    np.asarray(xyxy, np.float32).copy(), pips, got.record, reason,
                    float(tile_confidence), redness, code if face is None else None, ev)
