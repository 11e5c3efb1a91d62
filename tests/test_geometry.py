"""Tests for vision.geometry: polygon order, expansion, rectification, OBB conversion."""

from __future__ import annotations

import itertools
import math

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoring.errors import InputError
from vision.geometry import (CROP_H, CROP_MARGIN, CROP_W, crop_corners, expand_polygon,
                             obb_to_polygon, obb_to_polygons, order_polygon, polygon_to_xyxy,
                             rectify)


def test_constants():
    assert (CROP_W, CROP_H, CROP_MARGIN) == (96, 192, 0.08)


def _side_lengths(p):
    return np.linalg.norm(np.roll(p, -1, 0) - p, axis=1)


def test_order_polygon_upright_rectangle_every_input_order():
    # a 40 wide x 100 tall rectangle: short sides are top and bottom
    rect = np.array([[10, 20], [50, 20], [50, 120], [10, 120]], float)
    for perm in itertools.permutations(range(4)):
        out = order_polygon(rect[list(perm)])
        assert out.dtype == np.float32 and out.shape == (4, 2)
        np.testing.assert_array_equal(out, rect.astype(np.float32))


def test_order_polygon_lying_rectangle_starts_short_side():
    # 100 wide x 40 tall: short sides are left and right; clockwise on screen from the upper
    # end of ... the short side whose midpoint is higher -- both have the same y, so smaller x
    rect = np.array([[0, 0], [100, 0], [100, 40], [0, 40]], float)
    out = order_polygon(rect[::-1])
    np.testing.assert_array_equal(out, np.float32([[0, 40], [0, 0], [100, 0], [100, 40]]))
    s = _side_lengths(out)
    assert s[0] == 40 and s[1] == 100


def test_order_polygon_is_clockwise_on_screen():
    poly = obb_to_polygon(300, 200, 60, 120, 0.7)
    out = order_polygon(poly[[2, 0, 3, 1]])
    # shoelace with y down: clockwise on screen gives positive signed area
    x, y = out[:, 0].astype(float), out[:, 1].astype(float)
    area = 0.5 * np.sum(x * np.roll(y, -1) - np.roll(x, -1) * y)
    assert area == pytest.approx(60 * 120, rel=1e-4)
    s = _side_lengths(out)
    assert s[0] == pytest.approx(60, abs=1e-3) and s[1] == pytest.approx(120, abs=1e-3)


def test_order_polygon_near_square_is_valid_and_deterministic():
    sq = np.array([[0, 0], [50, 0], [50, 50.0000001], [0, 50.0000001]])
    out1 = order_polygon(sq)
    out2 = order_polygon(sq[[3, 1, 0, 2]])
    np.testing.assert_array_equal(out1, out2)
    s = _side_lengths(out1)
    assert s[0] <= s[1] + 1e-4


@settings(max_examples=200, deadline=None)
@given(cx=st.floats(0, 2000), cy=st.floats(0, 1200), w=st.floats(5, 200),
       ratio=st.floats(1.05, 3.0), ang=st.floats(-math.pi, math.pi),
       perm=st.permutations(range(4)))
def test_order_polygon_property(cx, cy, w, ratio, ang, perm):
    poly = obb_to_polygon(cx, cy, w, w * ratio, ang)
    out = order_polygon(poly[list(perm)])
    s = _side_lengths(out.astype(float))
    assert s[0] < s[1] and s[2] < s[3]
    # same set of corners
    assert sorted(map(tuple, np.round(out, 2))) == sorted(map(tuple, np.round(poly, 2)))
    # first short side is the upper one (its midpoint y not below the other's)
    assert (out[0, 1] + out[1, 1]) <= (out[2, 1] + out[3, 1]) + 1e-3


def test_order_polygon_bad_input():
    with pytest.raises(InputError, match="shape"):
        order_polygon([[0, 0], [1, 1], [2, 2]])
    with pytest.raises(InputError, match="non-finite"):
        order_polygon([[0, 0], [1, np.nan], [2, 2], [3, 3]])


def test_expand_polygon_rectangle():
    rect = np.array([[0, 0], [100, 0], [100, 200], [0, 200]], float)
    out = expand_polygon(rect, 0.1)
    np.testing.assert_allclose(out, [[-10, -20], [110, -20], [110, 220], [-10, 220]], atol=1e-4)
    np.testing.assert_allclose(expand_polygon(rect, 0.0), rect)
    with pytest.raises(InputError, match="margin"):
        expand_polygon(rect, -0.1)


def test_rectify_maps_rectangle_corners_to_crop_corners():
    img = np.zeros((400, 600, 3), np.uint8)
    rect = np.array([[100, 50], [160, 50], [160, 170], [100, 170]], float)  # 60 x 120
    crop, M = rectify(img, rect, margin=0.0)
    assert crop.shape == (CROP_H, CROP_W, 3) and crop.dtype == np.uint8
    assert M.shape == (3, 3) and M.dtype == np.float64
    mapped = cv2.perspectiveTransform(rect[None].astype(np.float64), M)[0]
    np.testing.assert_allclose(mapped, crop_corners(), atol=0.5)


