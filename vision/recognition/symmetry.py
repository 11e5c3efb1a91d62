"""The symmetry check: which way a square block of two flush tiles is cut, from its spots.

Why. Two tiles touching flush with their ends level form a block of four halves that an
outline can cut lengthwise (the tiles as laid) or crosswise (one half of each tile); halves of
1, 3, 4 and 5 look alike turned a quarter, so both cuts can read valid faces
(:mod:`vision.recognition.flush`, :mod:`vision.recognition.fill`). Where the seam between the
tiles does not show (:mod:`vision.recognition.seam`: a dark drawing whose tiles meet without a
visible line), the spots can still tell: every tile is drawn mirror-symmetric about its long
axis -- a half's spots (1 the centre spot, 2 a pair across, 3 a diagonal through the centre, 4
a square, 5 a quincunx, 6 two columns) have their centroid on the tile's centre line. Along
the tile a maker may place them anywhere in the half (one drawing puts the 1 near the tile's
end, the other halves nearer the ends than the half's middle). So the halves of a real tile
lie on one line along it, and the axes of two tiles side by side are parallel; a box cut across two tiles whose halves sit at different places
along their tiles holds halves whose centroids are off each other across the box.

The check (:func:`symmetry_cut`). The block (float (4, 2) px corners, in order around it) is
cut along cut 0 (through the midpoints of sides 0-1 and 2-3) into two outlines, and both are
decoded (the caller's ``read_outlines``: the pip model and the decoder); both must read a face
(two agreeing spot reads, half shapes, colours -- their spots are then a whole tile's each).
Their counted spots are mapped into the block's unit square (u across the cut-0 outlines, v
along them) and split into the four halves (a spot within :data:`MIDLINE` of a half's border,
or on the other outline's side: unsure). With ``c(h)`` a half's centroid:

* cut 0's *skew*: the angle between the two cut-0 outlines' axes, each axis the line from
  its top half's centroid to its bottom half's (``L`` the outline at u < 0.5, ``t`` the half
  at v < 0.5);
* cut 1's skew: the same for the two cut-1 boxes (left half's centroid to right half's).

The axes of two tiles laid side by side are parallel; a block outline turned or sheared a few
degrees off the tiles turns both the same way, so neither skew moves (radians). The answer
is the cut whose skew is at most :data:`ALIGNED` while the other's is at least
:data:`SKEWED`; otherwise None (unsure) -- and in a drawing whose halves all sit
at their halves' middles both skews are about 0: unsure, as it should be.

Why it cannot settle a face wrongly on its own: it never reads a face. Its callers use it only
to lift an abstention where both outlines of the cut it names read faces, as the seam check
(:func:`vision.recognition.seam.seam_cut`) is used. For a wrong answer the block's real tiles
(the other cut) would have to lie with their axes :data:`SKEWED` apart (20 degrees: halves
off their own centre lines by about a third of a tile's width) -- no tile is drawn so --
while the false cut's boxes both read faces with their halves in line. The thresholds come from rendered flush
blocks only (``scripts/eval_symmetry.py``: the project's renderer, whose drawings include
halves placed toward the tile's ends, corners jittered as a detector's outline is);
../shared is never used to fit them.

Public API: :func:`symmetry_cut`, :func:`skews`, :data:`ALIGNED`, :data:`SKEWED`,
:data:`MIDLINE`.
"""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np

from vision.geometry import _as_quad
from vision.recognition.decode import counted_spots_px

__all__ = ["symmetry_cut", "skews", "block_spots", "ALIGNED", "SKEWED", "MIDLINE"]

#: A cut's outlines are parallel (each one's halves on its axis) at this skew or less,
#: radians (``scripts/eval_symmetry.py``).
ALIGNED: float = 0.1
#: A cut's boxes are askew at this skew or more (boxes across tiles whose halves sit at
#: different places along them), radians.
SKEWED: float = 0.35
#: A spot whose centre lies within this fraction of the block's side of a half's border (the
#: block's midlines) is not assigned: unsure.
MIDLINE: float = 0.03

