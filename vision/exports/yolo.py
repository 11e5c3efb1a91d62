"""YOLO pre-annotations as an ultralytics dataset that trains as exported (OBB or detect).

Layout under ``out``::

    images/train/<stem><ext>, images/val/<stem><ext>   copies of the images
    labels/train/<stem>.txt, labels/val/<stem>.txt     one line per tile (below)
    confidences.csv    label,line,class_id,class_name,confidence: the detector's confidence of
                       line ``line`` (1-based) of label file ``label`` (relative to ``out``)
    data.yaml          train: images/train, val: images/val, nc: 23, names {i: name}; no
                       ``path`` key (ultralytics then resolves train/val beside data.yaml) and
                       no ``download`` key
    classes.txt        the 23 class names, one per line, line i = class i
    images.txt         "<images/split/stem.ext>\\t<image name>" per image, in input order (the
                       name relative to the image root, :func:`vision.exports.image_names`)

Label lines (coordinates normalised by the image width/height, clipped to [0, 1], 6 decimals),
the column counts ultralytics reads (``ultralytics.data.utils.verify_image_label``):

* ``task="obb"`` (default, the tile model's format): ``class x1 y1 x2 y2 x3 y3 x4 y4``, the four
  corners of the tile polygon in its order (a polygon of other than 4 points is replaced by its
  minimum-area rectangle).
* ``task="detect"``: ``class cx cy w h`` from the axis-aligned box.

The confidence is not a label column: ultralytics rejects a 10-column OBB line ("cannot reshape
array of size 9 into shape (2)") and would read a 6-column detect line as a 5-point polygon.

Split: a fraction ``val_fraction`` of the images (at least one and at most all but one when there
are two or more) goes
to ``val``, chosen by a hash of the image name, so the split does not depend on input order.
With a single image or ``val_fraction`` 0, ``val`` in data.yaml names ``images/train`` (a comment
there says which). Re-exporting into the same folder
first removes the image copies, labels and caches of the earlier export there.
"""

from __future__ import annotations

import csv
import hashlib
import shutil
from pathlib import Path
from typing import Sequence

from scoring.errors import InputError

from vision.exports.common import CLASS_NAMES, unique_stems

__all__ = ["write", "format_tile", "parse_line", "read_confidences", "split"]


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
    """One label line (no confidence) for a normalised tile (see module docstring).

    Args:
        tile: a tile of :func:`vision.exports.normalise_results` (``class_id``, ``polygon``,
            ``xyxy`` in px).
        width, height: the image size, px.

    Raises:
        InputError: for a task other than "obb" or "detect".
    """
    c = tile["class_id"]
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
    return f"{c} " + " ".join(f"{v:.6f}" for v in vals)


def parse_line(line: str, task: str = "obb") -> tuple[int, list[float]]:
    """Parse one label line back: ``(class_id, normalised coordinates)``.

    Raises:
        InputError: when the column count is not 9 (obb) / 5 (detect), or a value is out of
            range.
    """
    parts = line.split()
    n = 9 if task == "obb" else 5
    if len(parts) != n:
        raise InputError(f"YOLO {task} line {line!r} has {len(parts)} columns, expected {n}")
    cls = int(parts[0])
    coords = [float(v) for v in parts[1:]]
    if not 0 <= cls < len(CLASS_NAMES) or not all(0.0 <= v <= 1.0 for v in coords):
        raise InputError(f"YOLO line {line!r} has a value out of range")
    return cls, coords


def read_confidences(out: str | Path) -> dict[tuple[str, int], float]:
    """The side file ``out/confidences.csv`` as ``{(label file, 1-based line): confidence}``."""
    with open(Path(out) / "confidences.csv", newline="", encoding="utf-8") as f:
        return {(r["label"], int(r["line"])): float(r["confidence"]) for r in csv.DictReader(f)}


