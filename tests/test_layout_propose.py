"""`paigow layout propose` (vision/table/propose.py) and the example layout in docs/examples."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from scoring.errors import InputError
from helpers.seat_reads import DEAL, FRAME, named, table, tile, truth
from vision.recognition.decode import TileRead
from vision.cli import main
from vision.table.propose import layout_yaml, propose_from_reads
from vision.table.rounds import Layout, assign_positions, load_layout, points_in_polygon

ROOT = Path(__file__).resolve().parents[1]


def _no_overlaps(layout: dict) -> bool:
    polys = [np.asarray(v, np.float32) for v in layout["positions"].values()]
    return all(cv2.intersectConvexConvex(a, b)[0] == 0
               for i, a in enumerate(polys) for b in polys[i + 1:])


def test_proposal_pins_every_position_by_place():
    reads = table()
    layout, info, left = propose_from_reads(reads, FRAME, table_id="t3")
    lay = Layout.from_dict(layout)
    assert lay.table_id == "t3" and list(lay.positions) == list(DEAL)
    assert named(assign_positions(reads, lay)) == truth(DEAL)
    assert all(i["tiles"] == 4 and i["frames"] == 1 for i in info.values())
    assert left == [] and _no_overlaps(layout)


def _moved(reads, M):
    """The reads seen through the 3 x 3 homography M (a turned, tilted camera)."""
    out = []
    for r in reads:
        q = cv2.perspectiveTransform(np.asarray(r.polygon, np.float32)[None], M)[0]
        out.append(TileRead(r.face, r.state, r.confidence, q, np.r_[q.min(0), q.max(0)]))
    return out


def _turn(deg, scale=0.55, tilt=0.0):
    """Homography turning the frame about its centre by ``deg``, shrinking it by ``scale``,
    and tilting the camera (``tilt``: perspective along y)."""
    c = np.array(FRAME, np.float64) / 2
    R = cv2.getRotationMatrix2D(tuple(c), deg, scale)
    M = np.vstack([R, [0, 0, 1]])
    if tilt:
        P = np.array([[1, 0, 0], [0, 1, 0], [0, tilt, 1]], np.float64)
        T = np.array([[1, 0, -c[0]], [0, 1, -c[1]], [0, 0, 1]])
        M = np.linalg.inv(T) @ P @ T @ M
        M /= M[2, 2]
    return M


@pytest.mark.parametrize("deg,tilt", [(0, 0.0), (90, 0.0), (180, 0.0), (217, 0.0),
                                      (-63, 0.0), (180, 0.0004), (35, -0.0004)])
def test_any_rotation_or_tilt_names_the_same_positions(deg, tilt):
    """The dealer anywhere, the table turned and tilted: each position's tiles fall in the
    polygon of its own name (the dealer's told by the table's shape, seats in order)."""
    reads = _moved(table(), _turn(deg, tilt=tilt))
    layout, info, left = propose_from_reads(reads, FRAME)
    lay = Layout.from_dict(layout)
    assert named(assign_positions(reads, lay)) == truth(DEAL)
    assert left == [] and _no_overlaps(layout)


def test_too_few_positions_ask_for_the_dealer():
    """One or two players: three points always have a corner about equally far from the
    other two, so the dealer is asked for -- and used when given."""
    from vision.table.propose import DealerUnknown

    deal = {p: DEAL[p] for p in ("dealer", "2", "5")}
    reads = _moved(table(deal), _turn(160))
    with pytest.raises(DealerUnknown, match=r"--dealer-at X,Y") as exc:
        propose_from_reads(reads, FRAME)
    assert len(exc.value.candidates) == 3
    dealer = np.mean([r.centre for r in reads[:4]], axis=0)
    layout, info, _ = propose_from_reads(reads, FRAME, dealer_at=dealer)
    lay = Layout.from_dict(layout)
    got = named(assign_positions(reads, lay))
    assert got["dealer"] == sorted(DEAL["dealer"]) and len(got) == 3
    assert sorted(map(sorted, got.values())) == sorted(sorted(f) for f in deal.values())


def test_groups_that_are_no_position_are_listed():
    """A lone hand, a stray tile and face-down stacks are listed with their place and why,
    never dropped silently; the positions are still proposed."""
    reads = table()
    cx, cy = FRAME[0] / 2, FRAME[1] / 2
    lone = [r for r in table({"7": DEAL["7"]})][:2]
    lone = _moved(lone, np.array([[1, 0, 0], [0, 1, 260], [0, 0, 1]], np.float64))
    stray = tile("5-6", cx, cy)
    stacks = [tile(None, 100 + 45 * k, 1000, state="face_down") for k in range(3)]
    layout, info, left = propose_from_reads(reads + lone + [stray] + stacks, FRAME)
    assert list(layout["positions"]) == list(DEAL)
    whys = sorted((g["tiles"], g["why"].split(":")[0].split(" with")[0]) for g in left)
    assert whys == [(1, "1 tile(s)"), (2, "2 tile(s)"), (3, "face-down tiles (stacks or hands "
                                                         "not turned over)")]
    text = layout_yaml({"image": "f.png", "frame_size": list(FRAME), "layout": layout,
                        "positions": info, "left_out": left})
    assert text.count("# left out") == 3


def test_frames_pool_seats_empty_in_one_round():
    """Round one leaves seat 5 empty, round two seat 2: both rounds together give every seat,
    each polygon holding its own seat's tiles in both rounds."""
    from vision.table.propose import propose_from_frames

    M = _turn(75, tilt=0.0003)
    r1 = _moved(table({p: f for p, f in DEAL.items() if p != "5"}), M)
    r2 = _moved(table({p: f for p, f in DEAL.items() if p != "2"}), M)
    layout, info, _ = propose_from_frames([r1, r2], FRAME)
    lay = Layout.from_dict(layout)
    assert list(lay.positions) == list(DEAL)
    assert info["5"]["frames"] == 1 and info["dealer"]["frames"] == 2
    full = _moved(table(), M)
    assert named(assign_positions(full, lay)) == truth(DEAL)


