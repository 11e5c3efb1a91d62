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
                                      open_beside, over_set, unread_spots)
from vision.recognition.scales import SAME_TILE_IOU
from vision.recognition.seam import block_of

__all__ = ["APART", "dealt_blocks"]

#: The block stands alone when no other outline comes within this many tile widths of it:
#: the table stage's gap between units (``vision.table.seats.UNIT_GAP``), so that what the
#: table stage takes for a hand of its own is what is judged here.
APART: float = 0.35


def dealt_blocks(reads: Sequence[TileRead], second: Sequence[TileRead],
                 read_outlines: Callable[[np.ndarray], list[TileRead]],
                 image_shape: tuple[int, ...]) -> list[TileRead]:
    """Give back two flush tiles in doubt over the cut where no crosswise pairing of their
    halves can be dealt (module docstring).

    Args:
        reads: a still reading (image px polygons, float (4, 2)), after the guards.
        second: the second tile model's reads of the same picture (image px); () for none.
        read_outlines: ``read_outlines(polys, conf=1.0)`` decodes float32 (n, 4, 2) image-px
            outlines into n :class:`TileRead` with the detector confidence ``conf`` (a float,
            or float32 (n,)): the engine's decoder.
        image_shape: the picture's (H, W, ...) shape.

    Returns:
        ``reads`` in the same order, each such pair replaced by its outlines decoded again
        where that names the faces they read before; unchanged otherwise.
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
        if over_set([fa, fb], counts) or not all(over_set(p, counts) for p in pairings):
            continue
        if not _alone(reads, ka, kb, seconds, {f for p in pairings for f in p}):
            continue
        if _spots_beside(reads, ka, kb, read_outlines, image_shape):
            continue
        again = read_outlines(np.stack([polys[i], polys[j]]).astype(np.float32),
                              np.array([reads[ka].tile_confidence, reads[kb].tile_confidence],
                                       np.float32))
        if [r.face for r in again] != [fa, fb] or any(r.state != "face_up" for r in again):
            continue
        reads[ka], reads[kb] = again
        counts.update([fa, fb])
    return reads


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
