"""Pre-annotation exports (vision/exports/): each loaded back with its format's reader."""

import csv
import json
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import cv2
import numpy as np
import pytest

from scoring.errors import InputError
from vision.cli import main
from vision.exports import CLASS_NAMES, export, normalise_results
from vision.exports.yolo import parse_line, strip_confidence


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


def test_yolo_obb_lines(results, tmp_path):
    files = export(results, tmp_path / "out", ["yolo"])["yolo"]
    lab = tmp_path / "out" / "yolo" / "labels"
    assert sorted(p.name for p in lab.iterdir()) == ["img.txt", "img_1.txt"]
    lines = (lab / "img.txt").read_text().splitlines()
    parsed = [parse_line(l, "obb") for l in lines]
    assert [p[0] for p in parsed] == [CLASS_NAMES.index("6-6"), CLASS_NAMES.index("1-5"), 21]
    cls, coords, conf = parsed[1]
    assert conf == pytest.approx(0.55)
    assert coords == pytest.approx([60 / 200, 20 / 120, 110 / 200, 30 / 120, 100 / 200,
                                    80 / 120, 50 / 200, 70 / 120], abs=1e-6)
    assert parse_line((lab / "img_1.txt").read_text().splitlines()[0])[0] == 22
    classes = (tmp_path / "out" / "yolo" / "classes.txt").read_text().splitlines()
    assert classes == list(CLASS_NAMES)
    assert all(len(l.split()) == 9 for l in strip_confidence("\n".join(lines)).splitlines())
    assert any(f.endswith("images.txt") for f in files)


def test_yolo_detect_lines(results, tmp_path):
    export(results, tmp_path / "out", ["yolo"], yolo_task="detect")
    line = (tmp_path / "out/yolo/labels/img.txt").read_text().splitlines()[1]
    cls, (cx, cy, w, h), conf = parse_line(line, "detect")
    assert (cx, cy, w, h) == pytest.approx((80 / 200, 50 / 120, 60 / 200, 60 / 120), abs=1e-6)


def test_coco_loads_with_pycocotools(results, tmp_path):
    pytest.importorskip("pycocotools")
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    export(results, tmp_path / "out", ["coco"])
    d = tmp_path / "out" / "coco"
    gt = COCO(str(d / "annotations.json"))
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
                                {"required": ["x", "y", "width", "height",
                                              "rectanglelabels"], "properties": {
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
    assert tasks[0]["data"]["image"] == "/data/local-files/?d=" + results[0]["image"]
    assert pred["model_version"] == "tiles-v1"
    assert pred["score"] == pytest.approx((0.97 + 0.55 + 0.88) / 3, abs=1e-6)
    assert pred["result"][1]["value"]["points"][0] == [30.0, pytest.approx(16.6667, abs=1e-3)]
    assert pred["result"][2]["value"]["polygonlabels"] == ["tile_back"]
    cfg = ET.fromstring((d / "label_config.xml").read_text())
    assert [l.get("value") for l in cfg.find("PolygonLabels")] == list(CLASS_NAMES)
    export(results, tmp_path / "rect", ["labelstudio"], ls_shape="rectangle")
    rect = json.loads((tmp_path / "rect/labelstudio/tasks.json").read_text())
    jsonschema.validate(rect, LS_SCHEMA)
    v = rect[0]["predictions"][0]["result"][0]["value"]
    assert (v["x"], v["y"], v["width"], v["height"]) == pytest.approx((5, 8.3333, 15, 50),
                                                                     abs=1e-3)


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
    fake = types.ModuleType("vision.identify")
    fake.identify = lambda paths, **kw: calls.append(list(paths)) or results
    monkeypatch.setitem(sys.modules, "vision.identify", fake)
    img_dir = Path(results[0]["image"]).parent
    assert main(["export", str(img_dir), "--format", "labelstudio", "--out",
                 str(tmp_path / "id")]) == 0
    assert calls == [[results[0]["image"]]]
    assert (tmp_path / "id" / "labelstudio" / "tasks.json").is_file()
    assert main(["export", str(tmp_path / "nope.jpg"), "--format", "coco", "--out",
                 str(tmp_path / "x")]) == 2
