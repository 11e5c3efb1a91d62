"""Corrected labels back into training (vision/exports/imports.py, `paigow import`): each export
format edited as a labeller would, read back, written as the tile model's set, and one epoch of
`paigow train` on it."""

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import cv2
import numpy as np
import pytest
import yaml

from scoring.errors import InputError
from vision.cli import main
from vision.exports import export
from vision.exports.imports import read_labels, write_training_set

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
    """Two pictures under tmp_path/pics: a/one.jpg (3 tiles), b/two.png (2 tiles)."""
    a, b = tmp_path / "pics" / "a" / "one.jpg", tmp_path / "pics" / "b" / "two.png"
    for p, (h, w) in ((a, (120, 200)), (b, (90, 160))):
        p.parent.mkdir(parents=True)
        img = np.full((h, w, 3), (40, 110, 40), np.uint8)
        cv2.rectangle(img, (10, 10), (40, 70), (20, 20, 20), -1)
        cv2.imwrite(str(p), img)
    return [
        {"image": str(a), "width": 200, "height": 120, "tiles": [
            _tile("6-6", "face_up", 0.97, [(10, 10), (40, 10), (40, 70), (10, 70)]),
            _tile("5-1", "face_up", 0.55, [(60, 20), (110, 30), (100, 80), (50, 70)]),
            _tile(None, "face_down", 0.88, [(120, 10), (150, 10), (150, 70), (120, 70)]),
        ]},
        {"image": str(b), "width": 160, "height": 90, "tiles": [
            _tile("2-4", "unknown", 0.31, [(5, 5), (35, 5), (35, 65), (5, 65)]),
            _tile("3-3", "face_up", 0.93, [(80, 10), (110, 10), (110, 70), (80, 70)]),
        ]},
    ]


def _faces(records):
    return {Path(r["image"]).name: [t["class_name"] for t in r["tiles"]] for r in records}


# The one edit a labeller makes in every format: the 1-5 of one.jpg is really a 2-4.
WANT = {"one.jpg": ["6-6", "2-4", "tile_back"], "two.png": ["unknown", "3-3"]}


def _edit_yolo(d):
    from vision.exports.common import CLASS_NAMES

    for lab in d.glob("labels/*/one.txt"):
        lines = lab.read_text().splitlines()
        parts = lines[1].split()
        parts[0] = str(CLASS_NAMES.index("2-4"))
        lines[1] = " ".join(parts)
        lab.write_text("\n".join(lines) + "\n")
    return d


def _edit_coco(d):
    f = d / "annotations" / "instances_default.json"
    doc = json.loads(f.read_text())
    cat = {c["name"]: c["id"] for c in doc["categories"]}
    (ann,) = [a for a in doc["annotations"] if a["category_id"] == cat["1-5"]]
    ann["category_id"] = cat["2-4"]
    f.write_text(json.dumps(doc))
    return d


def _edit_cvat(d):
    f = d / "annotations.xml"
    tree = ET.parse(f)
    (poly,) = [p for p in tree.getroot().iter("polygon") if p.get("label") == "1-5"]
    poly.set("label", "2-4")
    tree.write(f)
    return d


def _edit_labelstudio(d):
    """What Label Studio's JSON export holds after a labeller accepts the predictions and
    corrects one: an annotation per task (the predictions stay beside it)."""
    f = d / "tasks.json"
    tasks = json.loads(f.read_text())
    for task in tasks:
        result = json.loads(json.dumps(task["predictions"][0]["result"]))
        for item in result:
            if item["value"].get("polygonlabels") == ["1-5"]:
                item["value"]["polygonlabels"] = ["2-4"]
        task["annotations"] = [{"id": 1, "was_cancelled": False, "result": result}]
    f.write_text(json.dumps(tasks))
    return f


EDITS = {"yolo": _edit_yolo, "coco": _edit_coco, "cvat": _edit_cvat,
         "labelstudio": _edit_labelstudio}


