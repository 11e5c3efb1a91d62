"""The second tile model fills in the tiles the first leaves unread (vision.recognition.fill)."""

from __future__ import annotations

import numpy as np
import pytest

from vision.recognition.decode import TileRead
from vision.recognition.fill import fill_from_second_model
from vision.recognition.models import model_version, second_model_file

MODELS = __import__("pathlib").Path(__file__).resolve().parents[1] / "models"


def _read(face, x, y, w=40, h=80, reason=None, state=None):
    poly = np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], np.float32)
    st = state or ("face_up" if face else "unknown")
    return TileRead(face, st, 0.9, poly, np.array([x, y, x + w, y + h], np.float32),
                    reason=reason)


def _faces(reads):
    return sorted((int(r.xyxy[0]), r.face) for r in reads)


def test_a_tile_the_first_model_missed_is_added():
    first = [_read("1-5", 100, 100), _read("2-2", 141, 100)]
    second = [_read("1-5", 101, 101), _read("3-6", 300, 100)]   # 3-6: no first-model outline
    out = fill_from_second_model(first, second, first)
    assert _faces(out) == [(100, "1-5"), (141, "2-2"), (300, "3-6")]
    # the first model's own read of 1-5 is kept (not the second model's outline)
    assert out[0] is first[0]


def test_an_unknown_box_is_replaced_by_the_identified_tile_over_it():
    # the first model saw only a box over most of the tile and read it unknown
    first = [_read("1-5", 100, 100), _read(None, 300, 105, w=40, h=70, reason="read B: ...")]
    out = fill_from_second_model(first, [_read("3-6", 300, 100)], first)
    assert _faces(out) == [(100, "1-5"), (300, "3-6")]


def test_never_on_or_across_an_identified_tile():
    first = [_read("1-5", 100, 100), _read("2-2", 141, 100)]
    # a different face on the same outline, and a box across the two touching tiles
    second = [_read("4-4", 100, 100), _read("5-5", 120, 100)]
    assert fill_from_second_model(first, second, first) == first


def test_a_disagreement_of_the_first_models_sizes_stands():
    from vision.schema import UnreadReason

    unread = _read("2-5", 300, 100).as_unknown(UnreadReason.SIZES_DISAGREE, "2-5 / 2-6")
    assert unread.reason == "input sizes disagree: 2-5 / 2-6"
    first = [_read("1-5", 100, 100), unread]
    out = fill_from_second_model(first, [_read("2-5", 301, 100)], first)
    assert out == first and out[1].face is None
    # the code decides, not the words: the same text without the code is another unread tile
    worded = _read(None, 300, 100, reason="input sizes disagree: 2-5 / 2-6")
    out = fill_from_second_model([first[0], worded], [_read("2-5", 301, 100)], [first[0], worded])
    assert sorted(r.face or "" for r in out) == ["1-5", "2-5"]


def test_a_face_one_size_of_the_first_model_named_differently_is_not_added():
    fused = [_read("1-5", 100, 100), _read(None, 300, 100, reason="overlapping outlines")]
    per_size = fused + [_read("2-6", 302, 100)]   # one size read 2-6 there
    assert fill_from_second_model(fused, [_read("2-5", 300, 100)], per_size) == fused
    # the same face as that size: added
    out = fill_from_second_model(fused, [_read("2-6", 300, 100)], per_size)
    assert _faces(out) == [(100, "1-5"), (300, "2-6")]


def test_unknown_reads_of_the_second_model_add_nothing():
    first = [_read("1-5", 100, 100)]
    assert fill_from_second_model(first, [_read(None, 300, 100)], first) == first
    assert fill_from_second_model(first, [], first) == first


def test_the_second_model_is_optional_and_named_in_the_model_version(tmp_path):
    assert second_model_file(tmp_path).name == "tiles_touch.onnx"
    assert second_model_file(tmp_path, "ultralytics").name == "tiles_touch.pt"
    (tmp_path / "tiles.onnx").write_bytes(b"a")
    (tmp_path / "pips.onnx").write_bytes(b"b")
    assert "touch" not in model_version(tmp_path)
    (tmp_path / "tiles_touch.onnx").write_bytes(b"c")
    assert model_version(tmp_path).split("+")[2].startswith("touch-")


