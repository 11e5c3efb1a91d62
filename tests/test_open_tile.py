"""One unread tile (vision.open_tile, docs/rules.md section 5): a seat is settled only where
every face the tile could still be gives it the same result; no face is claimed for the tile.

Worked examples (faces and copies from docs/rules.md section 1): the dealer holds a Teen pair
(6-6 6-6) as the high hand. A player without the Gee Joon pair loses that hand whatever he
holds. Whether he loses the low hand too depends on the dealer's low hand."""

from __future__ import annotations

from collections import Counter

import pytest
from fakes import event_errors
from test_table import LAYOUT, position_tiles, tile

from scoring.setting import make_setting
from scoring.settle import settle_round
from vision.events import build_round
from vision.open_tile import candidate_faces, candidate_settings
from vision.table import RoundTracker, assign_positions, build_positions

ORIGINS = {"dealer": (800, 100), "1": (1400, 700), "2": (900, 700)}


def reads_of(deal, unknown=()):
    """Reads for ``deal`` (position -> four faces, two hands of two); ``unknown``: (position,
    index) pairs read as unknown."""
    out = []
    for pos, faces in deal.items():
        ts = position_tiles(faces, *ORIGINS[pos])
        for p, k in unknown:
            if p == pos:
                ts[k] = tile(None, *ts[k].centre, state="unknown")
        out += ts
    return out


def settle_still(reads):
    tracker = RoundTracker(n_stable=1)
    rnd = tracker.update(build_positions(assign_positions(reads, LAYOUT)), {"index": 0})
    return rnd or tracker.flush()


def test_candidate_faces_leave_out_what_the_set_has_used_up():
    used = Counter({"6-6": 2, "1-1": 1, "1-2": 1, "3-4": 1})
    faces = candidate_faces(used)
    assert "6-6" not in faces and "1-2" not in faces and "3-4" not in faces  # all copies seen
    assert "1-1" in faces                                                     # one of two left
    assert len(faces) == 21 - 3


def test_candidate_settings_put_the_higher_hand_high():
    hands = ([tile("2-3", 0, 0), tile("3-4", 50, 0)], [tile("4-6", 200, 0), tile(None, 250, 0)])
    sets = candidate_settings(hands, ["4-6", "1-3"])
    # 4-6 4-6 is a pair: the high hand
    assert [t.face for t in sets[0].high] == ["4-6", "4-6"]
    # 4-6 1-3 (14 spots: 4 points) is above 2-3 3-4 (12 spots: 2 points)
    assert sorted(t.face for t in sets[1].high) == ["1-3", "4-6"]
    assert sorted(t.face for t in sets[1].low) == ["2-3", "3-4"]
    with pytest.raises(ValueError):
        candidate_settings((hands[0], hands[0]), ["4-6"])


def test_a_seat_with_one_unread_tile_settles_when_every_face_gives_the_same_result():
    deal = {"dealer": ["6-6", "6-6", "1-1", "1-1"],      # Teen pair / Day pair
            "1": ["2-3", "3-4", "4-6", "5-5"]}           # 2 pts / 0 pts: loses both hands
    rnd = settle_still(reads_of(deal, unknown=[("1", 3)]))
    assert rnd.result is not None and rnd.final == ["dealer", "1"]
    assert rnd.result.seats["1"].result == "lose" and str(rnd.result.seats["1"].net) == "-1"
    assert "every face it could be" in rnd.unread["1"]
    ev = build_round(rnd, "r1")
    seat = ev.positions["1"]
    assert seat.result == "lose" and seat.net == "-1"
    assert seat.high is None and seat.low is None        # no face is claimed for the tile
    assert None in seat.tiles and "unknown" in seat.states
    assert ev.bank.net == "1"
    assert any(a.kind == "unread_tile" and a.position == "1" for a in ev.alerts)
    assert event_errors(ev.to_dict()) == []              # docs/round-event.schema.json
    # a settled seat must name its hands unless one of its tiles is unread
    bad = ev.to_dict()
    bad["positions"]["1"]["states"] = ["face_up"] * 4
    assert event_errors(bad) != []


def test_a_seat_whose_result_the_unread_tile_decides_is_not_settled():
    deal = {"dealer": ["2-3", "3-4", "1-5", "2-6"],      # a weak banker: the seat's tile decides
            "1": ["6-6", "4-5", "1-3", "2-2"]}
    rnd = settle_still(reads_of(deal, unknown=[("1", 3)]))
    assert rnd.result is None or "1" not in rnd.final
    assert "unknown" in rnd.not_settled["1"]
    assert rnd.unread == {}


def test_the_bankers_unread_tile_settles_only_the_seats_it_cannot_change():
    deal = {"dealer": ["6-6", "6-6", "1-1", "4-6"],      # Teen pair / Day + the unread tile
            "1": ["2-3", "3-4", "4-6", "5-5"],           # 2 pts / 0 pts: below Day + any tile
            "2": ["4-4", "4-4", "1-5", "5-6"]}           # Yun pair / 7 pts: Day pair beats it,
    rnd = settle_still(reads_of(deal, unknown=[("dealer", 3)]))  # Day + 4-6 (2 pts) does not
    assert rnd.final == ["dealer", "1"]
    assert rnd.result.seats["1"].result == "lose"
    assert "decides this seat" in rnd.not_settled["2"]
    # the bank's totals are those of the true deal with seat 1 alone
    true = settle_round({"dealer": make_setting(["6-6", "6-6"], ["1-1", "4-6"]),
                         "1": make_setting(["2-3", "3-4"], ["4-6", "5-5"])})
    assert rnd.result.bank_net == true.bank_net
    ev = build_round(rnd, "r1")
    assert ev.positions["dealer"].high is None and ev.positions["dealer"].net == str(true.bank_net)
    assert ev.positions["2"].result == "not_settled"
    assert event_errors(ev.to_dict()) == []


def test_a_duplicate_face_on_the_table_settles_nothing_this_way():
    deal = {"dealer": ["6-6", "6-6", "1-1", "1-1"],
            "1": ["2-3", "3-4", "4-6", "5-5"],
            "2": ["6-6", "4-4", "1-5", "5-6"]}           # a third 6-6: somebody misread
    rnd = settle_still(reads_of(deal, unknown=[("1", 3)]))
    assert rnd.unread == {}
    assert rnd.result is None or "1" not in rnd.final
