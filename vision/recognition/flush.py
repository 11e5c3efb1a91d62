"""A tile with unread tile surface lying flush beside its long side: its face is not taken.

Why. Two tiles touching flush with their ends level form a square of four halves that an
outline can cut lengthwise (the tiles as laid) or crosswise (one half of each tile); halves of
1, 3, 4 and 5 look the same turned a quarter, so a crosswise box reads a valid face that
neither tile has (docs/rules.md section 5; models/MODEL_CARD.md, Limitations). Where the tile
model outlines *both* tiles lengthwise, the two outlines cover the square and nothing is in
doubt; where it finds the crosswise box alone, the other half of the square -- the other
half of each tile -- lies beside the box's long side with no outline on it, and a box there
would be the same shape: the picture cannot tell which way the square is cut (the seam between
flat drawn tiles does not show). The same holds for a lengthwise tile whose flush neighbour
the model missed. Either way, a face read from one cut of a square whose other half is unread
is a guess, so it is not taken.

The rule (:func:`flush_beside`): for every identified tile whose halves both look alike turned
a quarter (:func:`crosswise_alike`: a 2 or a 6 turned fails the half shapes unless spots are
lost too), the two outlines beside it -- its
own outline moved by its width across its long sides -- that lie inside the picture and are
less than :data:`vision.recognition.overlaps.COVERED_UNKNOWN` under other *read* outlines (identified
tiles and backs; an unknown outline is unread surface) are read for spots (the pip model on
the rectified crop, as any tile). Where such an outline shows at least :data:`MIN_SPOTS` sure
spots (confidence >= :data:`SURE`, counted by the decoder's rule, on no read outline), a
tile surface lies there unread, flush against the tile's long side: the tile becomes unknown. It only ever removes a face; an unknown tile is never settled except
by :mod:`vision.table.open_tile`, which guesses nothing.

The other way round (:func:`missed_beside`): beside a tile that lies as laid (a 2 or a 6 half,
or a 3 running the table's way) unread spots where no outline is are a tile the model missed;
they seed a refit of the face region there (:mod:`vision.recognition.refine`), which names a
face only where the decoder identifies the tile it fits.

Three more rules for boxes cut across a block (:func:`cut_either_way`: two identified tiles
flush and level as a block such a cut can give; :func:`stubby_boxes`: an outline stubbier than
the picture's tiles; :func:`notched_boxes`: an outline whose long side dips at its middle
where two tiles' rounded corners meet), each only removing faces.

Public API: :func:`beside_outlines`, :func:`block_ratio`, :func:`could_be_cut_across`,
:func:`missed_beside`, :func:`unread_spots`,
:func:`crosswise_alike`, :func:`crosswise_pairings`, :func:`cut_across_out_of_set`,
:func:`cut_either_way`,
:func:`flush_beside`, :func:`notched_boxes`, :func:`over_set`, :func:`stubby_boxes`,
:data:`CROSSWISE_RATIO_MAX`, :data:`MIN_PEERS`, :data:`MIN_SPOTS`, :data:`OUTLINE_JITTER`,
:data:`STUBBY`, :data:`SURE`, :data:`TILE_ASPECT_MIN`, :data:`TURNED_ALIKE`.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Mapping, Sequence

import numpy as np

from scoring.tiles import TILES_BY_FACE
from vision.recognition.decode import (CROP_H, MIDLINE_BAND, TileRead, _counted_spots,
                                       counted_spots_px, half_shape_ok)
from vision.geometry import (order_polygon, points_in_polygon,
                             polygon_intersections, side_pairs)
from vision.recognition.overlaps import COVERED_UNKNOWN, resolve_overlapping_reads
from vision.schema import UnreadReason

__all__ = ["six_along", "beside_outlines", "block_ratio", "could_be_cut_across", "crosswise_alike",
           "crosswise_pairings", "cut_across_out_of_set", "cut_either_way", "flush_beside", "over_set",
           "missed_beside", "open_beside", "unread_spots",
           "notched_boxes", "stubby_boxes",
           "CROSSWISE_RATIO_MAX", "MIN_PEERS",
           "MIN_SPOTS", "OUTLINE_JITTER", "STUBBY", "SURE", "TILE_ASPECT_MIN", "TURNED_ALIKE"]

#: A face shows at least two spots (1-1), so two spots of its own make a tile surface.
MIN_SPOTS: int = 2
#: A spot counts at the decoder's floor for an accepted face (``RecognitionConfig``).
SURE: float = 0.5
#: Halves that look the same turned a quarter (1: one spot; 3: a diagonal, turned the other
#: diagonal; 4: a square; 5: a quincunx); a 2 or a 6 turned fails the half-shape rules.
TURNED_ALIKE: frozenset[int] = frozenset({1, 3, 4, 5})
#: The stubbiest tile of a drawn set, long side / short side: the project's renderer draws
#: sets of 1.9-2.9 (:func:`vision.synth.draw.random_style`, chosen to cover the drawn sets).
TILE_ASPECT_MIN: float = 1.9
#: A detector's outline error as the project models it: every corner moved at random by
#: N(0, 0.06 x the tile's width) (``scripts/eval_seam.py --jitter``).
OUTLINE_JITTER: float = 0.06
#: Largest block ratio (:func:`block_ratio`) of two flush outlines that a crosswise cut can
#: give. Cut across, a block of two tiles w x a.w (aspect a) is boxed as two outlines
#: a.w/2 wide and 2w long: their block ratio is 2 / a, at most 2 / TILE_ASPECT_MIN = 1.053.
#: With :data:`OUTLINE_JITTER` on the eight corners the ratio spreads by 4.7 % (sd, Monte
#: Carlo of 20 000 blocks): 1.053 x (1 + 2 x 0.047) = 1.15. Two boxes across a block of the
#: stubbiest tiles (a = 1.9) measure above it in 2.8 % of blocks, of tiles of aspect 2 in
#: 0.16 %, of 2.1 in 0.01 %; two tiles of aspect 2.43 laid flush (the project's rendered
#: rounds, outlines exact) measure 1.18-1.23 and are left alone. Above it the two outlines are
#: longer than a box across the set's tiles is but for outline error: they are the tiles as
#: laid. Derived from the renderer's geometry only, never from ../shared.
CROSSWISE_RATIO_MAX: float = 1.15
#: An outline whose aspect is below this fraction of the picture's median tile aspect is not
#: shaped like the picture's tiles: 0.79 is the 0.1 % quantile of one outline's aspect with
#: :data:`OUTLINE_JITTER` (sd 6.7 %, Monte Carlo), times cos 25 deg = 0.906 for the camera's
#: tilt (the renderer's table tilt, at most 25 deg, foreshortens one tile more than
#: another). A box cut across a block of tiles of aspect a has aspect 4 / a: 4 / a^2 of the
#: tiles' -- below 0.72 for a >= 2.36 (for stubbier tiles the block is near square and
#: :data:`CROSSWISE_RATIO_MAX` applies). Derived from geometry only, never from ../shared.
STUBBY: float = 0.72
#: A picture's median tile aspect is taken over at least this many other outlines.
MIN_PEERS: int = 3


def crosswise_alike(face: str | None) -> bool:
    """True when a face could plainly have been read from a box cut across two tiles: both
    halves among :data:`TURNED_ALIKE`. A 2 (a pair across the tile) or a 6 (two columns of
    three along it) turned a quarter fails the decoder's half shapes
    (``decode.half_shape_ok``) unless a spot is lost or added as well, so faces with such a
    half are left to the rules that were there (this is a yield choice, measured: on the
    cached scenes_flush readings of issue 20 the rule on every face lost 8 more right tiles
    and 1 more seat for no more wrong face caught; one box across a flush 3-3 | 1-6 did read
    1-2 with its shapes, caught by the second model, :func:`vision.recognition.fill.disputed_outlines`)."""
    if not face:
        return False
    return all(int(v) in TURNED_ALIKE for v in face.split("-"))


def crosswise_pairings(fa: str, fb: str) -> list[tuple[str, str]]:
    """The two crosswise pairings of two flush tiles' halves: the tiles a box cut across
    their block would read, a half of ``fa`` with a half of ``fb``, both ways (which half lies
    beside which is not taken from the picture); e.g. ``("1-5", "2-3")`` ->
    ``[("1-2", "3-5"), ("1-3", "2-5")]``, ``("4-4", "5-5")`` -> ``[("4-5", "4-5")] * 2``.

    Raises:
        ValueError: a face that is not ``"low-high"`` with halves 1..6.
    """
    (a1, a2), (b1, b2) = ((int(v) for v in f.split("-")) for f in (fa, fb))

    def face(x: int, y: int) -> str:
        return f"{min(x, y)}-{max(x, y)}"

    return [(face(a1, b1), face(a2, b2)), (face(a1, b2), face(a2, b1))]


def over_set(faces: Sequence[str | None], held: Mapping[str, int] | None = None) -> bool:
    """Whether faces (``"1-5"`` strings; None ignored), with ``held`` (face -> tiles of it
    already on the table; None: none), name one face more often than a set holds it
    (``scoring.tiles.Tile.copies``: 2 for the eleven civil faces, 1 for the ten others). One
    table is dealt from one 32-tile set (docs/rules.md section 1), so such faces cannot all be
    tiles on the table."""
    use = Counter(f for f in faces if f)
    held = held or {}
    return any(held.get(f, 0) + n > TILES_BY_FACE[f].copies for f, n in use.items())


def cut_across_out_of_set(fa: str, fb: str) -> bool:
    """Whether every crosswise pairing of two flush tiles' halves (:func:`crosswise_pairings`)
    names one face twice that the set holds once (:func:`over_set`): a block of two doubles
    X-X | Y-Y whose mixed face X-Y is a single tile (4-4 | 5-5 cut across is 4-5 twice; 1-1 |
    3-3 gives 1-3 twice, which the set holds, and stays in doubt).

    Why it cannot settle wrongly: cut across, the block's tiles would be the crosswise
    pairing's faces, which one set cannot deal; so the block is cut as its outlines lie --
    where its halves are read right, which every face the engine names rests on. Which pairing
    a crosswise cut gives depends on which halves lie side by side, so both must be out of
    the set (for two doubles they are the same). Args: two faces read as the block's tiles."""
    return all(over_set(p) for p in crosswise_pairings(fa, fb))


