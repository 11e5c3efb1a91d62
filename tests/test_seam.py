"""The seam check (vision.recognition.seam) and the two abstentions it may lift: the second
model's veto of a flush pair (vision.recognition.fill.disputed_outlines) and a tile with
unread spots flush beside it (vision.recognition.flush.flush_beside). It answers a cut only
where one shows a line the whole length through the block's centre and the other none; an
unsure check keeps every guard as it was."""

from __future__ import annotations

from collections import defaultdict

import cv2
import numpy as np
import pytest

from vision.detections import PIP_WHITE, Detections
from vision.recognition.decode import TileRead
from vision.recognition.fill import disputed_outlines
from vision.recognition.flush import flush_beside
from vision.recognition.seam import block_of, long_cut, seam_cut, seam_scores


def _read(face, x, y, w=40, h=80, state=None, pips=None):
    poly = np.array([[x, y], [x + w, y], [x + w, y + h], [x, y + h]], np.float32)
    st = state or ("face_up" if face else "unknown")
    return TileRead(face, st, 0.9, poly, np.array([x, y, x + w, y + h], np.float32), pips,
                    reason=None if st == "face_up" else "test")


def _table(seam=True, midline=False, divider=False, seed=0):
    """Two flat black tiles 40 x 80 px flush at x 100..180, y 100..180 on felt, spots in
    their halves; ``seam``: a thin grey line where they meet (x = 140), ``midline``: a grey
    line across both at y = 140, the whole length; ``divider``: a line across each tile
    stopping short of its sides (x 105..135 and 145..175). uint8 (300, 300, 3) and the
    block's corners (cut 0: the seam)."""
    rng = np.random.default_rng(seed)
    img = np.empty((300, 300, 3), np.float32)
    img[:] = (40, 110, 40)
    img[100:180, 100:180] = (8, 8, 8)
    for cx, cy in ((120, 115), (120, 160), (160, 120), (150, 165), (170, 165)):
        cv2.circle(img, (cx, cy), 5, (235, 235, 235), -1, cv2.LINE_AA)
    if seam:
        img[100:180, 139:141] = (45, 45, 45)
    if midline:
        img[139:141, 100:180] = (45, 45, 45)
    if divider:
        img[139:141, 105:135] = (45, 45, 45)
        img[139:141, 145:175] = (45, 45, 45)
    img = cv2.GaussianBlur(img, (0, 0), 0.6) + rng.normal(0, 1.5, (300, 300, 1))  # sensor
    block = np.array([[100, 100], [180, 100], [180, 180], [100, 180]], np.float32)
    return np.clip(img, 0, 255).astype(np.uint8), block


def test_a_seam_the_whole_length_names_its_cut_whichever_corner_comes_first():
    img, block = _table()
    assert seam_cut(img, block) == 0
    assert seam_cut(img, np.roll(block, -1, 0)) == 1     # turned a quarter: the other index
    assert seam_cut(img, block[::-1].copy()) in (0, 1)  # the other way round: still the seam
    a, b = seam_scores(img, block)
    assert a[0] > b[1]


def test_no_seam_or_lines_both_ways_or_a_divider_alone_is_unsure():
    # a plain block: nothing shows which way it is cut
    assert seam_cut(*_table(seam=False)) is None
    # a line along both cuts (a drawing with a line across each tile): both show, abstain
    assert seam_cut(*_table(seam=True, midline=True)) is None
    # dividers across each tile stop at the tiles' sides: broken at the block's centre, they
    # are no seam, and where the seam does not show nothing is said
    assert seam_cut(*_table(seam=False, divider=True)) is None


def test_block_of_a_tile_and_its_neighbour_puts_the_seam_on_cut_0():
    a, b = _read("1-4", 100, 100).polygon, _read("4-4", 140, 100).polygon
    blk = block_of(a, b)
    assert np.allclose(np.sort(blk, 0), np.sort(np.array(
        [[100, 100], [180, 100], [180, 180], [100, 180]], np.float32), 0))
    assert long_cut(blk, a) == 0
    img, _ = _table()
    assert seam_cut(img, blk) == 0 and seam_cut(img, block_of(b, a)) == 0
    with pytest.raises(Exception):
        seam_scores(img, np.zeros((3, 2)))


def _rendered_blocks(seed):
    from vision.synth.render import render_scene

    sc = render_scene(seed, (1280, 720), mode="table", touching=1.0, square_blocks=1.0,
                      tile_long=200)
    hands = defaultdict(list)
    for t in sc.tiles:
        if t.position is not None and t.hand is not None:
            hands[(t.position, t.hand)].append(t)
    return sc.image, [block_of(p[0].polygon, p[1].polygon) for p in hands.values()
                      if len(p) == 2 and all(t.labelled and t.visible >= 0.98 for t in p)]


def test_rendered_flush_pairs_are_cut_the_way_they_lie_or_not_at_all():
    # the project's renderer lays every hand flush and level (square blocks): the check names
    # the lengthwise cut where the seam shows and never the crosswise one
    answers = []
    for seed in (1_000_005, 1_000_007):
        img, blocks = _rendered_blocks(seed)
        for blk in blocks:
            got = seam_cut(img, blk)
            answers.append(got)
            # turned a quarter, the same seam is the other index (or unsure)
            assert seam_cut(img, np.roll(blk, -1, 0)) in (None if got is None else 1 - got, None)
    assert 0 in answers and 1 not in answers


# --------------------------------------------------------------------- the veto (fill.py)

