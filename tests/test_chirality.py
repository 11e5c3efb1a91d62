"""The way a set draws its 3s, and the flush block cut that contradicts it
(vision.recognition.chirality; refine rules 3 and 6; the flush guards; issue 20).

Why it cannot give a wrong face: a 3 is a diagonal, and a diagonal turned a quarter runs the
other way, so a box cut across two flush tiles shows every 3 it holds the other way from the
tiles as laid. These tests hold the geometry (a quarter turn flips the way, half a turn keeps
it), the table's vote (unanimous, two faces at least), and each use: a cut that runs against
the table's way is ruled out, a tile that runs with it is no box across two tiles, and with no
way voted nothing changes.
"""

from __future__ import annotations

import numpy as np

from vision.detections import PIP_RED, PIP_WHITE, Detections
from vision.geometry import CROP_H, CROP_W
from vision.recognition.chirality import (MIN_FACES, MIN_VOTES, _diagonal, against, shows_way,
                                          table_hand, three_hands)
from vision.recognition.decode import TileRead, decode_face
from vision.recognition.flush import cut_either_way
from vision.recognition.refine import refine_unknowns

from helpers.refine_block import BOTTOM, KNOWN, LEFT, RIGHT, TOP, flush_guard, picture, read

S = 18.0  # spot offset in crop px
TOP_C, BOTTOM_C = (CROP_W / 2, CROP_H * 0.29), (CROP_W / 2, CROP_H * 0.71)
RED_HALVES = (1, 4)


def half(n: int, way: int = 1) -> list[tuple[float, float]]:
    """Offsets of a Chinese half's spots (crop px); a 3 runs ``way`` (+1 top-left to
    bottom-right)."""
    return {1: [(0, 0)], 2: [(-S, 0), (S, 0)],
            3: [(-S, -S), (0, 0), (S, S)] if way == 1 else [(S, -S), (0, 0), (-S, S)],
            4: [(-S, -S), (S, -S), (-S, S), (S, S)],
            5: [(-S, -S), (S, -S), (0, 0), (-S, S), (S, S)],
            6: [(-S, y) for y in (-S, 0, S)] + [(S, y) for y in (-S, 0, S)]}[n]


def tile(top: int, bottom: int, poly=LEFT, way: int = 1, turn: bool = False) -> TileRead:
    """A TileRead decoded (decode_face) from spots drawn in the upright crop: ``top`` half over
    ``bottom``, 3s running ``way``; ``turn`` turns the crop end for end (half a turn)."""
    pts, cls = [], []
    for n, (cx, cy) in ((top, TOP_C), (bottom, BOTTOM_C)):
        for dx, dy in half(n, way):
            pts.append((cx + dx, cy + dy))
            cls.append(PIP_RED if n in RED_HALVES else PIP_WHITE)
    c = np.array(pts, np.float64)
    if turn:
        c = np.array([CROP_W, CROP_H]) - c
    face, conf, reads = decode_face(c, cls, np.full(len(c), 0.9))
    pips = Detections(np.c_[c - 4, c + 4], np.full(len(c), 0.9), cls)
    poly = np.asarray(poly, np.float32)
    return TileRead(face, "face_up" if face else "unknown", 0.9, poly,
                    np.r_[poly.min(0), poly.max(0)], pips, reads,
                    None if face else reads.get("reason"))


def test_three_hands_reads_the_way_a_3_runs_and_half_a_turn_keeps_it():
    assert tile(1, 3).face == "1-3"
    assert three_hands(tile(1, 3, way=1)) == (1,)
    assert three_hands(tile(1, 3, way=-1)) == (-1,)
    assert three_hands(tile(1, 3, way=1, turn=True)) == (1,)     # end for end: the same way
    assert three_hands(tile(3, 3, way=-1)) == (-1, -1)
    assert three_hands(tile(1, 5)) is None                       # no 3
    assert three_hands(read("1-3", LEFT)) is None                # nothing to measure


