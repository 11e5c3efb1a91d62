#!/usr/bin/env python
"""Recognition on rendered full tables in the held-out seed range (>= 1,000,000).

Renders ``--n`` tables (1080p, banker and 7 seats, 32 face-up tiles) with
:func:`vision.synth.render.render_table`, runs the tile model + decoder on each still frame (the
:func:`vision.recognition.identify.identify` path: every input size of ``--scales`` fused, no close-up
proposal) and matches every labelled face-up
tile of the scene to a reported tile (polygon centre inside the true tile and IoU of the boxes
>= 0.5). Reports per table and in total: tiles found, identified correctly, unknown, wrong,
missed, extra reported tiles (no true tile; ``extra_identified``: of those, the ones read as a
face -- a box across two tiles naming a face), and positions whose four tiles were all found
and identified. ``--flush P`` lays every hand flush and level instead
(:func:`vision.synth.render.render_scene`, ``touching`` 1, tiles exactly twice as long as wide
with probability P: the squares a crosswise box can cut; with ``--threes-one-way`` every 3 of
a table runs one way, as a real set draws them). ``--video`` reads each table through
the video frame loop instead
(``Pipeline.process`` on the still picture for 6 frames: one pass at the model's size first,
the still reading once the picture has been still for ``VET_AFTER_STILL`` frames).

Usage::

    .venv/bin/python scripts/eval_tables.py [--n 5] [--seed 1000001] [--models DIR] [--video]
        [--json]

Exit code 0; 2 for bad input (missing models).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def _iou(a, b) -> float:
    """IoU of two xyxy boxes, px (vision.geometry.iou_matrix)."""
    from vision.geometry import iou_matrix

    return float(iou_matrix(np.asarray([a], np.float64), np.asarray([b], np.float64))[0, 0])


def video_reads(image, models_dir=None, backend: str = "onnx", scales=None,
                frames: int = 6, noise: float = 0.0, seed: int = 0) -> list:
    """The reads of the video path (``Pipeline.process``: one pass at the model's size,
    the motion gate and identity cache) after ``frames`` frames of one still picture: by then
    the picture is read as a still image (``VET_AFTER_STILL``, from the mean of its still
    frames, ``vision.recognition.stack``). ``noise`` > 0: each frame has its own Gaussian
    noise of that many grey levels (a camera's sensor noise; seeded by ``seed``)."""
    from vision.pipeline import Pipeline

    pipe = Pipeline(models_dir=models_dir, backend=backend, n_stable=3, draw=False,
                    scales=scales)
    rng = np.random.default_rng(seed)
    for _ in range(frames):
        frame = image if noise <= 0 else np.clip(
            image + rng.normal(0, noise, image.shape), 0, 255).round().astype(np.uint8)
        _, res = pipe.process(frame)
    return list(res.reads)


def evaluate(n: int = 5, seed: int = 1_000_001, models_dir=None, backend: str = "onnx",
             scales=None,
             progress: bool = True, video: bool = False, flush: float = 0.0,
             threes_one_way: bool = False) -> dict:
    """Per-table and total counts (see the module docstring) as a JSON-ready dict."""
    from tqdm import tqdm

    from vision.pipeline import Pipeline
    from vision.synth.render import render_scene, render_table

    pipe = Pipeline(models_dir=models_dir, backend=backend, n_stable=1, draw=False,
                    scales=scales)
    tables = []
    keys = ("true", "found", "ok", "unknown", "wrong", "missed", "extra", "extra_identified",
            "positions", "positions_ok")
    total = dict.fromkeys(keys, 0)
    confusions: dict[str, int] = {}
    for k in tqdm(range(n), desc="tables", disable=not progress):
        s = seed + k
        # flush: every hand laid flush and level (render_scene, touching 1), tiles exactly
        # twice as long as wide with that probability (squares a crosswise box can cut)
        scene = (render_table(s) if not flush else
                 render_scene(s, (1920, 1080), mode="table", touching=1.0, square_blocks=flush,
                              threes_one_way=threes_one_way))
        if video:
            reads = video_reads(scene.image, models_dir, backend, scales)
        else:
            reads = list(pipe.engine.read(scene.image, "still"))
        truth = [t for t in scene.tiles if t.labelled and t.state == "face_up"]
        boxes = [np.r_[t.polygon.min(0), t.polygon.max(0)] for t in truth]
        used: set[int] = set()
        row = dict.fromkeys(keys, 0)
        row["seed"] = s
        row["true"] = len(truth)
        pos_ok: dict[str, bool] = {}
        for t, b in zip(truth, boxes):
            best, bi = 0.0, -1
            for i, r in enumerate(reads):
                if i in used or r.state == "face_down":
                    continue
                v = _iou(b, r.xyxy)
                if v > best:
                    best, bi = v, i
            good = False
            if best >= 0.5:
                used.add(bi)
                row["found"] += 1
                r = reads[bi]
                if r.face is None:
                    row["unknown"] += 1
                elif r.face == t.face:
                    row["ok"] += 1
                    good = True
                else:
                    row["wrong"] += 1
                    key = f"{t.face} -> {r.face}"
                    confusions[key] = confusions.get(key, 0) + 1
            else:
                row["missed"] += 1
            if t.position is not None:
                pos_ok[t.position] = pos_ok.get(t.position, True) and good
        row["extra"] = sum(1 for i, r in enumerate(reads) if i not in used and r.state != "face_down")
        # of those, outlines read as a face (a box across two tiles naming a face: a misread)
        row["extra_identified"] = sum(1 for i, r in enumerate(reads)
                                      if i not in used and r.state == "face_up")
        row["positions"] = len(pos_ok)
        row["positions_ok"] = sum(pos_ok.values())
        for key in keys:
            total[key] += row[key]
        tables.append(row)
    return {"tables": tables, "total": total, "confusions": confusions,
            "model_version": pipe.model_version}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=5, help="tables (default 5)")
    ap.add_argument("--seed", type=int, default=1_000_001, help="first seed (>= 1,000,000)")
    ap.add_argument("--models", default=None, help="folder with tiles.onnx and pips.onnx")
    ap.add_argument("--backend", default="onnx", choices=("onnx", "ultralytics"))
    ap.add_argument("--scales", default=None,
                    help="tile-model input sizes to fuse, comma-separated (default: the "
                         "pipeline's still-image sizes; 640 = one pass at the model's size)")
    ap.add_argument("--video", action="store_true",
                    help="read each table as a video would (the frame loop on the still "
                         "picture for 6 frames) instead of as a still image")
    ap.add_argument("--flush", type=float, default=0.0, metavar="P",
                    help="lay every hand flush and level (the project's flush tables, "
                         "render_scene touching 1), with tiles exactly twice as long as wide "
                         "with probability P (0..1; default 0: the regular tables)")
    ap.add_argument("--threes-one-way", action="store_true",
                    help="with --flush: every 3 of a table drawn one way, as a real set draws "
                         "them (the table's way is voted: vision.recognition.chirality)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    from scoring.errors import InputError

    if not 0.0 <= args.flush <= 1.0:
        print(f"eval_tables: --flush must be in 0..1, got {args.flush}", file=sys.stderr)
        return 2
    if args.n < 1 or args.seed < 1_000_000:
        print(f"eval_tables: --n must be >= 1 and --seed >= 1000000 (held out), got "
              f"{args.n}, {args.seed}", file=sys.stderr)
        return 2
    try:
        scales = None if args.scales is None else [int(v) for v in args.scales.split(",") if v]
        res = evaluate(args.n, args.seed, args.models, args.backend, scales=scales,
                       progress=not args.json, video=args.video, flush=args.flush,
                       threes_one_way=args.threes_one_way)
    except InputError as exc:
        print(f"eval_tables: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    cols = ("true", "found", "ok", "unknown", "wrong", "missed", "extra", "positions_ok")
    print("seed      " + " ".join(f"{c:>8}" for c in cols))
    for row in res["tables"]:
        print(f"{row['seed']:<9} " + " ".join(f"{row[c]:>8}" for c in cols))
    t = res["total"]
    print("total     " + " ".join(f"{t[c]:>8}" for c in cols))
    print(f"positions with all four tiles identified: {t['positions_ok']}/{t['positions']}; "
          f"confusions: {res['confusions'] or 'none'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
