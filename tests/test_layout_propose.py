"""`paigow layout propose` (vision/table/propose.py) and the example layout in docs/examples."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from helpers.seat_reads import TH, TW, place, position
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


# ----------------------------------------------- the dealer told by the woodpile or by the arc

#: the proposal module, reached through the function imported above (one import to keep)
PROPOSE = sys.modules[propose_from_reads.__module__]

# a one- or two-player table: seat 2 and seat 5 beside the dealer (three points: the shape
# cannot tell)
TWO = {p: DEAL[p] for p in ("dealer", "2", "5")}


def _row(n, x0, y, step=TW + 4, conf=0.95, scale=1.0):
    """``n`` face-down stacks side by side (tile backs, long sides touching-ish) from x0."""
    out = []
    for k in range(n):
        r = tile(None, x0 + k * step, y, state="face_down")
        c = r.polygon.mean(0)
        q = (c + (r.polygon - c) * scale).astype(np.float32)
        out.append(TileRead(None, "face_down", conf, q, np.r_[q.min(0), q.max(0)]))
    return out


def _right_of(pos, gap=40.0):
    """x, y just right of a position's tiles (its rightmost tile's edge + gap + half a back)."""
    cx, cy = place(pos)
    span = 3 * (TW + 2) + 30.0 - 2
    return cx + span / 2 + gap + TW / 2, cy


@pytest.mark.parametrize("deg", [0, 130, -75])
def test_woodpile_tells_the_dealer_at_a_small_table(deg):
    """Undealt stacks left in a row at the dealer's place (docs/rules.md, section 5) name the
    dealer where three positions cannot; the seats then fall in their own polygons."""
    x, y = _right_of("dealer")
    M = _turn(deg, tilt=0.0003 if deg else 0.0)
    reads = _moved(table(TWO) + _row(3, x, y), M)
    layout, info, left = propose_from_reads(reads, FRAME)
    lay = Layout.from_dict(layout)
    ups = [r for r in reads if r.state != "face_down"]  # a stack may lie in the grown polygon
    got = named(assign_positions(ups, lay))
    assert got["dealer"] == sorted(DEAL["dealer"]) and len(got) == 3
    assert sorted(map(sorted, got.values())) == sorted(sorted(f) for f in TWO.values())
    assert "face-down stacks" in info["dealer"]["told_by"]
    text = layout_yaml({"image": "f.png", "frame_size": list(FRAME), "layout": layout,
                        "positions": info, "left_out": left})
    assert "# dealer: face-down stacks" in text
    one = {p: DEAL[p] for p in ("dealer", "4")}  # one player: the same
    reads = _moved(table(one) + _row(2, x, y), M)
    layout, info, _ = propose_from_reads(reads, FRAME)
    ups = [r for r in reads if r.state != "face_down"]
    assert named(assign_positions(ups, Layout.from_dict(layout)))["dealer"] == sorted(
        DEAL["dealer"])


def _backs_case(what):
    x, y = _right_of("2")  # beside seat 2, a player
    if what == "one back":  # a stack dealt to a seat and not picked up, or a chip
        return _row(1, x, y)
    if what == "four in a row":  # a seat's own four tiles set face down
        return _row(4, x, y)
    if what == "unsure":  # the detector not sure they are backs
        return _row(3, x, y, conf=0.3)
    if what == "chip-sized":  # not tile-sized: chips or shadows
        return _row(3, x, y, step=TW * 0.6, scale=0.5)
    if what == "between two places":  # as near the dealer as seat 2
        (dx, dy), (sx, sy) = place("dealer"), place("2")
        return _row(2, (dx + sx) / 2 - TW, (dy + sy) / 2)
    if what == "two places":  # rows at the dealer's and at seat 2
        return _row(3, *_right_of("dealer")) + _row(2, x, y)
    if what == "a column":  # not side by side: one behind the other
        return [tile(None, x, y + k * (TH + 4), state="face_down") for k in range(3)]
    if what == "beside three tiles":  # seat 2 shows three tiles: the backs could hold its 4th
        return _row(2, x, y)
    raise AssertionError(what)


@pytest.mark.parametrize("what", ["one back", "four in a row", "unsure", "chip-sized",
                                  "between two places", "two places", "a column",
                                  "beside three tiles"])
def test_backs_that_could_be_a_players_never_name_the_dealer(what):
    """Face-down tiles beside a player that could be that player's (or a chip, or lie between
    two places) name no dealer: the proposal still asks, never guesses."""
    reads = table(TWO) + _backs_case(what)
    if what == "beside three tiles":
        reads = [r for r in reads if r.face != DEAL["2"][3]]
    with pytest.raises(PROPOSE.DealerUnknown, match=r"--dealer-at X,Y"):
        propose_from_reads(reads, FRAME)


def test_frames_must_agree_on_the_woodpile():
    """Two frames of one camera: stacks at the dealer's place in one, beside seat 2 in the
    other -- they name no dealer (asks); at the dealer's in both, the dealer is told."""
    at_dealer = table(TWO) + _row(3, *_right_of("dealer"))
    at_seat = table(TWO) + _row(3, *_right_of("2"))
    with pytest.raises(PROPOSE.DealerUnknown):
        PROPOSE.propose_from_frames([at_dealer, at_seat], FRAME)
    layout, info, _ = PROPOSE.propose_from_frames([at_dealer, at_dealer], FRAME)
    ups = [r for r in at_dealer if r.state != "face_down"]
    assert named(assign_positions(ups, Layout.from_dict(layout)))["dealer"] == sorted(
        DEAL["dealer"])


