"""Tests for vision.recognition.detect.

Fast part: the letterbox equals ultralytics' LetterBox pixel for pixel; hand-built ONNX models
that output a constant tensor check decoding (raw and embedded-NMS layouts, detect and OBB),
NMS, class-id mapping and the mapping back to input pixels with exact values.
Slow part (``@pytest.mark.slow``, ~1 min): two tiny models trained for one epoch from the
ultralytics YAMLs, exported to ONNX with and without embedded NMS; the ONNX and ultralytics
backends must agree on the same images.
"""

from __future__ import annotations

import json
import os
import shutil

import cv2
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from scoring.errors import InputError
from vision.recognition.detect import Detector, PipDetector, TileDetector, letterbox
from vision.geometry import CROP_H, CROP_W, obb_to_polygon, order_polygon

os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_AUTOINSTALL", "false")
os.environ.setdefault("YOLO_CONFIG_DIR", str(__import__("pathlib").Path(__file__)
                                              .resolve().parents[1] / ".yolo_config"))

pytestmark = pytest.mark.timeout(300)


# ----------------------------------------------------------------------------- letterbox

@pytest.mark.parametrize("shape,new,auto", [((1080, 1920), (640, 640), False),
                                            ((1080, 1920), (640, 640), True),
                                            ((CROP_H, CROP_W), (192, 192), False),
                                            ((CROP_H, CROP_W), (192, 192), True),
                                            ((55, 103), (640, 640), False),
                                            ((96, 80), (64, 64), False),
                                            ((301, 47), (64, 64), True)])
def test_letterbox_equals_ultralytics(shape, new, auto):
    from ultralytics.data.augment import LetterBox

    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, shape + (3,), dtype=np.uint8)
    ours, info = letterbox(img, new, auto=auto, stride=32)
    ref = LetterBox(new, auto=auto, stride=32)(image=img)
    assert ours.shape == ref.shape
    np.testing.assert_array_equal(ours, ref)
    assert info.shape == ours.shape[:2]


def test_letterbox_numbers():
    img = np.zeros((128, 64, 3), np.uint8)
    out, info = letterbox(img, (64, 64))
    assert out.shape == (64, 64, 3)
    assert (info.gain_x, info.gain_y, info.pad_x, info.pad_y) == (0.5, 0.5, 16, 0)
    assert (out[:, :16] == 114).all() and (out[:, 48:] == 114).all() and (out[:, 16:48] == 0).all()


# ----------------------------------------------------------------------------- constant models

def _const_model(path, output: np.ndarray, *, task: str, names: dict, imgsz=64, nms=False,
                 batch=1):
    """An ONNX model whose output0 is ``output`` (whatever the input), with ultralytics-style
    metadata."""
    inp = helper.make_tensor_value_info("images", TensorProto.FLOAT, [batch, 3, imgsz, imgsz])
    out = helper.make_tensor_value_info("output0", TensorProto.FLOAT, list(output.shape))
    const = helper.make_node("Constant", [], ["c"], value=helper.make_tensor(
        "cv", TensorProto.FLOAT, output.shape, output.astype(np.float32).ravel().tolist()))
    mean = helper.make_node("ReduceMean", ["images"], ["m"], keepdims=0)
    zero = helper.make_node("Constant", [], ["z"], value=helper.make_tensor(
        "zv", TensorProto.FLOAT, [], [0.0]))
    mul = helper.make_node("Mul", ["m", "z"], ["mz"])
    add = helper.make_node("Add", ["c", "mz"], ["output0"])
    graph = helper.make_graph([const, mean, zero, mul, add], "g", [inp], [out])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    helper.set_model_props(model, {
        "task": task, "names": repr(names), "imgsz": repr([imgsz, imgsz]), "stride": "32",
        "batch": str(batch), "args": repr({"nms": nms, "batch": batch}), "end2end": "False"})
    onnx.save(model, str(path))
    return path


def _raw_detect(rows):
    """rows of (cx, cy, w, h, score0, score1) -> (1, 6, N) raw output."""
    return np.asarray(rows, np.float32).T[None]


