"""The second look at a still image's unknown tiles (vision.recognition.zoom, Pipeline.second_look)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from vision.recognition.decode import TileRead
from vision.recognition.zoom import inside_window, tile_sized, zoom_windows


def _read(face, x, y, w=40, h=80, state=None):
    poly = np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], np.float32)
    st = state or ("face_up" if face else "unknown")
    return TileRead(face, st, 0.9, poly, np.array([x, y, x + w, y + h], np.float32))


def test_windows_are_sized_by_the_identified_tiles_around_the_unknown_one():
    # tiles 80 px long; the unknown outline spans a whole hand (160 px): windows use 80 px
    known = [_read("1-5", 100 + 45 * i, 100) for i in range(6)]
    unknown = _read(None, 500, 300, w=80, h=160)
    wins = zoom_windows(known + [unknown], (1080, 1920, 3), factors=(2.0, 4.5))
    assert wins == [[(460, 300, 620, 460)], [(360, 200, 720, 560)]]
    # no unknown tile: no window; a window above max_side: skipped
    assert zoom_windows(known, (1080, 1920, 3), factors=(2.0,)) == [[]]
    assert zoom_windows(known + [unknown], (1080, 1920, 3), factors=(2.0,), max_side=100) == [[]]
    # a picture full of unknown outlines: only the max_tiles the tile model is surest of
    many = [replace(_read(None, 300 + 50 * i, 600), tile_confidence=0.1 + 0.01 * i)
            for i in range(20)]
    (wins,) = zoom_windows(known + many, (1080, 1920, 3), factors=(2.0,), max_tiles=3)
    assert [x0 for x0, *_ in wins] == [1190, 1140, 1090]  # the last three (most confident)


def test_windows_are_clipped_to_the_image():
    known = [_read("1-5", 10, 10)]
    unknown = _read(None, 0, 0)
    (win,), = zoom_windows([unknown] + known, (1080, 1920, 3), factors=(3.0,))
    assert win[:2] == (0, 0) and win[2] == 140 and win[3] == 160


def test_outlines_cut_by_a_window_edge_are_not_whole_tiles():
    polys = np.array([[[10, 10], [50, 10], [50, 90], [10, 90]],        # whole, inside
                      [[90, 10], [130, 10], [130, 90], [90, 90]],      # crosses the right edge
                      [[0, 10], [40, 10], [40, 90], [0, 90]]], np.float32)  # on the image border
    ok = inside_window(polys, (0, 0, 100, 100), (1080, 1920))
    assert ok.tolist() == [True, False, True]
    # the same outline against a window whose left side is a cut edge (not the image border)
    moved = polys[2:] + np.float32([200, 0])
    assert inside_window(moved, (200, 0, 300, 100), (1080, 1920)).tolist() == [False]


def test_a_box_over_part_of_a_tile_is_not_tile_sized():
    ref = [_read("1-5", 100 + 45 * i, 100) for i in range(6)]   # 80 px long
    whole = _read("2-2", 500, 100)                                # 80 px: a tile
    part = _read("1-1", 500, 100, w=20, h=40)                     # 40 px: part of one
    big = _read("4-4", 500, 100, w=60, h=120)                     # 120 px: two tiles' worth
    assert tile_sized([whole, part, big], ref) == [True, False, False]
    assert tile_sized([whole], []) == [False]                     # nothing to compare with


SCENES = Path(__file__).resolve().parents[1].parent / "shared" / "scenes"


@pytest.mark.skipif(not (SCENES / "scene_04.jpg").is_file(), reason="needs ../shared/scenes")
def test_second_look_reads_a_tile_the_whole_image_readings_leave_unknown():
    """scene_04, seat 7: a 2-5 touching its hand's other tile (a 2-2) is outlined across both
    at the whole-image sizes (unknown); the second look reads it 2-5. No face it adds is
    wrong."""
    import cv2

    from vision.pipeline import Pipeline
    from vision.recognition.scales import polygon_iou_matrix

    rec = next(json.loads(line) for line in (SCENES / "truth.jsonl").read_text().splitlines()
               if json.loads(line)["image"] == "scene_04.jpg")
    truth = [t for s in rec["seats"] for t in s["tiles"] if not t["occluded"]]
    polys = np.array([t["polygon"] for t in truth], np.float32)
    img = cv2.imread(str(SCENES / "scene_04.jpg"))

    def faces(reads):
        out = {}
        for r in reads:
            iou = polygon_iou_matrix(r.polygon[None], polys)[0]
            k = int(np.argmax(iou))
            if iou[k] >= 0.5 and r.face:
                assert r.face == truth[k]["face"], (r.face, truth[k]["face"])
                out[k] = r.face
        return out

    two = next(k for k, t in enumerate(truth) if t["face"] == "2-5" and
               next(s for s in rec["seats"] if t in s["tiles"])["seat"] == 7)
    zoomed = Pipeline(n_stable=1, draw=False)
    plain = Pipeline(n_stable=1, draw=False, zoom=False)
    assert zoomed.engine.zoom and not plain.engine.zoom
    with_look = faces(list(zoomed.engine.read(img, "still")))
    without = faces(list(plain.engine.read(img, "still")))
    assert with_look.get(two) == "2-5"
    assert set(without) <= set(with_look)


def test_a_second_look_face_on_an_outline_cut_short_must_show_every_spot_seen():
    """held-out table 1000141: a 3-4 outlined without one spot of its 3 read 2-4 at the
    second look, where the whole-image readings counted seven spots on a longer outline."""
    from vision.recognition.zoom import cut_short_faces

    from helpers.outline_reads import outline_read as read

    whole = [[read(None, 95, 7)], [read(None, 93, 6)]]
    cut = read("2-4", 72)                       # 6 spots on 76 % of the tile's length
    assert cut_short_faces([cut], whole, [[cut]])[0].face is None
    full = read("2-4", 92)                       # the whole tile: the extra spot was noise
    assert cut_short_faces([full], whole, [[full]])[0].face == "2-4"
    seven = read("3-4", 72)                      # as many spots as seen: kept
    assert cut_short_faces([seven], whole, [[seven]])[0].face == "3-4"
    # a whole-image reading names the face too: the second look only agrees
    agree = [[read(None, 95, 7)], [read("2-4", 93, 6)]]
    assert cut_short_faces([cut], agree, [[cut]])[0].face == "2-4"
    # one input size alone names the face on the short outline: the same rule (held-out
    # table 1000141, a 5-5 cut after its first 5 read 2-5 at 832 only)
    short = read("2-5", 60, 7)
    sizes = [[short], [read(None, 93, 11)], [read(None, 95, 10)]]
    assert cut_short_faces([short], sizes)[0].face is None
    assert "one input size reads 2-5" in cut_short_faces([short], sizes)[0].reason
    # ... but another size names it too, or the outline is as long as the others: kept
    named = [[short], [read("2-5", 62, 7)], [read(None, 95, 10)]]
    assert cut_short_faces([short], named)[0].face == "2-5"
    long_enough = read("2-5", 90, 7)
    assert cut_short_faces([long_enough], [[long_enough], [read(None, 93, 11)]])[0].face == "2-5"


def test_spots_a_longer_outline_counts_on_another_identified_tile_are_that_tiles():
    """../shared/scenes_flush-like: a 1-2 laid across the end of a 1-6; the whole-image box of
    the 1-2 reached over the 1-6's end and counted 7 spots, the second look read 1-2 on the
    tile's own outline. The spots on the identified 1-6 are the 1-6's."""
    from vision.detections import PIP_WHITE, Detections
    from vision.geometry import CROP_H, CROP_W
    from vision.recognition.zoom import cut_short_faces, own_spots

    def read(face, y0, length, spot_ys=()):
        poly = np.array([[960, y0], [1010, y0], [1010, y0 + length], [960, y0 + length]],
                        np.float32)
        r = TileRead(face, "face_up" if face else "unknown", 0.9, poly,
                     np.r_[poly.min(0), poly.max(0)])
        # image y -> crop y (the crop is the outline enlarged by 8 % a side, 192 px long)
        cy = [((y - y0) / length - 0.5) / 1.16 * CROP_H + CROP_H / 2 for y in spot_ys]
        xyxy = np.array([[CROP_W / 2 - 6, c - 6, CROP_W / 2 + 6, c + 6] for c in cy],
                        np.float32).reshape(-1, 4)
        n = len(cy)
        r.pips = Detections(xyxy, np.full(n, 0.9, np.float32), np.full(n, PIP_WHITE, np.int64))
        r.reads = {"A": {"red": 0, "white": n, "candidates": []}}
        return r

    short = read("1-2", 880, 100, (900, 950, 960))      # the tile's own outline, 3 spots
    long_box = read(None, 880, 127, (900, 950, 960, 992, 995, 998, 1001))  # 4 on the 1-6
    neighbour = read("1-6", 980, 100)                    # identified, across the 1-2's end
    assert own_spots(long_box, []) == 7
    assert own_spots(long_box, [neighbour.polygon]) == 3
    # a spot at the very edge of the other outline (within its jitter) may be this tile's
    edge = read(None, 880, 127, (900, 950, 960, 983))
    assert own_spots(edge, [neighbour.polygon]) == 4
    # without the neighbour the rule holds: 7 spots seen, the short outline reads 3
    assert cut_short_faces([short], [[long_box]], [[short]])[0].face is None
    # with it identified there, what the long box counted on it is the 1-6's
    got = cut_short_faces([short, neighbour], [[long_box]], [[short]])
    assert got[0].face == "1-2" and got[1].face == "1-6"


def _tile(face, poly):
    p = np.asarray(poly, np.float32)
    return TileRead(face, "face_up", 0.9, p, np.r_[p.min(0), p.max(0)])


def _rect(cx, cy, w, h):
    return [[cx - w / 2, cy - h / 2], [cx + w / 2, cy - h / 2], [cx + w / 2, cy + h / 2],
            [cx - w / 2, cy + h / 2]]


def test_long_axis_is_the_direction_of_the_long_sides():
    from vision.geometry import long_axis

    assert long_axis(np.array(_rect(0, 0, 80, 25))) == pytest.approx(0.0)
    assert long_axis(np.array(_rect(0, 0, 25, 80))) == pytest.approx(90.0)
    # a tile turned 30 degrees: its long sides run at 30 (any start corner)
    a = np.radians(30)
    rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    poly = np.array(_rect(0, 0, 80, 25)) @ rot.T
    assert long_axis(poly) == pytest.approx(30.0)
    assert long_axis(np.roll(poly, 1, 0)) == pytest.approx(30.0)


def test_local_shape_along_an_axis_takes_the_neighbours_lying_that_way():
    from vision.recognition.zoom import PARALLEL_DEG, PARALLEL_MIN, local_shape

    assert (PARALLEL_DEG, PARALLEL_MIN) == (20.0, 2)
    # a camera at a slant: two tiles lying up the picture 25 x 80 (aspect 3.2) beside the
    # point, four lying across it 65 x 28 (aspect 2.32) a little further
    known = [_tile("1-6", _rect(100, 100, 25, 80)), _tile("1-2", _rect(126, 100, 25, 80))]
    known += [_tile("2-2", _rect(100 + 70 * i, 200, 65, 28)) for i in range(4)]
    length, aspect = local_shape(np.array([60.0, 100.0]), known)
    assert (length, round(aspect, 2)) == (65.0, 2.32)  # the median of all six
    length, aspect = local_shape(np.array([60.0, 100.0]), known, along=88.0)
    assert (length, aspect) == (80.0, 3.2)  # the two lying up the picture
    length, aspect = local_shape(np.array([60.0, 100.0]), known, along=5.0)
    assert (length, round(aspect, 2)) == (65.0, 2.32)  # the four lying across
    # fewer than PARALLEL_MIN lying that way: all six count
    assert local_shape(np.array([60.0, 100.0]), known, along=45.0)[0] == 65.0


def test_local_shape_within_reach_takes_the_tiles_beside_the_place():
    """A camera at a slant draws the near side of the table larger: with ``reach`` only the
    nearest identified tiles count -- those at most ``reach`` times as far as the nearest one,
    or ``reach`` of its lengths -- not tiles across the table (a banker's block of tiles 114 px
    long judged by far tiles' 78 px could not be cut into tiles of its own size)."""
    from vision.recognition.zoom import NEAR_REACH, local_shape

    assert NEAR_REACH == 2.0
    # the banker's identified 6-6 (100 px, lying up the picture) 150 px above the place, and
    # five tiles of 78 px 380-500 px away across the table, three lying up the picture too
    known = [_tile("6-6", _rect(300, 450, 48, 100))]
    known += [_tile("3-3", _rect(x, 150, 36, 78)) for x in (120, 300, 480)]
    known += [_tile("4-5", _rect(x, 220, 78, 36)) for x in (-60, 660)]
    centre = np.array([300.0, 600.0])
    assert local_shape(centre, known)[0] == 78.0
    assert local_shape(centre, known, along=90.0)[0] == 78.0  # the 3-3s outvote it
    length, aspect = local_shape(centre, known, along=90.0, reach=NEAR_REACH)
    assert (length, round(aspect, 2)) == (100.0, 2.08)  # the 6-6 alone is within reach
    # between the 6-6 (120 px away) and the 3-3s: the 3-3 180 px away is within 2 x 120 px,
    # the other two (255 px) are not
    length, _ = local_shape(np.array([300.0, 330.0]), known, along=90.0, reach=NEAR_REACH)
    assert length == 89.0
