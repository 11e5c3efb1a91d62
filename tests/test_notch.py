"""The notch check (vision.recognition.notch) and its guard
(vision.recognition.flush.notched_boxes): where two tiles with rounded corners lie flush, the
block's edge dips at both ends of the seam, so a box cut across the block -- one half of each
tile -- has a dip at the middle of its outer long side, and a tile's own long side has none."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from scoring.errors import InputError
from vision.recognition.decode import TileRead
from vision.recognition.flush import notched_boxes
from vision.recognition.notch import MIN_DIP_PX, NOTCH, notch_cut, notched, side_dip

W = 40  # tile width, px; tiles are W x 2W


def _table(radius=0.15, felt=(40, 110, 40), tile=(8, 8, 8), offset=0, seed=0, angle=0.0):
    """Two black tiles W x 2W with corners rounded by ``radius`` x W, flush side by side
    (the second moved ``offset`` px along its length), turned ``angle`` degrees about the
    picture's centre, on felt, with spots and sensor noise. uint8 (400, 400, 3) and the
    corners of tile A, tile B and the two boxes across the block (float (4, 2) each)."""
    rng = np.random.default_rng(seed)
    big = 4  # drawn at 4x and shrunk: anti-aliased edges
    img = np.empty((400 * big, 400 * big, 3), np.uint8)
    img[:] = felt
    r = int(round(radius * W * big))

    def rounded(x0, y0):
        x1, y1 = x0 + W * big, y0 + 2 * W * big
        cv2.rectangle(img, (x0 + r, y0), (x1 - r, y1), tile, -1)
        cv2.rectangle(img, (x0, y0 + r), (x1, y1 - r), tile, -1)
        for cx, cy in ((x0 + r, y0 + r), (x1 - r, y0 + r), (x0 + r, y1 - r), (x1 - r, y1 - r)):
            cv2.circle(img, (cx, cy), r, tile, -1)

    ax, ay = 160 * big, 120 * big
    rounded(ax, ay)
    rounded(ax + W * big, ay + offset * big)
    for cx, cy in ((180, 140), (180, 180), (220, 150), (210, 190), (230, 190)):
        cv2.circle(img, (cx * big, (cy + (offset if cx > 200 else 0)) * big), 5 * big,
                   (235, 235, 235), -1)
    img = cv2.resize(img, (400, 400), interpolation=cv2.INTER_AREA).astype(np.float32)
    img = np.clip(img + rng.normal(0, 1.5, img.shape), 0, 255).astype(np.uint8)
    a = np.array([[160, 120], [200, 120], [200, 200], [160, 200]], np.float64)
    b = a + [W, offset]
    top = np.array([[160, 120], [240, 120], [240, 160], [160, 160]], np.float64)
    bottom = top + [0, 2 * W / 2]
    out = [a, b, top, bottom]
    if angle:
        M = cv2.getRotationMatrix2D((200, 200), angle, 1.0)
        img = cv2.warpAffine(img, M, (400, 400), flags=cv2.INTER_LINEAR,
                             borderMode=cv2.BORDER_REPLICATE)
        out = [q @ M[:, :2].T + M[:, 2] for q in out]
    return img, out


@pytest.mark.parametrize("angle", [0.0, 23.0, 90.0, 141.0])
def test_a_box_across_two_flush_tiles_is_notched_and_the_tiles_are_not(angle):
    img, (a, b, top, bottom) = _table(angle=angle)
    assert notched(img, top) and notched(img, bottom)
    assert not notched(img, a) and not notched(img, b)


def test_the_dip_is_the_corner_radius_deep():
    # corners rounded by 0.15 x 40 = 6 px: the seam's end is a cusp that deep, measured
    # (the median over a px either way) a little shallower
    img, (a, b, top, bottom) = _table(radius=0.15)
    dip = side_dip(img, top[0], top[1], top.mean(0), W)
    assert 3.0 <= dip <= 6.0
    # a tile's outer long side is straight: no dip to speak of
    assert side_dip(img, a[3], a[0], a.mean(0), W) < 0.5


def test_square_corners_show_no_notch_and_the_check_is_silent():
    img, (a, b, top, bottom) = _table(radius=0.0)
    assert not notched(img, top) and not notched(img, a)


def test_tiles_a_little_off_level_are_notched_and_far_off_level_unsure():
    img, (a, b, top, bottom) = _table(offset=4)
    assert notched(img, top) and not notched(img, a)
    # 8 px off level (a fifth of the width): the box's side is no straight line: unsure
    img, (a, b, top, bottom) = _table(offset=8)
    assert side_dip(img, top[0], top[1], top.mean(0), W) is None


def test_a_tile_the_colour_of_the_felt_or_a_side_against_another_tile_is_unsure():
    img, (a, b, top, bottom) = _table(felt=(10, 10, 10))
    assert not notched(img, top)
    assert side_dip(img, top[0], top[1], top.mean(0), W) is None
    # tile A's inner long side lies against tile B: no contrast there
    img, (a, b, top, bottom) = _table()
    assert side_dip(img, a[1], a[2], a.mean(0), W) is None


def test_an_outline_whose_surroundings_leave_the_picture_is_unsure():
    img, (a, b, top, bottom) = _table()
    assert side_dip(img, top[0] - [158, 0], top[1] - [158, 0], top.mean(0) - [158, 0], W) is None


def test_thresholds_and_bad_outlines():
    assert 0 < NOTCH < 0.1 and MIN_DIP_PX >= 1.0
    img, _ = _table()
    with pytest.raises(InputError):
        notched(img, np.zeros((3, 2)))
    with pytest.raises(InputError):
        notched(img, np.full((4, 2), np.nan))


def _read(face, poly):
    poly = np.asarray(poly, np.float32)
    st = "face_up" if face else "unknown"
    return TileRead(face, st, 0.9, poly, np.r_[poly.min(0), poly.max(0)].astype(np.float32),
                    reason=None if st == "face_up" else "test")


def test_a_notched_box_read_from_turned_alike_halves_loses_its_face():
    """Composed imilako tables: a flush 3-5 | 1-4 boxed across by both tile models read 4-5 and
    1-3; the notch at each box's outer long side makes both unknown, the faces kept as
    disputed; tiles, faces with a 2 or 6 half and unknown outlines are left alone."""
    img, (a, b, top, bottom) = _table()
    reads = [_read("4-5", top), _read("1-3", bottom), _read("2-6", top), _read(None, top)]
    out = notched_boxes(reads, lambda p: notched(img, p))
    assert [r.face for r in out] == [None, None, "2-6", None]
    assert out[0].evidence.disputed == "4-5" and out[1].evidence.disputed == "1-3"
    assert "corners meet" in out[0].reason
    tiles = [_read("3-5", a), _read("1-4", b)]
    assert [r.face for r in notched_boxes(tiles, lambda p: notched(img, p))] == ["3-5", "1-4"]


def test_rendered_flush_tiles_are_seldom_called_notched_and_boxes_across_often():
    # the project's renderer (table scenes, every style), outlines exact: a tile called
    # notched is a tile its guard makes unknown (yield, never a wrong face)
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    from eval_notch import crosswise_boxes
    from eval_seam import blocks

    tiles = across = n = 0
    for img, block, _, _, _, _ in blocks(6, 1_000_300, ["table"]):
        n += 2
        q = np.asarray(block, np.float64)
        first = np.array([q[0], (q[0] + q[1]) / 2, (q[2] + q[3]) / 2, q[3]])
        other = np.array([(q[0] + q[1]) / 2, q[1], q[2], (q[2] + q[3]) / 2])
        tiles += notched(img, first) + notched(img, other)
        across += sum(notched(img, c) for c in crosswise_boxes(q))
    assert n >= 50
    assert tiles <= 0.02 * n
    assert across >= 0.1 * n


@pytest.mark.parametrize("angle", [0.0, 37.0])
def test_notch_cut_names_the_seam_the_corners_show_whichever_corner_comes_first(angle):
    img, (a, b, top, bottom) = _table(angle=angle)
    # the block: tile A's corners and tile B's far side; cut 0 crosses sides 0-1 and 2-3
    block = np.array([a[0], b[1], b[2], a[3]])
    assert notch_cut(img, block) == 0
    assert notch_cut(img, np.roll(block, -1, 0)) == 1


def test_notch_cut_is_unsure_without_corners_or_with_a_side_against_another_tile():
    img, (a, b, top, bottom) = _table(radius=0.0)
    block = np.array([a[0], b[1], b[2], a[3]])
    assert notch_cut(img, block) is None
    # a third tile flush against the block's right side: that side cannot be seen straight
    img, (a, b, top, bottom) = _table()
    img[120:200, 241:281] = 8
    assert notch_cut(img, block) is None


REALDATA = __import__("pathlib").Path(__file__).resolve().parents[2] / "shared" / "realdata"


@pytest.mark.slow
@pytest.mark.skipif(not (REALDATA / "labels.jsonl").is_file(), reason="needs ../shared/realdata")
def test_composed_imilako_flush_hands_boxed_across_name_no_face(tmp_path):
    """The wrong-face path both tile models shared (``scripts/eval_composed.py --seed 1 --n 12``,
    imilako scenes 7 and 9): a flush 3-5 | 1-4 boxed across read 4-5 and 1-3, a 1-2 | 1-2 read
    1-1. Composed at run time from ../shared/realdata, read by the shipped models: no face on
    a box across two tiles, no wrong face."""
    import sys

    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "scripts"))
    from eval_composed import DEFAULT_FOLDERS, compose, load_tiles
    from eval_scenes import score_tiles

    from vision.recognition.identify import identify

    folder = "chinese-render-imilako"
    tiles = load_tiles(REALDATA, folder)
    paths, truths = [], []
    for i in (7, 9):
        img, truth = compose(tiles, np.random.default_rng([1, DEFAULT_FOLDERS.index(folder), i]))
        p = tmp_path / f"{i}.png"
        cv2.imwrite(str(p), img)
        paths.append(p)
        truths.append(truth)
    right = 0
    for truth, rep in zip(truths, identify(paths)):
        c = score_tiles({"image": "x", "seats": [{"tiles": truth}]}, rep["tiles"])["counts"]
        assert c["wrong"] == 0 and c["wrong_extra"] == 0
        right += c["right"]
    assert right >= 12  # of 24: the rest of each table is still read
