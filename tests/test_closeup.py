"""The close-up proposal of `identify`: a one-tile picture's own outline as a tile candidate
(vision.recognition.closeup.picture_candidate) and how its read combines with the tile model's reads
(vision.recognition.closeup.merge_picture_read)."""

from __future__ import annotations

import cv2
import numpy as np

from vision.recognition.decode import TileRead
from vision.detections import TILE, Detections
from vision.recognition.closeup import (PICTURE_OUTLINE_CONFIDENCE, merge_picture_read, picture_candidate)


def _picture(w=120, h=260, border=20, angle=0.0):
    """A black tile on grey: (image, true polygon)."""
    img = np.full((h + 2 * border, w + 2 * border, 3), 128, np.uint8)
    box = cv2.boxPoints(((w / 2 + border, h / 2 + border), (w, h), angle)).astype(np.float32)
    cv2.fillPoly(img, [np.round(box).astype(np.int32)], (12, 12, 12))
    return img, box


def _read(face, xyxy, conf=0.9):
    x1, y1, x2, y2 = xyxy
    poly = np.array([[x1, y1], [x2, y1], [x2, y2], [x1, y2]], np.float32)
    return TileRead(face, "face_up" if face else "unknown", conf, poly,
                    np.array(xyxy, np.float32), reason=None if face else "read A: no face",
                    tile_confidence=conf)


def test_a_one_tile_picture_proposes_its_outline():
    img, box = _picture()
    cand = picture_candidate(img, Detections.empty())
    assert len(cand) == 1
    assert int(cand.class_id[0]) == TILE
    assert abs(float(cand.confidence[0]) - PICTURE_OUTLINE_CONFIDENCE) < 1e-6
    np.testing.assert_allclose(cand.xyxy[0], [20, 20, 140, 280], atol=2)


def test_a_picture_that_is_the_tile_proposes_the_whole_picture():
    img = np.zeros((163, 60, 3), np.uint8)  # a black drawing filling its picture
    cv2.circle(img, (30, 30), 10, (0, 0, 255), -1)
    cand = picture_candidate(img, Detections.empty())
    assert len(cand) == 1
    np.testing.assert_allclose(cand.xyxy[0], [0, 0, 60, 163], atol=1)


def test_no_proposal_for_a_square_picture_or_a_table():
    img, _ = _picture(w=200, h=200)  # not tile-shaped (1:1)
    assert len(picture_candidate(img, Detections.empty())) == 0
    img, _ = _picture()
    table = Detections(np.array([[0, 0, 10, 20]] * 4, np.float32), np.full(4, 0.8, np.float32),
                       np.zeros(4, np.int64))  # four confident tiles: a table picture
    assert len(picture_candidate(img, table)) == 0
    three = table[np.arange(3)]
    assert len(picture_candidate(img, three)) == 1


def test_no_proposal_when_the_tile_covers_little_of_the_picture():
    img = np.full((1000, 1000, 3), 128, np.uint8)
    cv2.rectangle(img, (100, 100), (160, 220), (10, 10, 10), -1)  # 0.7 % of the picture
    assert len(picture_candidate(img, Detections.empty())) == 0


def test_the_picture_read_replaces_the_model_reads_inside_it():
    cand = _read("1-5", [0, 0, 100, 220])
    inside = [_read(None, [5, 100, 95, 215], 0.4), _read("1-5", [2, 2, 98, 210], 0.6)]
    outside = _read("6-6", [300, 0, 400, 220])
    out = merge_picture_read([*inside, outside], cand)
    assert [r.face for r in out] == ["6-6", "1-5"]
    assert out[1] is cand


def test_disagreeing_reads_make_every_involved_tile_unknown():
    cand = _read("1-5", [0, 0, 100, 220])
    out = merge_picture_read([_read("1-3", [5, 5, 95, 110])], cand)
    assert len(out) == 2
    assert all(r.face is None and r.state == "unknown" for r in out)
    assert "disagree" in out[0].reason and "1-3" in out[0].reason


def test_an_unknown_picture_read_is_dropped():
    model = [_read("2-4", [5, 5, 95, 210])]
    out = merge_picture_read(model, _read(None, [0, 0, 100, 220]))
    assert [r.face for r in out] == ["2-4"]
