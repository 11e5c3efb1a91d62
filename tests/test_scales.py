"""Fusing reads made at several tile-model input sizes (vision.recognition.scales)."""

from __future__ import annotations

import numpy as np
import pytest

from vision.recognition.decode import TileRead
from vision.geometry import polygon_iou_matrix
from vision.recognition.scales import fuse_scale_reads


def _read(face, x, y, w=40, h=80, state=None, conf=0.9):
    poly = np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], np.float32)
    st = state or ("face_up" if face else "unknown")
    return TileRead(face, st, conf, poly, np.array([x, y, x + w, y + h], np.float32),
                    reason=None if face else "read A: no face has 3 red and 0 white spots")


def test_polygon_iou_matrix_exact_values():
    a = np.array([[[0, 0], [10, 0], [10, 10], [0, 10]]], np.float32)
    b = np.array([[[5, 0], [15, 0], [15, 10], [5, 10]], [[20, 20], [30, 20], [30, 30], [20, 30]]],
                 np.float32)
    iou = polygon_iou_matrix(a, b)
    assert iou.shape == (1, 2)
    assert iou[0, 0] == pytest.approx(50 / 150)
    assert iou[0, 1] == 0.0


def test_a_face_read_at_one_size_and_unknown_at_another_is_identified():
    fused = fuse_scale_reads([[_read(None, 100, 100)], [_read("1-5", 102, 101, conf=0.7)]])
    assert [r.face for r in fused] == ["1-5"]


def test_two_sizes_naming_different_faces_make_the_tile_unknown():
    fused = fuse_scale_reads([[_read("1-5", 100, 100)], [_read("3-5", 101, 100)]])
    assert len(fused) == 1
    assert fused[0].face is None and fused[0].state == "unknown"
    assert fused[0].reason == "input sizes disagree: 1-5 / 3-5"
    from vision.schema import UnreadReason

    assert fused[0].reason_code is UnreadReason.SIZES_DISAGREE  # what later stages act on


def test_agreeing_sizes_keep_the_most_confident_read_and_separate_tiles_stay_apart():
    fused = fuse_scale_reads([[_read("6-6", 0, 0, conf=0.6), _read("2-2", 200, 0)],
                              [_read("6-6", 1, 1, conf=0.8)]])
    assert sorted(r.face for r in fused) == ["2-2", "6-6"]
    six = next(r for r in fused if r.face == "6-6")
    assert six.confidence == pytest.approx(0.8)


def test_a_box_across_two_touching_tiles_is_dropped():
    # two tiles side by side (40 x 80 each, touching), seen at one size; at another size a
    # crosswise box over their top halves names a face
    left, right = _read(None, 100, 100), _read(None, 140, 100)
    across = _read("5-6", 100, 100, w=80, h=40)
    fused = fuse_scale_reads([[left, right], [across]])
    assert all(r.face != "5-6" for r in fused)
    assert len(fused) == 2


def test_tile_backs_stay_face_down():
    back = _read(None, 0, 0, state="face_down")
    fused = fuse_scale_reads([[back], [_read(None, 0, 0, state="face_down")]])
    assert [r.state for r in fused] == ["face_down"]


SCENES = __import__("pathlib").Path(__file__).resolve().parents[1].parent / "shared" / "scenes"


@pytest.mark.skipif(not (SCENES / "scene_14.jpg").is_file(), reason="needs ../shared/scenes")
def test_video_faces_are_vetted_by_the_fused_still_reading():
    """scene_14: read once at 640 (the video path), a 5-5 touching a neighbour is read 5-6 (its
    outline reaches onto the neighbour's spot); the fused reading at every size contradicts it,
    so in video it is unknown, never 5-6 -- and the read at the model's size alone is 5-6."""
    import json

    import cv2

    from vision.pipeline import Pipeline

    rec = next(json.loads(line) for line in (SCENES / "truth.jsonl").read_text().splitlines()
               if json.loads(line)["image"] == "scene_14.jpg")
    five = next(t for s in rec["seats"] for t in s["tiles"] if t["face"] == "5-5")
    box = np.array(five["polygon"], np.float32)
    img = cv2.imread(str(SCENES / "scene_14.jpg"))

    def at_the_tile(reads):
        p = np.array(box)[None]
        return [r for r in reads if polygon_iou_matrix(r.polygon[None], p)[0, 0] >= 0.5]

    one = Pipeline(n_stable=1, draw=False, scales=())
    one_pass = at_the_tile(one.engine.decode(img, one.engine.detect(img), use_cache=False)[0])
    video = Pipeline(n_stable=3, draw=False, decode_budget=64)
    for _ in range(6):  # the vet runs after VET_AFTER_STILL frames without motion
        _, res = video.process(img)
    vetted = at_the_tile(res.reads)
    assert vetted and all(r.face in (None, "5-5") for r in vetted)
    # the still picture is read as a still image: the frame's reads are that reading
    still = list(Pipeline(n_stable=1, draw=False).engine.read(img, "still"))
    assert [(r.face, r.state) for r in res.reads] == [(r.face, r.state) for r in still]
    if any(r.face == "5-6" for r in one_pass):  # the wrong read the vet is for
        assert any(f == "5-6" for _, f, _ in video._vetoed)
    # the picture moves (a frame of another table), then comes back: the vetoed face stays
    # unknown in the moving frames, before the picture is still again
    video.process(np.ascontiguousarray(img[::-1]))
    _, res = video.process(img)
    assert all(r.face in (None, "5-5") for r in at_the_tile(res.reads))
