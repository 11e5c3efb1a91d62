#!/usr/bin/env python
"""Per-stage speed of the vision pipeline on a synthetic 1080p table (32 face-up tiles).

Stages (milliseconds per frame, median over the repeats):

* capture  -- decode one 1920x1080 frame of an mp4v video through ``vision.io.capture``;
* tiles    -- tile detector (OBB) on the frame, ONNX Runtime and, when a ``.pt`` is present,
              ultralytics;
* rectify  -- ``vision.geometry.rectify`` of the 32 tiles (ground-truth polygons of the scene);
* pips     -- pip detector on the 32 crops (``PipDetector.detect_batch``), ONNX / ultralytics;
* decode   -- ``vision.recognition.decode.read_from_pips`` for the 32 tiles (if that module exists);
* score    -- hands, house way and settlement of the 8 positions (``scoring``);
* draw     -- ``vision.io.overlay.draw_round`` of the round view;
* pipeline -- ``vision.pipeline.Pipeline.process`` end to end (if it exists and models exist;
              its motion gate / identity cache make repeated frames cheaper).

The frame comes from ``vision.synth.render.render_table`` (held-out seed 1_000_001) when available,
else a grey placeholder with 32 drawn rectangles. Without model files, ``--untrained`` exports
untrained ``yolo11n-obb`` (640) and ``yolo11n`` (192) networks to ONNX in a temporary folder:
the same architecture and input size, so the same speed, but meaningless detections.

Target: the whole per-frame pipeline (capture + tiles + rectify + pips + decode + score + draw)
>= 10 frames per second at 1080p with 32 tiles.

Usage::

    .venv/bin/python scripts/bench_vision.py                       # models/tiles.onnx, pips.onnx
    .venv/bin/python scripts/bench_vision.py --untrained --repeat 10 --json bench.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_AUTOINSTALL", "false")
os.environ.setdefault("YOLO_CONFIG_DIR", str(ROOT / ".yolo_config"))

import cv2  # noqa: E402
import numpy as np  # noqa: E402

from vision.io.capture import open_source  # noqa: E402
from vision.geometry import obb_to_polygon, polygon_to_xyxy, rectify  # noqa: E402
from vision.io.overlay import draw_round  # noqa: E402


def _time(fn, repeat: int, warmup: int = 1) -> tuple[float, object]:
    """Median milliseconds of ``fn()`` over ``repeat`` runs (after ``warmup``), last result."""
    out = None
    for _ in range(warmup):
        out = fn()
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        ts.append((time.perf_counter() - t) * 1000)
    return statistics.median(ts), out


def make_scene(seed: int):
    """(image, tiles [(face, polygon)], deal, layout) of a 1080p table."""
    try:
        from vision.synth.render import render_table

        sc = render_table(seed, size=(1920, 1080))
        tiles = [(t.face, np.asarray(t.polygon, np.float32), t.position) for t in sc.tiles]
        return sc.image, tiles, sc.deal, sc.layout, "vision.synth.render.render_table"
    except Exception as exc:  # renderer missing or broken: placeholder
        print(f"note: render_table unavailable ({exc!r}); using a placeholder frame",
              file=sys.stderr)
    img = np.full((1080, 1920, 3), (40, 100, 40), np.uint8)
    tiles = []
    faces = ["6-6", "1-1", "4-4", "1-3", "5-5", "3-3", "2-2", "5-6", "4-6", "1-6", "1-5", "3-4",
             "2-5", "2-6", "3-6", "3-5", "4-5", "2-4", "1-2", "2-3", "1-4", "6-6", "1-1", "4-4",
             "1-3", "5-5", "3-3", "2-2", "5-6", "4-6", "1-6", "1-5"]
    positions = ["dealer"] + [str(i) for i in range(1, 8)]
    for k in range(32):
        pos = positions[k // 4]
        cx, cy = 150 + (k % 8) * 220, 200 + (k // 8) * 220
        poly = obb_to_polygon(cx, cy, 60, 120, 0.1 * k)
        cv2.fillConvexPoly(img, poly.round().astype(np.int32), (30, 30, 30))
        tiles.append((faces[k], poly, pos))
    deal = {p: [t[0] for t in tiles if t[2] == p] for p in positions}
    return img, tiles, deal, {"positions": {}}, "placeholder"


def export_untrained(tmp: Path) -> tuple[Path, Path]:
    """Untrained 2-class yolo11n-obb (imgsz 640) and yolo11n (imgsz 192) as ONNX (+ .pt)."""
    from ultralytics import YOLO
    from ultralytics.nn.tasks import DetectionModel, OBBModel

    out = []
    for yaml, cls, name, imgsz, names in (
            ("yolo11n-obb.yaml", OBBModel, "tiles", 640, ["tile", "tile_back"]),
            ("yolo11n.yaml", DetectionModel, "pips", 192, ["pip_red", "pip_white"])):
        m = YOLO(yaml)
        net = cls(yaml, nc=2, verbose=False)
        net.names = dict(enumerate(names))
        net.args = {"imgsz": imgsz, "task": m.task, "data": ""}
        net.task = m.task
        m.model = net
        m.save(str(tmp / f"{name}.pt"))
        f = m.export(format="onnx", imgsz=imgsz, simplify=False, verbose=False)
        target = tmp / f"{name}.onnx"
        os.replace(f, target)
        out.append(target)
    return out[0], out[1]


def score_positions(deal: dict, rules: str = "pa") -> dict:
    """High/low hands of each position as laid (pairs of tiles lying together) and settlement
    against the dealer; returns {position: {high_hand, low_hand, result, net}}."""
    from scoring.setting import house_way_setting, make_setting
    from scoring.settle import settle_seat

    out = {}
    settings = {}
    for pos, faces in deal.items():
        if len(faces) != 4 or any(f is None for f in faces):
            continue
        s = make_setting(faces[:2], faces[2:])
        if s.high_value(rules).key < s.low_value(rules).key:
            s = make_setting(faces[2:], faces[:2])
        settings[pos] = s
    banker = settings.get("dealer")
    if banker is None:
        return out
    banker = house_way_setting([t.face for t in banker.high + banker.low])
    for pos, s in settings.items():
        v = {"high_hand": s.high_value(rules).name, "low_hand": s.low_value(rules).name}
        if pos != "dealer":
            r = settle_seat(s, banker, 1, rules, position=pos)
            d = r.to_dict() if hasattr(r, "to_dict") else vars(r)
            v["result"] = d.get("result")
            v["net"] = str(d.get("net"))
        out[pos] = v
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=str(ROOT / "models"), help="folder with tiles/pips")
    ap.add_argument("--untrained", action="store_true",
                    help="export untrained networks of the same shape when models are missing")
    ap.add_argument("--repeat", type=int, default=10, help="timed runs per stage")
    ap.add_argument("--frames", type=int, default=30, help="frames in the capture video")
    ap.add_argument("--seed", type=int, default=1_000_001)
    ap.add_argument("--no-ultralytics", action="store_true", help="skip the ultralytics backend")
    ap.add_argument("--json", default=None, help="also write the results to this file")
    args = ap.parse_args(argv)

    tmp = Path(tempfile.mkdtemp(prefix="bench_vision_"))
    res: dict = {"host": {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "machine": platform.machine(), "opencv": cv2.__version__},
                 "stages_ms": {}, "notes": []}
    try:
        import onnxruntime as ort

        res["host"]["onnxruntime"] = ort.__version__
        res["host"]["ort_providers"] = ort.get_available_providers()
    except ImportError:
        pass
    st = res["stages_ms"]

    t = time.perf_counter()
    image, tiles, deal, layout, origin = make_scene(args.seed)
    res["scene"] = {"origin": origin, "render_ms": (time.perf_counter() - t) * 1000,
                    "size": [image.shape[1], image.shape[0]], "tiles": len(tiles)}

    # capture: write a 1080p mp4v video and read it back
    vid = tmp / "table.mp4"
    w = cv2.VideoWriter(str(vid), cv2.VideoWriter_fourcc(*"mp4v"), 30.0,
                        (image.shape[1], image.shape[0]))
    for i in range(args.frames):
        w.write(np.roll(image, i * 3, axis=1))
    w.release()
    t = time.perf_counter()
    with open_source(vid) as src:
        n = sum(1 for _ in src)
    st["capture"] = (time.perf_counter() - t) * 1000 / max(n, 1)
    res["capture_frames"] = n

    # models
    models = Path(args.models)
    tiles_onnx, pips_onnx = models / "tiles.onnx", models / "pips.onnx"
    if not (tiles_onnx.is_file() and pips_onnx.is_file()):
        if args.untrained:
            tiles_onnx, pips_onnx = export_untrained(tmp)
            res["notes"].append("untrained networks (speed only; detections meaningless)")
        else:
            res["notes"].append(f"no models in {models}: detector stages skipped "
                                "(use --untrained for speed with same-shape networks)")
            tiles_onnx = pips_onnx = None
    res["models"] = {"tiles": str(tiles_onnx), "pips": str(pips_onnx)}

    from vision.recognition.detect import PipDetector, TileDetector

    polys = [p for _, p, _ in tiles]
    st["rectify"], crops = _time(lambda: [rectify(image, p)[0] for p in polys], args.repeat)

    pip_dets = None
    if tiles_onnx is not None:
        td = TileDetector(tiles_onnx)
        st["tiles_onnx"], tdet = _time(lambda: td.detect(image), args.repeat)
        res["tiles_found_onnx"] = len(tdet)
        pd = PipDetector(pips_onnx)
        st["pips_onnx"], pip_dets = _time(lambda: pd.detect_batch(crops), args.repeat)
        st["pips_onnx_per_tile"] = st["pips_onnx"] / len(crops)
        res["pip_batch"] = pd.info.batch
        if not args.no_ultralytics and Path(tiles_onnx).with_suffix(".pt").is_file():
            try:
                tu = TileDetector(tiles_onnx, backend="ultralytics")
                st["tiles_ultralytics"], _ = _time(lambda: tu.detect(image), args.repeat)
                pu = PipDetector(pips_onnx, backend="ultralytics")
                st["pips_ultralytics"], _ = _time(lambda: pu.detect_batch(crops), args.repeat)
            except Exception as exc:
                res["notes"].append(f"ultralytics backend failed: {exc!r}")

    # decode
    try:
        from vision.recognition.decode import read_from_pips

        if pip_dets is not None:
            st["decode"], _ = _time(
                lambda: [read_from_pips(pip_dets[i], polys[i], polygon_to_xyxy(polys[i]), 0.9,
                                        0.5, False)
                         for i in range(len(polys))], args.repeat)
    except Exception as exc:
        res["notes"].append(f"decode stage skipped: {exc!r}")

    # score
    try:
        st["score"], positions = _time(lambda: score_positions(deal), args.repeat)
    except Exception as exc:
        res["notes"].append(f"score stage failed: {exc!r}")
        positions = {}

    # draw
    view = {"tiles": [{"face": f, "state": "face_up" if f else "face_down",
                       "polygon": p.tolist(), "position": pos, "confidence": 0.99}
                      for f, p, pos in tiles],
            "positions": positions,
            "position_polygons": layout.get("positions", {}),
            "banker_position": "dealer", "round_id": "r000001"}
    st["draw"], drawn = _time(lambda: draw_round(image, view), args.repeat)
    cv2.imwrite(str(tmp / "overlay.jpg"), drawn)

    per_frame = ["capture", "tiles_onnx", "rectify", "pips_onnx", "decode", "score", "draw"]
    total = sum(st[k] for k in per_frame if k in st)
    res["total_ms"] = total
    res["fps"] = 1000.0 / total if total else None
    res["complete"] = all(k in st for k in per_frame)

    # the real pipeline, end to end
    try:
        from vision.pipeline import Pipeline

        if tiles_onnx is not None and Path(tiles_onnx).parent == models:
            pl = Pipeline(models_dir=models)
            frames = [np.roll(image, i * 3, axis=1) for i in range(args.repeat + 1)]
            it = iter(frames)
            st["pipeline_process"], _ = _time(lambda: pl.process(next(it)), args.repeat)
    except Exception as exc:
        res["notes"].append(f"pipeline stage skipped: {exc!r}")

    res["tmp"] = str(tmp)
    print(f"{'stage':<22}{'ms/frame':>10}")
    for k, v in st.items():
        print(f"{k:<22}{v:>10.1f}")
    print(f"{'TOTAL (per frame)':<22}{total:>10.1f}   -> {res['fps']:.1f} fps "
          f"({'all stages' if res['complete'] else 'some stages missing'}; target >= 10)")
    for n_ in res["notes"]:
        print("note:", n_)
    print(json.dumps(res, indent=1, default=str))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
