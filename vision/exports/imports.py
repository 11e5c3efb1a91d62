"""Corrected labels back into training: read a labelling tool's labels, write a tile-model set.

``paigow import LABELS --out DIR`` (vision/commands/import_labels.py) closes the loop that
``paigow export`` opens: the pre-annotations are corrected in a labelling tool, exported from it
in the same format, and read here into the training set the tile model trains on
(``paigow train --config DIR/train_tiles.yaml``; docs/labelling.md).

Formats read (:func:`read_labels`; ``fmt=None`` tells them apart by their files):

* ``yolo``: an ultralytics dataset folder as ``paigow export`` writes it (``data.yaml`` with the
  class names, ``labels/<split>/<stem>.txt`` beside ``images/<split>/<stem>.<ext>``); OBB lines
  (9 columns) or detect lines (5 columns), coordinates normalised.
* ``coco``: a COCO dataset JSON (a file, or a folder holding ``annotations/instances_*.json`` or
  ``annotations.json``); ``segmentation`` polygons where given, else ``bbox``; images under the
  ``images/`` folder beside ``annotations/``, else under ``image_root``.
* ``cvat``: CVAT for images 1.1 XML (a file, or a folder holding ``annotations.xml``):
  ``<polygon>`` and ``<box>`` (with its ``rotation``, degrees clockwise about the centre);
  images under ``images/`` beside the XML, else under ``image_root``.
* ``labelstudio``: Label Studio's JSON export (a list of tasks; a file, or a folder holding
  ``tasks.json``): each task's last annotation that is not cancelled (a task with none is not
  labelled and is left out); ``polygonlabels`` points and ``rectanglelabels`` (rotated about
  their corner), percent of the image. ``data.image`` is a local-files URL
  (``/data/local-files/?d=NAME``), a path, or a URL whose last path parts name the image under
  ``image_root``.

Class names are :data:`vision.exports.CLASS_NAMES` (the 21 faces, ``tile_back``, ``unknown``);
any other name is an error naming it.

What is written (:func:`write_training_set`): the **tile model's** set, classes ``0 tile`` (a
face-up tile: any face, or ``unknown``) and ``1 tile_back``, OBB lines, the layout of
``paigow render`` (``DIR/tiles/{images,labels}/{train,val}``, ``DIR/tiles.yaml``), a training
config ``DIR/train_tiles.yaml`` that fine-tunes the shipped tile model (or a model given), and
``DIR/labels.json``: the corrected labels with their faces in the form ``paigow identify --json``
prints (``paigow export --results DIR/labels.json`` reads it back). The **pip model** is not
given a set: its labels are the spots' boxes inside a rectified tile, which no labelling tool's
tile label holds, and drawing them from a face's usual pattern would teach the model spot
positions the real tiles may not have. Faces are kept in ``labels.json`` for evaluation.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Sequence
from urllib.parse import unquote, urlparse

from scoring.errors import InputError

from vision.exports.common import CLASS_NAMES, unique_stems

__all__ = ["read_labels", "detect_format", "write_training_set", "TILE_MODEL_CLASSES",
           "tile_model_class", "IMPORT_FORMATS"]

IMPORT_FORMATS = ("yolo", "coco", "cvat", "labelstudio")
TILE_MODEL_CLASSES = ("tile", "tile_back")
"""The tile model's classes (``vision.synth.render.TILE_CLASSES``)."""
_IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff")


def tile_model_class(name: str) -> int:
    """The tile-model class of a label name: 1 for ``tile_back``, 0 for a face or ``unknown``.

    Raises:
        InputError: for a name outside :data:`CLASS_NAMES`.
    """
    if name not in CLASS_NAMES:
        raise InputError(f"label {name!r} is not a pai gow class (the 21 faces, tile_back, "
                         "unknown)")
    return 1 if name == "tile_back" else 0


