"""The notch check: an outline whose long side dips inward at its middle spans two tiles.

Why. Tiles have rounded corners. Where two tiles lie flush, side by side, their corners meet
at both ends of the seam, and the block's edge dips inward there: a *notch* of about the
corner radius (a step, where the two tiles are not quite level). A box that the tile model
cut across such a block -- one half of each tile, the failure :mod:`vision.recognition.flush`
guards against -- has the seam's end at the middle of its outer long side, so that side
dips at its middle. A tile's own long side is straight between its corners: no dip. The
check therefore tells a box across two tiles from a tile even on dark, seamless drawings
whose seam line does not show (:mod:`vision.recognition.seam` is unsure there), as long as
the side lies against the felt (or anything of another colour than the tile).

The check (:func:`side_dip`). Along a long side of the outline (float (4, 2) px), at
positions :data:`STEP` px apart between :data:`END` and 1 - END of its length (the outline's own
rounded corners are left out), the picture is sampled along the side's normal from
:data:`REACH` x the tile's width outside to as far inside. The *outside* colour is the median
of the outer band, the *inside* colour the median of the inner band, over all positions; a
side whose two colours differ by less than :data:`MIN_CONTRAST` x the picture's noise is
unsure (another tile lies against it, or the tile is the felt's colour). At each position
the *edge* is the first point, scanning inward from the outer end, whose colour is no longer
the outside colour (farther than half the contrast from it, interpolated between samples: a
spot at the very edge ends the scan as the tile would); positions whose outer end is not
outside-coloured (another object there) are left out. The side's *base* is the straight line
through the median edge of the first (:data:`END`..0.3) and of the last (0.7..1 - END) part;
where those parts stray from it by more than :data:`STRAIGHT` x the width (at least 1 px)
the side is unsure (an occluder, clutter, two tiles far off level). Each position's edge is
the median over :data:`SMOOTH` x the width either way (one noisy position makes no dip); the
*dip* is the deepest such edge in the middle (0.35..0.65) inward of the base, px, counted
only where it is a cusp, at most :data:`NARROW` x the width wide at half its depth (two
rounded corners meeting; glare or a bevel's highlight moving the edge is wider). The side is
*notched* when the dip is at least :data:`NOTCH` x the width and :data:`MIN_DIP_PX` px.

Thresholds come from geometry and the project's renderer only (never from ../shared): the
renderer draws corner radii of 0.03-0.2 of the tile's width
(:func:`vision.synth.draw.random_style`); the cusp where two meet measures about 0.6 of the
radius deep at this smoothing, so 0.02-0.12 of the width. :data:`NOTCH` (0.04) takes radii
from about 0.07 up. ``scripts/eval_notch.py`` measures both kinds on rendered flush tables:
tiles' own outlines are called notched about 1 % of the time (3-D black tiles with glare),
boxes across a block about a quarter of the time (small radii and 3-D sides hide the rest);
the figures are in models/MODEL_CARD.md.

Why it cannot settle a face wrongly: it never reads a face. :func:`notched` serves a guard
that only removes faces (:func:`vision.recognition.flush.notched_boxes`). :func:`notch_cut`
names a block's cut only where both sides the cut crosses dip and both sides along it are
seen straight; a wrong answer needs false narrow dips on both long sides of real tiles *and*
the true seam's notches unseen at both ends (none on the rendered flush blocks,
``scripts/eval_notch.py``), and every face its callers then keep or take
(:mod:`vision.recognition.refine` rule 5, the engine's seam evidence) is still the decoder's
reading of a lengthwise outline, which meets every flush guard again.

Public API: :func:`side_dip`, :func:`notched`, :func:`notch_cut`, :data:`NOTCH`,
:data:`MIN_DIP_PX`, :data:`NARROW`, :data:`SMOOTH`, :data:`STRAIGHT`, :data:`MIN_CONTRAST`,
:data:`REACH`, :data:`SAMPLES`, :data:`END`, :data:`STEP`.
"""

from __future__ import annotations

import cv2
import numpy as np

from vision.geometry import _as_quad, order_polygon, side_pairs

__all__ = ["side_dip", "notched", "notch_cut", "NOTCH", "MIN_DIP_PX", "NARROW", "SMOOTH",
           "STRAIGHT", "MIN_CONTRAST", "REACH", "SAMPLES", "END", "STEP"]

