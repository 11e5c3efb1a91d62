"""Fault: model metadata removed (issue 23, item 8). Deleting ``models/tiles.json`` turned
the checksum check into a warning (damaged or swapped weights would load); a missing
``tiles_touch.onnx`` was skipped silently. Now the models folder's models need their
description JSON (:func:`vision.recognition.models.require_description`: refused by name, exit 2) and the
optional second model's absence is logged."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from scoring.errors import InputError
from vision.cli import main
from vision.recognition.models import load_detectors, load_second_tile_detector

MODELS = Path(__file__).resolve().parents[2] / "models"


def _copy(dst: Path, names) -> Path:
    dst.mkdir()
    for name in names:
        shutil.copy2(MODELS / name, dst / name)
    return dst


@pytest.mark.faults
def test_a_model_without_its_json_is_refused_by_name(tmp_path, capsys):
    d = _copy(tmp_path / "m", ("tiles.onnx", "pips.onnx", "pips.json"))
    with pytest.raises(InputError, match=r"tiles\.onnx has no description tiles\.json"):
        load_detectors(d)
    img = tmp_path / "x.png"
    import cv2
    import numpy as np

    cv2.imwrite(str(img), np.zeros((64, 64, 3), np.uint8))
    assert main(["run", str(img), "--models", str(d), "--json", "--no-progress"]) == 2
    out, err = capsys.readouterr()
    assert "tiles.onnx has no description tiles.json" in err
    assert json.loads(out.splitlines()[-1])["exit_code"] == 2


@pytest.mark.faults
def test_a_json_without_the_checksum_is_refused(tmp_path):
    d = _copy(tmp_path / "m", ("tiles.onnx", "tiles.json", "pips.onnx", "pips.json"))
    meta = json.loads((d / "pips.json").read_text())
    meta.pop("sha256")
    (d / "pips.json").write_text(json.dumps(meta))
    with pytest.raises(InputError, match=r"pips\.json records no SHA-256 for pips\.onnx"):
        load_detectors(d)


@pytest.mark.faults
def test_the_second_model_missing_is_logged_and_without_json_refused(tmp_path, caplog):
    d = _copy(tmp_path / "m", ("tiles.onnx", "tiles.json", "pips.onnx", "pips.json"))
    with caplog.at_level(logging.WARNING, logger="vision.recognition.models"):
        assert load_second_tile_detector(d) is None
    assert any("tiles_touch.onnx" in r.getMessage() and "not found" in r.getMessage()
               for r in caplog.records)
    shutil.copy2(MODELS / "tiles_touch.onnx", d / "tiles_touch.onnx")
    with pytest.raises(InputError, match=r"tiles_touch\.onnx has no description"):
        load_second_tile_detector(d)
