"""Smoke test of vision.synth.train: one epoch of each model on a handful of tiny images, then ONNX.

This is the only training CI runs: it checks the config -> ultralytics -> weights -> ONNX chain
(weights load, ONNX runs in onnxruntime with the layout recorded in the metadata), not accuracy.
Uses the renderer (vision.synth.dataset.render_datasets) when it exists, else a toy generator here.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
import yaml

os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_AUTOINSTALL", "false")
os.environ.setdefault("YOLO_CONFIG_DIR", str(Path(__file__).resolve().parents[1] / ".yolo_config"))
pytest.importorskip("ultralytics")
ort = pytest.importorskip("onnxruntime")

from scoring.errors import InputError  # noqa: E402
from vision.synth import train as vt  # noqa: E402


def make_toy_datasets(out: Path, n_tiles: int = 8, n_pips: int = 8, seed: int = 0,
                      tile_size=(320, 180), pip_size=(48, 96)) -> dict:
    """Write tiny YOLO OBB (tiles) and detect (pips) datasets with rotated rectangles / dots.

    Layout as the renderer's: out/tiles/{images,labels}/{train,val}, out/tiles.yaml, same for
    pips. Returns {"tiles": yaml path, "pips": yaml path}.
    """
    import cv2

    rng = np.random.default_rng(seed)
    out = Path(out)
    paths = {}
    for kind, n, (w, h), names in (("tiles", n_tiles, tile_size, ["tile", "tile_back"]),
                                   ("pips", n_pips, pip_size, ["pip_red", "pip_white"])):
        root = out / kind
        for i in range(n):
            split = "val" if i % 4 == 3 else "train"
            img = np.full((h, w, 3), (40, 110, 40), np.uint8)
            rows = []
            if kind == "tiles":
                for _ in range(3):
                    cls = int(rng.integers(2))
                    rect = ((float(rng.uniform(0.2, 0.8) * w), float(rng.uniform(0.25, 0.75) * h)),
                            (float(h * 0.18), float(h * 0.36)), float(rng.uniform(0, 180)))
                    poly = cv2.boxPoints(rect)
                    cv2.fillPoly(img, [poly.astype(np.int32)], (20, 20, 20) if cls == 0 else (60, 160, 200))
                    rows.append([cls] + (poly / [w, h]).clip(0, 1).ravel().tolist())
            else:
                img[:] = (25, 25, 25)
                for _ in range(int(rng.integers(1, 5))):
                    cls = int(rng.integers(2))
                    r = w * 0.1
                    cx, cy = rng.uniform(r + 1, w - r - 1), rng.uniform(r + 1, h - r - 1)
                    cv2.circle(img, (int(cx), int(cy)), int(r), (30, 30, 220) if cls == 0 else (235, 235, 235), -1)
                    rows.append([cls, cx / w, cy / h, 2 * r / w, 2 * r / h])
            (root / "images" / split).mkdir(parents=True, exist_ok=True)
            (root / "labels" / split).mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(root / "images" / split / f"{i:04d}.png"), img)
            (root / "labels" / split / f"{i:04d}.txt").write_text(
                "".join(" ".join([str(r[0])] + [f"{v:.6f}" for v in r[1:]]) + "\n" for r in rows))
        yml = out / f"{kind}.yaml"
        yml.write_text(yaml.safe_dump({"path": kind, "train": "images/train", "val": "images/val",
                                       "names": dict(enumerate(names))}))
        paths[kind] = yml
    return paths


def _datasets(tmp: Path) -> dict:
    try:
        from vision.synth.dataset import render_datasets
    except ImportError:
        return make_toy_datasets(tmp, n_tiles=8, n_pips=8, seed=3)
    render_datasets(tmp, n_tiles=8, n_pips=16, seed=7, val_fraction=0.25, progress=False)
    return {"tiles": tmp / "tiles.yaml", "pips": tmp / "pips.yaml"}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("train")
    data = _datasets(tmp)
    results = {}
    for name, task, model, imgsz in (("tiles", "obb", "yolo11n-obb.yaml", 128),
                                     ("pips", "detect", "yolo11n.yaml", 64)):
        cfg = tmp / f"train_{name}.yaml"
        cfg.write_text(yaml.safe_dump({
            "name": name, "task": task, "model": model, "data": str(data[name]),
            "imgsz": imgsz, "epochs": 1, "batch": 4, "seed": 0, "workers": 0, "threads": 2,
            "train": {"mosaic": 0.0, "val": True},
            "export": {"nms": True, "simplify": False, "agnostic_nms": task == "obb"}}))
        results[name] = vt.train(cfg, out_dir=tmp / "models", runs_dir=tmp / "runs")
        results[name + "_cfg"] = cfg
    return tmp, results


@pytest.mark.slow
@pytest.mark.parametrize("name", ["tiles", "pips"])
def test_train_one_epoch_exports_loadable_onnx(trained, name):
    tmp, results = trained
    meta = results[name]
    models = tmp / "models"
    assert (models / f"{name}.pt").is_file()
    assert (models / f"{name}.onnx").is_file()
    on_disk = json.loads((models / f"{name}.json").read_text())
    assert on_disk["class_names"] == (["tile", "tile_back"] if name == "tiles"
                                      else ["pip_red", "pip_white"])
    assert on_disk["epochs_run"] == 1
    imgsz = meta["imgsz"]
    sess = ort.InferenceSession(str(models / f"{name}.onnx"), providers=["CPUExecutionProvider"])
    assert list(sess.get_inputs()[0].shape) == [1, 3, imgsz, imgsz]
    out = sess.run(None, {"images": np.zeros((1, 3, imgsz, imgsz), np.float32)})[0]
    assert list(out.shape) == meta["onnx_layout"]["output"]["shape"]
    from ultralytics import YOLO

    model = YOLO(str(models / f"{name}.pt"))
    assert model.task == ("obb" if name == "tiles" else "detect")
    assert list(model.names.values()) == on_disk["class_names"]
    # the checksums a detector verifies at load (vision.recognition.modelcheck) were recorded
    from vision.recognition.modelcheck import file_sha256

    assert on_disk["sha256"] == {f"{name}{ext}": file_sha256(models / f"{name}{ext}")
                                 for ext in (".onnx", ".pt")}


@pytest.mark.slow
def test_finalize_from_run_folder_validates_and_exports(trained):
    """The path scripts/finish_training.sh takes: no trainer object, best.pt re-validated."""
    tmp, results = trained
    meta = vt.finalize(results["pips_cfg"], tmp / "runs" / "pips", tmp / "final")
    assert (tmp / "final" / "pips.onnx").is_file()
    assert meta["epochs_run"] == 1
    assert set(meta["metrics_synthetic_val"]) == {"precision", "recall", "mAP50", "mAP50-95"}
    assert all(0.0 <= v <= 1.0 for v in meta["metrics_synthetic_val"].values())


@pytest.mark.slow
def test_reexport_raw_rectangular_matches_torch(trained, tmp_path):
    """Re-export the pip weights without NMS at the crop's own 64 x 32 shape: the ONNX output
    is the PyTorch forward pass (same input tensor), and the JSON describes it."""
    import shutil

    tmp, results = trained
    for ext in (".pt", ".json"):
        shutil.copy(tmp / "models" / f"pips{ext}", tmp_path / f"pips{ext}")
    cfg = vt.load_config(results["pips_cfg"])
    cfg["export"].update(nms=False, imgsz=[64, 32])
    meta = vt.reexport(cfg, tmp_path)
    assert meta["onnx_layout"]["input"]["shape"] == [1, 3, 64, 32]
    n_anchor = 8 * 4 + 4 * 2 + 2 * 1
    assert meta["onnx_layout"]["output"]["shape"] == [1, 6, n_anchor]
    sess = ort.InferenceSession(str(tmp_path / "pips.onnx"), providers=["CPUExecutionProvider"])
    assert list(sess.get_outputs()[0].shape) == [1, 6, n_anchor]
    val = sorted(p for p in tmp.glob("pips/images/*/*") if p.suffix in (".jpg", ".png"))
    res = vt.onnx_parity(tmp_path / "pips.pt", tmp_path / "pips.onnx", val[:2])
    assert res["layout"] == "raw" and res["images"] == 2
    assert res["max_abs_diff"] < 1e-2
    from vision.recognition.modelcheck import verify_checksum

    assert verify_checksum(tmp_path / "pips.onnx") and verify_checksum(tmp_path / "pips.pt")


def test_missing_config_names_the_path(tmp_path):
    bad = tmp_path / "nope.yaml"
    with pytest.raises(InputError, match="nope.yaml"):
        vt.load_config(bad)


def test_config_without_data_yaml_is_input_error(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"name": "x", "task": "obb", "model": "yolo11n-obb.yaml",
                                   "data": "missing.yaml", "imgsz": 64}))
    with pytest.raises(InputError, match="missing.yaml"):
        vt.load_config(cfg)


def test_cli_bad_config_exit_code_2(tmp_path, capsys):
    from vision.cli import main

    rc = main(["train", "--config", str(tmp_path / "absent.yaml")])
    assert rc == 2
    assert "absent.yaml" in capsys.readouterr().err


def test_resume_finds_the_committed_campaign_checkpoint_when_no_run_or_out_holds_one(tmp_path):
    """--resume on a fresh clone into another --out continues models/checkpoints (the CPU
    campaign, MODEL_CARD); a run folder of this machine comes first."""
    runs, out = tmp_path / "runs", tmp_path / "out"
    committed = Path(vt.__file__).resolve().parents[2] / "models" / "checkpoints"
    assert vt._find_resume_checkpoint("tiles_flush_cpu", out, runs) == \
        committed / "tiles_flush_cpu_last.pt"
    assert vt._find_resume_checkpoint("no_such_run", out, runs) is None
    local = runs / "tiles_flush_cpu" / "weights" / "last.pt"
    local.parent.mkdir(parents=True)
    local.write_bytes(b"x")
    assert vt._find_resume_checkpoint("tiles_flush_cpu", out, runs) == local
