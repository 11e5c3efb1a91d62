"""Reading a still frame at several detector input sizes and fusing the reads.

Why. The tile model sees a frame letterboxed to its input size. At 640 px a 1080p tile is
30-60 px long, and its outline cannot be better than a few pixels: outlines a third of a tile
off and boxes across two touching tiles are the main reasons a tile is not read on table
scenes the renderer did not draw (``scripts/eval_scenes.py``, failure class ``outline_off``).
Each input size errs on different tiles, so a still frame is read at every size of
:data:`STILL_SCALES` (each read checked by the decoder's two independent reads, as always) and
the reads are fused:

* reads of one tile at different sizes are those whose outlines overlap with IoU >= 0.5;
* a tile is identified when the sizes that name a face all name the same one (sizes that read
  it as unknown do not veto: they saw a worse outline, see :mod:`vision.recognition.decode`);
* when two sizes name different faces, the tile is unknown
  (:attr:`vision.schema.UnreadReason.SIZES_DISAGREE`, "input sizes disagree: 1-5 / 3-5") --
  never a vote between faces;
* an identified outline lying across two outlines of other tiles (any size, any state) is a box
  across two touching tiles and is dropped (:data:`ACROSS_OVERLAP`).

Video keeps one size per detector run (the motion gate and identity cache make up for it;
see :class:`vision.pipeline.Pipeline`); the fusion is for independent still images
(``paigow identify``, ``paigow run`` on images).

Public API: :data:`STILL_SCALES`, :func:`fuse_scale_reads`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vision.recognition.decode import TileRead
from vision.schema import UnreadReason
from vision.geometry import polygon_intersections, polygon_iou_matrix

__all__ = ["STILL_SCALES", "SAME_TILE_IOU", "ACROSS_OVERLAP",
           "fuse_scale_reads"]

#: Detector input sizes (longer side, px, multiples of the stride 32) for still images.
STILL_SCALES: tuple[int, ...] = (832, 960, 1216)
#: Outlines from two input sizes with at least this polygon IoU are one tile.
SAME_TILE_IOU: float = 0.5
#: An identified outline with at least this fraction of its area inside each of two other
#: tiles' outlines lies across them (two touching tiles of a hand).
ACROSS_OVERLAP: float = 0.3


def fuse_scale_reads(per_scale: Sequence[Sequence[TileRead]]) -> list[TileRead]:
    """Fuse one frame's reads made at several detector input sizes (see module docstring).

    Args:
        per_scale: for each input size, that size's reads (already free of overlapping reads
            within the size, :func:`vision.pipeline.resolve_overlapping_reads`).

    Returns:
        One read per tile: the identified read with the highest confidence where the sizes
        agree on a face; an unknown read ("input sizes disagree: 1-5 / 3-5") where they name
        different faces; else the most confident unknown read (face-down when most of the
        sizes saw a tile back). Order: by first appearance over the sizes.
    """
    reads = [r for rs in per_scale for r in rs]
    n = len(reads)
    if n == 0:
        return []
    polys = np.stack([np.asarray(r.polygon, np.float32).reshape(4, 2) for r in reads])
    same = polygon_iou_matrix(polys, polys) >= SAME_TILE_IOU
    group = [-1] * n
    groups: list[list[int]] = []
    for i in range(n):  # greedy clustering in reading order (the first size seeds the groups)
        if group[i] >= 0:
            continue
        group[i] = len(groups)
        members = [i]
        for j in range(i + 1, n):
            if group[j] < 0 and same[i, j]:
                group[j] = group[i]
                members.append(j)
        groups.append(members)
    fused: list[TileRead] = []
    for members in groups:
        rs = [reads[k] for k in members]
        faces = sorted({r.face for r in rs if r.face})
        if len(faces) == 1:
            fused.append(max((r for r in rs if r.face == faces[0]),
                             key=lambda r: r.confidence))
            continue
        up = [r for r in rs if r.state != "face_down"]
        if len(faces) > 1:
            best = max(up, key=lambda r: r.confidence)
            fused.append(best.as_unknown(UnreadReason.SIZES_DISAGREE, " / ".join(faces)))
        elif len(up) * 2 >= len(rs):
            fused.append(max(up, key=lambda r: r.confidence))
        else:
            fused.append(max(rs, key=lambda r: r.confidence))
    return _drop_across(fused, [[reads[k] for k in m] for m in groups])


def _drop_across(fused: list[TileRead], groups: list[list[TileRead]]) -> list[TileRead]:
    """Drop identified outlines lying across two other tiles' outlines (any size, any state):
    the box across two touching tiles of a hand, which can name a face from their halves.

    An identified outline ``r`` hits a group when some outline ``o`` of it has
    ``inside(r, o) >= ACROSS_OVERLAP`` and ``inside(o, r) < 0.8``; two groups hit (its own not
    counted) drop it. The containments come from two intersection matrices (each orientation
    as one pair's call of :func:`vision.geometry.polygon_intersections` computes it, so the
    figures are the same to the bit) instead of one call per pair.
    """
    members = [(m, o) for m, g in enumerate(groups) for o in g]
    if not fused or not members:
        return list(fused)
    fp = np.stack([np.asarray(r.polygon, np.float32).reshape(4, 2) for r in fused])
    mp = np.stack([np.asarray(o.polygon, np.float32).reshape(4, 2) for _, o in members])
    inter_fm, area_f, area_m = polygon_intersections(fp, mp)
    inter_mf, _, _ = polygon_intersections(mp, fp)
    r_in_o = np.divide(inter_fm, area_f[:, None], out=np.zeros_like(inter_fm),
                       where=area_f[:, None] > 0)
    o_in_r = np.divide(inter_mf, area_m[:, None], out=np.zeros_like(inter_mf),
                       where=area_m[:, None] > 0).T
    hit = (r_in_o >= ACROSS_OVERLAP) & (o_in_r < 0.8)  # (fused, members)
    gid = np.array([m for m, _ in members])
    keep = []
    for k, r in enumerate(fused):
        if r.face is None or len(set(gid[hit[k]].tolist()) - {k}) < 2:
            keep.append(r)
    return keep
