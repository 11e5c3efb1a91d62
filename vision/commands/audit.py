"""``paigow audit verify|check-payouts`` and ``paigow export`` (audit store and pre-annotations).

Exit codes: 0 ok / no differences, 1 the chain is broken or payouts differ, 2 bad input.
"""

from __future__ import annotations

import json
from pathlib import Path

from scoring.errors import InputError

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")


def register(sub) -> None:
    """Add ``audit`` (verify, check-payouts) and ``export`` to the sub-parser collection."""
    p = sub.add_parser("audit", help="audit store of settled rounds: verify, check payouts",
                       description="Audit store of settled rounds (vision/audit.py).")
    asub = p.add_subparsers(dest="audit_command", required=True, metavar="ACTION")

    v = asub.add_parser("verify", help="recompute the hash chain; name the first broken record")
    v.add_argument("db", help="audit store (SQLite file or postgresql:// URL)")
    v.add_argument("--no-frames", action="store_true", help="do not re-hash key frames")
    v.add_argument("--frames-dir", help="key-frame folder (default <db>.frames)")
    v.add_argument("--json", action="store_true", help="print the result as JSON")
    v.set_defaults(func=_verify)

    c = asub.add_parser("check-payouts",
                        help="compare a payout CSV (round_id|time, seat, amount_paid) with the "
                             "stored nets")
    c.add_argument("db", help="audit store")
    c.add_argument("payouts", help="CSV with columns round_id or time, seat, amount_paid "
                                   "(docs/payouts.md)")
    c.add_argument("--report-unknown", action="store_true",
                   help="list rounds missing from the store as differences (default: exit 2)")
    c.add_argument("--json", action="store_true", help="print the differences as JSON")
    c.set_defaults(func=_check_payouts)

    e = sub.add_parser("export", help="pre-annotations for labelling tools (YOLO, COCO, CVAT, "
                                      "Label Studio) plus a review list",
                       description="Identify tiles in IMAGES and write pre-annotations with "
                                   "confidence (vision/exports/).")
    e.add_argument("images", nargs="*", help="image files or folders")
    e.add_argument("--format", dest="formats", action="append", required=True,
                   help="yolo, coco, cvat or labelstudio (repeat or comma-separate)")
    e.add_argument("--out", required=True, help="output folder")
    e.add_argument("--results", help="identify() results JSON to export instead of running "
                                     "the models on IMAGES")
    e.add_argument("--models", default=None,
                   help="models folder for identify (default: $PAIGOW_MODELS, else the repository's "
                        "models/)")
    e.add_argument("--model-version", default=None, help="model version written in the export")
    e.add_argument("--yolo-task", choices=("obb", "detect"), default="obb")
    e.add_argument("--shape", choices=("polygon", "box"), default="polygon",
                   help="CVAT / Label Studio shape")
    e.add_argument("--image-url-prefix", default=None,
                   help="Label Studio: prefix for data.image (e.g. /data/local-files/?d=)")
    e.add_argument("--json", action="store_true", help="print the files written as JSON")
    e.set_defaults(func=_export)


def _verify(args) -> int:
    from vision.audit import verify

    res = verify(args.db, check_frames=not args.no_frames, frames_dir=args.frames_dir)
    if args.json:
        print(json.dumps(res.to_dict(), indent=1))
    else:
        print(res)
        if res.orphan_frames:
            print(f"note: {len(res.orphan_frames)} frame file(s) no record names "
                  f"(an interrupted append): {', '.join(res.orphan_frames[:5])}")
    return 0 if res.ok else 1


def _check_payouts(args) -> int:
    from vision.audit import check_payouts

    diffs = check_payouts(args.db, args.payouts,
                          unknown="report" if args.report_unknown else "error")
    if args.json:
        print(json.dumps({"differences": diffs, "count": len(diffs)}, indent=1))
    else:
        for d in diffs:
            ref = d["round_id"] or d["time"]
            print(f"{d['kind']}: round {ref} seat {d['seat']}: paid {d['paid']}, computed "
                  f"{d['computed']}, difference {d['difference']}")
        print(f"{len(diffs)} difference(s)")
    return 1 if diffs else 0


def _images(items: list[str]) -> list[str]:
    out = []
    for it in items:
        p = Path(it)
        if p.is_dir():
            out += sorted(str(q) for q in p.rglob("*") if q.suffix.lower() in IMAGE_SUFFIXES)
        elif p.is_file():
            out.append(str(p))
        else:
            raise InputError(f"image {it!r} does not exist")
    return out


def _export(args) -> int:
    from vision.exports import FORMATS, export

    formats = []
    for f in args.formats:
        formats += [x.strip().lower() for x in f.split(",") if x.strip()]
    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise InputError(f"unknown export format {bad[0]!r}: choose from {', '.join(FORMATS)}")
    model_version = args.model_version
    if args.results:
        try:
            results = json.loads(Path(args.results).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read identify results {args.results!r}: {exc}") from None
        if isinstance(results, dict):
            results = results.get("results", [results])
    else:
        paths = _images(args.images)
        if not paths:
            raise InputError("no images given (IMAGES... or --results FILE)")
        from vision.identify import identify  # lazy: loads the models

        results = identify(paths, models_dir=args.models)
    if model_version is None:
        model_version = next((r.get("model_version") for r in results
                              if isinstance(r, dict) and r.get("model_version")), "paigow")
    written = export(results, args.out, formats, model_version=model_version,
                     yolo_task=args.yolo_task, cvat_shape=args.shape,
                     ls_shape="polygon" if args.shape == "polygon" else "rectangle",
                     image_url_prefix=args.image_url_prefix)
    n_tiles = sum(len(r.get("tiles") or []) for r in results)
    if args.json:
        print(json.dumps({"images": len(results), "tiles": n_tiles, "files": written},
                         indent=1))
    else:
        for fmt, files in written.items():
            print(f"{fmt}: {', '.join(files)}")
        print(f"{len(results)} image(s), {n_tiles} tile(s)")
    return 0
