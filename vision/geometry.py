"""Tile geometry shared by the renderer, the pip decoder and the overlay.

One tile crop convention for the whole project (training crops and inference crops are made by
the same :func:`rectify`, so they match exactly):

* the tile polygon is put in canonical order by :func:`order_polygon` (clockwise in image
  coordinates, corner 0 -> 1 a SHORT side, 1 -> 2 a LONG side, corner 0 the start of the upper
  short side);
* it is enlarged by :data:`CROP_MARGIN` with :func:`expand_polygon` (tolerates polygon error;
  the crop shows a thin border of background);
* it is warped by a homography (``cv2.getPerspectiveTransform`` / ``cv2.warpPerspective``) to an
  upright crop of :data:`CROP_W` x :data:`CROP_H` pixels, long axis vertical.

Coordinates are OpenCV's: ``(x, y)`` pixels, x to the right, y down; integer coordinates are
pixel centres (the convention of ``cv2.warpPerspective``).
"""

from __future__ import annotations

import cv2
import numpy as np

from scoring.errors import InputError

__all__ = [
    "long_axis",
    "CROP_W",
    "CROP_H",
    "CROP_MARGIN",
    "order_polygon",
    "crop_to_image",
    "expand_polygon",
    "crop_corners",
    "rectify",
    "points_in_polygon",
    "obb_to_polygon",
    "obb_to_polygons",
    "polygon_to_xyxy",
    "iou_matrix",
    "inside_fractions",
    "polygon_intersections",
    "polygon_iou_matrix",
]

#: Width of the canonical tile crop in pixels (the tile's short side).
CROP_W: int = 96
#: Height of the canonical tile crop in pixels (the tile's long side).
CROP_H: int = 192
#: Fraction of each side length added as a border on each side before rectifying.
CROP_MARGIN: float = 0.08