def test_raw_detect_decoding_nms_and_mapping(tmp_path):
    # letterbox of a 128 x 64 (h x w) image into 64 x 64: gain 0.5, pad_x 16
    rows = [
        (32, 32, 8, 16, 0.9, 0.1),    # kept: class 0 -> global 2 (pip_red)
        (32, 33, 8, 16, 0.8, 0.1),    # same class, IoU ~0.88 > 0.7: suppressed
        (32, 33, 8, 16, 0.1, 0.85),   # other class: kept (class-wise NMS) -> global 3
        (20, 50, 4, 4, 0.2, 0.1),     # below conf 0.25: dropped
        (48, 10, 6, 6, 0.05, 0.3),    # kept, class 1
    ]
    model = _const_model(tmp_path / "pips.onnx", _raw_detect(rows), task="detect",
                         names={0: "pip_red", 1: "pip_white"})
    det = PipDetector(model, agnostic=False, iou=0.7)
    assert det.task == "detect" and det.info.imgsz == (64, 64) and det.info.nms is False
    d = det.detect(np.zeros((128, 64, 3), np.uint8))
    assert len(d) == 3
    np.testing.assert_allclose(d.confidence, [0.9, 0.85, 0.3], atol=1e-6)
    np.testing.assert_array_equal(d.class_id, [2, 3, 3])
    # box 0: x (28-16)/0.5 = 24 .. (36-16)/0.5 = 40; y 24/0.5 = 48 .. 40/0.5 = 80
    np.testing.assert_allclose(d.xyxy[0], [24, 48, 40, 80], atol=1e-4)
    # box 2: x (45-16)*2 = 58 .. (51-16)*2 = 70 clipped to the image width 64
    np.testing.assert_allclose(d.xyxy[2], [58, 14, 64, 26], atol=1e-4)
    np.testing.assert_allclose(d.polygon[0], [[24, 48], [40, 48], [40, 80], [24, 80]], atol=1e-4)


def test_pip_detector_defaults_suppress_across_classes(tmp_path):
    """A spot is red or white, never both: by default the pip detector's NMS is class-agnostic
    (IoU 0.45), so the second-class box on the same spot (row 3) goes too."""
    rows = [
        (32, 32, 8, 16, 0.9, 0.1),
        (32, 33, 8, 16, 0.1, 0.85),   # same spot, other class: suppressed when agnostic
        (32, 36, 8, 16, 0.6, 0.1),    # IoU 12/20 = 0.6 with box 0 > 0.45: suppressed
        (48, 10, 6, 6, 0.05, 0.3),    # elsewhere: kept
    ]
    model = _const_model(tmp_path / "pips.onnx", _raw_detect(rows), task="detect",
                         names={0: "pip_red", 1: "pip_white"})
    d = PipDetector(model).detect(np.zeros((128, 64, 3), np.uint8))
    np.testing.assert_allclose(d.confidence, [0.9, 0.3], atol=1e-6)
    np.testing.assert_array_equal(d.class_id, [2, 3])


def test_class_ids_by_offset_when_names_are_not_the_projects(tmp_path):
    rows = [(32, 32, 8, 16, 0.1, 0.9)]
    model = _const_model(tmp_path / "m.onnx", _raw_detect(rows), task="detect",
                         names={0: "a", 1: "b"})
    assert PipDetector(model).detect(np.zeros((64, 64, 3), np.uint8)).class_id.tolist() == [3]
    assert Detector(model).detect(np.zeros((64, 64, 3), np.uint8)).class_id.tolist() == [1]
    # a JSON beside the model overrides the metadata
    (tmp_path / "m.json").write_text(json.dumps({"names": {"0": "tile", "1": "tile_back"}}))
    d = Detector(model).detect(np.zeros((64, 64, 3), np.uint8))
    assert d.class_id.tolist() == [1]
    # ... and a model described as the tile model is refused as the spot model
    with pytest.raises(InputError, match=r"m\.json is a tile model .*not a spot model"):
        PipDetector(model)


def test_embedded_nms_detect_layout(tmp_path):
    out = np.zeros((1, 300, 6), np.float32)
    out[0, 0] = (10, 20, 30, 40, 0.95, 1)
    out[0, 1] = (0, 0, 8, 8, 0.5, 0)
    out[0, 2] = (0, 0, 8, 8, 0.1, 0)  # below conf
    model = _const_model(tmp_path / "pips.onnx", out, task="detect", nms=True,
                         names={0: "pip_red", 1: "pip_white"})
    det = PipDetector(model)
    assert det.info.nms is True
    d = det.detect(np.zeros((64, 128, 3), np.uint8))    # gain 0.5, pad_y 16
    assert len(d) == 2
    np.testing.assert_array_equal(d.class_id, [3, 2])
    np.testing.assert_allclose(d.xyxy[0], [20, 8, 60, 48], atol=1e-4)
    np.testing.assert_allclose(d.xyxy[1], [0, 0, 16, 0], atol=1e-4)   # clipped to the image


