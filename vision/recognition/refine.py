"""Outline refinement of a still picture's unknown tiles: the tile face's rectangle fitted from
the picture, a two-tile block split where exactly one cut reads (issue 20).

Why. Where hands lie flush and level, edge to edge, two tiles side by side form one block of
the face colour (a square for tiles of aspect 2). The tile model often boxes such a block
crosswise -- one half of each tile -- or a third of a tile off; the decoder then rejects the
box (wrong spot layout for a tile: unknown, ``scripts/eval_scenes.py`` class ``outline_off``),
and the tiles themselves stay unread though the picture shows them plainly.

How (:func:`refine_unknowns`). For each unknown face-up outline (the surest
:data:`vision.recognition.zoom.ZOOM_MAX_TILES`), in a window of :data:`WINDOW` local tile
lengths around it (the median long side of the identified tiles nearest to it,
:func:`vision.recognition.zoom._local_tile_length`), the pixels are split by Otsu's threshold on
their brightness (HSV value) into two classes; the face's class is the one most of the
outline's pixels fall in (spots are a minority of a face). The connected region of that class
overlapping the outline most is the face region; a region touching the window's edge is not
whole and is left alone. Where the region gives nothing that reads, it is tried once more
parted from what joins it by a sliver (the class's spots filled, eroded by an ellipse of
:data:`BRIDGE` tile lengths, the piece under the outline grown back): two hands laid close,
one tile's corner touching another's face, join their regions. Where neither reads, each is
tried with a tile's 3-D side trimmed (:func:`side_trimmed`: a band without spots at one end
wider than at the other, :data:`SIDE_MIN`), its reads taken only where every spot the
decoder counts on the untrimmed rectangle lies inside the trimmed one. Where none reads,
the same tries are made with the identified tiles' outlines taken out of the face class: a
tile lying flush against an identified tile as dark as it shares one region with it (joined
along a whole side, which no parting frees), and an identified tile's face is not this one's
(issue 40: scenes_flush_cam scene_06's 1-3 and 1-1, outlined onto their neighbours and made
unknown by the crop classifier, read so); only the identified outlines that overlap the
region's rectangle are taken out (others would leave it as it was). The region's
minimum-area rectangle (``cv2.minAreaRect``) is either

* one tile (:func:`tile_shaped`: its long side within
  :data:`vision.recognition.zoom.SIZE_TOLERANCE` of the local tile length, its aspect within
  :data:`vision.recognition.flush.STUBBY` of the picture's tile aspect): one outline; or
* a block of two: each of its two middle cuts gives two outlines (:func:`block_cuts`); a cut
  counts only where both its outlines are tile-shaped.

Each outline is held to the identified tiles near it that lie its way (long axes within
:data:`vision.recognition.zoom.PARALLEL_DEG`, where at least two of the nearest do;
:func:`vision.recognition.zoom.local_shape` with ``along``): a camera at a slant makes the
tiles lying up the picture longer for their width than those lying across it, so the median of
a dealer's hand and a seat's hand at right angles fits neither (a flush block of two tall
tiles beside the dealer's other two was "not a tile" by the seat's shorter tiles). Where
nothing reads so, the seed is judged once more by the identified tiles beside it alone
(:data:`vision.recognition.zoom.NEAR_REACH`): the same camera draws the near side of the table
larger, and a banker's block at the picture's near edge (tiles 114 px long, its identified
neighbour 103 px) was "not a tile" by the median of tiles across the table (78 px).

Each candidate outline is decoded by the engine's decoder (every guard of
:mod:`vision.recognition.decode`: shapes, the two agreeing reads). An outline refused for its
aspect alone is read where the picture's identified tiles around it are as long
(:func:`vision.recognition.aspect.as_peer`, the still reading's ``long_as_peers`` rule, where
that rule is on): the face region takes in a 3-D tile's lit side, which lengthens the cut of a
tile seen long at a slant past the decoder's bound by a few pixels. A candidate is taken
(:func:`accept_cut`) only where:

1. every outline of it is identified (one tile: the one; a block: both);
2. a block: the *other* cut does not read both its outlines (either cut reading: unsure which
   way the block lies -- the seam does not show on flush dark faces, :mod:`vision.recognition.seam`);
3. a block: at least one of the two faces is not :func:`vision.recognition.flush.crosswise_alike`
   (a face with a 2 or 6 half cannot be read from a box cut across two tiles: that half turned
   a quarter fails the decoder's half shapes), or one is a mixed tile whose 3 runs the way
   the table's set draws it (:func:`vision.recognition.chirality.shows_way`: a 3 turned a
   quarter runs the other way);
4. no outline lies on an identified tile of the reading (more than :data:`OVERLAP` of its area)
   unless it is that tile (polygon IoU >= :data:`vision.recognition.scales.SAME_TILE_IOU`) with
   the same face -- then that read stays and only the new tile is added.

5. where rules 2 or 3 leave a block untaken, the cut the picture shows
   (:func:`vision.recognition.notch.notch_cut`: both sides its seam crosses dip at their
   middles where two tiles' rounded corners meet, the two sides along it are straight) is
   taken where it reads both its tiles (rules 1 and 4 still hold). Why: rules 2 and 3 fear the
   crosswise cut; the notches name the seam from the tiles' corners, which a box across two
   tiles cannot show (on the project's rendered flush blocks the check named no block the
   wrong way, ``scripts/eval_notch.py``), and the tiles it gives meet every flush guard
   again.

6. where both cuts of a block read both their tiles, a cut naming a mixed tile with a 3
   (1-3, 2-3, 3-4, 3-5, 3-6) whose diagonal runs against the way the table's set draws it
   (:func:`vision.recognition.chirality.table_hand`: unanimous over at least two identified
   tiles of two faces) is ruled out, and the other cut is taken (rules 1 and 4 still hold).
   Why: a 3 turned a quarter runs the other way, so a box across two tiles shows every 3
   it holds the wrong way round (:mod:`vision.recognition.chirality`).

7. where both cuts of a block read both their tiles, a cut naming one face twice that a set
   holds once (:func:`vision.recognition.flush.over_set`: 4-4 | 5-5 cut across reads 4-5 and
   4-5) is ruled out, and the other cut is taken (rules 1 and 4 still hold). Why: one table is
   dealt from one set (docs/rules.md section 1), so those cannot be the block's two tiles.

8. where the face region gives no tile or block that reads -- a drawn tile whose sides are as
   dark as its face (imilako's 3-D tiles) makes the region larger than the face -- and another
   face-up outline (unknown, or the identified tile a :func:`vision.recognition.flush.missed_beside`
   seed lies beside) lies flush beside the seed's long side (:func:`outline_block`), the block
   the two outlines cover is cut instead, under rules 1-7. Why it is no new way to be wrong:
   the rectangle is another estimate of the same block (a tile model that boxed a flush pair
   crosswise as two boxes outlined it), and every candidate meets the same rules and the
   decoder's every check; an identified neighbour keeps its face by rule 4.

Where no candidate is taken but a cut of a block reads both its tiles (rule 2 or 3 fails:
either cut could be the true one), the block's four halves are read all the same: that cut's
two outlines become unknown tiles, each keeping the face it read (``evidence.disputed``, as
:func:`vision.recognition.fill.disputed_outlines` does), provided rule 4 holds for them. No face
is claimed; the table stage (:func:`vision.table.open_tile.block_fills`) settles a seat from
such a hand only where the tiles as read and both crosswise pairings of those halves give the
same result -- a cut of a flush square covers its four halves one way or the other, and a
crosswise box reads its halves right only where they look alike turned, which leaves their
values as they are.

The unknown outlines lying mostly on the taken outlines (at least
:data:`vision.recognition.overlaps.COVERED_UNKNOWN` of their area) are replaced by them; other
overlaps are left to :func:`vision.recognition.overlaps.resolve_overlapping_reads`.

Why it cannot give a wrong face on its own: it never names a face -- the decoder does, on an
outline the picture's own face region gives, with every check it always makes. The one new way
to be wrong is the wrong cut of a square block: a box across the halves of two tiles. Such a
box reads a face only from halves that look alike turned a quarter (1, 3, 4, 5), so rule 3
leaves a block whose faces could both come from such boxes unread; and rule 2 leaves a block
unread wherever the other cut reads too. A wrong face would need both the true cut to fail to
read *and* the wrong cut to read two faces, one with a 2 or 6 half made from turned halves
(a spot lost or added as well). The refined tiles then meet every later guard of the still
reading (:func:`vision.recognition.flush.flush_beside`,
:func:`vision.recognition.flush.cut_either_way`, :func:`vision.recognition.flush.stubby_boxes`,
:func:`vision.recognition.overlaps.resolve_overlapping_reads`). Every threshold is geometry or an
existing constant; none comes from ../shared.

Public API: :func:`refine_unknowns`, :func:`refine_guarded`, :func:`face_rectangle`,
:func:`side_trimmed`, :func:`block_cuts`, :func:`tile_shaped`, :func:`accept_cut`,
:func:`outline_block`, :data:`WINDOW`, :data:`OVERLAP`, :data:`SIDE_MIN`.
"""