def split(names: Sequence[str], val_fraction: float = 0.2) -> list[str]:
    """``"train"`` or ``"val"`` per image name (module docstring).

    Raises:
        InputError: for ``val_fraction`` outside [0, 1).
    """
    if not 0.0 <= val_fraction < 1.0:
        raise InputError(f"validation fraction {val_fraction!r} is not in [0, 1)")
    n = len(names)
    n_val = 0 if n < 2 or val_fraction == 0 else min(n - 1, max(1, round(n * val_fraction)))
    order = sorted(range(n), key=lambda i: (hashlib.sha1(names[i].encode()).hexdigest(), i))
    val = set(order[:n_val])
    return ["val" if i in val else "train" for i in range(n)]


_WRITTEN_SUFFIXES = {".txt", ".cache", ".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff"}


def _clear_earlier_export(out: Path) -> None:
    """Remove the image copies, labels and ultralytics caches an earlier export wrote directly in
    ``out/{images,labels}/{train,val}`` (files only, nothing else), so a re-export whose split or
    stems differ leaves no stale image paired with another image's labels."""
    for kind in ("images", "labels"):
        for part in ("train", "val"):
            d = out / kind / part
            if d.is_dir():
                for f in d.iterdir():
                    if f.is_file() and f.suffix.lower() in _WRITTEN_SUFFIXES:
                        f.unlink()
    for f in (out / "labels").glob("*.cache"):
        f.unlink()


def write(results: Sequence[dict], out: Path, task: str = "obb",
          val_fraction: float = 0.2) -> list[Path]:
    """Write the YOLO dataset of normalised results (:func:`vision.exports.normalise_results`)
    under ``out`` (module docstring); returns the files written (images excluded).

    Raises:
        InputError: for an unknown task, a bad ``val_fraction``, or an image that cannot be
            copied (naming it).
    """
    import yaml

    if task not in ("obb", "detect"):
        raise InputError(f"YOLO task {task!r} is not 'obb' or 'detect'")
    out = Path(out)
    names = [r.get("name", r["image"]) for r in results]
    splits = split(names, val_fraction)
    stems = unique_stems([r["image"] for r in results])
    _clear_earlier_export(out)
    files: list[Path] = []
    conf_rows = []
    listing = []
    for r, stem, part, name in zip(results, stems, splits, names):
        src = Path(r["image"])
        img = out / "images" / part / f"{stem}{src.suffix.lower()}"
        img.parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copyfile(src, img)
        except OSError as exc:
            raise InputError(f"cannot copy image {r['image']!r} into the YOLO export: "
                             f"{exc.strerror or exc}") from None
        lab = out / "labels" / part / f"{stem}.txt"
        lab.parent.mkdir(parents=True, exist_ok=True)
        lab.write_text("".join(format_tile(t, r["width"], r["height"], task) + "\n"
                               for t in r["tiles"]), encoding="ascii")
        files.append(lab)
        rel = lab.relative_to(out).as_posix()
        for k, t in enumerate(r["tiles"], 1):
            conf_rows.append([rel, k, t["class_id"], t["class_name"], f"{t['confidence']:.6f}"])
        listing.append(f"{img.relative_to(out).as_posix()}\t{name}\n")
    p = out / "confidences.csv"
    with open(p, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["label", "line", "class_id", "class_name", "confidence"])
        w.writerows(conf_rows)
    files.append(p)
    p = out / "classes.txt"
    p.write_text("".join(n + "\n" for n in CLASS_NAMES), encoding="ascii")
    files.append(p)
    p = out / "data.yaml"
    has_val = "val" in splits
    data = {"train": "images/train", "val": "images/val" if has_val else "images/train",
            "nc": len(CLASS_NAMES), "names": dict(enumerate(CLASS_NAMES))}
    p.write_text(f"# paigow pre-annotations ({task}); confidences in confidences.csv\n"
                 + ("" if has_val else
                    "# one image: val is the train image\n" if len(results) == 1 else
                    f"# no val split (val fraction {val_fraction:g}): val is the train images\n")
                 + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    files.append(p)
    p = out / "images.txt"
    p.write_text("".join(listing), encoding="utf-8")
    files.append(p)
    return files