def _raw_obb(rows):
    """rows of (cx, cy, w, h, s0, s1, angle) -> (1, 7, N)."""
    return np.asarray(rows, np.float32).T[None]


def test_raw_obb_decoding_and_polygons(tmp_path):
    rows = [
        (32, 32, 10, 20, 0.9, 0.0, 0.3),    # tile
        (32, 32, 10, 20, 0.8, 0.0, 0.32),   # near duplicate: suppressed by rotated NMS
        (10, 50, 6, 12, 0.0, 0.7, -0.5),    # tile_back
    ]
    model = _const_model(tmp_path / "tiles.onnx", _raw_obb(rows), task="obb",
                         names={0: "tile", 1: "tile_back"})
    det = TileDetector(model)
    assert det.task == "obb"
    img = np.zeros((320, 640, 3), np.uint8)   # into 64: gain 0.1, pad_y 16
    d = det.detect(img)
    assert len(d) == 2
    np.testing.assert_array_equal(d.class_id, [0, 1])
    expect = obb_to_polygon(32, 32, 10, 20, 0.3).astype(np.float64)
    expect[:, 1] -= 16
    expect /= 0.1
    expect = order_polygon(expect)
    np.testing.assert_allclose(d.polygon[0], expect, atol=1e-3)
    # canonical order: 0 -> 1 is a short side (10 px * 10), 1 -> 2 long (20 px * 10)
    assert np.linalg.norm(d.polygon[0][1] - d.polygon[0][0]) == pytest.approx(100, abs=0.01)
    assert np.linalg.norm(d.polygon[0][2] - d.polygon[0][1]) == pytest.approx(200, abs=0.01)
    np.testing.assert_allclose(d.xyxy[0], [d.polygon[0][:, 0].min(), d.polygon[0][:, 1].min(),
                                           d.polygon[0][:, 0].max(), d.polygon[0][:, 1].max()])


def test_embedded_nms_obb_layout(tmp_path):
    out = np.zeros((1, 300, 7), np.float32)
    out[0, 0] = (32, 32, 20, 10, 0.9, 1, 0.0)
    model = _const_model(tmp_path / "tiles.onnx", out, task="obb", nms=True,
                         names={0: "tile", 1: "tile_back"})
    d = TileDetector(model).detect(np.zeros((64, 64, 3), np.uint8))
    assert len(d) == 1 and d.class_id.tolist() == [1]
    # a lying 20 x 10 box: canonical order starts at the left short side's lower end
    np.testing.assert_allclose(d.polygon[0], [[22, 37], [22, 27], [42, 27], [42, 37]], atol=1e-4)


def test_detect_batch_loops_a_static_batch_model(tmp_path):
    rows = [(32, 32, 8, 16, 0.9, 0.1)]
    model = _const_model(tmp_path / "pips.onnx", _raw_detect(rows), task="detect",
                         names={0: "pip_red", 1: "pip_white"})
    det = PipDetector(model)
    crops = [np.full((CROP_H, CROP_W, 3), v, np.uint8) for v in (0, 100, 200)]
    res = det.detect_batch(crops)
    assert len(res) == 3 and all(len(r) == 1 for r in res)
    # a 192 x 96 crop into 64 x 64: gain 1/3, pad_x 16 -> x (28-16)*3 = 36 .. 60
    np.testing.assert_allclose(res[2].xyxy[0], [36, 72, 60, 120], atol=1e-3)
    assert det.detect_batch([]) == []


def test_errors(tmp_path):
    with pytest.raises(InputError, match="nope.onnx"):
        TileDetector(tmp_path / "nope.onnx")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"this is not a protobuf \x00\x01" * 20)
    with pytest.raises(InputError, match="bad.onnx"):
        TileDetector(bad)
    with pytest.raises(InputError, match="nope.pt"):
        TileDetector(tmp_path / "nope.onnx", backend="ultralytics")
    (tmp_path / "bad.pt").write_bytes(b"garbage")
    with pytest.raises(InputError, match="bad.pt"):
        TileDetector(bad, backend="ultralytics")
    with pytest.raises(InputError, match="backend"):
        TileDetector(bad, backend="tensorrt")
    model = _const_model(tmp_path / "pips.onnx", _raw_detect([(1, 1, 1, 1, 0.9, 0)]),
                         task="detect", names={0: "pip_red", 1: "pip_white"})
    with pytest.raises(InputError, match="uint8"):
        PipDetector(model).detect(np.zeros((10, 10), np.uint8))


