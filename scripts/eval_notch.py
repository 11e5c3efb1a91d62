#!/usr/bin/env python
"""The notch check (:mod:`vision.recognition.notch`) on rendered flush hands: tiles and boxes
cut across.

Renders table scenes with every hand laid flush and level (the same scenes as
``scripts/eval_seam.py``: :func:`vision.synth.render.render_scene` with ``touching=1``, every
style and family), takes every hand whose two tiles are labelled and fully in the picture, and
measures the deepest middle dip of the long sides (:func:`vision.recognition.notch.side_dip`,
as a fraction of the tile width) of

* each tile's own outline (a tile: the check must not call it notched), and
* the two boxes that cut the hand's block across (one half of each tile: what a tile model can
  box by mistake; the check should call them notched), and
* the block itself, turned a quarter at random: which cut
  :func:`vision.recognition.notch.notch_cut` names (right, WRONG, unsure),

every outline with each corner moved at random by ``--jitter`` of the tile width (a detector's
outline is a few px off). Reported: how many of each the check calls notched with the shipped
thresholds, unsure counts, the dip quantiles of each kind, and the count of tiles called
notched at a grid of thresholds (what a lower threshold would cost).

Nothing from ../shared is read. Seeds >= 1_000_000 (held out from training).

Usage::

    .venv/bin/python scripts/eval_notch.py [--n 30] [--seed 1000100] [--jitter 0.06]
        [--mode table,train]

Prints one JSON object.
"""

from __future__ import annotations

import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


def max_dip(image, polygon) -> tuple[float | None, float]:
    """(deepest middle dip of the outline's two long sides / width, or None where both are
    unsure; the width, px)."""
    from vision.geometry import order_polygon
    from vision.recognition.notch import side_dip

    p = order_polygon(np.asarray(polygon, np.float64)).astype(np.float64)
    w = float(np.linalg.norm(p[1] - p[0]) + np.linalg.norm(p[3] - p[2])) / 2
    d = [side_dip(image, a, b, p.mean(0), w) for a, b in ((p[1], p[2]), (p[3], p[0]))]
    d = [v for v in d if v is not None]
    return (max(d) / w if d else None), w


def crosswise_boxes(block) -> list[np.ndarray]:
    """The two boxes cutting ``block`` (float (4, 2), cut 0 the true seam) across: float64
    (4, 2) each."""
    q = np.asarray(block, np.float64)
    m12, m30 = (q[1] + q[2]) / 2, (q[3] + q[0]) / 2
    return [np.array([q[0], q[1], m12, m30]), np.array([m30, m12, q[2], q[3]])]


def main(argv=None) -> int:
    from eval_seam import block_args, blocks

    from vision.recognition import notch as N

    a = block_args(__doc__, 30, 1_000_100, draws=False).parse_args(argv)
    rng = np.random.default_rng(a.seed)
    grid = (0.02, 0.025, 0.03, 0.04, 0.05)
    dips = {"tile": [], "across": []}
    counts = {"tile": Counter(), "across": Counter()}
    per_style = defaultdict(Counter)
    tile_over = Counter()
    worst = []
    cuts = Counter()
    cut_style = defaultdict(Counter)
    wrong_cuts = []
    for img, block, poly, style, mode, faces in blocks(a.n, a.seed, a.mode.split(",")):
        q = np.asarray(block, np.float64)
        w = float(np.linalg.norm(q[1] - q[0])) / 2
        turn = int(rng.integers(2))
        jb = np.roll(q + rng.normal(0, a.jitter * w, q.shape), -turn, 0)
        got = N.notch_cut(img, jb)
        k = "unsure" if got is None else "right" if got == turn else "WRONG"
        cuts[k] += 1
        cut_style[f"{mode}/{style}"][k] += 1
        if k == "WRONG":
            wrong_cuts.append({"style": style, "mode": mode, "faces": faces})
        other = np.array([(q[0] + q[1]) / 2, q[1], q[2], (q[2] + q[3]) / 2])
        first = np.array([q[0], (q[0] + q[1]) / 2, (q[2] + q[3]) / 2, q[3]])
        for kind, outlines in (("tile", [first, other]), ("across", crosswise_boxes(q))):
            for o in outlines:
                j = o + rng.normal(0, a.jitter * w, o.shape)
                d, width = max_dip(img, j)
                called = N.notched(img, j)
                k = "unsure" if d is None else "notched" if called else "not"
                counts[kind][k] += 1
                per_style[f"{mode}/{style}/{kind}"][k] += 1
                if d is None:
                    continue
                dips[kind].append(d)
                if kind == "tile":
                    for g in grid:
                        tile_over[g] += int(d >= g and d * width >= N.MIN_DIP_PX)
                    if called:
                        worst.append({"style": style, "mode": mode, "faces": faces,
                                      "dip": round(d, 4), "width": round(width, 1)})
    q = [0.5, 0.9, 0.99, 0.999, 1.0]
    out = {"thresholds": {"notch": N.NOTCH, "min_dip_px": N.MIN_DIP_PX},
           "blocks_notch_cut": dict(cuts),
           "blocks_per_style": {k: dict(v) for k, v in sorted(cut_style.items())},
           "blocks_cut_wrong": wrong_cuts[:20],
           "counts": {k: dict(v) for k, v in counts.items()},
           "per_style": {k: dict(v) for k, v in sorted(per_style.items())},
           "tile_dip_quantiles": [round(float(v), 4) for v in np.quantile(dips["tile"], q)]
           if dips["tile"] else [],
           "across_dip_quantiles": [round(float(v), 4) for v in
                                    np.quantile(dips["across"], [0.01, 0.1, 0.5, 0.9])]
           if dips["across"] else [],
           "tiles_notched_at": {str(g): tile_over[g] for g in grid},
           "tiles_called_notched": worst[:20]}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