def _suspect(read: TileRead, lengthwise: Callable[[TileRead], bool] | None) -> bool:
    """Whether an identified tile's face could come from a box across two flush tiles: its
    halves look alike turned a quarter (:func:`crosswise_alike`) and ``lengthwise(read)``
    (None: never) does not show its outline is the tile's own
    (:func:`vision.recognition.chirality.shows_way`: its 3 runs the table's way; every guard
    here takes that argument, and with it leaves such a tile as it is)."""
    if not crosswise_alike(read.face):
        return False
    return lengthwise is None or not lengthwise(read)


def six_along(read: TileRead) -> bool:
    """Whether a decoded outline shows a half a box across two flush tiles cannot show: six
    spots in two columns of three along it (:func:`vision.recognition.decode.half_shape_ok`).

    Why. A box across a flush block holds one half of each tile, turned a quarter; a 6 turned
    a quarter is two rows of three *across* the box, which the half shapes refuse. So an
    outline lying flush beside a tile (:func:`beside_outlines`: the tile's size, turned as the
    tile is) that shows a 6 along it covers a tile as laid, whatever else of it is unread (a
    covered spot, a spot missed) -- and the tile beside it lies as laid too: the block is cut
    lengthwise. Only sure spots count (at least :data:`SURE`), and only where no spot lies on
    the outline's midline band (the halves must part there). A 2 across proves nothing: it is
    also two spots of a 4 or 5 turned, the others missed.

    Args:
        read: a TileRead of the outline (``pips`` in crop px), read or not.

    Returns:
        True where one of its halves holds exactly six spots of that shape.
    """
    p = read.pips
    if p is None or len(p) < 6:
        return False
    centres = (p.xyxy[:, :2] + p.xyxy[:, 2:]) / 2
    c = centres[_counted_spots(centres, p.confidence) & (p.confidence >= SURE)]
    dy = c[:, 1] - CROP_H / 2
    band = MIDLINE_BAND * CROP_H
    if (np.abs(dy) <= band).any():
        return False
    return any(int(sel.sum()) == 6 and half_shape_ok(c[sel])[0] for sel in (dy < -band, dy > band))


