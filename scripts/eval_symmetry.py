#!/usr/bin/env python
"""The symmetry check (:mod:`vision.recognition.symmetry`) on rendered flush blocks of known cut.

Renders table scenes with every hand laid flush and level (``scripts/eval_seam.py``'s
``blocks``: :func:`vision.synth.render.render_scene` with ``touching=1`` and square blocks, every
style and family of the project's renderer), builds each hand's block, moves every corner at
random by ``--jitter`` of the tile width (a detector's outline is a few px off), turns the corner
order a quarter at random (the true cut becomes cut 1: exactly the box across two tiles the
guards fear), decodes the block's two cut-0 outlines with the shipped models, and counts the
check's answers: right (the true cut), WRONG, unsure (None). Also reported: the two skews'
quantiles (the true cut's and the false cut's, where both cut-0 outlines read faces), the
counts over a grid of (aligned, skewed) thresholds, and the lowest false-cut skew where the
true cut was aligned and the highest true-cut skew where the false cut was skewed (the
margins a wrong answer needs).

Nothing from ../shared is read. Seeds >= 1_000_000 (held out from training).

Usage::

    .venv/bin/python scripts/eval_symmetry.py [--n 20] [--seed 1000400] [--draws 2]
        [--jitter 0.06] [--mode table,train]

Prints one JSON object.

Measured (2026-12-04, session 24; ``--n 40 --draws 2 --jitter 0.06``, seeds 1000400 and
1000500: 1914 and 1972 jittered blocks of both modes, every style) with the shipped thresholds
(``ALIGNED`` 0.1 rad, ``SKEWED`` 0.35 rad): right 29 / WRONG 0 / unsure 1885 and right 25 /
WRONG 0 / unsure 1947 -- most drawings place their halves at the halves' middles, where no
cut shows. No wrong answer anywhere on the grid (aligned 0.05-0.2, skewed 0.15-0.5). The true
cut's skew (both its tiles read): median 0.021 / 0.022, 99 % 0.082 / 0.084, max 0.119 / 0.125
rad; the highest true-cut skew where the false cut was aligned (what a wrong answer needs to
reach ``SKEWED``): 0.119 / 0.108 rad, ``SKEWED`` is 2.9x / 3.2x that.
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


def main(argv=None) -> int:
    from eval_seam import block_args, blocks

    a = block_args(__doc__, 20, 1_000_400).parse_args(argv)

    from vision.detections import Detections
    from vision.recognition import symmetry as Y
    from vision.recognition.engine import RecognitionEngine

    engine = RecognitionEngine()

    def read_outlines(polys):
        polys = np.asarray(polys, np.float32)
        return engine.decode(image[0], Detections.from_polygons(
            polys, np.ones(len(polys), np.float32), np.zeros(len(polys), np.int64)),
            use_cache=False)[0]

    image = [None]
    rng = np.random.default_rng(a.seed)
    grid = [(al, sk) for al in (0.05, 0.1, 0.15, 0.2) for sk in (0.15, 0.2, 0.25, 0.35, 0.5)]
    counts, per_style = Counter(), defaultdict(Counter)
    per_grid = {g: Counter() for g in grid}
    true_sk, false_sk, wrong = [], [], []
    margin_false, margin_true = [], []
    for img, block, _poly, style, mode, faces in blocks(a.n, a.seed, a.mode.split(",")):
        image[0] = img
        w = float(np.linalg.norm(block[1] - block[0])) / 2
        for _ in range(a.draws):
            q = block + rng.normal(0, a.jitter * w, block.shape).astype(np.float32)
            turn = int(rng.integers(2))
            q = np.roll(q, -turn, 0)
            reads = read_outlines(np.stack([
                [q[0], (q[0] + q[1]) / 2, (q[2] + q[3]) / 2, q[3]],
                [(q[0] + q[1]) / 2, q[1], q[2], (q[2] + q[3]) / 2]]))
            s = None
            if all(r.face is not None for r in reads):
                spots = Y.block_spots(q, reads)
                s = Y.skews(spots) if spots is not None else None
            if s is not None:
                true_sk.append(s[turn])
                false_sk.append(s[1 - turn])
                if s[turn] <= Y.ALIGNED:
                    margin_false.append(s[1 - turn])
                if s[1 - turn] <= Y.ALIGNED:
                    margin_true.append(s[turn])
            for g in grid:
                got = None if s is None else (0 if s[0] <= g[0] and s[1] >= g[1] else
                                              1 if s[1] <= g[0] and s[0] >= g[1] else None)
                per_grid[g]["unsure" if got is None else "right" if got == turn else "wrong"] += 1
            got = Y.symmetry_cut(q, read_outlines)
            k = "unsure" if got is None else "right" if got == turn else "wrong"
            counts[k] += 1
            per_style[f"{mode}/{style}"][k] += 1
            if k == "wrong":
                wrong.append({"mode": mode, "style": style, "faces": faces, "turn": turn,
                              "skews": [round(v, 3) for v in s] if s else None})
    q = lambda v, ps: [round(float(x), 3) for x in np.quantile(v, ps)] if v else []  # noqa: E731
    out = {"thresholds": {"aligned": Y.ALIGNED, "skewed": Y.SKEWED}, "counts": dict(counts),
           "per_style": {k: dict(v) for k, v in sorted(per_style.items())},
           "grid": {f"aligned {g[0]} skewed {g[1]}": dict(v) for g, v in per_grid.items()},
           "true_cut_skew_quantiles_50_90_99_max": q(true_sk, [0.5, 0.9, 0.99, 1.0]),
           "false_cut_skew_quantiles_1_10_50_90": q(false_sk, [0.01, 0.1, 0.5, 0.9]),
           "highest_true_skew_where_false_aligned": round(max(margin_true), 3)
           if margin_true else None,
           "false_skew_where_true_aligned_quantiles_50_90_max": q(margin_false, [0.5, 0.9, 1.0]),
           "wrong_examples": wrong[:20]}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
