"""Tile and pip detectors: letterbox, output parsing and NMS around an inference backend
(:mod:`vision.recognition.backends`: ONNX Runtime, OpenVINO, or one registered by name), or
ultralytics' own predict (alternative).

Both paths return :class:`vision.detections.Detections` in the INPUT image's pixel
coordinates with GLOBAL class ids (tile model: 0 tile, 1 tile_back; pip model: 2 pip_red,
3 pip_white). A model's own class ids are mapped by name when its names are the project's
(``tile``, ``tile_back``, ``pip_red``, ``pip_white``), otherwise by adding ``class_offset``
(0 for tiles, 2 for pips). Oriented (OBB) tile detections carry their polygon in the canonical
order of :func:`vision.geometry.order_polygon` (clockwise, corner 0 -> 1 a short side).

Graph path (``backend="onnx"``, ``"openvino"`` or any registered name, or a
:class:`~vision.recognition.backends.DetectorBackend` object): the backend runs the ONNX graph
only -- it gets the letterboxed float32 blob and returns the raw output arrays -- and everything
below is this module's, the same for every backend:

* model facts come from the model file's metadata (``DetectorBackend.metadata``, the ONNX
  ``metadata_props`` written by ultralytics export: ``task``, ``names``, ``imgsz``, ``stride``,
  ``batch``, ``args.nms``, ``end2end``) and the backend's input shape, overridden by a JSON
  file beside the model (``models/tiles.json`` for ``models/tiles.onnx``) when present (keys
  ``task``, ``names``, ``imgsz``, ``stride``, ``class_offset``);
* preprocessing is ultralytics' ``LetterBox`` re-implemented in a few cv2 lines
  (:func:`letterbox`): scale by ``r = min(H/h, W/w)`` (up-scaling allowed), each side rounded,
  ``cv2.resize`` INTER_LINEAR, padding split in two with ``round(d - 0.1)`` / ``round(d + 0.1)``,
  colour 114, BGR -> RGB, /255, NCHW float32. A static-shape model gets the full ``imgsz``
  square (ultralytics does the same for static exports); a dynamic-shape model gets the minimum
  rectangle padded to a multiple of ``stride`` (ultralytics ``auto=True``);
* output layouts: embedded NMS (``export(nms=True)`` or end-to-end heads) ``(B, max_det, 6)``
  rows ``x1 y1 x2 y2 score class`` (detect) or ``(B, max_det, 7)`` rows
  ``cx cy w h score class angle`` (OBB), filtered by confidence only; raw ``(B, 4+nc, N)``
  (detect, ``cx cy w h`` + class scores) or ``(B, 4+nc+1, N)`` (OBB, angle in radians last),
  decoded here with the best class per anchor, confidence filter, at most 30000 candidates,
  class-wise NMS by OpenCV (``cv2.dnn.NMSBoxesBatched`` for boxes; ``cv2.dnn.NMSBoxesRotated``
  with ultralytics' per-class coordinate offset for OBB -- polygon IoU, where ultralytics uses
  probabilistic IoU, so heavily overlapping rotated boxes may be kept/suppressed differently);
* boxes are mapped back with per-axis gain and padding as ``ultralytics.utils.ops.scale_boxes``
  (detect boxes clipped to the image; OBB corners mapped, not clipped).

Ultralytics path (``backend="ultralytics"``): loads the ``.pt`` beside the ``.onnx`` (or the
path given) and calls ``YOLO.predict`` (its own LetterBox, NMS); results converted to the same
type. Used to check the ONNX path and when a GPU is present. It letterboxes like the ONNX
graph beside it: to the full square ``imgsz`` (``rect=False``) for a static export, to the
minimum rectangle (``rect=True``) when the model's JSON says ``export.dynamic`` (the tile
model), so the two backends see the same input.

Checked at load (:mod:`vision.recognition.modelcheck`): the file's SHA-256 against the one recorded in
the JSON beside it (a damaged or replaced file is refused, naming it), and the class layout --
a spot model given as the tile model, or the reverse, is refused by its class names (the
file's own names and the JSON's).

Defaults follow ultralytics predict: ``conf=0.25``, ``iou=0.7``, ``max_det=300``.
"""

from __future__ import annotations

import ast
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import cv2
import numpy as np

from scoring.errors import InputError