def _sides(polygon) -> tuple[float, float]:
    """(width, length) of an outline (float (4, 2) px): the means of its short and of its
    long opposite sides, px."""
    a, b = side_pairs(polygon)
    return min(a, b), max(a, b)


def block_ratio(polygon, beside) -> float:
    """The block two flush outlines (float (4, 2) px each) make, length over width: the mean
    of their long sides over the sum of their short sides (1.0: a square block, as two tiles
    of aspect 2 make; two tiles of aspect a: a / 2; two boxes cut across a block of tiles of
    aspect a: 2 / a). Unitless float; inf for degenerate outlines."""
    (wa, la), (wb, lb) = _sides(polygon), _sides(beside)
    return (la + lb) / 2 / (wa + wb) if wa + wb > 0 else float("inf")


def could_be_cut_across(polygon, beside) -> bool:
    """True when two flush outlines could be the two boxes of a block of the set's tiles cut
    across: :func:`block_ratio` at most :data:`CROSSWISE_RATIO_MAX`."""
    return block_ratio(polygon, beside) <= CROSSWISE_RATIO_MAX


def stubby_boxes(reads: Sequence[TileRead],
                 lengthwise: Callable[[TileRead], bool] | None = None) -> list[TileRead]:
    """Identified tiles whose outline is too stubby for the picture's tiles, read from halves
    that look alike turned a quarter, made unknown.

    Why. Cut across, a block of two flush tiles of aspect a (long tiles: a >= 2.36) is boxed
    as outlines of aspect 4 / a, stubbier than every tile of the picture (the set's tiles are
    one shape); both halves such a box reads are one half of each tile, so where they look
    alike turned a quarter (:func:`crosswise_alike`) it reads a face of the set that neither
    tile has (composed turtleflyer tables: a 2-5 | 1-5 block of tiles of aspect 2.8 boxed
    across read 5-5, the second model's box too, the other box unread a little apart). An
    identified outline whose aspect (long side / short side) is below :data:`STUBBY` x the
    median aspect of the picture's other outlines (identified tiles and backs, at least
    :data:`MIN_PEERS`) becomes unknown, the face kept in its ``evidence.disputed`` (never reported
    as its face). Why this cannot settle wrongly: it only ever removes faces.

    Args:
        reads: a still reading (image px polygons, float (4, 2)).
        lengthwise: ``lengthwise(read) -> bool``: True where the tile's outline is its own
            (:func:`_suspect`); None: no such check.

    Returns:
        ``reads`` in the same order, such tiles ``as_unknown`` with the reason.
    """
    reads = list(reads)
    shaped = [k for k, r in enumerate(reads) if r.state != "unknown"]
    if len(shaped) < MIN_PEERS + 1:
        return reads
    aspect = {}
    for k in shaped:
        w, ln = _sides(reads[k].polygon)
        aspect[k] = ln / w if w > 0 else float("inf")
    for k in shaped:
        r = reads[k]
        if r.state != "face_up" or not _suspect(r, lengthwise):
            continue
        peers = np.median([aspect[m] for m in shaped if m != k])
        if aspect[k] < STUBBY * peers:
            was = r.face
            reads[k] = r.as_unknown(UnreadReason.STUBBY, aspect=aspect[k], peers=peers,
                                    face=was).with_evidence(disputed=was)
    return reads


