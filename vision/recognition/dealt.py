"""Two flush tiles in doubt only over the cut, given back where one set cannot deal the
block cut across (issue 20).

Why. Two tiles touching flush and level form a block of four halves that a box can cut
lengthwise (the tiles as laid) or crosswise (one half of each tile). Where the picture cannot
show the cut, the guards make both tiles unknown and keep the faces their outlines read in
``evidence.either_cut`` (:func:`vision.recognition.flush.cut_either_way`,
:func:`vision.recognition.fill.disputed_outlines`,
:func:`vision.recognition.refine.refine_unknowns`).
Cut across, the block's two tiles would be one of the two crosswise pairings of those halves
(:func:`vision.recognition.flush.crosswise_pairings`). One
table is dealt from one 32-tile set, eleven faces twice and ten once (docs/rules.md section
1): where *every* crosswise pairing, together with the faces identified elsewhere on the
picture, names a face more often than the set holds it, the block cannot be cut across, and
the tiles are as their outlines lie (:func:`dealt_blocks`).

Why it cannot name a wrong face on its own: each face given back is the decoder's reading of
its outline, read again (two agreeing reads, half shapes, colours, as every face); the one
doubt it lifts is which of the block's two cuts holds, and it lifts it only where the other
cut would deal a face the set does not have -- a face the reading itself names elsewhere. It
rests on those faces as the table stage's set rule does
(:func:`vision.table.open_tile.position_fills`). The block must stand alone: no other outline
(of either model, unread ones included) within :data:`APART` tile widths of it but the second
model's boxes across it, each naming a face of a crosswise pairing, or on one of its tiles
naming that tile's face; no unread spots flush beside its outer long sides
(:data:`vision.recognition.flush.MIN_SPOTS`); and the faces as read must themselves fit the
set. Otherwise nothing changes.

The same holds, without the faces read elsewhere, for a block whose two faces *every*
crosswise pairing of their halves gives again (:func:`vision.recognition.flush.same_either_way`:
4-4 | 4-4, 1-1 | 1-4, 4-4 | 4-5; issue 40, flush hands at 720p): whichever way it is cut, its
tiles are those two faces. Only which outline each has is in doubt; of the block's two cuts
whose outlines read the two faces again, the one along which the picture shows the seam more is
taken (:func:`vision.recognition.seam.seam_scores`, the two cuts' scores compared without a
threshold; on the project's rendered flush blocks the true cut's score is the higher for 591 of
636 blocks, 545 of 636 seen through the surveillance camera: ``scripts/eval_seam.py --n 20
--mode table [--camera]``). Where that cut is the wrong one, each box lies across the block
and names the face of one of the two tiles under it -- never a face the block does not hold.
It runs after every other reading (the turned picture included), so it takes only what nothing
else could read, under the same conditions: the set deals the faces, the block stands alone,
no unread spots beside it.

Public API: :func:`dealt_blocks`, :data:`APART`.
"""

from __future__ import annotations

from collections import Counter
from typing import Callable, Sequence

import numpy as np

from scoring.tiles import TILES_BY_FACE
from vision.geometry import expand_polygon, polygon_intersections, polygon_iou_matrix, side_pairs
from vision.recognition.decode import TileRead
from vision.recognition.fill import IN_BLOCK
from vision.recognition.flush import (MIN_SPOTS, beside_outlines, crosswise_pairings,
                                      open_beside, over_set, same_either_way, unread_spots)
from vision.recognition.refine import block_cuts
from vision.recognition.scales import SAME_TILE_IOU
from vision.recognition.seam import block_of, seam_scores

__all__ = ["APART", "dealt_blocks"]

#: The block stands alone when no other outline comes within this many tile widths of it:
#: the table stage's gap between units (``vision.table.seats.UNIT_GAP``), so that what the
#: table stage takes for a hand of its own is what is judged here.
APART: float = 0.35


