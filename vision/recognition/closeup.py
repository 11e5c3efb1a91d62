"""Close-ups of one tile (catalogue photos, drawings, labelling crops) in still images.

The tile model is trained on tables and on close-ups filling 40-100 % of the frame; on a
picture whose tile fills it, or on a real catalogue picture, its outline is loose or missing
(models/MODEL_CARD.md). These functions give such a picture a context border
(:func:`context_pad`), find the picture's own tile outline (:func:`single_tile_outline`),
propose it as one more candidate (:func:`picture_candidate`) and combine its read with the
tile model's (:func:`merge_picture_read`). Every candidate is still verified by the decoder's
two reads.
"""

from __future__ import annotations

import numpy as np

from vision.recognition.decode import TileRead, tile_aspect
from vision.detections import TILE, Detections
from vision.geometry import inside_fractions, order_polygon
from vision.schema import UnreadReason

__all__ = ["context_pad", "single_tile_outline", "picture_candidate", "merge_picture_read",
           "PICTURE_OUTLINE_CONFIDENCE", "PICTURE_MIN_AREA", "PICTURE_MAX_MODEL_TILES"]

def context_pad(image: np.ndarray, fraction: float) -> tuple[np.ndarray, int]:
    """Add a border of ``fraction`` x the image's longer side around ``image``, filled with
    neutral grey (128, as transparent pixels are composited by :mod:`vision.io.capture`): a dark
    tile and a light tile both stand out from it, where a border of the picture's own edge
    colour would hide a black tile filling a black picture.

    A close-up whose tile fills the whole picture (a catalogue photo, a single-tile drawing)
    lies outside the tile model's training range (close-ups fill 40-95 % of the frame, see
    vision/synth/render.py); the border puts it back inside without changing any pixel of the tile.

    Args:
        image: uint8 (H, W, 3) BGR.
        fraction: border width as a fraction of max(H, W) (0 = none).

    Returns:
        ``(padded image, border px)``; detections on the padded image map back by subtracting
        the border from x and y.
    """
    import cv2

    b = int(round(float(fraction) * max(image.shape[:2])))
    if b <= 0:
        return image, 0
    return cv2.copyMakeBorder(image, b, b, b, b, cv2.BORDER_CONSTANT, value=(128, 128, 128)), b


def single_tile_outline(image: np.ndarray) -> np.ndarray:
    """The outline of the one tile a close-up shows (a catalogue photo or drawing of a single
    tile, as in the third-party real pictures the project is checked on, scripts/eval_realdata.py): the minimum-area rectangle around the pixels that differ
    from the picture's edge colour, or the whole picture when nothing stands out.

    Args:
        image: uint8 (H, W, 3) BGR; transparent pixels already composited on grey.

    Returns:
        float32 (4, 2) polygon, image px.
    """
    import cv2

    h, w = image.shape[:2]
    whole = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
    ring = np.concatenate([image[0], image[-1], image[:, 0], image[:, -1]]).reshape(-1, 3)
    edge = np.median(ring, axis=0)
    mask = (np.abs(image.astype(np.int16) - edge).max(axis=2) > 40).astype(np.uint8)
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
    if not contours:
        return whole
    c = max(contours, key=cv2.contourArea)
    if cv2.contourArea(c) < 0.05 * h * w:  # nothing tile-sized stands out (the tile fills it)
        return whole
    return cv2.boxPoints(cv2.minAreaRect(c)).astype(np.float32)


PICTURE_OUTLINE_CONFIDENCE = 0.9  # tile confidence given to a close-up's picture outline
PICTURE_MIN_AREA = 0.3            # the outline must cover this fraction of the picture
PICTURE_MAX_MODEL_TILES = 3       # more confident tile-model tiles than this: a table picture


def picture_candidate(image: np.ndarray, dets: Detections) -> Detections:
    """The close-up proposal of a still image: when the picture is a close-up of one tile (a
    catalogue photo, a drawing, a labelling tool's crop), its outline from
    :func:`single_tile_outline` as one more face-up tile candidate, for the decoder to verify
    like any other (both reads must agree, or it is unknown).

    Proposed only when the outline is tile-shaped (sides 1.5-3.4 : 1; the decoder checks
    1.6-3.2), covers at least PICTURE_MIN_AREA of the picture, and the tile model found at most
    PICTURE_MAX_MODEL_TILES tiles with confidence >= 0.5 (a table picture has more). Why: the
    tile model is trained on tables and on close-ups filling 40-100 % of the frame, and on
    real catalogue pictures its outlines are loose or missing (models/MODEL_CARD.md); the
    picture's own edge is the better outline there.

    Args:
        image: uint8 (H, W, 3) BGR.
        dets: the tile model's detections on ``image`` (px).

    Returns:
        Detections with 0 or 1 rows: class TILE, confidence PICTURE_OUTLINE_CONFIDENCE.
    """
    h, w = image.shape[:2]
    confident = int(((dets.confidence >= 0.5) & (dets.class_id == TILE)).sum()) if len(dets) else 0
    if confident > PICTURE_MAX_MODEL_TILES:
        return Detections.empty()
    import cv2

    poly = order_polygon(single_tile_outline(image))
    area = float(cv2.contourArea(poly.astype(np.float32)))
    if not (1.5 <= tile_aspect(poly) <= 3.4) or area < PICTURE_MIN_AREA * h * w:
        return Detections.empty()
    return Detections.from_polygons(poly[None], [PICTURE_OUTLINE_CONFIDENCE], [TILE])


def merge_picture_read(reads: list[TileRead], cand: TileRead) -> list[TileRead]:
    """Combine the tile model's reads of a close-up with the picture outline's read.

    The picture read replaces the model reads lying inside it (half or more of their outline
    within its outline, :func:`inside_fractions`) when it names a face and none of them names a different one; when one
    does, every read involved becomes unknown ("close-up reads disagree"): a disagreement is
    never settled. An unknown picture read is dropped (the model reads stand).

    Args:
        reads: reads of the tile model's detections (image px).
        cand: the read of :func:`picture_candidate`'s outline.

    Returns:
        the reads to report.
    """
    if cand.face is None:
        return list(reads)
    if not reads:
        return [cand]
    frac = inside_fractions(np.stack([r.polygon for r in reads] + [cand.polygon]))[:-1, -1]
    inside = [r for r, f in zip(reads, frac) if f >= 0.5]
    rest = [r for r, f in zip(reads, frac) if f < 0.5]
    others = sorted({r.face for r in inside if r.face is not None and r.face != cand.face})
    if others:
        why = f"picture outline {cand.face}, tile model {', '.join(others)}"
        return [*rest, *(r.as_unknown(UnreadReason.CLOSEUP_DISAGREE, why)
                         for r in [cand, *inside])]
    return [*rest, cand]