def test_a_hand_turned_down_names_no_one():
    """A player's hand still face down beside its face-up hand lies nearer its own hand than
    any position: it names no dealer (the turned-up hand is listed as left out)."""
    seat = [r for r in table({"2": DEAL["2"]})]
    reads = table({p: DEAL[p] for p in ("dealer", "5", "4")}) + seat[:2] + [
        TileRead(None, "face_down", 0.95, r.polygon, r.xyxy) for r in seat[2:]]
    with pytest.raises(PROPOSE.DealerUnknown):
        propose_from_reads(reads, FRAME)


def test_woodpile_against_the_shape_asks():
    """A row of stacks beside seat 7 while the table's shape names the dealer: the two facts
    disagree, so the dealer is asked for."""
    reads = table() + _row(3, *_right_of("7"))
    with pytest.raises(PROPOSE.DealerUnknown, match="shape points to"):
        propose_from_reads(reads, FRAME)
    layout, info, _ = propose_from_reads(table() + _row(3, *_right_of("dealer")), FRAME)
    assert info["dealer"]["told_by"].startswith("face-down stacks") and "shape" in \
        info["dealer"]["told_by"]


def _at(places):
    """A table with the positions' centres at ``places`` {position: (x, y)} px."""
    out = []
    for p, (x, y) in places.items():
        cx, cy = place(p)
        out += position(p, DEAL[p], dx=x - cx, dy=y - cy)
    return out


ROW = {"dealer": (1000, 180), "7": (220, 720), "6": (470, 710), "4": (900, 730),
       "2": (1330, 760), "1": (1560, 740)}  # players along a straight rail, seats empty between


def test_players_on_one_arc_tell_the_dealer():
    """Players along a straight rail with empty seats between: the distances do not tell (a
    middle player's spread about the dealer's) but the players lie on one line, the dealer
    off it, and no other candidate has the rest on one arc."""
    reads = _moved(_at(ROW), _turn(200, scale=0.8))
    layout, info, _ = propose_from_reads(reads, FRAME)
    assert info["dealer"]["told_by"] == "the table's shape: the other positions on one arc"
    got = named(assign_positions(reads, Layout.from_dict(layout)))
    assert got["dealer"] == sorted(DEAL["dealer"])
    assert sorted(map(sorted, got.values())) == sorted(sorted(DEAL[p]) for p in ROW)
    # a round table (every position on one circle): each candidate has the rest on one arc
    ring = np.array([[960 + 400 * np.cos(a), 540 + 400 * np.sin(a)]
                     for a in np.radians(np.arange(0, 360, 60) + 7)])
    assert (PROPOSE._arc_fits(ring) < 0.01).all() and np.ptp(PROPOSE._spreads(ring)) < 1e-6
    with pytest.raises(PROPOSE.DealerUnknown, match="no one position has the others on one arc"):
        PROPOSE.dealer_and_reason(ring)


def test_arc_needs_six_positions():
    """Five positions (four others: one degree of freedom left to a circle) are not judged by
    the arc: a tie of spreads asks."""
    five = np.array([ROW[p] for p in ("dealer", "7", "6", "4", "2")], float)
    cv = PROPOSE._spreads(five)
    assert abs(cv[0] - cv[3]) < 0.01  # the dealer's and seat 4's spreads tie
    with pytest.raises(PROPOSE.DealerUnknown, match="about as well") as exc:
        PROPOSE.dealer_and_reason(five)
    assert "arc" not in str(exc.value)


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
