"""The CVAT auto-annotation function (vision/exports/cvat_function.py), called as cvat-sdk's
``annotate_task`` calls it: loaded by cvat-cli's function loader, ``detect`` given the SDK's
context and a PIL image, its output checked and remapped by the SDK's own mapper against a
task's labels."""

import json
import logging
from pathlib import Path

import numpy as np
import pytest

cvataa = pytest.importorskip("cvat_sdk.auto_annotation",
                             reason="cvat-sdk not installed (scripts/setup.sh)")
from cvat_sdk import models  # noqa: E402
from cvat_sdk.auto_annotation.driver import (_AnnotationMapper,  # noqa: E402
                                             _DetectionFunctionContextImpl)
from PIL import Image  # noqa: E402

from vision.exports import CLASS_NAMES  # noqa: E402
from vision.exports import cvat_function  # noqa: E402

SCENES = Path(__file__).resolve().parents[2] / "shared" / "scenes"


def _load(params=None):
    """The function as ``cvat-cli task auto-annotate --function-module ... -p ...`` loads it."""
    loader = pytest.importorskip("cvat_cli._internal.common", reason="cvat-cli not installed")
    return loader.FunctionLoader("vision.exports.cvat_function", None, params or {}).load()


def _task_labels(names=CLASS_NAMES, type_="any"):
    """A CVAT task's labels as the server returns them (ids of the server's own)."""
    return [models.Label(id=500 + i, name=n, type=type_, attributes=[], sublabels=[])
            for i, n in enumerate(names)]


def _run(function, image, frame=7, task_labels=None, conf_threshold=None, allow=False):
    """What cvat_sdk.auto_annotation.annotate_task does with one frame."""
    mapper = _AnnotationMapper(logging.getLogger("test"), function.spec.labels,
                               task_labels or _task_labels(), allow_unmatched_labels=allow,
                               conv_mask_to_poly=False)
    ctx = _DetectionFunctionContextImpl(frame_name="f.jpg", conf_threshold=conf_threshold)
    tags, shapes = mapper.validate_and_remap(function.detect(ctx, image), frame)
    assert tags == []
    return shapes


TILES = [{"face": "6-6", "state": "face_up", "confidence": 0.97, "xyxy": [10, 10, 40, 70],
          "polygon": [[10, 10], [40, 10], [40, 70], [10, 70]]},
         {"face": None, "state": "face_down", "confidence": 0.4, "xyxy": [50, 5, 80, 65],
          "polygon": [[50, 5], [80, 5], [80, 65], [50, 65]]},
         {"face": "2-4", "state": "unknown", "confidence": 0.6, "xyxy": [90, 5, 120, 65],
          "polygon": [[90, 5], [120, 5], [120, 65], [90, 65]]}]


@pytest.fixture
def fake_reads(monkeypatch):
    seen = []

    def read_tiles(engine, image_bgr):
        seen.append(image_bgr)
        return [dict(t) for t in TILES]

    monkeypatch.setattr(cvat_function, "read_tiles", read_tiles)
    monkeypatch.setattr(cvat_function.TileFunction, "engine", property(lambda self: "engine"))
    return seen


def test_spec_is_the_export_labels():
    f = _load()
    assert [l.name for l in f.spec.labels] == list(CLASS_NAMES)
    assert [l.id for l in f.spec.labels] == list(range(23))
    assert {l.type for l in f.spec.labels} == {"polygon"}
    assert [l.name for l in cvat_function.spec.labels] == list(CLASS_NAMES)  # module as function


def test_detect_through_the_sdk_mapper(fake_reads):
    f = _load()
    rgb = np.zeros((90, 160, 3), np.uint8)
    rgb[..., 0] = 200  # red in RGB
    shapes = _run(f, Image.fromarray(rgb))
    assert fake_reads[0][0, 0].tolist() == [0, 0, 200]  # the model gets BGR
    assert [(s.type.value, s.frame, s.source) for s in shapes] == [("polygon", 7, "auto")] * 3
    names = [CLASS_NAMES[s.label_id - 500] for s in shapes]
    assert names == ["6-6", "tile_back", "unknown"]
    assert shapes[0].points == [10, 10, 40, 10, 40, 70, 10, 70]
    # --conf-threshold drops the tiles below it
    assert [CLASS_NAMES[s.label_id - 500] for s in _run(f, Image.fromarray(rgb),
                                                         conf_threshold=0.5)] == ["6-6", "unknown"]


def test_rectangle_parameter_and_task_label_types(fake_reads, tmp_path):
    f = _load({"shape": "rectangle"})
    img = Image.new("L", (160, 90))  # a grey picture is converted
    shapes = _run(f, img, task_labels=_task_labels(type_="rectangle"))
    assert [s.type.value for s in shapes] == ["rectangle"] * 3
    assert shapes[1].points == [50, 5, 80, 65]
    # polygons into a task whose labels are rectangles: the SDK refuses the function
    with pytest.raises(cvataa.BadFunctionError, match="type"):
        _run(_load(), img, task_labels=_task_labels(type_="rectangle"))
    # a task without tile_back: refused unless --allow-unmatched-labels, then that shape dropped
    labels = _task_labels([n for n in CLASS_NAMES if n != "tile_back"])
    with pytest.raises(cvataa.BadFunctionError, match="tile_back"):
        _run(f, img, task_labels=labels)
    assert len(_run(f, img, task_labels=labels, allow=True)) == 2
    with pytest.raises(ValueError, match="circle"):
        _load({"shape": "circle"})
    with pytest.raises(ValueError, match="nowhere"):
        _load({"models": str(tmp_path / "nowhere")})


def _iou(p, q):
    import cv2

    a = np.asarray(p, np.float32)
    b = np.asarray(q, np.float32)
    inter, _ = cv2.intersectConvexConvex(a, b)
    return inter / (cv2.contourArea(a) + cv2.contourArea(b) - inter)


@pytest.mark.slow
def test_shared_scene_tiles_with_their_faces():
    """The real models on one shared table scene (../shared/scenes, scene_00): every face-up
    tile of the truth comes back as a polygon of its face, none with a wrong face."""
    truth_file = SCENES / "truth.jsonl"
    if not truth_file.is_file():
        pytest.skip("../shared/scenes not present")
    truth = json.loads(truth_file.read_text().splitlines()[0])
    f = _load()
    shapes = _run(f, Image.open(SCENES / truth["image"]))
    got = [(CLASS_NAMES[s.label_id - 500], np.reshape(s.points, (-1, 2))) for s in shapes]
    want = [(t["face"], t["polygon"]) for seat in truth["seats"] for t in seat["tiles"]]
    assert len(want) == 12
    right = wrong = 0
    for face, poly in want:
        best = max(got, key=lambda g: _iou(poly, g[1]))
        assert _iou(poly, best[1]) >= 0.5, face
        right += best[0] == face
        wrong += best[0] not in (face, "unknown")
    assert (right, wrong) == (12, 0)
