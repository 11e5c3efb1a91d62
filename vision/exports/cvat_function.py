"""A CVAT auto-annotation function: the project's models pre-annotate a CVAT task's images.

cvat-sdk's detection-function interface (``cvat_sdk.auto_annotation``): this module has a
``spec`` (the labels it outputs) and ``detect(context, image)`` (the shapes of one image), and a
``create(**parameters)`` factory for other settings, so that it runs with the CVAT command line
on a task of your CVAT server (docs/labelling.md)::

    cvat-cli --server-host http://cvat:8080 --auth user:pass task auto-annotate TASK_ID \\
        --function-module vision.exports.cvat_function [-p models=str:/path/to/models] \\
        [-p shape=str:rectangle] [--conf-threshold 0.5] [--allow-unmatched-labels]

or from Python: ``cvat_sdk.auto_annotation.annotate_task(client, task_id,
vision.exports.cvat_function.create())``.

Labels (:data:`vision.exports.CLASS_NAMES`, the labels of ``paigow export --format cvat``): the
21 faces, ``tile_back`` (a face-down tile) and ``unknown`` (a face-up tile whose face was not
read), each of type ``polygon`` (default: the tile's four corners in image pixels) or
``rectangle`` (``shape="rectangle"``: the axis-aligned box). A task made from the CVAT export's
labels (or with these 23 label names) matches; a task with fewer labels needs
``--allow-unmatched-labels`` (the shapes of the missing labels are then dropped).

Every image is read as ``paigow identify`` reads a still image (the tile model at the
configured input sizes, spots decoded twice, close-ups outlined). The models are loaded once per
function object, at its first image. ``context.conf_threshold`` (``--conf-threshold``) drops
tiles whose confidence is below it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from vision.exports.common import CLASS_NAMES, class_name

__all__ = ["TileFunction", "create", "spec", "detect", "read_tiles", "SHAPES"]

SHAPES = ("polygon", "rectangle")


def _spec(shape: str):
    import cvat_sdk.auto_annotation as cvataa

    return cvataa.DetectionFunctionSpec(
        labels=[cvataa.label_spec(name, i, type=shape) for i, name in enumerate(CLASS_NAMES)])


def read_tiles(engine, image_bgr) -> list[dict]:
    """The tiles of one still image as ``paigow identify`` reads them.

    Args:
        engine: a :class:`vision.recognition.engine.RecognitionEngine`.
        image_bgr: uint8 (H, W, 3) BGR picture.

    Returns:
        ``[{"face", "state", "confidence", "xyxy", "polygon"}]`` in image pixels
        (:meth:`vision.recognition.decode.TileRead.to_dict`).
    """
    from vision.recognition.closeup import merge_picture_read, picture_candidate
    from vision.recognition.engine import ReadMode
    from vision.recognition.overlaps import resolve_overlapping_reads

    got = engine.read(image_bgr, ReadMode.STILL)
    reads, dets = list(got), got.detections
    cand = picture_candidate(image_bgr, dets)
    if len(cand):
        creads, _ = engine.decode(image_bgr, cand, use_cache=False)
        reads = merge_picture_read(reads, creads[0])
    return [r.to_dict() for r in resolve_overlapping_reads(reads)]


class TileFunction:
    """A cvat-sdk detection function over the project's models.

    Args:
        models: the models folder (None: ``$PAIGOW_MODELS``, else the repository's ``models/``).
        shape: ``"polygon"`` (the tile's four corners) or ``"rectangle"`` (axis-aligned box).
        backend: detector backend (None: the configured default; ``"onnx"``,
            ``"openvino"``, ``"ultralytics"``).

    Raises:
        ValueError: for a shape other than polygon / rectangle, or a models folder that does
            not exist (cvat-cli prints it).
    """

    def __init__(self, models: str | os.PathLike | None = None, shape: str = "polygon",
                 backend: str | None = None):
        if shape not in SHAPES:
            raise ValueError(f"shape {shape!r} is not polygon or rectangle")
        if models is not None and not Path(models).is_dir():
            raise ValueError(f"models folder {os.fspath(models)!r} is not an existing folder")
        self.models = models
        self.shape = shape
        self.backend = backend
        self.spec = _spec(shape)
        self._engine = None

    @property
    def engine(self):
        """The recognition engine, built (models loaded) at first use."""
        if self._engine is None:
            from vision.config import RecognitionConfig
            from vision.recognition.engine import RecognitionEngine

            self._engine = RecognitionEngine(RecognitionConfig(self.models, self.backend))
        return self._engine

    def detect(self, context: Any, image) -> list:
        """The shapes of one image (cvat-sdk ``DetectionFunction.detect``).

        Args:
            context: cvat-sdk's ``DetectionFunctionContext`` (``conf_threshold`` read).
            image: a ``PIL.Image.Image`` (any mode; converted to RGB).

        Returns:
            list of ``cvat_sdk.models.LabeledShapeRequest`` (``cvataa.polygon`` /
            ``cvataa.rectangle``), label ids = indices in :data:`CLASS_NAMES`, frame 0.
        """
        import cvat_sdk.auto_annotation as cvataa
        import numpy as np

        bgr = np.ascontiguousarray(np.asarray(image.convert("RGB"))[:, :, ::-1])
        threshold = getattr(context, "conf_threshold", None)
        shapes = []
        for t in read_tiles(self.engine, bgr):
            if threshold is not None and t["confidence"] < threshold:
                continue
            label = CLASS_NAMES.index(class_name(t))
            if self.shape == "polygon":
                shapes.append(cvataa.polygon(label, [float(v) for p in t["polygon"] for v in p]))
            else:
                shapes.append(cvataa.rectangle(label, [float(v) for v in t["xyxy"]]))
        return shapes


def create(models: str | None = None, shape: str = "polygon",
           backend: str | None = None) -> TileFunction:
    """The function factory cvat-cli calls with its ``-p NAME=TYPE:VALUE`` parameters
    (:class:`TileFunction`)."""
    return TileFunction(models, shape, backend)


_DEFAULT: TileFunction | None = None


def __getattr__(name: str):
    """``spec``: the module's own spec (polygons), built on first access, for loaders that use
    the module itself as the function."""
    if name == "spec":
        return _spec("polygon")
    raise AttributeError(name)


def detect(context: Any, image) -> list:
    """The module as a function (polygons, default models, loaded once at the first image):
    :meth:`TileFunction.detect`."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = TileFunction()
    return _DEFAULT.detect(context, image)
