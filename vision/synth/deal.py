"""What a rendered table shows before it is drawn: the deal (which faces lie at which
position) and the camera (the homography from the table canvas to the picture). Part of the
synthetic renderer (:mod:`vision.synth.render`).
"""

from __future__ import annotations

import math

import cv2
import numpy as np

from scoring.errors import InputError
from scoring.settle import POSITIONS
from scoring.tiles import STANDARD_SET, TILES_BY_FACE

__all__ = ["random_deal", "check_deal", "camera_homography"]


# ----------------------------------------------------------------------------------------------
# Deals

def random_deal(rng: np.random.Generator) -> dict[str, list[str]]:
    """The 32 tiles shuffled by ``rng``, four to each position (dealer first)."""
    faces = [t.face for t in STANDARD_SET]
    order = rng.permutation(len(faces))
    return {p: [faces[order[4 * i + k]] for k in range(4)] for i, p in enumerate(POSITIONS)}


def check_deal(deal: dict) -> dict[str, list[str]]:
    """Validate a deal dict; raises InputError naming the bad value."""
    if not isinstance(deal, dict):
        raise InputError(f"deal must be a dict position -> 4 faces, got {deal!r}")
    counts: dict[str, int] = {}
    out = {}
    for pos, faces in deal.items():
        if str(pos) not in POSITIONS:
            raise InputError(f"deal: unknown position {pos!r} (expected one of {POSITIONS})")
        if not isinstance(faces, (list, tuple)) or len(faces) != 4:
            raise InputError(f"deal: position {pos!r} must have 4 faces, got {faces!r}")
        norm = []
        for f in faces:
            key = str(f).strip()
            parts = key.replace("/", "-").split("-")
            if len(parts) == 2 and all(p.isdigit() for p in parts):
                key = "-".join(str(v) for v in sorted(int(p) for p in parts))
            if key not in TILES_BY_FACE:
                raise InputError(f"deal: position {pos!r}: not a pai gow face: {f!r}")
            counts[key] = counts.get(key, 0) + 1
            if counts[key] > TILES_BY_FACE[key].copies:
                raise InputError(f"deal: face {key!r} appears more often than the set holds "
                                 f"({TILES_BY_FACE[key].copies})")
            norm.append(key)
        out[str(pos)] = norm
    return out


# ----------------------------------------------------------------------------------------------
# Camera

def camera_homography(rng: np.random.Generator, out_w: int, out_h: int, max_tilt: float,
                      max_roll: float, yaw: float = 0.0):
    """Camera homography from a table canvas to the output image.

    Returns ``(H, canvas_w, canvas_h, origin, down, tilt)``: H float64 (3, 3) canvas px -> output
    px; the canvas covers every output pixel; ``origin`` the canvas point that maps to the output
    centre (scale about 1 there); ``down`` unit vector in the canvas toward the camera (the
    side of a tile seen under tilt); ``tilt`` in degrees.
    """
    tilt = rng.uniform(0, max_tilt)
    k = math.tan(math.radians(tilt)) * 0.36  # perspective strength over half the height
    c = math.cos(math.radians(tilt)) * 0.25 + 0.75  # foreshortening (mild: zoom compensates)
    p = -k / (out_h / 2)
    roll = math.radians(rng.uniform(-max_roll, max_roll))
    yw = math.radians(yaw)
    P = np.array([[1, 0, 0], [0, c, 0], [0, p, 1]], np.float64)
    Ry = np.array([[math.cos(yw), -math.sin(yw), 0], [math.sin(yw), math.cos(yw), 0], [0, 0, 1]])
    Rr = np.array([[math.cos(roll), -math.sin(roll), 0], [math.sin(roll), math.cos(roll), 0], [0, 0, 1]])
    Tout = np.array([[1, 0, out_w / 2], [0, 1, out_h / 2], [0, 0, 1]], np.float64)
    H0 = Tout @ Rr @ P @ Ry  # centred canvas coords -> output
    corners = np.array([[0, 0], [out_w, 0], [out_w, out_h], [0, out_h]], np.float32)[None]
    inv = cv2.perspectiveTransform(corners, np.linalg.inv(H0))[0]
    lo = np.floor(inv.min(0)) - 4
    hi = np.ceil(inv.max(0)) + 4
    T = np.array([[1, 0, lo[0]], [0, 1, lo[1]], [0, 0, 1]], np.float64)
    H = H0 @ T
    cw, ch = int(hi[0] - lo[0]), int(hi[1] - lo[1])
    origin = (-lo[0], -lo[1])
    down = np.array([math.sin(yw), math.cos(yw)])  # canvas direction of output "down"
    return H, cw, ch, origin, down, tilt