from vision.detections import CLASS_NAMES, Detections
from vision.geometry import obb_to_polygons, order_polygon
from vision.recognition.backends import DetectorBackend, backend_names, default_backend, open_backend
from vision.recognition.obb_nms import batches_right

__all__ = [
    "Detector",
    "TileDetector",
    "PipDetector",
    "ModelInfo",
    "letterbox", "letterbox_geometry",
    "read_model_info",
    "DEFAULT_TILE_MODEL",
    "DEFAULT_PIP_MODEL",
]

_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_TILE_MODEL = _ROOT / "models" / "tiles.onnx"
DEFAULT_PIP_MODEL = _ROOT / "models" / "pips.onnx"
_MAX_WH = 7680     # ultralytics' per-class coordinate offset for class-wise NMS, px
_MAX_NMS = 30000   # ultralytics' cap on boxes entering NMS


# ----------------------------------------------------------------------------- preprocessing

@dataclass(frozen=True)
class LetterboxInfo:
    """How an image was letterboxed: per-axis gain (new/old) and left/top padding, pixels."""

    gain_x: float
    gain_y: float
    pad_x: int
    pad_y: int
    shape: tuple[int, int]  # (h, w) of the letterboxed image


def letterbox_geometry(shape: tuple[int, int], new_shape: tuple[int, int], *, auto: bool = False,
                       stride: int = 32) -> tuple[float, tuple[int, int], tuple[int, int, int, int]]:
    """Where :func:`letterbox` puts an image of ``shape`` ``(h, w)`` px: ``(gain, (unpad_w,
    unpad_h), (left, top, right, bottom))`` -- the scale (input px per image px), the resized
    image's size and the padding on each side, px (ultralytics ``LetterBox(center=True)``)."""
    h, w = int(shape[0]), int(shape[1])
    nh, nw = int(new_shape[0]), int(new_shape[1])
    r = min(nh / h, nw / w)
    unpad_w, unpad_h = max(round(w * r), 1), max(round(h * r), 1)
    dw, dh = nw - unpad_w, nh - unpad_h
    if auto:
        dw, dh = dw % stride, dh % stride
    dw, dh = dw / 2, dh / 2
    pads = (round(dw - 0.1), round(dh - 0.1), round(dw + 0.1), round(dh + 0.1))
    return r, (unpad_w, unpad_h), pads


def letterbox(image: np.ndarray, new_shape: tuple[int, int], *, auto: bool = False,
              stride: int = 32, pad_value: int = 114) -> tuple[np.ndarray, LetterboxInfo]:
    """Resize keeping aspect ratio and pad, exactly as ultralytics ``LetterBox(center=True)``.

    Args:
        image: uint8 (h, w, 3).
        new_shape: target ``(height, width)`` in pixels.
        auto: pad only to a multiple of ``stride`` (minimum rectangle) instead of ``new_shape``.
        stride: model stride, pixels.
        pad_value: padding grey level (114 as ultralytics).

    Returns:
        ``(img, info)``: the letterboxed uint8 image and :class:`LetterboxInfo`.
    """
    h, w = image.shape[:2]
    _, (unpad_w, unpad_h), (left, top, right, bottom) = letterbox_geometry(
        (h, w), new_shape, auto=auto, stride=stride)
    img = image
    if (w, h) != (unpad_w, unpad_h):
        img = cv2.resize(image, (unpad_w, unpad_h), interpolation=cv2.INTER_LINEAR)
    img = cv2.copyMakeBorder(img, top, bottom, left, right, cv2.BORDER_CONSTANT,
                             value=(pad_value,) * 3)
    return img, LetterboxInfo(unpad_w / w, unpad_h / h, left, top, img.shape[:2])


def _to_blob(images: Sequence[np.ndarray]) -> np.ndarray:
    """uint8 BGR (h, w, 3) list (same size) -> float32 (n, 3, h, w) RGB in [0, 1]."""
    arr = np.stack(images)[..., ::-1].transpose(0, 3, 1, 2)
    return np.ascontiguousarray(arr, dtype=np.float32) / np.float32(255.0)


# ----------------------------------------------------------------------------- model facts

