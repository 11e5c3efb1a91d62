"""A second look at the tiles a still reading left unknown: windows around them, read magnified.

Why. A 1080p table shows a tile 55-180 px long; at the tile model's input sizes
(:data:`vision.recognition.scales.STILL_SCALES`) it is 20-110 px, and two touching tiles of a hand are then
often outlined as one box, or a box a third of a tile off (``scripts/eval_scenes.py``, failure
classes ``outline_off`` and ``shape``). The tile model was trained on close-ups too (tiles a few
hundred pixels long), so a window a few tile lengths wide around an unknown tile, given to the
model at its own input size, shows it the tile magnified, as in those close-ups.

How. For every face-up tile the fused reading left unknown, square windows of
:data:`ZOOM_WINDOWS` tile lengths centred on it are cut from the image (a tile length is taken
from the identified tiles around it; windows larger than :data:`ZOOM_MAX_SIDE` are skipped).
The tile model reads each window at :data:`ZOOM_INPUT`; outlines that touch a window's cut
edge are dropped (a tile cut by the window is not a whole tile); the rest are mapped back to
image pixels and decoded on the full image like any other outline (both independent reads,
shape checks).
Only identified reads of tile size are kept (:func:`tile_sized`: a box over part of a tile can
name a face from a few of its spots); unknown ones add nothing. Each window size is one more
reading for :func:`vision.recognition.scales.fuse_scale_reads`: a face is accepted only where every reading
that names one agrees, and a tile read differently by two readings stays unknown -- a second
look can add a face, never overrule one. A face only the second look names on an outline
shorter than the whole-image outlines of the tile must show every spot they counted
(:func:`cut_short_faces`).

Public API: :data:`ZOOM_WINDOWS`, :data:`ZOOM_INPUT`, :func:`zoom_windows`,
:func:`tile_sized`, :func:`inside_window`, :func:`cut_short_faces`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from scoring.tiles import TILES_BY_FACE

from vision.recognition.decode import TileRead, counted_spots_px
from vision.geometry import long_axis, points_in_polygon, polygon_iou_matrix, side_pairs
from vision.recognition.flush import OUTLINE_JITTER
from vision.recognition.scales import SAME_TILE_IOU
from vision.schema import UnreadReason

__all__ = ["second_look", "ZOOM_WINDOWS", "ZOOM_INPUT", "ZOOM_MAX_SIDE", "ZOOM_MAX_TILES", "EDGE_MARGIN",
           "SIZE_TOLERANCE", "SIZE_NEIGHBOURS", "CUT_SHORT", "zoom_windows", "tile_sized",
           "inside_window", "cut_short_faces", "local_shape", "PARALLEL_DEG",
           "PARALLEL_MIN"]

#: Window sides in tile lengths (the median long side of the identified tiles nearest to the
#: unknown one): 2 shows the tile and its touching neighbours, 4.5 its whole hand and the felt
#: around it.
ZOOM_WINDOWS: tuple[float, ...] = (2.0, 3.0, 4.5)
#: Tile-model input size for a window (px): the model's own.
ZOOM_INPUT: int = 640
#: Windows with a larger side (px) are skipped: shrunk to ZOOM_INPUT they would show the tile
#: smaller than the whole-image reading at the largest still size does (1216 px for 1920).
ZOOM_MAX_SIDE: int = 1024
#: At most this many unknown tiles of one image get a second look (3 detector runs each):
#: a photo of a foreign set can hold hundreds of unknown outlines (seen: 499 outlines on a
#: western-domino photo took 30 s to look at without a bound).
ZOOM_MAX_TILES: int = 12
#: An outline with a corner within this fraction of the window side of a cut edge is dropped.
EDGE_MARGIN: float = 0.02
#: A second-look outline must be tile-sized: its long side within this factor of the median
#: long side of the SIZE_NEIGHBOURS identified tiles nearest to it.
SIZE_TOLERANCE: float = 1.3
SIZE_NEIGHBOURS: int = 6


def zoom_windows(reads: Sequence[TileRead], image_shape: tuple[int, ...],
                 factors: Sequence[float] = ZOOM_WINDOWS, max_side: int = ZOOM_MAX_SIDE,
                 max_tiles: int = ZOOM_MAX_TILES) -> list[list[tuple[int, int, int, int]]]:
    """Windows around the unknown face-up tiles of a reading.

    Args:
        reads: the fused reading of one still image (image px polygons).
        image_shape: the image's shape ``(H, W[, C])``.
        factors: window sides in tile lengths.
        max_side: windows with a side above this (px) are skipped.
        max_tiles: at most this many unknown tiles get windows (the ones the tile model is
            surest of), so a picture full of unknown outlines costs a bounded time.

    Returns:
        for each factor, a list of windows ``(x0, y0, x1, y1)`` int px, clipped to the image
        (empty lists where no unknown tile or every window is too large).
    """
    h, w = int(image_shape[0]), int(image_shape[1])
    out: list[list[tuple[int, int, int, int]]] = []
    unknown = sorted((r for r in reads if r.state == "unknown"),
                     key=lambda r: -float(r.tile_confidence))[:max_tiles]
    known = [r for r in reads if r.state == "face_up"]
    lengths = [_local_tile_length(r, known) for r in unknown]
    for f in factors:
        wins = []
        for r, length in zip(unknown, lengths):
            side = float(f) * length
            if side > max_side or side < 8:
                continue
            cx, cy = (float(v) for v in np.asarray(r.polygon, np.float64).reshape(4, 2).mean(0))
            x0, y0 = int(max(round(cx - side / 2), 0)), int(max(round(cy - side / 2), 0))
            x1, y1 = int(min(round(cx + side / 2), w)), int(min(round(cy + side / 2), h))
            if x1 - x0 >= 8 and y1 - y0 >= 8:
                wins.append((x0, y0, x1, y1))
        out.append(wins)
    return out


def _local_tile_length(r: TileRead, known: Sequence[TileRead], k: int = 0) -> float:
    """The tile length around ``r``: the median long side of the ``k`` (default
    SIZE_NEIGHBOURS) identified tiles nearest to it; ``r``'s own long side when none (an
    unknown outline can be a box across a whole hand)."""
    if not known:
        return float(r.long_side)
    centres = np.stack([q.centre for q in known])
    near = np.argsort(np.linalg.norm(centres - r.centre, axis=1))[:k or SIZE_NEIGHBOURS]
    return float(np.median([known[i].long_side for i in near]))


#: Two outlines whose long axes differ by at most this many degrees lie the same way
#: (:func:`local_shape`'s ``along``). A camera at a slant foreshortens a tile by its direction:
#: on such a picture the tiles lying one way are longer for their width than the tiles lying
#: across them, so a tile's shape is best judged by its neighbours lying its way.
PARALLEL_DEG: float = 20.0
#: ... and at least this many of the nearest neighbours must lie that way, else all count.
PARALLEL_MIN: int = 2

#: :func:`local_shape`'s ``reach`` where the refit judges a face region's cuts
#: (:mod:`vision.recognition.refine`): of the nearest identified tiles only those at most
#: twice as far as the nearest one (or two of its lengths) count. Seen: a banker's flush
#: block at the near edge of the picture (tiles 114 px long, its identified neighbour 103 px,
#: the other tiles 76-85 px and 3-5 tile lengths away) judged by the far tiles' 78 px.
NEAR_REACH: float = 2.0


def local_shape(centre: np.ndarray, known: Sequence[TileRead],
                k: int = SIZE_NEIGHBOURS, along: float | None = None,
                reach: float | None = None) -> tuple[float, float]:
    """The tiles' shape around a point: ``(length px, aspect)``, the medians of the long side
    and of long side / short side over the ``k`` identified tiles (``known``, at least one)
    nearest to ``centre`` (float (2,) image px). With ``reach``, only those of the ``k`` at
    most ``reach`` times as far as the nearest one, or ``reach`` of its tile lengths, count
    (the nearest always): a camera at a slant draws the near side of the table larger, and
    a tile beside the place tells its size better than tiles across the table
    (:data:`NEAR_REACH`). With ``along`` (degrees, a long axis as
    :func:`vision.geometry.long_axis` gives), only those whose long axis lies within
    :data:`PARALLEL_DEG` of it count, where at least :data:`PARALLEL_MIN` do."""
    centres = np.stack([q.centre for q in known])
    dist = np.linalg.norm(centres - np.asarray(centre), axis=1)
    near = np.argsort(dist)[:k]
    if reach is not None:
        first = near[0]
        limit = reach * max(float(dist[first]), float(known[first].long_side))
        near = near[dist[near] <= limit]
    if along is not None:
        turn = np.array([abs((long_axis(known[i].polygon) - along + 90.0) % 180.0 - 90.0)
                         for i in near])
        if int((turn <= PARALLEL_DEG).sum()) >= PARALLEL_MIN:
            near = near[turn <= PARALLEL_DEG]
    sides = np.array([sorted(side_pairs(np.asarray(known[i].polygon, np.float64)))
                      for i in near])
    return (float(np.median(sides[:, 1])),
            float(np.median(sides[:, 1] / np.maximum(sides[:, 0], 1e-6))))


def tile_sized(reads: Sequence[TileRead], reference: Sequence[TileRead],
               k: int = SIZE_NEIGHBOURS, tolerance: float = SIZE_TOLERANCE) -> list[bool]:
    """Whether each read's outline has the size of the identified tiles around it.

    All tiles of a set are one size, and perspective changes it little between neighbours; a
    box over part of a tile (seen: a box over two red spots of a half-covered 4-6, read "1-1")
    is much smaller.

    Args:
        reads: the second look's reads (image px).
        reference: identified reads of the whole-image readings.
        k: the reference size is the median long side of the ``k`` identified tiles nearest to
            the read's centre.
        tolerance: the read's long side must lie within ``[ref / tolerance, ref * tolerance]``.

    Returns:
        one bool per read (all False when there is no identified reference tile).
    """
    ref = [r for r in reference if r.state == "face_up"]
    if not ref:
        return [False] * len(reads)
    out = []
    for r in reads:
        m = _local_tile_length(r, ref, k)
        out.append(m / tolerance <= r.long_side <= m * tolerance)
    return out


def inside_window(polygons: np.ndarray, window: tuple[int, int, int, int],
                  image_shape: tuple[int, ...], margin: float = EDGE_MARGIN) -> np.ndarray:
    """Which outlines lie whole inside a window: bool (n,).

    Args:
        polygons: float (n, 4, 2) image px.
        window: ``(x0, y0, x1, y1)`` px.
        image_shape: the image's shape; a window side on the image border is no cut edge.
        margin: corners within ``margin`` x the window side of a cut edge fail.
    """
    p = np.asarray(polygons, np.float64).reshape(-1, 4, 2)
    x0, y0, x1, y1 = window
    h, w = int(image_shape[0]), int(image_shape[1])
    m = margin * max(x1 - x0, y1 - y0)
    lo_x = -np.inf if x0 <= 0 else x0 + m
    lo_y = -np.inf if y0 <= 0 else y0 + m
    hi_x = np.inf if x1 >= w else x1 - m
    hi_y = np.inf if y1 >= h else y1 - m
    return ((p[..., 0] >= lo_x) & (p[..., 0] <= hi_x)
            & (p[..., 1] >= lo_y) & (p[..., 1] <= hi_y)).all(1)


def own_spots(read: TileRead, others: Sequence[np.ndarray]) -> int:
    """Spots ``read`` counted (the decoder's rule, ``decode.counted_spots_px``) that lie on none of
    ``others`` (float (4, 2) image-px outlines of other identified tiles), each shrunk by
    :data:`vision.recognition.flush.OUTLINE_JITTER` of its sides first -- a spot at the very
    edge of another outline may be this tile's; an int (``read.spots_counted`` where
    ``others`` is empty or the read has no spots)."""
    p = read.pips
    if not len(others) or p is None or not len(p):
        return read.spots_counted or 0
    pts = counted_spots_px(read)
    if not len(pts):
        return 0
    shrunk = [q.mean(0) + (q - q.mean(0)) * (1 - 2 * OUTLINE_JITTER)
              for q in (np.asarray(o, np.float64).reshape(4, 2) for o in others)]
    on_other = np.logical_or.reduce([points_in_polygon(pts, q) for q in shrunk])
    return int((~on_other).sum())


#: A second-look outline shorter than this fraction of the whole-image outlines of the same
#: tile (their median long side) may have cut off a spot row: a row of a 6 is about 1/6 of the
#: tile's length from the next.
CUT_SHORT: float = 0.9


def cut_short_faces(fused: list[TileRead], per_scale: Sequence[Sequence[TileRead]],
                    looks: Sequence[Sequence[TileRead]] = ()) -> list[TileRead]:
    """A face named by one reading only, on an outline cut short (below CUT_SHORT of the
    other whole-image outlines of that tile, polygon IoU >= 0.5), must show at least as many
    spots as those readings counted: spots do not vanish, and an outline cut after a spot row
    reads a face one spot short or more (seen: a 3-4 outlined without one spot of its 3 read
    2-4 by the second look, where the whole-image readings counted six and seven spots; a 5-5
    cut after its first 5 read 2-5 at one input size, where the other sizes counted 9 to 13
    spots on longer outlines). Such a face is unknown.

    "One reading only": a face of the second look that no whole-image reading of the tile
    names, or a face of one input size that no other input size names for the tile.

    Args:
        fused: the fused reading (:func:`vision.recognition.scales.fuse_scale_reads`) of the whole-image
            readings and of the second look if any.
        per_scale: the whole-image readings, one list per input size.
        looks: the second look's readings, one list per window size (may be empty).

    Spots of those readings that lie on another identified tile of ``fused`` (:func:`own_spots`)
    are that tile's and are not counted: a whole-image outline reaching over a neighbour's end
    (seen: a 1-2 laid across the end of a 1-6, its box 127 px long counting 7 spots) is no
    evidence that the shorter outline cut off spots of its own.

    Returns:
        ``fused`` with those faces unknown (same order).
    """
    zoomed = {id(r) for rs in looks for r in rs}
    known = [k for k, r in enumerate(fused) if r.state == "face_up"]
    whole = [r for rs in per_scale for r in rs if r.state != "face_down"]
    if not whole:
        return fused
    faced = [k for k, r in enumerate(fused) if r.face]
    if not faced:
        return fused
    ious = polygon_iou_matrix(  # one call: the hulls of the whole-image outlines once
        np.stack([np.asarray(fused[k].polygon, np.float32) for k in faced]),
        np.stack([np.asarray(r.polygon, np.float32) for r in whole]))
    row = dict(zip(faced, ious))
    out = []
    for k, r in enumerate(fused):
        if r.face:
            same = [w for w, v in zip(whole, row[k]) if v >= SAME_TILE_IOU and w is not r]
            if same and all(w.face != r.face for w in same):
                length = float(np.median([w.long_side for w in same]))
                # a spot of a longer outline lying on another identified tile is that tile's
                # (an outline reaching over a neighbour's end counts its spots too)
                near = [np.asarray(fused[j].polygon, np.float64) for j in known if j != k
                        and polygon_iou_matrix(np.asarray(fused[j].polygon, np.float32)[None],
                                               np.asarray(r.polygon, np.float32)[None])[0, 0]
                        < SAME_TILE_IOU]
                seen = max(own_spots(w, near) for w in same)
                if (r.long_side < CUT_SHORT * length
                        and seen > TILES_BY_FACE[r.face].spots):
                    who = "the second look" if id(r) in zoomed else "one input size"
                    r = r.as_unknown(UnreadReason.SHORT_OUTLINE, who=who, face=r.face,
                                     long=r.long_side, seen=seen, length=length)
        out.append(r)
    return out


def second_look(image: np.ndarray, reads: Sequence[TileRead], unread: Sequence[TileRead],
                windows: Sequence[float], detect: Callable[[np.ndarray], "Detections"],
                decode: Callable[["Detections"], list[TileRead]]) -> list[list[TileRead]]:
    """Read windows around the unknown tiles of a still reading magnified (module docstring):
    one list per window size of its identified, tile-sized reads (image px), free of
    overlapping outlines, to be fused with the whole-image readings.

    Args:
        image: the picture, uint8 (H, W, 3).
        reads: its still reading (image px).
        unread: the unknown reads worth a window (the others -- an empty table's felt
            lettering -- get none and are not counted as tiles around one).
        windows: window sides in tile lengths (:data:`ZOOM_WINDOWS`; :func:`zoom_windows`).
        detect: the tile model on one window, uint8 (h, w, 3) -> :class:`Detections` (window
            px; the caller reads it at :data:`ZOOM_INPUT`).
        decode: outlines (image px) -> one :class:`TileRead` each, read on ``image``.
    """
    from vision.detections import Detections
    from vision.recognition.overlaps import resolve_overlapping_reads

    looks = []
    felt = {id(r) for r in reads if r.state == "unknown"} - {id(r) for r in unread}
    for wins in zoom_windows([r for r in reads if id(r) not in felt], image.shape, windows):
        parts = []
        for x0, y0, x1, y1 in wins:
            d = detect(np.ascontiguousarray(image[y0:y1, x0:x1]))
            if not len(d):
                continue
            d = d.shifted(x0, y0)
            parts.append(d[inside_window(d.polygon, (x0, y0, x1, y1), image.shape)])
        dets = Detections.merge(parts)
        if len(dets):
            found = [r for r in resolve_overlapping_reads(decode(dets)) if r.state == "face_up"]
            looks.append([r for r, ok in zip(found, tile_sized(found, reads)) if ok])
    return looks