from __future__ import annotations

from typing import Callable, Sequence

import cv2
import numpy as np

from vision.geometry import (long_axis, order_polygon, polygon_intersections, polygon_iou_matrix,
                             side_pairs)
from vision.recognition.chirality import against, lengthwise_by
from vision.recognition.decode import TileRead, counted_spots_px
from vision.recognition.flush import (OUTLINE_JITTER, STUBBY, beside_outlines, crosswise_alike,
                                      over_set)
from vision.recognition.overlaps import COVERED_UNKNOWN
from vision.recognition.scales import SAME_TILE_IOU
from vision.recognition.seam import block_of
from vision.recognition.zoom import NEAR_REACH, SIZE_TOLERANCE, ZOOM_MAX_TILES, local_shape
from vision.schema import UnreadReason

__all__ = ["refine_unknowns", "face_rectangle", "face_share", "side_trimmed", "block_cuts",
           "tile_shaped", "accept_cut", "outline_block", "WINDOW", "OVERLAP", "ON_FACE",
           "SIDE_MIN"]

#: Window side around an unknown outline, in local tile lengths: a block of two tiles (one
#: tile length square) holding the outline's centre lies within sqrt(2) = 1.41 lengths of
#: it, inside a window of 3 (1.5 each way).
WINDOW: float = 3.0
#: A refined outline lying on an identified tile by more than this fraction of its area is not
#: beside it: two outlines each up to OUTLINE_JITTER of a width off overlap by at most about
#: twice that.
OVERLAP: float = 2 * OUTLINE_JITTER


