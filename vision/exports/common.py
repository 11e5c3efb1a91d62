"""Classes, result normalisation and image naming shared by every export format
(:mod:`vision.exports`)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from scoring.errors import InputError
from scoring.tiles import FACES, parse_tile

__all__ = ["CLASS_NAMES", "FORMATS", "TILE_BACK_ID", "UNKNOWN_ID", "class_index", "class_name",
           "normalise_results",
           "image_names", "default_image_root", "unique_stems", "place_images"]

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
            from vision.io.capture import image_size

            size = image_size(str(r["image"]))  # from the header: nothing decoded
            if size is None:
                raise InputError(f"cannot read image {str(r['image'])!r} to get its size")
            w, h = size
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


def place_images(results: Sequence[Mapping], folder: str | os.PathLike) -> None:
    """Put each image at ``folder/<name>`` (``name``: its name relative to the image root,
    :func:`image_names`), as a hard link where the file system allows, else a copy: the
    ``images/`` folder of a CVAT or COCO dataset, which their importers (datumaro, CVAT's
    dataset import) look up by name.

    Raises:
        InputError: naming an image that cannot be linked or copied.
    """
    import shutil

    for r in results:
        src = os.path.abspath(r["image"])
        dst = Path(folder) / r.get("name", Path(r["image"]).name)
        if os.path.abspath(dst) == src:
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            if dst.exists() or dst.is_symlink():
                dst.unlink()
            try:
                os.link(src, dst)
            except OSError:
                shutil.copyfile(src, dst)
        except OSError as exc:
            raise InputError(f"cannot copy image {r['image']!r} into {os.fspath(folder)!r}: "
                             f"{exc.strerror or exc}") from None
