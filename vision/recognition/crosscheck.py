"""A second opinion where spots are few: the crop classifier (issue 40 item 3).

Why. At low resolution (a 720p camera, a tile some 30-90 px long) a spot is a few pixels, and
two spots merged or one missed can turn a face into another valid face (a dim 1-6 read 3-3 on
a kept-back set, issue 40). The spot count alone cannot see that. A second reader that does
not count spots -- a small image classifier trained on rendered tile crops (tile crop -> one of
the 21 faces or ``other``; :mod:`vision.synth.crops`, ``models/crops.onnx``) -- must agree.

Rule (:func:`cross_check`): every identified tile whose outline, or the identified tiles around
it (:func:`checked_length`), is shorter than :data:`LOW_RES_LONG_PX` is shown to the classifier
as the product crops it (:func:`square_crop`); where the classifier gives the face read a
probability under :data:`MIN_FACE_P` -- it rules that face out -- or takes the crop for
``other`` (its most likely class: an outline that is not one tile, e.g. a box across the halves
of two flush tiles), the tile becomes unknown
(:attr:`vision.schema.UnreadReason.CROP_DISAGREES`, the face kept in ``evidence.disputed``). A
classifier merely unsure between faces (a blurred crop spread over several) vetoes nothing. It
never names a face and never changes one: it can only abstain, so it cannot make a settlement
wrong. Larger tiles are left to the spot count, whose spots are then well resolved.

Public API: :data:`LOW_RES_LONG_PX`, :data:`MIN_FACE_P`, :data:`CLS_SIZE`,
:class:`CropClassifier`, :func:`cross_check`, :func:`checked_length`,
:func:`load_crop_classifier`, :func:`crop_model_file`, :func:`square_crop`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from scoring.errors import InputError
from vision.recognition.decode import TileRead
from vision.recognition.flush import MIN_PEERS
from vision.recognition.zoom import local_shape
from vision.schema import UnreadReason

__all__ = ["LOW_RES_LONG_PX", "MIN_FACE_P", "CLS_SIZE", "CropClassifier", "cross_check",
           "checked_length", "load_crop_classifier", "crop_model_file", "square_crop"]

log = logging.getLogger("vision.recognition.crosscheck")

#: px: identified tiles whose outline's long side is shorter than this are cross-checked. The
#: classifier was trained with most crops brought down to tiles 24-90 px long
#: (:mod:`vision.synth.crops`); 90 px is the top of that range, fixed before any measurement.
LOW_RES_LONG_PX: float = 90.0
#: the classifier's probability for the face read below which the face is ruled out. Set from
#: the classifier's own rendered validation crops (never from ../shared): the probability
#: that 99 % of the faces there get at least (models/MODEL_CARD.md, "The crop classifier").
MIN_FACE_P: float = 0.03
#: px, the classifier's input side (the upright tile crop squashed to a square)
CLS_SIZE: int = 96


def square_crop(image: np.ndarray, polygon) -> np.ndarray:
    """The classifier's input for one outline: :func:`vision.geometry.rectify` (the upright
    ``CROP_W`` x ``CROP_H`` crop, margin ``CROP_MARGIN``) resized to ``CLS_SIZE`` x
    ``CLS_SIZE`` (area interpolation). The training crops are made by the same function
    (:mod:`vision.synth.crops`).

    Args:
        image: uint8 (H, W, 3) BGR picture.
        polygon: (4, 2) outline corners in picture px, any order.

    Returns:
        uint8 (CLS_SIZE, CLS_SIZE, 3) BGR.

    Raises:
        InputError: a bad polygon or image (from ``rectify``).
    """
    import cv2

    from vision.geometry import rectify

    crop, _ = rectify(image, np.asarray(polygon, np.float32))
    return cv2.resize(crop, (CLS_SIZE, CLS_SIZE), interpolation=cv2.INTER_AREA)


class CropClassifier:
    """The crop classifier's ONNX graph run by onnxruntime (one thread).

    Args:
        path: ``crops.onnx`` (input float32 (N, 3, S, S) RGB 0..1; output float32 (N, C)
            class probabilities); its description ``crops.json`` beside it gives the class
            names (``names``) and must record the file's SHA-256
            (:func:`vision.recognition.modelcheck.require_description`), which it must match
            (:func:`vision.recognition.modelcheck.verify_checksum`).

    Raises:
        InputError: a missing, undescribed, altered or unreadable model, named.
    """

    def __init__(self, path: str | Path) -> None:
        from vision.recognition.modelcheck import require_description, verify_checksum

        path = Path(path)
        if not path.is_file():
            raise InputError(f"crop classifier not found: {path}")
        require_description(path)
        verify_checksum(path)
        meta = json.loads(path.with_suffix(".json").read_text())
        names = meta.get("names") or {}
        self.names: tuple[str, ...] = tuple(str(names[k]) for k in sorted(names, key=int))
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(str(path), opts,
                                                providers=["CPUExecutionProvider"])
        except Exception as e:  # noqa: BLE001 - onnxruntime raises its own types
            raise InputError(f"crop classifier {path} could not be loaded: {e}") from e
        inp = self.session.get_inputs()[0]
        self.input_name = inp.name
        side = inp.shape[-1]
        self.size = int(side) if isinstance(side, int) else int(meta.get("imgsz", 96))
        self.calls = 0

    def classify(self, crops: Sequence[np.ndarray]) -> np.ndarray:
        """Class probabilities of square crops.

        Args:
            crops: uint8 (S, S, 3) BGR each (:func:`square_crop`).

        Returns:
            float32 (N, C): each crop's probability per class, columns in :attr:`names` order.
        """
        if not crops:
            return np.zeros((0, len(self.names)), np.float32)
        import cv2

        blob = np.stack([cv2.resize(c, (self.size, self.size), interpolation=cv2.INTER_AREA)
                         if c.shape[:2] != (self.size, self.size) else c for c in crops])
        blob = np.ascontiguousarray(blob[..., ::-1].transpose(0, 3, 1, 2), np.float32) / 255.0
        self.calls += 1
        return np.asarray(self.session.run(None, {self.input_name: blob})[0], np.float32)


def crop_model_file(models_dir: str | Path) -> Path:
    """``crops.onnx`` in the models folder ``models_dir``; it may not exist."""
    return Path(models_dir) / "crops.onnx"


def load_crop_classifier(models_dir: str | Path) -> CropClassifier | None:
    """The models folder's crop classifier, or None where it has none (optional: the reading
    then goes without the second opinion; logged once).

    Raises:
        InputError: the file is there but undescribed, altered or unreadable.
    """
    path = crop_model_file(models_dir)
    if not path.is_file():
        log.info("no crop classifier (%s): small tiles are not cross-checked", path)
        return None
    return CropClassifier(path)


def checked_length(read: TileRead, known: Sequence[TileRead]) -> float:
    """px: the length a tile is held to for the cross check -- the shorter of its outline's
    long side and the median long side of the identified tiles nearest to it
    (:func:`vision.recognition.zoom.local_shape` over ``known``, ``read`` left out; its own
    alone with fewer than :data:`vision.recognition.flush.MIN_PEERS` of them).

    All tiles of a set are one size, so the tiles around give the picture's resolution there
    even where an outline is wrong: an outline reaching off its tile onto the felt is longer
    than the tile (seen with a camera-trained candidate model, issue 40: a 67 px 4-6 on a
    720p picture outlined 93 px long, its halves cut in the wrong place, read 1-6 -- the
    classifier: 6-6 0.99, 1-6 0.001 -- and left unchecked for its length)."""
    peers = [k for k in known if k is not read]
    own = float(read.long_side)
    if len(peers) < MIN_PEERS:
        return own
    return min(own, local_shape(read.centre, peers)[0])


def cross_check(reads: Sequence[TileRead], image: np.ndarray, classifier: CropClassifier,
                max_long_px: float = LOW_RES_LONG_PX,
                min_face_p: float = MIN_FACE_P) -> list[TileRead]:
    """Identified tiles shorter than ``max_long_px`` (:func:`checked_length`: their outline or
    the tiles around them) whose face the classifier rules out
    (probability under ``min_face_p``) or whose crop it takes for ``other`` made unknown
    (module docstring).

    Args:
        reads: a still reading (image px polygons, float (4, 2)).
        image: uint8 (H, W, 3) BGR, the picture read.
        classifier: :class:`CropClassifier`.
        max_long_px: px, the length (:func:`checked_length`) below which a tile is checked.
        min_face_p: the classifier's probability for the face read below which it is ruled
            out (0..1).

    Returns:
        ``reads`` in the same order; the tiles the classifier reads otherwise
        ``as_unknown(UnreadReason.CROP_DISAGREES)``.
    """
    out = list(reads)
    known = [r for r in out if r.face is not None]
    todo = [k for k, r in enumerate(out)  # the peers' median only where the outline is long
            if r.face is not None and (r.long_side < max_long_px
                                       or checked_length(r, known) < max_long_px)]
    if not todo:
        return out
    prob = classifier.classify([square_crop(image, out[k].polygon) for k in todo])
    col = {name: j for j, name in enumerate(classifier.names)}
    for k, p in zip(todo, prob):
        was = out[k].face
        j = col.get(str(was))
        top = int(p.argmax())
        if j is None or p[j] < min_face_p or classifier.names[top] == "other":
            out[k] = out[k].as_unknown(UnreadReason.CROP_DISAGREES, face=was,
                                       other=classifier.names[top],
                                       p=float(p[j]) if j is not None else 0.0
                                       ).with_evidence(disputed=was)
    return out
