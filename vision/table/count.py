"""A position holds four tiles: unknown outlines that are not a tile.

docs/rules.md sections 4-5: a seat is dealt exactly four tiles, and the table stage settles a
position only from its four tiles. The tile model sometimes gives a position more outlines or
fewer than that. One exact case is recognised here; every other count keeps the position
unsettled (``wrong_tile_count``).

**An unknown outline lying on the hand** (:func:`covered_extras`). A position shows exactly four
identified face-up tiles and, besides them, unknown outlines of which at least
:data:`COVERED_MIN` of the area lies inside those four tiles' outlines (a box across two
identified tiles, a crosswise box over a flush block, a second box on one tile). Such an
outline is not a fifth tile: tiles lie flat and do not overlap, so a fifth tile shows its own
top face outside the four identified tiles, and its outline overlaps theirs only by outline
error (an identified outline is its own tile's within that error: its face was read from the
spots inside it, with no unread spot beside it -- the decoder's and the flush checks). Under
the project's outline error model (every corner off by N(0, 0.06 x the tile's width), :data:`vision.recognition.flush.OUTLINE_JITTER`) a tile enclosed on all four sides by
identified tiles -- the most any neighbour can cover -- has at most 0.31 of its outline inside
theirs at the 0.9999 quantile and 0.39 at the most in 60 000 Monte Carlo draws (tiles of
aspect 1.9, 2.4 and 2.9, the renderer's range); :data:`COVERED_MIN` = 0.9 is more than twice
that. What lies under such an outline outside the identified tiles is at most a tenth of a
tile: a tile could only be there wholly under the hand, and a tile hidden under the hand is a
case the picture cannot tell from none, with which four identified tiles already settle. So the
outline is dropped (kept in ``PositionState.covered``) and the four identified tiles are the
hand. The faces are those identified, so nothing is guessed; an unknown outline that covers
any more of an unread area keeps the position unsettled.

A position of three tiles whose fourth is not seen is not settled here (``wrong_tile_count``);
:mod:`vision.table.open_tile` settles its seat only where every face and every pairing of the
tile not seen gives the same result.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from vision.geometry import points_in_polygon

__all__ = ["COVERED_MIN", "covered_fraction", "covered_extras"]

#: An unknown outline is no tile when at least this fraction of its area lies inside the
#: position's four identified outlines (module docstring: a real tile beside them, even
#: enclosed on four sides, has at most 0.39 under the outline error model).
COVERED_MIN: float = 0.9
#: Sample points per side for :func:`covered_fraction` (a 20 x 20 grid: 1/400 of the area each).
_GRID: int = 20


def covered_fraction(read: Any, outlines: Sequence[np.ndarray]) -> float:
    """The fraction (0..1, float) of ``read``'s outline (float (4, 2) px, ``read.polygon``)
    that lies inside any of ``outlines`` (float (4, 2) px each), from a 20 x 20 grid of cell
    centres spread over the outline (bilinear in its corners); 0.0 when ``outlines`` is
    empty."""
    if not len(outlines):
        return 0.0
    p = np.asarray(read.polygon, np.float64).reshape(4, 2)
    u = (np.arange(_GRID) + 0.5) / _GRID
    s, t = (a.reshape(-1, 1) for a in np.meshgrid(u, u))
    pts = (1 - s) * (1 - t) * p[0] + s * (1 - t) * p[1] + s * t * p[2] + (1 - s) * t * p[3]
    inside = np.zeros(len(pts), bool)
    for q in outlines:
        inside |= points_in_polygon(pts, q)
    return float(inside.mean())


def covered_extras(reads: Sequence[Any]) -> list[Any]:
    """The unknown outlines of one position that lie on its identified tiles (module
    docstring): all of its unknown reads when it shows exactly four identified face-up tiles
    and each unknown one has at least :data:`COVERED_MIN` of its area inside their outlines;
    otherwise ``[]`` (nothing is dropped unless every extra outline is covered).

    Args:
        reads: the position's :class:`vision.recognition.decode.TileRead` s (tile backs are
            ignored here: beside four identified tiles they are set aside anyway).
    """
    up = [r for r in reads if r.state == "face_up"]
    unknown = [r for r in reads if r.state == "unknown"]
    if len(up) != 4 or not unknown:
        return []
    outlines = [np.asarray(r.polygon, np.float64) for r in up]
    if all(covered_fraction(r, outlines) >= COVERED_MIN for r in unknown):
        return unknown
    return []
