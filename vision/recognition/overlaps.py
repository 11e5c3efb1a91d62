"""Tile outlines that overlap as two real tiles never do: straddlers and duplicates.

Two face-up tiles on a table share at most an edge. The tile model sometimes adds a box across
two touching tiles of a hand, or a second box on one tile; these functions remove or neutralise
them before the table stage, so that a position never looks like five tiles and no face is read
from the halves of two tiles. Overlap is measured with
:func:`vision.geometry.inside_fractions` (exact convex polygon intersection).

A spot belongs to one tile: two identified tiles that count the same spot
(:func:`borrowed_spots`) cannot both be read from their own spots, whatever their outlines
overlap, so :func:`shared_spots` names neither (issue 40, a face whose spots are not all its
own).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from vision.recognition.decode import TileRead, counted_spots_px
from vision.detections import Detections
from vision.geometry import crop_to_image, inside_fractions, side_pairs
from vision.recognition.scales import SAME_TILE_IOU
from vision.schema import UnreadReason

__all__ = ["STRADDLE_OVERLAP", "DUPLICATE_OVERLAP", "COVERED_UNKNOWN", "ATTACHED_UNKNOWN",
           "SAME_SPOT", "drop_straddlers", "resolve_overlapping_reads", "borrowed_spots",
           "shared_spots", "tile_spots"]

#: Two tiles' spots are one spot when their centres lie less than this x the narrower tile's
#: width apart (:func:`borrowed_spots`): a spot is about 0.15-0.2 of a tile's width across,
#: and the nearest two spots of one face (a 6's rows) about 0.3 apart.
SAME_SPOT: float = 0.12


def tile_spots(read: TileRead) -> tuple[np.ndarray, float]:
    """The spots ``read`` counts (float64 (k, 2) image px) and its width px."""
    return counted_spots_px(read), float(min(side_pairs(read.polygon)))


def _shared(mine: tuple[np.ndarray, float], theirs: tuple[np.ndarray, float]) -> np.ndarray:
    """bool (k,): which of ``mine``'s spots lie under :data:`SAME_SPOT` x the narrower width
    from one of ``theirs`` (both :func:`tile_spots`)."""
    (pts, width), (other, other_width) = mine, theirs
    if not len(pts) or not len(other):
        return np.zeros(len(pts), bool)
    d = np.linalg.norm(pts[:, None, :] - other[None, :, :], axis=2)
    return (d < SAME_SPOT * min(width, other_width)).any(1)


def borrowed_spots(read: TileRead, owners: Sequence[TileRead],
                   owner_spots: Sequence[tuple[np.ndarray, float]] | None = None) -> int:
    """How many of the spots ``read`` counts are counted by one of ``owners`` too (identified
    tiles, ``read`` itself left out): an int, 0 for none. Two spots are one where their
    centres (:func:`vision.recognition.decode.counted_spots_px`, image px) lie less than
    :data:`SAME_SPOT` x the narrower tile's width apart. ``owner_spots``: the owners' spots
    and widths, one per owner in order, when the caller has them (a loop over candidates
    maps each owner's spots to the image once).

    A spot belongs to one tile, so spots counted on an outline that an identified neighbour
    counts as well are the neighbour's, or the neighbour's face is not its own. A spot that
    merely lies inside a neighbour's outline (an outline a little off, reaching onto this
    tile) but that the neighbour does not count is left alone."""
    mine = tile_spots(read)
    if not len(mine[0]):
        return 0
    theirs = owner_spots if owner_spots is not None else [tile_spots(o) for o in owners]
    shared = np.zeros(len(mine[0]), bool)
    for o, spots in zip(owners, theirs):
        if o is not read:
            shared |= _shared(mine, spots)
    return int(np.count_nonzero(shared))


def shared_spots(reads: Sequence[TileRead]) -> list[TileRead]:
    """Identified tiles that count a spot another identified tile counts too
    (:func:`borrowed_spots`) made unknown, both of them
    (:attr:`vision.schema.UnreadReason.SHARED_SPOTS`, the face kept in
    ``evidence.disputed``): which of the two the spot belongs to is not known, and a face
    read from a neighbour's spot is wrong. Why it cannot settle wrongly: it only ever removes
    faces. On ../shared's four scene folders (still, and the still frames' mean under a
    camera's noise) it unread no tile (models/MODEL_CARD.md, session 33): the readings' other
    rules leave no such pair there; it closes the class for the pictures they do not. Each
    tile's spots are mapped to the image once; a pair is compared once.

    Args:
        reads: a still reading (image px polygons, float (4, 2); spots in crop px).

    Returns:
        ``reads`` in the same order, such tiles ``as_unknown``.
    """
    out = list(reads)
    known = [k for k, r in enumerate(out) if r.face is not None]
    if len(known) < 2:
        return out
    spots = {k: tile_spots(out[k]) for k in known}
    hit: set[int] = set()
    for i, a in enumerate(known):
        for b in known[i + 1:]:
            if _shared(spots[a], spots[b]).any():
                hit |= {a, b}
    for k in sorted(hit):
        was = out[k].face
        out[k] = out[k].as_unknown(UnreadReason.SHARED_SPOTS, face=was).with_evidence(
            disputed=was)
    return out


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


#: An unknown outline touching identified tiles by at least this fraction of its area, with no
#: spot of its own, is a box over the felt or the gap between two hands, not a tile.
ATTACHED_UNKNOWN: float = 0.05


def _iou_from_inside(a_in_b: float, b_in_a: float) -> float:
    """Polygon IoU from the two inside fractions (area(a & b)/area(a), area(a & b)/area(b))."""
    if a_in_b <= 0 or b_in_a <= 0:
        return 0.0
    return 1.0 / (1.0 / a_in_b + 1.0 / b_in_a - 1.0)


def _no_spot_of_its_own(r: TileRead, known: Sequence[TileRead], touch: np.ndarray) -> bool:
    """True for an unknown outline the decoder found no spot on, or one attached to identified
    tiles (at least ATTACHED_UNKNOWN of its area inside them) whose every spot lies inside an
    identified tile's outline: a face-up tile shows at least two spots of its own (1-1), so
    such a box -- over the felt, the gap between two hands, or a tile's edge -- is not a tile.
    Only outlines the decoder has read count (spots looked for: ``read_a``)."""
    n = r.spots_counted
    if n is None:
        return False  # not decoded (video: the identity cache's "not decoded yet")
    if n == 0:
        return True  # no spot at all: not a face-up tile, wherever it lies
    if not len(known) or float(np.sum(touch)) < ATTACHED_UNKNOWN:
        return False
    import cv2

    pips = r.pips
    if len(pips):
        centres = crop_to_image(np.asarray(pips.xyxy, np.float64).reshape(-1, 2, 2).mean(1),
                                r.polygon)
        outlines = [np.asarray(k.polygon, np.float32).reshape(-1, 1, 2) for k in known]
        for x, y in centres:
            if not any(cv2.pointPolygonTest(o, (float(x), float(y)), False) >= 0
                       for o in outlines):
                return False
    return True


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
    * two identified outlines naming the same face with polygon IoU >= SAME_TILE_IOU are two
      boxes on one tile: the more confident one is kept;
    * two unknown outlines with polygon IoU >= SAME_TILE_IOU are two boxes on one tile: the
      less confident is dropped (the tile stays unknown);
    * an unknown outline the decoder found no spot on, or one attached to identified tiles
      whose every spot lies inside them, is dropped: a face-up tile shows spots of its own
      (at least two), so it is a box over the felt, the gap between two hands or a tile's
      edge;
    * otherwise, two identified outlines that overlap that much both become unknown
      ("overlapping outlines"): which one is the tile is not known, and nothing is settled
      from a guess.
    * an identified outline with at least COVERED_UNKNOWN of its area inside one unknown
      outline that stays becomes unknown too ("overlapping outlines"; :func:`_inside_unknown`):
      a real tile is never half under another, and which of the two is the tile is not known.
    * an identified outline with at least STRADDLE_OVERLAP of its area inside each of two
      other face-up outlines that stay (unknown ones included; neither a box on the same
      tile, polygon IoU < SAME_TILE_IOU) lies across them as the straddlers of
      :func:`drop_straddlers` do: either it or they are not tiles, so it becomes unknown
      ("outline across two other tile outlines"). Unknown outlines mostly inside it were
      dropped above (the identified read is trusted there, as before).

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
    ups = [r for r in reads if r.state != "face_down"]  # ups[k] is the read at up[k]
    inside = inside_fractions(np.stack([r.polygon for r in ups]))
    known = [k for k, r in enumerate(ups) if r.state == "face_up"]
    same = _same_face_boxes(ups, inside, known)
    known = [k for k in known if k not in same]
    frac = inside >= DUPLICATE_OVERLAP
    over = {k: [m for m in known if frac[k, m]] for k in range(len(up))}
    drop = _inside_identified(ups, inside, known, over) | same
    drop = _drop_unknown_twins(ups, inside, known, drop)
    across = _across_two(inside, known, drop)
    conflict = {x for k in known if k not in drop and k not in across
                for m in over[k] if m not in drop and m not in across for x in (k, m)}
    conflict |= _inside_unknown(ups, inside, known, drop | across)
    gone = {up[k] for k in drop}
    changed = {up[k] for k in conflict}
    crossing = {up[k] for k in across}
    return [r.as_unknown(UnreadReason.OVERLAPPING, face=r.face) if i in changed
            else r.as_unknown(UnreadReason.ACROSS_TWO, face=r.face)
            if i in crossing else r
            for i, r in enumerate(reads) if i not in gone]


def _same_face_boxes(ups: Sequence[TileRead], inside: np.ndarray,
                     known: Sequence[int]) -> set[int]:
    """Two boxes on one tile naming the same face (polygon IoU >= SAME_TILE_IOU, the input-size
    fusion's criterion): one tile, the more confident box kept. Only overlapping pairs.

    Args:
        ups: the face-up and unknown reads; inside: float (n, n) :func:`inside_fractions` of
            their polygons; known: indices into ``ups`` of the identified reads.

    Returns:
        The indices into ``ups`` of the less confident box of each such pair.
    """
    same = set()
    kn = np.asarray(known, int)
    for a, b in zip(*np.nonzero(np.triu(inside[np.ix_(kn, kn)] > 0, 1))):
        a, b = int(kn[a]), int(kn[b])
        if (ups[a].face == ups[b].face
                and _iou_from_inside(inside[a, b], inside[b, a]) >= SAME_TILE_IOU):
            same.add(min(a, b, key=lambda k: (ups[k].confidence, -k)))
    return same


def _inside_identified(ups: Sequence[TileRead], inside: np.ndarray, known: Sequence[int],
                       over: dict[int, list[int]]) -> set[int]:
    """The outlines dropped for lying inside identified ones (:func:`resolve_overlapping_reads`):
    an unknown outline at least DUPLICATE_OVERLAP inside one identified outline, at least
    COVERED_UNKNOWN inside identified ones together, or with no spot of its own
    (:func:`_no_spot_of_its_own`); an identified outline DUPLICATE_OVERLAP inside two or more
    other identified ones (across two identified tiles).

    Args:
        ups, inside, known: as :func:`_same_face_boxes` (``known`` without the same-face
            boxes); over: index -> the identified outlines it lies DUPLICATE_OVERLAP inside.

    Returns:
        Indices into ``ups``.
    """
    drop = {k for k in over if ups[k].state == "unknown"
            and (over[k] or inside[k, known].sum() >= COVERED_UNKNOWN
                 or _no_spot_of_its_own(ups[k], [ups[m] for m in known], inside[k, known]))}
    drop |= {k for k in known if len(over[k]) >= 2}  # across two identified tiles
    return drop


def _drop_unknown_twins(ups: Sequence[TileRead], inside: np.ndarray, known: Sequence[int],
                        drop: set[int]) -> set[int]:
    """``drop`` with the less confident of two unknown outlines that stay with polygon IoU >=
    SAME_TILE_IOU: two boxes on one tile (two real tiles share at most an edge): one unread
    tile, the more confident box kept -- it names no face either way, and the position no
    longer looks like five tiles.

    Args:
        ups, inside, known: as :func:`_inside_identified`; drop: the indices dropped so far.

    Returns:
        A new set of indices into ``ups``.
    """
    drop = set(drop)
    unread = [k for k in range(len(ups)) if k not in drop and k not in known
              and ups[k].state == "unknown"]
    for a in sorted(unread, key=lambda k: (ups[k].confidence, -k)):
        if a not in drop and any(
                m != a and m not in drop
                and _iou_from_inside(inside[a, m], inside[m, a]) >= SAME_TILE_IOU
                for m in unread):
            drop.add(a)
    return drop


def _inside_unknown(ups: Sequence[TileRead], inside: np.ndarray, known: Sequence[int],
                    gone: set[int]) -> set[int]:
    """The identified outlines with COVERED_UNKNOWN or more of their area inside one unknown
    outline that stays (neither in ``gone``).

    Unknown boxes mostly inside an identified one, or covered by identified ones, were
    dropped before (the identified read is trusted there); one that stays is as much a tile
    as the identified outline lying in it, and a real tile never lies half under another.
    Which of the two is the tile is not known, so the face is not taken (issue 40: on a 720p picture a
    flush 1-3 | 2-4 seen as an unread box over the 2-4 reaching onto the 1-3, and a box
    across both tiles' left halves -- the 1 and the 4, a face neither tile has -- lying 69 %
    inside it, read "1-4").

    Args:
        ups: the face-up and unknown reads; inside: float (n, n) :func:`inside_fractions` of
            their polygons; known: indices into ``ups`` of the identified reads; gone: indices
            dropped or already made unknown.

    Returns:
        Indices into ``ups`` of the identified outlines lying so in an unknown one.
    """
    unread = [m for m, r in enumerate(ups) if r.state == "unknown" and m not in gone]
    return {k for k in known if k not in gone
            and any(inside[k, m] >= COVERED_UNKNOWN for m in unread)}


def _across_two(inside: np.ndarray, known: Sequence[int], drop: set[int]) -> set[int]:
    """The identified outlines lying across two other face-up outlines that stay.

    Unknown ones count too (the straddler of :func:`drop_straddlers`, formed after detection:
    input sizes fused, the second look, the second model), each holding STRADDLE_OVERLAP of it
    and neither a box on the same tile (IoU < SAME_TILE_IOU). Two real tiles never overlap, so
    either it or both of them are not tiles; which is not known, so its face is not taken
    (seen: a box across the halves of a flush 2-5 | 2-4 read "4-5", a face neither tile has).

    Args:
        inside: float (n, n) :func:`inside_fractions`; known: indices of the identified
            outlines; drop: indices of the outlines dropped.

    Returns:
        Indices (into the rows of ``inside``) of the identified outlines across two others.
    """
    stay = [m for m in range(len(inside)) if m not in drop]
    across = set()
    for k in known:
        if k in drop:
            continue
        under = [m for m in stay if m != k and inside[k, m] >= STRADDLE_OVERLAP
                 and _iou_from_inside(inside[k, m], inside[m, k]) < SAME_TILE_IOU]
        if len(under) >= 2:
            across.add(k)
    return across