def notched_boxes(reads: Sequence[TileRead],
                  notched: Callable[[np.ndarray], bool],
                  lengthwise: Callable[[TileRead], bool] | None = None) -> list[TileRead]:
    """Identified tiles whose outline's long side dips inward at its middle made unknown.

    Why. Where two tiles with rounded corners lie flush, their corners meet at both ends of
    the seam and the block's edge dips there (:mod:`vision.recognition.notch`); a box cut
    across the block -- one half of each tile -- has that dip at the middle of its outer long
    side, a tile's own long side has none. Both tile models can box a flush block across
    alike, and the seam line of dark, seamless drawings does not show, so the other guards
    can keep such a box's face (composed imilako tables, ``scripts/eval_composed.py --seed 1
    --n 12``: a flush 3-5 | 1-4 read 4-5 and 1-3, a 1-2 | 1-2 read 1-1, both models alike).
    Only faces whose halves look alike turned a quarter (:func:`crosswise_alike`) are
    checked: a box across reads those; others fail the half shapes. The face is kept in
    ``evidence.disputed`` (never reported as its face), as :func:`cut_either_way` does. Why
    this cannot settle wrongly: it only ever removes faces.

    Args:
        reads: a still reading (image px polygons, float (4, 2)).
        notched: ``notched(polygon) -> bool`` for a float (4, 2) px outline
            (:func:`vision.recognition.notch.notched` on the picture).
        lengthwise: ``lengthwise(read) -> bool``: True where the tile's outline is its own
            (:func:`_suspect`); None: no such check.

    Returns:
        ``reads`` in the same order, such tiles ``as_unknown`` with the reason.
    """
    out = list(reads)
    for k, r in enumerate(out):
        if r.state != "face_up" or not _suspect(r, lengthwise):
            continue
        if notched(np.asarray(r.polygon, np.float64)):
            was = r.face
            out[k] = r.as_unknown(UnreadReason.NOTCHED, face=was).with_evidence(disputed=was)
    return out


def beside_outlines(polygon) -> np.ndarray:
    """The two outlines lying flush against a tile's long sides: ``polygon`` (float (4, 2)
    px) moved by its short side's vector one way and the other; float64 (2, 4, 2)."""
    p = order_polygon(np.asarray(polygon, np.float64)).astype(np.float64)
    s = p[1] - p[0]  # corners 0 -> 1: a short side (order_polygon), across the tile
    return np.stack([p + s, p - s])


def open_beside(polygon, others: Sequence[np.ndarray], image_shape: tuple[int, ...]
                ) -> list[np.ndarray]:
    """The outlines beside a tile (:func:`beside_outlines`) that lie inside the picture and are
    less than :data:`vision.recognition.overlaps.COVERED_UNKNOWN` under ``others`` (float
    (4, 2) px outlines, the tile's own left out): places where no outline lies; float64
    (4, 2) each."""
    h, w = image_shape[:2]
    out = []
    for q in beside_outlines(polygon):
        if q.min() < 0 or (q[:, 0] > w).any() or (q[:, 1] > h).any():
            continue
        if len(others):
            inter, area_q, _ = polygon_intersections(q[None], np.stack(others))
            if inter[0].sum() / max(area_q[0], 1e-6) >= COVERED_UNKNOWN:
                continue  # an outline lies there
        out.append(q)
    return out


def unread_spots(read: TileRead, outline: np.ndarray, outlines: Sequence[np.ndarray]) -> int:
    """Sure spots (confidence >= :data:`SURE`, counted by the decoder's rule) that ``read``
    (decoded on ``outline``, float (4, 2) px; spots in crop px) shows inside ``outline`` and on
    none of ``outlines`` (float (4, 2) px each, the outlines read there): an int."""
    pts = counted_spots_px(read, outline, SURE)
    if not len(pts):
        return 0
    inside = points_in_polygon(pts, outline)
    if len(outlines):
        inside &= ~np.logical_or.reduce([points_in_polygon(pts, o) for o in outlines])
    return int(inside.sum())


