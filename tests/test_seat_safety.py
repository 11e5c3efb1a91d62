"""Seat safety without a layout (issue 8 item 3): a seat is never settled with another seat's
tiles.

Part one places hand-made tile reads on the table (vision.table.rounds.group_seats, build_positions,
RoundTracker): a chip taken for a tile, a split hand, an empty seat, a group between two seats.
Part two runs the product (shipped models, ``Pipeline`` without a layout, still frames) on
held-out rendered tables with chips, cards and a woodpile of face-down stacks
(tests/seat_scenes.py) and checks every settled position against the truth of the scene.
"""

from __future__ import annotations

import numpy as np
import pytest

from vision.recognition.decode import TileRead
from vision.table.rounds import FrameHeader
from vision.table.rounds import (RoundTracker, auto_group, build_positions, group_seats)

from helpers.seat_reads import DEAL, FRAME, TH, TW, named, place, position, table, tile, truth  # noqa: E402,F401


def settle(reads):
    g = group_seats(reads, FRAME)
    pos = build_positions(g.groups, problems=g.problems)
    return g, pos, RoundTracker(n_stable=1).update(pos, FrameHeader())


def test_full_table_named_by_place_and_settled():
    g, pos, rnd = settle(table())
    assert g.reason is None and not g.problems
    assert named(g.groups) == truth(DEAL)
    assert rnd.final == list(DEAL)


def test_stray_tile_does_not_shift_seats():
    """A chip taken for a tile (1000101) beside seat 2: seat 2 is not settled (5 tiles), every
    other seat keeps its own tiles."""
    reads = table()
    cx, cy = place("2")
    reads.append(tile(None, cx + 10, cy - 120, state="unknown"))  # a "tile" beside seat 2
    g, pos, rnd = settle(reads)
    assert "2" not in rnd.final and "5 tiles" in pos["2"].reason
    for p in DEAL:
        if p != "2":
            assert named({p: g.groups[p]}) == truth({p: DEAL[p]})
    assert rnd.final == [p for p in DEAL if p != "2"]


def test_far_stray_is_left_out():
    reads = table()
    reads.append(tile("5-6", FRAME[0] / 2, FRAME[1] / 2))  # table centre: nobody's
    g, _, rnd = settle(reads)
    assert named(g.groups) == truth(DEAL) and rnd.final == list(DEAL)
    assert [len(ts) for ts, _ in g.unplaced] == [1]


def test_split_hand_does_not_shift_seats():
    """Seat 3's hands lie far apart (1000303): seats 5-7 keep their names and settle; seats 3
    and 4 are settled only with their own four tiles, or not at all."""
    g, pos, rnd = settle(table(**{"3": {"hand_gap": 150.0}}))
    for p in ("dealer", "1", "2", "5", "6", "7"):
        assert named({p: g.groups[p]}) == truth({p: DEAL[p]}) and p in rnd.final
    for p in ("3", "4"):
        if p in rnd.final:
            assert named({p: g.groups[p]}) == truth({p: DEAL[p]})
        else:
            assert rnd.not_settled[p]
    assert "4" in rnd.not_settled and "6 tiles" in rnd.not_settled["4"]  # a hand of 3 joined


def test_empty_seats_keep_numbers():
    deal = {p: DEAL[p] for p in ("dealer", "3", "4", "6")}
    g, _, rnd = settle(table(deal))
    assert named(g.groups) == truth(deal)
    assert rnd.final == ["dealer", "3", "4", "6"]
    deal = {p: DEAL[p] for p in ("dealer", "2", "3", "4", "5", "6", "7")}  # seat 1 empty
    assert named(auto_group(table(deal), FRAME)) == truth(deal)


def test_group_between_two_seats_makes_both_unclear():
    deal = {p: DEAL[p] for p in ("dealer", "1", "2", "5", "6", "7")}
    reads = table(deal)
    (x3, y3), (x4, y4) = place("3"), place("4")
    mid = [tile(f, (x3 + x4) / 2 + k * (TW + 2), (y3 + y4) / 2) for k, f in
           enumerate(["5-6", "4-6"])]
    g, pos, rnd = settle(reads + mid)
    for p in ("3", "4"):
        assert pos[p].setting is None and p not in rnd.final
        assert pos[p].problems[0][0] == "seat_unclear" and "between positions 3 and 4" in pos[p].reason
        assert rnd.not_settled[p] == pos[p].reason
    assert rnd.final == ["dealer", "1", "2", "5", "6", "7"]
    # callers that take only the groups never see the pair as a seat
    assert "3" not in auto_group(reads + mid, FRAME) and "4" not in auto_group(reads + mid, FRAME)


def test_four_tiles_not_as_two_hands_unclear():
    four = position("4", DEAL["4"])
    for k, r in enumerate(four):  # pull seat 4's tiles apart: no hand touches
        r.polygon = r.polygon + np.float32([(k - 1.5) * 40, 0])
    reads = table({p: f for p, f in DEAL.items() if p != "4"}) + four
    g, pos, rnd = settle(reads)
    assert "4" not in rnd.final and rnd.not_settled["4"]
    assert {k for k, _ in pos["4"].problems} & {"seat_unclear", "wrong_tile_count"}
    assert rnd.final == ["dealer", "1", "2", "6", "7"] or set(rnd.final) >= {"dealer", "1", "7"}
    grouped = auto_group(reads, FRAME)
    assert "4" not in grouped or len(grouped["4"]) != 4


