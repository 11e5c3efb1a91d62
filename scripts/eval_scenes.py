#!/usr/bin/env python
"""Recognition and settlement on table scenes the project did not draw.

Runs the product on a folder in the ``../shared/scenes`` format (``truth.jsonl`` + images; see
that folder's README) and reports, per style:

* tiles: face-up truth tiles (``occluded`` ones apart), found (a reported outline with polygon
  IoU >= 0.5), identified right, unknown, WRONG (a reported face that is not the truth face),
  and extra identified outlines (a face on an outline that matches no truth tile);
* the same per resolution and degradation group (:func:`scene_groups`: height, tile length,
  the scene's blur and JPEG quality; the rows "by ..." after "all", which counts each scene
  once);
* seats: player seats settled, right and WRONG, from ``paigow run SCENE --layout L --json``
  where the layout is built from the truth polygons (one polygon per seat around its tiles);
* failure classes of every face-up tile not identified right: ``not_found`` (nothing overlaps
  it), ``outline_off`` (an outline overlaps it, IoU < 0.5), ``spot_count`` (read A found no face
  with those counts / no spots), ``colour`` (red / white check), ``reads_disagree`` (input
  sizes, overlapping outlines, or the two tile models outlining it differently), ``shape``
  (read B's half shapes or the outline's aspect), ``other``; an unknown tile's class is that of
  its read's ``reason_code`` (:data:`FAILURE_OF`), never of its reason's words.

Tile outcomes come from :func:`vision.recognition.identify.identify` (the ``paigow identify`` path), or
with ``--video`` from the video frame loop on the still picture (``eval_tables.video_reads``);
seat outcomes from the real command. The data are read at run time and never copied or fitted to.

Usage::

    .venv/bin/python scripts/eval_scenes.py ../shared/scenes [--limit N] [--json]
        [--no-seats] [--models DIR] [--video] [--backend onnx|openvino|openvino-bf16]
        [--noise SIGMA [--noise-seed S]] [--video --frame-noise SIGMA]

Exit code 0; 2 for bad input (missing folder or truth file).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vision.schema import UnreadReason  # noqa: E402  (after the path above)
from vision.config import backend_choices  # noqa: E402

FAILURE_CLASSES = ("not_found", "outline_off", "spot_count", "colour", "reads_disagree",
                   "shape", "other")


def polygon_iou(a, b) -> float:
    """IoU of two convex quadrilaterals, float (4, 2) px each (vision.geometry)."""
    from vision.geometry import polygon_iou_matrix

    return float(polygon_iou_matrix(np.asarray(a, np.float32)[None], np.asarray(b, np.float32)[None])[0, 0])


#: The failure class of an unread tile by its read's reason code
#: (:class:`vision.schema.UnreadReason`); a code not named here is ``other``.
FAILURE_OF: dict[UnreadReason, str] = {
    UnreadReason.COLOUR: "colour",
    UnreadReason.SPOT_COUNTS: "spot_count", UnreadReason.NO_SPOTS: "spot_count",
    UnreadReason.READS_DISAGREE: "reads_disagree", UnreadReason.SIZES_DISAGREE: "reads_disagree",
    UnreadReason.CLOSEUP_DISAGREE: "reads_disagree", UnreadReason.OVERLAPPING: "reads_disagree",
    UnreadReason.SECOND_MODEL_OTHERWISE: "reads_disagree",
    UnreadReason.LONG_33_NOT_A: "shape", UnreadReason.LONG_33_MISSING: "shape",
    UnreadReason.SPLIT_EITHER: "shape", UnreadReason.HALVES_NO_FACE: "shape",
    UnreadReason.HALF_SHAPE: "shape", UnreadReason.ASPECT: "shape",
    UnreadReason.CROWDS_MIDLINE: "shape"}


def failure_class(code: str | None) -> str:
    """Map an unread tile's reason code (``TileRead.reason_code``, or its string value as
    ``identify(with_reads=True)`` gives it; None: no code) to one of :data:`FAILURE_CLASSES`
    (:data:`FAILURE_OF`; ``other`` for any other code)."""
    try:
        return FAILURE_OF.get(UnreadReason(code), "other") if code is not None else "other"
    except ValueError:
        return "other"


def layout_from_truth(rec: dict, grow: float = 1.3) -> dict:
    """A layout dict (see docs of ``paigow run --layout``) with one polygon per seat: the
    convex hull of the seat's truth tile corners, scaled by ``grow`` about its centre (both of
    two overlapping ones shrunk until they do not)."""
    import cv2

    from shapely.geometry import Polygon

    hulls = {}
    for seat in rec["seats"]:
        pts = np.array([p for t in seat["tiles"] for p in t["polygon"]], np.float32)
        hull = cv2.convexHull(pts).reshape(-1, 2).astype(np.float64)
        c = hull.mean(0)
        hulls[str(seat["seat"])] = c + (hull - c) * grow
    # a layout's polygons must not overlap (vision.table.rounds.check_polygons): where two grown
    # hulls do, both shrink about their centres (never below the tiles' own hull)
    names = list(hulls)
    for _ in range(50):
        over = [(a, b) for i, a in enumerate(names) for b in names[i + 1:]
                if Polygon(np.round(hulls[a], 1)).intersection(
                    Polygon(np.round(hulls[b], 1))).area >= 0.5]
        if not over:
            break
        for a, b in over:
            for q in (a, b):
                c = hulls[q].mean(0)
                hulls[q] = c + (hulls[q] - c) * 0.98
    return {"positions": {p: np.round(h, 1).tolist() for p, h in hulls.items()}}


def load_truth(folder: Path) -> list[dict]:
    """The scene records of ``folder/truth.jsonl`` (InputError when missing)."""
    from scoring.errors import InputError

    tp = folder / "truth.jsonl"
    if not tp.is_file():
        raise InputError(f"no truth.jsonl in {str(folder)!r}")
    return [json.loads(line) for line in tp.read_text().splitlines() if line.strip()]


def score_tiles(rec: dict, reported: list[dict]) -> dict:
    """Tile outcomes of one scene: counts and the failure class of every miss."""
    truth = [t for s in rec["seats"] for t in s["tiles"]]
    c = Counter()
    fails = Counter()
    wrong = []
    used = set()
    ups = [r for r in reported if r["state"] != "face_down"]
    for t in truth:
        if t.get("occluded"):
            c["occluded"] += 1
            continue
        c["true"] += 1
        ious = [polygon_iou(t["polygon"], r["polygon"]) for r in ups]
        k = int(np.argmax(ious)) if ious else -1
        best = ious[k] if ious else 0.0
        if best < 0.5:
            fails["outline_off" if best > 0.05 else "not_found"] += 1
            if best > 0.05 and ups[k]["face"] and ups[k]["face"] != t["face"]:
                pass  # a face on an outline that is off: counted under extras below
            continue
        used.add(k)
        c["found"] += 1
        r = ups[k]
        if r["face"] is None:
            c["unknown"] += 1
            fails[failure_class(r.get("reason_code"))] += 1
        elif r["face"] == t["face"]:
            c["right"] += 1
        else:
            c["wrong"] += 1
            wrong.append(f"{rec['image']}: {t['face']} read {r['face']}")
    for k, r in enumerate(ups):
        if k in used or r["face"] is None:
            continue
        c["extra"] += 1
        # an identified outline on no truth tile: wrong when it overlaps a tile of another face
        over = [t for t in truth if polygon_iou(t["polygon"], r["polygon"]) > 0.15]
        if over and all(t["face"] != r["face"] for t in over):
            c["wrong_extra"] += 1
            wrong.append(f"{rec['image']}: outline across {'/'.join(t['face'] for t in over)} "
                         f"read {r['face']}")
    return {"counts": c, "fails": fails, "wrong": wrong}


def score_seats(rec: dict, folder: Path, models: str | None, tmp: Path,
                scales: str | None = None, backend: str | None = None,
                config: str | None = None) -> dict:
    """Seat outcomes of one scene from ``paigow run SCENE --layout L --json`` (``--config``
    ``config`` where given)."""
    import yaml

    lay = tmp / (Path(rec["image"]).stem + ".yaml")
    lay.write_text(yaml.safe_dump(layout_from_truth(rec)))
    cmd = [sys.executable, "-m", "vision.cli", "run", str(folder / rec["image"]), "--layout",
           str(lay), "--json", "--no-progress"]
    if models:
        cmd += ["--models", models]
    if scales:
        cmd += ["--scales", scales]
    if backend:
        cmd += ["--backend", backend]
    if config:
        cmd += ["--config", str(config)]
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env)
    events = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    positions = events[-1]["positions"] if events else {}
    c = Counter()
    wrong = []
    reasons = Counter()
    unsettled = []
    for seat, truth_result in rec["settlement"].items():
        c["seats"] += 1
        got = positions.get(str(seat), {})
        res = got.get("result")
        if res in ("win", "lose", "push"):
            c["settled"] += 1
            if res == truth_result:
                c["right"] += 1
            else:
                c["wrong"] += 1
                wrong.append(f"{rec['image']} seat {seat}: {res}, truth {truth_result}")
        else:
            why = (got.get("reason") or ("no event" if not events else "dealer not read")
                   ).split(";")[0].split(" (")[0].strip()
            reasons[why[:60]] += 1
            unsettled.append({"image": rec["image"], "seat": str(seat), "reason": why[:60]})
    return {"counts": c, "wrong": wrong, "reasons": reasons, "unsettled": unsettled}


def perturbed_copies(folder: Path, recs: list[dict], sigma: float, seed: int, out: Path) -> Path:
    """Copies of the scenes' pictures in ``out`` with Gaussian noise of ``sigma`` grey levels
    added (seeded per picture; lossless PNG bytes under the same names, so the truth's polygons
    hold): a reading whose face turns on a hair (another CPU's rounding, another release of a
    numeric library) shows here. Returns ``out``."""
    import cv2

    from scoring.errors import InputError

    for k, rec in enumerate(recs):
        img = cv2.imread(str(folder / rec["image"]), cv2.IMREAD_COLOR)
        if img is None:
            raise InputError(f"not a readable image: {str(folder / rec['image'])!r}")
        rng = np.random.default_rng([seed, k])
        noisy = np.clip(img.astype(np.float32) + rng.normal(0, sigma, img.shape), 0, 255)
        _, buf = cv2.imencode(".png", noisy.round().astype(np.uint8))  # PNG bytes, any name
        (out / rec["image"]).write_bytes(buf.tobytes())
    return out


def scene_groups(rec: dict) -> list[str]:
    """The resolution and degradation groups a scene is counted in besides its style (issue
    40): ``"720p"``/``"1080p"`` (its height); its tiles' length in the picture (the median long
    side of the truth polygons: ``"tiles <70 px"``, ``"tiles 70-110 px"``, ``"tiles >110 px"``);
    and, where the truth gives the scene's composition ``params``, ``"scene blur"`` or
    ``"scene sharp"`` (``blur_sigma`` > 0) and its JPEG quality (``"scene jpeg <50"``,
    ``"scene jpeg 50-79"``, ``"scene jpeg >=80"``). The camera folders' own degradation (per
    picture, seeded: ../shared/scenes_cam/README.md) is not in their truth: their ``params``
    are the composed scene's."""
    out = [f"{int(rec.get('height') or 0)}p"]
    sides = []
    for seat in rec.get("seats", []):
        for t in seat.get("tiles", []):
            q = np.asarray(t["polygon"], np.float64)
            sides.append(max(np.linalg.norm(q[1] - q[0]), np.linalg.norm(q[2] - q[1])))
    if sides:
        m = float(np.median(sides))
        out.append("tiles <70 px" if m < 70 else "tiles 70-110 px" if m <= 110
                   else "tiles >110 px")
    p = rec.get("params") or {}
    if "blur_sigma" in p:
        out.append("scene blur" if float(p["blur_sigma"] or 0) > 0 else "scene sharp")
    q = p.get("jpeg_quality")
    if q is not None:
        out.append("scene jpeg <50" if q < 50 else "scene jpeg 50-79" if q < 80
                   else "scene jpeg >=80")
    return out


