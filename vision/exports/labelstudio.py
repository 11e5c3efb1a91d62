"""Label Studio pre-annotations: tasks with predictions, plus the matching labelling config.

Files under ``out``:

* ``tasks.json``: a list of tasks, one per image::

    {"data": {"image": "<url or path>"},
     "predictions": [{"model_version": "...", "score": <mean tile confidence>,
                      "result": [{"id": "t0", "from_name": "label", "to_name": "image",
                                  "type": "polygonlabels", "original_width": W,
                                  "original_height": H, "image_rotation": 0, "score": conf,
                                  "value": {"points": [[x%, y%], ...],
                                            "polygonlabels": ["6-6"]}}]}]}

  With ``shape="rectangle"``: ``"type": "rectanglelabels"`` and ``"value": {"x", "y", "width",
  "height", "rotation": 0, "rectanglelabels": [...]}``. Label Studio coordinates are percent of
  the image size (0..100). ``data.image`` is ``image_url_prefix + path`` when a prefix is given
  (e.g. ``"/data/local-files/?d="`` for local-files storage), else the path as given.
* ``label_config.xml``: the ``<View>`` config naming ``image`` and ``label`` with the 23 classes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence
from xml.sax.saxutils import quoteattr

from scoring.errors import InputError

from .common import CLASS_NAMES

__all__ = ["write", "tasks", "label_config"]


def _pct(v: float, size: int) -> float:
    return round(min(100.0, max(0.0, 100.0 * v / size)), 4)


def tasks(results: Sequence[dict], model_version: str = "paigow", shape: str = "polygon",
          image_url_prefix: str | None = None) -> list[dict]:
    """The Label Studio task list of normalised results (module docstring)."""
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
                x1, y1, x2, y2 = t["xyxy"]
                item["type"] = "rectanglelabels"
                item["value"] = {"x": _pct(x1, w), "y": _pct(y1, h),
                                 "width": round(_pct(x2, w) - _pct(x1, w), 4),
                                 "height": round(_pct(y2, h) - _pct(y1, h), 4),
                                 "rotation": 0, "rectanglelabels": [t["class_name"]]}
            result.append(item)
        confs = [t["confidence"] for t in r["tiles"]]
        out.append({
            "data": {"image": (image_url_prefix or "") + r["image"]},
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


def write(results: Sequence[dict], out: Path, model_version: str = "paigow",
          shape: str = "polygon", image_url_prefix: str | None = None) -> list[Path]:
    """Write ``tasks.json`` and ``label_config.xml`` under ``out``; returns the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    a, b = out / "tasks.json", out / "label_config.xml"
    a.write_text(json.dumps(tasks(results, model_version, shape, image_url_prefix), indent=1),
                 encoding="utf-8")
    b.write_text(label_config(shape), encoding="utf-8")
    return [a, b]
