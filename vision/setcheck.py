"""The tile set check on a picture: ``paigow setcheck IMAGE|SOURCE`` and the dealer display's
"Check the set" button (docs/web-api.md).

Before play the 32 tiles are laid out face up and checked as a complete set of 16 pairs
[58 Pa. Code 621a.4]. The picture is read as a still (the reading of ``paigow identify``:
:meth:`vision.recognition.engine.RecognitionEngine.read` in ``"still"`` mode, overlapping
outlines resolved), and the faces read go to :func:`scoring.setcheck.check_set`. A tile whose
face is not accepted by the decoder's two reads (``unknown``) or that lies face down is
*unread*: never guessed, and the check does not pass. A tile that is no pai gow tile (a
western domino with a blank half, another game's tile) has no face among the 21: the decoder
does not accept it, so it is reported unread too (the words say to check it by eye);
``foreign`` holds only face texts given that are no pai gow face.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Sequence

import numpy as np

from scoring.errors import InputError
from scoring.setcheck import check_set

__all__ = ["check_image", "check_sources", "engine_for"]


def engine_for(models_dir: str | Path | None = None, backend: str | None = None,
               min_confidence: float = 0.5, recognition=None):
    """A :class:`vision.recognition.engine.RecognitionEngine` for still pictures.

    Args:
        models_dir, backend, min_confidence: as ``paigow identify`` (None: defaults).
        recognition: a :class:`vision.config.RecognitionConfig` to use instead.

    Raises:
        InputError: missing or corrupt model files.
    """
    from vision.config import RecognitionConfig
    from vision.recognition.engine import RecognitionEngine

    rec = recognition or RecognitionConfig(models_dir, backend, min_confidence)
    return RecognitionEngine(rec)


def check_image(image: np.ndarray, engine) -> dict:
    """Read one picture of the tiles laid out and check them as one set.

    Args:
        image: uint8 (H, W, 3) BGR picture of the tiles face up.
        engine: a :class:`vision.recognition.engine.RecognitionEngine` (:func:`engine_for`).

    Returns:
        :meth:`scoring.setcheck.SetCheck.to_dict` plus ``"tiles_read"``: each tile's
        ``{"face", "state", "confidence", "xyxy", "polygon"}`` (image px) and
        ``"model_version"``.

    Raises:
        InputError: not a BGR picture.
    """
    from vision.recognition.engine import ReadMode
    from vision.recognition.overlaps import resolve_overlapping_reads

    if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] != 3:
        raise InputError("the set check needs a colour picture (H x W x 3)")
    lock = getattr(engine, "_setcheck_lock", None)
    if lock is None:
        lock = engine._setcheck_lock = threading.Lock()
    with lock:  # one engine reads one picture at a time
        reads = resolve_overlapping_reads(list(engine.read(image, ReadMode.STILL)))
    tiles = [r.to_dict() for r in reads]
    faces = [t["face"] if t["state"] == "face_up" and t["face"] else None for t in tiles]
    out = check_set(faces).to_dict()
    out["tiles_read"] = tiles
    out["model_version"] = getattr(engine, "model_version", None)
    return out


def check_sources(sources: Sequence[str], engine, frames: int = 1) -> list[dict]:
    """Check every picture of the given sources.

    Args:
        sources: images, folders or globs (each picture checked), or one video, camera or
            stream (its ``frames``-th frame checked: the first frames of a camera are often
            dark).
        engine: see :func:`check_image`.
        frames: which frame of a video, camera or stream (1 = the first).

    Returns:
        ``[{"source": path or spec, **check_image(...)}]`` in order.

    Raises:
        InputError: a source that cannot be opened, a video that ends before ``frames``.
    """
    from vision.io.capture import open_source

    opened = [open_source(str(s)) for s in sources]  # every source checked first
    out = []
    try:
        for src in opened:
            with src:
                if src.kind in ("image", "images"):
                    for fr in src:
                        out.append({"source": fr.path or fr.source,
                                    **check_image(fr.image, engine)})
                    continue
                last, n = None, 0
                for fr in src:
                    last, n = fr, n + 1
                    if n >= frames:
                        break
                if n < frames:
                    raise InputError(f"{src.spec}: ended after {n} frame(s), before frame "
                                     f"{frames}")
                out.append({"source": src.spec, **check_image(last.image, engine)})
    finally:
        for src in opened:
            src.close()
    return out
