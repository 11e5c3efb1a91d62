"""The seam check: which way a square block of two flush tiles is cut, from the picture.

Why. Two tiles touching flush with their ends level form a block of four halves that an
outline can cut lengthwise (the tiles as laid) or crosswise (one half of each tile); halves of
1, 3, 4 and 5 look alike turned a quarter, so both cuts can read valid faces
(:mod:`vision.recognition.flush`, :mod:`vision.recognition.fill`). Where two tiles meet there
is a *seam*: each tile has its own edge -- a gap showing the felt, a drawn border, a bevel, the
dark line where two rounded edges meet -- and it runs the whole length of the block, through
its centre. The middle of a tile (where its two halves meet) is no edge: it shows nothing, or a
divider line that stops short of the tile's sides. So a line of contrasting colour along one
cut, the whole length, and none along the other tells which way the block is cut.

The check (:func:`seam_cut`). The block (float (4, 2) px corners, in order around it) is
rectified to a square of its own size in px (at most :data:`MAX_SIDE`; a block under
:data:`MIN_SIDE` is too small to tell: unsure). For each of the two cuts -- cut 0 through the
midpoints of sides 0-1 and 2-3, cut 1 through the midpoints of sides 1-2 and 3-0 -- straight
lines near the middle (offset up to :data:`SEARCH` of the side, slanted up to the same at the
ends: outlines are a few px off) are scored. At each position along a line (its whole length
but the outer :data:`END_SKIP` at each end, where rounded corners meet) its *contrast* is the
colour on the line (the most distinct px within :data:`BAND` px of it) against the colours on
*both* sides :data:`FLANK` px beyond and against the tile face (the block's median colour):
the smallest of the three colour distances, and 0 unless the line is lighter or darker than
both sides (a ridge or a trough: not the blended px of a step, a tile's edge on the felt or a
spot's rim; not the face between two rows of spots; not the inside of a spot the line
crosses). Contrasts are in units of the picture's noise (the robust spread of neighbouring
px differences, at least :data:`MIN_NOISE` grey levels). A line's *line score* is the
:data:`QUANTILE` quantile of its contrasts over the positions: it holds at 1 - QUANTILE of
the length, so spots crossing or lying beside part of it make no line. Its *seam score* is
the smallest of that, the median contrast over the middle :data:`CENTRE` of the line (a
divider across each tile, drawn short of the tile's sides, is broken at the block's centre:
no seam), and the median contrast less :data:`SPREAD` x the spread of the line's colour along
it (a seam is one colour the whole length; a line through gaps and spots is not). A cut
*shows a seam* when its best line's seam score is at least :data:`SEAM`, and *shows a line*
when its best line score is at least :data:`LINE` (far lower).

The answer is a cut only when one cut shows a seam and the other shows not even a line;
otherwise None (unsure): both (a drawing with a line across each tile) or neither (flat
drawings whose seam does not show). The thresholds come from rendered flush blocks only
(``scripts/eval_seam.py``: the project's renderer, :func:`vision.synth.render.render_scene`
with ``touching`` and ``square_blocks``, every style and family, corners jittered as a
detector's outline is), where they answered no block the wrong way, with a factor of about
two to the nearest wrong answer on each threshold (figures in ``scripts/eval_seam.py``'s
docstring); ../shared is never used to fit them.

Why it cannot settle a face wrongly on its own: it never reads a face. Its callers use it only
to lift an abstention where each tile of the cut it names is still read by the decoder's two
agreeing reads (:mod:`vision.recognition.decode`), and only where the opposite cut would be
the one their guard feared; an unsure check keeps every guard as it was.

Public API: :func:`seam_cut`, :func:`seam_scores`, :func:`block_of`, :func:`long_cut`,
:data:`SEAM`, :data:`LINE`.
"""

from __future__ import annotations

import cv2
import numpy as np

from vision.geometry import _as_quad

__all__ = ["seam_cut", "seam_scores", "block_of", "long_cut", "SEAM", "LINE", "QUANTILE",
           "MIN_SIDE", "MAX_SIDE"]

#: Rectified block side, px: the block's own mean side, at most MAX_SIDE; a block whose mean
#: side is under MIN_SIDE is too small to tell a seam (tiles under 32 px wide: a spot or two
#: fill the width; rendered blocks that small were cut the wrong way, ``scripts/eval_seam.py``):
#: :func:`seam_cut` is unsure.
MIN_SIDE: int = 64
MAX_SIDE: int = 160
#: Offset and slant searched for the seam line, as a fraction of the side.
SEARCH: float = 0.05
#: Half-width of the band a line's colour is taken from, px of the block at about its own
#: size (a seam is a thin line: a gap, a drawn border, the dark edge of a bevel).
BAND: float = 1.0
#: Distance beyond the band where the sides' colours are taken, px (inside a spot crossed by
#: the line both sides show the spot: no line).
FLANK: float = 2.0
#: Part of the line at each end left out (rounded corners meet there), fraction of the side.
END_SKIP: float = 0.06
#: The middle of the line where the seam must show too (a divider is broken there by the
#: seam it crosses), fraction of the side.
CENTRE: float = 0.1
#: The score is this quantile of a line's contrasts over its positions: the line holds at
#: 1 - QUANTILE of its length.
QUANTILE: float = 0.2
#: Weight of the line colour's spread along its length (its 1 - QUANTILE quantile of the
#: distance to its median colour) taken off the median contrast in the seam score.
SPREAD: float = 1.0
#: The noise a block's contrasts are measured in is at least this many grey levels (a clean
#: drawing).
MIN_NOISE: float = 2.0
#: A cut shows a seam at this score or more (contrast / colour range), from rendered blocks
#: (``scripts/eval_seam.py``).
SEAM: float = 4.0
#: A cut shows a line at this score or more: then the other cut's seam is not taken.
LINE: float = 1.0


