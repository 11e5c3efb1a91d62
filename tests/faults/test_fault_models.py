"""Fault: bad model files. A model with damaged weights but a valid structure, or the tile and
spot models swapped, loaded and read nothing ("0 round(s)", exit 0). Now each model file's
SHA-256 is kept in its models/*.json and checked at load, and the class layout is checked: the
load fails with one line naming the file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from scoring.errors import InputError
from vision.cli import main
from vision.recognition.detect import PipDetector, TileDetector
from vision.recognition.modelcheck import file_sha256, stamp, verify_checksum

MODELS = Path(__file__).resolve().parents[2] / "models"


def _copy_models(dst: Path) -> Path:
    dst.mkdir()
    for name in ("tiles.onnx", "tiles.json", "pips.onnx", "pips.json"):
        shutil.copy2(MODELS / name, dst / name)
    return dst


def _damage_weights(path: Path) -> None:
    """Zero the largest weight tensor: the graph stays valid, the model reads nothing."""
    m = onnx.load(str(path))
    big = max(m.graph.initializer, key=lambda t: int(np.prod(t.dims)))
    big.CopyFrom(numpy_helper.from_array(np.zeros_like(numpy_helper.to_array(big)), big.name))
    onnx.save(m, str(path))


@pytest.mark.faults
def test_repository_models_carry_their_checksums():
    for stem in ("tiles", "pips"):
        meta = json.loads((MODELS / f"{stem}.json").read_text())
        for ext in (".onnx", ".pt"):
            f = MODELS / f"{stem}{ext}"
            if f.is_file():
                assert meta["sha256"][f.name] == file_sha256(f), \
                    f"{f} changed: run python -m vision.recognition.modelcheck models"


@pytest.mark.faults
def test_damaged_weights_are_refused_by_name(tmp_path, capsys):
    d = _copy_models(tmp_path / "models")
    _damage_weights(d / "pips.onnx")
    onnx.checker.check_model(str(d / "pips.onnx"))  # still a valid model
    with pytest.raises(InputError, match="checksum") as err:
        PipDetector(d / "pips.onnx")
    assert str(d / "pips.onnx") in str(err.value) and str(d / "pips.json") in str(err.value)
    img = tmp_path / "frame.png"
    import cv2

    cv2.imwrite(str(img), np.full((48, 64, 3), 90, np.uint8))
    rc = main(["run", str(img), "--models", str(d), "--no-progress"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "pips.onnx" in lines[0] and "checksum" in lines[0]


@pytest.mark.faults
def test_swapped_models_are_refused_by_name(tmp_path, capsys):
    d = tmp_path / "swapped"
    d.mkdir()
    # the files swapped, each with its own description renamed along (checksums still match)
    for a, b in (("tiles", "pips"), ("pips", "tiles")):
        shutil.copy2(MODELS / f"{a}.onnx", d / f"{b}.onnx")
        meta = json.loads((MODELS / f"{a}.json").read_text())
        meta["sha256"] = {f"{b}.onnx": file_sha256(MODELS / f"{a}.onnx")}
        (d / f"{b}.json").write_text(json.dumps(meta))
    with pytest.raises(InputError, match=r"tiles\.onnx is a spot model .*not a tile model"):
        TileDetector(d / "tiles.onnx")
    with pytest.raises(InputError, match=r"pips\.onnx is a tile model .*not a spot model"):
        PipDetector(d / "pips.onnx")
    import cv2

    img = tmp_path / "frame.png"
    cv2.imwrite(str(img), np.full((48, 64, 3), 90, np.uint8))
    rc = main(["run", str(img), "--models", str(d), "--no-progress"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "is a spot model" in lines[0]
    # a file swapped alone, its description left behind: the checksum catches it first
    d2 = _copy_models(tmp_path / "models2")
    shutil.copy2(MODELS / "pips.onnx", d2 / "tiles.onnx")
    with pytest.raises(InputError, match=r"tiles\.onnx does not match its checksum"):
        TileDetector(d2 / "tiles.onnx")
    # without any description, the file's own class names still tell
    d3 = tmp_path / "bare"
    d3.mkdir()
    shutil.copy2(MODELS / "pips.onnx", d3 / "tiles.onnx")
    with pytest.raises(InputError, match="is a spot model"):
        TileDetector(d3 / "tiles.onnx")


@pytest.mark.faults
def test_stamp_after_training_then_verify(tmp_path):
    d = _copy_models(tmp_path / "models")
    _damage_weights(d / "tiles.onnx")            # "retrained": new bytes
    with pytest.raises(InputError, match="checksum"):
        verify_checksum(d / "tiles.onnx")
    written = stamp([d])                          # what vision.synth.train does after export
    assert set(written) == {str(d / "tiles.json"), str(d / "pips.json")}
    assert verify_checksum(d / "tiles.onnx") and verify_checksum(d / "pips.onnx")
    meta = json.loads((d / "tiles.json").read_text())
    assert meta["sha256"]["tiles.onnx"] == file_sha256(d / "tiles.onnx")
    assert meta["names"] == {"0": "tile", "1": "tile_back"}   # the rest of the JSON kept
    assert TileDetector(d / "tiles.onnx").names == {0: "tile", 1: "tile_back"}
