#!/usr/bin/env python
"""Settlement when a hand covers part of a tile, on held-out rendered tables.

Renders full tables (:func:`vision.synth.render.render_table`, held-out seeds), draws a skin-coloured
hand (:func:`vision.synth.scenery.draw_hand`) reaching over one dealt tile, and runs the
product on each still picture with the scene's layout (``Pipeline.process``, still images).
Every settled seat is compared with the truth: the true deal settled by
:func:`scoring.settle.settle_round` (result, net, commission). Reported: player seats, settled,
settled right, WRONG, and how many of the settled seats had an unread tile
(:mod:`vision.table.open_tile`).

Usage::

    .venv/bin/python scripts/eval_covered.py [--n 40] [--seed 1000501] [--json]

Exit code 0; 1 when a settled seat is wrong; 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: Seeds from here on are never rendered for training (as ``eval_tables.py``).
HELD_OUT = 1_000_000


def covered_scene(seed: int):
    """A rendered table with a hand over one of its dealt tiles (the tile picked by seed)."""
    from vision.synth import render as synth
    from vision.synth.scenery import draw_hand

    scene = synth.render_table(seed)
    rng = np.random.default_rng(seed + 4_242)
    dealt = [t for t in scene.tiles if t.position is not None]
    t = dealt[int(rng.integers(len(dealt)))]
    c = np.asarray(t.polygon, np.float64).mean(0)
    mask = np.zeros(scene.image.shape[:2], np.uint8)
    draw_hand(scene.image, mask, rng, (float(c[0]), float(c[1])))
    return scene, t.position


def evaluate(n: int, seed: int, progress: bool = True) -> dict:
    from tqdm import tqdm

    from scoring.setting import make_setting
    from scoring.settle import settle_round
    from vision.pipeline import Pipeline
    from vision.table.rounds import Layout

    def laid(f):
        s = make_setting(f[:2], f[2:])
        return make_setting(f[2:], f[:2]) if s.is_mis_set("pa") else s

    counts = {"tables": 0, "seats": 0, "settled": 0, "right": 0, "wrong": 0, "unread": 0}
    wrong = []
    for s in tqdm(range(seed, seed + n), desc="tables", disable=not progress):
        scene, covered = covered_scene(s)
        pipe = Pipeline(layout=Layout.from_dict(scene.layout), n_stable=1, draw=False)
        pipe.still_images = True
        _, res = pipe.process(scene.image)
        rnd = res.settled or pipe.tracker.flush()
        # the camera cannot tell which hand was meant high: the higher hand is the high hand
        # (docs/rules.md section 5), as the table stage pairs them
        truth = settle_round({p: laid(f) for p, f in scene.deal.items()})
        counts["tables"] += 1
        counts["seats"] += sum(p != "dealer" for p in scene.deal)
        if rnd is None or rnd.result is None:
            continue
        for p, got in rnd.result.seats.items():
            want = truth.seats[p]
            counts["settled"] += 1
            counts["unread"] += int(p in rnd.unread or "dealer" in rnd.unread)
            if (got.result, got.net, got.commission) == (want.result, want.net, want.commission):
                counts["right"] += 1
            else:
                counts["wrong"] += 1
                wrong.append(f"seed {s} seat {p} (hand over {covered}): {got.result} "
                             f"{got.net}, truth {want.result} {want.net}")
    return {"counts": counts, "wrong": wrong}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=40, help="tables (default 40)")
    ap.add_argument("--seed", type=int, default=1_000_501, help="first held-out seed")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    msg = None
    if a.n < 1:
        msg = f"--n must be at least 1, got {a.n}"
    elif a.seed < HELD_OUT:
        msg = f"--seed {a.seed} is not held out (training renders use seeds below {HELD_OUT})"
    if msg:
        print(json.dumps({"error": msg}) if a.json else f"error: {msg}", file=sys.stderr)
        return 2
    out = evaluate(a.n, a.seed, progress=not a.json)
    if a.json:
        print(json.dumps(out, indent=1))
    else:
        c = out["counts"]
        print(f"tables {c['tables']}, player seats {c['seats']}, settled {c['settled']} "
              f"(right {c['right']}, WRONG {c['wrong']}), of them with an unread tile "
              f"{c['unread']}")
        for w in out["wrong"]:
            print("  WRONG", w)
    return 1 if out["counts"]["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
