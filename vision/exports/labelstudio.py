"""Label Studio pre-annotations: tasks with predictions, plus the matching labelling config.

Files under ``out``:

* ``tasks.json``: a list of tasks, one per image (Label Studio's task format,
  https://labelstud.io/guide/task_format and https://labelstud.io/guide/predictions)::

    {"data": {"image": "/data/local-files/?d=<image name>"},
     "predictions": [{"model_version": "tiles-<sha8>+pips-<sha8>",
                      "score": <mean tile confidence>,
                      "result": [{"id": "t0", "from_name": "label", "to_name": "image",
                                  "type": "polygonlabels", "original_width": W,
                                  "original_height": H, "image_rotation": 0, "score": conf,
                                  "value": {"points": [[x%, y%], ...],
                                            "polygonlabels": ["6-6"]}}]}]}

  With ``shape="rectangle"``: ``"type": "rectanglelabels"`` and ``"value": {"x", "y", "width",
  "height", "rotation", "rectanglelabels": [...]}``, the tile's rotated rectangle in Label
  Studio's convention (:func:`rotated_rect`): ``x``, ``y`` the corner the rectangle turns about,
  ``rotation`` degrees clockwise in [0, 360). Coordinates are percent of the image size
  (0..100); a polygon keeps the tile's rotation by its corners.

  ``data.image`` is ``image_url_prefix`` + the image name relative to the image root
  (:func:`vision.exports.image_names`), URL-quoted. The default prefix
  :data:`LOCAL_FILES_PREFIX` is Label Studio's local-files storage: start Label Studio with
  ``LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED=true`` and
  ``LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT`` = the image root. An ``http(s)://`` prefix serves
  the same names from a web server; an empty prefix writes the bare names.
* ``label_config.xml``: the ``<View>`` config naming ``image`` and ``label`` with the 23 classes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence
from urllib.parse import quote
from xml.sax.saxutils import quoteattr

from scoring.errors import InputError

from vision.exports.common import CLASS_NAMES

__all__ = ["write", "tasks", "label_config", "rotated_rect", "LOCAL_FILES_PREFIX"]

LOCAL_FILES_PREFIX = "/data/local-files/?d="
"""Label Studio's URL for a file under its local-files document root."""


def _pct(v: float, size: int) -> float:
    return round(min(100.0, max(0.0, 100.0 * v / size)), 4)


def rotated_rect(polygon: Sequence[Sequence[float]]) -> tuple[float, float, float, float, float]:
    """The tile's rotated rectangle in Label Studio's rectangle convention, pixels.

    Label Studio draws a rectangle of ``width`` x ``height`` with its top-left corner at
    ``(x, y)``, then turns it by ``rotation`` degrees clockwise (image y axis down) about that
    corner. The rectangle is the polygon's minimum-area rectangle (the polygon itself for a
    tile's four corners); of its four corners the one whose edge to the next corner (clockwise)
    is nearest the +x direction is ``(x, y)``, so an upright tile has rotation near 0.

    Args:
        polygon: (N >= 3, 2) corners, px.

    Returns:
        ``(x, y, width, height, rotation)``: px, px, px, px, degrees in [0, 360).
    """
    import cv2
    import numpy as np

    box = cv2.boxPoints(cv2.minAreaRect(np.asarray(polygon, np.float32))).astype(np.float64)
    x, y = box[:, 0], box[:, 1]
    if (x * np.roll(y, -1) - np.roll(x, -1) * y).sum() < 0:  # make clockwise on screen
        box = box[::-1]
    best = None
    for k in range(4):
        p0, p1, p3 = box[k], box[(k + 1) % 4], box[(k + 3) % 4]
        ang = math.degrees(math.atan2(p1[1] - p0[1], p1[0] - p0[0]))
        if best is None or abs(ang) < abs(best[0]) - 1e-9:
            best = (ang, p0, float(np.hypot(*(p1 - p0))), float(np.hypot(*(p3 - p0))))
    ang, p0, w, h = best
    return float(p0[0]), float(p0[1]), w, h, ang % 360.0


def tasks(results: Sequence[dict], model_version: str, shape: str = "polygon",
          image_url_prefix: str = LOCAL_FILES_PREFIX) -> list[dict]:
    """The Label Studio task list of normalised results (module docstring).

    Raises:
        InputError: for a shape other than "polygon" or "rectangle".
    """
    if shape not in ("polygon", "rectangle"):
        raise InputError(f"Label Studio shape {shape!r} is not 'polygon' or 'rectangle'")
    out = []
    for r in results:
        w, h = r["width"], r["height"]
        result = []
        for i, t in enumerate(r["tiles"]):
            item = {"id": f"t{i}", "from_name": "label", "to_name": "image",
                    "original_width": w, "original_height": h, "image_rotation": 0,
                    "score": round(t["confidence"], 6)}
            if shape == "polygon":
                item["type"] = "polygonlabels"
                item["value"] = {"points": [[_pct(x, w), _pct(y, h)] for x, y in t["polygon"]],
                                 "polygonlabels": [t["class_name"]]}
            else:
                x, y, rw, rh, rot = rotated_rect(t["polygon"])
                item["type"] = "rectanglelabels"
                item["value"] = {"x": _pct(x, w), "y": _pct(y, h),
                                 "width": round(min(100.0, 100.0 * rw / w), 4),
                                 "height": round(min(100.0, 100.0 * rh / h), 4),
                                 "rotation": round(rot, 4) % 360.0,
                                 "rectanglelabels": [t["class_name"]]}
            result.append(item)
        confs = [t["confidence"] for t in r["tiles"]]
        name = r.get("name", r["image"])
        out.append({
            "data": {"image": image_url_prefix + (quote(name) if image_url_prefix else name)},
            "predictions": [{"model_version": str(model_version),
                             "score": round(sum(confs) / len(confs), 6) if confs else 0.0,
                             "result": result}],
        })
    return out


def label_config(shape: str = "polygon") -> str:
    """The Label Studio labelling config XML matching :func:`tasks`."""
    tag = "PolygonLabels" if shape == "polygon" else "RectangleLabels"
    labels = "".join(f"    <Label value={quoteattr(n)}/>\n" for n in CLASS_NAMES)
    return (f'<View>\n  <Image name="image" value="$image"/>\n'
            f'  <{tag} name="label" toName="image">\n{labels}  </{tag}>\n</View>\n')


def write(results: Sequence[dict], out: Path, model_version: str, shape: str = "polygon",
          image_url_prefix: str = LOCAL_FILES_PREFIX) -> list[Path]:
    """Write ``tasks.json`` and ``label_config.xml`` under ``out``; returns the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    a, b = out / "tasks.json", out / "label_config.xml"
    a.write_text(json.dumps(tasks(results, model_version, shape, image_url_prefix), indent=1),
                 encoding="utf-8")
    b.write_text(label_config(shape), encoding="utf-8")
    return [a, b]