def dealt_blocks(reads: Sequence[TileRead], second: Sequence[TileRead],
                 read_outlines: Callable[[np.ndarray], list[TileRead]],
                 image_shape: tuple[int, ...], image: np.ndarray | None = None
                 ) -> list[TileRead]:
    """Give back two flush tiles in doubt over the cut where no crosswise pairing of their
    halves can be dealt, or where every one gives the same two faces (module docstring).

    Args:
        reads: a still reading (image px polygons, float (4, 2)), after the guards.
        second: the second tile model's reads of the same picture (image px); () for none.
        read_outlines: ``read_outlines(polys, conf=1.0)`` decodes float32 (n, 4, 2) image-px
            outlines into n :class:`TileRead` with the detector confidence ``conf`` (a float,
            or float32 (n,)): the engine's decoder.
        image_shape: the picture's (H, W, ...) shape.
        image: the picture, uint8 (H, W, 3) BGR, for the seam scores that pick the cut of a
            block holding the same faces either way; None: such a block keeps its outlines.

    Returns:
        ``reads`` in the same order, each such pair replaced by its outlines (of a block the
        same either way, those of the cut the seam shows more) decoded again where that names
        the faces they read before; unchanged otherwise.
    """
    reads = list(reads)
    doubt = [k for k, r in enumerate(reads) if r.state == "unknown"
             and r.evidence.either_cut in TILES_BY_FACE]
    if len(doubt) < 2:
        return reads
    polys = np.stack([np.asarray(reads[k].polygon, np.float32) for k in doubt])
    beside = np.concatenate([beside_outlines(p).astype(np.float32) for p in polys])
    flush = polygon_iou_matrix(beside, polys).reshape(len(doubt), 2, len(doubt)).max(1)
    np.fill_diagonal(flush, 0.0)
    near = np.maximum(flush, flush.T) >= SAME_TILE_IOU
    pairs = [(i, j) for i in range(len(doubt)) for j in range(i + 1, len(doubt))
             if near[i, j] and near[i].sum() == 1 and near[j].sum() == 1]
    if not pairs:
        return reads
    counts = Counter(r.face for r in reads if r.state == "face_up" and r.face)
    seconds = [r for r in second if r.face is not None]
    for i, j in pairs:
        ka, kb = doubt[i], doubt[j]
        fa, fb = reads[ka].evidence.either_cut, reads[kb].evidence.either_cut
        pairings = crosswise_pairings(fa, fb)
        same = same_either_way(fa, fb)
        if over_set([fa, fb], counts) or not (same or all(over_set(p, counts)
                                                          for p in pairings)):
            continue
        if not _alone(reads, ka, kb, seconds, {f for p in pairings for f in p}):
            continue
        if _spots_beside(reads, ka, kb, read_outlines, image_shape):
            continue
        conf = np.array([reads[ka].tile_confidence, reads[kb].tile_confidence], np.float32)
        cuts = [np.stack([polys[i], polys[j]]).astype(np.float32)]
        if same and image is not None:
            cuts = _by_seam(image, cuts[0])
        again = next((got for got in (read_outlines(c, conf) for c in cuts)
                      if sorted(r.face or "" for r in got) == sorted([fa, fb])
                      and all(r.state == "face_up" for r in got)), None)
        if again is None:
            continue
        reads[ka], reads[kb] = again
        counts.update([fa, fb])
    return reads


def _by_seam(image: np.ndarray, outlines: np.ndarray) -> list[np.ndarray]:
    """A block's two cuts, the two outlines of each float32 (2, 4, 2) px: ``outlines`` and the
    other cut of their block, the one along which the picture shows the seam more first (the
    higher score of :func:`vision.recognition.seam.seam_scores`; ``outlines`` on a tie)."""
    block = block_of(outlines[0], outlines[1])  # its cut 0 is the seam between the two
    (s0, _), (s1, _) = seam_scores(image, block)
    other = block_cuts(block)[1]
    return [other, outlines] if s1 > s0 else [outlines, other]


def _alone(reads: Sequence[TileRead], ka: int, kb: int, seconds: Sequence[TileRead],
           across: set[str]) -> bool:
    """Whether the block of ``reads[ka]`` and ``reads[kb]`` stands alone: no other outline of
    ``reads`` within :data:`APART` tile widths of it, and every identified outline of the
    second model that touches that margin either is one of the two tiles with its face
    (polygon IoU >= :data:`vision.recognition.scales.SAME_TILE_IOU`) or lies inside the block
    (at least :data:`vision.recognition.fill.IN_BLOCK` of it) naming a face in ``across``."""
    a, b = (np.asarray(reads[k].polygon, np.float32) for k in (ka, kb))
    block = block_of(a, b).astype(np.float32)
    width = min(side_pairs(a))
    # expand_polygon's margin is a fraction of each side: the block is two widths across
    margin = expand_polygon(block, APART * width / max(min(side_pairs(block)), 1e-6))
    others = [np.asarray(r.polygon, np.float32) for k, r in enumerate(reads) if k not in (ka, kb)]
    if others:
        inter, _, _ = polygon_intersections(margin[None], np.stack(others))
        if (inter[0] > 0).any():
            return False
    if seconds:
        sp = np.stack([np.asarray(r.polygon, np.float32) for r in seconds])
        touch = polygon_intersections(margin[None], sp)[0][0] > 0
        inside, area, _ = polygon_intersections(sp, block[None])
        same = polygon_iou_matrix(sp, np.stack([a, b])) >= SAME_TILE_IOU          # (m, 2)
        own = [reads[ka].evidence.either_cut, reads[kb].evidence.either_cut]
        for m in np.flatnonzero(touch):
            if any(same[m, t] and seconds[m].face == own[t] for t in (0, 1)):
                continue  # the second model read that tile as it lies, the same face
            if inside[m, 0] / max(area[m], 1e-6) < IN_BLOCK or seconds[m].face not in across:
                return False
    return True


def _spots_beside(reads: Sequence[TileRead], ka: int, kb: int,
                  read_outlines: Callable[[np.ndarray], list[TileRead]],
                  image_shape: tuple[int, ...]) -> bool:
    """Whether unread spots (at least :data:`vision.recognition.flush.MIN_SPOTS`) lie flush
    beside the outer long side of either tile of the block: a tile the models missed, which
    one of the block's could be cut with."""
    outlines = [np.asarray(r.polygon, np.float64) for r in reads if r.state != "unknown"]
    for k, partner in ((ka, kb), (kb, ka)):
        own = np.asarray(reads[k].polygon, np.float64)
        mate = np.asarray(reads[partner].polygon, np.float32)
        others = [np.asarray(r.polygon, np.float64) for m, r in enumerate(reads) if m != k]
        for q in open_beside(own, others, image_shape):
            if polygon_iou_matrix(q[None].astype(np.float32), mate[None])[0, 0] >= SAME_TILE_IOU:
                continue  # the partner's side
            got = read_outlines(q[None].astype(np.float32))[0]
            if unread_spots(got, q, outlines) >= MIN_SPOTS:
                return True
    return False
