"""Outline refinement of a still picture's unknown tiles (vision.recognition.refine, issue 20).

Why it cannot give a wrong face: it names no face itself -- the decoder does, on an outline
fitted to the picture's face region -- and a two-tile block is split only where exactly one cut
reads both tiles and one of the two faces has a 2 or 6 half (a box cut across two tiles cannot
read such a half); a refined outline on an identified tile of another face is dropped. These
tests hold each of those abstentions on a drawn block and a stand-in decoder.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from vision.config import RecognitionConfig
from vision.geometry import polygon_iou_matrix
from vision.recognition.refine import (accept_cut, block_cuts, face_rectangle, refine_guarded,
                                       refine_unknowns, tile_shaped)
from scoring.errors import InputError

from helpers.refine_block import (BOTTOM, FELT, KNOWN, LEFT, RIGHT, TOP, box, decoder,  # noqa: E402
                                   flush_guard, picture, read, refit_with)


def test_face_rectangle_is_the_block_under_a_crosswise_box():
    rect = face_rectangle(picture(), TOP, 100.0)
    assert rect is not None
    assert polygon_iou_matrix(rect[None], box(200, 200, 300, 300)[None])[0, 0] > 0.95


def test_a_region_cut_by_the_window_is_not_whole():
    img = np.zeros((400, 400, 3), np.uint8)
    img[:] = FELT
    cv2.rectangle(img, (0, 150), (399, 249), (10, 10, 10), -1)  # a dark band across it all
    # the window (150 px around the centre) ends inside the picture: the band is cut
    assert face_rectangle(img, box(175, 150, 225, 250), 50.0) is None


def test_block_cuts_halve_the_block_both_ways():
    c0, c1 = block_cuts(box(200, 200, 300, 300))
    got = sorted(tuple(np.round(p.mean(0))) for p in np.concatenate([c0, c1]))
    assert got == [(225.0, 250.0), (250.0, 225.0), (250.0, 275.0), (275.0, 250.0)]


def test_tile_shaped_wants_the_pictures_size_and_aspect():
    assert tile_shaped(LEFT, 100.0, 2.0)
    assert not tile_shaped(box(200, 200, 300, 300), 100.0, 2.0)  # a square block
    assert not tile_shaped(box(0, 0, 25, 50), 100.0, 2.0)        # a quarter-size box


def test_accept_cut_rules():
    a, b = read("2-6", LEFT), read("4-5", RIGHT)
    assert accept_cut([a, b], [read(None, TOP), read("1-3", BOTTOM)])
    assert accept_cut([a])
    # a read missing
    assert not accept_cut([a, read(None, RIGHT)], [])
    # the other cut reads too: unsure which way the block lies
    assert not accept_cut([a, b], [read("1-3", TOP), read("4-5", BOTTOM)])
    # both faces of halves alike turned a quarter: could be boxes cut across
    assert not accept_cut([read("1-3", LEFT), read("4-5", RIGHT)], [read(None, TOP)])


def test_refine_splits_a_block_where_exactly_one_cut_reads():
    seed = read(None, TOP)
    out = refine_unknowns(KNOWN + [seed], picture(), decoder([(LEFT, "2-6"), (RIGHT, "4-5")]))
    faces = sorted(r.face for r in out if r.face)
    assert faces == ["2-2", "2-6", "4-5", "6-6"]
    assert not any(r.state == "unknown" for r in out)  # the crosswise box is replaced


def disputed_faces(out):
    return sorted(r.evidence.disputed for r in out if r.state == "unknown")


def test_refine_abstains_where_either_cut_reads_or_faces_are_alike_turned():
    """No face is taken; the block's tiles become two unknown tiles that keep what one cut
    read (its four halves), in place of the seed."""
    seed = read(None, TOP)
    both = decoder([(LEFT, "2-6"), (RIGHT, "4-5"), (TOP, "3-4"), (BOTTOM, "1-5")])
    out = refine_unknowns(KNOWN + [seed], picture(), both)
    assert [r.face for r in out] == ["2-2", "6-6", None, None]
    assert disputed_faces(out) in (["2-6", "4-5"], ["1-5", "3-4"])
    assert not any(r is seed for r in out)
    alike = decoder([(LEFT, "1-3"), (RIGHT, "4-5")])
    out = refine_unknowns(KNOWN + [seed], picture(), alike)
    assert [r.face for r in out] == ["2-2", "6-6", None, None]
    assert disputed_faces(out) == ["1-3", "4-5"]
    # no cut reads both tiles: the seed stays as it was, nothing disputed
    one = decoder([(LEFT, "1-3")])
    out = refine_unknowns(KNOWN + [seed], picture(), one)
    assert [r.face for r in out] == ["2-2", "6-6", None] and out[2] is seed


def shows(target):
    """A stand-in for the notch check: names the cut of a block rectangle whose two outlines
    are ``target`` (LEFT/RIGHT: lengthwise; TOP/BOTTOM: across)."""
    def cut_shown(rect):
        for c, pieces in enumerate(block_cuts(rect)):
            if polygon_iou_matrix(pieces, np.stack(target)).max(1).min() >= 0.8:
                return c
        return None
    return cut_shown


def test_rule_5_takes_the_cut_the_notches_show_where_either_cut_reads():
    """Either cut reads (or both faces look alike turned): the cut the picture's notches name
    is taken where it reads both tiles; a named cut that does not read both takes nothing."""
    seed = read(None, TOP)
    both = decoder([(LEFT, "2-6"), (RIGHT, "4-5"), (TOP, "3-4"), (BOTTOM, "1-5")])
    out = refine_unknowns(KNOWN + [seed], picture(), both, cut_shown=shows([LEFT, RIGHT]))
    assert sorted(r.face for r in out if r.face) == ["2-2", "2-6", "4-5", "6-6"]
    assert not any(r.state == "unknown" for r in out)
    out = refine_unknowns(KNOWN + [seed], picture(), both, cut_shown=shows([TOP, BOTTOM]))
    assert sorted(r.face for r in out if r.face) == ["1-5", "2-2", "3-4", "6-6"]
    alike = decoder([(LEFT, "1-3"), (RIGHT, "4-5")])
    out = refine_unknowns(KNOWN + [seed], picture(), alike, cut_shown=shows([LEFT, RIGHT]))
    assert sorted(r.face for r in out if r.face) == ["1-3", "2-2", "4-5", "6-6"]
    # the notches name the cut that does not read: nothing taken, the block disputed as before
    out = refine_unknowns(KNOWN + [seed], picture(), alike, cut_shown=shows([TOP, BOTTOM]))
    assert [r.face for r in out] == ["2-2", "6-6", None, None]
    assert disputed_faces(out) == ["1-3", "4-5"]
    # unsure: as before
    out = refine_unknowns(KNOWN + [seed], picture(), alike, cut_shown=lambda rect: None)
    assert disputed_faces(out) == ["1-3", "4-5"]


def test_refine_never_contradicts_an_identified_tile():
    seed = read(None, TOP)
    dec = decoder([(LEFT, "2-6"), (RIGHT, "4-5")])
    # an identified read of another face on one of the tiles: nothing taken
    other = read("5-5", RIGHT)
    out = refine_unknowns(KNOWN + [other, seed], picture(), dec)
    assert sorted(r.face for r in out if r.face) == ["2-2", "5-5", "6-6"]
    # the same face there: it stays, the other tile is added
    same = read("4-5", RIGHT)
    out = refine_unknowns(KNOWN + [same, seed], picture(), dec)
    assert sorted(r.face for r in out if r.face) == ["2-2", "2-6", "4-5", "6-6"]


def test_refine_needs_identified_tiles_for_the_size():
    seed = read(None, TOP)
    out = refine_unknowns([seed], picture(), decoder([(LEFT, "2-6"), (RIGHT, "4-5")]))
    assert [r.face for r in out] == [None]


def test_a_tile_the_guards_make_unknown_is_split_from_its_block_where_one_cut_reads():
    """The model read LEFT (2-6) and never outlined its flush neighbour: the guard makes it
    unknown; refitted, the block splits lengthwise (the cut across reads nothing) into 2-6 and
    4-5, which then pass the guard."""
    dec = decoder([(LEFT, "2-6"), (RIGHT, "4-5")])
    out = refine_guarded(KNOWN + [read("2-6", LEFT)], flush_guard(), refit_with(dec))
    assert sorted(r.face for r in out if r.face) == ["2-2", "2-6", "4-5", "6-6"]
    assert not any(r.state == "unknown" for r in out)


def test_a_guard_made_unknown_stays_where_either_cut_reads_and_the_guards_run_again():
    both = decoder([(LEFT, "2-6"), (RIGHT, "4-5"), (TOP, "3-4"), (BOTTOM, "1-5")])
    out = refine_guarded(KNOWN + [read("2-6", LEFT)], flush_guard(), refit_with(both))
    assert sorted(r.face or "?" for r in out) == ["2-2", "6-6", "?", "?"]
    assert disputed_faces(out) in (["2-6", "4-5"], ["1-5", "3-4"])
    # what the refit gives meets the guards again: a guard against 4-5 leaves it unknown
    dec = decoder([(LEFT, "2-6"), (RIGHT, "4-5")])
    out = refine_guarded(KNOWN + [read("2-6", LEFT)], flush_guard(also=("4-5",)),
                         refit_with(dec))
    assert "4-5" not in [r.face for r in out]


def test_only_the_tiles_the_guards_made_unknown_are_refitted_again():
    calls = []
    dec = decoder([(LEFT, "2-6"), (RIGHT, "4-5")])
    # an outline unknown before the guards (refitted before them already): no second refit
    out = refine_guarded(KNOWN + [read(None, TOP)], lambda rs: list(rs), refit_with(dec, calls))
    assert calls == [] and [r.face for r in out] == ["2-2", "6-6", None]
    # only=... restricts refine_unknowns' seeds
    got = refine_unknowns(KNOWN + [read(None, TOP)], picture(), dec, only=lambda r: False)
    assert [r.face for r in got] == ["2-2", "6-6", None]


def test_refine_is_a_bool_setting():
    assert RecognitionConfig().refine is True
    with pytest.raises(InputError):
        RecognitionConfig(refine="yes")


def test_face_share_is_the_share_of_an_outline_in_the_tiles_face_class():
    from vision.recognition.refine import ON_FACE, face_share

    img = np.full((200, 300, 3), (40, 140, 40), np.uint8)       # green felt
    img[50:150, 100:150] = (20, 20, 20)                         # a black tile, 50 x 100 px
    img[50:150, 150:200] = (20, 20, 20)                         # its flush neighbour
    img[70:80, 120:130] = (240, 240, 240)                       # a spot
    tile = np.array([[100, 50], [150, 50], [150, 150], [100, 150]], np.float64)
    right = tile + [50, 0]
    left = tile - [50, 0]
    assert face_share(img, tile, right) > 0.95 >= ON_FACE          # the neighbour's face
    assert face_share(img, tile, left) < 0.05                     # felt
    # off the picture: nothing to share
    assert face_share(img, tile, tile + [1000, 0]) == 0.0


def test_rule_7_rules_out_a_cut_naming_a_single_tile_twice():
    """Both cuts read both tiles: across, 4-5 and 4-5 -- the set holds one 4-5 (docs/rules.md
    section 1) -- so the block is the 4-4 | 5-5 its other cut reads (scenes_flush imilako
    scene_17). Across 1-3 and 1-3 (a face the set holds twice): still unsure."""
    seed = read(None, TOP)
    out = refine_unknowns(KNOWN + [seed], picture(), decoder(
        [(LEFT, "4-4"), (RIGHT, "5-5"), (TOP, "4-5"), (BOTTOM, "4-5")]))
    assert sorted(r.face for r in out) == ["2-2", "4-4", "5-5", "6-6"]
    out = refine_unknowns(KNOWN + [seed], picture(), decoder(
        [(LEFT, "1-1"), (RIGHT, "3-3"), (TOP, "1-3"), (BOTTOM, "1-3")]))
    assert [r.face for r in out] == ["2-2", "6-6", None, None]
    assert all(r.evidence.either_cut for r in out[2:])


def test_rule_8_cuts_the_block_of_two_unknown_outlines_where_the_face_region_gives_none():
    """Tiles whose sides are as dark as their faces (scenes_flush imilako): the face region
    is no tile or block, so the block two unknown outlines flush beside each other cover is
    cut instead, under the same rules."""
    from vision.recognition.refine import outline_block

    img = picture()
    cv2.rectangle(img, (200, 300), (330, 340), (10, 10, 10), -1)  # the block's dark sides
    top, bottom = read(None, TOP), read(None, BOTTOM)
    block = outline_block(top, [top, bottom] + KNOWN)
    assert block is not None
    assert polygon_iou_matrix(block[None], box(200, 200, 300, 300)[None])[0, 0] > 0.95
    assert outline_block(top, [top] + KNOWN) is None  # no neighbour flush beside
    # an identified neighbour (a tile the seed lies flush beside, missed_beside) does too;
    # a tile back does not
    assert outline_block(top, [top, read("1-3", BOTTOM)]) is not None
    assert outline_block(top, [top, read(None, BOTTOM, "face_down")]) is None
    assert outline_block(top, [top, read(None, box(200, 290, 300, 340))]) is None
    dec = decoder([(LEFT, "2-6"), (RIGHT, "4-5")])
    assert face_rectangle(img, TOP, 100.0) is not None  # the region, sides and all
    out = refine_unknowns(KNOWN + [top, bottom], img, dec)
    assert sorted(r.face for r in out) == ["2-2", "2-6", "4-5", "6-6"]
    # the same rules: both cuts read -- nothing named
    out = refine_unknowns(KNOWN + [top, bottom], img, decoder(
        [(LEFT, "2-6"), (RIGHT, "4-5"), (TOP, "3-4"), (BOTTOM, "1-5")]))
    assert sorted(r.face for r in out if r.face) == ["2-2", "6-6"]


def test_a_cut_refused_for_its_aspect_alone_is_read_where_the_pictures_tiles_are_as_long():
    # tall tiles 30 x 100 (aspect 3.33, above the decoder's 3.2: a camera at a slant), three
    # identified, and a flush block of two at x 200-260: its lengthwise cut's outlines are
    # refused for their aspect alone, the face both reads agreed on kept in the evidence
    from vision.recognition.aspect import as_peer

    img = np.zeros((400, 400, 3), np.uint8)
    img[:] = FELT
    known = [read(f, box(20 + 40 * i, 20, 50 + 40 * i, 120)) for i, f in
             enumerate(("2-2", "6-6", "4-4"))]
    for x1 in (20, 60, 100):
        cv2.rectangle(img, (x1, 20), (x1 + 29, 119), (10, 10, 10), -1)
    cv2.rectangle(img, (200, 200), (259, 299), (10, 10, 10), -1)
    for cx, cy in ((215, 220), (215, 280), (245, 230), (245, 270)):
        cv2.circle(img, (cx, cy), 4, (250, 250, 250), -1)
    left, right = box(200, 200, 230, 300), box(230, 200, 260, 300)
    truth = decoder([(left, "2-6"), (right, "4-5")])

    def too_long(q, conf):  # the decoder's aspect bound: a face agreed on, not named
        return [r if r.face is None else read(None, r.polygon).with_evidence(
            aspect_face=r.face, aspect_confidence=0.9) for r in truth(q, conf)]

    seed = read(None, box(200, 220, 260, 280))
    assert [r.face for r in refine_unknowns(known + [seed], img, too_long)] == [
        "2-2", "6-6", "4-4", None]
    out = refine_unknowns(known + [seed], img, too_long,
                          as_peer=lambda r, peers: as_peer(r, peers, 0.5))
    assert sorted(r.face for r in out) == ["2-2", "2-6", "4-4", "4-5", "6-6"]
    assert all(r.evidence.aspect_peers == 3.33 for r in out if r.face in ("2-6", "4-5"))
    # the bound is the picture's: beside tiles of aspect 2 the same outlines stay unread
    short = [read(f, box(20 + 70 * i, 20, 70 + 70 * i, 120)) for i, f in
             enumerate(("2-2", "6-6", "4-4"))]
    out = refine_unknowns(short + [seed], img, too_long,
                          as_peer=lambda r, peers: as_peer(r, peers, 0.5))
    assert not any(r.face in ("2-6", "4-5") for r in out)


def test_each_cut_is_judged_by_the_tiles_lying_its_way():
    # a camera at a slant: the dealer's two identified tiles lie up the picture, 25 x 80
    # (aspect 3.2), and four tiles of a seat further off lie across it, 65 x 28 (aspect 2.3);
    # the block beside the dealer's tiles holds two tiles lying up the picture too. By the
    # median of all six neighbours its cut outlines (25 x 80) are too long for a tile.
    img = np.zeros((400, 400, 3), np.uint8)
    img[:] = FELT
    known = [read("1-6", box(150, 60, 175, 140)), read("1-2", box(175, 60, 200, 140))]
    known += [read("2-2", box(40 + 70 * i, 300, 105 + 70 * i, 328)) for i in range(4)]
    for r in known:
        x1, y1 = r.polygon.min(0).astype(int)
        x2, y2 = r.polygon.max(0).astype(int)
        cv2.rectangle(img, (x1 + 1, y1 + 1), (x2 - 2, y2 - 2), (10, 10, 10), -1)
    cv2.rectangle(img, (80, 60), (129, 139), (10, 10, 10), -1)
    for cx, cy in ((92, 75), (92, 120), (117, 80), (117, 125)):
        cv2.circle(img, (cx, cy), 3, (250, 250, 250), -1)
    left, right = box(80, 60, 105, 140), box(105, 60, 130, 140)
    seed = read(None, box(80, 75, 130, 125))
    out = refine_unknowns(known + [seed], img, decoder([(left, "2-6"), (right, "4-5")]))
    assert sorted(r.face for r in out if r.face) == ["1-2", "1-6", "2-2", "2-2", "2-2", "2-2",
                                                      "2-6", "4-5"]
    assert not any(r.state == "unknown" for r in out)


def test_a_face_touching_a_neighbour_at_a_corner_is_parted_from_it():
    # a dark neighbour (another hand's tile, laid close, turned 45 degrees) touches the
    # block's top side with a corner and runs out of the window: the face region joined to
    # it is not whole
    img = picture()
    cv2.fillPoly(img, [np.array([[250, 200], [222, 172], [378, 16], [406, 44]], np.int32)],
                 (10, 10, 10))
    seed = read(None, TOP)
    assert face_rectangle(img, TOP, 100.0) is None
    rect = face_rectangle(img, TOP, 100.0, opened=True)
    assert rect is not None
    lo, hi = rect.min(0), rect.max(0)
    assert np.allclose(lo, [200, 200], atol=2) and np.allclose(hi, [299, 299], atol=2)
    # so the block is cut where exactly one cut reads, as beside no neighbour
    out = refine_unknowns(KNOWN + [seed], img, decoder([(LEFT, "2-6"), (RIGHT, "4-5")]))
    assert sorted(r.face for r in out if r.face) == ["2-2", "2-6", "4-5", "6-6"]


SPOTS = ((215, 220), (235, 280), (265, 230), (285, 270))  # picture()'s drawn spots


def _drawn_spots(extra=()):
    """A stand-in for the spots the pip model finds on an outline: the drawn ones inside it."""
    spots = SPOTS + tuple(extra)

    def run(read, polygon):
        q = np.asarray(polygon, np.float32).reshape(-1, 1, 2)
        return np.array([s for s in spots if cv2.pointPolygonTest(q, s, False) >= 0],
                        np.float64).reshape(-1, 2)
    return run


def test_a_tiles_3d_side_is_trimmed_from_its_face_region(monkeypatch):
    """Issue 40 (scenes_flush_cam scene_17, imilako): a drawn 3-D tile's side as dark as its
    face lengthens the face region by the side's width, so neither cut of the block is
    tile-shaped. The band without spots at the side's end is 40 px wider than at the other:
    the rectangle is cut back to the face, and the block reads."""
    from vision.recognition import refine

    monkeypatch.setattr(refine, "counted_spots_px", _drawn_spots())
    img = picture()
    cv2.rectangle(img, (200, 300), (299, 339), (10, 10, 10), -1)  # the side, below the block
    whole = face_rectangle(img, TOP, 100.0)
    assert np.allclose(whole.min(0), [200, 200], atol=2)
    assert np.allclose(whole.max(0), [299, 339], atol=2)
    rect = face_rectangle(img, TOP, 100.0, trim=True)
    assert np.allclose(rect.min(0), [200, 200], atol=2)
    assert np.allclose(rect.max(0), [299, 299], atol=2)  # 16 px below the last spot, as above
    dec = decoder([(LEFT, "2-6"), (RIGHT, "4-5")])
    out = refine_unknowns(KNOWN + [read(None, TOP)], img, dec)
    assert sorted(r.face for r in out if r.face) == ["2-2", "2-6", "4-5", "6-6"]
    # no side: nothing to trim
    assert face_rectangle(picture(), TOP, 100.0, trim=True) is None


def test_a_trim_that_would_cut_a_spot_off_is_not_taken(monkeypatch):
    """A spot at the band's far edge runs into the felt, so it is no hole of the face region
    and the band looks empty; the decoder counts it on the untrimmed outlines, and it lies
    outside the trimmed rectangle: the trim is refused and the block stays unread."""
    from vision.recognition import refine

    img = picture()
    cv2.rectangle(img, (200, 300), (299, 339), (10, 10, 10), -1)
    cv2.circle(img, (250, 338), 4, (250, 250, 250), -1)  # a spot run into the felt
    monkeypatch.setattr(refine, "counted_spots_px", _drawn_spots([(250, 338)]))
    assert face_rectangle(img, TOP, 100.0, trim=True) is not None  # the band looks empty
    dec = decoder([(LEFT, "2-6"), (RIGHT, "4-5")])
    out = refine_unknowns(KNOWN + [read(None, TOP)], img, dec)
    assert sorted(r.face for r in out if r.face) == ["2-2", "6-6"]
    monkeypatch.setattr(refine, "counted_spots_px", _drawn_spots())  # the spot not seen
    out = refine_unknowns(KNOWN + [read(None, TOP)], img, dec)
    assert sorted(r.face for r in out if r.face) == ["2-2", "2-6", "4-5", "6-6"]


def test_a_block_at_the_near_edge_is_judged_by_the_tiles_beside_it():
    """Issue 40 (scenes_flush_cam scene_14, imilako): a camera at a slant draws the banker's
    block at the picture's near edge larger than the hands across the table. By the median of
    the nearest identified tiles (four 100 px tiles far off, one 125 px tile beside it) the
    block's tiles, 140 px long, are no tiles; judged once more by the tile beside it alone
    (zoom.NEAR_REACH), the lengthwise cut is tile-shaped and reads."""
    img = np.zeros((720, 720, 3), np.uint8)
    img[:] = FELT
    near = box(100, 208, 155, 333)  # the banker's identified tile beside the block
    far = [box(x, 580, x + 50, 680) for x in (60, 200, 340, 480)]
    for q in [near, box(200, 200, 320, 340)] + far:
        x1, y1 = q.min(0).astype(int)
        x2, y2 = q.max(0).astype(int)
        cv2.rectangle(img, (int(x1), int(y1)), (int(x2) - 1, int(y2) - 1), (10, 10, 10), -1)
    for cx, cy in ((215, 225), (245, 315), (275, 230), (305, 310)):
        cv2.circle(img, (cx, cy), 5, (250, 250, 250), -1)
    known = [read("3-3", near)] + [read(f, q) for f, q in zip(("5-5", "1-1", "2-2", "6-6"), far)]
    left, right = box(200, 200, 260, 340), box(260, 200, 320, 340)
    seed = read(None, box(200, 200, 320, 270))  # a box across the block's top half
    out = refine_unknowns(known + [seed], img, decoder([(left, "2-6"), (right, "4-5")]))
    assert sorted(r.face for r in out if r.face) == ["1-1", "2-2", "2-6", "3-3", "4-5",
                                                      "5-5", "6-6"]
    # with the tile beside it as short as the others, the block is no two tiles: unread
    known[0] = read("3-3", box(100, 220, 150, 320))
    img[208:333, 100:155] = FELT
    cv2.rectangle(img, (100, 220), (149, 319), (10, 10, 10), -1)
    out = refine_unknowns(known + [seed], img, decoder([(left, "2-6"), (right, "4-5")]))
    assert "2-6" not in [r.face for r in out]


def test_a_face_running_on_into_an_identified_neighbours_is_taken_apart_from_it():
    """Issue 40 (scenes_flush_cam, fintech): a tile lying flush against the end of an
    identified tile as dark as it gives one face region for both -- an L that is neither a
    tile nor a block, joined along a whole side, so no parting frees it. An identified tile's
    face is not the unknown one's: with its outline taken out of the face class, the region
    is the unknown tile alone, and it reads. Where the neighbour is not identified, nothing
    is taken out and the tile stays unread."""
    img = picture()
    img[200:300, 200:300] = FELT  # no block here: one tile, and its neighbour at its end
    tile, beside = box(200, 200, 300, 250), box(300, 175, 350, 275)
    for q in (tile, beside):
        x1, y1 = q.min(0).astype(int)
        x2, y2 = q.max(0).astype(int)
        cv2.rectangle(img, (int(x1), int(y1)), (int(x2) - 1, int(y2) - 1), (10, 10, 10), -1)
    for c in ((225, 225), (275, 225), (325, 200), (325, 250)):
        cv2.circle(img, c, 4, (250, 250, 250), -1)
    assert face_rectangle(img, tile, 100.0) is not None  # the L's rectangle: 150 x 100
    assert face_rectangle(img, tile, 100.0, opened=True) is not None
    seed = read(None, box(205, 195, 330, 255))  # the model's outline, onto the neighbour
    dec = decoder([(tile, "1-1"), (beside, "3-3")])
    out = refine_unknowns(KNOWN + [read("3-3", beside), seed], img, dec)
    assert sorted(r.face for r in out if r.face) == ["1-1", "2-2", "3-3", "6-6"]
    taken = [r for r in out if r.face == "1-1"]
    assert polygon_iou_matrix(taken[0].polygon[None], tile[None])[0, 0] > 0.9
    # the neighbour not identified: the region is the L, nothing reads
    out = refine_unknowns(KNOWN + [read(None, beside), seed], img, dec)
    assert "1-1" not in [r.face for r in out]