#: Positions sampled along a long side: one every :data:`STEP` px (the notch where two
#: rounded corners meet is a cusp, a few px wide), at least this many.
SAMPLES: int = 41
#: Part of the side left out at each end (the outline's own rounded corners, up to 0.2 of the
#: width deep, lie there: 0.1 of a box of two widths' length), fraction of its length.
END: float = 0.1
#: How far the normal is sampled outside and inside the side, fraction of the tile's width.
REACH: float = 0.3
#: A side is notched where its middle dips inward by at least this fraction of the width.
NOTCH: float = 0.04
#: ... and at least this many px (under it, one px of blur or outline error).
MIN_DIP_PX: float = 1.0
#: The outer parts of a notched side lie within this fraction of the width of the base (a
#: straight side); wavier edges (an occluder, clutter on the felt) are unsure.
STRAIGHT: float = 0.03
#: The inside and outside colours differ by at least this many times the noise.
MIN_CONTRAST: float = 6.0
#: Half-width of the window a position's edge is the median over, fraction of the width.
SMOOTH: float = 0.02
#: A dip is a notch only where it is at most this wide at half its depth, fraction of the
#: width: two rounded corners meeting make a cusp (about 0.27 x the radius wide there).
NARROW: float = 0.25
#: Sampling step along the normal and along the side, px.
STEP: float = 0.5


def side_dip(image: np.ndarray, a, b, centre, width: float) -> float | None:
    """How far the middle of side ``a`` -> ``b`` of an outline dips inward of the side's ends,
    in px, or None where the picture cannot tell (module docstring).

    Args:
        image: uint8 (H, W, 3) BGR (or (H, W) grey).
        a, b: float (2,) px, the side's end corners.
        centre: float (2,) px, the outline's centre (gives the inward direction).
        width: the tile's width, px (the outline's short side).

    Returns:
        The dip, px (>= 0; 0 where the middle lies level with the base or outward of it, or
        its deepest place is no cusp) when the side is straight at both outer parts and shows
        contrast, else None.
    """
    a, b, centre = (np.asarray(v, np.float64) for v in (a, b, centre))
    sampled = _sample_normals(image, a, b, centre, width)
    if sampled is None:
        return None
    smp, ts, length = sampled
    edges = _edges_inward(smp, REACH * width)
    if edges is None:
        return None
    inward, ok = edges
    off = _offsets_from_base(ts, inward, ok, width)
    if off is None:
        return None
    return _cusp_depth(ts, off, ok, width, length)


def _sample_normals(image: np.ndarray, a: np.ndarray, b: np.ndarray, centre: np.ndarray,
                    width: float) -> tuple[np.ndarray, np.ndarray, float] | None:
    """The picture sampled along the normals of side ``a`` -> ``b`` (module docstring).

    Args:
        image: uint8 (H, W, 3) BGR (or (H, W) grey).
        a, b, centre: float64 (2,) px.
        width: the tile's width, px.

    Returns:
        ``(samples, ts, length)``: float32 (positions, depths, channels) colours, each
        position's row running from :data:`REACH` x ``width`` outside to as far inside in
        :data:`STEP` px; float64 (positions,) the positions as fractions of the side
        (:data:`END` .. 1 - END); the side's length, px. None where the side or the tile is
        under 4 px or the samples leave the picture.
    """
    d = b - a
    length = float(np.linalg.norm(d))
    if length < 4 or width < 4:
        return None
    u = d / length
    n = np.array([-u[1], u[0]])
    if (a + b) / 2 @ n - centre @ n < 0:
        n = -n  # n points outward
    reach = REACH * width
    depths = np.arange(reach, -reach - 1e-9, -STEP)  # outside -> inside, px along n
    ts = np.linspace(END, 1 - END, max(SAMPLES, int((1 - 2 * END) * length / STEP) + 1))
    pts = a[None, None] + (ts[:, None, None] * d[None, None]) + depths[None, :, None] * n
    img = np.asarray(image)
    if img.ndim == 2:
        img = img[:, :, None]
    mx = pts[..., 0].astype(np.float32)
    my = pts[..., 1].astype(np.float32)
    h, w = img.shape[:2]
    if mx.min() < 0 or my.min() < 0 or mx.max() > w - 1 or my.max() > h - 1:
        return None  # the side's surroundings leave the picture
    smp = cv2.remap(img, mx, my, cv2.INTER_LINEAR).astype(np.float32)
    if smp.ndim == 2:
        smp = smp[..., None]
    return smp, ts, length