def test_a_quarter_turn_makes_a_3_run_the_other_way():
    p = np.array(half(3, 1), np.float64)
    for k in (1, 3):  # a quarter turn either way (a camera never mirrors)
        a = np.radians(90 * k)
        q = p @ np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]]).T
        assert _diagonal(q[np.argsort(q[:, 1])]) == -1
    assert _diagonal(p) == 1


def test_the_table_way_needs_unanimous_votes_of_two_faces():
    assert (MIN_VOTES, MIN_FACES) == (2, 2)
    assert table_hand([tile(1, 3), tile(3, 5)]) == 1
    assert table_hand([tile(1, 3, way=-1), tile(3, 6, way=-1)]) == -1
    # two copies of one face: a box pair across two 1-3s would vote so too
    assert table_hand([tile(1, 3), tile(3, 1)]) is None
    # one tile the other way: the set is drawn both ways, or a vote is a box across two tiles
    assert table_hand([tile(1, 3), tile(3, 5), tile(2, 3, way=-1)]) is None
    # 3-3 does not vote (some sets draw it the other way from their mixed tiles)
    assert table_hand([tile(1, 3), tile(3, 3, way=-1), tile(3, 5)]) == 1
    assert table_hand([tile(1, 3)]) is None


def test_against_and_shows_way():
    assert against([tile(1, 1), tile(3, 5, way=-1)], 1)
    assert not against([tile(1, 3), tile(1, 5)], 1)
    assert not against([tile(1, 3, way=-1)], None)      # no way voted: nothing ruled out
    assert not against([tile(3, 3, way=-1)], 1)         # 3-3 goes its own way
    assert shows_way(tile(1, 3), 1) and not shows_way(tile(1, 3), -1)
    assert not shows_way(tile(1, 5), 1) and not shows_way(tile(1, 3), None)


def block_decoder(truth):
    """An outline on one of ``truth``'s polygons (IoU >= 0.8) reads its TileRead; any other is
    unknown."""
    from vision.geometry import polygon_iou_matrix

    polys = [p for p, _ in truth]

    def run(q, conf):
        iou = polygon_iou_matrix(np.asarray(q, np.float32), np.stack(polys))
        out = []
        for p, v in zip(q, iou):
            if v.max() >= 0.8:
                t = truth[int(np.argmax(v))][1]
                out.append(tile(t[0], t[1], poly=p, way=t[2]))
            else:
                out.append(read(None, p))
        return out
    return run


def faces(out):
    return sorted(r.face for r in out if r.face)


def test_rule_6_rules_out_the_cut_whose_3_runs_against_the_table():
    """A 1-3 | 1-5 block: lengthwise it reads 1-3 (its 3 running the set's way, +1) and 1-5;
    crosswise 1-1 and 3-5, the 3 turned a quarter (-1). Both cuts read: unsure without the
    table's way; with it the lengthwise cut is taken."""
    dec = block_decoder([(LEFT, (1, 3, 1)), (RIGHT, (1, 5, 1)),
                         (TOP, (1, 1, 1)), (BOTTOM, (3, 5, -1))])
    seed = read(None, TOP)
    out = refine_unknowns(KNOWN + [seed], picture(), dec)
    assert faces(out) == ["2-2", "6-6"]                       # abstains: either cut reads
    out = refine_unknowns(KNOWN + [seed], picture(), dec, way=lambda: 1)
    assert faces(out) == ["1-3", "1-5", "2-2", "6-6"]
    assert not any(r.state == "unknown" for r in out)
    # the table's set drawn the other way: then it is the crosswise cut that is consistent
    out = refine_unknowns(KNOWN + [seed], picture(), dec, way=lambda: -1)
    assert faces(out) == ["1-1", "2-2", "3-5", "6-6"]


