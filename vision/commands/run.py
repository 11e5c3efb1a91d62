"""``paigow identify``, ``paigow run`` and ``paigow demo``: the vision pipeline from the CLI.

Examples::

    paigow identify photo.png --json
    paigow run table.mp4 --layout table.yaml --out out/ --json
    paigow run 0 --stable 15 --banker 3          # camera 0, seat 3 banks
    paigow run 0 --audit audit.db --table-id t7 --json   # every round into the audit store
    paigow demo --out demo_out

Exit codes of ``run``: 0 the source ended (or ``--max-frames``), 2 bad input or a full disk
(one line naming it), 3 the source ended but the audit store stayed unreachable to the end:
rounds wait in its spool, stored at the next start on the store (a warning line names the
spool; docs/audit.md, "When the database is down"), 130 Ctrl-C, 143 stopped by SIGTERM after
closing its outputs (the open round stored, the video playable; docs/audit.md).
"""

from __future__ import annotations

import json
import sys

from scoring.errors import InputError

from vision.commands.common import (add_model_options, add_reading_options, add_session_options,
                                    reading_config, run_config)


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
    add_reading_options(p)
    p.set_defaults(func=_identify)

    p = sub.add_parser("run", help="run the table pipeline on a camera, video, stream or images",
                       description="Detect, read, group, track and settle rounds; writes an "
                                   "annotated video (or images) and events.jsonl into --out. "
                                   "Every round is reported, settled or not (with reasons).")
    add_session_options(p)
    p.add_argument("--show", action="store_true", help="show the annotated frames in a window")
    p.add_argument("--max-frames", type=int, default=None, metavar="N",
                   help="stop after N frames")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_run)

    p = sub.add_parser("demo", help="render a table round and run the full pipeline on it",
                       description="Renders a short held-out table round (vision.synth.render), runs "
                                   "detect -> decode -> settle, writes the annotated video and "
                                   "events.jsonl and prints the settlement table.")
    p.add_argument("--out", default="demo_out", metavar="DIR", help="output folder (demo_out)")
    p.add_argument("--json", action="store_true", help="print the round events as JSON lines")
    add_model_options(p, scales=False)
    p.set_defaults(func=_demo)


def _identify(args) -> int:
    from vision.recognition.identify import identify

    rec = reading_config(args)
    if not 0.0 <= args.pad <= 2.0:
        raise InputError(f"--pad must be a fraction in [0, 2], got {args.pad}")
    res = identify(args.images, recognition=rec, progress=not args.json, pad=args.pad,
                   single=args.single, closeups=not args.no_closeups)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    for item in res:
        faces = [t["face"] or ("back" if t["state"] == "face_down" else "?") for t in item["tiles"]]
        print(f"{item['image']}: {len(faces)} tile(s): {' '.join(faces) if faces else '-'}")
    return 0


def report(summary: dict, as_json: bool) -> None:
    """Print a session's rounds (settlement tables, unless they went out as JSON lines) and
    its one-line summary (on stderr under ``--json``)."""
    from vision.io.views import settlement_table

    out = sys.stderr if as_json else sys.stdout
    if not as_json:
        for ev in summary["events"]:
            print(settlement_table(ev), file=out)
    settled = sum(1 for e in summary["events"] if e.get("settled", True))
    ms = summary.get("ms_per_frame") or {}
    cs = summary.get("capture_stats") or {}
    skipped, gaps = cs.get("skipped_corrupt", 0), cs.get("gaps", 0)
    print(f"{summary.get('frames', 0)} frame(s), {summary.get('rounds', 0)} round(s) "
          f"({settled} settled, {len(summary['events']) - settled} not settled)"
          + (f", {skipped} unreadable frame(s) skipped" if skipped else "")
          + (f", {gaps} feed gap(s) totalling {cs.get('gaps_s', 0.0):.1f} s" if gaps else "")
          + "; ms/frame "
          + ", ".join(f"{k} {v}" for k, v in ms.items())
          + f"; pipeline {summary.get('fps_pipeline')} fps, wall {summary.get('fps_wall')} fps"
          + (f"; output {summary['output']}, events {summary['events_path']}"
             if summary.get("events_path") else ""), file=out)
    if "audit" in summary:
        a = summary["audit"]
        again = a.get("already_recorded", 0)
        print(f"audit store {a['store']}: {a['appended']} round(s) appended"
              + (f", {again} already recorded (not stored again)" if again else "")
              + f", head {a['head_hash'] or '-'}", file=out)


def _run(args) -> int:
    from vision.session import Session

    if args.max_frames is not None and args.max_frames < 1:
        raise InputError(f"--max-frames must be >= 1, got {args.max_frames}")
    cfg = run_config(args, progress=not args.no_progress and not args.json, show=args.show,
                     max_frames=args.max_frames)
    summary = Session(cfg).run()
    report(summary, args.json)
    spooled = (summary.get("audit") or {}).get("spooled") or 0
    if spooled:  # the store was unreachable to the end: the rounds wait, durably
        a = summary["audit"]
        print(f"paigow run: warning: audit store {a['store']} unreachable "
              f"({a.get('unreachable') or 'at the end'}): {spooled} round(s) spooled in "
              f"{a['spool']}, stored at the next start on this store (exit code 3)",
              file=sys.stderr)
    if summary.get("stopped") == "SIGTERM":  # stopped cleanly; the shell's code for SIGTERM
        print("paigow run: stopped by SIGTERM (outputs closed, store consistent)",
              file=sys.stderr)
        return 128 + 15
    return 3 if spooled else 0


def _demo(args) -> int:
    from vision.demo import demo
    from vision.io.outputs import check_out_dir

    check_out_dir(args.out)

    demo(out_dir=args.out, models_dir=args.models, backend=args.backend,
         json_events=args.json)
    return 0
