"""A drawn flush block and stand-ins for the decoder and the flush guards, shared by the
refinement tests (tests/test_refine.py, tests/test_chirality.py)."""

from __future__ import annotations

import cv2
import numpy as np

from vision.geometry import polygon_iou_matrix
from vision.recognition.decode import TileRead
from vision.recognition.refine import refine_unknowns


def box(x1, y1, x2, y2):
    return np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]], np.float32)


def read(face, poly, state=None):
    st = state or ("face_up" if face else "unknown")
    return TileRead(face, st, 0.9, poly, np.r_[poly.min(0), poly.max(0)],
                    reason=None if st == "face_up" else "test")


FELT = (40, 120, 40)


def picture():
    """Green felt 400 x 400 with two black tiles 50 x 100 apart (identified elsewhere) and a
    block of two black tiles flush at x 200-300, y 200-300 (white spots)."""
    img = np.zeros((400, 400, 3), np.uint8)
    img[:] = FELT
    for x1, y1, x2, y2 in ((20, 20, 70, 120), (80, 20, 130, 120), (200, 200, 300, 300)):
        cv2.rectangle(img, (x1, y1), (x2 - 1, y2 - 1), (10, 10, 10), -1)
    for cx, cy in ((215, 220), (235, 280), (265, 230), (285, 270)):
        cv2.circle(img, (cx, cy), 4, (250, 250, 250), -1)
    return img


KNOWN = [read("2-2", box(20, 20, 70, 120)), read("6-6", box(80, 20, 130, 120))]
LEFT, RIGHT = box(200, 200, 250, 300), box(250, 200, 300, 300)  # the block's tiles, lengthwise
TOP, BOTTOM = box(200, 200, 300, 250), box(200, 250, 300, 300)  # cut across


def decoder(truth):
    """A stand-in for the engine's decoder: an outline on one of ``truth``'s polygons (IoU >=
    0.8) reads its face, any other outline is unknown."""
    polys = [p for p, _ in truth]

    def run(q, conf):
        iou = polygon_iou_matrix(np.asarray(q, np.float32), np.stack(polys))
        return [read(truth[int(np.argmax(v))][1] if v.max() >= 0.8 else None, p)
                for p, v in zip(q, iou)]
    return run


def flush_guard(also=()):
    """A stand-in for the flush guards: the tile on LEFT becomes unknown while no identified
    tile lies on RIGHT (unread spots flush beside it); so does every tile of a face in
    ``also``. Like the real guards it only ever removes faces."""
    def run(rs):
        right = any(r.state == "face_up" and polygon_iou_matrix(r.polygon[None], RIGHT[None])[0, 0]
                    > 0.8 for r in rs)
        out = []
        for r in rs:
            on_left = polygon_iou_matrix(r.polygon[None], LEFT[None])[0, 0] > 0.8
            if r.state == "face_up" and ((on_left and not right) or r.face in also):
                r = read(None, r.polygon)
            out.append(r)
        return out
    return run


def refit_with(dec, calls=None):
    def run(rs, only=None):
        if calls is not None:
            calls.append(len(rs))
        return refine_unknowns(rs, picture(), dec, only=only)
    return run
