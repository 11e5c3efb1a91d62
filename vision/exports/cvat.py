"""CVAT for images 1.1 XML pre-annotations (https://docs.cvat.ai/docs/other/xml_format).

``out/annotations.xml`` and the images in ``out/images/<name>`` (hard links where the file system
allows, else copies): the layout of CVAT's own "CVAT for images 1.1" dataset export, which
datumaro's ``cvat`` importer and CVAT's dataset import read as written::

    <annotations>
      <version>1.1</version>
      <meta><task><name/><size/><mode>annotation</mode><overlap>0</overlap>
        <labels><label><name>6-6</name><color/><type>polygon|rectangle</type>
          <attributes><attribute><name>score</name><mutable>False</mutable>
            <input_type>number</input_type><default_value>0</default_value>
            <values>0\\n1\\n0.000001</values></attribute></attributes></label>...</labels>
      </task><dumped/></meta>
      <image id="0" name="path" width="W" height="H">
        <polygon label="6-6" source="auto" occluded="0" z_order="0"
                 points="x1,y1;x2,y2;x3,y3;x4,y4">
          <attribute name="score">0.990000</attribute></polygon>
        (or <box label=... xtl ytl xbr ybr>)
      </image>
    </annotations>

The image ``name`` is its path relative to the image root (:func:`vision.exports.image_names`),
the name CVAT matches against the task's files. Coordinates are pixels (2 decimals); ``source="auto"`` marks a model's pre-annotation; the
``score`` attribute carries the detector confidence. Labels: :data:`vision.exports.CLASS_NAMES`.
"""

from __future__ import annotations

import colorsys
import xml.etree.ElementTree as ET
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from scoring.errors import InputError

from vision.exports.common import CLASS_NAMES, place_images

__all__ = ["write", "document"]


def _color(i: int) -> str:
    r, g, b = colorsys.hsv_to_rgb((i * 0.618033988749895) % 1.0, 0.65, 0.95)
    return "#%02x%02x%02x" % (int(r * 255), int(g * 255), int(b * 255))


def _sub(parent, tag, text=None, **attrib):
    e = ET.SubElement(parent, tag, {k: str(v) for k, v in attrib.items()})
    if text is not None:
        e.text = str(text)
    return e


def document(results: Sequence[dict], shape: str = "polygon",
             task_name: str = "paigow pre-annotations") -> ET.ElementTree:
    """The CVAT 1.1 XML tree of normalised results; ``shape`` "polygon" or "box"."""
    if shape not in ("polygon", "box"):
        raise InputError(f"CVAT shape {shape!r} is not 'polygon' or 'box'")
    now = datetime.now(timezone.utc).isoformat()
    root = ET.Element("annotations")
    _sub(root, "version", "1.1")
    meta = _sub(root, "meta")
    task = _sub(meta, "task")
    _sub(task, "name", task_name)
    _sub(task, "size", len(results))
    _sub(task, "mode", "annotation")
    _sub(task, "overlap", 0)
    _sub(task, "created", now)
    _sub(task, "updated", now)
    labels = _sub(task, "labels")
    for i, name in enumerate(CLASS_NAMES):
        lab = _sub(labels, "label")
        _sub(lab, "name", name)
        _sub(lab, "color", _color(i))
        _sub(lab, "type", "polygon" if shape == "polygon" else "rectangle")
        attrs = _sub(lab, "attributes")
        a = _sub(attrs, "attribute")
        _sub(a, "name", "score")
        _sub(a, "mutable", "False")
        _sub(a, "input_type", "number")
        _sub(a, "default_value", "0")
        _sub(a, "values", "0\n1\n0.000001")
    _sub(meta, "dumped", now)
    for i, r in enumerate(results):
        img = _sub(root, "image", id=i, name=r.get("name", r["image"]), width=r["width"], height=r["height"])
        for t in r["tiles"]:
            if shape == "polygon":
                pts = ";".join(f"{x:.2f},{y:.2f}" for x, y in t["polygon"])
                el = _sub(img, "polygon", label=t["class_name"], source="auto", occluded=0,
                          points=pts, z_order=0)
            else:
                x1, y1, x2, y2 = t["xyxy"]
                el = _sub(img, "box", label=t["class_name"], source="auto", occluded=0,
                          xtl=f"{x1:.2f}", ytl=f"{y1:.2f}", xbr=f"{x2:.2f}",
                          ybr=f"{y2:.2f}", z_order=0)
            _sub(el, "attribute", f"{t['confidence']:.6f}", name="score")
    tree = ET.ElementTree(root)
    ET.indent(tree)
    return tree


def write(results: Sequence[dict], out: Path, shape: str = "polygon") -> list[Path]:
    """Write ``out/annotations.xml`` and ``out/images/``; returns ``[annotations.xml]``.

    Raises:
        InputError: for a bad shape, or naming an image that cannot be placed in ``images/``.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    place_images(results, out / "images")
    p = out / "annotations.xml"
    document(results, shape).write(p, encoding="utf-8", xml_declaration=True)
    return [p]