def missed_beside(reads: Sequence[TileRead], image_shape: tuple[int, ...],
                  read_outlines: Callable[[np.ndarray], list[TileRead]],
                  lengthwise: Callable[[TileRead], bool] | None = None,
                  on_face: Callable[[np.ndarray, np.ndarray], bool] | None = None
                  ) -> list[TileRead]:
    """Seeds for a refit where the tile model missed the flush neighbour of a tile that lies
    as laid: unknown reads on the outlines beside such a tile that show unread spots.

    Why. A tile no box across two flush tiles can read (:func:`_suspect` false: a 2 or a 6
    half, or a 3 running the table's way) lies as laid, so the tile touching its long side,
    where there is one, lies beside it lengthwise -- the block they make is cut along the
    tile's outline. Where no outline covers that place (:func:`beside_outlines`, less than
    :data:`vision.recognition.overlaps.COVERED_UNKNOWN` under any outline, read or not) and it
    shows at least :data:`MIN_SPOTS` sure spots on no outline (:func:`unread_spots`), a tile
    lies there unread. Nothing is named here: the seeds go to
    :func:`vision.recognition.refine.refine_unknowns`, which fits the face region the picture
    shows there and takes a tile only where the decoder identifies it (with every guard after);
    a seed it does not replace is dropped by the caller.

    Args:
        reads: a still reading (image px), after the guards.
        image_shape: the picture's (H, W, ...) shape; outlines leaving it are not read.
        read_outlines: decodes float (n, 4, 2) image-px outlines into n :class:`TileRead`.
        lengthwise: as :func:`flush_beside`.
        on_face: ``on_face(polygon, beside) -> bool`` (float (4, 2) px each): False where the
            outline beside the tile is plainly not of its face's colour (felt), so that it is
            not decoded at all (a cost cut: the refit would find no tile there either,
            :func:`vision.recognition.refine.face_share`); None: every one is decoded.

    Returns:
        unknown :class:`TileRead` s (``evidence.seed``), one per such outline (possibly
        none); ``reads`` are not changed.
    """
    sure = [r for r in reads if r.state == "face_up" and not _suspect(r, lengthwise)]
    if not sure:
        return []
    read_there = [np.asarray(r.polygon, np.float64) for r in reads if r.state != "unknown"]
    polys = [np.asarray(x.polygon, np.float64) for x in reads]
    cand: list[np.ndarray] = []
    for r in sure:
        others = [p for x, p in zip(reads, polys) if x is not r]
        for q in open_beside(r.polygon, others, image_shape):
            if any(np.abs(q - c).max() < 1.0 for c in cand):
                continue
            if on_face is not None and not on_face(np.asarray(r.polygon, np.float64), q):
                continue
            cand.append(q)
    if not cand:
        return []
    out = []
    for q, d in zip(cand, read_outlines(np.stack(cand).astype(np.float32))):
        if unread_spots(d, q, read_there) >= MIN_SPOTS:
            out.append(d.as_unknown(UnreadReason.UNREAD_BESIDE).with_evidence(seed=True))
    return out


