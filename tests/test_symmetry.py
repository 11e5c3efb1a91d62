"""vision/recognition/symmetry.py: which way a flush block is cut, from its spots' symmetry.

Hand-made blocks (no ../shared data): a 1-1 whose 1s sit near the tile's ends beside a 5-5
whose 5s sit at their halves' middles (as one third-party drawing places them) -- the tiles'
halves each lie on their tile's centre line, the boxes across them do not."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.detections import PIP_RED, PIP_WHITE, Detections
from vision.geometry import CROP_H, CROP_MARGIN, CROP_W, crop_corners, expand_polygon, order_polygon
from vision.recognition.decode import TileRead
from vision.recognition.symmetry import ALIGNED, SKEWED, skews, symmetry_cut

# a 1-1 (u 0..0.5) and a 5-5 (u 0.5..1) flush, in the block's unit square: v along the tiles
ONE_ONE = np.array([[0.25, 0.12], [0.25, 0.88]])
FIVE = np.array([[-0.08, -0.08], [0.08, -0.08], [0, 0], [-0.08, 0.08], [0.08, 0.08]])
FIVE_FIVE = np.concatenate([FIVE + [0.75, 0.25], FIVE + [0.75, 0.75]])


def test_a_tiles_halves_in_line_and_the_boxes_across_them_not():
    cut0, cut1 = skews([ONE_ONE, FIVE_FIVE])
    assert cut0 < 1e-9                       # each tile's halves on its centre line
    # the boxes' axes: from the 1 at v 0.12 to the 5 at v 0.25, 0.5 across, and back
    assert abs(cut1 - 2 * np.arctan2(0.13, 0.5)) < 1e-9
    # turned a quarter (the block's corners numbered from the next one): the cuts swap
    turn = lambda p: np.stack([1 - p[:, 1], p[:, 0]], 1)  # noqa: E731
    both = np.concatenate([turn(ONE_ONE), turn(FIVE_FIVE)])
    left, right = both[both[:, 0] < 0.5], both[both[:, 0] >= 0.5]
    assert np.allclose(skews([left, right]), (cut1, cut0))


def test_a_block_outline_a_few_degrees_off_moves_neither_skew():
    t = np.radians(4.0)
    rot = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    tilt = lambda p: (p - 0.5) @ rot.T + 0.5 + [0.01, -0.02]  # noqa: E731
    cut0, cut1 = skews([tilt(ONE_ONE), tilt(FIVE_FIVE)])
    assert cut0 < 0.01 and abs(cut1 - 2 * np.arctan2(0.13, 0.5)) < 0.01


def test_unsure_where_a_half_is_empty_or_a_spot_sits_on_a_halfs_border():
    assert skews([ONE_ONE[:1], FIVE_FIVE]) is None                       # a half with no spot
    assert skews([np.concatenate([ONE_ONE, [[0.25, 0.51]]]), FIVE_FIVE]) is None  # on the midline
    # halves all at their middles (most drawings): both skews 0, no answer either way
    centred = np.array([[0.25, 0.25], [0.25, 0.75]])
    assert skews([centred, FIVE_FIVE]) == (0.0, 0.0)


def _reads_for(block, spots_uv, faces):
    """Stub of the engine's read_outlines: each cut-0 outline read as ``faces[k]`` with the
    given block-unit spots placed in its crop as the decoder's crop would show them."""
    H = cv2.getPerspectiveTransform(np.float32([[0, 0], [1, 0], [1, 1], [0, 1]]),
                                    np.asarray(block, np.float32))

    def read_outlines(polys):
        out = []
        for poly, uv, face in zip(polys, spots_uv, faces):
            img = cv2.perspectiveTransform(np.asarray(uv, np.float64).reshape(-1, 1, 2),
                                           H.astype(np.float64)).reshape(-1, 2)
            src = expand_polygon(order_polygon(poly), CROP_MARGIN).astype(np.float32)
            M = cv2.getPerspectiveTransform(src, crop_corners((CROP_W, CROP_H)))
            c = cv2.perspectiveTransform(img.reshape(-1, 1, 2), M.astype(np.float64)).reshape(-1, 2)
            xyxy = np.concatenate([c - 4, c + 4], 1)
            cls = np.full(len(c), PIP_RED if face == "1-1" else PIP_WHITE)
            pips = Detections(xyxy, np.full(len(c), 0.9), cls)
            out.append(TileRead(face, "face_up" if face else "unknown", 0.9, poly,
                                np.zeros(4, np.float32), pips))
        return out
    return read_outlines