def _group_order(name: str) -> tuple:
    name = name.removeprefix("by ")
    if name[:-1].isdigit():  # the resolution rows first
        return 0, int(name[:-1]), name
    order = ("tiles", "scene blur", "scene sharp", "scene jpeg")
    return 1 + next((i for i, k in enumerate(order) if name.startswith(k)), len(order)), 0, name


def evaluate(folder: Path, limit: int | None = None, seats: bool = True,
             models: str | None = None, progress: bool = True, scales: str | None = None,
             video: bool = False, backend: str | None = None, noise: float = 0.0,
             noise_seed: int = 0, frame_noise: float = 0.0, config: str | None = None) -> dict:
    """Per-style tile and seat figures (see module docstring) as a JSON-ready dict; with
    ``noise`` > 0 the pictures are read with that much Gaussian noise added
    (:func:`perturbed_copies`); with ``video`` and ``frame_noise`` > 0 each video frame of the
    picture has its own noise of that many grey levels (a camera's sensor noise); ``config``:
    a config file whose ``recognition`` section applies to the still reading
    (:func:`vision.config.recognition_config`, e.g. ``rules_off: [turned]``)."""
    from tqdm import tqdm

    from vision.recognition.identify import identify

    recs = load_truth(folder)[:limit]
    if noise > 0:
        keep = tempfile.TemporaryDirectory()
        folder = perturbed_copies(folder, recs, noise, noise_seed, Path(keep.name))
    paths = [folder / r["image"] for r in recs]
    sizes = None if not scales else [int(v) for v in scales.split(",") if v.strip()]
    backend_kw = {"backend": backend} if backend else {}
    if video:
        import cv2

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from eval_tables import video_reads

        reads = [{"image": str(p), "tiles": [{**r.to_dict(), "reason": r.reason,
                                              "reason_code": r.reason_code}
                                             for r in video_reads(cv2.imread(str(p)), models,
                                                                  scales=sizes,
                                                                  noise=frame_noise,
                                                                  seed=noise_seed + k,
                                                                  **backend_kw)]}
                 for k, p in enumerate(tqdm(paths, desc="video", disable=not progress))]
    else:
        rec = None
        if config is not None:
            from vision.config import recognition_config

            rec = recognition_config(config, models_dir=models, backend=backend, scales=sizes)
        reads = identify(paths, models_dir=models, with_reads=True, progress=progress,
                         scales=sizes, recognition=rec, **backend_kw)
    def fresh() -> dict:
        return {"tiles": Counter(), "fails": Counter(), "seats": Counter(),
                "seat_reasons": Counter(), "wrong": [], "unsettled": []}

    styles: dict[str, dict] = defaultdict(fresh)
    groups: dict[str, dict] = defaultdict(fresh)  # by resolution and degradation
    with tempfile.TemporaryDirectory() as td:
        for rec, rep in tqdm(list(zip(recs, reads)), desc="scenes", disable=not progress):
            st = styles[rec["style"].removeprefix("render_")]
            also = [groups["by " + g] for g in scene_groups(rec)]
            t = score_tiles(rec, rep["tiles"])
            s = score_seats(rec, folder, models, Path(td), scales, backend, config) if seats else None
            for acc in [st] + also:
                acc["tiles"].update(t["counts"])
                acc["fails"].update(t["fails"])
                acc["wrong"] += t["wrong"]
                if s is not None:
                    acc["seats"].update(s["counts"])
                    acc["seat_reasons"].update(s["reasons"])
                    acc["wrong"] += s["wrong"]
                    acc["unsettled"] += s["unsettled"]
    out = {}
    total = fresh()
    for name in sorted(styles) + ["all"] + sorted(groups, key=_group_order):
        st = styles[name] if name in styles else total if name == "all" else groups[name]
        if name in styles:
            for k in total:
                total[k] += st[k] if k not in ("wrong", "unsettled") else []
            total["wrong"] += st["wrong"]
            total["unsettled"] += st["unsettled"]
        tc, sc = st["tiles"], st["seats"]
        out[name] = {
            "tiles": {k: tc.get(k, 0) for k in ("true", "found", "right", "unknown", "wrong",
                                                "extra", "wrong_extra", "occluded")},
            "identified_pct": round(100 * tc.get("right", 0) / max(tc.get("true", 0), 1), 1),
            "failures": {k: st["fails"].get(k, 0) for k in FAILURE_CLASSES},
            "seats": {k: sc.get(k, 0) for k in ("seats", "settled", "right", "wrong")},
            "settled_pct": round(100 * sc.get("settled", 0) / max(sc.get("seats", 0), 1), 1),
            "seat_reasons": dict(st["seat_reasons"].most_common(8)),
            "wrong_examples": st["wrong"][:20],
            "unsettled": st["unsettled"],
        }
    return out