# ----------------------------------------------------------------------------- trained models

def _make_dataset(root, task, n, size, seed):
    rng = np.random.default_rng(seed)
    d = root / task
    for split, count in (("train", n), ("val", 2)):
        (d / "images" / split).mkdir(parents=True)
        (d / "labels" / split).mkdir(parents=True)
        for i in range(count):
            img = np.full((size, size, 3), 60, np.uint8)
            lines = []
            for k in range(2):
                cx, cy = rng.uniform(size * 0.3, size * 0.7, 2)
                w, h = rng.uniform(0.15, 0.25) * size, rng.uniform(0.3, 0.45) * size
                ang = float(rng.uniform(-1.5, 1.5)) if task == "obb" else 0.0
                poly = obb_to_polygon(cx, cy, w, h, ang)
                cv2.fillConvexPoly(img, poly.round().astype(np.int32),
                                   (240, 240, 240) if k == 0 else (30, 30, 200))
                if task == "obb":
                    lines.append(f"{k} " + " ".join(f"{v / size:.5f}" for v in poly.ravel()))
                else:
                    (x1, y1), (x2, y2) = poly.min(0), poly.max(0)
                    lines.append(f"{k} {(x1 + x2) / 2 / size:.5f} {(y1 + y2) / 2 / size:.5f} "
                                 f"{(x2 - x1) / size:.5f} {(y2 - y1) / size:.5f}")
            cv2.imwrite(str(d / "images" / split / f"{i}.png"), img)
            (d / "labels" / split / f"{i}.txt").write_text("\n".join(lines) + "\n")
    names = "  0: tile\n  1: tile_back\n" if task == "obb" else "  0: pip_red\n  1: pip_white\n"
    y = root / f"{task}.yaml"
    y.write_text(f"path: {d}\ntrain: images/train\nval: images/val\nnames:\n{names}")
    return y


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    """Two tiny models trained 1 epoch (imgsz 64) and exported with and without NMS."""
    from ultralytics import YOLO

    root = tmp_path_factory.mktemp("tiny")
    out = {}
    for task, yaml in (("obb", "yolo11n-obb.yaml"), ("detect", "yolo11n.yaml")):
        data = _make_dataset(root, task, 8, 96, seed=1 if task == "obb" else 2)
        YOLO(yaml).train(data=str(data), epochs=1, imgsz=64, batch=4, workers=0, device="cpu",
                         project=str(root / "runs"), name=task, exist_ok=True, plots=False,
                         val=False, verbose=False, amp=False, seed=0)
        pt = root / "runs" / task / "weights" / "last.pt"
        for nms in (False, True):
            stem = root / f"{task}_nms{int(nms)}"
            f = YOLO(str(pt)).export(format="onnx", imgsz=64, nms=nms, conf=0.0001,
                                     simplify=False, dynamic=False)
            shutil.move(f, stem.with_suffix(".onnx"))
            shutil.copy(pt, stem.with_suffix(".pt"))
            out[(task, nms)] = stem.with_suffix(".onnx")
    out["root"] = root
    return out


def _images(root, task):
    ims = [cv2.imread(str(p)) for p in sorted((root / task / "images" / "val").glob("*.png"))]
    ims.append(ims[0][:, 10:90])    # non-square: letterbox padding
    return ims


def _poly_dist(p, q):
    """Largest corner distance, px, over the cyclic corner orders (near-square boxes of an
    untrained model may start at either short side)."""
    return min(np.abs(np.roll(q, k, 0) - p).max() for k in range(4))


def _match(a, b, tol):
    """Each polygon of a has a polygon of b within tol px, one to one."""
    used = set()
    for p in a.polygon:
        dist = [_poly_dist(p, q) if j not in used else np.inf
                for j, q in enumerate(b.polygon)]
        j = int(np.argmin(dist))
        assert dist[j] <= tol, f"no match within {tol} px: {p.tolist()}"
        used.add(j)


