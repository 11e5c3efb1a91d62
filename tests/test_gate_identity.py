"""The motion gate and the identity cache as plain classes: no model, no pipeline."""

from __future__ import annotations

import numpy as np
import pytest

from scoring.errors import InputError
from vision.config import CacheConfig, GateConfig, PipelineConfig, TableConfig, load_config_file
from vision.recognition.decode import TileRead
from vision.detections import TILE, Detections
from vision.recognition.gate import MotionGate
from vision.recognition.identity import NOT_DECODED_YET, IdentityCache


def _frame(value=100, patch=None):
    img = np.full((216, 384, 3), value, np.uint8)
    if patch is not None:
        y, x, v = patch
        img[y:y + 40, x:x + 40] = v
    return img


def test_gate_reuses_still_frames_and_redetects_on_motion():
    gate = MotionGate(GateConfig(motion_threshold=8, redetect_every=4, motion_detect_every=2))
    still = _frame()
    got = []
    for img in [still, still, still, still, still, _frame(patch=(50, 50, 250)),
                _frame(patch=(50, 90, 250)), _frame(patch=(50, 130, 250))]:
        d = gate.decide(img)
        if d.detect:
            gate.ran()
        got.append((d.detect, d.stale, d.moved))
    assert got == [(True, False, True),                # first frame: no reference
                   (False, False, False), (False, False, False), (False, False, False),
                   (True, False, False),               # redetect_every = 4 frames, still
                   (False, True, True),                # moved, 1 frame after: stale
                   (True, False, True),                # moved, 2 frames after: detect
                   (False, True, True)]


def test_gate_off_detects_every_frame():
    gate = MotionGate(GateConfig(motion_threshold=0))
    assert all(gate.decide(_frame()).detect for _ in range(3))
    assert gate.decide(_frame()).moved  # no motion measured: never taken for a still picture


def _dets(boxes):
    xyxy = np.array(boxes, np.float32)
    poly = np.stack([[[a, b], [c, b], [c, d], [a, d]] for a, b, c, d in xyxy]).astype(np.float32)
    return Detections.from_polygons(poly, [0.9] * len(boxes), [TILE] * len(boxes))


def _read(face, box):
    x1, y1, x2, y2 = box
    poly = np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]], np.float32)
    return TileRead(face, "face_up", 0.95, poly, np.array(box, np.float32))


def test_identity_cache_decodes_new_tiles_once_within_the_budget():
    cache = IdentityCache(CacheConfig(decode_budget=2, reverify_every=100))
    img = _frame()
    boxes = [[10, 10, 40, 70], [60, 10, 90, 70], [110, 10, 140, 70]]
    dets = _dets(boxes)
    reads = [None] * 3
    todo = cache.plan(img, dets, reads)
    assert todo == [0, 1] and reads[2].reason == NOT_DECODED_YET  # the budget: never a guess
    cache.commit(img, dets, {i: _read(f, boxes[i]) for i, f in zip(todo, ("6-6", "1-1"))})
    cache.tick()
    reads = [None] * 3
    todo = cache.plan(img, dets, reads)
    assert todo == [2]  # the waiting tile; the two identities stand
    assert [r.face for r in reads[:2]] == ["6-6", "1-1"]


def test_identity_cache_decodes_a_tile_again_when_it_looks_different():
    cache = IdentityCache(CacheConfig(look_threshold=12))
    boxes = [[10, 10, 40, 70]]
    dets = _dets(boxes)
    img = _frame()
    cache.plan(img, dets, [None])
    cache.commit(img, dets, {0: _read("6-6", boxes[0])})
    cache.tick()
    swapped = _frame(patch=(10, 10, 250))  # another tile in the same place
    assert cache.plan(swapped, dets, [None]) == [0]


def test_config_is_validated_once_and_names_the_value(tmp_path):
    with pytest.raises(InputError, match="decode_budget"):
        CacheConfig(decode_budget=0)
    with pytest.raises(InputError, match="banker 'x'"):
        TableConfig(banker="x")
    with pytest.raises(InputError, match="unknown pipeline setting 'nstable'"):
        PipelineConfig.build(nstable=3)
    cfg = PipelineConfig.build(n_stable=3, motion_threshold=0, banker="2")
    assert (cfg.table.n_stable, cfg.gate.motion_threshold, cfg.table.banker) == (3, 0, "2")
    f = tmp_path / "c.yaml"
    f.write_text("gate:\n  redetect_every: 5\ntable:\n  rules: nj\n")
    assert load_config_file(f) == {"gate": {"redetect_every": 5}, "table": {"rules": "nj"}}
    f.write_text("gate:\n  redetect: 5\n")
    with pytest.raises(InputError, match="gate.redetect"):
        load_config_file(f)


def test_models_folder_from_the_environment(monkeypatch, tmp_path):
    from vision import MODELS_DIR
    from vision.config import RecognitionConfig, default_models_dir

    monkeypatch.delenv("PAIGOW_MODELS", raising=False)
    assert default_models_dir() == MODELS_DIR
    monkeypatch.setenv("PAIGOW_MODELS", str(tmp_path))
    assert RecognitionConfig().models == tmp_path
    assert RecognitionConfig(models_dir=tmp_path / "x").models == tmp_path / "x"
    from vision.recognition.models import load_detectors

    with pytest.raises(InputError, match=str(tmp_path / "tiles.onnx")):
        load_detectors()
