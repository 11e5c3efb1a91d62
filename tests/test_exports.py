"""Pre-annotation exports (vision/exports/): each loaded back with its format's own tool."""

import csv
import json
import logging
import math
import os
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from scoring.errors import InputError
from vision.cli import main
from vision.exports import CLASS_NAMES, export, normalise_results
from vision.exports.yolo import parse_line, read_confidences

os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_AUTOINSTALL", "false")
os.environ.setdefault("YOLO_CONFIG_DIR", str(Path(__file__).resolve().parents[1] / ".yolo_config"))


def _tile(face, state, conf, poly):
    poly = [[float(x), float(y)] for x, y in poly]
    xs, ys = [p[0] for p in poly], [p[1] for p in poly]
    return {"face": face, "state": state, "confidence": conf,
            "xyxy": [min(xs), min(ys), max(xs), max(ys)], "polygon": poly}


@pytest.fixture
def results(tmp_path):
    a, b = tmp_path / "a" / "img.jpg", tmp_path / "b" / "img.png"
    for p, (h, w) in ((a, (120, 200)), (b, (90, 160))):
        p.parent.mkdir()
        cv2.imwrite(str(p), np.full((h, w, 3), 127, np.uint8))
    return [
        {"image": str(a), "width": 200, "height": 120, "tiles": [
            _tile("6-6", "face_up", 0.97, [(10, 10), (40, 10), (40, 70), (10, 70)]),
            _tile("5-1", "face_up", 0.55, [(60, 20), (110, 30), (100, 80), (50, 70)]),
            _tile(None, "face_down", 0.88, [(120, 10), (150, 10), (150, 70), (120, 70)]),
        ]},
        {"image": str(b), "tiles": [  # no width/height: read from the file (160 x 90)
            _tile("2-4", "unknown", 0.31, [(5, 5), (35, 5), (35, 65), (5, 65)]),
            _tile("3-3", "face_up", 0.93, [(80, 10), (110, 10), (110, 70), (80, 70)]),
        ]},
    ]


def test_classes_and_size_from_file(results):
    assert len(CLASS_NAMES) == 23 and CLASS_NAMES[0] == "6-6" and CLASS_NAMES[20] == "1-2"
    assert CLASS_NAMES[21:] == ("tile_back", "unknown")
    res = normalise_results(results)
    assert (res[1]["width"], res[1]["height"]) == (160, 90)
    assert [t["class_name"] for t in res[0]["tiles"]] == ["6-6", "1-5", "tile_back"]
    assert [t["class_name"] for t in res[1]["tiles"]] == ["unknown", "3-3"]
    with pytest.raises(InputError, match="nowhere.jpg"):
        normalise_results([{"image": "nowhere.jpg", "tiles": []}])
    with pytest.raises(InputError, match="7-1"):
        normalise_results([{"image": "x", "width": 9, "height": 9,
                            "tiles": [_tile("7-1", "face_up", 0.5, [(0, 0), (1, 0), (1, 1)])]}])


def _yolo_label(out, image):
    """The label file (relative to ``out``) of the image named ``image`` in images.txt."""
    for line in (out / "images.txt").read_text().splitlines():
        img, name = line.split("\t")
        if name == image:
            return Path(img.replace("images/", "labels/", 1)).with_suffix(".txt").as_posix()
    raise AssertionError(f"{image} not in images.txt")