@dataclass
class ModelInfo:
    """Facts about a model file.

    Attributes:
        path: the model file.
        task: ``"detect"`` or ``"obb"``.
        names: model class id -> name.
        imgsz: ``(height, width)`` the model was exported for, pixels.
        stride: max stride, pixels.
        batch: fixed batch size, or None when the batch axis is dynamic.
        dynamic_hw: True when height/width axes are dynamic.
        nms: True/False when known from metadata (embedded NMS), None when unknown (the
            layout is then recognised from the output shape).
        class_offset: added to model ids not named like the project's classes.
        extra: the raw metadata/JSON dict.
    """

    path: Path
    task: str = "detect"
    names: dict[int, str] = field(default_factory=dict)
    imgsz: tuple[int, int] = (640, 640)
    stride: int = 32
    batch: int | None = 1
    dynamic_hw: bool = False
    nms: bool | None = None
    class_offset: int = 0
    extra: dict = field(default_factory=dict)


def _literal(v: Any) -> Any:
    if not isinstance(v, str):
        return v
    try:
        return ast.literal_eval(v)
    except (ValueError, SyntaxError):
        return v


def _imgsz(v: Any) -> tuple[int, int]:
    v = _literal(v)
    if isinstance(v, (int, float)):
        return int(v), int(v)
    return int(v[0]), int(v[1])


