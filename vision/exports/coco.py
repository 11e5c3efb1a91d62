"""COCO pre-annotations: a dataset JSON and a results JSON (pycocotools loads both).

Files under ``out`` (the COCO dataset layout datumaro's ``coco`` importer and CVAT's COCO import
read as written):

* ``annotations/instances_default.json``: ``{"info", "images": [{id, file_name, width, height}], "categories":
  [{id, name, supercategory}], "annotations": [{id, image_id, category_id, bbox [x, y, w, h],
  area, iscrowd: 0, segmentation [[x1, y1, ..., x4, y4]], score}]}``; a labelling tool imports
  it as a dataset; ``score`` is an extra key COCO readers ignore.
* ``images/<file_name>``: the images (hard links where the file system allows, else copies).
* ``results.json``: the detection-results form ``[{image_id, category_id, bbox, score,
  segmentation}]`` for ``COCO.loadRes`` / ``COCOeval``.

``file_name`` is the image's name relative to the image root (:func:`vision.exports.image_names`),
the name a COCO importer looks up under its image folder.

Category ids are 1-based (COCO convention): ``category_id = class index + 1`` over
:data:`vision.exports.CLASS_NAMES`; supercategory ``"face"``, ``"tile_back"`` or ``"unknown"``.
Image ids are 1-based in input order. ``bbox`` is ``[x1, y1, x2 - x1, y2 - y1]`` px; ``area`` is
the polygon's area (shoelace), px^2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from vision.exports.common import CLASS_NAMES, place_images

__all__ = ["write", "dataset", "results"]


def _area(poly: list[list[float]]) -> float:
    s = 0.0
    for i in range(len(poly)):
        x1, y1 = poly[i]
        x2, y2 = poly[(i + 1) % len(poly)]
        s += x1 * y2 - x2 * y1
    return abs(s) / 2.0


def _bbox(t: dict) -> list[float]:
    x1, y1, x2, y2 = t["xyxy"]
    return [round(x1, 2), round(y1, 2), round(x2 - x1, 2), round(y2 - y1, 2)]


def _seg(t: dict) -> list[list[float]]:
    return [[round(v, 2) for p in t["polygon"] for v in p]]


def categories() -> list[dict]:
    """The 23 COCO categories (ids 1..23)."""
    sup = lambda n: n if n in ("tile_back", "unknown") else "face"  # noqa: E731
    return [{"id": i + 1, "name": n, "supercategory": sup(n)} for i, n in enumerate(CLASS_NAMES)]


def dataset(results: Sequence[dict], model_version: str) -> dict:
    """The COCO dataset dict of normalised results (module docstring)."""
    images, anns = [], []
    for i, r in enumerate(results, 1):
        images.append({"id": i, "file_name": r.get("name", r["image"]), "width": r["width"],
                       "height": r["height"]})
        for t in r["tiles"]:
            anns.append({"id": len(anns) + 1, "image_id": i, "category_id": t["class_id"] + 1,
                         "bbox": _bbox(t), "area": round(_area(t["polygon"]), 2),
                         "iscrowd": 0, "segmentation": _seg(t),
                         "score": round(t["confidence"], 6)})
    return {"info": {"description": "pai gow tile pre-annotations",
                     "version": str(model_version)},
            "licenses": [], "images": images, "categories": categories(), "annotations": anns}


def results(res: Sequence[dict]) -> list[dict]:
    """The COCO detection-results list of normalised results."""
    out = []
    for i, r in enumerate(res, 1):
        for t in r["tiles"]:
            out.append({"image_id": i, "category_id": t["class_id"] + 1, "bbox": _bbox(t),
                        "score": round(t["confidence"], 6), "segmentation": _seg(t)})
    return out


def write(res: Sequence[dict], out: Path, model_version: str) -> list[Path]:
    """Write ``annotations/instances_default.json``, ``results.json`` and ``images/`` under
    ``out``; returns the two JSON paths.

    Raises:
        InputError: naming an image that cannot be placed in ``images/``.
    """
    out = Path(out)
    (out / "annotations").mkdir(parents=True, exist_ok=True)
    place_images(res, out / "images")
    a, b = out / "annotations" / "instances_default.json", out / "results.json"
    a.write_text(json.dumps(dataset(res, model_version), indent=1), encoding="utf-8")
    b.write_text(json.dumps(results(res), indent=1), encoding="utf-8")
    return [a, b]
