"""Table logic (vision/table/rounds.py, vision/table/events.py) on hand-made tile reads."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scoring.errors import InputError
from scoring.setting import make_setting
from scoring.settle import settle_round
from vision.table.rounds import FrameHeader
from vision.schema import AlertCode
from vision.table.events import EventWriter, round_event
from vision.table.rounds import (SEAT_MODEL, Layout, RoundTracker, assign_positions, auto_group,
                          build_positions, load_layout, pair_hands)

from helpers.table_reads import LAYOUT, TH, TW, box, position_tiles, tile  # noqa: E402,F401

DEAL = {  # one valid deal (faces within the set's copies)
    "dealer": ["6-6", "4-5", "1-3", "2-2"],
    "1": ["1-1", "3-6", "5-5", "1-6"],
    "2": ["2-4", "1-2", "4-4", "3-4"],
    "3": ["5-6", "4-6", "1-5", "2-3"],
}
ORIGINS = {"dealer": (800, 100), "1": (1400, 700), "2": (900, 700), "3": (300, 700)}


def table_reads(deal=DEAL, drop=None, unknown=None):
    reads = []
    for pos, faces in deal.items():
        ts = position_tiles(faces, *ORIGINS[pos])
        if unknown and unknown[0] == pos:
            ts[unknown[1]] = tile(None, *ts[unknown[1]].centre, state="unknown")
        if drop and drop[0] == pos:
            ts.pop(drop[1])
        reads += ts
    return reads


def true_result(deal=DEAL, only=None):
    settings = {}
    for p, f in deal.items():
        if only is not None and p not in only:
            continue
        a, b = make_setting(f[:2], f[2:]), make_setting(f[2:], f[:2])
        settings[p] = a if a.keys()[0] >= a.keys()[1] else b
    return settle_round(settings)


# ------------------------------------------------------------------ layout


def test_layout_from_dict_and_errors(tmp_path):
    assert LAYOUT.table_id == "t9" and set(LAYOUT.positions) == {"dealer", "1", "2", "3"}
    good = {"positions": {"dealer": box(0, 0, 10, 10)}}
    with pytest.raises(InputError, match="'9'"):
        Layout.from_dict({"positions": {"9": box(0, 0, 1, 1)}})
    with pytest.raises(InputError, match="polygon of position 'dealer'"):
        Layout.from_dict({"positions": {"dealer": [[0, 0], [1, 1]]}})
    with pytest.raises(InputError, match="xx"):
        Layout.from_dict({**good, "rules": "xx"})
    with pytest.raises(InputError, match="-3"):
        Layout.from_dict({**good, "bets": {"dealer": "-3"}})
    with pytest.raises(InputError, match="colour"):
        Layout.from_dict({**good, "colour": "red"})
    with pytest.raises(InputError, match="banker"):
        Layout.from_dict({**good, "banker": "4"})
    lay = Layout.from_dict({**good, "commission": 0.04, "bets": {"dealer": 2.5}})
    assert lay.commission == "0.04" and lay.bets == {"dealer": "2.5"}
    with pytest.raises(InputError, match="nope.yaml"):
        load_layout(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("positions: [unclosed\n")
    with pytest.raises(InputError, match="bad.yaml"):
        load_layout(bad)
    txt = tmp_path / "t.yaml"
    txt.write_text("just text\n")
    with pytest.raises(InputError, match="t.yaml"):
        load_layout(txt)
    ok = tmp_path / "ok.yaml"
    import yaml

    ok.write_text(yaml.safe_dump(LAYOUT.to_dict()))
    again = load_layout(ok)
    assert again.table_id == "t9" and np.allclose(again.positions["1"], LAYOUT.positions["1"])


def test_points_in_polygon():
    from vision.geometry import points_in_polygon

    sq = box(0, 0, 10, 10)
    assert points_in_polygon([(5, 5), (15, 5)], sq).tolist() == [True, False]
    tri = [[0, 0], [10, 0], [0, 10]]
    assert points_in_polygon([(2, 2), (8, 8)], tri).tolist() == [True, False]


def test_assign_positions_by_polygon():
    reads = table_reads()
    reads.append(tile("2-5", 50, 50))  # outside every polygon
    groups = assign_positions(reads, LAYOUT)
    for pos, faces in DEAL.items():
        assert sorted(r.face for r in groups[pos]) == sorted(faces)
    assert sum(len(v) for v in groups.values()) == 16


def arc_reads(deal=DEAL, frame=(1920, 1080)):
    """The deal's positions laid at their places of the table model (vision.table.rounds.SEAT_MODEL)."""
    reads = []
    for pos, faces in deal.items():
        mx, my = SEAT_MODEL[pos]
        cx, cy = frame[0] / 2 + frame[1] * mx, frame[1] / 2 + frame[1] * my
        reads += position_tiles(faces, cx - (3 * TW + 22) / 2, cy, hand_gap=20.0)
    return reads


