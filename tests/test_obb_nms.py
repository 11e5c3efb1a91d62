"""The tile models' embedded NMS run outside the graph (vision/recognition/obb_nms.py): the
OpenVINO backend that compiles only the network gives the whole graph's output array, row for
row, on rendered tables at every input size the engine feeds the tile models (the frame size,
the still sizes, the second model's, the zoom windows' and the motion gate's region crops),
and the Fast-NMS arithmetic on a worked example."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("openvino")

from vision.recognition.backends import OnnxRuntimeBackend, OpenVINOBackend  # noqa: E402
from vision.recognition.detect import _to_blob, letterbox  # noqa: E402
from vision.recognition.obb_nms import (NmsSettings, batches_right, embedded_nms,  # noqa: E402
                                        nms_settings)
from vision.synth.render import render_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT / "models"


@pytest.fixture(scope="module")
def tables():
    # held-out render seeds (>= 1e6), one of them with flush hands laid level
    return [render_table(1_000_311).image, render_table(1_000_312, style=None).image]


def _blobs(images):
    """Letterboxed blobs at the engine's sizes: 640 (frame), 832, 960, 1216 (still sizes and
    the second model), a 160 and a 416 x 224 crop (region / zoom windows)."""
    out = []
    for img in images:
        for size in (640, 832, 960, 1216):
            out.append(_to_blob([letterbox(img, (size, size), auto=True, stride=32)[0]]))
        out.append(_to_blob([letterbox(img[400:560, 700:860], (160, 160), auto=True,
                                       stride=32)[0]]))
        out.append(_to_blob([letterbox(img[300:524, 500:916], (416, 416), auto=True,
                                       stride=32)[0]]))
    return out


BACKENDS = {"openvino": OpenVINOBackend, "onnx": OnnxRuntimeBackend}


@pytest.mark.parametrize("backend", ["openvino", "onnx"])
@pytest.mark.parametrize("name", ["tiles", "tiles_touch"])
def test_the_network_and_our_nms_give_the_graphs_output_row_for_row(name, backend, tables,
                                                                   monkeypatch, tmp_path):
    monkeypatch.setenv("PAIGOW_MODEL_CACHE", str(tmp_path))
    whole = BACKENDS[backend](MODELS / f"{name}.onnx", split_nms=False)
    split = BACKENDS[backend](MODELS / f"{name}.onnx")
    assert whole.nms is None and split.nms == NmsSettings(0.05, 0.5, 300)
    rows = 0
    for blob in _blobs(tables):
        a, b = whole.infer(blob)[0], split.infer(blob)[0]
        assert a.shape == b.shape == (1, 300, 7)
        # rows the graph keeps with score 0 (anchors at or under conf) are padding here
        real = a[0, :, 4] > 0
        assert np.array_equal(a[0][real], b[0][:real.sum()])
        assert not b[0][real.sum():].any()
        rows += int(real.sum())
    assert rows > 150  # the tables' tiles were found at every size


@pytest.mark.parametrize("backend", ["openvino", "onnx"])
def test_a_batch_of_two_tables_gives_each_its_own_boxes(backend, tables, monkeypatch, tmp_path):
    """The whole graph answers only the first image of a batch (its NMS loop is unrolled for
    batch 1): the second table got no box at all. Split, each image gets what it gets alone;
    batches_right tells the detector and the pit's detector service which is which."""
    monkeypatch.setenv("PAIGOW_MODEL_CACHE", str(tmp_path))
    a, b = (_to_blob([letterbox(t, (640, 640), auto=True, stride=32)[0]]) for t in tables)
    whole = BACKENDS[backend](MODELS / "tiles.onnx", split_nms=False)
    split = BACKENDS[backend](MODELS / "tiles.onnx")
    assert not batches_right(whole) and batches_right(split)
    assert not (whole.infer(np.concatenate([a, b]))[0][1, :, 4] > 0).any()
    both = split.infer(np.concatenate([a, b]))[0]
    assert np.array_equal(both[0], split.infer(a)[0][0])
    assert np.array_equal(both[1], split.infer(b)[0][0])
    assert (both[1, :, 4] > 0.25).sum() >= 28


def test_an_image_with_nothing_on_it_gives_only_padding(monkeypatch, tmp_path):
    monkeypatch.setenv("PAIGOW_MODEL_CACHE", str(tmp_path))
    split = OpenVINOBackend(MODELS / "tiles.onnx")
    out = split.infer(np.full((1, 3, 160, 160), 114 / 255, np.float32))[0]
    assert out.shape == (1, 300, 7) and not out.any()


def test_the_spot_model_runs_whole():
    assert OpenVINOBackend(MODELS / "pips.onnx").nms is None
    assert nms_settings(MODELS / "pips.onnx", {"task": "detect", "args": "{'nms': False}"}) is None


def test_fast_nms_suppresses_by_any_box_ranked_above():
    """Three boxes in a row 12 px apart (40 x 20 px, probabilistic IoU 0.64 with the next, 0.35
    with the one after): Fast-NMS (unlike greedy NMS) drops the third too, because the
    second -- itself dropped -- ranks above it and overlaps it; a fourth far away stays; one
    under conf is never kept."""
    s = NmsSettings(conf=0.05, iou=0.5, max_det=300)
    boxes = [(100, 100, 40, 20, 0.9), (112, 100, 40, 20, 0.8), (124, 100, 40, 20, 0.7),
             (400, 300, 40, 20, 0.6), (600, 300, 40, 20, 0.04)]
    head = np.zeros((1, 7, 6), np.float32)
    for j, (x, y, w, h, sc) in enumerate(boxes):
        head[0, :, j] = (x, y, w, h, sc, sc / 2, 0.1)
    out = embedded_nms(head, (640, 640), s)[0]
    kept = out[out[:, 4] > 0]
    assert kept[:, 0].tolist() == [100, 400]
    assert kept[:, 5].tolist() == [0, 0] and np.allclose(kept[:, 6], 0.1)
    # the third box alone with the first: their overlap is under the threshold, it stays
    two = embedded_nms(head[:, :, [0, 2]], (640, 640), s)[0]
    assert (two[:, 4] > 0).sum() == 2