def test_yaml_round_trip(tmp_path):
    layout, info, left = propose_from_reads(table(), FRAME)
    text = layout_yaml({"image": "frame.png", "frame_size": list(FRAME), "layout": layout,
                        "positions": info, "left_out": left})
    f = tmp_path / "l.yaml"
    f.write_text(text)
    lay = load_layout(f)
    assert {p: v.tolist() for p, v in lay.positions.items()} == layout["positions"]


def test_no_position_is_bad_input():
    with pytest.raises(InputError, match="no position with tiles found"):
        propose_from_reads(table({"dealer": DEAL["dealer"]})[:2], FRAME)


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
              "blank": "no position with tiles found", "out_folder": "is a folder"}[what]
    assert expect in err


@pytest.mark.slow
def test_propose_command_frames_picture_and_dealer_at(frame, tmp_path, capsys):
    """Two frames pooled, the dealer given, the proposal drawn; a bad --dealer-at is bad
    input naming the value."""
    scene, path = frame
    dealer = np.mean([t.polygon.astype(np.float64).mean(0) for t in scene.tiles
                      if t.position == "dealer"], axis=0)
    pic = tmp_path / "check.png"
    assert main(["layout", "propose", str(path), str(path), "--json", "--picture", str(pic),
                 "--dealer-at", f"{dealer[0]:.0f},{dealer[1]:.0f}"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["frames"] == 2 and res["picture"] == str(pic)
    assert all(i["frames"] == 2 for i in res["positions"].values())
    drawn = cv2.imread(str(pic))
    assert drawn is not None and drawn.shape[:2] == (1080, 1920)
    assert not np.array_equal(drawn, cv2.imread(str(path)))  # something was drawn
    lay = Layout.from_dict(res["layout"])
    for t in scene.tiles:
        c = t.polygon.astype(np.float64).mean(0)[None]
        inside = [p for p, poly in lay.positions.items() if points_in_polygon(c, poly)[0]]
        assert len(inside) == 1 and (t.position == "dealer") == (inside == ["dealer"])
    assert main(["layout", "propose", str(path), "--dealer-at", "640;600", "--json"]) == 2
    assert "--dealer-at '640;600'" in json.loads(capsys.readouterr().out)["error"]