def test_auto_group_names_dealer_top_and_seats_by_place():
    groups = auto_group(arc_reads(), frame_size=(1920, 1080))
    assert set(groups) == {"dealer", "1", "2", "3"}
    for pos, faces in DEAL.items():
        assert sorted(r.face for r in groups[pos]) == sorted(faces)
    # seats 2, 3 and 4 present (seat 1 empty): named by place, not counted from the right
    deal = {"dealer": DEAL["dealer"], "2": DEAL["1"], "3": DEAL["2"], "4": DEAL["3"]}
    groups = auto_group(arc_reads(deal), frame_size=(1920, 1080))
    assert {p: sorted(r.face for r in ts) for p, ts in groups.items()} == \
        {p: sorted(f) for p, f in deal.items()}


def test_pair_hands_by_proximity_any_order_high_first():
    ts = position_tiles(["1-3", "2-2", "6-6", "4-5"], 0, 0)
    for perm in ([0, 1, 2, 3], [3, 1, 0, 2], [2, 0, 3, 1]):
        hi, lo = pair_hands([ts[i] for i in perm])
        assert sorted(t.face for t in hi) == ["4-5", "6-6"]  # Teen wong beats Gor-Bon 6
        assert sorted(t.face for t in lo) == ["1-3", "2-2"]
    with pytest.raises(InputError):
        pair_hands(ts[:3])


def test_build_positions_problems():
    reads = table_reads(drop=("1", 0), unknown=("2", 3))
    ps = build_positions(assign_positions(reads, LAYOUT))
    assert ps["dealer"].setting is not None and not ps["dealer"].problems
    assert ps["1"].setting is None and ps["1"].problems[0][0] == "wrong_tile_count"
    assert ps["2"].setting is None and ps["2"].problems[0][0] == "unknown_tile"
    back = table_reads()
    back[5] = tile(None, *back[5].centre, state="face_down")
    ps = build_positions(assign_positions(back, LAYOUT))
    assert ps["1"].problems == [("face_down", "1 tile(s) face down")]


def test_tile_back_beside_four_identified_tiles_is_set_aside():
    """A seat is dealt four tiles: a back beside four identified face-up tiles is an undealt
    stack (docs/rules.md section 5); a back with three face-up tiles keeps the seat open."""
    reads = table_reads()
    stack = tile(None, *(reads[4].centre + [0, TH + 4]), state="face_down")  # under seat 1
    ps = build_positions(assign_positions(reads + [stack], LAYOUT))
    st = ps["1"]
    assert st.problems == [] and st.set_aside == [stack]
    assert sorted(x.face for x in st.setting.tiles) == sorted(DEAL["1"])
    assert len(st.tiles) == 4 and all(x is not stack for x in st.tiles)
    # one face-up tile unknown: the back is not set aside, nothing settles
    reads[5] = tile(None, *reads[5].centre, state="unknown")
    st = build_positions(assign_positions(reads + [stack], LAYOUT))["1"]
    assert st.setting is None and st.set_aside == []
    assert [k for k, _ in st.problems] == ["wrong_tile_count", "unknown_tile", "face_down"]
    # three face-up tiles and the back: a hand not turned over yet
    three = table_reads(drop=("1", 0))
    st = build_positions(assign_positions(three + [stack], LAYOUT))["1"]
    assert st.setting is None and [k for k, _ in st.problems] == ["face_down"]


# ------------------------------------------------------------------ tracker


def run_frames(tracker, frames):
    events = []
    for i, reads in enumerate(frames):
        r = tracker.update(build_positions(assign_positions(reads, LAYOUT)), FrameHeader(index=i))
        if r is not None:
            events.append((i, r))
    return events


def test_tracker_settles_once_after_n_stable_and_matches_scoring():
    occluded = table_reads(drop=("dealer", 1))
    full = table_reads()
    frames = [occluded] * 3 + [full] * 8
    events = run_frames(RoundTracker(n_stable=4), frames)
    assert [i for i, _ in events] == [6]  # 3 occluded frames, then the 4th identical one
    rnd = events[0][1]
    want = true_result()
    assert rnd.final == ["dealer", "1", "2", "3"] and rnd.not_settled == {}
    for p, s in want.seats.items():
        got = rnd.result.seats[p]
        assert (got.result, got.net) == (s.result, s.net)
        assert got.setting.same_hands(s.setting)