def flush_beside(reads: Sequence[TileRead], image_shape: tuple[int, ...],
                 read_outlines: Callable[[np.ndarray], list[TileRead]],
                 seam: Callable[[np.ndarray, np.ndarray], bool] | None = None,
                 lengthwise: Callable[[TileRead], bool] | None = None,
                 lift_six: bool = True
                 ) -> list[TileRead]:
    """Identified tiles with unread tile surface flush beside a long side made unknown.

    The seam settles it (``seam`` given): where the picture shows the seam between the tile
    and the outline beside it along the tile's long side
    (:func:`vision.recognition.seam.seam_cut` on the block the two cover), the tile's outline
    is a real tile's -- the block is cut lengthwise, as the tile model outlined it -- so its
    face stands, and the outline beside it, decoded as any tile (two agreeing spot reads,
    half shapes, colours), is added as a tile where it is identified (resolved against the
    other outlines, :func:`vision.recognition.overlaps.resolve_overlapping_reads`). Why that
    cannot settle wrongly: the rule feared the crosswise cut, whose outline would read a face
    neither tile has; the seam check names the lengthwise cut only where a line runs the whole
    length of the block through its centre along it and none along the crosswise cut (unsure
    otherwise, and then the tile becomes unknown as before), and every face kept or added is
    the decoder's reading of a lengthwise outline. A tile flagged by its other side stays
    unknown, and nothing is added beside it.

    Args:
        reads: a still reading (image px polygons), free of overlapping outlines.
        image_shape: the picture's (H, W, ...) shape: outlines beside a tile that leave the
            picture are not read (nothing to see there).
        read_outlines: decodes float (n, 4, 2) image-px outlines into n :class:`TileRead`
            (spots in crop px), e.g. ``RecognitionEngine.decode`` on them.
        seam: ``seam(polygon, beside) -> bool`` (float (4, 2) px outlines): True where the
            picture shows the seam between the two along ``polygon``'s long side; None: no
            seam check (as before).
        lengthwise: ``lengthwise(read) -> bool``: True where the tile's outline is its own
            (:func:`_suspect`); None: no such check.

    Returns:
        ``reads`` in the same order; a tile with unread spots flush beside it is
        ``as_unknown`` with the reason; with ``seam``, outlines beside a tile that the seam
        shows are real tiles, identified, are added (the result resolved for overlapping
        outlines).
    """
    reads = list(reads)
    known = [k for k, r in enumerate(reads) if r.state == "face_up" and _suspect(r, lengthwise)]
    if not known:
        return reads
    outlines, cand = _open_beside_known(reads, known, image_shape)
    if not cand:
        return reads
    found = read_outlines(np.stack([q for _, q in cand]).astype(np.float32))
    flagged: set[int] = set()
    six: set[int] = set()  # unread spots beside, a 6 along that outline (lift_six False)
    add: list[tuple[int, TileRead]] = []
    for (k, q), d in zip(cand, found):
        if k in flagged:
            continue
        if unread_spots(d, q, outlines) >= MIN_SPOTS:
            if seam is not None and seam(np.asarray(reads[k].polygon, np.float64), q):
                # the seam runs along the tile's long side: the block is cut lengthwise
                if d.state == "face_up":
                    add.append((k, d))
                continue
            if six_along(d):
                # the neighbour lies as laid (a 6 along it): so does the tile; unless told to
                # lift it, the tile is made unknown all the same (so that it seeds a refit:
                # its neighbour may be a tile the model missed), marked as one to give back
                if not lift_six:
                    six.add(k)
                continue
            flagged.add(k)
    out = [r.as_unknown(UnreadReason.SPOTS_FLUSH_BESIDE, face=r.face)
           if k in flagged or k in six else r for k, r in enumerate(reads)]
    for k in six - flagged:
        out[k] = out[k].with_evidence(spared=SPARED_SIX)
    add = [d for k, d in add if k not in flagged and k not in six]
    if not add:
        return out
    return resolve_overlapping_reads(out + add)


def _open_beside_known(reads: list[TileRead], known: Sequence[int],
                       image_shape: tuple[int, ...]
                       ) -> tuple[list[np.ndarray], list[tuple[int, np.ndarray]]]:
    """What :func:`flush_beside` looks at: the outlines read (identified tiles and backs,
    float64 (4, 2) px; an unknown outline is unread surface) and ``(k, outline)`` for each
    place beside ``reads[k]`` (``k`` in ``known``) where none of them lies
    (:func:`open_beside`)."""
    outlines = [np.asarray(r.polygon, np.float64) for r in reads if r.state != "unknown"]
    own = {k: next(i for i, m in enumerate(m for m, r in enumerate(reads)
                                             if r.state != "unknown") if m == k)
           for k in known}
    cand: list[tuple[int, np.ndarray]] = []
    for k in known:
        others = [o for m, o in enumerate(outlines) if m != own[k]]
        cand.extend((k, q) for q in open_beside(reads[k].polygon, others, image_shape))
    return outlines, cand


