"""Hand-made tile reads (upright 40 x 80 px tiles) and a four-position layout: shared by the
table and open-tile tests."""

from __future__ import annotations

import numpy as np

from vision.recognition.decode import TileRead
from vision.table.rounds import Layout

TW, TH = 40.0, 80.0  # tile size px (upright)


def tile(face, cx, cy, state=None, conf=0.95):
    poly = np.array([[cx - TW / 2, cy - TH / 2], [cx + TW / 2, cy - TH / 2],
                     [cx + TW / 2, cy + TH / 2], [cx - TW / 2, cy + TH / 2]], np.float32)
    st = state or ("face_up" if face else "unknown")
    return TileRead(face if st == "face_up" else None, st, conf, poly,
                    np.r_[poly.min(0), poly.max(0)], reason=None if st == "face_up" else "test")


def position_tiles(faces, x0, y0, hand_gap=60.0):
    """Two hands: faces[0:2] side by side, faces[2:4] side by side, hand_gap apart."""
    out = []
    for h in range(2):
        for k in range(2):
            f = faces[2 * h + k]
            out.append(tile(f, x0 + h * (2 * TW + hand_gap) + k * (TW + 2), y0))
    return out


def box(x0, y0, x1, y1):
    return [[x0, y0], [x1, y0], [x1, y1], [x0, y1]]


LAYOUT = Layout.from_dict({
    "table_id": "t9", "rules": "pa", "commission": "0.05",
    "positions": {"dealer": box(700, 0, 1200, 300), "1": box(1300, 500, 1900, 1000),
                  "2": box(800, 500, 1290, 1000), "3": box(200, 500, 790, 1000)},
})
