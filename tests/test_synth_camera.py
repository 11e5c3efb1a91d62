"""The surveillance camera of the training renderer (vision/synth/camera.py; issue 40 item 1)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from vision.synth import camera as C
from vision.synth import dataset as synth_dataset


def _table(h=720, w=1280):
    """A smooth mid-grey picture with a few bright tile-like bars (uint8 BGR)."""
    img = np.full((h, w, 3), 120, np.uint8)
    for k in range(6):
        cv2.rectangle(img, (100 + 180 * k, 300), (160 + 180 * k, 420), (230, 230, 230), -1)
    return img


def test_surveillance_brings_the_frame_to_the_camera_lines_and_dims_it():
    img = _table()
    seen = set()
    for seed in range(24):
        out, info = C.surveillance(img, np.random.default_rng(seed))
        assert out.dtype == np.uint8 and out.ndim == 3
        assert info["lines"] in C.CAMERA_LINES
        # 1280 x 720 stands for a 720p camera: 480 lines -> 853 x 480, 720 -> unchanged
        assert out.shape[0] == min(720, info["lines"])
        assert out.shape[1] == round(1280 * min(720, info["lines"]) / 720)
        assert 0.5 <= info["gain"] <= 0.9
        # dim: the picture is darker than the camera's scene (gain < 1, warm cast)
        assert out.mean() < img.mean() * 0.95
        # warm: blue below red (the cast), on the bright bars and the grey alike
        assert out[..., 0].mean() < out[..., 2].mean()
        seen.add(info["codec"])
    assert seen == {"h264", "jpeg"}  # both codecs drawn (PyAV with libx264 installed)


def test_surveillance_is_deterministic_by_generator():
    img = _table()
    a, ia = C.surveillance(img, np.random.default_rng(5))
    b, ib = C.surveillance(img, np.random.default_rng(5))
    assert ia == ib
    assert np.array_equal(a, b)


def test_h264_round_trip_keeps_the_picture_and_odd_sides():
    img = _table(301, 403)  # odd sides: yuv420p needs even ones, the border is replicated
    out = C._h264(img, 30)
    assert out is not None and out.shape == img.shape
    assert not np.array_equal(out, img)  # compressed
    mse = float(np.mean((out.astype(np.float32) - img.astype(np.float32)) ** 2))
    assert 10 * np.log10(255.0 ** 2 / max(mse, 1e-9)) > 28  # PSNR: still the same picture


def test_without_an_h264_encoder_jpeg_stands_in(monkeypatch):
    monkeypatch.setattr(C, "_h264", lambda img, crf: None)
    codecs = {C.surveillance(_table(), np.random.default_rng(s))[1]["codec"] for s in range(12)}
    assert codecs == {"jpeg"}


def test_render_datasets_camera_keeps_the_labels_and_shrinks_frames(tmp_path):
    # the same tiles in the same places (normalised labels unchanged), frames at the camera's
    # resolution and darker; 0 renders the dataset unchanged (its own generator)
    kw = dict(n_tiles=6, n_pips=0, seed=13, val_fraction=0.0, progress=False,
              closeup_fraction=0.0)
    sa = synth_dataset.render_datasets(tmp_path / "a", **kw)
    sb = synth_dataset.render_datasets(tmp_path / "b", camera=1.0, **kw)
    assert sa["camera"] == 0 and sb["camera"] == 6
    la = sorted((tmp_path / "a" / "tiles" / "labels").rglob("*.txt"))
    lb = sorted((tmp_path / "b" / "tiles" / "labels").rglob("*.txt"))
    assert len(la) == 6 and [f.name for f in la] == [f.name for f in lb]
    assert all(x.read_text() == y.read_text() for x, y in zip(la, lb))
    ia = [cv2.imread(str(p)) for p in sorted((tmp_path / "a" / "tiles" / "images").rglob("*.jpg"))]
    ib = [cv2.imread(str(p)) for p in sorted((tmp_path / "b" / "tiles" / "images").rglob("*.jpg"))]
    assert all(b.shape[0] <= a.shape[0] and b.shape[1] <= a.shape[1] for a, b in zip(ia, ib))
    assert any(b.shape[0] < a.shape[0] for a, b in zip(ia, ib))  # some brought below 720p
    assert all(b.mean() < a.mean() for a, b in zip(ia, ib))
    # camera 0 is the dataset of before, byte for byte
    sc = synth_dataset.render_datasets(tmp_path / "c", camera=0.0, **kw)
    ic = [cv2.imread(str(p)) for p in sorted((tmp_path / "c" / "tiles" / "images").rglob("*.jpg"))]
    assert sc["camera"] == 0 and all(np.array_equal(a, c) for a, c in zip(ia, ic))


def test_render_datasets_camera_pip_crops_keep_their_size(tmp_path):
    s = synth_dataset.render_datasets(tmp_path, n_tiles=0, n_pips=8, seed=14, val_fraction=0.0,
                                      progress=False, camera=1.0)
    assert s["camera"] >= 1 and s["pips_train"] == 8
    crops = sorted((tmp_path / "pips" / "images").rglob("*.jpg"))
    shapes = {cv2.imread(str(p)).shape for p in crops}
    assert shapes == {(192, 96, 3)}


@pytest.mark.parametrize("bad", ["1.5", "-0.1"])
def test_render_cli_rejects_a_camera_probability_outside_0_1(tmp_path, capsys, bad):
    from vision.cli import main

    assert main(["render", "--n", "1", "--camera", bad, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--camera" in err and bad in err


def test_the_camera_campaign_config_continues_the_shipped_tile_model():
    from pathlib import Path

    from vision.synth.train import load_config

    root = Path(__file__).resolve().parents[1]
    cfg = load_config(root / "datasets" / "train_tiles_cam_cpu.yaml", need_data=False)
    assert cfg["name"] == "tiles_cam_cpu" and cfg["task"] == "obb"
    assert Path(cfg["model"]).resolve() == (root / "models" / "tiles.pt").resolve()
    assert cfg["threads"] == 1 and cfg["imgsz"] == 640