def _edges_inward(smp: np.ndarray, reach: float) -> tuple[np.ndarray, np.ndarray] | None:
    """Each position's edge: where the colour stops being the outside colour (module
    docstring).

    Args:
        smp: float32 (positions, depths, channels), from :func:`_sample_normals`.
        reach: how far the normal was sampled each way, px (:data:`REACH` x the width).

    Returns:
        ``(inward, ok)``: float64 (positions,) px each edge lies inward of the side (negative:
        outward); bool (positions,) whose outer end is outside-coloured and whose edge was
        found. None where the inside and outside colours differ by under
        :data:`MIN_CONTRAST` x the noise.
    """
    k = smp.shape[1]
    band = max(2, int(round(0.5 * reach / STEP)))       # outer / inner half of the reach
    outside = np.median(smp[:, :band].reshape(-1, smp.shape[-1]), axis=0)
    inside = np.median(smp[:, k - band:].reshape(-1, smp.shape[-1]), axis=0)
    contrast = float(np.linalg.norm(inside - outside))
    grey = smp.mean(-1)
    noise = max(1.4826 * float(np.median(np.abs(np.diff(grey[:, :band], axis=1)))), 1.0)
    if contrast < MIN_CONTRAST * noise:
        return None
    dist = np.linalg.norm(smp - outside, axis=-1) / contrast        # (positions, k)
    far = dist > 0.5
    ok = ~far[:, 0]                                    # the outer end is outside-coloured
    first = np.where(far.any(1), far.argmax(1), k)
    ok &= first < k
    # the crossing of half the contrast, interpolated between the two samples around it
    i1 = np.clip(first, 1, k - 1)
    d0 = dist[np.arange(len(smp)), i1 - 1]
    d1 = dist[np.arange(len(smp)), i1]
    frac = np.clip((0.5 - d0) / np.maximum(d1 - d0, 1e-6), 0.0, 1.0)
    edge = reach - (i1 - 1 + frac) * STEP              # px along n: + outside, - inside
    return -edge, ok                                   # px inward of the side


def _offsets_from_base(ts: np.ndarray, inward: np.ndarray, ok: np.ndarray,
                       width: float) -> np.ndarray | None:
    """Each position's edge, px inward of the side's base (module docstring).

    Args:
        ts: float64 (positions,) fractions of the side; inward, ok: from :func:`_edges_inward`.
        width: the tile's width, px.

    Returns:
        float64 (positions,) px inward of the base: the straight line through the median edge
        of the first (..0.3) and the last (0.7..) part. None where under half the positions of
        an outer part or of the middle (0.35..0.65) have an edge, or the outer parts stray
        from the base by more than :data:`STRAIGHT` x ``width`` (at least 1 px).
    """
    left = ok & (ts <= 0.3)
    right = ok & (ts >= 0.7)
    mid = ok & (ts >= 0.35) & (ts <= 0.65)
    need = 0.5 * (ts <= 0.3).sum()
    if left.sum() < need or right.sum() < need or mid.sum() < 0.5 * ((ts >= 0.35)
                                                                      & (ts <= 0.65)).sum():
        return None
    # the base: the straight line through the median edge of each outer part
    tl, el = float(np.median(ts[left])), float(np.median(inward[left]))
    tr, er = float(np.median(ts[right])), float(np.median(inward[right]))
    off = inward - (el + (er - el) * (ts - tl) / max(tr - tl, 1e-6))
    if np.abs(off[left | right]).max() > max(STRAIGHT * width, 1.0):
        return None  # the outer parts are not one straight side
    return off