def test_rule_3_lifted_for_a_3_running_the_tables_way():
    """Only the lengthwise cut reads, both faces alike turned a quarter (rule 3 abstains):
    the 1-3's 3 running the table's way shows it is no box across two tiles."""
    dec = block_decoder([(LEFT, (1, 3, 1)), (RIGHT, (1, 5, 1))])
    seed = read(None, TOP)
    assert faces(refine_unknowns(KNOWN + [seed], picture(), dec)) == ["2-2", "6-6"]
    out = refine_unknowns(KNOWN + [seed], picture(), dec, way=lambda: 1)
    assert faces(out) == ["1-3", "1-5", "2-2", "6-6"]
    # running against it: no lift (it would be what a box across shows)
    out = refine_unknowns(KNOWN + [seed], picture(), dec, way=lambda: -1)
    assert faces(out) == ["2-2", "6-6"]
    # no way voted (None): as before
    assert faces(refine_unknowns(KNOWN + [seed], picture(), dec, way=lambda: None)) == \
        ["2-2", "6-6"]


def test_cut_either_way_leaves_a_pair_whose_3_runs_the_tables_way():
    pair = [tile(1, 3, LEFT), tile(5, 5, RIGHT)]
    assert [r.face for r in cut_either_way(pair)] == [None, None]
    got = cut_either_way(pair, lengthwise=lambda r: shows_way(r, 1))
    assert [r.face for r in got] == ["1-3", "5-5"]
    got = cut_either_way(pair, lengthwise=lambda r: shows_way(r, -1))
    assert [r.face for r in got] == [None, None]


def test_a_spared_tile_seeds_the_refit_and_is_given_back_where_the_refit_takes_nothing():
    """The guards make the 1-3 on LEFT unknown (nothing read on RIGHT beside it). Spared (its
    3 runs the table's way): where the refit finds its flush neighbour, the block's tiles come
    from the refit; where the refit takes nothing, the 1-3 is given back as it was read --
    and without ``spare`` it stays unknown, as before."""
    from vision.recognition.refine import refine_guarded

    def refit(dec):
        return lambda rs, only=None: refine_unknowns(rs, picture(), dec, only=only,
                                                     way=lambda: 1)

    mine = tile(1, 3, LEFT)
    spare = lambda r: shows_way(r, 1)  # noqa: E731

    def sparing(rs):  # the guards taking spare's word, as the engine's do
        return [r if g.state == "unknown" and r.state == "face_up" and spare(r) else g
                for r, g in zip(rs, flush_guard()(rs))]

    nothing = block_decoder([(box_far(), (2, 2, 1))])  # reads nothing of the block
    out = refine_guarded(KNOWN + [mine], flush_guard(), refit(nothing))
    assert faces(out) == ["2-2", "6-6"]
    out = refine_guarded(KNOWN + [mine], flush_guard(), refit(nothing), sparing, spare)
    assert faces(out) == ["1-3", "2-2", "6-6"] and any(r is mine for r in out)
    found = block_decoder([(LEFT, (1, 3, 1)), (RIGHT, (2, 6, 1))])
    out = refine_guarded(KNOWN + [mine], flush_guard(), refit(found), sparing, spare)
    assert faces(out) == ["1-3", "2-2", "2-6", "6-6"]
    assert not any(r is mine for r in out)  # the refit's tiles, not the given-back read


def box_far():
    return np.array([[380, 380], [390, 380], [390, 399], [380, 399]], np.float32)


def test_the_renderer_draws_a_styles_3s_one_way_when_asked():
    """``extra["three_way"]`` makes every 3 run that way; without it each 3 runs either way at
    random from the same draw as before (rendered seeds unchanged)."""
    from vision.synth import draw as D

    st = D.random_style(np.random.default_rng(5), "black")
    ways = set()
    for k in range(20):
        p = np.array(D.half_layout(3, st, np.random.default_rng(k)))
        ways.add(_diagonal(p[np.argsort(p[:, 1])]))
    assert ways == {1, -1}
    for way in (1, -1):
        st.extra["three_way"] = way
        for k in range(20):
            p = np.array(D.half_layout(3, st, np.random.default_rng(k)))
            assert _diagonal(p[np.argsort(p[:, 1])]) == way