_UNIT = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], np.float32)


def block_spots(block, reads) -> list[np.ndarray] | None:
    """The counted spots of the two cut-0 outlines' reads in the block's unit square.

    Args:
        block: float (4, 2) px corners in order around the block.
        reads: the two :class:`vision.recognition.decode.TileRead` of the cut-0 outlines
            (``polygon`` image px, ``pips`` crop px), in the order of :func:`symmetry_cut`.

    Returns:
        two float64 (k, 2) arrays of ``(u, v)`` (u across the cut-0 outlines, 0..1; v along
        them), one per outline; None where a spot of one lies on the other's side of the cut.
    """
    q = _as_quad(block).astype(np.float32)
    H = cv2.getPerspectiveTransform(q, _UNIT)
    out = []
    for side, r in enumerate(reads):
        im = counted_spots_px(r)
        uv = (cv2.perspectiveTransform(im.reshape(-1, 1, 2), H.astype(np.float64)).reshape(-1, 2)
              if len(im) else np.zeros((0, 2)))
        if len(uv) and ((uv[:, 0] >= 0.5) if side == 0 else (uv[:, 0] < 0.5)).any():
            return None
        out.append(uv)
    return out


def skews(spots: list[np.ndarray]) -> tuple[float, float] | None:
    """``(skew of cut 0, skew of cut 1)`` (module docstring), radians, from the two cut-0
    outlines' spots in the block's unit square (:func:`block_spots`); None where a half holds
    no spot or a spot lies within :data:`MIDLINE` of the border between halves."""
    cent = {}
    for side, uv in zip("LR", spots):
        if not len(uv) or (np.abs(uv[:, 1] - 0.5) < MIDLINE).any() \
                or (np.abs(uv[:, 0] - 0.5) < MIDLINE).any():
            return None
        for half, sel in (("t", uv[:, 1] < 0.5), ("b", uv[:, 1] >= 0.5)):
            if not sel.any():
                return None
            cent[side + half] = uv[sel].mean(0)

    def angle(a: np.ndarray, b: np.ndarray, axis: int) -> float:
        # the direction from centroid a to centroid b against the block's axis ``axis``
        d = b - a
        return float(np.arctan2(d[1 - axis], d[axis]))

    along = abs(angle(cent["Lt"], cent["Lb"], 1) - angle(cent["Rt"], cent["Rb"], 1))
    across = abs(angle(cent["Lt"], cent["Rt"], 0) - angle(cent["Lb"], cent["Rb"], 0))
    return along, across


def symmetry_cut(block, read_outlines: Callable[[np.ndarray], list],
                 aligned: float = ALIGNED, skewed: float = SKEWED) -> int | None:
    """Which way the spots show a block of two flush tiles cut.

    Args:
        block: float (4, 2) px corners in order around the block
            (:func:`vision.recognition.seam.block_of`).
        read_outlines: decodes float32 (n, 4, 2) image-px outlines into n
            :class:`vision.recognition.decode.TileRead` (spots in crop px).
        aligned, skewed: the thresholds (:data:`ALIGNED`, :data:`SKEWED`).

    Returns:
        0 (the block is cut through the midpoints of sides 0-1 and 2-3), 1 (through those of
        sides 1-2 and 3-0), or None: unsure -- a cut-0 outline reads no face, a half shows no
        spot or one on its border, or neither skew is clear.
    """
    q = _as_quad(block).astype(np.float64)
    m01, m23 = (q[0] + q[1]) / 2, (q[2] + q[3]) / 2
    outlines = np.stack([[q[0], m01, m23, q[3]], [m01, q[1], q[2], m23]]).astype(np.float32)
    reads = read_outlines(outlines)
    if len(reads) != 2 or any(r.face is None for r in reads):
        return None
    spots = block_spots(q, reads)
    s = skews(spots) if spots is not None else None
    if s is None:
        return None
    cut0, cut1 = s
    if cut0 <= aligned and cut1 >= skewed:
        return 0
    if cut1 <= aligned and cut0 >= skewed:
        return 1
    return None
