"""The recognition engine's decoder: a picture's tile detections read as tiles
(:class:`vision.recognition.decode.TileRead`) -- the pip model on every rectified outline, the
identity cache in video (:mod:`vision.recognition.identity`), the set's spot colours on a still
(:mod:`vision.recognition.spot_colours`). :meth:`vision.recognition.engine.RecognitionEngine.decode`
is :func:`decode_reads`.
"""

from __future__ import annotations

import numpy as np

from vision.detections import TILE, TILE_BACK, Detections
from vision.geometry import rectify
from vision.recognition.decode import TileRead, read_from_pips, run_pip_detector
from vision.recognition.spot_colours import recolour_unknowns
from vision.schema import UnreadReason

__all__ = ["decode_reads"]


def decode_reads(engine, image: np.ndarray, dets: Detections, use_cache: bool = True
                 ) -> tuple[list[TileRead], int]:
    """Reads for every detection; returns ``(reads, number decoded afresh)``.

    With ``use_cache`` (video) identities are reused and decoding is budgeted by the
    identity cache (:mod:`vision.recognition.identity`); without it (still images) every
    face-up tile is decoded.
    """
    n = len(dets)
    reads: list[TileRead | None] = [None] * n
    for i in range(n):
        if int(dets.class_id[i]) == TILE_BACK:
            c = float(dets.confidence[i])
            reads[i] = TileRead(None, "face_down", c, dets.polygon[i].copy(),
                                dets.xyxy[i].copy(), tile_confidence=c)
    backs: set[int] = set()
    if use_cache:
        todo = engine.cache.plan(image, dets, reads)
    else:
        todo = [i for i in range(n) if int(dets.class_id[i]) == TILE]
        # a still's tile backs are read too: a near-blank face (1-1: two red spots on a
        # dark face) is taken for a back by the tile model; a back has no spots, so its
        # reads name no face and it stays face down
        backs = {i for i in range(n) if int(dets.class_id[i]) == TILE_BACK}
        todo += sorted(backs)
    rec = engine.config
    crops = [rectify(image, dets.polygon[i])[0] for i in todo]
    pips = run_pip_detector(engine.pip_detector, crops)
    for i, p, crop in zip(todo, pips, crops):
        r = read_from_pips(p, dets.polygon[i], dets.xyxy[i], float(dets.confidence[i]),
                           rec.min_confidence, rec.allow_diagonal_two, crop=crop)
        if i in backs and r.state != "face_up":
            n = r.spots_counted or 0
            if n < 2:
                continue  # no spots: stays the face-down read
            # spots on a "back" (the fewest a face shows is two, 1-1): a face-up tile
            # not read, never a stack to set aside beside a seat's hand
            r = r.as_unknown(UnreadReason.BACK_SHOWS_SPOTS, r.reason, n=n)
        reads[i] = r
    if use_cache:
        engine.cache.commit(image, dets, {i: reads[i] for i in todo})
        return [r for r in reads if r is not None], len(todo)
    # a still reading: spots the pip model was unsure of take the colours of the set's
    # spots on this picture's identified tiles (vision.recognition.spot_colours)
    out = recolour_unknowns([r for r in reads if r is not None], rec.min_confidence,
                            rec.allow_diagonal_two)
    return out, len(todo)
