"""Pre-annotation exports of identify() results, for labelling tools; one module per format.

Input everywhere: the list that ``vision.recognition.identify.identify(paths)`` returns, one dict per image::

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
:func:`export` writes any of them. The COCO and CVAT folders hold their images in ``images/``
(hard links, else copies), so datumaro and CVAT read them as written.

Back in: :mod:`.imports` reads the corrected labels of any of these formats into the tile
model's training set (``paigow import``); :mod:`.cvat_function` is a CVAT auto-annotation
function over the models (docs/labelling.md).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from scoring.errors import InputError

from vision.exports.common import (CLASS_NAMES, FORMATS, TILE_BACK_ID, UNKNOWN_ID, class_index, class_name,
                     default_image_root, image_names, normalise_results, unique_stems)

__all__ = ["CLASS_NAMES", "FORMATS", "class_index", "class_name", "normalise_results", "export",
           "image_names", "default_image_root", "unique_stems", "TILE_BACK_ID", "UNKNOWN_ID"]


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
    from vision.exports import coco, cvat, labelstudio, review as review_mod, yolo

    bad = [f for f in formats if f not in FORMATS]
    if bad:
        raise InputError(f"unknown export format {bad[0]!r}: choose from {', '.join(FORMATS)}")
    res = normalise_results(results)
    names = image_names([r["image"] for r in res], image_root)
    for r, name in zip(res, names):
        r["name"] = name
    if model_version is None and any(f in ("coco", "labelstudio") for f in formats):
        from vision.recognition.models import model_version as models_version

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
