"""Still images -> tile JSON: ``paigow identify`` (no tracking, no rounds).

Every tile of every image is detected and decoded (no motion gate, no identity cache); a
close-up of one tile also gets its picture outline as a candidate (:mod:`vision.recognition.closeup`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

import numpy as np

from scoring.errors import InputError

from vision.recognition.closeup import context_pad, merge_picture_read, picture_candidate, single_tile_outline
from vision.config import RecognitionConfig
from vision.detections import TILE, Detections
from vision.geometry import order_polygon
from vision.recognition.overlaps import resolve_overlapping_reads
from vision.recognition.engine import Detectors, ReadMode, RecognitionEngine

__all__ = ["identify", "progress_bar"]


def progress_bar(total: int | None, enabled: bool, desc: str):
    """A tqdm bar on stderr counting frames, or None when not ``enabled``."""
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total or None, desc=desc, unit="frame", file=sys.stderr, leave=False)


def identify(paths: Sequence[str | Path], models_dir: str | Path | None = None,
             backend: str | None = None, min_confidence: float = 0.5, tile_detector=None,
             pip_detector=None, progress: bool = False, with_reads: bool = False,
             pad: float = 0.0, single: bool = False, closeups: bool = True,
             scales: Sequence[int] | None = None,
             recognition: RecognitionConfig | None = None) -> list[dict]:
    """Identify the tiles in still images.

    Each image's tiles come from the tile model; a close-up of one tile also gets its picture
    outline as a candidate (:func:`picture_candidate`, :func:`merge_picture_read`; off with
    ``closeups=False``). Every candidate is verified by the decoder's two reads.

    Args:
        paths: image files, folders or globs (each expanded by :func:`vision.io.capture.open_source`).
        models_dir: the models folder (None: :func:`vision.config.default_models_dir`).
        with_reads: add each tile's decoder evidence (``"reads"``: read A/B counts, reason),
            ``"reason"`` and ``"reason_code"`` (:class:`vision.schema.UnreadReason` value).
        pad: context border for close-ups (:func:`context_pad`), fraction of the longer side;
            results are in the original image's pixels (clipped to it).
        single: each image shows exactly one tile (a catalogue close-up): its outline comes
            from :func:`single_tile_outline` instead of the tile model; spots and the two reads
            are as always.
        closeups: propose the picture outline of a one-tile close-up (see above).
        scales: tile-model input sizes fused per image (:class:`vision.config.RecognitionConfig`).
        recognition: the whole :class:`vision.config.RecognitionConfig` (the command line's,
            :func:`vision.config.recognition_config`: a config file's ``recognition`` section
            and the options), used instead of ``models_dir``, ``backend``,
            ``min_confidence`` and ``scales``.

    Returns:
        ``[{"image": path, "tiles": [{"face": "1-5" | None, "state": "face_up|face_down|unknown",
        "confidence": 0.99, "xyxy": [x1, y1, x2, y2], "polygon": [[x, y] * 4]}]}]``.

    Raises:
        InputError: a path that is missing, not an image, an empty folder; missing models.
    """
    sources = _open_images(paths)
    engine = RecognitionEngine(
        recognition or RecognitionConfig(models_dir, backend, min_confidence,
                                         scales=None if scales is None else tuple(scales)),
        detectors=(None if tile_detector is None and pip_detector is None
                   else Detectors(tile_detector, pip_detector)))
    out = []
    total = sum(s.frame_count or 0 for s in sources)
    bar = progress_bar(total, progress, "identify")
    for s in sources:
        with s:
            for fr in s:
                image, border = context_pad(fr.image, pad)
                reads = _read_image(engine, image, single, closeups)
                h, w = fr.image.shape[:2]
                tiles = []
                for r in reads:
                    if border:
                        r.polygon = np.asarray(r.polygon, np.float32) - border
                        r.xyxy = np.clip(np.asarray(r.xyxy, np.float32) - border,
                                         0, [w, h, w, h]).astype(np.float32)
                    d = r.to_dict()
                    if with_reads:
                        d["reads"] = r.evidence_dict()
                        d["reason"] = r.reason
                        d["reason_code"] = r.reason_code.value if r.reason_code else None
                    tiles.append(d)
                out.append({"image": fr.path or fr.source, "tiles": tiles})
                if bar is not None:
                    bar.update(1)
    if bar is not None:
        bar.close()
    return out


def _open_images(paths: Sequence[str | Path]) -> list:
    """Every path opened as an image source (:func:`vision.io.capture.open_source`), all
    validated before any is read.

    Raises:
        InputError: no path, or a path that is missing, not an image, folder or glob of
            images (that source is closed).
    """
    from vision.io.capture import open_source

    if not paths:
        raise InputError("no image given")
    sources = [open_source(str(p)) for p in paths]  # validate every path first
    for s in sources:
        if s.kind not in ("image", "images"):
            s.close()
            raise InputError(f"not an image, folder or glob of images: {s.spec}")
    return sources


def _read_image(engine: RecognitionEngine, image: np.ndarray, single: bool,
                closeups: bool) -> list:
    """The tile reads of one picture (uint8 (H, W, 3) BGR), as :func:`identify` describes:
    ``single``: one outline from :func:`single_tile_outline`, decoded; else the engine's still
    reading, with the close-up's picture outline merged in when ``closeups``, and overlapping
    outlines resolved (:func:`resolve_overlapping_reads`). A list of
    :class:`vision.recognition.decode.TileRead`, in image px.
    """
    if single:
        poly = single_tile_outline(image)
        dets = Detections.from_polygons(order_polygon(poly)[None], [1.0], [TILE])
        reads, _ = engine.decode(image, dets, use_cache=False)
    else:
        got = engine.read(image, ReadMode.STILL)
        reads, dets = list(got), got.detections
        if closeups:
            cand = picture_candidate(image, dets)
            if len(cand):
                from_picture, _ = engine.decode(image, cand, use_cache=False)
                reads = merge_picture_read(reads, from_picture[0])
        reads = resolve_overlapping_reads(reads)
    return reads

