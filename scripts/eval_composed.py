#!/usr/bin/env python
"""Tables composed at run time from the single-tile pictures of one ``../shared/realdata`` folder.

``../shared/scenes`` is built from three of the drawing sets; this script measures the same
thing for any folder, the real casino photos (chinese-photo-bafinidad) and the tiny drawings
(chinese-render-haosheng) included. For each scene it lays 3-8 hands of two touching tiles on a
felt of random colour with noise and uneven light: each tile is a labelled single-face picture
of the folder (cut to its alpha mask where it has one), scaled to a long side of 55-180 px,
the hands at any angle; then blur, sensor noise and JPEG quality 60-95. Nothing is written into
the project and nothing is fitted: the pictures are read from ``../shared/realdata`` at run
time, and each scene is made from a seed.

Reported per folder: truth tiles, found (a reported outline with polygon IoU >= 0.5), identified
right, unknown, WRONG (a reported face that is not the truth face), extra (identified outlines
matching no truth tile) and, of those, wrong extra (an outline over truth tiles of other
faces: a box across two touching tiles read as a face -- a misread in substance), from
:func:`vision.recognition.identify.identify` (the ``paigow identify`` path), scored by
``eval_scenes.score_tiles``.

Usage::

    .venv/bin/python scripts/eval_composed.py [../shared/realdata] [--folders A,B] [--n 6]
        [--seed 0] [--json]

Exit code 0; 2 for bad input (missing folder or labels).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

DEFAULT_FOLDERS = ("chinese-photo-bafinidad", "chinese-render-fintech",
                   "chinese-render-haosheng", "chinese-render-imilako",
                   "chinese-render-turtleflyer")


def load_tiles(root: Path, folder: str) -> list[tuple[np.ndarray, str]]:
    """(BGRA uint8 picture cut to the tile, upright, face) for every one-face label of
    ``folder``."""
    import cv2

    out = []
    for line in (root / "labels.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if not rec["file"].startswith(folder + "/") or not rec.get("tiles") \
                or len(rec["tiles"]) != 1:
            continue
        im = cv2.imread(str(root / rec["file"]), cv2.IMREAD_UNCHANGED)
        if im is None:
            continue
        if im.ndim == 2:
            im = cv2.cvtColor(im, cv2.COLOR_GRAY2BGR)
        if im.shape[2] == 3:
            im = np.dstack([im, np.full(im.shape[:2], 255, np.uint8)])
        ys, xs = np.nonzero(im[:, :, 3] > 128)
        if not len(xs):
            continue
        im = im[ys.min():ys.max() + 1, xs.min():xs.max() + 1]
        if im.shape[1] > im.shape[0]:
            im = np.ascontiguousarray(np.rot90(im))
        out.append((im, rec["tiles"][0]))
    return out


def compose(tiles, rng: np.random.Generator, size=(1920, 1080)):
    """One scene: BGR uint8 image and truth ``[{"face", "polygon"}]`` (image px)."""
    import cv2

    w, h = size
    felt = np.array([rng.uniform(20, 90), rng.uniform(40, 140), rng.uniform(20, 90)])
    felt = felt[rng.permutation(3)]
    img = np.empty((h, w, 3), np.float32)
    img[:] = felt
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    light = 0.75 + 0.35 * np.cos((xx / w - rng.uniform()) * math.pi) \
        * np.cos((yy / h - rng.uniform()) * math.pi)
    img *= light[..., None]
    img += rng.normal(0, 6, img.shape).astype(np.float32)
    L = float(rng.uniform(55, 180))
    n_hands = int(rng.integers(3, 9))
    truth = []
    cell = 3.2 * L
    cols, rows = max(int(w // cell), 1), max(int(h // cell), 1)
    cells = rng.permutation(cols * rows)[:n_hands]
    for c in cells:
        cx = (c % cols + 0.5) * (w / cols) + rng.uniform(-0.2, 0.2) * L
        cy = (c // cols + 0.5) * (h / rows) + rng.uniform(-0.2, 0.2) * L
        ang = rng.uniform(0, 2 * math.pi)
        for k in range(2):
            pic, face = tiles[int(rng.integers(len(tiles)))]
            ph, pw = pic.shape[:2]
            s = L / ph
            tw = pw * s
            # the two tiles of a hand side by side, touching along their long sides
            off = (k - 0.5) * tw
            ca, sa = math.cos(ang), math.sin(ang)
            tx, ty = cx + off * ca, cy + off * sa
            A = np.array([[s * ca, -s * sa, 0.0], [s * sa, s * ca, 0.0]])
            A[:, 2] = np.array([tx, ty]) - A[:, :2] @ np.array([pw / 2, ph / 2])
            layer = cv2.warpAffine(pic, A, (w, h), flags=cv2.INTER_AREA,
                                   borderMode=cv2.BORDER_CONSTANT, borderValue=(0, 0, 0, 0))
            a = layer[:, :, 3:4].astype(np.float32) / 255.0
            img = img * (1 - a) + layer[:, :, :3].astype(np.float32) * a
            corners = np.array([[0, 0], [pw, 0], [pw, ph], [0, ph]], np.float64)
            truth.append({"face": face, "polygon": (corners @ A[:, :2].T + A[:, 2]).tolist()})
    img = np.clip(img, 0, 255).astype(np.uint8)
    if rng.random() < 0.5:
        k = float(rng.uniform(0.4, 1.2))
        img = cv2.GaussianBlur(img, (0, 0), k)
    ok, buf = cv2.imencode(".jpg", img, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(60, 96))])
    return cv2.imdecode(buf, cv2.IMREAD_COLOR), truth


def evaluate(root: Path, folders, n: int, seed: int, progress: bool = True) -> dict:
    import cv2
    from eval_scenes import score_tiles

    from vision.recognition.identify import identify

    res = {}
    for fi, folder in enumerate(folders):
        tiles = load_tiles(root, folder)
        counts = Counter()
        wrong = []
        if not tiles:
            res[folder] = {"error": "no one-face pictures"}
            continue
        with tempfile.TemporaryDirectory() as td:
            paths, truths = [], []
            for i in range(n):
                rng = np.random.default_rng([seed, fi, i])
                img, truth = compose(tiles, rng)
                p = Path(td) / f"{folder}_{i:03d}.png"
                cv2.imwrite(str(p), img)
                paths.append(p)
                truths.append(truth)
            reads = identify(paths, progress=progress)
        for i, (truth, rep) in enumerate(zip(truths, reads)):
            # scored as the shared scenes are (one seat holding every tile of the scene)
            t = score_tiles({"image": f"scene {i}", "seats": [{"tiles": truth}]},
                            rep["tiles"])
            counts.update(t["counts"])
            wrong += t["wrong"]
        c = {k: counts.get(k, 0)
             for k in ("true", "found", "right", "unknown", "wrong", "extra", "wrong_extra")}
        res[folder] = {"tiles": c, "identified_pct": round(100 * c["right"] / max(c["true"], 1), 1),
                       "wrong_examples": wrong[:20]}
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("realdata", nargs="?", default=str(ROOT.parent / "shared" / "realdata"))
    ap.add_argument("--folders", default=",".join(DEFAULT_FOLDERS))
    ap.add_argument("--n", type=int, default=6, help="scenes per folder (default 6)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    root = Path(a.realdata)
    folders = [f for f in a.folders.split(",") if f]
    msg = None
    if not (root / "labels.jsonl").is_file():
        msg = f"no labels.jsonl in {root}"
    elif a.n < 1:
        msg = f"--n must be at least 1, got {a.n}"
    else:
        missing = [f for f in folders if not (root / f).is_dir()]
        if missing:
            msg = f"no folder {missing[0]} in {root}"
    if msg:
        print(json.dumps({"error": msg}) if a.json else f"error: {msg}", file=sys.stderr)
        return 2
    out = evaluate(root, folders, a.n, a.seed, progress=not a.json)
    if a.json:
        print(json.dumps(out, indent=1))
        return 0
    print("| folder | tiles | found | right | unknown | WRONG | extra (wrong) | identified |")
    print("|---|---|---|---|---|---|---|---|")
    for f, r in out.items():
        if "error" in r:
            print(f"| {f} | {r['error']} |")
            continue
        c = r["tiles"]
        print(f"| {f} | {c['true']} | {c['found']} | {c['right']} | {c['unknown']} | "
              f"{c['wrong']} | {c['extra']} ({c['wrong_extra']}) | {r['identified_pct']} % |")
    for f, r in out.items():
        for w in r.get("wrong_examples", []):
            print(f"  WRONG {f} {w}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