def _rectified(image: np.ndarray, block: np.ndarray) -> np.ndarray:
    """The block warped to a float32 (S, S, 3) square, corner k of ``block`` to corner k of
    (0, 0), (S, 0), (S, S), (0, S)."""
    q = _as_quad(block)
    side = float(np.mean(np.linalg.norm(np.roll(q, -1, 0) - q, axis=1)))
    s = int(np.clip(round(side), MIN_SIDE, MAX_SIDE))
    img = np.asarray(image)
    if img.ndim == 2:
        img = cv2.cvtColor(img, cv2.COLOR_GRAY2BGR)
    if side > 1.5 * s:  # shrinking: smooth first so one px stands for its neighbourhood
        img = cv2.GaussianBlur(img, (0, 0), 0.5 * side / s)
    dst = np.array([[0, 0], [s, 0], [s, s], [0, s]], np.float32)
    M = cv2.getPerspectiveTransform(q.astype(np.float32), dst)
    return cv2.warpPerspective(img, M, (s, s), flags=cv2.INTER_LINEAR,
                               borderMode=cv2.BORDER_REPLICATE).astype(np.float32)


def _sample(img: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Bilinear samples of float (S, S, 3) ``img`` at float px ``x`` (..., ) and integer rows
    ``y`` (broadcast), clipped to the image: float32 (..., 3)."""
    s = img.shape[1]
    x = np.clip(x, 0, s - 1.001)
    x0 = np.floor(x).astype(np.int64)
    f = (x - x0).astype(np.float32)[..., None]
    yy = np.broadcast_to(y, x.shape)
    return img[yy, x0] * (1 - f) + img[yy, x0 + 1] * f


def _cut_score(img: np.ndarray, norm: float, face: np.ndarray) -> tuple[float, float]:
    """Scores of the best near-vertical line through the middle of ``img`` (S, S, 3) float:
    ``(seam, line)`` in units of ``norm`` (grey levels of noise), ``face`` the face colour
    (3,) (module docstring: the line score the :data:`QUANTILE` quantile over rows of the
    line's contrast; the seam score also no more than its median over the middle
    :data:`CENTRE` and its median less :data:`SPREAD` x its colour's spread), each the
    best over the lines tried."""
    s = img.shape[0]
    ys = np.arange(int(np.ceil(END_SKIP * s)), int(np.floor((1 - END_SKIP) * s)))
    t = (ys - s / 2) / s                                            # (n,) -0.5..0.5
    reach = SEARCH * s
    offs = np.arange(-reach, reach + 1e-6, 0.5)
    slants = np.arange(-reach, reach + 1e-6, 1.0)
    band = BAND
    flank = BAND + FLANK
    us = np.arange(-band, band + 1e-6, 0.5)
    # line centres for every (offset, slant) and row: (o, k, n)
    xc = s / 2 + offs[:, None, None] + slants[None, :, None] * t[None, None, :]
    y = ys[None, None, :]
    left = _sample(img, xc - flank, y)                              # (o, k, n, 3)
    right = _sample(img, xc + flank, y)
    best, colour = None, None
    for u in us:
        b = _sample(img, xc + u, y)
        # a line differs from both sides and from the tile's face: not a spot's edge, not
        # the face between two rows of spots
        c = np.minimum(np.minimum(np.linalg.norm(b - left, axis=-1),
                                  np.linalg.norm(b - right, axis=-1)),
                       np.linalg.norm(b - face, axis=-1))
        # a ridge or a trough (lighter or darker than both sides), not the blended px of a
        # step between two colours (a tile's edge on the felt, a spot's rim)
        gb, gl, gr = b.mean(-1), left.mean(-1), right.mean(-1)
        c = np.where((gb - gl) * (gb - gr) > 0, c, 0.0)
        if best is None:
            best, colour = c, b
        else:
            more = c > best
            best = np.where(more, c, best)                          # (o, k, n)
            colour = np.where(more[..., None], b, colour)           # (o, k, n, 3)
    line = np.quantile(best, QUANTILE, axis=-1)                     # (o, k)
    mid = np.abs(t) <= CENTRE / 2
    # one colour the whole length (a seam), not the blend of whatever lies on the line
    spread = np.quantile(np.linalg.norm(colour - np.median(colour, axis=-2, keepdims=True),
                                        axis=-1), 1 - QUANTILE, axis=-1)
    seam = np.minimum(np.minimum(line, np.median(best[..., mid], axis=-1)),
                      np.median(best, axis=-1) - SPREAD * spread)
    return float(seam.max() / norm), float(line.max() / norm)


def seam_scores(image: np.ndarray, block) -> tuple[tuple[float, float], tuple[float, float]]:
    """The seam and line scores of the block's two cuts.

    Args:
        image: uint8 (H, W, 3) BGR (or (H, W) grey).
        block: float (4, 2) px, the block's corners in order around it (either direction).

    Returns:
        ``((seam, line) of cut 0, (seam, line) of cut 1)``: scores in units of the picture's
        noise (module docstring) of the best line through the midpoints of sides 0-1 and 2-3
        (cut 0) and of sides 1-2 and 3-0 (cut 1); computed at any size (:func:`seam_cut`
        leaves blocks under :data:`MIN_SIDE` unanswered).

    Raises:
        InputError: a block that is not finite (4, 2).
    """
    img = _rectified(image, block)
    grey = img.mean(-1)
    # the picture's noise: neighbouring px of the face differ by about this (robust: most
    # neighbours are face and face)
    noise = 1.4826 * float(np.median(np.abs(np.diff(grey, axis=1))))
    norm = max(noise, MIN_NOISE)
    face = np.median(img.reshape(-1, 3), axis=0)
    return (_cut_score(img, norm, face),
            _cut_score(np.ascontiguousarray(img.transpose(1, 0, 2)), norm, face))


def seam_cut(image: np.ndarray, block, seam: float = SEAM, line: float = LINE) -> int | None:
    """Which way the picture shows a block of two flush tiles cut.

    Args:
        image: uint8 (H, W, 3) BGR.
        block: float (4, 2) px corners in order around the block (:func:`block_of`).
        seam, line: the thresholds (:data:`SEAM`, :data:`LINE`).

    Returns:
        0 (the seam runs through the midpoints of sides 0-1 and 2-3), 1 (through those of
        sides 1-2 and 3-0), or None: unsure -- both cuts show a line or neither a seam, or
        the block's mean side is under :data:`MIN_SIDE` px.
    """
    q = _as_quad(block)
    if np.mean(np.linalg.norm(np.roll(q, -1, 0) - q, axis=1)) < MIN_SIDE:
        return None  # too small to tell
    (sa, la), (sb, lb) = seam_scores(image, block)
    if sa >= seam and lb < line:
        return 0
    if sb >= seam and la < line:
        return 1
    return None


def block_of(polygon, beside) -> np.ndarray:
    """The block a tile outline and an outline flush beside its long side cover.

    Args:
        polygon: float (4, 2) px, a tile outline (any corner order).
        beside: float (4, 2) px, an outline lying against one of its long sides (a neighbour
            tile, or :func:`vision.recognition.flush.beside_outlines`).

    Returns:
        float32 (4, 2) px, in order around the block, built on ``polygon``'s own corners:
        ``polygon`` moved by its short side toward ``beside`` closes the block; cut 0 is the
        seam along ``polygon``'s long side (:func:`long_cut` is 0 for it).
    """
    from vision.geometry import order_polygon

    p = order_polygon(_as_quad(polygon)).astype(np.float64)
    s = p[1] - p[0]  # corner 0 -> 1: a short side
    centre = _as_quad(beside).mean(0)
    if np.linalg.norm(p.mean(0) + s - centre) > np.linalg.norm(p.mean(0) - s - centre):
        s = -s
    # the far side of the block: corners 1 and 2 move (s points from 0 to 1), or 0 and 3
    if s @ (p[1] - p[0]) > 0:
        q = np.array([p[0], p[1] + s, p[2] + s, p[3]])
    else:
        q = np.array([p[0] + s, p[1], p[2], p[3] + s])
    return q.astype(np.float32)


def long_cut(block, polygon) -> int:
    """Which cut of ``block`` (0 or 1, :func:`seam_cut`) runs along the long sides of tile
    outline ``polygon`` (float (4, 2) px each): the cut whose direction is closer to the
    polygon's long axis."""
    from vision.geometry import order_polygon

    q = _as_quad(block)
    p = order_polygon(_as_quad(polygon)).astype(np.float64)
    axis = p[2] - p[1]  # corner 1 -> 2: a long side
    d0 = (q[2] + q[3]) / 2 - (q[0] + q[1]) / 2   # cut 0: midpoint of 0-1 to midpoint of 2-3
    d1 = (q[3] + q[0]) / 2 - (q[1] + q[2]) / 2
    c0 = abs(axis @ d0) / (np.linalg.norm(axis) * np.linalg.norm(d0) + 1e-9)
    c1 = abs(axis @ d1) / (np.linalg.norm(axis) * np.linalg.norm(d1) + 1e-9)
    return 0 if c0 >= c1 else 1
