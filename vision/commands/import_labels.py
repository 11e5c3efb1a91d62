"""``paigow import``: corrected labels from a labelling tool -> the tile model's training set
(vision/exports/imports.py; docs/labelling.md).

Bad input (missing labels or images, an unknown format or label name) raises
:class:`scoring.errors.InputError`: one line naming the value, exit code 2 (under ``--json`` also
the CLI's JSON error object on stdout).
"""

from __future__ import annotations

import json

from scoring.errors import InputError


def register(sub) -> None:
    """Add ``import`` to the sub-parser collection."""
    p = sub.add_parser(
        "import", help="corrected labels (YOLO, COCO, CVAT, Label Studio) -> a tile-model "
                       "training set and config for `paigow train`",
        description="Read labels corrected in a labelling tool (the formats `paigow export` "
                    "writes) and write the tile model's training set (classes tile, "
                    "tile_back), a training config that fine-tunes the shipped tile model, "
                    "and labels.json (the labels with their faces). The pip model gets no "
                    "set: tool labels hold no spot boxes (docs/labelling.md).")
    p.add_argument("labels", metavar="LABELS",
                   help="the labels: a YOLO dataset folder, a COCO JSON, a CVAT XML, a Label "
                        "Studio JSON export (or the folder `paigow export` wrote for it)")
    p.add_argument("--format", dest="fmt", default=None, metavar="FORMAT",
                   help="yolo, coco, cvat or labelstudio (default: told from the files)")
    p.add_argument("--image-root", default=None, metavar="DIR",
                   help="folder the labels' image names are relative to, where the images "
                        "are not in an images/ folder beside the labels")
    p.add_argument("--out", default=None, metavar="DIR", help="output folder (required)")
    p.add_argument("--val-fraction", default="0.2", metavar="F",
                   help="fraction of images held out for validation, in [0, 1) (default 0.2)")
    p.add_argument("--base", default=None, metavar="MODEL",
                   help="weights or model YAML the config trains from (default: the shipped "
                        "models/tiles.pt, fine-tuned)")
    p.add_argument("--imgsz", default="640", metavar="PX",
                   help="training input size written in the config, px (default 640)")
    p.add_argument("--epochs", default="30", metavar="N",
                   help="epochs written in the config (default 30; `paigow train --epochs` "
                        "overrides)")
    p.add_argument("--json", action="store_true", help="print the counts and files as JSON")
    p.set_defaults(func=_run)


def _int(text: str, option: str, low: int) -> int:
    try:
        v = int(text)
    except ValueError:
        v = low - 1
    if v < low:
        raise InputError(f"{option} {text!r} is not an integer >= {low}")
    return v


def _run(args) -> int:
    from vision.exports.imports import IMPORT_FORMATS, read_labels, write_training_set

    if args.fmt is not None and args.fmt not in IMPORT_FORMATS:
        raise InputError(f"--format {args.fmt!r} is not one of {', '.join(IMPORT_FORMATS)}")
    if not args.out:
        raise InputError("no --out folder given")
    try:
        val_fraction = float(args.val_fraction)
    except ValueError:
        val_fraction = -1.0
    if not 0.0 <= val_fraction < 1.0:
        raise InputError(f"--val-fraction {args.val_fraction!r} is not a number in [0, 1)")
    imgsz = _int(args.imgsz, "--imgsz", 32)
    epochs = _int(args.epochs, "--epochs", 1)
    records = read_labels(args.labels, args.fmt, args.image_root)
    summary = write_training_set(records, args.out, val_fraction=val_fraction,
                                 base_model=args.base, imgsz=imgsz, epochs=epochs)
    if args.json:
        print(json.dumps(summary, indent=1))
    else:
        print(f"{summary['images']} image(s) ({summary['train']} train, {summary['val']} val): "
              f"{summary['tile']} tile, {summary['tile_back']} tile_back; "
              f"train with: paigow train --config {summary['config']}")
    return 0