def face_rectangle(image: np.ndarray, polygon: np.ndarray, length: float,
                   window: float = WINDOW, opened: bool = False,
                   trim: bool = False) -> np.ndarray | None:
    """The minimum-area rectangle of the face region under an outline (module docstring).

    Args:
        image: uint8 (H, W, 3) BGR.
        polygon: float (4, 2) px, the unknown outline.
        length: the local tile length, px.
        window: window side in tile lengths.
        opened: the face class's spots filled and the region under the outline parted from
            what joins it by less than an ellipse of :data:`BRIDGE` local tile lengths first
            (:func:`_opened`): two tiles' faces that touch only at a corner or along a sliver
            (:func:`_seed_verdict`'s second try).
        trim: a tile's 3-D side cut off the rectangle (:func:`side_trimmed`).

    Returns:
        float32 (4, 2) px corners in order around the rectangle, or None: no region, or one
        touching the window's cut edge (not whole).
    """
    whole, trimmed = _face_boxes(image, polygon, length, window, opened)
    return trimmed if trim else whole


def _face_boxes(image: np.ndarray, polygon: np.ndarray, length: float, window: float,
                opened: bool, apart: np.ndarray | None = None
                ) -> tuple[np.ndarray | None, np.ndarray | None]:
    """:func:`face_rectangle` without and with the side trimmed, from one face region:
    ``(whole, trimmed)``, each float32 (4, 2) px or None. ``apart``: float (k, 4, 2) px
    outlines of identified tiles, taken out of the face class before the region is found."""
    p = np.asarray(polygon, np.float64).reshape(4, 2)
    h, w = image.shape[:2]
    c = p.mean(0)
    half = window * float(length) / 2
    x0, y0 = int(max(np.floor(c[0] - half), 0)), int(max(np.floor(c[1] - half), 0))
    x1, y1 = int(min(np.ceil(c[0] + half), w)), int(min(np.ceil(c[1] + half), h))
    if x1 - x0 < 8 or y1 - y0 < 8:
        return None, None
    value = cv2.cvtColor(np.ascontiguousarray(image[y0:y1, x0:x1]), cv2.COLOR_BGR2HSV)[..., 2]
    _, mask = cv2.threshold(value, 0, 1, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    inside = np.zeros_like(mask)
    cv2.fillPoly(inside, [np.round(p - [x0, y0]).astype(np.int32)], 1)
    if not inside.any():
        return None, None
    if mask[inside > 0].mean() < 0.5:  # the face is of the darker class
        mask = 1 - mask
    if apart is not None and len(apart):
        # an identified tile's face is not this one's, however flush the two lie
        taken_out = np.zeros_like(mask)
        cv2.fillPoly(taken_out, [np.round(np.asarray(q, np.float64) - [x0, y0]).astype(np.int32)
                                 for q in apart], 1)
        mask = mask & (1 - taken_out)
    if opened:
        mask = _opened(mask, length, inside)
    n, labels = cv2.connectedComponents(mask.astype(np.uint8))
    counts = np.bincount(labels[(inside > 0) & (mask > 0)], minlength=n)
    counts[0] = 0
    if n < 2 or not counts.any():
        return None, None
    ys, xs = np.nonzero(labels == int(np.argmax(counts)))
    touches = ((xs.min() == 0 and x0 > 0) or (ys.min() == 0 and y0 > 0)
               or (xs.max() == x1 - x0 - 1 and x1 < w) or (ys.max() == y1 - y0 - 1 and y1 < h))
    if touches or len(xs) < 16:
        return None, None
    box = cv2.boxPoints(cv2.minAreaRect(np.stack([xs, ys], 1).astype(np.float32)))
    trimmed = side_trimmed(box, labels == int(np.argmax(counts)))
    at = np.array([x0, y0], np.float32)
    return ((box + at).astype(np.float32),
            None if trimmed is None else (trimmed + at).astype(np.float32))


#: A face region's band without spots at one end of an axis is taken for a tile's 3-D side
#: where it is wider than the band at the other end by more than this share of the
#: rectangle's side along that axis: the spots of every half lie symmetric about the half's
#: centre, so a face's outermost spots lie about as far from both its ends (a half of one
#: spot, a 1, lies further in: a trim there only moves the midline towards the 1, which no
#: spot crosses). Geometry, not fitted: a tile's outermost spots lie a few pixels from its
#: edges; the drawn sides seen are 10-15 % of a tile's length.
SIDE_MIN: float = 0.08


def side_trimmed(box: np.ndarray, region: np.ndarray) -> np.ndarray | None:
    """A face region's rectangle less a 3-D tile side along one end of each axis: where the
    band without spots (the region's holes, :data:`SIDE_MIN`) at one end is the wider, the
    rectangle is cut back to the other end's band. A spot run into the felt is no hole, so
    the band can hold one: :func:`_seed_verdict` takes a trimmed rectangle's reads only where
    every spot the decoder counts on the untrimmed rectangle lies inside the trimmed one
    (:func:`_spots_kept`).

    Why. A drawn 3-D tile whose sides are as dark as its face (imilako, fintech) gives a face
    region that takes in the side: the rectangle is a side's width too long, so its cuts are
    not tile-shaped or their midline falls beside the true one (a spot "crowds the midline").

    Args:
        box: float32 (4, 2) px, the region's minimum-area rectangle (window px).
        region: bool (h, w), the face region in the same window.

    Returns:
        float32 (4, 2) px, the rectangle trimmed; None where no end is trimmed or there are
        no spots to measure by.
    """
    ys, xs = np.nonzero(_holes(region.astype(np.uint8)))  # the region's holes: spots
    if len(xs) == 0:
        return None
    q = np.asarray(box, np.float64).reshape(4, 2)
    out, cut = q.copy(), False
    for a, b in ((1, 3), (3, 1)):  # the axis along side 0-a, the other side 0-b
        along = q[a] - q[0]
        size = float(np.hypot(*along))
        if size < 4:
            continue
        unit = along / size
        spot = (np.stack([xs, ys], 1) - q[0]) @ unit
        lo, hi = float(spot.min()), size - float(spot.max())
        excess = abs(lo - hi)
        if excess <= SIDE_MIN * size:
            continue
        shift = unit * excess
        if lo > hi:  # the side at corner 0's end
            out[0] += shift
            out[b] += shift
        else:
            out[a] -= shift
            out[2] -= shift
        cut = True
    return out.astype(np.float32) if cut else None


#: The ellipse of :func:`face_rectangle`'s second try, in local tile lengths: about a quarter
#: of a tile's width (aspect 2-3), so it parts faces joined by less than that and leaves a
#: face whole.
BRIDGE: float = 0.08


def _opened(mask: np.ndarray, length: float, inside: np.ndarray) -> np.ndarray:
    """The face class (uint8 (h, w) 0/1) with its holes (spots: background pieces not reaching
    the window's edge) filled and eroded by an ellipse of :data:`BRIDGE` x ``length`` px (odd,
    at least 3); of the pieces that leaves, the one most of the outline (``inside``, uint8
    (h, w) 0/1) lies on, grown back by the same ellipse within the filled class. A face
    joined to a neighbour's by less than the ellipse comes back alone."""
    solid = mask.astype(np.uint8).copy()
    solid[_holes(mask)] = 1
    k = max(3, int(round(BRIDGE * float(length))) | 1)
    kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k))
    core = cv2.erode(solid, kernel)
    n, labels = cv2.connectedComponents(core)
    counts = np.bincount(labels[(inside > 0) & (core > 0)], minlength=n)
    counts[0] = 0
    if n < 2 or not counts.any():
        return np.zeros_like(solid)
    grown = cv2.dilate((labels == int(np.argmax(counts))).astype(np.uint8), kernel)
    return grown & solid