def cut_either_way(reads: Sequence[TileRead], second: Sequence[TileRead] = (),
                   seam: Callable[[np.ndarray, np.ndarray], bool] | None = None,
                   lengthwise: Callable[[TileRead], bool] | None = None,
                   lift_six: bool = True
                   ) -> list[TileRead]:
    """Two identified tiles lying flush and level as one square block, both faces read from
    halves that look alike turned a quarter, made unknown unless something shows the cut.

    Only blocks a crosswise cut can give are in doubt (:func:`could_be_cut_across`): cut
    across, a block of two tiles of aspect a is boxed as two outlines whose block ratio
    (:func:`block_ratio`) is 2 / a, at most 1.053 for the set's tiles (a >= 1.9); two outlines
    making a longer block (above :data:`CROSSWISE_RATIO_MAX`, outline error allowed for) are
    the tiles as laid. Without that, every flush hand of two such faces of long tiles (the
    project's rendered rounds, tiles of aspect 2.4-2.9, where the seam check is unsure and
    there is no second model) was left unknown, and their seats unsettled.

    Why. The two outlines cover the block's four halves. If the tile model cut the block
    crosswise, *both* boxes are read -- each from one half of each tile -- and nothing
    flags them: every pairing of halves among :data:`TURNED_ALIKE` (1, 3, 4, 5) names a face
    of the set, and no spot lies outside the two outlines for :func:`flush_beside` to see.
    Composed tables of ../shared/realdata drawings (``scripts/eval_composed.py``) showed it:
    a flush 4-4 | 1-5 boxed across read 1-4 and 4-5, a 2-5 | 1-5 read 5-5. The picture's
    outlines cannot tell those two cuts apart; so the pair is a guess unless:

    * the seam check (``seam``, :mod:`vision.recognition.seam`) shows the seam between the two
      outlines along their long sides (the tiles are cut as the outlines lie), or
    * the other cut gives the same faces (e.g. 4-4 | 4-4), or
    * the other cut gives faces one set cannot deal (:func:`cut_across_out_of_set`: 4-4 | 5-5
      cut across is 4-5 twice, a face the set holds once), or
    * the second tile model (``second``: its reads of the same picture) read the same two
      outlines (polygon IoU >= :data:`vision.recognition.scales.SAME_TILE_IOU`) with the same
      two faces: two models outlining the block the same way, each box's halves read the same
      (not the reads the still reading took as tiles: ``StillContext.confirming``).
      This is evidence, not proof: both models can box a block across alike (composed imilako
      tables, ``scripts/eval_composed.py --seed 1 --n 12``, scene 7; MODEL_CARD, session 17).
      Where the tiles' corners show, :func:`notched_boxes` (after this) catches such boxes.

    The same holds for one identified tile of such halves with an *unknown* outline flush and
    level beside it (the tile model found tile surface there that nothing read: the other
    half of a square cut across, whose box failed the half shapes): it is unknown unless the
    seam shows the cut. (:func:`flush_beside` asks for sure spots there; on small tiles the
    spots may not be sure.)

    Otherwise both tiles become unknown (a box across a block of long tiles is stubbier than
    the picture's tiles: :func:`stubby_boxes`); the face each read is kept in ``evidence.disputed``
    (never reported as its face) so that :func:`vision.table.open_tile.block_fills` can still
    settle the seat where *every* cut of the block gives it the same result. Why this cannot
    settle wrongly: it only ever removes faces; a face is kept only where one of the three
    conditions above holds (the third rests on two models' reads, the way every other face
    rests on the tile model) or where the outlines are longer than any box across the set's
    tiles -- and there it keeps exactly what the engine kept without this rule.

    Args:
        reads: the still reading (image px polygons, float (4, 2)).
        second: the second tile model's reads of the same image (image px); () for none.
        seam: ``seam(polygon, neighbour) -> bool`` as in :func:`flush_beside`; None: no check.
        lengthwise: ``lengthwise(read) -> bool``: True where the tile's outline is its own
            (:func:`_suspect`); None: no such check.

    Returns:
        ``reads`` in the same order, such pairs ``as_unknown`` with the reason.
    """
    from vision.recognition.scales import SAME_TILE_IOU

    reads = list(reads)
    alike = [k for k, r in enumerate(reads) if r.state == "face_up" and _suspect(r, lengthwise)]
    if not alike:
        return reads
    beside, flush, confirmed = _flush_level(reads, alike, second)
    doubt, soft = _beside_unread(reads, alike, beside, seam, lift_six)
    for i in range(len(alike)):
        for j in range(i + 1, len(alike)):
            if max(flush[i, j], flush[j, i]) < SAME_TILE_IOU:
                continue
            a, b = reads[alike[i]], reads[alike[j]]
            if _cut_shown(a, b, confirmed[i] and confirmed[j], seam):
                continue
            doubt[alike[i]], doubt[alike[j]] = b.face, a.face
    return _mark_doubts(reads, doubt, soft)


#: :attr:`vision.recognition.evidence.Evidence.spared` of a tile a guard made unknown only so
#: that it seeds the refit: the outline flush beside it shows a 6 running along it.
SPARED_SIX = "a 6 along the outline flush beside it"


def _flush_level(reads: list[TileRead], alike: list[int], second: Sequence[TileRead]
                 ) -> tuple[np.ndarray, np.ndarray, list[bool]]:
    """For :func:`cut_either_way`: the outlines beside each tile ``reads[k]`` (``k`` in
    ``alike``, n of them; float32 (2n, 4, 2)), how flush each lies beside each other (the
    best polygon IoU of one's outlines beside with the other, float (n, n)), and whether the
    second model (``second``) read each outline (IoU >= SAME_TILE_IOU) with the same face."""
    from vision.geometry import polygon_iou_matrix
    from vision.recognition.scales import SAME_TILE_IOU

    polys = np.stack([np.asarray(reads[k].polygon, np.float32) for k in alike])
    beside = np.concatenate([beside_outlines(p).astype(np.float32) for p in polys])  # (2n, 4, 2)
    flush = polygon_iou_matrix(beside, polys).reshape(len(alike), 2, len(alike)).max(1)
    seconds = [r for r in second if r.face is not None]
    sp = (np.stack([np.asarray(r.polygon, np.float32) for r in seconds]) if seconds
          else np.zeros((0, 4, 2), np.float32))
    same2 = polygon_iou_matrix(polys, sp) >= SAME_TILE_IOU if len(sp) else None
    confirmed = [same2 is not None and any(seconds[m].face == reads[k].face
                                           for m in np.flatnonzero(same2[i]))
                 for i, k in enumerate(alike)]
    return beside, flush, confirmed