def _as_quad(poly) -> np.ndarray:
    """Validate and convert to a float64 (4, 2) array; raises InputError naming the value."""
    arr = np.asarray(poly, dtype=np.float64)
    if arr.shape != (4, 2):
        raise InputError(f"polygon must have shape (4, 2), got {arr.shape}: {poly!r}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"polygon has non-finite coordinates: {poly!r}")
    return arr


def side_pairs(poly) -> tuple[float, float]:
    """Mean lengths (px) of a quadrilateral's two pairs of opposite sides, (sides 0 and 2,
    sides 1 and 3), for corners in order around the outline (any start)."""
    p = _as_quad(poly).astype(np.float64)
    side = np.linalg.norm(np.roll(p, -1, 0) - p, axis=1)  # side i: corner i -> i+1
    return float(side[0] + side[2]) / 2, float(side[1] + side[3]) / 2


def long_axis(polygon: np.ndarray) -> float:
    """The direction of an outline's long sides (float (4, 2) px, corners in order around
    it): degrees in [0, 180)."""
    p = np.asarray(polygon, np.float64).reshape(4, 2)
    a, b = side_pairs(p)
    d = (p[1] - p[0]) + (p[2] - p[3]) if a >= b else (p[2] - p[1]) + (p[3] - p[0])
    return float(np.degrees(np.arctan2(d[1], d[0])) % 180.0)


def order_polygon(poly) -> np.ndarray:
    """Put a tile quadrilateral's corners in the project's canonical order.

    Corners are sorted clockwise in image coordinates (y down: top-left, top-right, ...) by
    angle around the centroid, so any input order (including a self-crossing one) gives the same
    result. The start corner is chosen so that corners 0 -> 1 form a short side and 1 -> 2 a long
    side (sides are compared as the mean of the two opposite side lengths). Of the two short
    sides, the one whose midpoint is higher in the image (smaller y; ties: smaller x) comes
    first, so the rectified crop is upright. For a square (both side pairs equal within 1e-9
    relative) the side pair starting at the corner sorted first is taken as the short one:
    deterministic, no error.

    Args:
        poly: array-like (4, 2) of ``(x, y)`` pixel coordinates, any order.

    Returns:
        float32 array (4, 2), canonical order.

    Raises:
        InputError: the input is not (4, 2) or has non-finite values.
    """
    p = _as_quad(poly)
    c = p.mean(0)
    ang = np.arctan2(p[:, 1] - c[1], p[:, 0] - c[0])
    # angle increases clockwise on screen because y points down
    p = p[np.argsort(ang, kind="stable")]
    a, b = side_pairs(p)
    start = 0 if a <= b * (1 + 1e-9) else 1
    # the two candidate starts (start, start+2) each begin a short side
    cands = (start, start + 2)
    mids = [(p[s] + p[(s + 1) % 4]) / 2 for s in cands]
    key = [(round(m[1], 6), round(m[0], 6)) for m in mids]
    s = cands[0] if key[0] <= key[1] else cands[1]
    return np.roll(p, -s, 0).astype(np.float32)


def expand_polygon(poly, margin: float = CROP_MARGIN) -> np.ndarray:
    """Enlarge a polygon about its centroid by a border of ``margin`` x each side's length.

    Each corner ``p`` becomes ``c + (p - c) * (1 + 2 * margin)`` (c the centroid). For a
    rectangle w x h this adds a border ``margin * w`` on both ends of the w side and
    ``margin * h`` on both ends of the h side. Order of the corners is kept.

    Args:
        poly: array-like (..., 4, 2) pixels.
        margin: fraction (>= 0; 0 returns the polygon unchanged).

    Returns:
        float32 array of the same shape.

    Raises:
        InputError: margin negative or not finite.
    """
    if not np.isfinite(margin) or margin < 0:
        raise InputError(f"margin must be a finite fraction >= 0, got {margin!r}")
    p = np.asarray(poly, dtype=np.float64)
    c = p.mean(-2, keepdims=True)
    return (c + (p - c) * (1.0 + 2.0 * margin)).astype(np.float32)


def crop_corners(size: tuple[int, int] = (CROP_W, CROP_H)) -> np.ndarray:
    """Destination corners of the crop, float32 (4, 2): (0,0), (W,0), (W,H), (0,H)."""
    w, h = size
    return np.array([[0, 0], [w, 0], [w, h], [0, h]], dtype=np.float32)


def crop_to_image(points, polygon, margin: float = CROP_MARGIN,
                  size: tuple[int, int] = (CROP_W, CROP_H)) -> np.ndarray:
    """Map points from a tile's crop (:func:`rectify` with the same polygon, margin and size)
    back to image pixels.

    Args:
        points: array-like (n, 2) crop pixels (e.g. spot centres).
        polygon: array-like (4, 2) the tile's corners in image pixels, any order.

    Returns:
        float64 (n, 2) image pixels ((0, 2) for no points).
    """
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    if not len(pts):
        return pts
    src = expand_polygon(order_polygon(polygon), margin)
    M = cv2.getPerspectiveTransform(crop_corners(size), src.astype(np.float32))
    return cv2.perspectiveTransform(pts.reshape(-1, 1, 2), M).reshape(-1, 2)


def rectify(image: np.ndarray, polygon, margin: float = CROP_MARGIN,
            size: tuple[int, int] = (CROP_W, CROP_H)) -> tuple[np.ndarray, np.ndarray]:
    """Warp one tile to the canonical upright crop.

    The polygon is ordered by :func:`order_polygon`, enlarged by :func:`expand_polygon`, and its
    corners 0, 1, 2, 3 are mapped to the crop's (0,0), (W,0), (W,H), (0,H) by
    ``cv2.getPerspectiveTransform``; the crop is sampled with ``cv2.warpPerspective``
    (bilinear, border replicated when the polygon leaves the image).

    Args:
        image: uint8 array (H, W, 3) BGR (a (H, W) grey image gives a (CROP_H, CROP_W) crop).
        polygon: array-like (4, 2) tile corners in image pixels, any order.
        margin: border fraction, default :data:`CROP_MARGIN`.
        size: ``(width, height)`` of the crop in pixels, default (CROP_W, CROP_H).

    Returns:
        ``(crop, M)``: crop uint8 (size[1], size[0], 3); M float64 (3, 3) homography mapping
        image pixels to crop pixels (``cv2.perspectiveTransform(pts, M)``); its inverse maps
        crop detections back to the image.

    Raises:
        InputError: bad polygon, margin or image.
    """
    img = np.asarray(image)
    if img.ndim not in (2, 3) or img.size == 0:
        raise InputError(f"image must be a non-empty (H, W[, 3]) array, got shape {img.shape}")
    src = expand_polygon(order_polygon(polygon), margin)
    M = cv2.getPerspectiveTransform(src.astype(np.float32), crop_corners(size))
    crop = cv2.warpPerspective(img, M, (int(size[0]), int(size[1])), flags=cv2.INTER_LINEAR,
                               borderMode=cv2.BORDER_REPLICATE)
    return crop, M.astype(np.float64)


def obb_to_polygons(xywhr) -> np.ndarray:
    """Oriented boxes (n, 5) ``cx, cy, w, h, angle_rad`` -> corner polygons (n, 4, 2) float32.

    Same corner order as ultralytics ``ops.xywhr2xyxyxyxy``: with ``u = (w/2)(cos, sin)`` and
    ``v = (h/2)(-sin, cos)``, the corners are ``c+u+v, c+u-v, c-u-v, c-u+v``. Angle in radians,
    positive turning x towards y (clockwise on screen).
    """
    b = np.asarray(xywhr, dtype=np.float64).reshape(-1, 5)
    c = b[:, None, 0:2]
    cos, sin = np.cos(b[:, 4]), np.sin(b[:, 4])
    u = np.stack([b[:, 2] / 2 * cos, b[:, 2] / 2 * sin], 1)[:, None, :]
    v = np.stack([-b[:, 3] / 2 * sin, b[:, 3] / 2 * cos], 1)[:, None, :]
    sgn_u = np.array([1, 1, -1, -1], dtype=np.float64)[None, :, None]
    sgn_v = np.array([1, -1, -1, 1], dtype=np.float64)[None, :, None]
    return (c + sgn_u * u + sgn_v * v).astype(np.float32)


def obb_to_polygon(cx: float, cy: float, w: float, h: float, angle_rad: float) -> np.ndarray:
    """One oriented box -> corners float32 (4, 2); see :func:`obb_to_polygons` for the order."""
    return obb_to_polygons([[cx, cy, w, h, angle_rad]])[0]


def polygon_to_xyxy(poly) -> np.ndarray:
    """Bounding boxes of polygons: (..., k, 2) -> float32 (..., 4) ``x1, y1, x2, y2`` px."""
    p = np.asarray(poly, dtype=np.float32)
    return np.concatenate([p.min(-2), p.max(-2)], -1)


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Intersection over union of axis-aligned boxes.

    Args:
        a: (n, 4) xyxy px; b: (m, 4) xyxy px.

    Returns:
        float64 (n, m).
    """
    if len(a) == 0 or len(b) == 0:
        return np.zeros((len(a), len(b)))
    a = np.asarray(a, np.float64)[:, None]
    b = np.asarray(b, np.float64)[None]
    iw = np.clip(np.minimum(a[..., 2], b[..., 2]) - np.maximum(a[..., 0], b[..., 0]), 0, None)
    ih = np.clip(np.minimum(a[..., 3], b[..., 3]) - np.maximum(a[..., 1], b[..., 1]), 0, None)
    inter = iw * ih
    area_a = (a[..., 2] - a[..., 0]) * (a[..., 3] - a[..., 1])
    area_b = (b[..., 2] - b[..., 0]) * (b[..., 3] - b[..., 1])
    return inter / np.maximum(area_a + area_b - inter, 1e-9)


def convex_intersection(a: np.ndarray, b: np.ndarray) -> tuple[float, np.ndarray | None]:
    """The intersection of two convex polygons: the one call of ``cv2.intersectConvexConvex``
    in the project (:func:`polygon_intersections` builds IoU, containment and overlap on it).

    Args:
        a, b: float (k, 2) px, convex (k >= 3; each is replaced by its convex hull).

    Returns:
        ``(area, polygon)``: the intersection's area px² and its outline, float32 (p, 2) px, or
        None where they do not meet.
    """
    ha = cv2.convexHull(np.asarray(a, np.float32).reshape(-1, 2)).reshape(-1, 2)
    hb = cv2.convexHull(np.asarray(b, np.float32).reshape(-1, 2)).reshape(-1, 2)
    area, poly = cv2.intersectConvexConvex(ha, hb)
    return float(area), (None if poly is None or len(poly) < 3 else poly.reshape(-1, 2))


def polygon_intersections(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                   np.ndarray]:
    """Exact intersection areas of convex outlines: the one place the project intersects
    polygons (IoU, containment and overlap are all built on it).

    Args:
        a: float (n, k, 2) px; b: float (m, k, 2) px; convex outlines (k >= 3).

    Returns:
        ``(inter, area_a, area_b)``: float64 (n, m) intersection areas px² (exact convex
        intersection, ``cv2.intersectConvexConvex`` of the convex hulls; pairs whose bounding
        boxes do not overlap are 0 without computing), float64 (n,) and (m,) areas px².
    """
    a = np.asarray(a, np.float32)
    b = np.asarray(b, np.float32)
    a = a.reshape(len(a), -1, 2) if a.size else np.zeros((0, 4, 2), np.float32)
    b = b.reshape(len(b), -1, 2) if b.size else np.zeros((0, 4, 2), np.float32)
    inter = np.zeros((len(a), len(b)))
    ha = [cv2.convexHull(p).reshape(-1, 2) for p in a]
    hb = [cv2.convexHull(p).reshape(-1, 2) for p in b]
    area_a = np.array([float(cv2.contourArea(p)) for p in ha])
    area_b = np.array([float(cv2.contourArea(p)) for p in hb])
    if not len(a) or not len(b):
        return inter, area_a, area_b
    alo, ahi, blo, bhi = a.min(1), a.max(1), b.min(1), b.max(1)
    touch = ((alo[:, None, 0] < bhi[None, :, 0]) & (blo[None, :, 0] < ahi[:, None, 0])
             & (alo[:, None, 1] < bhi[None, :, 1]) & (blo[None, :, 1] < ahi[:, None, 1]))
    for i, j in zip(*np.nonzero(touch)):
        inter[i, j] = convex_intersection(ha[i], hb[j])[0]
    return inter, area_a, area_b


def polygon_iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Polygon IoU of convex outlines.

    Args:
        a: float (n, 4, 2) px; b: float (m, 4, 2) px.

    Returns:
        float64 (n, m) IoU (:func:`polygon_intersections`; 0 where the union is empty).
    """
    inter, aa, ab = polygon_intersections(a, b)
    union = aa[:, None] + ab[None, :] - inter
    return np.divide(inter, union, out=np.zeros_like(inter), where=union > 0)


def inside_fractions(polygons: np.ndarray) -> np.ndarray:
    """How much of each tile outline lies inside each other one.

    Args:
        polygons: float (n, 4, 2) convex outlines, px.

    Returns:
        float64 (n, n): ``[i, j]`` = area of (i intersect j) / area of i (0 on the diagonal;
        :func:`polygon_intersections`).
    """
    polys = np.asarray(polygons, np.float32).reshape(-1, 4, 2)
    inter, areas, _ = polygon_intersections(polys, polys)
    np.fill_diagonal(inter, 0.0)
    return inter / np.maximum(areas, 1e-6)[:, None]


def points_in_polygon(points, polygon) -> np.ndarray:
    """Even-odd test of many points against one polygon (vectorised).

    Args:
        points: float array (n, 2) px.
        polygon: float array (k, 2) px, k >= 3.

    Returns:
        bool array (n,); points on an edge may go either way.
    """
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    poly = np.asarray(polygon, dtype=np.float64).reshape(-1, 2)
    x, y = pts[:, 0:1], pts[:, 1:2]  # (n, 1)
    x1, y1 = poly[:, 0][None], poly[:, 1][None]  # (1, k)
    x2, y2 = np.roll(poly[:, 0], -1)[None], np.roll(poly[:, 1], -1)[None]
    crosses = (y1 > y) != (y2 > y)
    with np.errstate(divide="ignore", invalid="ignore"):
        xc = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
    hits = crosses & (x < xc)
    return (hits.sum(1) % 2) == 1
