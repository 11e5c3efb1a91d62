"""Model files checked at load: SHA-256 checksums kept in ``models/<stem>.json`` and the class
layout of the tile and spot models.

``models/tiles.json`` describes ``models/tiles.onnx`` and ``models/tiles.pt`` (the same for
``pips``); its ``"sha256"`` entry maps each file name to the SHA-256 of its bytes::

    "sha256": {"tiles.onnx": "3f5c...", "tiles.pt": "9a01..."}

:func:`verify_checksum` (called by :class:`vision.recognition.detect.Detector` before a model is loaded)
refuses a file whose bytes differ from the recorded checksum -- damaged weights with a valid
structure load and silently read nothing, so they must be caught here. :func:`stamp` records
the checksums after training or export (``vision.synth.train`` calls it; by hand:
``python -m vision.recognition.modelcheck models``). :func:`check_classes` refuses a model whose class
names belong to the other model (the spot model given as the tile model, or the reverse).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import os
import sys
from pathlib import Path
from typing import Iterable, Mapping

from scoring.errors import InputError

__all__ = ["file_sha256", "recorded_sha256", "verify_checksum", "require_description", "stamp",
           "check_classes", "MODEL_SUFFIXES", "ROLE_CLASSES"]

log = logging.getLogger("vision.recognition.modelcheck")

#: Model file endings whose checksum is kept in the JSON beside them.
MODEL_SUFFIXES = (".onnx", ".pt")
#: Class names of each model role (see vision.detections.CLASS_NAMES).
ROLE_CLASSES: dict[str, tuple[str, ...]] = {
    "tile": ("tile", "tile_back"),
    "spot": ("pip_red", "pip_white"),
}


def file_sha256(path: str | os.PathLike) -> str:
    """SHA-256 of a file's bytes, lower-case hex (read in 1 MiB blocks; remembered per path,
    size and modification time, so loading the same model again costs no second read)."""
    st = os.stat(path)
    return _sha256(os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino)


@functools.lru_cache(maxsize=64)
def _sha256(path: str, size: int, mtime_ns: int, inode: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _description(path: Path) -> Path:
    return path.with_suffix(".json")


def _read_json(js: Path) -> dict:
    try:
        data = json.loads(js.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"model description is not valid JSON: {js} ({exc})") from exc
    return data if isinstance(data, dict) else {}


def recorded_sha256(path: str | os.PathLike) -> str | None:
    """The checksum recorded for ``path`` in ``<stem>.json`` beside it (None: no JSON or no
    entry for this file name).

    Raises:
        InputError: the JSON is not valid (names it).
    """
    p = Path(path)
    js = _description(p)
    if not js.is_file():
        return None
    sums = _read_json(js).get("sha256")
    if not isinstance(sums, Mapping):
        return None
    value = sums.get(p.name)
    return str(value).lower() if value else None


def verify_checksum(path: str | os.PathLike) -> bool:
    """Compare a model file with the checksum recorded beside it.

    Returns:
        True when a checksum is recorded and matches; False when none is recorded (logged as
        a warning: the file cannot be vouched for).

    Raises:
        InputError: the file's SHA-256 differs from the recorded one (damaged, replaced or
            swapped file); the message names the file and its description.
    """
    p = Path(path)
    want = recorded_sha256(p)
    if want is None:
        log.warning("no SHA-256 recorded for %s in %s; record it with "
                    "'python -m vision.recognition.modelcheck %s'", p, _description(p), p.parent)
        return False
    got = file_sha256(p)
    if got != want:
        raise InputError(f"model file {p} does not match its checksum in {_description(p)} "
                         f"(sha256 {got[:12]}..., recorded {want[:12]}...): damaged or replaced")
    return True


def require_description(path: str | os.PathLike) -> None:
    """Refuse a model of the models folder without its description: ``<stem>.json`` beside it
    recording the file's SHA-256 (:mod:`vision.recognition.modelcheck`). Without it damaged or swapped
    weights could not be told from the trained ones, so the model is not loaded.

    Raises:
        InputError: naming the model and the missing (or incomplete) description.
    """
    path = Path(path)
    js = path.with_suffix(".json")
    if not js.is_file():
        raise InputError(f"model {path} has no description {js.name} (its SHA-256 and "
                         f"classes): refused; record it with 'python -m vision.recognition.modelcheck "
                         f"{path.parent}' only for weights you trust")
    if recorded_sha256(path) is None:
        raise InputError(f"model {path}: its description {js} records no SHA-256 for "
                         f"{path.name}: refused")


def stamp(paths: Iterable[str | os.PathLike]) -> dict[str, dict[str, str]]:
    """Record the SHA-256 of each model file in the JSON beside it (created when missing).

    Args:
        paths: model files, or folders (every ``*.onnx`` / ``*.pt`` directly inside).

    Returns:
        ``{json path: {file name: sha256}}`` of what was written.

    Raises:
        InputError: a path that is neither a model file nor a folder; an invalid JSON.
    """
    files: list[Path] = []
    for item in paths:
        q = Path(item)
        if q.is_dir():
            files += sorted(f for f in q.iterdir() if f.suffix in MODEL_SUFFIXES and f.is_file())
        elif q.is_file() and q.suffix in MODEL_SUFFIXES:
            files.append(q)
        else:
            raise InputError(f"not a model file (.onnx, .pt) or folder: {q}")
    by_json: dict[Path, list[Path]] = {}
    for f in files:
        by_json.setdefault(_description(f), []).append(f)
    written: dict[str, dict[str, str]] = {}
    for js, group in by_json.items():
        meta = _read_json(js) if js.is_file() else {"name": js.stem}
        sums = dict(meta.get("sha256") or {})
        for f in group:
            sums[f.name] = file_sha256(f)
        meta["sha256"] = dict(sorted(sums.items()))
        tmp = js.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(meta, indent=2) + "\n")
        os.replace(tmp, js)
        written[str(js)] = meta["sha256"]
    return written


def check_classes(path: str | os.PathLike, names: Mapping[int, str] | None, role: str) -> None:
    """Refuse a model whose class names are the project's but belong to another role.

    Args:
        path: the model file (for the message).
        names: model class id -> name (from the file itself, or its JSON).
        role: ``"tile"`` or ``"spot"`` (:data:`ROLE_CLASSES`).

    Raises:
        InputError: e.g. ``models/pips.onnx is a spot model (classes pip_red, pip_white), not
            a tile model``. Names that are not the project's at all are left alone (mapped by
            class offset, see :mod:`vision.recognition.detect`).
    """
    if not names:
        return
    values = set(names.values())
    known = {n for cls in ROLE_CLASSES.values() for n in cls}
    if not values <= known or values <= set(ROLE_CLASSES[role]):
        return
    other = [r for r, cls in ROLE_CLASSES.items() if values <= set(cls)]
    what = f"a {other[0]} model" if other else "a model of mixed classes"
    raise InputError(f"{path} is {what} (classes {', '.join(sorted(values))}), not a {role} "
                     f"model ({', '.join(ROLE_CLASSES[role])})")


def main(argv: list[str] | None = None) -> int:
    """``python -m vision.recognition.modelcheck [--check] PATH...``: record (default) or check checksums."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m vision.recognition.modelcheck",
                                 description="Record the SHA-256 of model files in the JSON "
                                             "beside them (models/tiles.json, ...), or check it.")
    ap.add_argument("paths", nargs="*", default=["models"], help="model files or folders")
    ap.add_argument("--check", action="store_true", help="check instead of recording")
    a = ap.parse_args(argv)
    try:
        if a.check:
            bad = 0
            for item in a.paths:
                q = Path(item)
                for f in (sorted(q.iterdir()) if q.is_dir() else [q]):
                    if f.suffix in MODEL_SUFFIXES and f.is_file():
                        ok = verify_checksum(f)
                        print(f"{f}: {'ok' if ok else 'no checksum recorded'}")
                        bad += not ok
            return 1 if bad else 0
        for js, sums in stamp(a.paths).items():
            for name, digest in sums.items():
                print(f"{js}: {name} {digest}")
    except InputError as exc:
        print(f"python -m vision.recognition.modelcheck: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