def read_model_info(path: Path, meta: dict[str, str], input_shape: Sequence[Any],
                    class_offset: int, task: str | None) -> ModelInfo:
    """Combine ONNX metadata, the model's input shape and an optional ``<stem>.json``.

    Raises:
        InputError: the JSON file is not valid JSON (names the file).
    """
    info = ModelInfo(path=path, class_offset=class_offset)
    data: dict[str, Any] = {k: _literal(v) for k, v in meta.items()}
    js = path.with_suffix(".json")
    if js.is_file():
        try:
            extra = json.loads(js.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            raise InputError(f"model description is not valid JSON: {js} ({exc})") from exc
        if isinstance(extra, dict):
            data.update(extra)
    info.extra = data
    if isinstance(data.get("names"), dict):
        info.names = {int(k): str(v) for k, v in data["names"].items()}
    elif isinstance(data.get("names"), list):
        info.names = dict(enumerate(map(str, data["names"])))
    if len(input_shape) == 4:
        b, _, h, w = input_shape
        info.batch = b if isinstance(b, int) and b > 0 else None
        info.dynamic_hw = not (isinstance(h, int) and isinstance(w, int) and h > 0 and w > 0)
        if not info.dynamic_hw:
            info.imgsz = (h, w)
    elif isinstance(data.get("export"), dict) and data["export"].get("dynamic"):
        info.dynamic_hw = True  # the .pt of a dynamic ONNX export: same letterbox (rect)
    if "imgsz" in data and (info.dynamic_hw or len(input_shape) != 4):
        info.imgsz = _imgsz(data["imgsz"])  # a static graph's own input shape always wins
    if "stride" in data:
        info.stride = int(_literal(data["stride"]))
    info.task = str(task or data.get("task") or "detect")
    if info.task not in ("detect", "obb"):
        raise InputError(f"model task must be detect or obb, got {info.task!r}: {path}")
    args = data.get("args")
    if isinstance(args, dict) and "nms" in args:
        info.nms = bool(args["nms"])
    if str(data.get("end2end", "False")) == "True":
        info.nms = True
    if "class_offset" in data:
        info.class_offset = int(data["class_offset"])
    return info


# ----------------------------------------------------------------------------- postprocessing

def _nms_boxes(xyxy: np.ndarray, scores: np.ndarray, cls: np.ndarray, iou: float) -> np.ndarray:
    """Class-wise NMS of axis-aligned boxes with OpenCV; indices kept, best first."""
    if len(xyxy) == 0:
        return np.zeros(0, np.int64)
    xywh = np.concatenate([xyxy[:, :2], xyxy[:, 2:] - xyxy[:, :2]], 1).astype(np.float64)
    keep = cv2.dnn.NMSBoxesBatched(xywh.tolist(), scores.astype(float).tolist(),
                                   cls.astype(int).tolist(), 0.0, float(iou))
    keep = np.asarray(keep, dtype=np.int64).reshape(-1)
    return keep[np.argsort(-scores[keep], kind="stable")]


def _nms_rotated(xywhr: np.ndarray, scores: np.ndarray, cls: np.ndarray,
                 iou: float) -> np.ndarray:
    """Class-wise NMS of rotated boxes with OpenCV (centres offset per class by 7680 px)."""
    if len(xywhr) == 0:
        return np.zeros(0, np.int64)
    off = cls.astype(np.float64) * _MAX_WH
    rects = [((float(x + o), float(y + o)), (float(w), float(h)), float(np.degrees(a)))
             for (x, y, w, h, a), o in zip(xywhr.astype(np.float64), off)]
    keep = cv2.dnn.NMSBoxesRotated(rects, scores.astype(float).tolist(), 0.0, float(iou))
    keep = np.asarray(keep, dtype=np.int64).reshape(-1)
    return keep[np.argsort(-scores[keep], kind="stable")]


def _parse_output(out: np.ndarray, task: str, nc: int, conf: float, iou: float, max_det: int,
            nms_hint: bool | None, agnostic: bool = False
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One image's output -> (boxes, scores, model class ids) in letterbox pixels.

    ``agnostic``: suppress across classes (raw layout only; an embedded NMS is as exported).

    boxes: detect (n, 4) xyxy; obb (n, 5) cx, cy, w, h, angle_rad.
    """
    out = np.asarray(out, dtype=np.float32)
    extra = 1 if task == "obb" else 0
    row = 6 + extra
    raw_rows = 4 + nc + extra
    if nms_hint is True:
        embedded = True
    elif nms_hint is False:
        embedded = False
    else:  # unknown: (max_det, 6|7) rows vs (4+nc[+1], anchors)
        embedded = out.shape[0] != raw_rows and out.shape[1] == row
    if embedded:
        if out.shape[1] != row:
            raise InputError(f"unexpected model output shape {out.shape} for task {task} with "
                             f"embedded NMS (rows of {row} values expected)")
        keep = out[:, 4] > conf
        d = out[keep][:max_det]
        if task == "obb":
            boxes = np.concatenate([d[:, :4], d[:, 6:7]], 1)
        else:
            boxes = d[:, :4]
        return boxes, d[:, 4], d[:, 5].round().astype(np.int64)
    if out.shape[0] != raw_rows:
        raise InputError(f"unexpected model output shape {out.shape} for task {task} with "
                         f"{nc} classes (raw layout needs {raw_rows} rows)")
    p = out.T  # (N, 4+nc[+1])
    cls_scores = p[:, 4:4 + nc]
    cls = cls_scores.argmax(1)
    scores = cls_scores[np.arange(len(p)), cls]
    keep = scores > conf
    p, scores, cls = p[keep], scores[keep], cls[keep]
    if len(p) > _MAX_NMS:
        top = np.argsort(-scores, kind="stable")[:_MAX_NMS]
        p, scores, cls = p[top], scores[top], cls[top]
    if task == "obb":
        boxes = np.concatenate([p[:, :4], p[:, -1:]], 1)
        k = _nms_rotated(boxes, scores, cls, iou)[:max_det]
    else:
        c, wh = p[:, :2], p[:, 2:4]
        boxes = np.concatenate([c - wh / 2, c + wh / 2], 1)
        k = _nms_boxes(boxes, scores, np.zeros_like(cls) if agnostic else cls, iou)[:max_det]
    return boxes[k], scores[k], cls[k].astype(np.int64)


# ----------------------------------------------------------------------------- detector

class Detector:
    """A YOLO detector (detect or OBB task) returning :class:`Detections`.

    Args:
        model: path to the ``.onnx`` (onnx backend) or ``.pt``/``.onnx`` (ultralytics backend:
            a ``.pt`` with the same stem beside the ``.onnx`` is used).
        backend: a backend name (``"onnx"``: ONNX Runtime; ``"openvino"``; one added by
            :func:`vision.recognition.backends.register_backend`; None: the default,
            :func:`vision.recognition.backends.default_backend`), ``"ultralytics"`` (its own
            predict on the ``.pt``), or a ready
            :class:`~vision.recognition.backends.DetectorBackend` (tests, the shared detector).
            Threads are the process's (:func:`vision.recognition.backends.inference_threads`).
        task: ``"detect"`` or ``"obb"``; default from the model metadata.
        conf: confidence threshold (fraction), default 0.25.
        iou: NMS IoU threshold (fraction), default 0.7 (the class's ``default_iou``).
        agnostic: suppress overlapping boxes across classes (default: the class's
            ``default_agnostic``; raw-output models and the ultralytics backend only).
        max_det: most detections per image.
        class_offset: added to model class ids not named like the project's classes.
        providers: ONNX Runtime execution providers (default CPU only).
        max_batch: most images per ONNX run when the batch axis is dynamic.

    Raises:
        InputError: model file missing or unreadable (names it), its bytes differ from the
            SHA-256 recorded in the JSON beside it, its class names are the other model's
            (``role``), bad backend or task.
    """

    default_model: Path | None = None
    #: ``"tile"`` or ``"spot"``: the class layout required (vision.recognition.modelcheck.ROLE_CLASSES);
    #: None accepts any.
    role: str | None = None
    default_task: str | None = None
    default_offset: int = 0
    default_iou: float = 0.7
    default_agnostic: bool = False

    def __init__(self, model: str | os.PathLike | None = None, *,
                 backend: "str | DetectorBackend | None" = None,
                 task: str | None = None, conf: float = 0.25, iou: float | None = None,
                 agnostic: bool | None = None, max_det: int = 300, class_offset: int | None = None,
                 providers: Sequence[str] | None = None, max_batch: int = 32) -> None:
        path = Path(model) if model is not None else self.default_model
        if path is None:
            raise InputError("no model path given")
        runtime = None
        if backend is None:
            backend = default_backend()
        elif not isinstance(backend, str):
            runtime, backend = backend, getattr(backend, "name", type(backend).__name__)
        elif backend != "ultralytics" and backend not in backend_names():
            raise InputError(f"backend must be one of {', '.join(backend_names())} or "
                             f"ultralytics, got {backend!r}")
        iou = self.default_iou if iou is None else iou
        self.agnostic = self.default_agnostic if agnostic is None else bool(agnostic)
        if not (0.0 <= conf <= 1.0) or not (0.0 <= iou <= 1.0):
            raise InputError(f"conf and iou must be fractions in [0, 1], got {conf!r}, {iou!r}")
        self.backend = backend
        self.conf, self.iou, self.max_det = float(conf), float(iou), int(max_det)
        self.max_batch = max(1, int(max_batch))
        offset = self.default_offset if class_offset is None else int(class_offset)
        task = task or self.default_task
        self._own_names: dict[int, str] = {}  # the class names stored in the model file itself
        if backend == "ultralytics" and runtime is None:
            self._init_ultralytics(path, task, offset)
        else:
            self._init_graph(path, task, offset, runtime, providers)
        if self.role is not None:
            from vision.recognition.modelcheck import check_classes

            check_classes(self.info.path, self._own_names, self.role)
            check_classes(self.info.path.with_suffix(".json"), self.info.names, self.role)
        self._class_map = self._make_class_map()

    # -- backends
    def _init_graph(self, path: Path, task: str | None, offset: int,
                    runtime: "DetectorBackend | None", providers: Sequence[str] | None) -> None:
        """The graph path: ``runtime`` (an injected backend) or the backend named
        :attr:`backend` (:func:`vision.recognition.backends.open_backend`) on ``path``."""
        if runtime is None:
            if not path.is_file():
                raise InputError(f"model file not found: {path}")
            from vision.recognition.modelcheck import verify_checksum

            verify_checksum(path)
            opts = {"providers": providers} if providers and self.backend == "onnx" else {}
            runtime = open_backend(self.backend, path, **opts)
        #: the :class:`vision.recognition.backends.DetectorBackend` running the graph
        self.runtime = runtime
        meta = dict(runtime.metadata or {})
        own = _literal(meta.get("names"))
        if isinstance(own, dict):
            self._own_names = {int(k): str(v) for k, v in own.items()}
        self.info = read_model_info(path, meta, list(runtime.input_shape), offset, task)

    def _init_ultralytics(self, path: Path, task: str | None, offset: int) -> None:
        os.environ.setdefault("YOLO_OFFLINE", "1")
        os.environ.setdefault("YOLO_AUTOINSTALL", "false")
        os.environ.setdefault("YOLO_CONFIG_DIR", str(_ROOT / ".yolo_config"))
        pt = path if path.suffix == ".pt" else path.with_suffix(".pt")
        if not pt.is_file():
            raise InputError(f"model file not found: {pt}")
        from vision.recognition.modelcheck import verify_checksum

        verify_checksum(pt)
        try:
            from ultralytics import YOLO

            self.model = YOLO(str(pt), task=task)
        except Exception as exc:
            raise InputError(f"not a readable ultralytics model: {pt} ({exc})") from exc
        names = {int(k): str(v) for k, v in self.model.names.items()}
        self._own_names = dict(names)
        args = getattr(self.model.model, "args", {}) or {}
        imgsz = args.get("imgsz", 640) if isinstance(args, dict) else 640
        meta = {"names": names, "task": self.model.task, "imgsz": imgsz,
                "stride": int(max(getattr(self.model.model, "stride", [32])))}
        self.info = read_model_info(pt, meta, [], offset, task or self.model.task)

    def _make_class_map(self) -> np.ndarray:
        names = self.info.names
        n = max(names) + 1 if names else 2
        m = np.arange(n, dtype=np.int64) + self.info.class_offset
        if names and all(v in CLASS_NAMES for v in names.values()):
            for k, v in names.items():
                m[k] = CLASS_NAMES.index(v)
        return m

    @property
    def task(self) -> str:
        """``"detect"`` or ``"obb"``."""
        return self.info.task

    @property
    def names(self) -> dict[int, str]:
        """Model class id -> name (the model's own ids)."""
        return dict(self.info.names)

    # -- inference
    def detect(self, image: np.ndarray, imgsz: int | None = None) -> Detections:
        """Detect in one image.

        Args:
            image: uint8 (H, W, 3) BGR.
            imgsz: input size in pixels (the longer side, a multiple of the stride) for a
                model with dynamic axes; None: the model's own ``imgsz``. A static graph
                always gets its own input shape.

        Returns:
            :class:`Detections` in the image's pixel coordinates, global class ids, sorted by
            descending confidence.

        Raises:
            InputError: the image is not a non-empty (H, W, 3) uint8 array.
        """
        return self.detect_batch([image], imgsz=imgsz)[0]

    def detect_batch(self, images: Sequence[np.ndarray], imgsz: int | None = None
                     ) -> list[Detections]:
        """Detect in several images; one :class:`Detections` per image, same order.

        With the ONNX backend, images are run together when the model's batch axis is dynamic
        (chunks of ``max_batch``, same-size images only) and one at a time when it is fixed at 1
        (the usual ultralytics export); a fixed batch N > 1 is filled by padding.
        """
        imgs = [self._check_image(im) for im in images]
        if not imgs:
            return []
        size = self.info.imgsz
        if imgsz is not None:
            if int(imgsz) < self.info.stride or int(imgsz) % self.info.stride:
                raise InputError(f"imgsz must be a positive multiple of {self.info.stride}, "
                                 f"got {imgsz!r}")
            if self.info.dynamic_hw or not hasattr(self, "runtime"):
                size = (int(imgsz), int(imgsz))
        if not hasattr(self, "runtime"):
            return self._detect_ultralytics(imgs, size)
        return self._detect_onnx(imgs, size)

    @staticmethod
    def _check_image(image: np.ndarray) -> np.ndarray:
        a = np.asarray(image)
        if a.ndim != 3 or a.shape[2] != 3 or a.size == 0 or a.dtype != np.uint8:
            raise InputError(f"image must be uint8 (H, W, 3) BGR, got dtype {a.dtype} "
                             f"shape {a.shape}")
        return a

    def _detect_onnx(self, imgs: list[np.ndarray], size: tuple[int, int]) -> list[Detections]:
        info = self.info
        auto = info.dynamic_hw
        prepped = [letterbox(im, size, auto=auto, stride=info.stride) for im in imgs]
        results: list[Detections] = []
        i = 0
        # a graph running an ultralytics embedded NMS answers only the first image of a batch
        # (vision.recognition.obb_nms.batches_right): one image per call there
        most = self.max_batch if batches_right(self.runtime) else 1
        while i < len(prepped):
            if info.batch is None:
                shape = prepped[i][0].shape
                j = i
                while j < len(prepped) and j - i < most and \
                        prepped[j][0].shape == shape:
                    j += 1
                chunk, pad_to = prepped[i:j], j - i
            else:
                chunk, pad_to = prepped[i:i + info.batch], info.batch
                j = i + len(chunk)
            blob = _to_blob([c[0] for c in chunk])
            if len(chunk) < pad_to:
                blob = np.concatenate([blob, np.zeros((pad_to - len(chunk),) + blob.shape[1:],
                                                      np.float32)])
            out = self.runtime.infer(blob)[0]
            for k, (_, lb) in enumerate(chunk):
                results.append(self._postprocess(out[k], lb, imgs[i + k].shape[:2]))
            i = j
        return results

    def _postprocess(self, out: np.ndarray, lb: LetterboxInfo,
                     shape: tuple[int, int]) -> Detections:
        nc = len(self.info.names) or 2
        boxes, scores, cls = _parse_output(out, self.info.task, nc, self.conf, self.iou,
                                     self.max_det, self.info.nms, self.agnostic)
        gid = self._global_ids(cls)
        h, w = shape
        if self.info.task == "obb":
            poly = obb_to_polygons(boxes).astype(np.float64) if len(boxes) else \
                np.zeros((0, 4, 2))
            poly[..., 0] = (poly[..., 0] - lb.pad_x) / lb.gain_x
            poly[..., 1] = (poly[..., 1] - lb.pad_y) / lb.gain_y
            return self._from_polygons(poly, scores, gid)
        xyxy = boxes.astype(np.float64).copy()
        xyxy[:, [0, 2]] = ((xyxy[:, [0, 2]] - lb.pad_x) / lb.gain_x).clip(0, w)
        xyxy[:, [1, 3]] = ((xyxy[:, [1, 3]] - lb.pad_y) / lb.gain_y).clip(0, h)
        return Detections(xyxy, scores, gid)

    def _global_ids(self, cls: np.ndarray) -> np.ndarray:
        cls = np.asarray(cls, dtype=np.int64)
        if len(cls) and (cls.min() < 0 or cls.max() >= len(self._class_map)):
            return cls + self.info.class_offset
        return self._class_map[cls]

    @staticmethod
    def _from_polygons(poly: np.ndarray, scores: np.ndarray, gid: np.ndarray) -> Detections:
        if len(poly) == 0:
            return Detections.empty()
        ordered = np.stack([order_polygon(p) for p in poly])
        return Detections.from_polygons(ordered, scores, gid)

    def _detect_ultralytics(self, imgs: list[np.ndarray], size: tuple[int, int]
                            ) -> list[Detections]:
        res = self.model.predict(imgs, imgsz=list(size), conf=self.conf,
                                 iou=self.iou, max_det=self.max_det, device="cpu",
                                 agnostic_nms=self.agnostic,
                                 rect=self.info.dynamic_hw, verbose=False)
        out = []
        for r in res:
            if self.info.task == "obb":
                o = r.obb
                if o is None or len(o) == 0:
                    out.append(Detections.empty())
                    continue
                poly = o.xyxyxyxy.cpu().numpy().astype(np.float64)
                out.append(self._from_polygons(poly, o.conf.cpu().numpy(),
                                               self._global_ids(o.cls.cpu().numpy())))
            else:
                b = r.boxes
                if b is None or len(b) == 0:
                    out.append(Detections.empty())
                    continue
                out.append(Detections(b.xyxy.cpu().numpy(), b.conf.cpu().numpy(),
                                      self._global_ids(b.cls.cpu().numpy())))
        return out

    def __repr__(self) -> str:
        return (f"<{type(self).__name__} {self.info.task} {self.info.path} "
                f"backend={self.backend} imgsz={self.info.imgsz}>")


class TileDetector(Detector):
    """The tile model (OBB; classes tile -> 0, tile_back -> 1) on full frames.

    Default model ``models/tiles.onnx``. ``detect(frame)`` returns tile polygons (n, 4, 2) in
    frame pixels, canonical corner order (see :func:`vision.geometry.order_polygon`).
    """

    default_model = DEFAULT_TILE_MODEL
    default_task = None
    default_offset = 0
    role = "tile"


class PipDetector(Detector):
    """The pip model (detect; classes pip_red -> 2, pip_white -> 3) on rectified tile crops.

    Default model ``models/pips.onnx``. Inputs are (CROP_H, CROP_W, 3) = (192, 96, 3) crops
    from :func:`vision.geometry.rectify`; boxes are in crop pixels.

    :meth:`detect_batch` runs all crops of a frame in one ONNX call when the model's batch axis
    is dynamic (export ``dynamic=True``); the usual export has a static batch of 1, and then
    crops are run one after the other (same results, more calls).
    """

    default_model = DEFAULT_PIP_MODEL
    default_task = "detect"
    default_offset = 2
    role = "spot"
    # Spots never overlap and a spot is red or white, never both: suppress across classes, and
    # at a lower IoU than ultralytics' 0.7, which let two boxes stand on one spot in
    # ../shared/realdata (duplicates over-count a half). Export the pip model without embedded
    # NMS so these settings apply.
    default_iou = 0.45
    default_agnostic = True