def test_symmetry_cut_names_the_cut_the_tiles_lie_in_and_only_where_both_read():
    block = np.float32([[300, 200], [500, 230], [470, 430], [270, 400]])
    assert symmetry_cut(block, _reads_for(block, [ONE_ONE, FIVE_FIVE], ["1-1", "5-5"])) == 0
    # one of the two outlines reads no face: its spots may be a tile's or not -- unsure
    assert symmetry_cut(block, _reads_for(block, [ONE_ONE, FIVE_FIVE], ["1-1", None])) is None
    # the same picture with the block's corners numbered from the next one: cut 0 is now the
    # crosswise cut, whose boxes (read 1-5 and 1-5) hold halves off their centre lines
    turned = np.roll(block, -1, 0)
    t = lambda p: np.stack([p[:, 1], 1 - p[:, 0]], 1)  # noqa: E731 - old (u, v) -> new
    allp = np.concatenate([t(ONE_ONE), t(FIVE_FIVE)])
    left, right = allp[allp[:, 0] < 0.5], allp[allp[:, 0] >= 0.5]
    assert symmetry_cut(turned, _reads_for(turned, [left, right], ["1-5", "1-5"])) == 1
    skew = 2 * np.arctan2(0.13, 0.5)            # 0.51 rad
    assert ALIGNED < skew / 4 and SKEWED < skew  # the worked block clears both


FLUSH = Path(__file__).resolve().parents[2] / "shared" / "scenes_flush"


@pytest.mark.slow
@pytest.mark.skipif(not (FLUSH / "scene_10.jpg").is_file(), reason="needs ../shared/scenes_flush")
def test_a_flush_block_the_second_model_boxes_across_reads_where_the_spots_show_the_cut():
    """scenes_flush scene_10 (read at run time, never copied): seat 1's low hand, a 1-1 flush
    and level beside a 5-5 on an imilako drawing, 3-D black tiles whose seam does not show.
    Both tiles read; the second model outlines the block across (1-5) and vetoes them. The
    1-1's spots sit near the tile's ends, so the boxes across (1-5, 1-5) lie askew: the spots
    name the lengthwise cut and both tiles stand. Without the check they stay unknown -- but
    for the set rule (vision.recognition.dealt), which reads them too: the table shows both
    1-5s elsewhere, so the block cut across cannot be dealt. It is held off for that case."""
    from vision.config import RecognitionConfig
    from vision.recognition.engine import ReadMode, RecognitionEngine

    image = cv2.imread(str(FLUSH / "scene_10.jpg"))
    truth = [json.loads(line) for line in (FLUSH / "truth.jsonl").read_text().splitlines()
             if '"scene_10.jpg"' in line][0]
    seat = [s for s in truth["seats"] if str(s["seat"]) == "1"][0]
    low = [t for t in seat["tiles"] if t["hand"] == "low"]
    assert sorted(t["face"] for t in low) == ["1-1", "5-5"]

    def faces(symmetry: bool) -> list:
        reads = RecognitionEngine(RecognitionConfig(symmetry=symmetry)).read(image,
                                                                             ReadMode.STILL)
        out = []
        for t in low:
            c = np.asarray(t["polygon"]).mean(0)
            near = [r for r in reads if np.hypot(*(np.asarray(r.polygon).mean(0) - c)) < 15]
            out.append(near[0].face if near else None)
        return out

    assert faces(True) == [t["face"] for t in low]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("vision.recognition.still.dealt_blocks", lambda reads, *args: reads)
        assert faces(True) == [t["face"] for t in low]
        assert faces(False) == [None, None]
    assert faces(False) == [t["face"] for t in low]  # the set rule alone
