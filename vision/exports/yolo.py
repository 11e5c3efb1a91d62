"""YOLO txt pre-annotations with a confidence column (ultralytics label layout).

Layout under ``out``::

    labels/<stem>.txt   one line per tile
    classes.txt         the 23 class names, one per line, line i = class i
    data.yaml           names {i: name}, nc; no download key
    images.txt          "<stem>\\t<image path>" per image, in input order

Line formats (coordinates normalised by the image width/height, clipped to [0, 1], 6 decimals;
the last column is the detector's confidence in [0, 1]):

* ``task="obb"`` (default, the tile model's format): ``class x1 y1 x2 y2 x3 y3 x4 y4 conf``, the
  four corners of the tile polygon in its order (a polygon of other than 4 points is replaced
  by its minimum-area rectangle).
* ``task="detect"``: ``class cx cy w h conf`` from the axis-aligned box.

Ultralytics reads 9 (obb) / 5 (detect) columns for training labels: drop the last column
(:func:`strip_confidence`) once a labeller has checked the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from scoring.errors import InputError

from .common import CLASS_NAMES, unique_stems

__all__ = ["write", "parse_line", "strip_confidence"]


def _clip(v: float) -> float:
    return min(1.0, max(0.0, v))


def _corners(poly: list[list[float]]) -> list[list[float]]:
    if len(poly) == 4:
        return poly
    import cv2
    import numpy as np

    rect = cv2.minAreaRect(np.asarray(poly, np.float32))
    return cv2.boxPoints(rect).tolist()


def format_tile(tile: dict, width: int, height: int, task: str = "obb") -> str:
    """One label line for a normalised tile (see module docstring)."""
    c = tile["class_id"]
    conf = tile["confidence"]
    if task == "obb":
        vals = []
        for x, y in _corners(tile["polygon"]):
            vals += [_clip(x / width), _clip(y / height)]
    elif task == "detect":
        x1, y1, x2, y2 = tile["xyxy"]
        x1, x2 = _clip(x1 / width), _clip(x2 / width)
        y1, y2 = _clip(y1 / height), _clip(y2 / height)
        vals = [(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1]
    else:
        raise InputError(f"YOLO task {task!r} is not 'obb' or 'detect'")
    return f"{c} " + " ".join(f"{v:.6f}" for v in vals) + f" {conf:.6f}"


def parse_line(line: str, task: str = "obb") -> tuple[int, list[float], float]:
    """Parse one label line back: ``(class_id, coordinates, confidence)``.

    Raises:
        InputError: when the column count is not 10 (obb) / 6 (detect), or a value is out of
            range.
    """
    parts = line.split()
    n = 10 if task == "obb" else 6
    if len(parts) != n:
        raise InputError(f"YOLO {task} line {line!r} has {len(parts)} columns, expected {n}")
    cls = int(parts[0])
    coords = [float(v) for v in parts[1:-1]]
    conf = float(parts[-1])
    if not 0 <= cls < len(CLASS_NAMES) or not all(0.0 <= v <= 1.0 for v in coords + [conf]):
        raise InputError(f"YOLO line {line!r} has a value out of range")
    return cls, coords, conf


def strip_confidence(label_text: str) -> str:
    """The label text with the confidence column removed (ultralytics training format)."""
    return "".join(" ".join(l.split()[:-1]) + "\n" for l in label_text.splitlines() if l.strip())


def write(results: Sequence[dict], out: Path, task: str = "obb") -> list[Path]:
    """Write the YOLO export of normalised results (:func:`vision.exports.normalise_results`)
    under ``out``; returns the files written."""
    if task not in ("obb", "detect"):
        raise InputError(f"YOLO task {task!r} is not 'obb' or 'detect'")
    out = Path(out)
    (out / "labels").mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    stems = unique_stems([r["image"] for r in results])
    for r, stem in zip(results, stems):
        p = out / "labels" / f"{stem}.txt"
        p.write_text("".join(format_tile(t, r["width"], r["height"], task) + "\n"
                             for t in r["tiles"]), encoding="ascii")
        files.append(p)
    p = out / "classes.txt"
    p.write_text("".join(n + "\n" for n in CLASS_NAMES), encoding="ascii")
    files.append(p)
    p = out / "data.yaml"
    names = "".join(f"  {i}: '{n}'\n" for i, n in enumerate(CLASS_NAMES))
    p.write_text(f"# pre-annotations ({task}, last label column = confidence)\npath: .\n"
                 f"nc: {len(CLASS_NAMES)}\nnames:\n{names}", encoding="ascii")
    files.append(p)
    p = out / "images.txt"
    p.write_text("".join(f"{s}\t{r['image']}\n" for r, s in zip(results, stems)),
                 encoding="utf-8")
    files.append(p)
    return files