def test_yolo_obb_lines(results, tmp_path):
    files = export(results, tmp_path / "out", ["yolo"], model_version="m")["yolo"]
    out = tmp_path / "out" / "yolo"
    labels = sorted(p.relative_to(out).as_posix() for p in out.glob("labels/*/*.txt"))
    assert labels == sorted(["labels/train/img.txt", "labels/val/img_1.txt"]) or labels == \
        sorted(["labels/val/img.txt", "labels/train/img_1.txt"])  # one image per split
    lab_a, lab_b = _yolo_label(out, "a/img.jpg"), _yolo_label(out, "b/img.png")
    assert (out / lab_a.replace("labels/", "images/", 1)).with_suffix(".jpg").is_file()
    lines = (out / lab_a).read_text().splitlines()
    parsed = [parse_line(l, "obb") for l in lines]
    assert all(len(l.split()) == 9 for l in lines)  # no confidence column
    assert [p[0] for p in parsed] == [CLASS_NAMES.index("6-6"), CLASS_NAMES.index("1-5"), 21]
    cls, coords = parsed[1]
    assert coords == pytest.approx([60 / 200, 20 / 120, 110 / 200, 30 / 120, 100 / 200,
                                    80 / 120, 50 / 200, 70 / 120], abs=1e-6)
    assert parse_line((out / lab_b).read_text().splitlines()[0])[0] == 22
    conf = read_confidences(out)
    assert conf[(lab_a, 2)] == pytest.approx(0.55) and conf[(lab_b, 1)] == pytest.approx(0.31)
    assert len(conf) == 5
    classes = (out / "classes.txt").read_text().splitlines()
    assert classes == list(CLASS_NAMES)
    data = yaml.safe_load((out / "data.yaml").read_text())
    assert (data["train"], data["val"], data["nc"]) == ("images/train", "images/val", 23)
    assert list(data["names"].values()) == list(CLASS_NAMES) and "download" not in data
    assert "path" not in data  # ultralytics resolves train/val beside data.yaml
    assert any(f.endswith("images.txt") for f in files)


def test_yolo_detect_lines(results, tmp_path):
    export(results, tmp_path / "out", ["yolo"], yolo_task="detect")
    out = tmp_path / "out" / "yolo"
    line = (out / _yolo_label(out, "a/img.jpg")).read_text().splitlines()[1]
    cls, (cx, cy, w, h) = parse_line(line, "detect")
    assert (cx, cy, w, h) == pytest.approx((80 / 200, 50 / 120, 60 / 200, 60 / 120), abs=1e-6)


def test_yolo_split_single_image_and_bad_fraction(results, tmp_path):
    export(results[1:], tmp_path / "one", ["yolo"])  # b/img.png alone: stem img, train
    out = tmp_path / "one" / "yolo"
    data = yaml.safe_load((out / "data.yaml").read_text())
    assert data["val"] == "images/train" and (out / "images/train/img.png").is_file()
    export(results, tmp_path / "one", ["yolo"])  # re-export: stems and splits change
    images = sorted(p.relative_to(out).as_posix() for p in out.glob("images/*/*"))
    labels = sorted(p.relative_to(out).as_posix() for p in out.glob("labels/*/*.txt"))
    assert len(images) == 2 and len(labels) == 2  # no stale copy of the first export
    assert [Path(p).with_suffix("").as_posix().replace("images/", "labels/", 1) + ".txt"
            for p in images] == labels
    with pytest.raises(InputError, match="1.5"):
        export(results, tmp_path / "bad", ["yolo"], val_fraction=1.5)


@pytest.mark.slow
@pytest.mark.parametrize("task,model", [("obb", "yolo11n-obb.yaml"), ("detect", "yolo11n.yaml")])
def test_ultralytics_trains_on_yolo_export(results, tmp_path, capsys, task, model):
    """The export as written is an ultralytics dataset: one epoch trains, no label ignored."""
    pytest.importorskip("ultralytics")
    from ultralytics import YOLO
    from ultralytics.data.utils import load_dataset_cache_file
    from ultralytics.utils import LOGGER

    rfile = tmp_path / "results.json"
    rfile.write_text(json.dumps(results))
    assert main(["export", "--results", str(rfile), "--format", "yolo", "--yolo-task", task,
                 "--out", str(tmp_path / "out"), "--model-version", "m"]) == 0
    data = tmp_path / "out" / "yolo" / "data.yaml"
    seen = []
    handler = logging.Handler()
    handler.emit = lambda rec: seen.append(rec.getMessage())
    LOGGER.addHandler(handler)
    try:
        YOLO(model, task=task).train(
            data=str(data), epochs=1, imgsz=64, batch=2, workers=0, device="cpu", amp=False,
            plots=False, pretrained=False, mosaic=0.0, seed=0, project=str(tmp_path / "runs"),
            name="r", exist_ok=True, verbose=True)
    finally:
        LOGGER.removeHandler(handler)
    log = "\n".join(seen) + capsys.readouterr().err
    assert "ignoring corrupt" not in log and "label missing" not in log.lower(), log
    for split in ("train", "val"):
        cache = load_dataset_cache_file(tmp_path / "out" / "yolo" / "labels" / f"{split}.cache")
        nf, nm, ne, nc, n = cache["results"]
        assert (nm, nc, n) == (0, 0, 1) and nf == 1 and cache["msgs"] == []
        (lab,) = cache["labels"]
        label_file = Path(lab["im_file"].replace(f"{os.sep}images{os.sep}",
                                                 f"{os.sep}labels{os.sep}")).with_suffix(".txt")
        assert len(lab["cls"]) == len(label_file.read_text().splitlines()) > 0  # every line


