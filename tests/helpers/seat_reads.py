"""Hand-made tile reads of a full table placed by the table model (vision.table.rounds.SEAT_MODEL):
shared by the seat-safety and layout-proposal tests."""

from __future__ import annotations

import numpy as np

from vision.recognition.decode import TileRead
from vision.table.rounds import SEAT_MODEL

FRAME = (1920, 1080)
TW, TH = 38.0, 84.0  # tile size px (upright), like a 1080p table frame

DEAL = {  # one 32-tile set
    "dealer": ["6-6", "4-5", "1-3", "2-2"],
    "1": ["1-1", "3-6", "5-5", "1-6"],
    "2": ["2-4", "1-2", "4-4", "3-4"],
    "3": ["5-6", "4-6", "1-5", "2-3"],
    "4": ["3-3", "2-6", "1-4", "2-5"],
    "5": ["6-6", "3-5", "1-3", "2-2"],
    "6": ["1-1", "5-5", "1-6", "4-4"],
    "7": ["5-6", "4-6", "1-5", "3-3"],
}


def tile(face, cx, cy, state=None):
    poly = np.array([[cx - TW / 2, cy - TH / 2], [cx + TW / 2, cy - TH / 2],
                     [cx + TW / 2, cy + TH / 2], [cx - TW / 2, cy + TH / 2]], np.float32)
    st = state or ("face_up" if face else "unknown")
    return TileRead(face if st == "face_up" else None, st, 0.95, poly,
                    np.r_[poly.min(0), poly.max(0)], reason=None if st == "face_up" else "test")


def place(pos):
    mx, my = SEAT_MODEL[pos]
    return FRAME[0] / 2 + FRAME[1] * mx, FRAME[1] / 2 + FRAME[1] * my


def position(pos, faces, hand_gap=30.0, dx=0.0, dy=0.0):
    """Two hands of two side-by-side tiles, ``hand_gap`` px apart, centred on the position's
    place of the table model (shifted by dx, dy px)."""
    cx, cy = place(pos)
    span = 3 * (TW + 2) + hand_gap - 2
    x0 = cx + dx - span / 2
    out = []
    for h in range(2):
        for k in range(2):
            out.append(tile(faces[2 * h + k], x0 + h * (2 * TW + 2 + hand_gap) + k * (TW + 2),
                            cy + dy))
    return out


def table(deal=DEAL, **kw):
    return [r for p, f in deal.items() for r in position(p, f, **kw.get(p, {}))]


def named(groups):
    return {p: sorted(r.face or "?" for r in ts) for p, ts in groups.items()}


def truth(deal):
    return {p: sorted(f) for p, f in deal.items()}