def test_four_spread_tiles_in_place_are_not_two_hands():
    """Four tiles at a seat's place but lying one by one (no hand touches): unclear."""
    cx, cy = place("4")
    four = [tile(f, cx + (k - 1.5) * 70, cy + (k % 2) * 20) for k, f in enumerate(DEAL["4"])]
    reads = table({p: f for p, f in DEAL.items() if p != "4"}) + four
    g, pos, rnd = settle(reads)
    assert len(g.groups["4"]) == 4
    assert [k for k, _ in pos["4"].problems] == ["seat_unclear"]
    assert "4" not in rnd.final and "4" not in auto_group(reads, FRAME)
    assert rnd.final == [p for p in DEAL if p != "4"]


def test_too_few_groups_names_nothing():
    deal = {p: DEAL[p] for p in ("dealer", "4")}
    g, pos, rnd = settle(table(deal))
    assert g.groups == {} and "at least 4 are needed" in g.reason and rnd is None
    assert auto_group(table(deal), FRAME) == {}


def test_turned_picture_beyond_limit_names_nothing_wrong():
    """The picture turned 25 degrees: the seats may not be named, but never shifted."""
    reads = table()
    c = np.array(FRAME, np.float32) / 2
    t = np.radians(25)
    R = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]], np.float32)
    for r in reads:
        r.polygon = ((r.polygon - c) @ R.T + c).astype(np.float32)
    g, _, _ = settle(reads)
    for p, ts in g.groups.items():
        assert named({p: ts}) == truth({p: DEAL[p]})


def _turned(reads, deg, about=None):
    """The reads' outlines turned ``deg`` degrees about ``about`` (default the frame's centre)."""
    c = np.array(FRAME, np.float32) / 2 if about is None else np.asarray(about, np.float32)
    t = np.radians(deg)
    R = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]], np.float32)
    for r in reads:
        r.polygon = ((r.polygon - c) @ R.T + c).astype(np.float32)
    return reads


@pytest.mark.parametrize("deg", [-30, -18, 18, 30])
def test_camera_turned_on_its_mount_still_names_every_seat(deg):
    """A camera turned up to 30 degrees: every seat named by its place (before 2026-12-05 the fit
    tried turns of 12 degrees at most and named nothing past them)."""
    g, _, rnd = settle(_turned(table(), deg))
    assert g.reason is None and named(g.groups) == truth(DEAL)
    assert rnd.final == list(DEAL)


def test_dealer_hand_laid_askew_is_still_placed():
    """The dealer's tiles lie 15 degrees off square (a hand laid askew, as on rendered seed
    3000008, one of bench_live's tables): no other placement fits about as well, so the seats
    are named (before: no placement, and the round was never settled)."""
    reads = table()
    dealer = [r for r in reads[:4]]
    _turned(dealer, 15, about=place("dealer"))
    g, _, rnd = settle(reads)
    assert g.reason is None and named(g.groups) == truth(DEAL)
    assert rnd.final == list(DEAL)


def _rendered_reads(seed, deal, deg):
    """Exact tile outlines (face up, read right) of rendered table ``seed`` (style ivory, 1080p),
    turned ``deg`` degrees about the frame's centre."""
    from vision.synth.render import render_scene

    scene = render_scene(seed, (1920, 1080), mode="table", style="ivory", deal=deal)
    reads = []
    for t in scene.tiles:
        poly = np.asarray(t.polygon, np.float32).reshape(4, 2)
        reads.append(TileRead(t.face, "face_up", 0.95, poly, np.r_[poly.min(0), poly.max(0)]))
    return scene, _turned(reads, deg)


def test_turned_table_with_empty_seats_is_never_named_shifted():
    """Rendered seed 3000008 (seats 3 and 7 empty) turned 14 degrees: before 2026-12-05 the fit,
    limited to 12 degrees and to a dealer within 12 degrees of square, found only the arc
    shifted by a seat and named seat 1's tiles seat 2, seat 2's seat 3, ... (every seat settled
    with another's hand). Now the true placement is within reach and every seat is its own."""
    deal = {"dealer": ["1-1", "3-4", "1-3", "1-5"], "1": ["5-6", "3-3", "6-6", "2-5"],
            "2": ["1-6", "4-6", "4-4", "1-1"], "4": ["5-6", "2-6", "2-3", "2-2"],
            "5": ["4-4", "2-4", "3-6", "5-5"], "6": ["1-2", "4-6", "2-2", "4-5"]}
    for deg in (14, 0):
        scene, reads = _rendered_reads(3_000_008, deal, deg)
        g = group_seats(reads, FRAME)
        where = {id(r): t.position for r, t in zip(reads, scene.tiles)}
        assert g.reason is None, (deg, g.reason)
        assert {p: sorted(where[id(r)] for r in ts) for p, ts in g.groups.items()} == {
            p: [p] * 4 for p in deal}, deg