def test_coco_loads_with_pycocotools(results, tmp_path):
    pytest.importorskip("pycocotools")
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    export(results, tmp_path / "out", ["coco"])
    d = tmp_path / "out" / "coco"
    gt = COCO(str(d / "annotations" / "instances_default.json"))
    assert len(gt.getImgIds()) == 2 and len(gt.getCatIds()) == 23
    assert gt.loadCats(gt.getCatIds(catNms=["tile_back"]))[0]["id"] == 22
    anns = gt.loadAnns(gt.getAnnIds(imgIds=[1]))
    assert [a["category_id"] for a in anns] == [1, CLASS_NAMES.index("1-5") + 1, 22]
    assert anns[1]["area"] == pytest.approx(2600.0)  # shoelace: (-400+5800+3000-3200)/2
    mask = gt.annToMask(anns[0])
    assert mask.shape == (120, 200) and abs(int(mask.sum()) - 30 * 60) < 100
    dt = gt.loadRes(str(d / "results.json"))
    assert len(dt.getAnnIds()) == 5
    ev = COCOeval(gt, dt, "bbox")
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    assert ev.stats[0] == pytest.approx(1.0)  # predictions = pre-annotations: AP 1


def test_cvat_xml_schema(results, tmp_path):
    export(results, tmp_path / "out", ["cvat"])
    root = ET.parse(tmp_path / "out" / "cvat" / "annotations.xml").getroot()
    assert root.tag == "annotations" and root.findtext("version") == "1.1"
    task = root.find("meta/task")
    assert task.findtext("mode") == "annotation" and task.findtext("size") == "2"
    labels = task.findall("labels/label")
    assert [l.findtext("name") for l in labels] == list(CLASS_NAMES)
    attr = labels[0].find("attributes/attribute")
    assert attr.findtext("name") == "score" and attr.findtext("input_type") == "number"
    images = root.findall("image")
    assert [(i.get("id"), i.get("width"), i.get("height")) for i in images] == [
        ("0", "200", "120"), ("1", "160", "90")]
    polys = images[0].findall("polygon")
    assert [p.get("label") for p in polys] == ["6-6", "1-5", "tile_back"]
    pts = [tuple(map(float, xy.split(","))) for xy in polys[1].get("points").split(";")]
    assert pts == [(60, 20), (110, 30), (100, 80), (50, 70)]
    assert polys[1].get("source") == "auto"
    assert float(polys[1].find("attribute[@name='score']").text) == pytest.approx(0.55)
    export(results, tmp_path / "box", ["cvat"], cvat_shape="box")
    box = ET.parse(tmp_path / "box/cvat/annotations.xml").getroot().find("image/box")
    assert [float(box.get(k)) for k in ("xtl", "ytl", "xbr", "ybr")] == [10, 10, 40, 70]