def detect_format(path: str | os.PathLike) -> str:
    """The labels' format from their files (module docstring).

    Raises:
        InputError: naming the path when it is missing or no format fits.
    """
    p = Path(path)
    if p.is_dir():
        if (p / "data.yaml").is_file():
            return "yolo"
        if (p / "annotations.xml").is_file():
            return "cvat"
        if any((p / "annotations").glob("instances_*.json")) or (p / "annotations.json").is_file():
            return "coco"
        if (p / "tasks.json").is_file():
            return "labelstudio"
    elif p.is_file():
        if p.suffix.lower() == ".xml":
            return "cvat"
        if p.suffix.lower() in (".yaml", ".yml"):
            return "yolo"
        if p.suffix.lower() == ".json":
            try:
                doc = json.loads(p.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise InputError(f"cannot read labels {str(path)!r}: {exc}") from None
            if isinstance(doc, list):
                return "labelstudio"
            if isinstance(doc, dict) and "images" in doc:
                return "coco"
    else:
        raise InputError(f"labels {str(path)!r} do not exist")
    raise InputError(f"cannot tell the format of labels {str(path)!r}: give --format "
                     f"({', '.join(IMPORT_FORMATS)})")


def _find_image(name: str, roots: Sequence[Path], where: str) -> Path:
    p = Path(name)
    if p.is_absolute() and p.is_file():
        return p
    for r in roots:
        if r is not None and (r / name).is_file():
            return r / name
    raise InputError(f"image {name!r} of {where} not found under "
                     f"{', '.join(repr(str(r)) for r in roots if r is not None) or 'any root'}"
                     " (give --image-root)")


def _record(image: Path, width: int, height: int, tiles: list[dict]) -> dict:
    return {"image": str(image), "width": int(width), "height": int(height), "tiles": tiles}


def _tile(name: str, poly: Sequence[Sequence[float]]) -> dict:
    tile_model_class(name)  # checks the name
    pts = [[float(x), float(y)] for x, y in poly]
    if len(pts) < 3:
        raise InputError(f"label {name!r} has a polygon of {len(pts)} points")
    face = name if name not in ("tile_back", "unknown") else None
    state = "face_down" if name == "tile_back" else "unknown" if name == "unknown" else "face_up"
    xs, ys = [q[0] for q in pts], [q[1] for q in pts]
    return {"face": face, "state": state, "confidence": 1.0, "class_name": name,
            "xyxy": [min(xs), min(ys), max(xs), max(ys)], "polygon": pts}


def _image_size(path: Path) -> tuple[int, int]:
    from vision.io.capture import image_size

    size = image_size(str(path))
    if size is None:
        raise InputError(f"cannot read image {str(path)!r} to get its size")
    return int(size[0]), int(size[1])


def _rotated(cx: float, cy: float, w: float, h: float, deg: float,
             about: tuple[float, float] | None = None) -> list[list[float]]:
    """Corners of a w x h rectangle turned ``deg`` clockwise (y down); centred at (cx, cy), or
    with its top-left corner at ``about`` when given (Label Studio)."""
    c, s = math.cos(math.radians(deg)), math.sin(math.radians(deg))
    if about is not None:
        x0, y0 = about
        return [[x0 + dx * c - dy * s, y0 + dx * s + dy * c]
                for dx, dy in ((0, 0), (w, 0), (w, h), (0, h))]
    return [[cx + dx * c - dy * s, cy + dx * s + dy * c]
            for dx, dy in ((-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2))]


# ----------------------------------------------------------------------------------------------
# Readers

def _read_yolo(path: Path) -> list[dict]:
    from vision.io.yamlsafe import load_yaml

    root = path if path.is_dir() else path.parent
    data_yaml = root / "data.yaml" if path.is_dir() else path
    data = load_yaml(data_yaml, "YOLO data YAML") or {}  # size, aliases, depth capped
    names = data.get("names")
    names = dict(enumerate(names)) if isinstance(names, list) else dict(names or {})
    if not names:
        raise InputError(f"YOLO data YAML {str(data_yaml)!r} names no class")
    out = []
    for lab in sorted((root / "labels").glob("*/*.txt")):
        img_dir = root / "images" / lab.parent.name
        img = next((img_dir / f"{lab.stem}{ext}" for ext in _IMAGE_SUFFIXES
                    if (img_dir / f"{lab.stem}{ext}").is_file()), None)
        if img is None:
            img = next((q for q in img_dir.glob(f"{lab.stem}.*")
                        if q.suffix.lower() in _IMAGE_SUFFIXES), None)
        if img is None:
            raise InputError(f"YOLO label {str(lab)!r} has no image in {str(img_dir)!r}")
        w, h = _image_size(img)
        tiles = []
        for k, line in enumerate(lab.read_text(encoding="utf-8").splitlines(), 1):
            parts = line.split()
            if not parts:
                continue
            try:
                cls, vals = int(parts[0]), [float(v) for v in parts[1:]]
            except ValueError:
                raise InputError(f"YOLO label {str(lab)}:{k} is not numbers: {line!r}") from None
            if cls not in names:
                raise InputError(f"YOLO label {str(lab)}:{k}: class {cls} not in data.yaml")
            if len(vals) == 4:
                cx, cy, bw, bh = vals
                poly = _rotated(cx * w, cy * h, bw * w, bh * h, 0.0)
            elif len(vals) >= 6 and len(vals) % 2 == 0:
                poly = [[vals[i] * w, vals[i + 1] * h] for i in range(0, len(vals), 2)]
            else:
                raise InputError(f"YOLO label {str(lab)}:{k} has {len(parts)} columns "
                                 "(5 detect, 9 OBB)")
            tiles.append(_tile(str(names[cls]), poly))
        out.append(_record(img, w, h, tiles))
    if not out:
        raise InputError(f"YOLO dataset {str(root)!r} holds no label file (labels/<split>/*.txt)")
    return out


def _read_coco(path: Path, image_root: Path | None) -> list[dict]:
    if path.is_dir():
        found = sorted((path / "annotations").glob("instances_*.json"))
        files = found or [path / "annotations.json"]
    else:
        files = [path]
    out = []
    for f in files:
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise InputError(f"cannot read COCO labels {str(f)!r}: {exc}") from None
        cats = {c["id"]: c["name"] for c in doc.get("categories", [])}
        base = f.parent.parent if f.parent.name == "annotations" else f.parent
        roots = [base / "images", image_root, base]
        by_image: dict[int, list[dict]] = {}
        for a in doc.get("annotations", []):
            name = cats.get(a.get("category_id"))
            if name is None:
                raise InputError(f"COCO annotation {a.get('id')!r} of {str(f)!r} has category "
                                 f"{a.get('category_id')!r}, not in its categories")
            seg = a.get("segmentation")
            if isinstance(seg, list) and seg and isinstance(seg[0], list) and len(seg[0]) >= 6:
                s = seg[0]
                poly = [[s[i], s[i + 1]] for i in range(0, len(s) - 1, 2)]
            else:
                x, y, bw, bh = a["bbox"]
                poly = [[x, y], [x + bw, y], [x + bw, y + bh], [x, y + bh]]
            by_image.setdefault(a["image_id"], []).append(_tile(name, poly))
        for im in doc.get("images", []):
            p = _find_image(im["file_name"], roots, str(f))
            w, h = im.get("width"), im.get("height")
            if not w or not h:
                w, h = _image_size(p)
            out.append(_record(p, w, h, by_image.get(im["id"], [])))
    return out


def _read_cvat(path: Path, image_root: Path | None) -> list[dict]:
    f = path / "annotations.xml" if path.is_dir() else path
    try:
        root = ET.parse(f).getroot()
    except (OSError, ET.ParseError) as exc:
        raise InputError(f"cannot read CVAT labels {str(f)!r}: {exc}") from None
    if root.find("track") is not None:
        raise InputError(f"CVAT labels {str(f)!r} hold tracks (video): export the task as "
                         "CVAT for images 1.1")
    roots = [f.parent / "images", image_root, f.parent]
    out = []
    for im in root.iter("image"):
        p = _find_image(im.get("name"), roots, str(f))
        tiles = []
        for el in im:
            label = el.get("label")
            if el.tag == "polygon":
                poly = [[float(v) for v in xy.split(",")] for xy in el.get("points").split(";")]
            elif el.tag == "box":
                x1, y1, x2, y2 = (float(el.get(k)) for k in ("xtl", "ytl", "xbr", "ybr"))
                poly = _rotated((x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1,
                                float(el.get("rotation", 0) or 0))
            else:
                continue  # tags, points, masks: no tile outline
            tiles.append(_tile(label, poly))
        out.append(_record(p, im.get("width") or _image_size(p)[0],
                           im.get("height") or _image_size(p)[1], tiles))
    return out


def _ls_image_name(url: str) -> str:
    if "?d=" in url:
        return unquote(url.split("?d=", 1)[1])
    parsed = urlparse(url)
    return unquote(parsed.path if parsed.scheme else url).lstrip("/") if parsed.scheme else url


def _read_labelstudio(path: Path, image_root: Path | None) -> list[dict]:
    f = path / "tasks.json" if path.is_dir() else path
    try:
        tasks = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read Label Studio labels {str(f)!r}: {exc}") from None
    if not isinstance(tasks, list):
        raise InputError(f"Label Studio labels {str(f)!r} are not a list of tasks")
    out = []
    for task in tasks:
        anns = [a for a in task.get("annotations") or [] if not a.get("was_cancelled")]
        if not anns:
            continue  # not labelled: predictions alone are not corrected labels
        url = str((task.get("data") or {}).get("image", ""))
        name = _ls_image_name(url)
        roots = [image_root, f.parent]
        if urlparse(url).scheme in ("http", "https"):  # a served name: try its tail parts
            parts = Path(name).parts
            cands = ["/".join(parts[i:]) for i in range(len(parts))]
            p = next((r / c for c in cands for r in roots if r is not None and (r / c).is_file()),
                     None)
            if p is None:
                raise InputError(f"image {url!r} of {str(f)!r} not found under the image root "
                                 "(give --image-root)")
        else:
            p = _find_image(name, roots, str(f))
        w = h = None
        tiles = []
        for item in anns[-1].get("result") or []:
            v = item.get("value") or {}
            w = item.get("original_width") or w
            h = item.get("original_height") or h
            if w is None or h is None:
                w, h = _image_size(p)
            if "polygonlabels" in v:
                label = v["polygonlabels"][0]
                poly = [[x * w / 100, y * h / 100] for x, y in v["points"]]
            elif "rectanglelabels" in v:
                label = v["rectanglelabels"][0]
                poly = _rotated(0, 0, v["width"] * w / 100, v["height"] * h / 100,
                                float(v.get("rotation", 0) or 0),
                                about=(v["x"] * w / 100, v["y"] * h / 100))
            else:
                continue
            tiles.append(_tile(label, poly))
        if w is None or h is None:
            w, h = _image_size(p)
        out.append(_record(p, w, h, tiles))
    return out


def read_labels(path: str | os.PathLike, fmt: str | None = None,
                image_root: str | os.PathLike | None = None) -> list[dict]:
    """Read corrected labels (module docstring).

    Args:
        path: the labels: a file or the format's folder.
        fmt: one of :data:`IMPORT_FORMATS`, or None to tell from the files
            (:func:`detect_format`).
        image_root: the folder the label file's image names are relative to, where the images
            are not in an ``images/`` folder beside the labels.

    Returns:
        ``[{"image": path, "width": px, "height": px, "tiles": [{"face": "1-5" | None,
        "state": "face_up|face_down|unknown", "confidence": 1.0, "class_name",
        "xyxy": [x1, y1, x2, y2], "polygon": [[x, y], ...]}]}]``, image pixels: the form of
        ``paigow identify --json``, one record per labelled image.

    Raises:
        InputError: a missing path or image, an unknown format or label name, a malformed file
            (naming it).
    """
    p = Path(path)
    if not p.exists():
        raise InputError(f"labels {str(path)!r} do not exist")
    if image_root is not None and not Path(image_root).is_dir():
        raise InputError(f"image root {os.fspath(image_root)!r} is not an existing folder")
    fmt = fmt or detect_format(p)
    root = Path(image_root) if image_root is not None else None
    if fmt == "yolo":
        return _read_yolo(p)
    if fmt == "coco":
        return _read_coco(p, root)
    if fmt == "cvat":
        return _read_cvat(p, root)
    if fmt == "labelstudio":
        return _read_labelstudio(p, root)
    raise InputError(f"unknown label format {fmt!r}: choose from {', '.join(IMPORT_FORMATS)}")


# ----------------------------------------------------------------------------------------------
# Writer

def _link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists():
        dst.unlink()
    try:
        os.link(src, dst)
    except OSError:
        shutil.copyfile(src, dst)


def write_training_set(records: Sequence[dict], out: str | os.PathLike,
                       val_fraction: float = 0.2, base_model: str | os.PathLike | None = None,
                       imgsz: int = 640, epochs: int = 30) -> dict:
    """Write the tile-model training set of :func:`read_labels` records (module docstring).

    Files under ``out``: ``tiles/images/{train,val}/<stem><ext>`` (hard links, else copies),
    ``tiles/labels/{train,val}/<stem>.txt`` (``class x1 y1 x2 y2 x3 y3 x4 y4``, normalised, 6
    decimals; a polygon of other than 4 points replaced by its minimum-area rectangle),
    ``tiles.yaml`` (``path: tiles``, names ``{0: tile, 1: tile_back}``; with no image held out
    for val, ``val`` names the train images, said in a comment), ``train_tiles.yaml`` (name
    ``tiles_labelled``, OBB, ``model`` = ``base_model``) and ``labels.json``.

    Args:
        records: :func:`read_labels` output.
        val_fraction: fraction of images in val, in [0, 1) (:func:`vision.exports.yolo.split`:
            by a hash of the image path, at least one when there are two or more images).
        base_model: the weights or model YAML to train from (default: the shipped
            ``models/tiles.pt``, fine-tuned).
        imgsz: training input size, px (>= 32).
        epochs: the config's epochs (``paigow train --epochs`` overrides).

    Returns:
        ``{"images", "train", "val", "tile", "tile_back", "faces", "data", "config",
        "labels"}`` (counts and the paths written).

    Raises:
        InputError: no record, a bad ``val_fraction`` or ``imgsz``.
    """
    import yaml

    from vision.exports.yolo import _corners, split

    if not records:
        raise InputError("no labelled image to import")
    if not isinstance(imgsz, int) or imgsz < 32:
        raise InputError(f"imgsz {imgsz!r} is not an integer >= 32")
    out = Path(out)
    ds = out / "tiles"
    for kind in ("images", "labels"):
        for part in ("train", "val"):
            d = ds / kind / part
            if d.is_dir():
                for q in d.iterdir():
                    if q.is_file():
                        q.unlink()
    for q in (ds / "labels").glob("*.cache"):
        q.unlink()
    paths = [r["image"] for r in records]
    splits = split([os.path.abspath(p) for p in paths], val_fraction)
    stems = unique_stems(paths)
    counts = {"images": len(records), "train": 0, "val": 0, "tile": 0, "tile_back": 0,
              "faces": 0}
    for r, stem, part in zip(records, stems, splits):
        src = Path(r["image"])
        _link_or_copy(src, ds / "images" / part / f"{stem}{src.suffix.lower()}")
        w, h = r["width"], r["height"]
        lines = []
        for t in r["tiles"]:
            cls = tile_model_class(t["class_name"])
            vals = []
            for x, y in _corners(t["polygon"]):
                vals += [min(1.0, max(0.0, x / w)), min(1.0, max(0.0, y / h))]
            lines.append(f"{cls} " + " ".join(f"{v:.6f}" for v in vals) + "\n")
            counts[TILE_MODEL_CLASSES[cls]] += 1
            counts["faces"] += t.get("face") is not None
        lab = ds / "labels" / part / f"{stem}.txt"
        lab.parent.mkdir(parents=True, exist_ok=True)
        lab.write_text("".join(lines), encoding="ascii")
        counts[part] += 1
    (ds / "images" / "val").mkdir(parents=True, exist_ok=True)
    has_val = counts["val"] > 0
    data = {"path": "tiles", "train": "images/train",
            "val": "images/val" if has_val else "images/train",
            "names": dict(enumerate(TILE_MODEL_CLASSES))}
    data_path = out / "tiles.yaml"
    data_path.write_text(
        "# tile-model set written by `paigow import` (vision/exports/imports.py); `path` is\n"
        "# relative to this file's folder (vision/synth/train.py resolves it so)\n"
        + ("" if has_val else "# no image held out (--val-fraction 0 or one image): val names "
                              "the train images\n")
        + yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    if base_model is None:
        from vision import MODELS_DIR

        base_model = Path(MODELS_DIR) / "tiles.pt"
    cfg = {"name": "tiles_labelled", "task": "obb", "model": str(Path(base_model).resolve())
           if Path(base_model).exists() else str(base_model),
           "data": "tiles.yaml", "imgsz": imgsz, "epochs": epochs, "batch": 8, "seed": 0,
           "workers": 2, "threads": 2, "patience": 20,
           "export": {"nms": True, "agnostic_nms": True, "dynamic": True, "simplify": False}}
    cfg_path = out / "train_tiles.yaml"
    cfg_path.write_text("# training config written by `paigow import`: fine-tunes the tile model "
                        "on the corrected labels\n# (`paigow train --config THIS`; keys: "
                        "vision/synth/train.py)\n" + yaml.safe_dump(cfg, sort_keys=False),
                        encoding="utf-8")
    labels_path = out / "labels.json"
    labels_path.write_text(json.dumps(
        [{"image": r["image"], "width": r["width"], "height": r["height"],
          "tiles": [{k: t[k] for k in ("face", "state", "confidence", "xyxy", "polygon")}
                    for t in r["tiles"]]} for r in records], indent=1), encoding="utf-8")
    return {**counts, "data": str(data_path), "config": str(cfg_path),
            "labels": str(labels_path)}
