"""Tests for vision.io.overlay: label colours per result, tile labels, determinism, errors."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from scoring.errors import InputError
from scoring.hands import evaluate
from scoring.tiles import parse_tiles
from vision.geometry import obb_to_polygon
from vision.io.overlay import (DEALER_COLOUR, RESULT_COLOURS, TILE_COLOURS, _label_lines,
                            draw_round, label_boxes)

pytestmark = pytest.mark.timeout(60)


def _hand_name(a, b):
    return evaluate(*parse_tiles([a, b])).name


def _view(result="win", net="0.95"):
    seat_poly = [[900, 500], [1300, 500], [1300, 800], [900, 800]]
    dealer_poly = [[800, 100], [1200, 100], [1200, 350], [800, 350]]
    tiles = []
    faces = {"1": ["6-6", "1-1", "4-5", "2-3"], "dealer": ["1-3", None, "5-5", "2-2"]}
    for pos, x0, y0 in (("1", 950, 560), ("dealer", 850, 160)):
        for k, face in enumerate(faces[pos]):
            poly = obb_to_polygon(x0 + 30 + 70 * k, y0 + 60, 50, 100, 0.0).tolist()
            state = "face_up" if face else "unknown"
            tiles.append({"face": face, "state": state, "polygon": poly, "position": pos,
                          "confidence": 0.9})
    tiles.append({"face": None, "state": "face_down",
                  "polygon": obb_to_polygon(300, 900, 50, 100, 0.5).tolist(),
                  "position": None, "confidence": 0.8})
    return {
        "round_id": "r000001",
        "banker_position": "dealer",
        "layout": {"positions": {"1": seat_poly, "dealer": dealer_poly}},
        "positions": {
            "dealer": {"tiles": faces["dealer"], "high_hand": None, "low_hand": None},
            "1": {"tiles": faces["1"], "high": ["6-6", "1-1"], "low": ["4-5", "2-3"],
                  "high_hand": _hand_name("6-6", "1-1"), "low_hand": _hand_name("4-5", "2-3"),
                  "result": result, "net": net},
        },
        "tiles": tiles,
    }


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(1)
    return (rng.integers(40, 80, (1080, 1920, 3))).astype(np.uint8)


def _box_colour(img, box):
    """Most common colour in a label box (the background; text is a minority)."""
    x1, y1, x2, y2 = box
    px = img[y1:y2, x1:x2].reshape(-1, 3)
    vals, counts = np.unique(px, axis=0, return_counts=True)
    return tuple(int(v) for v in vals[counts.argmax()]), counts.max() / len(px)


@pytest.mark.parametrize("result", ["win", "lose", "push", "not_settled"])
def test_label_colour_follows_result(frame, result):
    view = _view(result, "-1" if result == "lose" else "0.95")
    img = draw_round(frame, view)
    box = label_boxes(frame.shape, view)["1"]
    colour, share = _box_colour(img, box)
    assert colour == RESULT_COLOURS[result]
    assert share > 0.5
    # before drawing that area was the noisy background
    assert _box_colour(frame, box)[1] < 0.05


@pytest.mark.parametrize("entry", [{"result": None, "net": None}, {}])
def test_seat_of_a_round_in_play_reads_in_play(frame, entry):
    """result None (or absent): the round is still in play -> IN PLAY, blue-grey, not the
    grey NOT SETTLED of a position the settled round left out."""
    view = _view()
    view["positions"]["1"].pop("result")
    view["positions"]["1"].pop("net")
    view["positions"]["1"].update(entry)
    img = draw_round(frame, view)
    colour, share = _box_colour(img, label_boxes(frame.shape, view)["1"])
    assert colour == RESULT_COLOURS["in_play"] != RESULT_COLOURS["not_settled"]
    assert share > 0.5
    lines, key = _label_lines("1", view["positions"]["1"], "dealer")
    assert key == "in_play" and lines[0] == "Seat 1: IN PLAY"
    b, g, r = RESULT_COLOURS["in_play"]
    assert b > r  # blue-grey
    # the legend lists IN PLAY
    assert (img[:500, :100] == RESULT_COLOURS["in_play"]).all(2).sum() > 50


def test_not_settled_keeps_its_label_and_reason():
    entry = {"result": "not_settled", "net": None, "reason": "unknown tile", "high_hand": None}
    lines, key = _label_lines("3", entry, "dealer")
    assert key == "not_settled"
    assert lines == ["Seat 3: NOT SETTLED", "unknown tile"]
    lines, key = _label_lines("3", {"result": "win", "net": "0.95"}, "dealer")
    assert (lines, key) == (["Seat 3: WIN +0.95"], "win")
    # the banker position is never IN PLAY / NOT SETTLED
    assert _label_lines("dealer", {"result": None}, "dealer") == (["Dealer"], "dealer")


def test_result_colours_are_distinct():
    cols = list(RESULT_COLOURS.values()) + [DEALER_COLOUR]
    assert len(set(cols)) == len(cols)
    assert RESULT_COLOURS["win"][1] > RESULT_COLOURS["win"][2]      # green > red
    assert RESULT_COLOURS["lose"][2] > RESULT_COLOURS["lose"][1]    # red > green


def test_dealer_label_and_label_placement(frame):
    view = _view()
    boxes = label_boxes(frame.shape, view)
    assert set(boxes) == {"1", "dealer"}
    x1, y1, x2, y2 = boxes["1"]
    assert y2 <= 500 and x1 == 900           # just above the seat outline, left aligned
    img = draw_round(frame, view)
    assert _box_colour(img, boxes["dealer"])[0] == DEALER_COLOUR


def test_label_text_lines_present(frame):
    # the label of a seat with two hands is three text lines tall; without hands one line
    view = _view()
    h3 = np.diff(np.array(label_boxes(frame.shape, view)["1"])[[1, 3]])[0]
    v2 = copy.deepcopy(view)
    v2["positions"]["1"]["high_hand"] = v2["positions"]["1"]["low_hand"] = None
    h1 = np.diff(np.array(label_boxes(frame.shape, v2)["1"])[[1, 3]])[0]
    assert h3 > 2.2 * (h1 - 10) and h3 > h1


def test_hand_names_come_from_scoring():
    assert _hand_name("6-6", "6-6") == "Teen pair"
    v = _view()
    assert v["positions"]["1"]["high_hand"] == _hand_name("6-6", "1-1")


def test_tiles_outlined_by_state(frame):
    view = _view()
    img = draw_round(frame, view, legend=False)
    # an unknown tile's outline (left edge midpoint) is magenta, a face-down one dark grey
    unknown = [t for t in view["tiles"] if t["state"] == "unknown"][0]
    p = np.asarray(unknown["polygon"])
    x = int(round(p[:, 0].min()))
    y = int(round(p[:, 1].mean()))
    assert tuple(int(v) for v in img[y, x]) == TILE_COLOURS["unknown"]
    up = view["tiles"][0]
    p = np.asarray(up["polygon"])
    assert tuple(int(v) for v in img[int(p[:, 1].mean()) + 30, int(round(p[:, 0].max()))]) \
        == TILE_COLOURS["face_up"]
    # the tile label "?" box is filled with the tile colour at the centre
    c = np.asarray(unknown["polygon"]).mean(0).round().astype(int)
    patch = img[c[1] - 12:c[1] + 8, c[0] - 10:c[0] + 10].reshape(-1, 3)
    assert (patch == TILE_COLOURS["unknown"]).all(1).mean() > 0.3


def test_drawing_is_deterministic_and_pure(frame):
    view = _view("push", "0")
    before = frame.copy()
    a = draw_round(frame, view)
    b = draw_round(frame, copy.deepcopy(view))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(frame, before)      # input not modified
    assert not np.array_equal(a, frame)


def test_legend_drawn_top_left(frame):
    view = _view()
    with_l = draw_round(frame, view)
    without = draw_round(frame, view, legend=False)
    diff = np.any(with_l != without, axis=2)
    ys, xs = np.nonzero(diff)
    assert xs.min() < 20 and ys.min() < 20 and xs.max() < 700
    # the legend holds a WIN swatch
    assert (with_l[:400, :100] == RESULT_COLOURS["win"]).all(2).sum() > 50


def test_position_without_geometry_goes_to_legend(frame):
    view = _view()
    view["positions"]["5"] = {"result": "lose", "net": "-2"}
    assert "5" not in label_boxes(frame.shape, view)
    a = draw_round(frame, view)
    view2 = _view()
    b = draw_round(frame, view2)
    assert (a[:500, :100] == RESULT_COLOURS["lose"]).all(2).sum() > \
        (b[:500, :100] == RESULT_COLOURS["lose"]).all(2).sum()


def test_errors():
    f = np.zeros((100, 100, 3), np.uint8)
    with pytest.raises(InputError, match="frame"):
        draw_round(np.zeros((100, 100), np.uint8), {})
    with pytest.raises(InputError, match="result"):
        draw_round(f, {"positions": {"1": {"result": "maybe"}},
                       "tiles": [{"polygon": [[1, 1], [5, 1], [5, 9], [1, 9]], "position": "1"}]})
    with pytest.raises(InputError, match="tile 0 polygon"):
        draw_round(f, {"tiles": [{"polygon": [[1, 1]]}]})


def test_small_frame_and_empty_view():
    f = np.full((240, 320, 3), 50, np.uint8)
    out = draw_round(f, {})
    assert out.shape == f.shape and out.dtype == np.uint8
