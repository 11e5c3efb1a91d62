"""Pictures of a tile set laid out face up for the set check (``paigow setcheck``), composed
at run time from the single-tile pictures of ``../shared/realdata`` (never copied into the
project; tests skip when the folder is absent).

The tiles stand upright in a grid of 8 columns on a plain felt with gaps between them (a set
shown before play), each scaled to a long side of ``tile_px``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
REALDATA = ROOT.parent / "shared" / "realdata"


def load_faces(folder: str, root: Path = REALDATA) -> dict[str, np.ndarray]:
    """``{face: BGRA uint8 picture cut to the tile, upright}`` of every one-face picture of
    ``folder`` (the first picture of a face wins; cut as ``scripts/eval_composed.py`` does)."""
    import sys

    sys.path.insert(0, str(ROOT / "scripts"))
    from eval_composed import load_tiles

    out: dict[str, np.ndarray] = {}
    for im, face in load_tiles(root, folder):
        out.setdefault(face, im)
    return out


def lay_out(pictures: list[np.ndarray], tile_px: int = 150, cols: int = 8,
            felt=(40, 95, 30), seed: int = 0) -> np.ndarray:
    """The tiles upright in a grid on a plain felt with light noise: BGR uint8."""
    import cv2

    gap = tile_px // 2
    w_cell, h_cell = int(tile_px * 0.62) + gap, tile_px + gap
    rows = (len(pictures) + cols - 1) // cols
    w, h = cols * w_cell + gap, rows * h_cell + gap
    rng = np.random.default_rng(seed)
    img = np.empty((h, w, 3), np.float32)
    img[:] = felt
    img += rng.normal(0, 4, img.shape).astype(np.float32)
    for i, pic in enumerate(pictures):
        ph, pw = pic.shape[:2]
        s = tile_px / ph
        tw = max(int(round(pw * s)), 1)
        tile = cv2.resize(pic, (tw, tile_px), interpolation=cv2.INTER_AREA)
        x0 = gap + (i % cols) * w_cell + (w_cell - gap - tw) // 2
        y0 = gap + (i // cols) * h_cell
        a = tile[:, :, 3:4].astype(np.float32) / 255.0
        roi = img[y0:y0 + tile_px, x0:x0 + tw]
        img[y0:y0 + tile_px, x0:x0 + tw] = roi * (1 - a) + tile[:, :, :3] * a
    return np.clip(img, 0, 255).astype(np.uint8)


def full_set(faces: dict[str, np.ndarray]) -> list[tuple[str, np.ndarray]]:
    """The 32 tiles of one set (a civil face's one picture twice), in rank order."""
    from scoring.tiles import STANDARD_SET

    return [(t.face, faces[t.face]) for t in STANDARD_SET]
