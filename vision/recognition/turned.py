"""A still picture's unknown tiles read again on the picture turned by 45 degrees.

Why. The tile model outlines a tile from the picture's pixel grid, and how well depends on the
tile's angle to that grid: hands laid flush and level at a slant (two tiles forming a square
block, its seam on the diagonal) are where its outlines go across blocks and off tiles
(models/MODEL_CARD.md, Limitations). The same picture turned by 45 degrees -- the turn farthest
from the grid's own axes (a quarter turn gives the same grid back) -- puts every tile at another
angle to the grid: a second, independent reading of the same pixels, as each input size of
:mod:`vision.recognition.scales` is. The measured gain is in the model card ("Table scenes the
renderer never drew").

The rule (:meth:`vision.recognition.engine.RecognitionEngine._read_still`, ``turn``), only
where the picture's own still reading leaves a face-up tile unknown:

1. the picture is turned by :data:`TURN` degrees about its centre on a canvas that holds all
   of it (:func:`turn_image`; the border is the picture's median colour, so no tile is
   mirrored into it) and read as a still picture with every strategy -- input sizes, second
   look, second model, refit and the flush guards -- but no further turn;
2. each tile that reading identifies whose outline, turned back (:func:`turn_back`), lies
   inside the picture is decoded once more on the picture's own pixels with that outline, and
   is kept only where that decode names the same face (:func:`agreeing`);
3. what is kept is added as the second tile model's tiles are
   (:func:`vision.recognition.fill.fill_from_second_model`): only where the picture's own
   reading identified no tile, never where its input sizes read two faces or named another
   face on that outline;
4. the added tiles meet the second model's veto
   (:func:`vision.recognition.fill.disputed_outlines`: a tile the second model outlines
   otherwise on this picture becomes unknown), and the reading with them meets the flush
   guards again in the picture's own frame: a tile doubted for the unread surface beside it
   is answered by its neighbour read, a box across two flush tiles read the same way twice
   is not and stays unknown.

Why it cannot give a wrong face on its own: an added face is read twice and agrees -- by the
turned picture's reading, through every check a still reading makes, and by the decoder on the
picture itself (two spot reads that must agree, spot shapes, colours) --; it never replaces or
contradicts a tile the picture's own reading identified or a face one of its input sizes
named; and the second model's veto and the flush guards judge the result as they judge any
reading. It only ever turns an unknown tile (or unread felt) into a read one where both
readings agree.

Public API: :func:`turned_look`, :func:`turn_image`, :func:`turn_back`, :func:`agreeing`,
:data:`TURN`.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

import cv2
import numpy as np

from vision.recognition.decode import TileRead

__all__ = ["turn_image", "turn_back", "agreeing", "turned_look", "TURN"]

#: The turn of the second reading, degrees counter-clockwise (module docstring).
TURN: float = 45.0


def turn_image(image: np.ndarray, degrees: float = TURN) -> tuple[np.ndarray, np.ndarray]:
    """The picture turned about its centre on a canvas that holds all of it.

    Args:
        image: uint8 (H, W, 3) BGR (or (H, W) grey).
        degrees: counter-clockwise turn.

    Returns:
        ``(turned, M)``: the turned picture, uint8 (H', W'[, 3]), its border filled with the
        picture's median colour; ``M``: float64 (2, 3), the affine map from picture px to
        turned px (``x' = M[:, :2] @ x + M[:, 2]``).

    Raises:
        ValueError: for an empty picture.
    """
    if image.size == 0:
        raise ValueError(f"cannot turn an empty picture of shape {image.shape}")
    h, w = image.shape[:2]
    m = cv2.getRotationMatrix2D((w / 2.0, h / 2.0), float(degrees), 1.0)
    c, s = abs(m[0, 0]), abs(m[0, 1])
    nw, nh = int(math.ceil(w * c + h * s)), int(math.ceil(w * s + h * c))
    m[0, 2] += nw / 2.0 - w / 2.0
    m[1, 2] += nh / 2.0 - h / 2.0
    step = max(1, int(math.sqrt(h * w / 250_000)))  # the median of a quarter million pixels
    sample = image[::step, ::step].reshape(-1, image.shape[2] if image.ndim == 3 else 1)
    border = tuple(float(v) for v in np.median(sample, axis=0))
    turned = cv2.warpAffine(image, m, (nw, nh), flags=cv2.INTER_LINEAR,
                            borderMode=cv2.BORDER_CONSTANT, borderValue=border)
    return turned, m


def turn_back(reads: Sequence[TileRead], m: np.ndarray, shape: tuple[int, ...]
              ) -> tuple[list[TileRead], np.ndarray]:
    """The identified reads of a turned picture whose outlines, turned back, lie inside the
    picture.

    Args:
        reads: reads of the turned picture (turned px).
        m: float64 (2, 3), :func:`turn_image`'s map (picture px -> turned px).
        shape: the picture's shape ``(H, W, ...)``.

    Returns:
        ``(kept, polygons)``: the kept reads (turned px, unchanged) and their outlines in
        picture px, float32 (n, 4, 2), corner order kept (the decoder's crop is the same tile
        the same way up).
    """
    inv = cv2.invertAffineTransform(np.asarray(m, np.float64))
    h, w = shape[:2]
    kept, polys = [], []
    for r in reads:
        if r.state != "face_up" or r.face is None:
            continue
        p = np.asarray(r.polygon, np.float64) @ inv[:, :2].T + inv[:, 2]
        if (p[:, 0] >= 0).all() and (p[:, 0] <= w).all() and (p[:, 1] >= 0).all() \
                and (p[:, 1] <= h).all():
            kept.append(r)
            polys.append(p)
    return kept, np.asarray(polys, np.float32).reshape(-1, 4, 2)


def agreeing(turned: Sequence[TileRead], again: Sequence[TileRead]) -> list[TileRead]:
    """The picture's own decodes (``again``, picture px) that name the face the turned
    reading named on the same outline (``turned``, same order and length).

    Raises:
        ValueError: when the two lists differ in length.
    """
    if len(turned) != len(again):
        raise ValueError(f"{len(again)} decodes for {len(turned)} turned reads")
    return [a for t, a in zip(turned, again)
            if a.state == "face_up" and a.face is not None and a.face == t.face]


def turned_look(reads: Sequence[TileRead], image: np.ndarray,
                read_still: Callable[[np.ndarray], Sequence[TileRead]],
                decode: Callable[[np.ndarray, np.ndarray], list[TileRead]],
                fill: Callable[[Sequence[TileRead], Sequence[TileRead]], list[TileRead]],
                degrees: float = TURN) -> list[TileRead]:
    """Steps 1-3 of the rule (module docstring); the caller runs the veto and the flush guards
    (step 4) where anything was added.

    Args:
        reads: the picture's own still reading (picture px).
        image: the picture, uint8 (H, W, 3).
        read_still: reads a picture as a still with every strategy but the turn.
        decode: ``decode(polygons float32 (n, 4, 2) picture px, confidences float32 (n,))``
            -> one :class:`TileRead` per outline, in order, read on ``image``.
        fill: ``fill(reads, added)``: the added tiles where the reading identified none
            (:func:`vision.recognition.fill.fill_from_second_model` with the picture's own
            per-size reads).

    Returns:
        the reading with what the turned picture adds, or ``list(reads)`` when it adds
        nothing (the same objects).
    """
    reads = list(reads)
    turned, m = turn_image(image, degrees)
    got, polys = turn_back(read_still(turned), m, image.shape)
    if not got:
        return reads
    conf = np.asarray([r.tile_confidence for r in got], np.float32)
    keep = agreeing(got, decode(polys, conf))
    if not keep:
        return reads
    return fill(reads, keep)