def test_the_second_models_veto_is_lifted_only_where_the_seam_shows_the_first_models_cut():
    # a 1-4 and a 4-4 flush side by side (an 80 x 80 block); the first model outlined them
    # lengthwise, the second cut the block crosswise
    first = [_read("1-4", 100, 100), _read("4-4", 140, 100), _read("2-2", 300, 100)]
    second = [_read("1-5", 100, 100, w=80, h=40), _read("4-4", 100, 140, w=80, h=40)]
    asked = []

    def says(answer):
        def seam(p, q):
            asked.append((p.copy(), q.copy()))
            return answer
        return seam

    # no seam check, or a seam that does not show (unsure): the veto stands
    assert [r.face for r in disputed_outlines(first, second)] == [None, None, "2-2"]
    assert [r.face for r in disputed_outlines(first, second, says(False))] == [None, None, "2-2"]
    # the seam along the tiles' long sides: both keep their own (two-read) faces
    out = disputed_outlines(first, second, says(True))
    assert [r.face for r in out] == ["1-4", "4-4", "2-2"] and out[0] is first[0]
    assert asked  # the check was asked about the pair, each tile with its neighbour
    # a disputing outline reaching out of the block: it is not a cut of this block, the
    # seam says nothing about it
    wide = [_read("1-5", 90, 100, w=120, h=40)]
    assert [r.face for r in disputed_outlines(first, wide, says(True))][:2] == [None, None]
    # no identified neighbour flush beside the tile: nothing to lift
    lone = [first[0], _read(None, 140, 100), first[2]]
    assert disputed_outlines(lone, second, says(True))[0].face is None


def test_the_veto_stays_on_a_real_picture_without_a_seam_and_lifts_with_one():
    img, _ = _table(seam=True)
    first = [_read("1-4", 100, 100), _read("4-4", 140, 100)]
    second = [_read("1-5", 100, 100, w=80, h=40)]

    def seam_of(picture):
        return lambda p, q: seam_cut(picture, block_of(p, q)) == 0

    assert [r.face for r in disputed_outlines(first, second, seam_of(img))] == ["1-4", "4-4"]
    plain, _ = _table(seam=False)
    assert [r.face for r in disputed_outlines(first, second, seam_of(plain))] == [None, None]
    both, _ = _table(seam=True, midline=True)
    assert [r.face for r in disputed_outlines(first, second, seam_of(both))] == [None, None]


# ------------------------------------------------------------ flush beside (flush.py)

def _reader(face_beside):
    """A stand-in for RecognitionEngine.decode on outlines: an outline centred on the two
    tiles of :func:`_table` (x 100..180) shows three sure spots and reads ``face_beside``
    (None: unknown); one on the felt shows nothing."""
    def run(polys):
        out = []
        for q in polys:
            n = 3 if 100 <= float(np.mean(q[:, 0])) <= 180 else 0
            xyxy = np.array([[40, 40 + 20 * i, 56, 56 + 20 * i] for i in range(n)],
                            np.float32).reshape(-1, 4)
            pips = Detections(xyxy, np.full(n, 0.9, np.float32), np.full(n, PIP_WHITE, np.int64))
            st = "face_up" if face_beside and n else "unknown"
            out.append(TileRead(face_beside if n else None, st, 1.0, q,
                                np.r_[q.min(0), q.max(0)], pips,
                                reason=None if st == "face_up" else "test"))
        return out
    return run


def test_a_crosswise_box_the_seam_check_is_unsure_of_stays_unknown():
    # one box over the upper halves of a flush pair (80 x 40), read 1-4; the lower halves lie
    # beside its long side, unread. On a picture with no seam (or both ways) the check is
    # unsure: the box stays unknown
    box = _read("1-4", 100, 100, w=80, h=40)
    for picture in (_table(seam=False)[0], _table(seam=True, midline=True)[0]):
        def seam(p, q, picture=picture):
            return seam_cut(picture, block_of(p, q)) == 0
        out = flush_beside([box], (300, 300, 3), _reader("4-4"), seam)
        assert [r.face for r in out] == [None]
    # the seam runs across the box (between x 139 and 141): the block is cut the other way,
    # the box is not a tile -- unknown too
    img, _ = _table(seam=True)
    out = flush_beside([box], (300, 300, 3), _reader("4-4"),
                       lambda p, q: seam_cut(img, block_of(p, q)) == 0)
    assert [r.face for r in out] == [None]


def test_a_tile_whose_seam_shows_keeps_its_face_and_its_neighbour_is_read():
    img, _ = _table(seam=True)
    tile = _read("1-4", 100, 100)              # its flush neighbour (x 140..180) not found

    def seam(p, q):
        return seam_cut(img, block_of(p, q)) == 0

    out = flush_beside([tile], (300, 300, 3), _reader("4-4"), seam)
    assert sorted(r.face for r in out) == ["1-4", "4-4"]
    added = next(r for r in out if r.face == "4-4")
    assert np.allclose(added.polygon.mean(0), (160, 140), atol=1)
    # the neighbour's outline not identified: the tile's face stands, nothing is added
    out = flush_beside([tile], (300, 300, 3), _reader(None), seam)
    assert [r.face for r in out] == ["1-4"]
    # without the check (or unsure): unknown, as before
    assert [r.face for r in flush_beside([tile], (300, 300, 3), _reader("4-4"))] == [None]
    assert [r.face for r in flush_beside([tile], (300, 300, 3), _reader("4-4"),
                                         lambda p, q: False)] == [None]
