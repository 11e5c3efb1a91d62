"""``paigow identify``, ``paigow run`` and ``paigow demo``: the vision pipeline from the CLI.

Examples::

    paigow identify photo.png --json
    paigow run table.mp4 --layout table.yaml --out out/ --json
    paigow run 0 --stable 15 --banker 3          # camera 0, seat 3 banks
    paigow run 0 --audit audit.db --table-id t7 --json   # every round into the audit store
    paigow demo --out demo_out
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from scoring.errors import InputError


def _common(p) -> None:
    p.add_argument("--backend", choices=("onnx", "ultralytics"), default="onnx",
                   help="inference backend (default onnx: onnxruntime on CPU)")
    p.add_argument("--models", default=None, metavar="DIR",
                   help="folder with tiles.onnx and pips.onnx (default: the repository's models/)")
    p.add_argument("--scales", default=None, metavar="PX,PX,...",
                   help="tile-model input sizes a still image is read at and fused (multiples "
                        "of 32; default 832,960,1216; 640 = one pass at the model's size)")


def _scales(args):
    """The --scales option as a tuple of ints (None: the default)."""
    if args.scales is None:
        return None
    try:
        sizes = tuple(int(v) for v in args.scales.split(",") if v.strip())
    except ValueError:
        sizes = ()
    if not sizes or any(v < 32 or v % 32 or v > 4096 for v in sizes):
        raise InputError(f"--scales must be multiples of 32 px up to 4096, comma-separated, "
                         f"got {args.scales!r}")
    return sizes


def register(sub) -> None:
    """Add ``identify``, ``run`` and ``demo`` to the argparse sub-parser collection."""
    p = sub.add_parser("identify", help="identify the tiles in still images",
                       description="Detect every tile in each image and read its face "
                                   "(unknown when the spot reads disagree).")
    p.add_argument("images", nargs="+", metavar="IMAGE", help="image files, folders or globs")
    p.add_argument("--pad", type=float, default=0.0, metavar="FRACTION",
                   help="context border for close-ups whose tile fills the picture, as a "
                        "fraction of the longer side (e.g. 0.25; default 0)")
    p.add_argument("--single", action="store_true",
                   help="each image is a close-up of exactly one tile (catalogue photo or "
                        "drawing): take its outline from the picture instead of the tile model")
    p.add_argument("--no-closeups", action="store_true",
                   help="tile model only: do not propose a one-tile close-up's picture outline")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument("--min-confidence", type=float, default=0.5,
                   help="faces below this confidence are unknown (default 0.5)")
    _common(p)
    p.set_defaults(func=_identify)

    p = sub.add_parser("run", help="run the table pipeline on a camera, video, stream or images",
                       description="Detect, read, group, track and settle rounds; writes an "
                                   "annotated video (or images) and events.jsonl into --out.")
    p.add_argument("source", metavar="SOURCE",
                   help="camera index (0), video file, rtsp/http URL, image, folder or glob")
    p.add_argument("--layout", default=None, metavar="FILE",
                   help="layout YAML (positions, rules, commission, table_id); default: "
                        "automatic grouping, dealer = group nearest the top centre")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="output folder for the annotated video/images and events.jsonl")
    p.add_argument("--show", action="store_true", help="show the annotated frames in a window")
    p.add_argument("--json", action="store_true",
                   help="print one JSON line per settled round on stdout")
    p.add_argument("--stable", type=int, default=None, metavar="N",
                   help="frames a position must stay identical to be final (default 10 for "
                        "video; images are independent tables)")
    p.add_argument("--banker", default=None, metavar="POS",
                   help="banking position: dealer (default) or a seat id 1..7")
    p.add_argument("--table-id", default=None, metavar="ID", help="table id written in events")
    p.add_argument("--audit", default=None, metavar="DB",
                   help="append every settled round to this audit store (SQLite file, created "
                        "when missing; key frames in DB.frames/) as soon as it settles; check "
                        "it with 'paigow audit verify DB'")
    p.add_argument("--min-confidence", type=float, default=0.5,
                   help="faces below this confidence are unknown (default 0.5)")
    p.add_argument("--max-frames", type=int, default=None, metavar="N",
                   help="stop after N frames")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    _common(p)
    p.set_defaults(func=_run)

    p = sub.add_parser("demo", help="render a table round and run the full pipeline on it",
                       description="Renders a short held-out table round (vision.synth), runs "
                                   "detect -> decode -> settle, writes the annotated video and "
                                   "events.jsonl and prints the settlement table.")
    p.add_argument("--out", default="demo_out", metavar="DIR", help="output folder (demo_out)")
    p.add_argument("--json", action="store_true", help="print the round events as JSON lines")
    _common(p)
    p.set_defaults(func=_demo)


def _models(args):
    from vision import MODELS_DIR

    return Path(args.models) if args.models else MODELS_DIR


def _check_conf(value: float) -> None:
    from scoring.errors import InputError

    if not 0.0 <= value <= 1.0:
        raise InputError(f"--min-confidence must be in [0, 1], got {value}")


def _identify(args) -> int:
    from vision.pipeline import identify

    _check_conf(args.min_confidence)
    if not 0.0 <= args.pad <= 2.0:
        raise InputError(f"--pad must be a fraction in [0, 2], got {args.pad}")
    res = identify(args.images, models_dir=_models(args), backend=args.backend,
                   min_confidence=args.min_confidence, progress=not args.json, pad=args.pad,
                   single=args.single, closeups=not args.no_closeups, scales=_scales(args))
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    for item in res:
        faces = [t["face"] or ("back" if t["state"] == "face_down" else "?") for t in item["tiles"]]
        print(f"{item['image']}: {len(faces)} tile(s): {' '.join(faces) if faces else '-'}")
    return 0


def _run(args) -> int:
    from scoring.errors import InputError
    from vision.pipeline import run, settlement_table

    _check_conf(args.min_confidence)
    if args.stable is not None and args.stable < 1:
        raise InputError(f"--stable must be >= 1, got {args.stable}")
    if args.max_frames is not None and args.max_frames < 1:
        raise InputError(f"--max-frames must be >= 1, got {args.max_frames}")
    if args.banker is not None:
        from scoring.settle import POSITIONS

        if args.banker.strip().lower() not in POSITIONS:
            raise InputError(f"--banker {args.banker!r} is not 'dealer' or a seat id 1..7")
    summary = run(args.source, layout=args.layout, out_dir=args.out, show=args.show,
                  json_events=args.json, models_dir=_models(args), backend=args.backend,
                  n_stable=args.stable, banker=args.banker, table_id=args.table_id,
                  progress=not args.no_progress and not args.json,
                  max_frames=args.max_frames, min_confidence=args.min_confidence,
                  audit=args.audit, scales=_scales(args))
    out = sys.stderr if args.json else sys.stdout
    if not args.json:
        for ev in summary["events"]:
            print(settlement_table(ev), file=out)
    ms = summary["ms_per_frame"]
    print(f"{summary['frames']} frame(s), {summary['rounds']} round(s); ms/frame "
          + ", ".join(f"{k} {v}" for k, v in ms.items())
          + f"; pipeline {summary['fps_pipeline']} fps, wall {summary.get('fps_wall')} fps"
          + (f"; output {summary['output']}, events {summary['events_path']}"
             if summary["events_path"] else ""), file=out)
    if "audit" in summary:
        a = summary["audit"]
        print(f"audit store {a['store']}: {a['appended']} round(s) appended, head "
              f"{a['head_hash'] or '-'}", file=out)
    return 0


def _demo(args) -> int:
    from vision.pipeline import demo

    demo(out_dir=args.out, models_dir=_models(args), backend=args.backend,
         json_events=args.json)
    return 0