@pytest.mark.parametrize("fmt", ["yolo", "coco", "cvat", "labelstudio"])
def test_export_edit_import_reads_the_correction(results, tmp_path, fmt):
    export(results, tmp_path / "out", [fmt], model_version="m", image_root=tmp_path / "pics",
           review=False)
    labels = EDITS[fmt](tmp_path / "out" / fmt)
    got = read_labels(labels, image_root=tmp_path / "pics")  # format told from the files
    assert _faces(got) == WANT
    one = next(r for r in got if r["image"].endswith("one.jpg"))
    assert (one["width"], one["height"]) == (200, 120)
    assert np.allclose(one["tiles"][1]["polygon"], [(60, 20), (110, 30), (100, 80), (50, 70)],
                       atol=0.02)
    assert Path(one["image"]).is_file()


def test_labelstudio_task_without_annotation_is_not_labelled(results, tmp_path):
    export(results, tmp_path / "out", ["labelstudio"], model_version="m", review=False)
    f = tmp_path / "out" / "labelstudio" / "tasks.json"
    tasks = json.loads(f.read_text())
    tasks[0]["annotations"] = [{"result": tasks[0]["predictions"][0]["result"]}]
    tasks[1]["annotations"] = [{"was_cancelled": True, "result": []}]
    f.write_text(json.dumps(tasks))
    got = read_labels(f, "labelstudio", image_root=tmp_path / "pics")
    assert [Path(r["image"]).name for r in got] == ["one.jpg"]  # predictions alone: not labels


def test_labelstudio_rotated_rectangle_comes_back_as_the_tile(results, tmp_path):
    export(results, tmp_path / "out", ["labelstudio"], model_version="m", ls_shape="rectangle",
           review=False)
    f = tmp_path / "out" / "labelstudio" / "tasks.json"
    tasks = json.loads(f.read_text())
    for t in tasks:
        t["annotations"] = [{"result": t["predictions"][0]["result"]}]
    f.write_text(json.dumps(tasks))
    one = next(r for r in read_labels(f, image_root=tmp_path / "pics")
               if r["image"].endswith("one.jpg"))
    corners = one["tiles"][1]["polygon"]  # the 1-5, turned by atan(10/50)
    for q in [(60, 20), (110, 30), (100, 80), (50, 70)]:
        assert min(np.hypot(c[0] - q[0], c[1] - q[1]) for c in corners) < 0.2


def test_training_set_in_the_tile_model_classes(results, tmp_path):
    export(results, tmp_path / "out", ["cvat"], model_version="m", review=False)
    records = read_labels(_edit_cvat(tmp_path / "out" / "cvat"))
    s = write_training_set(records, tmp_path / "set", val_fraction=0.5, imgsz=64)
    assert (s["images"], s["train"], s["val"], s["tile"], s["tile_back"]) == (2, 1, 1, 4, 1)
    data = yaml.safe_load((tmp_path / "set" / "tiles.yaml").read_text())
    assert data["names"] == {0: "tile", 1: "tile_back"} and data["val"] == "images/val"
    lab = next((tmp_path / "set" / "tiles" / "labels").glob("*/one.txt"))
    rows = [ln.split() for ln in lab.read_text().splitlines()]
    assert [r[0] for r in rows] == ["0", "0", "1"] and all(len(r) == 9 for r in rows)
    assert [float(v) for v in rows[1][1:]] == pytest.approx(
        [0.3, 20 / 120, 0.55, 0.25, 0.5, 80 / 120, 0.25, 70 / 120], abs=1e-5)
    img = lab.parent.parent.parent / "images" / lab.parent.name / "one.jpg"
    assert img.is_file()
    cfg = yaml.safe_load((tmp_path / "set" / "train_tiles.yaml").read_text())
    assert (cfg["task"], cfg["data"], cfg["imgsz"]) == ("obb", "tiles.yaml", 64)
    assert cfg["model"].endswith("tiles.pt") and Path(cfg["model"]).is_file()  # fine-tunes
    back = json.loads((tmp_path / "set" / "labels.json").read_text())
    assert _faces(normalise(back)) == WANT  # faces kept, in identify-results form
    # no val image: the YAML says val is the train images
    write_training_set(records, tmp_path / "set0", val_fraction=0.0)
    text = (tmp_path / "set0" / "tiles.yaml").read_text()
    assert yaml.safe_load(text)["val"] == "images/train" and "no image held out" in text