def same_either_way(fa: str, fb: str) -> bool:
    """Both crosswise pairings of faces ``fa``, ``fb`` (:func:`crosswise_pairings`) give the
    same two faces: a flush block of those two tiles holds them whichever way it is cut and
    whichever way round each lies (4-4 | 4-4, 1-1 | 1-4, 4-4 | 4-5: a double beside a tile
    sharing its value; not 1-5 | 1-5, whose 1s side by side pair as 1-1 and 5-5). Raises
    ValueError as :func:`crosswise_pairings`."""
    mine = sorted((fa, fb))
    return all(sorted(p) == mine for p in crosswise_pairings(fa, fb))


def _cut_shown(a: TileRead, b: TileRead, confirmed: bool,
               seam: Callable[[np.ndarray, np.ndarray], bool] | None) -> bool:
    """Whether two identified tiles flush and level keep their faces (:func:`cut_either_way`):
    longer than a box across the set's tiles, the same faces either cut, a cut across one set
    cannot deal, both ``confirmed`` by the second model, or the seam shows the cut."""
    if not could_be_cut_across(a.polygon, b.polygon):
        return True  # longer than a box across the set's tiles: the tiles as laid
    if same_either_way(a.face, b.face):
        return True
    if cut_across_out_of_set(a.face, b.face):
        return True  # cut across, the block would be one single tile twice
    if confirmed:
        return True
    return seam is not None and bool(seam(np.asarray(a.polygon), np.asarray(b.polygon)))


def _beside_unread(reads: list[TileRead], alike: list[int], beside: np.ndarray,
                   seam: Callable[[np.ndarray, np.ndarray], bool] | None, lift_six: bool
                   ) -> tuple[dict[int, str], set[int]]:
    """:func:`cut_either_way` for an identified tile ``reads[k]`` (``k`` in ``alike``; its
    outlines beside it ``beside`` float32 (2n, 4, 2)) with an *unknown* outline flush and
    level beside it: ``({k: "tile not read"}, {k spared: a 6 along that outline})``."""
    from vision.geometry import polygon_iou_matrix
    from vision.recognition.scales import SAME_TILE_IOU

    doubt: dict[int, str] = {}
    soft: set[int] = set()
    # an identified tile with an *unknown* outline flush and level beside it: the tile model
    # found tile surface there that nothing read -- the other half of a square cut across
    # (a 2-5 | 1-5 block boxed across read 5-5 beside an unreadable 1-2 box, composed
    # turtleflyer tables), or a neighbour read nowhere; flush_beside needs sure spots for it,
    # and spots this small may not be sure
    unread = [r for r in reads if r.state == "unknown"]
    if not unread:
        return doubt, soft
    up = np.stack([np.asarray(r.polygon, np.float32) for r in unread])
    beside_unread = polygon_iou_matrix(beside, up).reshape(len(alike), 2, len(unread))
    for i in range(len(alike)):
        for m in np.flatnonzero(beside_unread[i].max(0) >= SAME_TILE_IOU):
            if not could_be_cut_across(reads[alike[i]].polygon, unread[m].polygon):
                continue  # longer than a box across the set's tiles: the tiles as laid
            if seam is not None and seam(np.asarray(reads[alike[i]].polygon),
                                         np.asarray(unread[m].polygon)):
                continue
            if six_along(unread[m]):
                # a 6 along the unread outline: the tiles as laid (made unknown all the
                # same unless lift_six, marked to give back, as in flush_beside)
                if not lift_six:
                    soft.add(alike[i])
                continue
            doubt[alike[i]] = "tile not read"
            break
    return doubt, soft


def _mark_doubts(reads: list[TileRead], doubt: dict[int, str], soft: set[int]
                 ) -> list[TileRead]:
    """``reads`` with the tiles :func:`cut_either_way` doubts (``doubt``: index -> the face
    beside, or ``"tile not read"``) and spares (``soft``) made unknown, their evidence
    recorded (``disputed``, ``either_cut``, ``spared``)."""
    for k in soft - set(doubt):
        was = reads[k].face
        reads[k] = reads[k].as_unknown(UnreadReason.FLUSH_LEVEL, beside="an unread tile",
                                       face=was).with_evidence(spared=SPARED_SIX)
    for k, other in doubt.items():
        was = reads[k].face
        beside_what = "an unread tile" if other == "tile not read" else f"a {other}"
        r = reads[k].as_unknown(UnreadReason.FLUSH_LEVEL, beside=beside_what, face=was)
        if other != "tile not read":
            # in doubt over the block's cut alone (vision.recognition.dealt)
            reads[k] = r.with_evidence(disputed=was, either_cut=was)
        else:
            reads[k] = r.with_evidence(disputed=was)
    return reads
