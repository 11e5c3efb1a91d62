"""Rendered tile crops for the crop classifier (issue 40 item 3): tile crop -> face or ``other``.

Each crop is the product's own tile crop (:func:`vision.geometry.rectify`: the outline enlarged
by ``CROP_MARGIN``, long axis vertical, ``CROP_W`` x ``CROP_H``) of a rendered table frame
(:func:`vision.synth.render.render_scene`, the tile model's frames: styles, reds and whites,
glare, blur, noise, JPEG, perspective, occluders, touching and flush hands), with outline
jitter, then squashed to a square of ``CLS_SIZE`` px, as the product feeds the classifier
(:func:`vision.recognition.crosscheck.square_crop`).
Low resolution is what the classifier exists for, so most crops are first brought down to a
tile 20-90 px long and back up (the detail a 720p camera leaves).

Classes (:data:`CLASSIFIER_CLASSES`, ASCII folder names): the 21 faces of a Chinese set
(``scoring.FACES``, ``"1-3"`` ...) and ``other``: outlines that are *not* one tile -- a box
shifted half a tile along either axis, or a crosswise box over the halves of two touching
tiles (the box a flush-laid hand invites, the source of the wrong faces of issue 40 item 4),
and a few face-down tiles. An outline counts as ``other`` only where no labelled tile
overlaps it with IoU >= 0.5.

Layout written (ultralytics' classification folders)::

    OUT/train/<class>/<name>.png
    OUT/val/<class>/<name>.png

Public API: :data:`CLASSIFIER_CLASSES`, :data:`OTHER`, :func:`render_crops`.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import cv2
import numpy as np

from scoring import FACES
from vision.geometry import polygon_iou_matrix, rectify, side_pairs
from vision.recognition.crosscheck import CLS_SIZE
from vision.synth.render import HELD_OUT_SEED, render_scene

__all__ = ["CLASSIFIER_CLASSES", "OTHER", "render_crops"]

OTHER = "other"
#: class names (21 faces in ``scoring.FACES`` order, then ``other``); the trained model's
#: class_ids follow its own names (ultralytics sorts the folders), recorded in its JSON
CLASSIFIER_CLASSES: tuple[str, ...] = tuple(str(f) for f in FACES) + (OTHER,)


def _low_res(crop: np.ndarray, rng: np.random.Generator, long_px: float) -> np.ndarray:
    """Bring an upright crop down to a tile ``long_px`` px long and back up (bilinear)."""
    h, w = crop.shape[:2]
    f = min(1.0, long_px / h)
    if f >= 0.98:
        return crop
    small = cv2.resize(crop, (max(4, round(w * f)), max(8, round(h * f))), interpolation=cv2.INTER_AREA)
    if rng.random() < 0.5:  # a camera's compression at that size
        ok, buf = cv2.imencode(".jpg", small, [cv2.IMWRITE_JPEG_QUALITY, int(rng.uniform(35, 90))])
        small = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)


def _axes(poly: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float, float]:
    """Centre, unit long axis, unit short axis, long and short side of a tile outline."""
    c = poly.mean(0)
    e1, e2 = poly[1] - poly[0], poly[2] - poly[1]
    l1, l2 = float(np.linalg.norm(e1)), float(np.linalg.norm(e2))
    if l1 >= l2:
        return c, e1 / max(l1, 1e-6), e2 / max(l2, 1e-6), l1, l2
    return c, e2 / max(l2, 1e-6), e1 / max(l1, 1e-6), l2, l1


def _box(c: np.ndarray, a: np.ndarray, b: np.ndarray, L: float, W: float) -> np.ndarray:
    return np.array([c - a * L / 2 - b * W / 2, c - a * L / 2 + b * W / 2,
                     c + a * L / 2 + b * W / 2, c + a * L / 2 - b * W / 2], np.float32)


def _off_outline(poly: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """An outline that is not one tile, made from a tile's outline: shifted by about half a
    tile along its long or short axis, or crosswise over the halves of it and its neighbour."""
    c, a, b, L, W = _axes(poly)
    r = rng.random()
    s = 1.0 if rng.random() < 0.5 else -1.0
    if r < 0.3:
        return _box(c + a * s * L * rng.uniform(0.3, 0.7), a, b, L, W)
    if r < 0.55:
        return _box(c + b * s * W * rng.uniform(0.3, 0.7), a, b, L, W)
    t = 1.0 if rng.random() < 0.5 else -1.0  # crosswise: long axis along the tile's width
    return _box(c + b * s * W / 2 + a * t * L / 4, b, a, 2 * W, L / 2)


def render_crops(out: Path, n: int, seed: int, val_fraction: float = 0.05,
                 other_fraction: float = 0.25, progress: bool = True) -> dict[str, int]:
    """Render ``n`` classifier crops under ``out`` (layout in the module docstring).

    Args:
        out: output folder (created).
        n: number of crops (>= 1).
        seed: render seed; scenes take seeds below ``HELD_OUT_SEED`` derived from it.
        val_fraction: share of crops written to ``val/``.
        other_fraction: share of ``other`` crops (off outlines, face-down tiles).
        progress: a tqdm bar.

    Returns:
        crops written per class name.

    Raises:
        ValueError: ``n`` < 1 or a fraction outside [0, 1).
    """
    from tqdm import tqdm

    if n < 1 or not 0 <= val_fraction < 1 or not 0 <= other_fraction < 1:
        raise ValueError(f"bad crop counts: n={n}, val_fraction={val_fraction}, "
                         f"other_fraction={other_fraction}")
    rng = np.random.default_rng(seed)
    for sp in ("train", "val"):
        for name in CLASSIFIER_CLASSES:
            (out / sp / name).mkdir(parents=True, exist_ok=True)
    counts: Counter[str] = Counter()
    faces = set(CLASSIFIER_CLASSES[:-1])
    bar = tqdm(total=n, desc="crops", disable=not progress, unit="crop")
    j = k = 0
    while j < n:
        s = (seed * 1_000_003 + 3 * 500_009 + k * 7) % HELD_OUT_SEED
        k += 1
        size = (1280, 720) if rng.random() < 0.6 else (1920, 1080)
        scene = render_scene(s, size, mode="pips" if rng.random() < 0.3 else "train",
                             touching=0.6, square_blocks=0.3, threes_one_way=rng.random() < 0.5)
        labelled = [t for t in scene.tiles if t.labelled]
        if not labelled:
            continue
        polys = np.stack([np.asarray(t.polygon, np.float32) for t in labelled])
        items: list[tuple[np.ndarray, str]] = []
        ups = [t for t in labelled if t.state == "face_up" and t.face in faces]
        rng.shuffle(ups)
        for t in ups[:8]:
            items.append((np.asarray(t.polygon, np.float32), t.face))
        n_other = math.ceil(len(items) * other_fraction / (1 - other_fraction))
        for t in rng.permutation(len(labelled))[:n_other * 2]:
            if len([i for i in items if i[1] == OTHER]) >= n_other:
                break
            tile = labelled[int(t)]
            if tile.state != "face_up":
                if rng.random() < 0.3:
                    items.append((np.asarray(tile.polygon, np.float32), OTHER))
                continue
            off = _off_outline(np.asarray(tile.polygon, np.float32), rng)
            if polygon_iou_matrix(off[None], polys).max() < 0.5:
                items.append((off, OTHER))
        for poly, name in items:
            if j >= n:
                break
            jit = rng.uniform(0.0, 0.04) if rng.random() < 0.85 else rng.uniform(0.04, 0.08)
            p = poly + rng.normal(0, jit * min(side_pairs(poly)), poly.shape).astype(np.float32)
            crop, _ = rectify(scene.image, p)
            if rng.random() < 0.8:
                crop = _low_res(crop, rng, math.exp(rng.uniform(math.log(24), math.log(90))))
            sq = cv2.resize(crop, (CLS_SIZE, CLS_SIZE), interpolation=cv2.INTER_AREA)
            sp = "val" if math.floor((j + 1) * val_fraction) > math.floor(j * val_fraction) else "train"
            cv2.imwrite(str(out / sp / name / f"c{seed}_{j:06d}.png"), sq)
            counts[name] += 1
            j += 1
            bar.update(1)
    bar.close()
    return dict(counts)


def main(argv: list[str] | None = None) -> int:
    """``python -m vision.synth.crops OUT [--n N] [--seed S] [--val-fraction F]``: render the
    crop classifier's training crops (:func:`render_crops`); prints the counts per class as
    JSON. Exit 2 with one line on a bad value."""
    import argparse
    import json
    import sys

    ap = argparse.ArgumentParser(prog="python -m vision.synth.crops",
                                 description="Render the crop classifier's training crops.")
    ap.add_argument("out", type=Path, help="output folder (train/<class>, val/<class>)")
    ap.add_argument("--n", type=int, default=30000, help="crops in all (default 30000)")
    ap.add_argument("--seed", type=int, default=41000, help="render seed (default 41000)")
    ap.add_argument("--val-fraction", type=float, default=0.05)
    ap.add_argument("--no-progress", action="store_true")
    a = ap.parse_args(argv)
    try:
        counts = render_crops(a.out, a.n, a.seed, a.val_fraction, progress=not a.no_progress)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(json.dumps(counts, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
