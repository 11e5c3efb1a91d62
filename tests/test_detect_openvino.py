"""Backend ``openvino`` (vision/recognition/detect.py, _OpenVINOSession): the same ONNX models run by
OpenVINO read the same tiles and spots as ONNX Runtime on a rendered 1080p table (held-out
seed). Skipped without the trained models or the openvino package."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scoring.errors import InputError
from vision.recognition.models import load_detectors, model_files

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"
pytestmark = pytest.mark.skipif(
    not ((MODELS / "tiles.onnx").is_file() and (MODELS / "pips.onnx").is_file()),
    reason="models/tiles.onnx or models/pips.onnx absent")


def test_openvino_backend_uses_the_onnx_files():
    assert [p.suffix for p in model_files(MODELS, "openvino")] == [".onnx", ".onnx"]
    with pytest.raises(InputError, match="choose onnx, openvino, openvino-bf16, "):
        model_files(MODELS, "tensorrt")


def test_openvino_reads_what_onnxruntime_reads():
    pytest.importorskip("openvino")
    from vision.synth import render as synth
    from vision.geometry import iou_matrix, rectify

    image = synth.render_table(1_000_931, size=(1920, 1080)).image
    ort_tiles, ort_pips = load_detectors(MODELS, "onnx")
    ov_tiles, ov_pips = load_detectors(MODELS, "openvino")
    a, b = ort_tiles.detect(image), ov_tiles.detect(image)
    assert len(a) >= 8 and len(a) == len(b)
    iou = iou_matrix(a.xyxy, b.xyxy)
    j = iou.argmax(1)
    assert iou[np.arange(len(a)), j].min() > 0.9, iou[np.arange(len(a)), j].min()
    assert (a.class_id == b.class_id[j]).all()
    assert np.abs(a.confidence - b.confidence[j]).max() < 0.02
    crops = [rectify(image, p)[0] for p in a.polygon]
    pa, pb = ort_pips.detect_batch(crops), ov_pips.detect_batch(crops)
    # the spots of every tile: same count and colours (what decides the face)
    assert [sorted(x.class_id.tolist()) for x in pa] == [sorted(x.class_id.tolist()) for x in pb]
