"""The still picture read again turned by 45 degrees (vision.recognition.turned)."""

from pathlib import Path

import numpy as np
import pytest

from vision.recognition.decode import TileRead
from vision.recognition.turned import TURN, agreeing, turn_back, turn_image, turned_look


def _read(face, polygon, state=None, conf=0.9):
    p = np.asarray(polygon, np.float32)
    return TileRead(face=face, state=state or ("face_up" if face else "unknown"),
                    confidence=conf, polygon=p,
                    xyxy=np.concatenate([p.min(0), p.max(0)]).astype(np.float32),
                    tile_confidence=conf)


def _turned(poly, m):
    return np.asarray(poly, float) @ m[:, :2].T + m[:, 2]


SQUARE = [[90, 40], [110, 40], [110, 60], [90, 60]]


def test_the_turned_canvas_holds_the_whole_picture_on_its_median_colour():
    img = np.full((100, 200, 3), (10, 20, 30), np.uint8)
    img[40:60, 90:110] = 255
    turned, m = turn_image(img)
    assert TURN == 45.0
    # ceil((200 + 100) x cos 45 deg) = ceil(212.13) on both sides
    assert turned.shape == (213, 213, 3) and turned.dtype == np.uint8
    assert turned[0, 0].tolist() == [10, 20, 30] and turned[-1, -1].tolist() == [10, 20, 30]
    # the picture's centre is the canvas's centre, and the white square turned about it
    np.testing.assert_allclose(_turned([[100, 50]], m), [[106.5, 106.5]], atol=1e-6)
    assert turned[106, 106].tolist() == [255, 255, 255]
    # a corner of the picture lands on the canvas's edge: nothing is cut off
    corners = _turned([[0, 0], [200, 0], [200, 100], [0, 100]], m)
    assert corners.min() >= -1e-6 and corners.max() <= 213 + 1e-6
    with pytest.raises(ValueError, match="empty picture"):
        turn_image(np.zeros((0, 5, 3), np.uint8))


def test_turning_back_keeps_identified_outlines_inside_the_picture_in_corner_order():
    img = np.zeros((100, 200, 3), np.uint8)
    _, m = turn_image(img)
    inside = _read("1-1", _turned(SQUARE, m))
    unknown = _read(None, _turned(SQUARE, m))
    # an outline on the canvas's corner, outside the picture once turned back
    outside = _read("2-2", [[1, 1], [11, 1], [11, 21], [1, 21]])
    kept, polys = turn_back([inside, unknown, outside], m, img.shape)
    assert kept == [inside]
    assert polys.shape == (1, 4, 2) and polys.dtype == np.float32
    np.testing.assert_allclose(polys[0], SQUARE, atol=1e-3)


def test_only_decodes_naming_the_turned_reading_s_face_are_kept():
    a, b, c = _read("1-1", SQUARE), _read("5-5", SQUARE), _read("3-3", SQUARE)
    again = [_read("1-1", SQUARE), _read("1-5", SQUARE), _read(None, SQUARE)]
    assert agreeing([a, b, c], again) == [again[0]]
    with pytest.raises(ValueError, match="2 decodes for 3 turned reads"):
        agreeing([a, b, c], again[:2])


def test_the_turned_look_adds_what_both_readings_name_and_nothing_else():
    img = np.zeros((100, 200, 3), np.uint8)
    _, m = turn_image(img)
    left = [[20, 30], [40, 30], [40, 70], [20, 70]]
    right = [[150, 30], [170, 30], [170, 70], [150, 70]]
    own = [_read(None, left)]  # the picture's own reading: one unknown tile
    seen = {}

    def read_still(pic):
        seen["shape"] = pic.shape
        return [_read("4-4", _turned(left, m)), _read("6-6", _turned(right, m))]

    def decode(polys, conf):
        seen["decoded"] = (polys.round(3).tolist(), conf.tolist())
        return [_read("4-4", polys[0]), _read("5-6", polys[1])]  # the second disagrees

    def fill(rs, add):
        return list(rs) + list(add)

    got = turned_look(own, img, read_still, decode, fill)
    assert seen["shape"] == (213, 213, 3)
    np.testing.assert_allclose(seen["decoded"][0], [left, right], atol=1e-3)
    assert seen["decoded"][1] == pytest.approx([0.9, 0.9])
    assert [r.face for r in got] == [None, "4-4"]
    np.testing.assert_allclose(got[1].polygon, left, atol=1e-3)
    # nothing agreed: the reading itself comes back
    assert turned_look(own, img, read_still, lambda q, c: [_read(None, x) for x in q],
                       fill)[0] is own[0]



REALDATA = Path(__file__).resolve().parents[2] / "shared" / "realdata"
MODELS = Path(__file__).resolve().parents[1] / "models"


@pytest.mark.slow
@pytest.mark.skipif(not (REALDATA / "labels.jsonl").is_file()
                    or not (MODELS / "tiles.onnx").is_file(),
                    reason="needs ../shared/realdata and the trained models")
def test_a_box_across_two_flush_tiles_stays_vetoed_on_the_turned_reading():
    """A composed table (scripts/eval_composed.py, fintech drawings, seed 0, scene 5) with two
    2-4 tiles laid flush: the tile model boxes the block across (halves 4 and 4: a valid 4-4
    neither tile is) and the second model's veto makes it unknown. The turned picture reads the
    same box as 4-4 again; the merged reading meets the veto again, so no face lies across the
    two tiles, and the turned reading's other tiles are added."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    try:
        import eval_composed as ec
        from eval_scenes import score_tiles
    finally:
        sys.path.pop(0)
    from vision.config import RecognitionConfig
    from vision.recognition.engine import ReadMode, RecognitionEngine

    folder = "chinese-render-fintech"
    tiles = ec.load_tiles(REALDATA, folder)
    img, truth = ec.compose(tiles, np.random.default_rng([0, 1, 5]))
    assert sorted(t["face"] for t in truth).count("2-4") == 2
    counts = {}
    for turn in (False, True):
        got = RecognitionEngine(RecognitionConfig(turn=turn)).read(img, ReadMode.STILL)
        rep = [r.to_dict() for r in got]
        counts[turn] = score_tiles({"image": "x", "seats": [{"tiles": truth}]}, rep)["counts"]
    assert counts[True]["wrong"] == 0 and counts[True]["wrong_extra"] == 0
    assert counts[True]["extra"] == 0
    assert counts[True]["right"] > counts[False]["right"]