# An untrained model gives near-equal scores to many overlapping boxes; torch and ONNX Runtime
# differ in the last bits, which reorders ties and so what NMS keeps. The backends are therefore
# compared without suppression (iou=1.0: every candidate kept) box for box, and the NMS itself
# is compared with torchvision's on the same candidates (test_nms_matches_torchvision).


@pytest.mark.slow
def test_backends_agree_detect(tiny_models):
    conf = 0.001
    raw = PipDetector(tiny_models[("detect", False)], conf=conf, iou=1.0)
    ul = PipDetector(tiny_models[("detect", False)], backend="ultralytics", conf=conf, iou=1.0)
    emb = PipDetector(tiny_models[("detect", True)], conf=conf)
    ul7 = PipDetector(tiny_models[("detect", False)], backend="ultralytics", conf=conf)
    assert raw.info.nms is False and emb.info.nms is True
    total = 0
    for img in _images(tiny_models["root"], "detect"):
        a, c = raw.detect(img), ul.detect(img)
        assert len(a) == len(c)
        total += len(a)
        np.testing.assert_allclose(np.sort(a.confidence), np.sort(c.confidence), atol=1e-4)
        assert sorted(a.class_id.tolist()) == sorted(c.class_id.tolist())
        assert set(a.class_id.tolist()) <= {2, 3}
        _match(a, c, 2.0)
        # embedded NMS: what it keeps is among the candidates, the best box is found by both
        b, c7 = emb.detect(img), ul7.detect(img)
        assert 1 <= len(b) <= len(a) and len(c7) >= 1
        _match(b, c, 2.0)
        _match(b[:1], c7, 2.0)
    assert total > 0


@pytest.mark.slow
def test_backends_agree_obb(tiny_models):
    conf = 0.001
    raw = TileDetector(tiny_models[("obb", False)], conf=conf, iou=1.0)
    ul = TileDetector(tiny_models[("obb", False)], backend="ultralytics", conf=conf, iou=1.0)
    emb = TileDetector(tiny_models[("obb", True)], conf=conf)
    raw7 = TileDetector(tiny_models[("obb", False)], conf=conf)
    total = 0
    for img in _images(tiny_models["root"], "obb"):
        a, c = raw.detect(img), ul.detect(img)
        assert len(a) == len(c)
        total += len(a)
        np.testing.assert_allclose(np.sort(a.confidence), np.sort(c.confidence), atol=1e-4)
        _match(a, c, 2.0)
        assert set(a.class_id.tolist()) <= {0, 1}
        b, r = emb.detect(img), raw7.detect(img)
        assert 1 <= len(b) <= len(a) and 1 <= len(r) <= len(a)
        _match(b, c, 2.0)
        _match(r, c, 2.0)
        # the best box survives any NMS
        assert _poly_dist(r.polygon[0], a.polygon[0]) < 1e-3
    assert total > 0


def test_nms_matches_torchvision():
    import torch
    import torchvision

    from vision.recognition.detect import _nms_boxes

    rng = np.random.default_rng(5)
    for iou in (0.3, 0.5, 0.7):
        xy = rng.uniform(0, 200, (300, 2))
        wh = rng.uniform(10, 60, (300, 2))
        boxes = np.concatenate([xy, xy + wh], 1).astype(np.float32)
        scores = rng.permutation(300).astype(np.float32) / 300 + 0.001   # distinct
        cls = rng.integers(0, 2, 300)
        ours = _nms_boxes(boxes, scores, cls, iou)
        off = torch.tensor(cls, dtype=torch.float32)[:, None] * 7680
        ref = torchvision.ops.nms(torch.tensor(boxes) + off, torch.tensor(scores), iou).numpy()
        np.testing.assert_array_equal(ours, ref)


def test_rotated_nms_classwise():
    from vision.recognition.detect import _nms_rotated

    boxes = np.array([[50, 50, 20, 40, 0.2], [51, 50, 20, 40, 0.22], [50, 50, 20, 40, 0.2],
                      [150, 50, 20, 40, 1.0]], np.float32)
    scores = np.array([0.9, 0.8, 0.7, 0.6], np.float32)
    cls = np.array([0, 0, 1, 0])
    # 1 overlaps 0 (same class): suppressed; 2 is another class; 3 is far away
    np.testing.assert_array_equal(_nms_rotated(boxes, scores, cls, 0.7), [0, 2, 3])
    np.testing.assert_array_equal(_nms_rotated(boxes, scores, cls, 1.0), [0, 1, 2, 3])
