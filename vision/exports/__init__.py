"""Pre-annotation exports of identify() results, for labelling tools; one module per format.

Input everywhere: the list that ``vision.pipeline.identify(paths)`` returns, one dict per image::

    {"image": "path/to/img.jpg", "width": W, "height": H,          # width/height optional
     "tiles": [{"face": "1-5", "state": "face_up|face_down|unknown", "confidence": 0.99,
                "xyxy": [x1, y1, x2, y2], "polygon": [[x, y], [x, y], [x, y], [x, y]]}]}

Coordinates are image pixels. When ``width``/``height`` are missing they are read from the
image file with OpenCV (:func:`normalise_results`).

Classes (one list for every format, :data:`CLASS_NAMES`, ASCII): the 21 faces in rank order
(``"6-6"``, ``"1-1"``, ..., ``"1-2"``; index = ``scoring.tiles.Tile.index``), then
``"tile_back"`` (a face-down tile) and ``"unknown"`` (a face-up tile whose face was not read).
A labeller corrects the class; the detector's confidence rides along as a score.

Image names: COCO ``file_name``, CVAT ``<image name>``, Label Studio ``data.image`` and the YOLO
``images.txt`` name each image by its path relative to an image root (:func:`image_names`;
default: the deepest folder holding every image), POSIX separators, so an importer that matches
images by name under that root finds them.

Formats: :mod:`.yolo` (an ultralytics dataset: images, labels, data.yaml with train/val;
confidences in a side file), :mod:`.coco` (dataset JSON + results JSON, loadable by pycocotools),
:mod:`.cvat` (CVAT for images 1.1 XML), :mod:`.labelstudio` (tasks with predictions that keep the
tile's rotation), and :mod:`.review` (every tile, lowest confidence first, CSV + JSON).
:func:`export` writes any of them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from scoring.errors import InputError
from scoring.tiles import FACES, parse_tile

__all__ = ["CLASS_NAMES", "FORMATS", "class_index", "class_name", "normalise_results", "export",
           "image_names", "default_image_root", "unique_stems"]

CLASS_NAMES: tuple[str, ...] = tuple(t.face for t in FACES) + ("tile_back", "unknown")
"""23 class names: 21 faces (rank order), ``tile_back``, ``unknown``."""
TILE_BACK_ID = 21
UNKNOWN_ID = 22
FORMATS = ("yolo", "coco", "cvat", "labelstudio")


def class_name(tile: Mapping) -> str:
    """The class name of one identified tile: its face for a read face-up tile, ``tile_back``
    for a face-down one, ``unknown`` otherwise.

    Raises:
        InputError: for a face text that is not a pai gow face, or an unknown state.
    """
    state = tile.get("state", "face_up")
    if state == "face_down":
        return "tile_back"
    if state not in ("face_up", "unknown"):
        raise InputError(f"tile state {state!r} is not face_up, face_down or unknown")
    face = tile.get("face")
    if state == "unknown" or face in (None, "", "unknown"):
        return "unknown"
    return parse_tile(face).face


def class_index(tile: Mapping) -> int:
    """Index of :func:`class_name` in :data:`CLASS_NAMES` (0..22)."""
    return CLASS_NAMES.index(class_name(tile))


def _polygon(t: Mapping) -> list[list[float]]:
    poly = t.get("polygon")
    if poly is not None:
        pts = [[float(p[0]), float(p[1])] for p in poly]
        if len(pts) < 3:
            raise InputError(f"tile polygon {poly!r} has fewer than 3 points")
        return pts
    xyxy = t.get("xyxy")
    if xyxy is None or len(xyxy) != 4:
        raise InputError(f"tile without polygon or xyxy box: {dict(t)!r}")
    x1, y1, x2, y2 = (float(v) for v in xyxy)
    return [[x1, y1], [x2, y1], [x2, y2], [x1, y2]]


def _xyxy(t: Mapping, poly: list[list[float]]) -> list[float]:
    xyxy = t.get("xyxy")
    if xyxy is not None and len(xyxy) == 4:
        return [float(v) for v in xyxy]
    xs, ys = [p[0] for p in poly], [p[1] for p in poly]
    return [min(xs), min(ys), max(xs), max(ys)]


def normalise_results(results: Iterable[Mapping]) -> list[dict]:
    """Check and complete identify() results: width/height read from the image when missing,
    every tile given ``class_name``, ``class_id``, ``polygon`` (list of [x, y] px), ``xyxy``
    and a float ``confidence`` in [0, 1].

    Raises:
        InputError: naming the image when its size is missing and the file cannot be read, or a
            tile lacks geometry, or a confidence is outside [0, 1].
    """
    out = []
    for r in results:
        if not isinstance(r, Mapping) or "image" not in r:
            raise InputError(f"identify result without 'image': {r!r}")
        w, h = r.get("width"), r.get("height")
        if not w or not h:
            import cv2

            img = cv2.imread(str(r["image"]), cv2.IMREAD_UNCHANGED)
            if img is None:
                raise InputError(f"cannot read image {str(r['image'])!r} to get its size")
            h, w = img.shape[:2]
        tiles = []
        for t in r.get("tiles") or []:
            poly = _polygon(t)
            conf = float(t.get("confidence", 0.0))
            if not 0.0 <= conf <= 1.0:
                raise InputError(f"{r['image']}: confidence {conf!r} outside [0, 1]")
            name = class_name(t)
            tiles.append({**dict(t), "polygon": poly, "xyxy": _xyxy(t, poly),
                          "confidence": conf, "class_name": name,
                          "class_id": CLASS_NAMES.index(name)})
        out.append({**dict(r), "image": str(r["image"]), "width": int(w), "height": int(h),
                    "tiles": tiles})
    return out


def unique_stems(paths: Sequence[str]) -> list[str]:
    """A file stem per image, unique within the export (``a/img.jpg``, ``b/img.jpg`` ->
    ``img``, ``img_1``)."""
    seen: dict[str, int] = {}
    out = []
    for p in paths:
        stem = Path(p).stem
        if stem in seen:
            seen[stem] += 1
            cand = f"{stem}_{seen[stem]}"
            while cand in seen:
                seen[stem] += 1
                cand = f"{stem}_{seen[stem]}"
            stem = cand
        seen.setdefault(stem, 0)
        out.append(stem)
    return out


def default_image_root(paths: Sequence[str]) -> str:
    """The deepest folder holding every image of ``paths`` (absolute); ``"."`` resolved when
    ``paths`` is empty."""
    if not paths:
        return os.path.abspath(".")
    return os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in paths])


def image_names(paths: Sequence[str], image_root: str | os.PathLike | None = None) -> list[str]:
    """Each image's name relative to ``image_root`` (POSIX separators): ``/data/t/a/1.jpg``
    under root ``/data/t`` -> ``a/1.jpg``. ``image_root`` None: :func:`default_image_root`.

    Raises:
        InputError: naming the root when it is not an existing folder, or the first image that
            does not lie under it.
    """
    if image_root is None:
        root = default_image_root(paths)
    else:
        root = os.path.abspath(os.fspath(image_root))
        if not os.path.isdir(root):
            raise InputError(f"image root {os.fspath(image_root)!r} is not an existing folder")
    out = []
    for p in paths:
        rel = os.path.relpath(os.path.abspath(p), root)
        if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
            raise InputError(f"image {p!r} is not under the image root {str(image_root or root)!r}")
        out.append(Path(rel).as_posix())
    return out


def export(results: Iterable[Mapping], out_dir: str | os.PathLike,
           formats: Sequence[str] = FORMATS, *, model_version: str | None = None,
           image_root: str | os.PathLike | None = None, review: bool = True,
           **options) -> dict[str, list[str]]:
    """Write the pre-annotation exports ``formats`` (and the review list) under ``out_dir``:
    ``out_dir/yolo``, ``out_dir/coco``, ``out_dir/cvat``, ``out_dir/labelstudio``,
    ``out_dir/review``.

    Args:
        results: identify() results (module docstring).
        formats: any of :data:`FORMATS`.
        model_version: written into Label Studio predictions and the COCO info; None: the
            version of the models in ``vision.pipeline.MODELS_DIR``
            (:func:`vision.pipeline.model_version`).
        image_root: folder the image names are relative to (:func:`image_names`).
        options: ``yolo_task`` ("obb" | "detect"), ``val_fraction`` (YOLO, default 0.2),
            ``cvat_shape`` ("polygon" | "box"), ``ls_shape`` ("polygon" | "rectangle"),
            ``image_url_prefix`` (Label Studio, default ``"/data/local-files/?d="``).

    Returns:
        ``{format: [written file paths]}``.

    Raises:
        InputError: for an unknown format, bad results (see :func:`normalise_results`), an image
            root that is missing or does not hold every image.
    """
    from . import coco, cvat, labelstudio, review as review_mod, yolo

    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise InputError(f"unknown export format {bad[0]!r}: choose from {', '.join(FORMATS)}")
    res = normalise_results(results)
    names = image_names([r["image"] for r in res], image_root)
    for r, name in zip(res, names):
        r["name"] = name
    if model_version is None and any(f in ("coco", "labelstudio") for f in formats):
        from vision.pipeline import model_version as models_version

        model_version = models_version()
    out = Path(out_dir)
    written: dict[str, list[str]] = {}
    for f in formats:
        d = out / f
        if f == "yolo":
            files = yolo.write(res, d, task=options.get("yolo_task", "obb"),
                               val_fraction=options.get("val_fraction", 0.2))
        elif f == "coco":
            files = coco.write(res, d, model_version=model_version)
        elif f == "cvat":
            files = cvat.write(res, d, shape=options.get("cvat_shape", "polygon"))
        else:
            prefix = options.get("image_url_prefix")
            files = labelstudio.write(res, d, model_version=model_version,
                                      shape=options.get("ls_shape", "polygon"),
                                      image_url_prefix=(labelstudio.LOCAL_FILES_PREFIX
                                                        if prefix is None else prefix))
        written[f] = [str(p) for p in files]
    if review:
        written["review"] = [str(p) for p in review_mod.write(res, out / "review")]
    return written