def _holes(mask: np.ndarray) -> np.ndarray:
    """bool (h, w): the pixels outside ``mask`` (uint8 (h, w) 0/1) that it encloses -- the
    background pieces not reaching the window's edge (a face's spots)."""
    back = (1 - mask).astype(np.uint8)
    n, labels = cv2.connectedComponents(back)
    edge = np.unique(np.concatenate([labels[0], labels[-1], labels[:, 0], labels[:, -1]]))
    return (back > 0) & ~np.isin(labels, edge)


#: An outline beside a tile lies on a tile face where at least this share of its pixels is of
#: the tile's face class: spots are a minority of a face (the assumption
#: :func:`face_rectangle` makes of the outline it refits).
ON_FACE: float = 0.5


def face_share(image: np.ndarray, polygon: np.ndarray, beside: np.ndarray) -> float:
    """The share of ``beside``'s pixels in the face class of the tile ``polygon`` (float (4, 2)
    px each): the pixels of the window around both split by Otsu's threshold on brightness
    (HSV value) as in :func:`face_rectangle`, the tile's class the one most of its pixels fall
    in. A float in [0, 1]; 0.0 for outlines off the picture or a window too small."""
    p = np.asarray(polygon, np.float64).reshape(4, 2)
    q = np.asarray(beside, np.float64).reshape(4, 2)
    both = np.vstack([p, q])
    h, w = image.shape[:2]
    x0, y0 = (max(int(np.floor(v)), 0) for v in both.min(0))
    x1, y1 = int(min(np.ceil(both[:, 0].max()) + 1, w)), int(min(np.ceil(both[:, 1].max()) + 1, h))
    if x1 - x0 < 8 or y1 - y0 < 8:
        return 0.0
    value = cv2.cvtColor(np.ascontiguousarray(image[y0:y1, x0:x1]), cv2.COLOR_BGR2HSV)[..., 2]
    _, mask = cv2.threshold(value, 0, 1, cv2.THRESH_BINARY + cv2.THRESH_OTSU)
    masks = []
    for poly in (p, q):
        m = np.zeros_like(mask)
        cv2.fillPoly(m, [np.round(poly - [x0, y0]).astype(np.int32)], 1)
        masks.append(m > 0)
    if not masks[0].any() or not masks[1].any():
        return 0.0
    face = 1 if mask[masks[0]].mean() >= 0.5 else 0
    return float((mask[masks[1]] == face).mean())