def test_coco_cvat_names_relative_to_image_root(results, tmp_path):
    root = tmp_path  # the images are tmp_path/a/img.jpg and tmp_path/b/img.png
    export(results, tmp_path / "out", ["coco", "cvat"], image_root=root, model_version="m")
    coco = json.loads((tmp_path / "out/coco/annotations/instances_default.json").read_text())
    assert [i["file_name"] for i in coco["images"]] == ["a/img.jpg", "b/img.png"]
    assert all((root / i["file_name"]).is_file() for i in coco["images"])
    cvat = ET.parse(tmp_path / "out/cvat/annotations.xml").getroot()
    assert [i.get("name") for i in cvat.findall("image")] == ["a/img.jpg", "b/img.png"]
    # a deeper root names the images relative to it; an image outside it is refused by name
    with pytest.raises(InputError, match="img.png"):
        export(results, tmp_path / "o2", ["coco"], image_root=root / "a", model_version="m")
    with pytest.raises(InputError, match="nowhere"):
        export(results, tmp_path / "o3", ["coco"], image_root=root / "nowhere", model_version="m")


def test_cvat_loads_with_datumaro(results, tmp_path):
    """datumaro's CVAT importer reads the export as written (no images/ link added by hand):
    every image found by its name, labels, polygons and scores read back."""
    pytest.importorskip("datumaro", reason="datumaro not installed (scripts/setup.sh)")
    from datumaro.components.annotation import AnnotationType
    from datumaro.components.dataset import Dataset

    export(results, tmp_path / "out", ["cvat"], image_root=tmp_path, model_version="m")
    d = tmp_path / "out" / "cvat"
    assert not (d / "images").is_symlink()
    ds = Dataset.import_from(str(d), "cvat")
    labels = ds.categories()[AnnotationType.label]
    assert [c.name for c in labels] == list(CLASS_NAMES)
    items = {it.id: it for it in ds}
    assert set(items) == {"a/img", "b/img"}
    assert items["b/img"].media.size == (90, 160)
    anns = items["a/img"].annotations
    assert [labels[a.label].name for a in anns] == ["6-6", "1-5", "tile_back"]
    assert anns[1].type == AnnotationType.polygon
    assert anns[1].points == pytest.approx([60, 20, 110, 30, 100, 80, 50, 70])
    assert anns[1].attributes["score"] == pytest.approx(0.55)



def test_coco_loads_with_datumaro(results, tmp_path):
    """datumaro's COCO importer reads the export folder as written (annotations/instances_*.json
    and images/): both images with their pixels, categories, polygons."""
    pytest.importorskip("datumaro", reason="datumaro not installed (scripts/setup.sh)")
    from datumaro.components.annotation import AnnotationType
    from datumaro.components.dataset import Dataset

    export(results, tmp_path / "out", ["coco"], image_root=tmp_path, model_version="m")
    d = tmp_path / "out" / "coco"
    ds = Dataset.import_from(str(d), "coco_instances")
    labels = ds.categories()[AnnotationType.label]
    assert [c.name for c in labels] == list(CLASS_NAMES)
    items = {it.id: it for it in ds}
    assert set(items) == {"a/img", "b/img"}
    assert items["b/img"].media.data.shape[:2] == (90, 160)  # the image file itself was found
    polys = [a for a in items["a/img"].annotations if a.type == AnnotationType.polygon]
    by_name = {labels[a.label].name: a.points for a in polys}
    assert sorted(by_name) == sorted(["6-6", "1-5", "tile_back"])
    assert by_name["1-5"] == pytest.approx([60, 20, 110, 30, 100, 80, 50, 70])
    assert Dataset.import_from(str(d), "coco").get("a/img", "default") is not None  # detected


def test_yolo_val_fraction_zero_says_so(results, tmp_path):
    export(results, tmp_path / "z", ["yolo"], val_fraction=0.0)
    text = (tmp_path / "z" / "yolo" / "data.yaml").read_text()
    data = yaml.safe_load(text)
    assert data["val"] == "images/train" and "one image" not in text
    assert "val fraction 0" in text
    assert not list((tmp_path / "z" / "yolo").glob("labels/val/*.txt"))