@pytest.mark.parametrize("seed,deal", [
    (3_000_226, {"dealer": ["3-3", "2-6", "2-2", "4-6"], "2": ["4-4", "5-5", "1-5", "6-6"],
                 "3": ["2-3", "1-3", "4-5", "1-4"], "4": ["4-6", "3-6", "1-5", "3-4"],
                 "5": ["5-5", "2-5", "1-6", "1-1"], "6": ["3-5", "5-6", "1-2", "2-2"],
                 "7": ["6-6", "5-6", "2-4", "4-4"]}),
    (3_000_174, {"dealer": ["1-4", "2-3", "1-1", "3-3"], "3": ["5-5", "3-5", "6-6", "2-2"],
                 "5": ["3-3", "1-1", "6-6", "1-5"], "6": ["4-6", "2-2", "1-2", "5-5"],
                 "7": ["1-3", "2-6", "5-6", "4-4"]})])
def test_upright_table_named_though_the_arc_fits_shifted_too(seed, deal):
    """An upright rendered table with seat 1 empty: the arc also fits shifted by a seat, turned
    18-23 degrees, nearly as well. Its worse fit and its dealer further from square score it
    out (RIVAL_MARGIN); the dealer's turn alone could not (the first version of the wider turn,
    f5474a9, named no seat here)."""
    scene, reads = _rendered_reads(seed, deal, 0)
    g = group_seats(reads, FRAME)
    where = {id(r): t.position for r, t in zip(reads, scene.tiles)}
    assert g.reason is None, g.reason
    assert {p: sorted(where[id(r)] for r in ts) for p, ts in g.groups.items()} == {
        p: [p] * 4 for p in deal}


# ------------------------------------------------------------------ the product, rendered tables

#: held-out seeds, 1000101 (a chip taken for a tile) and 1000303 (a hand split in two) among them:
#: with the grouping in table order they shifted every later seat.
ALL_SEEDS = tuple(range(1_000_101, 1_000_126)) + tuple(range(1_000_303, 1_000_328))


@pytest.fixture(scope="module")
def pipe():
    from vision import MODELS_DIR
    from vision.pipeline import Pipeline

    if not (MODELS_DIR / "tiles.onnx").is_file():
        pytest.skip("shipped models not present")
    p = Pipeline(models_dir=MODELS_DIR, backend="onnx", n_stable=1, draw=False)
    p.still_images = True  # each frame is an independent table, as `paigow run` on images
    return p


def _check_tables(pipe, seeds):
    from seat_scenes import match_reads, seat_violations, table_with_distractors

    settled = readable = 0
    bad: list[str] = []
    for seed in seeds:
        scene = table_with_distractors(seed)
        pipe.tracker.reset()
        _, res = pipe.process(scene.image)
        rnd = res.settled
        final = {p: rnd.positions[p].tiles for p in rnd.final} if rnd is not None else {}
        # a position settled with a fourth tile not seen: its three identified tiles (its other
        # outlines, unread, take no part in the settlement: vision.table.open_tile)
        not_seen = {p for p in final if rnd.positions[p].missing}
        for p in not_seen:
            final[p] = [r for r in final[p] if r.state == "face_up"]
        bad += [f"seed {seed}: {v}" for v in seat_violations(scene, res.reads, final, not_seen)]
        if not_seen:
            from fakes import true_settings

            from scoring.settle import settle_round

            true = settle_round(true_settings(scene.deal))
            bad += [f"seed {seed}: seat {p} settled {rnd.result.seats[p].result}, truth "
                    f"{true.seats[p].result}" for p in rnd.final if p != "dealer"
                    and (p in not_seen or "dealer" in not_seen)
                    and rnd.result.seats[p].result != true.seats[p].result]
        settled += sum(p != "dealer" for p in final)
        # seats a layout could settle: the dealer's and the seat's four tiles all read right
        m = match_reads(scene, res.reads)
        right: dict[str, int] = {}
        for r, k in zip(res.reads, m):
            if k is not None and r.face == scene.tiles[k].face:
                right[scene.tiles[k].position] = right.get(scene.tiles[k].position, 0) + 1
        if right.get("dealer") == 4:
            readable += sum(n == 4 for p, n in right.items() if p != "dealer")
    return settled, readable, bad


@pytest.mark.slow  # about 10 minutes: 50 rendered tables through the shipped models
def test_no_seat_settled_with_another_seats_tiles_50_tables(pipe):
    """The acceptance check of issue 8: 50 held-out tables with chips, cards and face-down
    stacks, no layout -- no seat settled with another seat's tiles (the grouping in table order
    it replaces settled many seats here with a neighbour's tiles); and the grouping settles at
    least 80 % of the seats whose four tiles and the dealer's were all read right."""
    settled, readable, bad = _check_tables(pipe, ALL_SEEDS)
    print(f"\n{len(ALL_SEEDS)} tables: {settled} of {7 * len(ALL_SEEDS)} seats settled "
          f"({readable} seats read right with the dealer's), {len(bad)} violations")
    assert bad == []
    assert settled >= 0.8 * readable > 0