@pytest.mark.slow
@pytest.mark.skipif(not second_model_file(MODELS).is_file(), reason="no second tile model")
def test_a_held_out_table_with_pale_touching_tiles_reads_more_and_none_wrong():
    """Held-out rendered table 1000005 (pale tiles touching flush): the first model draws
    boxes across touching tiles there; the second model outlines some of them, and no face is
    wrong with or without it."""
    from vision.pipeline import Pipeline
    from vision.synth.render import render_table

    scene = render_table(1_000_005)
    truth = [t for t in scene.tiles if t.labelled and t.state == "face_up"]

    def score(pipe):
        reads = list(pipe.engine.read(scene.image, "still"))
        right = wrong = 0
        for t in truth:  # matched as scripts/eval_tables.py does: box IoU >= 0.5
            b = np.r_[t.polygon.min(0), t.polygon.max(0)]
            for r in reads:
                x1, y1 = np.maximum(b[:2], r.xyxy[:2])
                x2, y2 = np.minimum(b[2:], r.xyxy[2:])
                inter = max(x2 - x1, 0) * max(y2 - y1, 0)
                union = np.prod(b[2:] - b[:2]) + np.prod(r.xyxy[2:] - r.xyxy[:2]) - inter
                if r.face and inter / union >= 0.5:
                    right += r.face == t.face
                    wrong += r.face != t.face
        return right, wrong

    # the second model's own share, without the outline refit (vision.recognition.refine) and
    # the turned reading (vision.recognition.turned), which recover the same tiles from the
    # picture when the second model is off
    with_second = Pipeline(n_stable=1, draw=False, refine=False, turn=False)
    without = Pipeline(n_stable=1, draw=False, second_model=False, refine=False, turn=False)
    assert with_second.engine.second_detector is not None and without.engine.second_detector is None
    (r1, w1), (r0, w0) = score(with_second), score(without)
    assert w1 == 0 and w0 == 0
    # the second model adds tiles (30 vs 27 before vision.recognition.flush; with it 28 vs 26: a 1-3 and
    # a 1-4 beside an unknown neighbour are unknown in both, the square could be cut across)
    assert r1 >= r0 + 2
    # everything on (the product's default): no fewer tiles, none wrong
    (r2, w2) = score(Pipeline(n_stable=1, draw=False))
    assert w2 == 0 and r2 >= r1


def test_a_face_on_an_outline_cut_short_is_not_added():
    # the first model outlined the whole tile (80 px) and counted 10 spots without a face;
    # the second model's 50 px outline of it reads 2-5 (7 spots): cut after a spot row
    whole = TileRead(None, "unknown", 0.9, np.array([[300, 100], [340, 100], [340, 180],
                                                     [300, 180]], np.float32),
                     np.array([300, 100, 340, 180], np.float32),
                     reads={"A": {"red": 0, "white": 10, "candidates": []}})
    first = [_read("1-5", 100, 100), whole]
    short = _read("2-5", 300, 100, h=50)
    assert fill_from_second_model(first, [short], first) == first
    # the same outline where the first model counted no more spots than 2-5 has: added
    whole.reads["A"]["white"] = 7
    assert _faces(fill_from_second_model(first, [short], first))[-1] == (300, "2-5")


def test_a_tile_the_second_model_outlines_across_becomes_unknown():
    # a 1-4 and a 4-4 lying flush side by side, level: a 80 x 80 block. The first model cut it
    # crosswise (each box one half of each tile, 80 wide and 40 tall) and read 1-4 and 4-4;
    # the second model cut it lengthwise (the tiles as laid). Where the models disagree, the
    # crosswise reads are not trusted -- and whichever is right, no face is claimed.
    first = [_read("1-4", 100, 100, w=80, h=40), _read("4-4", 100, 140, w=80, h=40),
             _read("2-2", 300, 100)]
    second = [_read("1-4", 100, 100, w=40, h=80), _read("4-4", 140, 100, w=40, h=80),
              _read("2-2", 301, 101)]
    from vision.recognition.fill import disputed_outlines

    out = disputed_outlines(first, second)
    assert [r.face for r in out] == [None, None, "2-2"]     # the 2-2: the same tile, kept
    assert out[2] is first[2]
    assert "outlines this place otherwise" in out[0].reason and out[0].state == "unknown"
    # an unknown outline of the second model says nothing; agreeing outlines change nothing
    assert disputed_outlines(first, [_read(None, 100, 100, w=40, h=80)]) == first
    assert disputed_outlines(first[2:], second) == first[2:]


def test_a_disputed_tile_keeps_the_face_it_read_for_the_two_cut_settlement():
    # the second model boxes across a flush 2-6 | 1-4: both unknown -- a 2 or a 6 half does
    # not prove the cut (on scenes_flush a box across 3-3 | 1-6 read 1-2 with its shapes) --
    # each with the face it read kept for vision.table.open_tile.block_fills, never reported
    from vision.recognition.fill import disputed_outlines

    first = [_read("2-6", 100, 100, w=40, h=80), _read("1-4", 140, 100, w=40, h=80)]
    second = [_read("1-5", 100, 100, w=80, h=40)]
    out = disputed_outlines(first, second)
    assert [r.face for r in out] == [None, None]
    assert [r.evidence.disputed for r in out] == ["2-6", "1-4"]
    assert all(r.state == "unknown" for r in out)