def _cusp_depth(ts: np.ndarray, off: np.ndarray, ok: np.ndarray, width: float,
                length: float) -> float | None:
    """The deepest smoothed dip in the middle of the side where it is a cusp (module
    docstring).

    Args:
        ts: float64 (positions,) fractions of the side; off: from :func:`_offsets_from_base`;
            ok: from :func:`_edges_inward`.
        width: the tile's width, px; length: the side's length, px.

    Returns:
        The dip, px: the deepest median of ``off`` over :data:`SMOOTH` x ``width`` either way
        in the middle (0.35..0.65); 0.0 where it is not inward or wider than :data:`NARROW` x
        ``width`` at half its depth. None where no middle position has a full window.
    """
    # the median over a window SMOOTH x the width (at least 1 px) each way: a noisy position
    # or a thin line on the tile makes no dip
    h = max(int(round(max(SMOOTH * width, 1.0) / STEP)), 1)
    sm = np.full(len(ts), -np.inf)
    if len(ts) > 2 * h:
        win = np.lib.stride_tricks.sliding_window_view
        med = np.median(win(off, 2 * h + 1), axis=1)
        sm[h:len(ts) - h] = np.where(win(ok, 2 * h + 1).all(1), med, -np.inf)
    midw = np.flatnonzero((ts >= 0.35) & (ts <= 0.65))
    if not np.isfinite(sm[midw]).any():
        return None
    i = int(midw[np.argmax(sm[midw])])
    peak = float(sm[i])
    if peak <= 0:
        return 0.0
    # a notch is a cusp: narrow where it is half as deep (glare or a bevel's highlight that
    # moves the edge is wide)
    lo = hi = i
    while lo > 0 and sm[lo - 1] >= peak / 2:
        lo -= 1
    while hi < len(ts) - 1 and sm[hi + 1] >= peak / 2:
        hi += 1
    run = (hi - lo + 1) * (ts[1] - ts[0]) * length
    return peak if run <= NARROW * width else 0.0


def notched(image: np.ndarray, polygon) -> bool:
    """True when a long side of the outline dips inward at its middle by at least
    :data:`NOTCH` x its width and :data:`MIN_DIP_PX` px: the outline spans two tiles whose
    corners meet there (module docstring). False where neither side shows it or the picture
    cannot tell.

    Args:
        image: uint8 (H, W, 3) BGR.
        polygon: float (4, 2) px, the outline's corners in any order.

    Raises:
        InputError: a polygon that is not finite (4, 2).
    """
    p = order_polygon(polygon).astype(np.float64)  # validates: InputError
    width = min(side_pairs(p))
    centre = p.mean(0)
    for a, b in ((p[1], p[2]), (p[3], p[0])):
        dip = side_dip(image, a, b, centre, width)
        if dip is not None and dip >= max(NOTCH * width, MIN_DIP_PX):
            return True
    return False


def notch_cut(image: np.ndarray, block) -> int | None:
    """Which way the block of two flush tiles is cut, from the notches at its seam's ends.

    Where two tiles with rounded corners lie flush, the block's two sides the seam crosses dip
    at their middles (module docstring); the two sides along the seam are the tiles' own long
    sides, straight. The answer is cut ``c`` (:func:`vision.recognition.seam.seam_cut`'s
    numbering: cut 0 crosses sides 0-1 and 2-3, cut 1 sides 1-2 and 3-0) only where *both*
    sides cut ``c`` crosses are notched (dip at least :data:`NOTCH` x the tile width and
    :data:`MIN_DIP_PX`) and both other sides are seen straight (dip decided and under half
    that); otherwise None (unsure: a side against another tile or off the picture, square
    corners, a block too small to tell).

    Args:
        image: uint8 (H, W, 3) BGR.
        block: float (4, 2) px, the block's corners in order around it.

    Returns:
        0, 1 or None.

    Raises:
        InputError: a block that is not finite (4, 2).
    """
    q = _as_quad(block)
    sides = [(q[i], q[(i + 1) % 4]) for i in range(4)]
    lengths = [float(np.linalg.norm(b - a)) for a, b in sides]
    centre = q.mean(0)

    def dip(i: int, width: float) -> float | None:
        d = side_dip(image, sides[i][0], sides[i][1], centre, width)
        return None if d is None else d / max(NOTCH * width, MIN_DIP_PX)

    for c in (0, 1):
        # cut c's tiles are half as wide as the sides it crosses; the sides along it are read
        # only where both crossed sides are notched
        width = (lengths[c] + lengths[c + 2]) / 4
        if all(v is not None and v >= 1.0 for v in (dip(c, width), dip(c + 2, width))) and \
                all(v is not None and v < 0.5 for v in (dip(1 - c, width), dip(3 - c, width))):
            return c
    return None
