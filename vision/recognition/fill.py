"""A second tile model for the tiles the first one leaves unread on a still image.

Why. Each fine-tune of the tile model on the project's touching-hands frames has outlined
pale tiles that touch flush better on the project's rendered tables, and read third-party tile
art worse (models/MODEL_CARD.md, "Training": ``tiles_ft4``). The shipped model
(``models/tiles.*``) is the one that carries over, so it decides every tile it identifies. The
touching-hands model (``models/tiles_touch.*``, optional) reads a still image once more, at
:data:`SECOND_MODEL_SIZE`, and may only *add* a tile where the first model identified nothing.
A tile it adds passed the same decoder as every other (two independent spot reads that must
agree, spot shapes, the colour check), and:

* its outline overlaps no tile the first model identified by :data:`DUPLICATE_OVERLAP` or more
  of either outline's area (it never replaces or contradicts an identified tile);
* it is not a tile the first model's input sizes read as two different faces (an unknown
  outline whose ``reason_code`` is :attr:`vision.schema.UnreadReason.SIZES_DISAGREE`, with
  polygon IoU >= :data:`SAME_TILE_IOU`): a third opinion never breaks a disagreement;
* no input size of the first model (nor its second look) named another face on that outline
  (polygon IoU >= :data:`SAME_TILE_IOU`);
* it is not a face on an outline cut short where the first model counted more spots on a
  longer outline of that tile (:func:`vision.recognition.zoom.cut_short_faces`, the rule the second look
  follows);
* none of the spots it counts is counted by a tile the reading identified as well
  (:func:`vision.recognition.overlaps.borrowed_spots`): a spot is one tile's, so an outline
  reaching onto a flush neighbour's face would read a face of spots that are not all its own
  (seen: a 1-2 whose outline reached a third of the way onto a touching 1-6 read 1-5 under a
  camera's noise, ../shared/scenes_flush_cam imilako scene_14, ``scripts/eval_scenes.py
  --video --frame-noise 5``; found by issue 40, the threshold not fitted there: one spot is
  enough);
* its outline is not stubbier than the identified tiles around it by
  :data:`vision.recognition.flush.STUBBY` (:func:`stubbier_than_peers`), whatever its face: the rule
  :func:`vision.recognition.flush.stubby_boxes` applies to every identified tile whose halves
  look alike turned a quarter, and to an added tile -- weaker evidence, where the reading
  itself identified nothing -- for every face (seen: a box over the top halves of a flush
  1-3 | 3-3 read 1-2 by the turned picture, ../shared/scenes_flush_cam turtleflyer
  scene_29, the last frame alone).

The second model also has a say where the two models disagree about where the tiles lie
(:func:`disputed_outlines`): an identified tile of the first model that an identified outline
of the second lies across -- overlapping it by :data:`DUPLICATE_OVERLAP` or more of either
outline's area, yet not the same tile (polygon IoU below :data:`SAME_TILE_IOU`) -- becomes
unknown. Two tiles touching flush with their ends level form a block that outlines can cut
lengthwise (the tiles as laid) or crosswise (one half of each tile per box); halves of 1, 3,
4 and 5 look the same turned a quarter, so a crosswise box reads a valid face, and where the
seam between the tiles does not show, only the models' disagreement gives it away
(``scripts/eval_composed.py``, models/MODEL_CARD.md, Limitations).

The outlines are then resolved as always (:func:`vision.recognition.overlaps.resolve_overlapping_reads`):
an unknown box inside the added tile is dropped, two identified outlines that overlap become
unknown. Video reads one size per frame with the first model only; a still picture in video is
read by the still reading of :class:`vision.recognition.engine.RecognitionEngine`, so both get the second model.

Public API: :data:`SECOND_MODEL_SIZE`, :func:`fill_from_second_model`,
:func:`disputed_outlines`, :func:`stubbier_than_peers`, :data:`IN_BLOCK` (and, from
:mod:`vision.recognition.overlaps`, :func:`borrowed_spots`, :data:`SAME_SPOT`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from vision.recognition.decode import TileRead
from vision.recognition.flush import MIN_PEERS, STUBBY, beside_outlines
from vision.recognition.seam import block_of
from vision.schema import UnreadReason
from vision.geometry import (inside_fractions, polygon_intersections, polygon_iou_matrix,
                             side_pairs)
from vision.recognition.overlaps import (DUPLICATE_OVERLAP, SAME_SPOT, borrowed_spots,
                                         resolve_overlapping_reads, tile_spots)
from vision.recognition.scales import SAME_TILE_IOU
from vision.recognition.zoom import cut_short_faces, local_shape

__all__ = ["SECOND_MODEL_SIZE", "fill_from_second_model", "disputed_outlines",
           "borrowed_spots", "stubbier_than_peers", "IN_BLOCK", "SAME_SPOT"]

#: The second tile model's input size (longer side, px): the middle one of
#: :data:`vision.recognition.scales.STILL_SCALES`. One pass: each pass costs a tile-model run.
SECOND_MODEL_SIZE: int = 960


def stubbier_than_peers(read: TileRead, known: Sequence[TileRead]) -> bool:
    """True when ``read``'s outline (long side over short side) is below
    :data:`vision.recognition.flush.STUBBY` x the median aspect of the identified tiles nearest
    to it (:func:`vision.recognition.zoom.local_shape` over ``known``, ``read`` left out; False
    with fewer than :data:`vision.recognition.flush.MIN_PEERS` of them): not the shape of one
    of the set's tiles there (a box across a flush block,
    :func:`vision.recognition.flush.stubby_boxes`)."""
    peers = [k for k in known if k is not read and k.face is not None]
    if len(peers) < MIN_PEERS:
        return False
    width, length = sorted(side_pairs(read.polygon))
    if width <= 0:
        return True
    return length / width < STUBBY * local_shape(read.centre, peers)[1]


def fill_from_second_model(reads: Sequence[TileRead], second: Sequence[TileRead],
                           first: Sequence[TileRead]) -> list[TileRead]:
    """Add the second model's identified tiles where the first model identified none.

    Args:
        reads: the first model's fused still reading (image px polygons, float (4, 2)).
        second: the second model's reads of the same image (image px), already free of
            overlapping outlines within themselves.
        first: every read the first model made of the image before fusion (each input size,
            the second look), to check that none named another face on the added outline.

    Returns:
        ``reads`` plus the added tiles, resolved for overlapping outlines
        (:func:`vision.recognition.overlaps.resolve_overlapping_reads`); ``list(reads)`` when nothing is
        added.
    """
    reads = list(reads)
    cand = [r for r in second if r.face is not None]
    if not cand:
        return reads
    up = [r for r in reads if r.state != "face_down"]
    named = [r for r in first if r.face is not None]
    known = [r for r in reads if r.face is not None]
    known_spots: list | None = None  # the identified tiles' spots, mapped once when needed
    add: list[TileRead] = []
    for r in cand:
        poly = np.asarray(r.polygon, np.float32).reshape(1, 4, 2)
        if up:
            others = np.stack([np.asarray(u.polygon, np.float32) for u in up])
            # inside_fractions' first row and column and polygon_iou_matrix's row, from the
            # two intersections they are made of (the same figures, n + n pairs, not n x n)
            inter, area_p, area_o = polygon_intersections(poly, others)
            inter_back = polygon_intersections(others, poly)[0][:, 0]
            in_other = inter[0] / max(area_p[0], 1e-6)
            in_this = inter_back / np.maximum(area_o, 1e-6)
            union = area_p[0] + area_o - inter[0]
            iou = np.divide(inter[0], union, out=np.zeros_like(union), where=union > 0)
            if any(u.face is not None and max(in_other[k], in_this[k]) >= DUPLICATE_OVERLAP
                   for k, u in enumerate(up)):
                continue  # on (or across) a tile the first model identified
            if any(u.face is None and iou[k] >= SAME_TILE_IOU
                   and u.reason_code is UnreadReason.SIZES_DISAGREE for k, u in enumerate(up)):
                continue  # the first model's sizes read two faces here
        if named:
            iou = polygon_iou_matrix(poly, np.stack([np.asarray(n.polygon, np.float32)
                                                     for n in named]))[0]
            if any(v >= SAME_TILE_IOU and n.face != r.face for v, n in zip(iou, named)):
                continue  # a size of the first model named another face here
        if known_spots is None:
            known_spots = [tile_spots(k) for k in known]
        if borrowed_spots(r, known, known_spots) or stubbier_than_peers(r, known):
            continue  # spots of an identified neighbour, or not a tile's shape there
        add.append(r)
    if add:  # spots do not vanish: a face one spot short on a cut outline is not added
        add = [r for r in cut_short_faces(add, [list(first)], [add]) if r.face is not None]
    if not add:
        return reads
    return resolve_overlapping_reads(reads + add)


#: A disputing outline of the second model lies across a flush block (the seam check may
#: lift the dispute) when at least this fraction of its area lies inside the block.
IN_BLOCK: float = 0.8


def disputed_outlines(reads: Sequence[TileRead], second: Sequence[TileRead],
                      seam: Callable[[np.ndarray, np.ndarray], bool] | None = None
                      ) -> list[TileRead]:
    """The first model's identified tiles that an identified outline of the second model lies
    across made unknown (the models disagree where the tiles are). Every face, a 2 or a 6
    half included: on scenes_flush a box across a flush 3-3 | 1-6 read 1-2 with its half
    shapes, so a 2 or a 6 does not prove which way a box was cut.

    The seam lifts a dispute (``seam`` given): where the tile's flush neighbour -- an
    identified read lying where the tile's outline moved by its width across its long side
    lies (:func:`vision.recognition.flush.beside_outlines`, polygon IoU >= :data:`SAME_TILE_IOU`)
    -- is there, every disputing outline lies inside the block the two cover (at least
    :data:`IN_BLOCK` of its area: it cuts that block crosswise, nothing else), and ``seam``
    says the picture shows the seam between them along their long sides
    (:func:`vision.recognition.seam.seam_cut`), the tile keeps its face. Why that cannot
    settle wrongly: the block has two cuts; the second model's names the crosswise one, the
    first model's the lengthwise one, and the seam check answers only where one cut shows a
    line the whole length through the block's centre and the other shows none (unsure
    otherwise: the dispute stands); the faces kept are each the decoder's two agreeing reads
    of a lengthwise outline -- the tiles as laid.

    Args:
        reads: the still reading (image px polygons, float (4, 2)).
        second: the second model's reads of the same image (image px).
        seam: ``seam(polygon, neighbour) -> bool`` (float (4, 2) px outlines): True where the
            picture shows the seam between the two along ``polygon``'s long side; None: no
            seam check (every dispute stands).

    Returns:
        ``reads`` in the same order; a disputed tile is ``as_unknown`` with the reason, and
        the face it read in its ``evidence.disputed`` (never reported as its face).
    """
    reads = list(reads)
    other = [r for r in second if r.face is not None]
    mine = [k for k, r in enumerate(reads) if r.face is not None]
    if not other or not mine:
        return reads
    a = np.stack([np.asarray(reads[k].polygon, np.float32) for k in mine])
    b = np.stack([np.asarray(r.polygon, np.float32) for r in other])
    # the cross blocks of inside_fractions(a + b) and polygon_iou_matrix(a, b), from the two
    # intersections they are made of (the same figures, without the a x a and b x b pairs)
    inter_ab, area_a, area_b = polygon_intersections(a, b)
    inter_ba = polygon_intersections(b, a)[0]
    a_in_b = inter_ab / np.maximum(area_a, 1e-6)[:, None]
    b_in_a = inter_ba / np.maximum(area_b, 1e-6)[:, None]
    over = np.maximum(a_in_b, b_in_a.T) >= DUPLICATE_OVERLAP               # (n, m)
    union = area_a[:, None] + area_b[None, :] - inter_ab
    iou = np.divide(inter_ab, union, out=np.zeros_like(inter_ab), where=union > 0)
    disputed = over & ~(iou >= SAME_TILE_IOU)
    lifted = set()
    if seam is not None:
        lifted = _seam_lifted(reads, mine, a, b, disputed, seam)
    for row, k in enumerate(mine):
        hit = np.flatnonzero(disputed[row])
        if len(hit) and k not in lifted:
            faces = "/".join(sorted({other[m].face for m in hit}))
            was = reads[k].face
            # disputed: the face this outline read (its halves, with read B's top / bottom):
            # a flush hand whose two tiles are both disputed is one of two cuts of those four
            # halves (vision.table.open_tile.block_fills); either_cut: in doubt over the cut
            # where a flush neighbour is disputed too (vision.recognition.dealt)
            reads[k] = reads[k].as_unknown(UnreadReason.SECOND_MODEL_OTHERWISE,
                                           faces=faces, face=was
                                           ).with_evidence(disputed=was, either_cut=was)
    return reads


def _seam_lifted(reads, mine, a, b, disputed, seam) -> set[int]:
    """Indices into ``reads`` of disputed tiles whose dispute the seam lifts
    (:func:`disputed_outlines`): ``a`` float32 (n, 4, 2) the identified outlines ``mine``,
    ``b`` (m, 4, 2) the second model's identified ones, ``disputed`` bool (n, m)."""
    lifted = set()
    for row, k in enumerate(mine):
        hit = np.flatnonzero(disputed[row])
        if not len(hit):
            continue
        sides = beside_outlines(a[row]).astype(np.float32)                 # (2, 4, 2)
        iou = polygon_iou_matrix(sides, a)                                 # (2, n)
        iou[:, row] = 0.0
        s, j = np.unravel_index(int(np.argmax(iou)), iou.shape)
        if iou[s, j] < SAME_TILE_IOU:
            continue  # no identified neighbour flush beside it
        block = block_of(a[row], a[j])
        inside = inside_fractions(np.concatenate([block[None], b[hit]]))[1:, 0]
        if (inside >= IN_BLOCK).all() and seam(a[row], a[j]):
            lifted.add(k)
    return lifted