def normalise(records):
    from vision.exports import normalise_results

    return normalise_results(records)


def test_unknown_label_name_is_refused_by_name(results, tmp_path, capsys):
    export(results, tmp_path / "out", ["cvat"], model_version="m", review=False)
    f = tmp_path / "out" / "cvat" / "annotations.xml"
    f.write_text(f.read_text().replace('label="3-3"', 'label="7-7"'))
    with pytest.raises(InputError, match="7-7"):
        read_labels(f)
    assert main(["import", str(f), "--out", str(tmp_path / "x")]) == 2
    assert "7-7" in capsys.readouterr().err
    assert main(["import", str(f), "--out", str(tmp_path / "x"), "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert "7-7" in doc["error"] and (doc["command"], doc["exit_code"]) == ("import", 2)


@pytest.mark.parametrize("argv,value", [
    (["MISSING", "--out", "O"], "MISSING"),
    (["LABELS", "--format", "voc", "--out", "O"], "voc"),
    (["LABELS", "--out", "O", "--val-fraction", "1"], "'1'"),
    (["LABELS", "--out", "O", "--imgsz", "ten"], "ten"),
    (["LABELS"], "--out"),
])
def test_import_bad_input_one_line_exit_2(results, tmp_path, capsys, argv, value):
    export(results, tmp_path / "out", ["cvat"], model_version="m", review=False)
    subst = {"MISSING": str(tmp_path / "nope.xml"), "O": str(tmp_path / "o"),
             "LABELS": str(tmp_path / "out" / "cvat")}
    assert main(["import", *[subst.get(a, a) for a in argv]]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and subst.get(value, value) in err, err


def test_cvat_image_missing_names_it(results, tmp_path):
    export(results, tmp_path / "out", ["cvat"], model_version="m", review=False)
    d = tmp_path / "out" / "cvat"
    (d / "images" / "b" / "two.png").unlink()
    with pytest.raises(InputError, match="two.png"):
        read_labels(d)


@pytest.mark.slow
def test_round_trip_export_edit_import_train_one_epoch(results, tmp_path, capsys, monkeypatch):
    """export -> edit one label -> `paigow import` -> `paigow train --epochs 1`: the corrected
    set trains the tile model (fine-tuned from the shipped one) and exports it."""
    pytest.importorskip("ultralytics")
    monkeypatch.chdir(tmp_path)  # the trainer's runs/ folder
    rfile = tmp_path / "results.json"
    rfile.write_text(json.dumps(results))
    assert main(["export", "--results", str(rfile), "--format", "cvat", "--out",
                 str(tmp_path / "out"), "--model-version", "m"]) == 0
    _edit_cvat(tmp_path / "out" / "cvat")
    capsys.readouterr()
    assert main(["import", str(tmp_path / "out" / "cvat"), "--out", str(tmp_path / "set"),
                 "--imgsz", "64", "--val-fraction", "0.5", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["tile"], summary["tile_back"]) == (4, 1)
    cfg = yaml.safe_load(Path(summary["config"]).read_text())
    cfg.update(batch=2, workers=0, train={"mosaic": 0.0})
    cfg["export"]["dynamic"] = False
    Path(summary["config"]).write_text(yaml.safe_dump(cfg))
    assert main(["train", "--config", summary["config"], "--epochs", "1", "--out",
                 str(tmp_path / "models"), "--json"]) == 0
    out = capsys.readouterr().out  # ultralytics prints its own lines before the JSON
    meta = json.loads(out[out.index("\n{\n") + 1:] if not out.startswith("{") else out)
    assert meta["epochs_run"] == 1
    assert (tmp_path / "models" / "tiles_labelled.onnx").is_file()
    on_disk = json.loads((tmp_path / "models" / "tiles_labelled.json").read_text())
    assert on_disk["class_names"] == ["tile", "tile_back"]
