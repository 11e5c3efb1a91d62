"""``paigow export``: pre-annotations for labelling tools (vision/exports/), one module per format.

Bad input (no images, an unknown format, a missing image root, ...) is one line naming the value
and exit code 2; under ``--json`` that line is a JSON object ``{"error": ...}`` on stdout.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from scoring.errors import InputError

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")


def register(sub) -> None:
    """Add ``export`` to the sub-parser collection."""
    e = sub.add_parser(
        "export", help="pre-annotations for labelling tools (YOLO, COCO, CVAT, Label Studio) "
                       "plus a review list",
        description="Identify tiles in IMAGES (or read identify results) and write "
                    "pre-annotations each labelling tool loads as written: an ultralytics "
                    "dataset (yolo), COCO JSON, CVAT for images 1.1 XML, Label Studio tasks; "
                    "plus a review list, lowest confidence first (vision/exports/).")
    e.add_argument("images", nargs="*", metavar="IMAGES",
                   help="image files or folders (searched recursively)")
    e.add_argument("--format", dest="formats", action="append", default=None, metavar="FORMAT",
                   help="yolo, coco, cvat or labelstudio; repeat or comma-separate (required)")
    e.add_argument("--out", default=None, metavar="DIR", help="output folder; one sub-folder per format "
                                               "(required)")
    e.add_argument("--results", default=None, metavar="FILE",
                   help="identify results JSON (`paigow identify --json` output) to export "
                        "instead of running the models on IMAGES")
    e.add_argument("--models", default=None, metavar="DIR",
                   help="models folder for identify and the model version (default: "
                        "$PAIGOW_MODELS, else the repository's models/)")
    e.add_argument("--model-version", default=None, metavar="VERSION",
                   help="model version written in Label Studio predictions and COCO info "
                        "(default: the results' model_version, else the models' version "
                        "tiles-<sha8>+pips-<sha8>)")
    e.add_argument("--image-root", default=None, metavar="DIR",
                   help="folder the image names in every format are relative to (default: the "
                        "deepest folder holding every image); for Label Studio local files, "
                        "its LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT")
    e.add_argument("--image-url-prefix", default=None, metavar="PREFIX",
                   help="Label Studio: prefix of data.image before the image name (default "
                        "/data/local-files/?d= ; e.g. https://host/images/ ; '' for bare "
                        "names)")
    e.add_argument("--yolo-task", default="obb", metavar="{obb,detect}",
                   help="YOLO label layout: obb (4 corners, the tile model's) or detect "
                        "(axis-aligned box) (default obb)")
    e.add_argument("--val-fraction", default="0.2", metavar="F",
                   help="YOLO: fraction of images in the val split, in [0, 1) (default 0.2)")
    e.add_argument("--shape", default="polygon", metavar="{polygon,box}",
                   help="CVAT and Label Studio region shape: polygon or box (Label Studio: a "
                        "rotated rectangle) (default polygon)")
    e.add_argument("--no-progress", action="store_true",
                   help="no progress bar while the models read the images")
    e.add_argument("--json", action="store_true",
                   help="print the files written (or the error) as JSON")
    e.set_defaults(func=_export)


def _images(items: list[str]) -> list[str]:
    out = []
    for it in items:
        p = Path(it)
        if p.is_dir():
            found = sorted(str(q) for q in p.rglob("*") if q.suffix.lower() in IMAGE_SUFFIXES)
            if not found:
                raise InputError(f"folder {it!r} holds no image "
                                 f"({', '.join(IMAGE_SUFFIXES)})")
            out += found
        elif p.is_file():
            out.append(str(p))
        else:
            raise InputError(f"image {it!r} does not exist")
    return out


def _export(args) -> int:
    try:
        return _run(args)
    except InputError as exc:
        if not args.json:
            raise
        print(json.dumps({"error": str(exc)}))
        return 2


def _run(args) -> int:
    from vision.exports import FORMATS, default_image_root, export

    if not args.formats:
        raise InputError(f"no --format given: choose from {', '.join(FORMATS)}")
    formats = []
    for f in args.formats:
        formats += [x.strip().lower() for x in f.split(",") if x.strip()]
    bad = [f for f in formats if f not in FORMATS] or ([] if formats else [""])
    if bad:
        raise InputError(f"unknown export format {bad[0]!r}: choose from {', '.join(FORMATS)}")
    if not args.out:
        raise InputError("no --out folder given")
    if args.yolo_task not in ("obb", "detect"):
        raise InputError(f"--yolo-task {args.yolo_task!r} is not obb or detect")
    if args.shape not in ("polygon", "box"):
        raise InputError(f"--shape {args.shape!r} is not polygon or box")
    try:
        val_fraction = float(args.val_fraction)
    except ValueError:
        val_fraction = -1.0
    if not 0.0 <= val_fraction < 1.0:
        raise InputError(f"--val-fraction {args.val_fraction!r} is not a number in [0, 1)")
    if args.image_root is not None and not os.path.isdir(args.image_root):
        raise InputError(f"image root {args.image_root!r} is not an existing folder")
    if args.models is not None and not os.path.isdir(args.models):
        raise InputError(f"models folder {args.models!r} is not an existing folder")
    if args.results:
        if args.images:
            raise InputError(f"give IMAGES or --results, not both (image {args.images[0]!r})")
        try:
            results = json.loads(Path(args.results).read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read identify results {args.results!r}: {exc}") from None
        if isinstance(results, dict):
            results = results.get("results", [results])
        if not isinstance(results, list) or not results:
            raise InputError(f"identify results {args.results!r} hold no image")
    else:
        if not args.images:
            raise InputError("no images given (IMAGES... or --results FILE)")
        paths = _images(args.images)
        from vision.recognition.identify import identify  # lazy: loads the models

        results = identify(paths, progress=not (args.json or args.no_progress),
                           models_dir=args.models)
    model_version = args.model_version or next(
        (r.get("model_version") for r in results
         if isinstance(r, dict) and r.get("model_version")), None)
    if model_version is None:
        from vision.recognition.models import model_version as models_version

        model_version = models_version(args.models)
    image_root = args.image_root or default_image_root(
        [str(r.get("image")) for r in results if isinstance(r, dict) and r.get("image")])
    written = export(results, args.out, formats, model_version=model_version,
                     image_root=image_root, yolo_task=args.yolo_task,
                     val_fraction=val_fraction, cvat_shape=args.shape,
                     ls_shape="polygon" if args.shape == "polygon" else "rectangle",
                     image_url_prefix=args.image_url_prefix)
    n_tiles = sum(len(r.get("tiles") or []) for r in results)
    if args.json:
        print(json.dumps({"images": len(results), "tiles": n_tiles,
                          "image_root": os.path.abspath(image_root),
                          "model_version": model_version, "files": written}, indent=1))
    else:
        for fmt, files in written.items():
            print(f"{fmt}: {', '.join(files)}")
        print(f"{len(results)} image(s), {n_tiles} tile(s); image names relative to "
              f"{os.path.abspath(image_root)}; model version {model_version}")
    return 0
