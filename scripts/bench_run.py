#!/usr/bin/env python
"""Speed of ``paigow run`` end to end on a 1080p video of a full table round (32 face-up tiles).

Renders a round with the project's renderer (held-out seed, :func:`vision.demo.demo_frames`):
``--deal`` frames of dealing in which the picture changes in every frame (positions appear one
after another, a hand-shaped occluder moves over the newest), then ``--still`` frames of the
still table; writes it as an mp4v video, then runs :func:`vision.session.run` on the file --
the code behind ``paigow run VIDEO --out DIR`` (capture, detect, decode, table/score, overlay,
annotated video and events.jsonl written).

Reported: frames per second end to end (wall clock, incl. the models' start, video decoding
and writing), the CPU seconds the run took (every thread of the process), each model's
inference calls (``inference``: calls, distinct input shapes, and the seconds spent in calls
of a shape the model had not seen before against calls of a shape it had -- OpenVINO builds
its kernels for each new input shape on that shape's first call, a cost a short run pays in
full and a long-running table once), the
per-stage split from the pipeline's own timers (capture, detect, decode, score, draw; mean ms
per frame), and the per-frame time of ``Pipeline.process`` separately for frames whose picture
changed (dealing) and still frames, each as mean / median / p95 ms and fps.

Usage::

    .venv/bin/python scripts/bench_run.py [--deal 60] [--still 60] [--seed 1000901] [--json]

Exit code 0; 2 for bad arguments or missing models.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from vision.config import backend_choices  # noqa: E402  (after the path above)


def _stats(ms: list[float]) -> dict:
    if not ms:
        return {"frames": 0}
    s = sorted(ms)
    mean = statistics.fmean(s)
    return {"frames": len(s), "mean_ms": round(mean, 1), "median_ms": round(statistics.median(s), 1),
            "p95_ms": round(s[min(len(s) - 1, int(0.95 * len(s)))], 1),
            "fps": round(1000.0 / mean, 1) if mean > 0 else None}


def _time_inference(calls: list) -> list:
    """Record every backend inference call as ``(model file stem, input shape, seconds)`` in
    ``calls``; returns ``[(backend class, its original infer)]`` to put back."""
    from vision.recognition import backends as B

    patched = []
    for cls in (B.OpenVINOBackend, B.OnnxRuntimeBackend):
        fn = cls.infer

        def infer(self, blob, _fn=fn):
            t0 = time.perf_counter()
            out = _fn(self, blob)
            calls.append((Path(self.path).stem, tuple(blob.shape), time.perf_counter() - t0))
            return out

        cls.infer = infer
        patched.append((cls, fn))
    return patched


def _inference_stats(calls: list) -> dict:
    """Per model: calls, distinct input shapes, seconds in first calls of a shape and in the
    rest."""
    out: dict = {}
    seen: set = set()
    for name, shape, dt in calls:
        v = out.setdefault(name, {"calls": 0, "input_shapes": 0, "first_shape_s": 0.0,
                                  "repeat_shape_s": 0.0})
        v["calls"] += 1
        if (name, shape) in seen:
            v["repeat_shape_s"] += dt
        else:
            seen.add((name, shape))
            v["input_shapes"] += 1
            v["first_shape_s"] += dt
    for v in out.values():
        v["first_shape_s"], v["repeat_shape_s"] = (round(v["first_shape_s"], 3),
                                                   round(v["repeat_shape_s"], 3))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deal", type=int, default=60, help="changing frames (dealing), default 60")
    ap.add_argument("--still", type=int, default=60, help="still frames after the deal, default 60")
    ap.add_argument("--seed", type=int, default=1_000_901, help="render seed (held out: >= 1e6)")
    ap.add_argument("--backend", default=None, choices=backend_choices(),
                    help="inference backend (default: the product's)")
    ap.add_argument("--json", action="store_true", help="print the result as JSON")
    args = ap.parse_args(argv)
    if args.deal < 1 or args.still < 0:
        print(f"bench_run: --deal must be >= 1 and --still >= 0, got {args.deal}, {args.still}",
              file=sys.stderr)
        return 2

    import cv2

    from scoring.errors import InputError
    from vision import pipeline as P
    from vision.demo import demo_frames
    from vision.session import run

    frames, scene = demo_frames(args.seed, n_deal=args.deal, n_still=args.still)
    n_up = sum(1 for t in scene.tiles if t.state == "face_up")
    per_frame: list[float] = []
    orig = P.Pipeline.process
    calls: list[tuple[str, tuple, float]] = []  # (model file stem, input shape, seconds)
    patched = _time_inference(calls)

    def timed(self, frame, **kw):
        t0 = time.perf_counter()
        out = orig(self, frame, **kw)
        per_frame.append(1000 * (time.perf_counter() - t0))
        return out

    with tempfile.TemporaryDirectory() as tmp:
        video = Path(tmp) / "table.mp4"
        h, w = frames[0].image.shape[:2]
        vw = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"mp4v"), 30.0, (w, h))
        for f in frames:
            vw.write(f.image)
        vw.release()
        P.Pipeline.process = timed
        try:
            t0, c0 = time.perf_counter(), time.process_time()
            summary = run(str(video), out_dir=Path(tmp) / "out", backend=args.backend,
                            progress=False, stdout=open("/dev/null", "w"))
            wall = time.perf_counter() - t0
            cpu = time.process_time() - c0
        except InputError as exc:
            print(f"bench_run: {exc}", file=sys.stderr)
            return 2
        finally:
            P.Pipeline.process = orig
            for cls, fn in patched:
                cls.infer = fn
        events = (Path(tmp) / "out" / "events.jsonl").read_text().splitlines()
    n = len(per_frame)
    res = {
        "video": {"size": [w, h], "frames": len(frames), "changing": args.deal, "still": args.still,
                  "face_up_tiles": n_up, "seed": args.seed},
        "backend": args.backend or "default",
        "fps_end_to_end": round(n / wall, 2) if wall > 0 else None,
        "wall_s": round(wall, 2),
        # CPU seconds of the whole process (every thread) for the run: what a loaded machine
        # does not distort as it does the wall clock
        "cpu_s": round(cpu, 2),
        "ms_per_frame": summary.get("ms_per_frame"),
        "detector_runs": summary.get("detector_runs"),
        "region_runs": summary.get("region_runs"),
        "tiles_decoded": summary.get("tiles_decoded"),
        "rounds_settled": len(events),
        "inference": _inference_stats(calls),
        "process_changing": _stats(per_frame[:min(args.deal, n)]),
        "process_still": _stats(per_frame[args.deal:]),
    }
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    v = res["video"]
    print(f"video: {v['size'][0]}x{v['size'][1]}, {v['frames']} frames ({v['changing']} changing, "
          f"{v['still']} still), {v['face_up_tiles']} face-up tiles, backend {res['backend']}")
    print(f"paigow run end to end: {res['fps_end_to_end']} fps ({res['wall_s']} s wall, "
          f"{res['cpu_s']} s CPU), "
          f"{res['rounds_settled']} round(s) settled, tile detector ran {res['detector_runs']} "
          f"times ({res['region_runs']} on a region), {res['tiles_decoded']} tile decodes")
    print("per stage, mean ms/frame: " + ", ".join(f"{k} {v}" for k, v in res["ms_per_frame"].items()))
    for name, v in res["inference"].items():
        print(f"{name}: {v['calls']} calls, {v['input_shapes']} input shapes; "
              f"{v['first_shape_s']} s in first calls of a shape, {v['repeat_shape_s']} s in the rest")
    for k in ("process_changing", "process_still"):
        s = res[k]
        if s["frames"]:
            print(f"{k}: {s['frames']} frames, mean {s['mean_ms']} ms, median {s['median_ms']} ms, "
                  f"p95 {s['p95_ms']} ms = {s['fps']} fps")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
