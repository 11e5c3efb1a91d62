"""`paigow layout propose` (vision/layout_propose.py) and the example layout in docs/examples."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from scoring.errors import InputError
from helpers.seat_reads import DEAL, FRAME, named, table, truth
from vision.cli import main
from vision.layout_propose import layout_yaml, propose_from_reads
from vision.table import Layout, assign_positions, load_layout, points_in_polygon

ROOT = Path(__file__).resolve().parents[1]


def _no_overlaps(layout: dict) -> bool:
    polys = [np.asarray(v, np.float32) for v in layout["positions"].values()]
    return all(cv2.intersectConvexConvex(a, b)[0] == 0
               for i, a in enumerate(polys) for b in polys[i + 1:])


def test_proposal_pins_every_position_by_place():
    reads = table()
    layout, info, _ = propose_from_reads(reads, FRAME, table_id="t3")
    lay = Layout.from_dict(layout)
    assert lay.table_id == "t3" and list(lay.positions) == list(DEAL)
    assert named(assign_positions(reads, lay)) == truth(DEAL)
    assert all(i == {"source": "tiles", "tiles": 4, "problems": []} for i in info.values())
    assert _no_overlaps(layout)


def test_empty_seat_drawn_at_fitted_place():
    deal = {p: f for p, f in DEAL.items() if p != "5"}
    layout, info, _ = propose_from_reads(table(deal), FRAME)
    assert info["5"] == {"source": "fitted place", "tiles": 0, "problems": []}
    # seat 5's own tiles, laid later, fall into the drawn polygon
    lay = Layout.from_dict(layout)
    assert named(assign_positions(table(), lay)) == truth(DEAL)
    assert _no_overlaps(layout)


def test_yaml_round_trip(tmp_path):
    layout, info, g = propose_from_reads(table(), FRAME)
    text = layout_yaml({"image": "frame.png", "frame_size": list(FRAME), "layout": layout,
                        "positions": info})
    f = tmp_path / "l.yaml"
    f.write_text(text)
    lay = load_layout(f)
    assert {p: v.tolist() for p, v in lay.positions.items()} == layout["positions"]


def test_too_few_positions_is_bad_input():
    with pytest.raises(InputError, match="cannot place the seats"):
        propose_from_reads(table({"dealer": DEAL["dealer"]}), FRAME)


def test_example_layout_loads():
    lay = load_layout(ROOT / "docs" / "examples" / "table-layout.yaml")
    assert list(lay.positions) == ["dealer", "1", "2", "3", "4", "5", "6", "7"]
    assert lay.bets == {"1": "25", "4": "10"} and lay.commission == "0.05"


# ------------------------------------------------------------------ the command, shipped models


@pytest.fixture(scope="module")
def frame(tmp_path_factory):
    from vision import MODELS_DIR

    if not (MODELS_DIR / "tiles.onnx").is_file():
        pytest.skip("shipped models not present")
    from seat_scenes import table_with_distractors

    scene = table_with_distractors(1_000_101)  # a chip once taken for a tile
    path = tmp_path_factory.mktemp("frame") / "table.png"
    cv2.imwrite(str(path), scene.image)
    return scene, path


def test_propose_command_on_rendered_table(frame, tmp_path, capsys):
    scene, path = frame
    out = tmp_path / "layout.yaml"
    assert main(["layout", "propose", str(path), "--out", str(out), "--table-id", "t9"]) == 0
    lay = load_layout(out)
    assert lay.table_id == "t9" and lay.banker == "dealer"
    # every position's true tiles lie in the polygon of the same name, in no other
    for t in scene.tiles:
        c = t.polygon.astype(np.float64).mean(0)[None]
        inside = [p for p, poly in lay.positions.items() if points_in_polygon(c, poly)[0]]
        assert inside == [t.position]
    assert main(["layout", "propose", str(path), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["layout"]["positions"] == {p: v.tolist() for p, v in lay.positions.items()}
    assert res["frame_size"] == [1920, 1080]


@pytest.mark.parametrize("what", ["missing", "not_image", "blank", "out_folder"])
def test_propose_bad_input(what, tmp_path, capsys):
    img = tmp_path / "x.png"
    args = ["layout", "propose", str(img)]
    if what == "not_image":
        img.write_text("not a picture")
    elif what in ("blank", "out_folder"):
        cv2.imwrite(str(img), np.full((720, 1280, 3), 60, np.uint8))
    if what == "out_folder":
        args += ["--out", str(tmp_path)]
    if what == "blank":
        from vision import MODELS_DIR

        if not (MODELS_DIR / "tiles.onnx").is_file():
            pytest.skip("shipped models not present")
    assert main(args + ["--json"]) == 2
    cap = capsys.readouterr()
    err = json.loads(cap.out)["error"]
    assert len(cap.err.strip().splitlines()) == 1 and err in cap.err
    expect = {"missing": "image not found", "not_image": "cannot read image",
              "blank": "cannot place the seats", "out_folder": "is a folder"}[what]
    assert expect in err