def print_table(res: dict) -> None:
    """The per-style table as Markdown on stdout."""
    print("| style | face-up | found | right | unknown | WRONG | extra (wrong) | identified "
          "| seats | settled | right | WRONG |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for name, r in res.items():
        t, s = r["tiles"], r["seats"]
        print(f"| {name} | {t['true']} | {t['found']} | {t['right']} | {t['unknown']} | "
              f"{t['wrong']} | {t['extra']} ({t['wrong_extra']}) | {r['identified_pct']} % | "
              f"{s['seats']} | {s['settled']} ({r['settled_pct']} %) | {s['right']} | "
              f"{s['wrong']} |")
    print()
    print("failure classes of face-up tiles not identified right:")
    for name, r in res.items():
        print(f"  {name}: " + ", ".join(f"{k} {v}" for k, v in r["failures"].items() if v))
    for name, r in res.items():
        if r["seat_reasons"]:
            print(f"  {name} seats not settled: " + "; ".join(
                f"{k} x{v}" for k, v in r["seat_reasons"].items()))
        for w in r["wrong_examples"]:
            print(f"  WRONG {name}: {w}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", type=Path, help="folder with truth.jsonl and the scene images")
    ap.add_argument("--limit", type=int, default=None, help="first N scenes only")
    ap.add_argument("--no-seats", action="store_true", help="tiles only (no paigow run)")
    ap.add_argument("--models", default=None, help="models folder (default: models/)")
    ap.add_argument("--scales", default=None,
                    help="tile-model input sizes, comma-separated (default: the product's)")
    ap.add_argument("--video", action="store_true",
                    help="tiles as the video frame loop reads each scene (6 frames of the "
                         "still picture) instead of as a still image")
    ap.add_argument("--backend", default=None, choices=backend_choices(),
                    help="inference backend for both the tile reads and paigow run (default: "
                         "the product's)")
    ap.add_argument("--noise", type=float, default=0.0,
                    help="read the pictures with Gaussian noise of this many grey levels added "
                         "(0: as they are): latent wrong faces that turn on a hair show")
    ap.add_argument("--noise-seed", type=int, default=0, help="seed of --noise")
    ap.add_argument("--last-frame", action="store_true",
                    help="with --video: the still reading reads the last frame alone, not the "
                         "mean of the still frames (vision.recognition.stack), to compare")
    ap.add_argument("--frame-noise", type=float, default=0.0,
                    help="with --video: each frame has its own Gaussian noise of this many grey "
                         "levels (a camera's sensor noise over a still table)")
    ap.add_argument("--config", default=None, metavar="FILE",
                    help="config file: its recognition section applies to the still reading "
                         "(e.g. rules_off: [turned]; docs/configuration.md)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    from scoring.errors import InputError

    if args.last_frame:
        from vision.recognition import stack

        stack.FrameStack.mean = lambda self, image: image.copy()
    try:
        if args.noise < 0:
            raise InputError(f"--noise must be >= 0, got {args.noise}")
        if args.frame_noise < 0 or (args.frame_noise and not args.video):
            raise InputError(f"--frame-noise must be >= 0 and goes with --video, got "
                             f"{args.frame_noise}")
        res = evaluate(args.folder, args.limit, not args.no_seats, args.models,
                       progress=not args.json, scales=args.scales, video=args.video,
                       backend=args.backend, noise=args.noise, noise_seed=args.noise_seed,
                       frame_noise=args.frame_noise, config=args.config)
    except InputError as exc:
        if args.json:
            print(json.dumps({"error": str(exc)}))
        else:
            print(f"eval_scenes: error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(res, indent=1))
    else:
        print_table(res)
    return 0


if __name__ == "__main__":
    sys.exit(main())