LS_SCHEMA = {
    "type": "array", "minItems": 1,
    "items": {
        "type": "object", "required": ["data", "predictions"],
        "properties": {
            "data": {"type": "object", "required": ["image"],
                     "properties": {"image": {"type": "string"}}},
            "predictions": {"type": "array", "items": {
                "type": "object", "required": ["model_version", "score", "result"],
                "properties": {
                    "model_version": {"type": "string"},
                    "score": {"type": "number", "minimum": 0, "maximum": 1},
                    "result": {"type": "array", "items": {
                        "type": "object",
                        "required": ["id", "from_name", "to_name", "type", "value",
                                     "original_width", "original_height", "score"],
                        "properties": {
                            "from_name": {"const": "label"}, "to_name": {"const": "image"},
                            "type": {"enum": ["polygonlabels", "rectanglelabels"]},
                            "score": {"type": "number", "minimum": 0, "maximum": 1},
                            "value": {"type": "object", "oneOf": [
                                {"required": ["points", "polygonlabels"], "properties": {
                                    "points": {"type": "array", "minItems": 3, "items": {
                                        "type": "array", "minItems": 2, "maxItems": 2,
                                        "items": {"type": "number", "minimum": 0,
                                                  "maximum": 100}}},
                                    "polygonlabels": {"type": "array", "minItems": 1,
                                                      "items": {"enum": list(CLASS_NAMES)}}}},
                                {"required": ["x", "y", "width", "height", "rotation",
                                              "rectanglelabels"], "properties": {
                                    "rotation": {"type": "number", "minimum": 0,
                                                 "exclusiveMaximum": 360},
                                    "rectanglelabels": {"type": "array", "minItems": 1,
                                                        "items": {"enum": list(CLASS_NAMES)}}}},
                            ]},
                        }}},
                }}},
        }},
}


