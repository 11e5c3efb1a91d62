"""The tile model's embedded NMS, run on the candidates instead of inside the graph.

The tile models are ultralytics OBB exports with the NMS in the graph (``export(nms=True)``,
ultralytics ``engine/exporter.py`` ``NMSModel``). For an ONNX OBB export that NMS works on a
fixed list: the ``max_det * 5`` = 1500 best anchors whatever their scores (those at or under
the export ``conf`` get score 0), a 1500 x 1500 probabilistic-IoU matrix, then Fast-NMS. On
this project's 2-core machine that fixed part costs about as much as the whole network on a
small input (OpenVINO per-node counters, 2026-12-02: about 30 ms of a 38 ms call at 160 x 160,
21-31 ms of 90 ms at 384 x 640; docs/pit.md).

:func:`head_graph` cuts an OpenVINO model at the network's output (before the NMS wrapper) and
:func:`embedded_nms` computes the wrapper's result from it on the anchors above the export
``conf`` only. The result is the same array, row for row (tests/test_obb_nms.py compares both
on rendered tables at every input size the engine uses):

* Fast-NMS (Bolya et al., YOLACT, arXiv:1904.02689) keeps a box unless a box ranked above it
  overlaps it by more than ``iou``; a box ranked above a box with score > ``conf`` has a
  score > ``conf`` too, so dropping the anchors at or under ``conf`` (score 0 in the graph)
  changes nothing for the others; the zero-score rows they add to the graph's output are
  below every consumer's threshold and come out as the graph's padding (all zeros) here.
* the probabilistic IoU is ultralytics' ``batch_probiou`` (Llerena et al., arXiv:2106.06072)
  on the same normalised boxes (``8 * xywh / max(H, W)`` of the input), in float32.

Why our own code and not ``ultralytics.utils.nms``: that function needs torch in the table
process (about a second more at every start, and the memory of torch in every table worker),
and its ``non_max_suppression`` for rotated boxes is a different NMS than the exported graph's
(it would change reads). This is the exported graph's arithmetic, nothing new.

The whole graph also answers a batch wrongly: ``NMSModel`` unrolls its per-image loop for the
export's batch (1), so images after the first of a batch come back with no box at all (measured:
a batch of two tables, the second got 0 rows against 32 alone). :func:`batches_right` says
whether a backend's graph may be fed a batch; the split graph always may.

Public API: :func:`head_graph`, :func:`onnx_head`, :func:`embedded_nms`, :func:`nms_settings`,
:func:`batches_right`, :class:`NmsSettings`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["NmsSettings", "nms_settings", "head_graph", "onnx_head", "embedded_nms",
           "batches_right"]

#: ultralytics ``NMSModel``: the normalised box side for an OBB (``multiplier = 8``)
_OBB_SCALE = np.float32(8.0)
_EPS = np.float32(1e-7)


@dataclass(frozen=True)
class NmsSettings:
    """The export arguments baked into an OBB graph's NMS (``models/<name>.json``, ``export``).

    Attributes:
        conf: score threshold (fraction): anchors at or under it are never kept.
        iou: probabilistic-IoU threshold (fraction).
        max_det: rows of the output per image.
    """

    conf: float
    iou: float
    max_det: int


def nms_settings(path: Path, metadata: dict[str, str]) -> NmsSettings | None:
    """The NMS settings of an ONNX OBB export with embedded class-agnostic NMS, or None where
    the graph is anything else (then it runs whole).

    Args:
        path: the ``.onnx`` file; its ``.json`` description holds ``export`` (written by
            :mod:`vision.synth.train`).
        metadata: the ONNX metadata (``task``, ``args``).
    """
    if str(metadata.get("task")) != "obb" or not _embedded(metadata):
        return None
    try:
        export = json.loads(Path(path).with_suffix(".json").read_text()).get("export") or {}
    except (OSError, ValueError, AttributeError):
        return None
    if not (export.get("nms") and export.get("agnostic_nms")):
        return None  # class-wise NMS offsets boxes per class: not reproduced here
    try:
        return NmsSettings(float(export["conf"]), float(export["iou"]), int(export["max_det"]))
    except (KeyError, TypeError, ValueError):
        return None


def _embedded(metadata) -> bool:
    """The ONNX metadata of an ultralytics export says its NMS is in the graph."""
    return "'nms': True" in str(dict(metadata or {}).get("args", ""))


def batches_right(backend) -> bool:
    """Whether a :class:`vision.recognition.backends.DetectorBackend` gives each image of a
    batch its own outputs: False for a graph that runs an ultralytics embedded NMS itself
    (module docstring), True otherwise (the NMS run here, or none in the graph)."""
    return getattr(backend, "nms", None) is not None \
        or not _embedded(getattr(backend, "metadata", None))


def onnx_head(model) -> str | None:
    """:func:`head_graph` for an ``onnx.ModelProto``: the name of the OBB head's output tensor
    (the NMS wrapper's input), or None where the graph does not have the wrapper's shape."""
    produced = {o: n for n in model.graph.node for o in n.output}
    for node in model.graph.node:
        if node.op_type != "Transpose" or node.name.startswith("/model/"):
            continue
        src = produced.get(node.input[0])
        return node.input[0] if src is not None and src.name.startswith("/model/") else None
    return None


def head_graph(model, n_out: int):
    """The part of an ultralytics NMS export that is the network: an ``openvino.Model`` whose
    one output is the OBB head's ``(batch, 4 + nc + 1, anchors)`` float32 tensor -- rows
    ``cx, cy, w, h`` (input px), the class scores, the angle (rad) -- or None where the graph
    does not have the wrapper's shape (then it runs whole).

    Args:
        model: the ``openvino.Model`` read from the ONNX file.
        n_out: the head's rows, ``4 + number of classes + 1``.
    """
    import openvino as ov

    for op in model.get_ordered_ops():
        # NMSModel's first step is pred.transpose(-1, -2) on the wrapped model's output; the
        # wrapped model's nodes are named /model/..., the wrapper's are not
        if op.get_type_name() != "Transpose" or op.get_friendly_name().startswith("/model/"):
            continue
        src = op.input_value(0)
        shape = src.get_partial_shape()
        if not src.get_node().get_friendly_name().startswith("/model/") or shape.rank.is_dynamic \
                or shape.rank.get_length() != 3 or not shape[1].is_static \
                or shape[1].get_length() != n_out:
            return None
        return ov.Model([src], model.get_parameters(), "tile_head")
    return None


def _covariance(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """ultralytics ``_get_covariance_matrix``: (n, 5) xywhr -> three (n, 1) arrays."""
    a, c = b[:, 2:3] ** 2 / np.float32(12), b[:, 3:4] ** 2 / np.float32(12)
    r = b[:, 4:5]
    cos, sin = np.cos(r), np.sin(r)
    cos2, sin2 = cos ** 2, sin ** 2
    return a * cos2 + c * sin2, a * sin2 + c * cos2, (a - c) * cos * sin


def _probiou(obb: np.ndarray) -> np.ndarray:
    """ultralytics ``batch_probiou(obb, obb)``: (n, 5) float32 xywhr -> (n, n) float32."""
    x1, y1 = obb[:, 0:1], obb[:, 1:2]
    x2, y2 = obb[:, 0][None], obb[:, 1][None]
    a1, b1, c1 = _covariance(obb)
    a2, b2, c2 = (v[:, 0][None] for v in (a1, b1, c1))
    den = (a1 + a2) * (b1 + b2) - (c1 + c2) ** 2
    t1 = (((a1 + a2) * (y1 - y2) ** 2 + (b1 + b2) * (x1 - x2) ** 2) / (den + _EPS)) * np.float32(0.25)
    t2 = (((c1 + c2) * (x2 - x1) * (y1 - y2)) / (den + _EPS)) * np.float32(0.5)
    t3 = np.log(den / (np.float32(4) * np.sqrt(np.clip(a1 * b1 - c1 ** 2, 0, None)
                                               * np.clip(a2 * b2 - c2 ** 2, 0, None)) + _EPS)
                + _EPS) * np.float32(0.5)
    bd = np.clip(t1 + t2 + t3, _EPS, np.float32(100.0))
    return np.float32(1) - np.sqrt(np.float32(1) - np.exp(-bd) + _EPS)


def embedded_nms(head: np.ndarray, input_hw: tuple[int, int], settings: NmsSettings
                 ) -> np.ndarray:
    """What the export's embedded NMS outputs for the head's output (module docstring).

    Args:
        head: float32 ``(batch, 4 + nc + 1, anchors)``, :func:`head_graph`'s output.
        input_hw: the input blob's (height, width) in px (the boxes' normalisation).
        settings: :func:`nms_settings`.

    Returns:
        float32 ``(batch, max_det, 7)``: rows ``cx, cy, w, h, confidence, class_id, angle``
        (input px, rad), best first, then zero rows -- the graph's output layout.
    """
    head = np.asarray(head, np.float32)
    batch, rows, _ = head.shape
    out = np.zeros((batch, settings.max_det, 7), np.float32)
    side = np.float32(max(input_hw))
    for i in range(batch):
        p = head[i].T  # (anchors, 4 + nc + 1)
        scores_all = p[:, 4:rows - 1]
        score = scores_all.max(1)
        cand = np.flatnonzero(score > np.float32(settings.conf))
        if not len(cand):
            continue
        # torch.argsort(descending=True) order; scores tie only by exact float equality
        cand = cand[np.argsort(-score[cand], kind="stable")]
        box, angle = p[cand, :4], p[cand, rows - 1:]
        # the graph's order of operations: 8 * (box / side)
        iou = np.triu(_probiou(np.concatenate([_OBB_SCALE * (box / side), angle], 1)), 1)
        keep = cand[np.flatnonzero((iou > np.float32(settings.iou)).sum(0) <= 0)]
        keep = keep[:settings.max_det]
        out[i, :len(keep)] = np.concatenate(
            [p[keep, :4], score[keep, None], scores_all[keep].argmax(1)[:, None].astype(np.float32),
             p[keep, rows - 1:]], 1)
    return out