def test_rectify_with_margin_maps_tile_inside_border():
    img = np.zeros((400, 600, 3), np.uint8)
    rect = np.array([[100, 50], [160, 50], [160, 170], [100, 170]], float)
    crop, M = rectify(img, rect)  # default margin 0.08
    mapped = cv2.perspectiveTransform(rect[None].astype(np.float64), M)[0]
    bx = CROP_MARGIN * CROP_W / (1 + 2 * CROP_MARGIN)   # 6.62 px
    by = CROP_MARGIN * CROP_H / (1 + 2 * CROP_MARGIN)   # 13.24 px
    np.testing.assert_allclose(
        mapped, [[bx, by], [CROP_W - bx, by], [CROP_W - bx, CROP_H - by], [bx, CROP_H - by]],
        atol=0.5)


def test_rectify_content_is_upright_for_a_rotated_tile():
    # draw a lying tile (long axis horizontal), blue on its left half, red on its right half
    img = np.full((300, 400, 3), 30, np.uint8)
    poly = obb_to_polygon(200, 150, 160, 80, 0.0)  # 160 wide x 80 tall
    cv2.fillConvexPoly(img, np.int32([[120, 110], [200, 110], [200, 190], [120, 190]]),
                       (255, 0, 0))
    cv2.fillConvexPoly(img, np.int32([[200, 110], [280, 110], [280, 190], [200, 190]]),
                       (0, 0, 255))
    crop, _ = rectify(img, poly, margin=0.0)
    # long axis vertical: the crop's top and bottom halves each hold one colour
    top, bottom = crop[10:CROP_H // 2 - 10], crop[CROP_H // 2 + 10:-10]
    colours = {tuple(int(v) for v in np.median(top.reshape(-1, 3), 0)),
               tuple(int(v) for v in np.median(bottom.reshape(-1, 3), 0))}
    assert colours == {(255, 0, 0), (0, 0, 255)}


def test_rectify_inverse_maps_crop_back():
    img = np.zeros((500, 500, 3), np.uint8)
    poly = obb_to_polygon(250, 250, 70, 140, 0.3)
    _, M = rectify(img, poly)
    centre = cv2.perspectiveTransform(np.float64([[[CROP_W / 2, CROP_H / 2]]]),
                                      np.linalg.inv(M))[0, 0]
    np.testing.assert_allclose(centre, [250, 250], atol=1e-3)


def test_rectify_bad_image():
    with pytest.raises(InputError, match="image"):
        rectify(np.zeros((0, 0, 3), np.uint8), [[0, 0], [1, 0], [1, 2], [0, 2]])


def test_obb_to_polygon_matches_ultralytics_convention():
    p = obb_to_polygon(10, 20, 4, 2, 0.0)
    np.testing.assert_allclose(p, [[12, 21], [12, 19], [8, 19], [8, 21]])
    p = obb_to_polygon(0, 0, 2, 4, math.pi / 2)
    np.testing.assert_allclose(p, [[-2, 1], [2, 1], [2, -1], [-2, -1]], atol=1e-6)


def test_obb_to_polygons_vectorised():
    boxes = np.array([[10, 20, 4, 2, 0.0], [0, 0, 2, 4, math.pi / 2]])
    out = obb_to_polygons(boxes)
    assert out.shape == (2, 4, 2) and out.dtype == np.float32
    np.testing.assert_allclose(out[1], obb_to_polygon(*boxes[1]))
    assert obb_to_polygons(np.zeros((0, 5))).shape == (0, 4, 2)


def test_polygon_to_xyxy():
    p = obb_to_polygons([[10, 20, 4, 2, 0.0], [0, 0, 2, 4, math.pi / 2]])
    np.testing.assert_allclose(polygon_to_xyxy(p), [[8, 19, 12, 21], [-2, -1, 2, 1]], atol=1e-6)
    np.testing.assert_allclose(polygon_to_xyxy(p[0]), [8, 19, 12, 21])


def test_side_pairs_of_a_rectangle_any_start():
    from vision.geometry import side_pairs

    r = np.array([[0, 0], [40, 0], [40, 100], [0, 100]], np.float32)
    assert side_pairs(r) == (40.0, 100.0)
    assert side_pairs(np.roll(r, 1, 0)) == (100.0, 40.0)


def test_crop_to_image_inverts_rectify():
    """A point drawn on the image lands in the crop where rectify puts it, and crop_to_image
    maps it back (within 0.01 px)."""
    from vision.geometry import crop_to_image, rectify

    img = np.zeros((300, 400, 3), np.uint8)
    poly = np.array([[100, 50], [160, 70], [120, 230], [60, 210]], np.float32)  # tilted tile
    pt = np.array([[110.0, 140.0]])
    _, M = rectify(img, poly)
    in_crop = cv2.perspectiveTransform(pt.reshape(-1, 1, 2), M).reshape(-1, 2)
    back = crop_to_image(in_crop, poly)
    assert back.shape == (1, 2) and np.abs(back - pt).max() < 0.01
    assert crop_to_image(np.zeros((0, 2)), poly).shape == (0, 2)