def test_labelstudio_tasks_schema(results, tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    export(results, tmp_path / "out", ["labelstudio"], model_version="tiles-v1",
           image_url_prefix="/data/local-files/?d=")
    d = tmp_path / "out" / "labelstudio"
    tasks = json.loads((d / "tasks.json").read_text())
    jsonschema.validate(tasks, LS_SCHEMA)
    pred = tasks[0]["predictions"][0]
    assert tasks[0]["data"]["image"] == "/data/local-files/?d=a/img.jpg"  # under the root
    assert pred["model_version"] == "tiles-v1"
    assert pred["score"] == pytest.approx((0.97 + 0.55 + 0.88) / 3, abs=1e-6)
    assert pred["result"][1]["value"]["points"][0] == [30.0, pytest.approx(16.6667, abs=1e-3)]
    assert pred["result"][2]["value"]["polygonlabels"] == ["tile_back"]
    cfg = ET.fromstring((d / "label_config.xml").read_text())
    assert [l.get("value") for l in cfg.find("PolygonLabels")] == list(CLASS_NAMES)
    export(results, tmp_path / "rect", ["labelstudio"], ls_shape="rectangle", model_version="m")
    rect = json.loads((tmp_path / "rect/labelstudio/tasks.json").read_text())
    jsonschema.validate(rect, LS_SCHEMA)
    v = rect[0]["predictions"][0]["result"][0]["value"]
    assert (v["x"], v["y"], v["width"], v["height"]) == pytest.approx((5, 8.3333, 15, 50),
                                                                     abs=1e-3)
    assert v["rotation"] == pytest.approx(0.0, abs=1e-3)


def _ls_corners(v, w, h):
    """The four corners (px) Label Studio draws for a rectanglelabels value: the rectangle at
    (x, y) turned clockwise by ``rotation`` about that corner."""
    x0, y0 = v["x"] * w / 100, v["y"] * h / 100
    rw, rh = v["width"] * w / 100, v["height"] * h / 100
    c, s = math.cos(math.radians(v["rotation"])), math.sin(math.radians(v["rotation"]))
    return [(x0 + dx * c - dy * s, y0 + dx * s + dy * c)
            for dx, dy in ((0, 0), (rw, 0), (rw, rh), (0, rh))]


def test_labelstudio_rectangle_keeps_rotation(results, tmp_path):
    export(results, tmp_path / "rect", ["labelstudio"], ls_shape="rectangle", model_version="m")
    tasks = json.loads((tmp_path / "rect/labelstudio/tasks.json").read_text())
    item = tasks[0]["predictions"][0]["result"][1]  # the 1-5 tile, turned by atan(10/50)
    assert item["type"] == "rectanglelabels" and item["value"]["rectanglelabels"] == ["1-5"]
    assert item["value"]["rotation"] == pytest.approx(math.degrees(math.atan2(10, 50)), abs=0.01)
    corners = _ls_corners(item["value"], 200, 120)
    want = [(60, 20), (110, 30), (100, 80), (50, 70)]
    assert all(min(math.dist(c, q) for c in corners) < 0.1 for q in want), corners
    # every tile's drawn rectangle lands on its polygon's corners
    for r, task in zip(results, tasks):
        w, h = task["predictions"][0]["result"][0]["original_width"], \
            task["predictions"][0]["result"][0]["original_height"]
        for t, it in zip(r["tiles"], task["predictions"][0]["result"]):
            corners = _ls_corners(it["value"], w, h)
            assert all(min(math.dist(c, q) for c in corners) < 0.1 for q in t["polygon"])
            assert 0 <= it["value"]["rotation"] < 360


@pytest.mark.parametrize("shape", ["polygon", "rectangle"])
def test_labelstudio_predictions_pass_sdk_validation(results, tmp_path, shape):
    """label-studio-sdk's own check (LabelInterface.validate_prediction) against our config."""
    sdk = pytest.importorskip("label_studio_sdk.label_interface",
                              reason="label-studio-sdk not installed (scripts/setup.sh)")
    export(results, tmp_path / "ls", ["labelstudio"], ls_shape=shape, model_version="tiles-x")
    d = tmp_path / "ls" / "labelstudio"
    li = sdk.LabelInterface((d / "label_config.xml").read_text())
    tasks = json.loads((d / "tasks.json").read_text())
    assert len(tasks) == 2
    for task in tasks:
        assert task["data"]["image"]  # the object tag's $image variable is filled
        (pred,) = task["predictions"]
        assert li.validate_prediction(pred, return_errors=True) == []
        assert len(pred["result"]) == len(results[tasks.index(task)]["tiles"])
    # the validator is live: a label outside the config is refused
    bad = json.loads(json.dumps(tasks[0]["predictions"][0]))
    bad["result"][0]["value"][f"{shape}labels"] = ["7-7"]
    assert li.validate_prediction(bad, return_errors=True)


def test_review_lowest_confidence_first(results, tmp_path):
    written = export(results, tmp_path / "out", [])
    assert set(written) == {"review"}
    rows = list(csv.DictReader(open(tmp_path / "out/review/review.csv")))
    assert [float(r["confidence"]) for r in rows] == [0.31, 0.55, 0.88, 0.93, 0.97]
    assert rows[0]["class_name"] == "unknown" and rows[0]["image"].endswith("img.png")
    js = json.loads((tmp_path / "out/review/review.json").read_text())
    assert [r["rank"] for r in js] == [1, 2, 3, 4, 5] and js[1]["xyxy"] == [50, 20, 110, 80]


def test_export_cli_from_results_and_identify(results, tmp_path, monkeypatch, capsys):
    rfile = tmp_path / "results.json"
    rfile.write_text(json.dumps(results))
    out = tmp_path / "cli"
    rc = main(["export", "--results", str(rfile), "--format", "yolo,coco", "--format", "cvat",
               "--out", str(out), "--json"])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["tiles"] == 5 and set(summary["files"]) == {"yolo", "coco", "cvat", "review"}
    assert (out / "coco" / "results.json").is_file()
    assert main(["export", "--results", str(rfile), "--format", "voc", "--out",
                 str(out)]) == 2
    assert "voc" in capsys.readouterr().err

    calls = []
    fake = types.ModuleType("vision.recognition.identify")
    fake.identify = lambda paths, **kw: calls.append(list(paths)) or results
    monkeypatch.setitem(sys.modules, "vision.recognition.identify", fake)
    import vision.recognition.models

    monkeypatch.setattr(vision.recognition.models, "model_version",
                        lambda models_dir=None, backend="onnx": "tiles-fake+pips-fake")
    img_dir = Path(results[0]["image"]).parent
    progress = []
    fake.identify = lambda paths, **kw: (calls.append(list(paths)),
                                         progress.append(kw.get("progress"))) and results
    assert main(["export", str(img_dir), "--format", "labelstudio", "--out",
                 str(tmp_path / "id")]) == 0
    assert calls == [[results[0]["image"]]]
    assert main(["export", str(img_dir), "--format", "labelstudio", "--out",
                 str(tmp_path / "id"), "--no-progress"]) == 0
    assert progress == [True, False]
    tasks = json.loads((tmp_path / "id" / "labelstudio" / "tasks.json").read_text())
    assert tasks[0]["predictions"][0]["model_version"] == "tiles-fake+pips-fake"
    assert main(["export", str(tmp_path / "nope.jpg"), "--format", "coco", "--out",
                 str(tmp_path / "x")]) == 2


def test_export_model_version_defaults_to_the_models(results, tmp_path, capsys):
    from vision import MODELS_DIR
    from vision.recognition.models import model_version

    rfile = tmp_path / "results.json"
    rfile.write_text(json.dumps(results))
    assert main(["export", "--results", str(rfile), "--format", "labelstudio,coco",
                 "--out", str(tmp_path / "o"), "--json"]) == 0
    want = model_version(MODELS_DIR)
    assert want.startswith("tiles-") and "+pips-" in want
    assert json.loads(capsys.readouterr().out)["model_version"] == want
    tasks = json.loads((tmp_path / "o/labelstudio/tasks.json").read_text())
    assert {t["predictions"][0]["model_version"] for t in tasks} == {want}
    assert json.loads((tmp_path / "o/coco/annotations/instances_default.json").read_text())[
        "info"]["version"] \
        == want


def test_export_help_on_every_option():
    from vision.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    export_parser = sub.choices["export"]
    for action in export_parser._actions:
        assert action.help and action.help.strip(), action.option_strings or action.dest


@pytest.mark.parametrize("argv,value", [
    (["--format", "coco"], "no images"),                                   # nothing to export
    (["EMPTY", "--format", "coco"], "EMPTY"),                              # a folder of no image
    (["IMG", "--format", "voc"], "'voc'"),                                 # unknown format
    (["IMG", "--format", "coco", "--image-root", "MISSING"], "MISSING"),   # missing root
    (["IMG", "--format", "coco", "--image-root", "OTHER"], "img.jpg"),     # image outside root
    (["IMG", "--format", "yolo", "--yolo-task", "segment"], "segment"),
    (["IMG", "--format", "cvat", "--shape", "circle"], "circle"),
    (["IMG", "--format", "yolo", "--val-fraction", "half"], "half"),
    (["IMG"], "--format"),
])
def test_export_bad_input_one_line_exit_2_json(results, tmp_path, capsys, monkeypatch, argv,
                                               value):
    fake = types.ModuleType("vision.recognition.identify")
    fake.identify = lambda paths, **kw: [dict(results[0], image=p) for p in paths]
    monkeypatch.setitem(sys.modules, "vision.recognition.identify", fake)
    import vision.recognition.models

    monkeypatch.setattr(vision.recognition.models, "model_version", lambda models_dir=None, backend="onnx": "m")
    (tmp_path / "EMPTY").mkdir()
    (tmp_path / "OTHER").mkdir()
    subst = {"IMG": results[0]["image"], "EMPTY": str(tmp_path / "EMPTY"),
             "MISSING": str(tmp_path / "MISSING"), "OTHER": str(tmp_path / "OTHER")}
    argv = ["export", *[subst.get(a, a) for a in argv], "--out", str(tmp_path / "o")]
    value = subst.get(value, value)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and value in err, err
    assert main(argv + ["--json"]) == 2
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert set(doc) == {"error"} and value in doc["error"] and cap.err == ""