def test_tracker_unknown_tile_position_not_settled_others_exact():
    frames = [table_reads(unknown=("2", 1))] * 12
    (i, rnd), = run_frames(RoundTracker(n_stable=3, settle_wait=4), frames)
    assert i == 2 + 4  # banker final at frame 2, then 4 more frames waiting for seat 2
    assert rnd.final == ["dealer", "1", "3"]
    assert "unknown" in rnd.not_settled["2"]
    want = true_result(only={"dealer", "1", "3"})
    for p in ("1", "3"):
        assert rnd.result.seats[p].result == want.seats[p].result
    assert "2" not in rnd.result.seats
    assert rnd.alerts[0].to_dict() == {"kind": "unknown_tile", "position": "2",
                                       "detail": rnd.alerts[0].detail}
    assert rnd.alerts[0].kind is AlertCode.UNKNOWN_TILE
    ev = round_event(rnd, "r000001", table_id="t9", source="x", frame_index=i)
    assert ev["positions"]["2"]["result"] == "not_settled"
    assert ev["positions"]["2"]["tiles"].count(None) == 1
    assert ev["positions"]["1"]["result"] == want.seats["1"].result
    assert ev["positions"]["1"]["net"] == str(want.seats["1"].net)
    json.dumps(ev)


def test_tracker_banker_unknown_settles_nothing():
    frames = [table_reads(unknown=("dealer", 0))] * 5
    assert run_frames(RoundTracker(n_stable=2), frames) == []


def test_tracker_waits_for_late_seat_then_new_round_after_clear():
    full = table_reads()
    late = table_reads(drop=("3", 2))
    other = dict(DEAL, dealer=["5-5", "6-6", "2-2", "1-3"], **{"1": ["1-1", "3-6", "4-5", "1-6"]})
    frames = [late, late, full, full, full, full] + [[]] * 3 + [table_reads(other)] * 3
    events = run_frames(RoundTracker(n_stable=2, settle_wait=3), frames)
    assert [i for i, _ in events] == [3, 10]
    assert events[0][1].final == ["dealer", "1", "2", "3"]


def test_tracker_gives_up_waiting_for_a_seat_after_settle_wait():
    late = table_reads(drop=("3", 2))
    flicker = [late, table_reads(drop=("3", 1))] * 4
    events = run_frames(RoundTracker(n_stable=2, settle_wait=2), flicker)
    assert len(events) == 1
    rnd = events[0][1]
    assert "3" in rnd.not_settled and rnd.final == ["dealer", "1", "2"]


def test_duplicate_face_excludes_its_holders():
    deal = dict(DEAL, **{"3": ["5-6", "4-6", "1-5", "6-6"]})  # a third 6-6? no: two in set
    deal["1"] = ["6-6", "3-6", "5-5", "1-6"]  # dealer 6-6, seat 1 6-6, seat 3 6-6: three
    (i, rnd), = run_frames(RoundTracker(n_stable=1), [table_reads(deal)])
    kinds = [a.kind for a in rnd.alerts]
    assert "duplicate_face" in kinds
    assert rnd.result is None and rnd.final == []  # the banker holds a 6-6 too
    assert all("duplicate" in r or "banker" in r for r in rnd.not_settled.values())
    # one check with the round event's alerts: the same alert, held once after merging
    from vision.table.alerts import duplicate_faces, merge_alerts

    (dup,) = [a.to_dict() for a in rnd.alerts if a.kind is AlertCode.DUPLICATE_FACE]
    assert dup == {"kind": "duplicate_face", "position": "3",  # dealer, 1, then the third
                   "detail": "face 6-6 seen 3 times (positions dealer, 1, 3); a set holds 2"}
    ev = round_event(rnd, "r1")
    assert duplicate_faces(ev) == [dup]
    merged = merge_alerts(ev["alerts"], duplicate_faces(ev))
    assert [a for a in merged if a["kind"] == "duplicate_face"] == [dup]


def test_player_bank_and_bets_from_layout():
    tr = RoundTracker(n_stable=1, banker="2", bets={"1": "10", "2": "5"})
    (i, rnd), = run_frames(tr, [table_reads()])
    assert rnd.result.banker_position == "2" and rnd.result.seats["1"].bet == 10
    ev = round_event(rnd, "r1")
    assert ev["banker_position"] == "2" and ev["positions"]["2"]["role"] == "banker"
    assert ev["positions"]["dealer"]["result"] in ("win", "lose", "push")


def test_event_writer(tmp_path):
    (i, rnd), = run_frames(RoundTracker(n_stable=1), [table_reads()])
    ev = round_event(rnd, "r000001", table_id="t9", source="s.png", frame_index=0)
    assert ev["positions"]["dealer"]["is_house_way"] in (True, False)
    assert set(ev) >= {"round_id", "table_id", "time", "source", "frame_index", "rules",
                       "commission", "house_way", "model_version", "banker_position",
                       "positions", "alerts", "tiles"}
    with EventWriter(tmp_path / "o" / "events.jsonl") as w:
        w.write(ev)
    lines = (tmp_path / "o" / "events.jsonl").read_text().splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["round_id"] == "r000001"


def test_long_occlusion_of_the_banker_does_not_re_emit_the_round():
    full = table_reads()
    hidden = table_reads(drop=("dealer", 0))
    frames = [full] * 3 + [hidden] * 6 + [full] * 6
    events = run_frames(RoundTracker(n_stable=2), frames)
    assert [i for i, _ in events] == [1]