def block_cuts(rect: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The two middle cuts of a rectangle: cut 0 through the midpoints of sides 0-1 and 2-3,
    cut 1 through those of sides 1-2 and 3-0; each float32 (2, 4, 2) px, the two outlines in
    the project's corner order (:func:`vision.geometry.order_polygon`)."""
    q = np.asarray(rect, np.float32).reshape(4, 2)
    out = []
    for k in (0, 1):
        r = np.roll(q, -k, 0)
        m01, m23 = (r[0] + r[1]) / 2, (r[2] + r[3]) / 2
        pieces = [np.stack([r[0], m01, m23, r[3]]), np.stack([m01, r[1], r[2], m23])]
        out.append(np.stack([order_polygon(x) for x in pieces]).astype(np.float32))
    return out[0], out[1]


def tile_shaped(polygon: np.ndarray, length: float, aspect: float) -> bool:
    """Whether an outline (float (4, 2) px) has the picture's tile size and shape: its long
    side within [length / SIZE_TOLERANCE, length x SIZE_TOLERANCE] and its aspect (long over
    short side) within [aspect x STUBBY, aspect / STUBBY]."""
    a, b = sorted(side_pairs(np.asarray(polygon, np.float64)))
    if a <= 0:
        return False
    return (length / SIZE_TOLERANCE <= b <= length * SIZE_TOLERANCE
            and aspect * STUBBY <= b / a <= aspect / STUBBY)


def outline_block(seed: TileRead, reads: Sequence[TileRead]) -> np.ndarray | None:
    """The block an unknown outline and another face-up outline (unknown or identified) lying
    flush beside its long side cover (:func:`vision.recognition.seam.block_of`; the neighbour:
    the outline of highest polygon IoU, at least :data:`vision.recognition.scales.SAME_TILE_IOU`,
    with the seed moved by its width, :func:`vision.recognition.flush.beside_outlines`):
    float32 (4, 2) px in order around it, or None where there is no such neighbour."""
    others = [r for r in reads if r is not seed and r.state != "face_down"]
    if not others:
        return None
    beside = beside_outlines(seed.polygon).astype(np.float32)
    polys = np.stack([np.asarray(r.polygon, np.float32) for r in others])
    iou = polygon_iou_matrix(beside, polys).max(0)
    m = int(np.argmax(iou))
    if iou[m] < SAME_TILE_IOU:
        return None
    return block_of(np.asarray(seed.polygon, np.float32), polys[m]).astype(np.float32)


def accept_cut(cut: Sequence[TileRead], other: Sequence[TileRead] = (),
               lengthwise: Callable[[TileRead], bool] | None = None) -> bool:
    """Rules 1-3 of the module docstring for one candidate: every read identified; a block
    (two reads): the other cut's reads not all identified, and a face not crosswise alike --
    or a read that ``lengthwise(read)`` says is no box across two tiles (its 3 runs the
    table's way, :func:`vision.recognition.chirality.shows_way`)."""
    if not cut or any(r.face is None for r in cut):
        return False
    if len(cut) == 1:
        return True
    if other and all(r.face is not None for r in other):
        return False
    if not all(crosswise_alike(r.face) for r in cut):
        return True
    return lengthwise is not None and any(lengthwise(r) for r in cut)


def _judge(rect: np.ndarray | None, shape: Callable[[float], tuple[float, float]],
           seed: TileRead,
           decode: Callable[[np.ndarray, float], list[TileRead]],
           lengthwise: Callable[[TileRead], bool] | None,
           cut_shown: Callable[[np.ndarray], int | None] | None,
           way: Callable[[], int | None] | None,
           blocks_only: bool = False) -> tuple[str, list[TileRead]] | None:
    """Rules 1-7 of the module docstring on one rectangle (float (4, 2) px, or None): ``("take",
    reads)`` for the one candidate taken, ``("either", reads)`` for a block whose cut reads
    both tiles though which cut holds is not sure, None where nothing reads (or the rectangle
    is neither a tile nor a block; a tile-shaped one with ``blocks_only``). ``shape(along)``:
    the ``(length px, aspect)`` of the identified tiles around the seed lying along that long
    axis (degrees; :func:`vision.recognition.zoom.local_shape`), each outline judged by the
    tiles lying its way."""
    if rect is None:
        return None
    got: list[list[TileRead]] = []
    if tile_shaped(rect, *shape(long_axis(rect))):
        if blocks_only:
            return None
        options = [(decode(order_polygon(rect)[None].astype(np.float32),
                           seed.tile_confidence), [])]
    else:
        cuts = block_cuts(rect)
        shaped = [i for i in (0, 1)
                  if all(tile_shaped(p, *shape(long_axis(p))) for p in cuts[i])]
        if not shaped:
            return None  # neither one tile nor a block of two
        got = [decode(c, seed.tile_confidence) for c in cuts]
        options = [(got[i], got[1 - i]) for i in shaped]
    chosen = [c for c, other in options if accept_cut(c, other, lengthwise)]
    both = len(options) == 2 and all(r.face is not None for c in got for r in c)
    if len(chosen) != 1 and len(options) == 2 and cut_shown is not None:
        # either cut reads (or neither may be taken): the cut the picture shows -- the
        # notches where the tiles' rounded corners meet at its seam's ends, the other
        # sides straight -- is taken where it reads both tiles (rule 5)
        c = cut_shown(np.asarray(rect, np.float32))
        if c is not None and all(r.face is not None for r in got[c]):
            chosen = [got[c]]
    if len(chosen) != 1 and both and way is not None:
        # both cuts read both tiles: a cut whose 3 runs against the table's set is not
        # how the tiles lie (a 3 turned a quarter runs the other way); the other is
        # taken (rule 6)
        out_of_set = [against(c, way()) for c in got]
        if out_of_set.count(True) == 1:
            chosen = [got[out_of_set.index(False)]]
    if len(chosen) != 1 and both:
        # both cuts read both tiles: a cut naming one face twice that the set holds once
        # cannot be how one set's tiles lie; the other is taken (rule 7)
        dealt = [not over_set([r.face for r in c]) for c in got]
        if dealt.count(True) == 1:
            chosen = [got[dealt.index(True)]]
    if len(chosen) == 1:
        return "take", list(chosen[0])
    whole = [c for c, _ in options if len(c) == 2 and all(r.face for r in c)]
    return ("either", list(whole[0])) if whole else None


def refine_unknowns(reads: Sequence[TileRead], image: np.ndarray,
                    decode: Callable[[np.ndarray, float], list[TileRead]],
                    max_tiles: int = ZOOM_MAX_TILES,
                    only: Callable[[TileRead], bool] | None = None,
                    cut_shown: Callable[[np.ndarray], int | None] | None = None,
                    way: Callable[[], int | None] | None = None,
                    as_peer: Callable[[TileRead, Sequence[TileRead]], TileRead] | None = None
                    ) -> list[TileRead]:
    """Refine the outlines of a still reading's unknown tiles from the picture (module
    docstring).

    Args:
        reads: the still reading (image px), free of overlapping outlines.
        image: uint8 (H, W, 3) BGR.
        decode: ``decode(polygons float32 (n, 4, 2) px, tile confidence) -> n TileRead`` (the
            engine's decoder, no cache).
        max_tiles: at most this many unknown outlines are refined (the surest first).
        only: refine only the unknown outlines it is true for (None: every one); the others
            stay as they are (the pass after the flush guards, :func:`refine_guarded`).
        cut_shown: ``cut_shown(rect float32 (4, 2) px) -> 0 | 1 | None``: the cut of a block
            rectangle the picture shows (:func:`block_cuts`' numbering;
            :func:`vision.recognition.notch.notch_cut`), for rule 5; None: no such check.
        way: ``way() -> +1 | -1 | None``: the way the table's set draws its 3s
            (:func:`vision.recognition.chirality.table_hand` on trusted reads), for rules 3
            and 6 (called only where a block needs it); None: no such check.
        as_peer: ``as_peer(read, identified reads) -> read``: a candidate outline refused for
            its aspect alone read where the picture's tiles around it are as long
            (:func:`vision.recognition.aspect.as_peer`; a face region's rectangle takes in a
            3-D tile's side, which lengthens a tall tile's outline past the decoder's bound);
            None: the decoder's bound holds.

    Returns:
        the reads with the refined tiles -- and the unknown tiles of blocks either cut could
        read -- in place of the unknown outlines they cover (the rest in order, the new reads
        appended); ``reads`` unchanged where nothing is taken.
    """
    reads = list(reads)
    known = [r for r in reads if r.state == "face_up"]
    if not known:
        return reads
    seeds = sorted((k for k, r in enumerate(reads) if r.state == "unknown"
                    and (only is None or only(r))),
                   key=lambda k: -float(reads[k].tile_confidence))[:max_tiles]
    taken: list[TileRead] = []
    blocks: list[TileRead] = []  # unknown tiles of blocks either cut could read
    # a 3 running the set's way: the outline is no box across two tiles (rules 3, 6)
    lengthwise = lengthwise_by(way) if way is not None else None
    done: list[np.ndarray] = []  # rectangles already tried
    for k in seeds:
        seed = reads[k]
        if any(cv2.pointPolygonTest(d.reshape(-1, 1, 2), tuple(map(float, seed.centre)), False)
               >= 0 for d in done):
            continue
        peers = known + taken
        held = _once(_held_to(decode, as_peer, peers))  # one decode per outline a seed
        shape = _shape_near(seed.centre, peers)
        verdict = _seed_verdict(seed, reads, image, shape, held, lengthwise, cut_shown, way,
                                done)
        near = _shape_near(seed.centre, peers, NEAR_REACH)
        if verdict is None and near() != shape():  # a slanted camera's near side: beside it
            verdict = _seed_verdict(seed, reads, image, near, held, lengthwise, cut_shown,
                                    way, done)
        if verdict is None:
            continue
        kind, cut = verdict
        new = _agreeing(cut, known + taken)
        if kind == "either":
            # which way the block is cut is not sure; the cut reading both its tiles gives
            # the block's four halves: two unknown tiles, each keeping the face its outline
            # read (``evidence.disputed``: vision.table.open_tile.block_fills; ``either_cut``:
            # vision.recognition.dealt)
            if new is not None and len(new) == 2:  # rule 4, and neither is a known tile
                blocks.extend(r.as_unknown(UnreadReason.EITHER_CUT, face=r.face)
                              .with_evidence(disputed=r.face, either_cut=r.face) for r in new)
        elif new is not None:
            taken.extend(new)
    if not taken and not blocks:
        return reads
    return _uncovered(reads, taken + blocks) + taken + blocks


def _shape_near(centre: np.ndarray, peers: Sequence[TileRead], reach: float | None = None
                ) -> Callable[..., tuple[float, float]]:
    """``shape(along=None) -> (length px, aspect)`` of the identified ``peers`` around
    ``centre`` (with ``reach``, only those near it), those lying along ``along`` (degrees)
    where given (:func:`vision.recognition.zoom.local_shape`)."""
    return lambda along=None: local_shape(centre, peers, along=along, reach=reach)


def _held_to(decode: Callable[[np.ndarray, float], list[TileRead]],
             as_peer: Callable[[TileRead, Sequence[TileRead]], TileRead] | None,
             peers: Sequence[TileRead]) -> Callable[[np.ndarray, float], list[TileRead]]:
    """``decode`` with each outline refused for its aspect alone held to ``peers``
    (``as_peer``; ``decode`` itself where None)."""
    if as_peer is None:
        return decode
    return lambda polys, conf: [as_peer(r, peers) for r in decode(polys, conf)]


def _seed_verdict(seed, reads, image, shape, decode, lengthwise, cut_shown, way,
                  done: list[np.ndarray]):
    """:func:`_judge` on the face region a seed lies in -- as it is, parted from a neighbour
    touching it, then each with a tile's 3-D side trimmed (:func:`side_trimmed`, its reads
    held to :func:`_spots_kept`), then with the identified tiles' outlines taken out of it
    (as it is and parted) -- else on the block the seed and a face-up outline flush
    beside it cover (rule 8); the rectangles tried are added to ``done``. Arguments as
    :func:`refine_unknowns` (``shape``: the tiles' shape around the seed, along a long axis
    or (no argument) all of them, as :func:`_judge` takes it; ``decode``: remembering its
    answers for the seed, :func:`_once` -- :func:`_spots_kept` and a second judgement decode
    the cuts already decoded)."""
    length = shape()[0]
    boxes = []
    for opened in (False, True):
        # the second try: the face may touch a neighbour's at a corner (two hands laid
        # close), which joins their regions; the region parted from it
        rect, trimmed = _face_boxes(image, seed.polygon, length, WINDOW, opened)
        boxes.append((rect, trimmed))
        verdict = _judge(rect, shape, seed, decode, lengthwise, cut_shown, way)
        if rect is not None and (verdict is not None or not opened):
            done.append(rect)
        if verdict is not None:
            return verdict
    for whole, rect in boxes:
        # a drawn tile's 3-D side as dark as its face lengthens the region: the rectangle
        # trimmed to the face the spots show (one region, both boxes), where no spot is lost
        verdict = _judge(rect, shape, seed, decode, lengthwise, cut_shown, way)
        if verdict is not None and _spots_kept(verdict[1], rect, whole, decode,
                                               seed.tile_confidence):
            done.append(rect)
            return verdict
    # the face runs on into an identified neighbour's (a tile touching it flush, as dark):
    # the region with the identified tiles' outlines taken out, as it is and parted
    apart = _apart_from(reads, boxes[0][0])
    for opened in (False, True) if apart is not None else ():
        whole, trimmed = _face_boxes(image, seed.polygon, length, WINDOW, opened, apart)
        for rect in (whole, trimmed):
            verdict = _judge(rect, shape, seed, decode, lengthwise, cut_shown, way)
            if verdict is not None and (rect is whole or _spots_kept(
                    verdict[1], rect, whole, decode, seed.tile_confidence)):
                done.append(rect)
                return verdict
    # the face region gives no tile or block that reads (a tile's sides as dark as its face,
    # a shadow, a neighbour touching it): the block the seed and a face-up outline flush
    # beside it cover is cut instead (rule 8)
    block = outline_block(seed, reads)
    if block is None:
        return None
    done.append(block)
    return _judge(block, shape, seed, decode, lengthwise, cut_shown, way, blocks_only=True)


def _apart_from(reads: Sequence[TileRead], region: np.ndarray | None) -> np.ndarray | None:
    """The identified tiles' outlines (float64 (n, 4, 2) px) to take out of a seed's face
    region: those that overlap the region's rectangle (``region``; None, a region cut by the
    window: every one -- those off the window draw nothing there). None where none does:
    taken out, they would leave the region as it was."""
    polys = [np.asarray(r.polygon, np.float64) for r in reads if r.state == "face_up"]
    if not polys:
        return None
    polys = np.stack(polys)
    if region is not None:
        inter, _, _ = polygon_intersections(np.asarray(region, np.float32)[None],
                                            polys.astype(np.float32))
        polys = polys[inter[0] > 0]
    return polys if len(polys) else None


def _spots_kept(got: Sequence[TileRead], rect: np.ndarray, whole: np.ndarray | None,
                decode: Callable[[np.ndarray, float], list[TileRead]], conf: float) -> bool:
    """Whether every spot the decoder counts on the untrimmed rectangle ``whole`` -- as one
    tile where ``got`` (the trimmed rectangle's reads) is one tile, else on both its cuts
    (:func:`block_cuts`) -- lies inside the trimmed rectangle ``rect`` (float (4, 2) px
    each; :func:`vision.recognition.decode.counted_spots_px`): a trim that cut a spot off
    is not taken."""
    if whole is None:
        return False
    groups = ([order_polygon(whole)[None].astype(np.float32)] if len(got) == 1
              else list(block_cuts(whole)))  # as _judge decodes them
    inside = np.asarray(rect, np.float32).reshape(-1, 1, 2)
    for outlines in groups:
        for r, poly in zip(decode(outlines, conf), outlines):
            for x, y in counted_spots_px(r, poly):
                if cv2.pointPolygonTest(inside, (float(x), float(y)), False) < 0:
                    return False
    return True


def _once(decode: Callable[[np.ndarray, float], list[TileRead]]
          ) -> Callable[[np.ndarray, float], list[TileRead]]:
    """``decode`` remembering its answers for one seed: the same outlines (float32 (n, 4, 2)
    px) at the same confidence are decoded once."""
    seen: dict = {}

    def run(polys: np.ndarray, conf: float) -> list[TileRead]:
        key = (np.asarray(polys, np.float32).tobytes(), float(conf))
        if key not in seen:
            seen[key] = decode(polys, conf)
        return seen[key]
    return run


def _uncovered(reads: Sequence[TileRead], new: Sequence[TileRead]) -> list[TileRead]:
    """``reads`` less the unknown outlines the ``new`` reads cover (at least
    :data:`vision.recognition.overlaps.COVERED_UNKNOWN` of one's area), in order."""
    polys = np.stack([np.asarray(r.polygon, np.float32) for r in new])
    out = []
    for r in reads:
        if r.state == "unknown":
            inter, area, _ = polygon_intersections(np.asarray(r.polygon, np.float32)[None], polys)
            if area[0] > 0 and inter.sum() / area[0] >= COVERED_UNKNOWN:
                continue  # an outline of the refined tiles, off (or across them)
        out.append(r)
    return out


def refine_guarded(reads: Sequence[TileRead],
                   guards: Callable[[list[TileRead]], list[TileRead]],
                   refit: Callable[..., list[TileRead]],
                   guards_after: Callable[[list[TileRead]], list[TileRead]] | None = None,
                   spare: Callable[[TileRead], bool] | None = None) -> list[TileRead]:
    """The still reading's last steps: the flush guards, then the tiles they made unknown
    refitted, and the guards once more on what that gives.

    Why. The flush guards (:mod:`vision.recognition.flush`) make a tile unknown where unread
    tile surface lies flush beside it: the box may cut a block of two tiles across, or the
    model missed the tile's flush neighbour. Refinement ran before them, on the outlines that
    were unknown then; a tile the guards make unknown is exactly the seed it needs -- the face
    region under it is the block of the two tiles, and :func:`refine_unknowns` splits it only
    where exactly one cut reads both tiles, one face with a 2 or a 6 half. Nothing here names a
    face or lifts a guard: a refined tile is a new read of the decoder, and it meets the guards
    again like every other.

    A tile the guards would leave but for a doubt that ``spare`` settles (a mixed tile whose 3
    runs the way the table's set draws it, :func:`vision.recognition.chirality.shows_way`),
    or that ``guards`` marked so (``evidence.spared``: a 6 along the unread outline beside it,
    :func:`vision.recognition.flush.six_along`), is made unknown by ``guards`` all the same,
    so that it seeds the refit too (its flush neighbour may be a tile the model missed); where
    the refit does not replace its outline, it is given back as it was read, and
    ``guards_after`` judge it with the rest.

    Args:
        reads: the reading before the guards (image px).
        guards: ``guards(reads) -> reads``: :func:`vision.recognition.flush.flush_beside`,
            ``cut_either_way``, ``stubby_boxes`` and ``notched_boxes`` in turn (they only
            ever remove faces).
        refit: ``refit(reads, only=predicate) -> reads``: :func:`refine_unknowns` with the
            picture and the engine's decoder, overlapping outlines resolved.
        guards_after: the guards run on what the refit gives (None: ``guards``): the same,
            taking ``spare``'s word.
        spare: ``spare(read) -> bool`` for an identified read of ``reads`` (None: none).

    Returns:
        the guarded reads, with the refined tiles where a guard-made unknown was split.
    """
    after = guards_after or guards
    before = {np.asarray(r.polygon, np.float32).tobytes(): r for r in reads
              if r.state == "face_up"}
    out = guards(list(reads))
    made = {id(r) for r in out if r.state == "unknown"
            and np.asarray(r.polygon, np.float32).tobytes() in before}
    if not made:
        return out
    again = refit(out, only=lambda r: id(r) in made)
    # a spared tile the refit left as it was (its outline still unknown) is given back
    given = [r for r in again]
    for i, r in enumerate(again):
        b = before.get(np.asarray(r.polygon, np.float32).tobytes()) if id(r) in made else None
        if b is not None and (r.evidence.spared is not None or (spare is not None and spare(b))):
            given[i] = b
    if len(given) == len(out) and all(a is b for a, b in zip(given, out)):
        return out
    return after(given)


def _agreeing(cut: Sequence[TileRead], known: Sequence[TileRead]) -> list[TileRead] | None:
    """Rule 4: the reads of ``cut`` new to ``known`` (identified reads), or None where one lies
    on an identified tile it is not (or names another face than the tile it is)."""
    polys = np.stack([np.asarray(r.polygon, np.float32) for r in cut])
    kp = np.stack([np.asarray(r.polygon, np.float32) for r in known])
    iou = polygon_iou_matrix(polys, kp)
    inter, area, _ = polygon_intersections(polys, kp)
    new = []
    for i, r in enumerate(cut):
        same = iou[i] >= SAME_TILE_IOU
        if same.any():
            if any(known[j].face != r.face for j in np.nonzero(same)[0]):
                return None
            if (inter[i][~same] > OVERLAP * area[i]).any():
                return None
            continue
        if (inter[i] > OVERLAP * area[i]).any():
            return None
        new.append(r)
    return new
