"""Integrity alerts from hand-written round events (vision/table/alerts.py)."""

import pytest

from scoring.errors import InputError
from vision.table.alerts import duplicate_faces, merge_alerts, mis_set_alerts, round_alerts


def _event(positions, **kw):
    ev = {"round_id": "r1", "table_id": "t", "time": "2026-11-29T12:00:00.000Z", "rules": "pa",
          "house_way": "reference", "positions": positions, "alerts": [], "tiles": []}
    ev.update(kw)
    return ev


def _pos(high, low, **kw):
    return {"tiles": high + low, "high": high, "low": low, **kw}


def test_three_teens_is_duplicate_face():
    ev = _event({"dealer": _pos(["6-6", "4-5"], ["1-3", "2-2"]),
                 "1": _pos(["6-6", "1-1"], ["3-3", "5-5"]),
                 "3": _pos(["6-6", "4-4"], ["2-6", "1-5"])})
    alerts = duplicate_faces(ev)
    assert [a["kind"] for a in alerts] == ["duplicate_face"]
    a = alerts[0]
    assert a["position"] == "3"  # the third 6-6, walking dealer, 1, 3
    assert "6-6 seen 3 times" in a["detail"] and "dealer, 1, 3" in a["detail"]


def test_military_face_twice_is_duplicate_but_civil_twice_is_not():
    ev = _event({"dealer": _pos(["6-6", "3-6"], ["1-3", "2-2"]),
                 "2": _pos(["6-6", "3-6"], ["1-1", "5-5"])})
    alerts = duplicate_faces(ev)
    assert [(a["kind"], a["position"]) for a in alerts] == [("duplicate_face", "2")]
    assert "3-6 seen 2 times" in alerts[0]["detail"] and "holds 1" in alerts[0]["detail"]


def test_unplaced_face_up_tile_counts_and_unknown_is_skipped():
    ev = _event({"dealer": _pos(["1-2", "4-5"], ["1-3", "2-2"])},
                tiles=[{"face": "1-2", "state": "face_up", "position": None},
                       {"face": None, "state": "unknown", "position": None},
                       {"face": "1-2", "state": "face_down", "position": None}])
    alerts = duplicate_faces(ev)
    assert len(alerts) == 1 and alerts[0]["position"] is None
    assert "unplaced" in alerts[0]["detail"]


def test_bad_face_raises_input_error_naming_it():
    with pytest.raises(InputError, match="7-7"):
        duplicate_faces(_event({"1": {"tiles": ["7-7", "1-1", "2-2", "3-3"]}}))


def test_mis_set_position():
    # seat 2 puts a pair (Day) in the low hand over 4-5 + 2-6 (high hand value 1): mis-set
    ev = _event({"dealer": _pos(["6-6", "4-5"], ["1-3", "2-2"]),
                 "2": _pos(["4-5", "2-6"], ["1-1", "1-1"])})
    alerts = mis_set_alerts(ev)
    assert [(a["kind"], a["position"]) for a in alerts] == [("mis_set", "2")]


def test_mis_set_flag_used_when_hands_unknown():
    ev = _event({"4": {"tiles": ["1-1", "2-2", "3-3", "4-4"], "mis_set": True}})
    assert [a["position"] for a in mis_set_alerts(ev)] == ["4"]


def _house_way():
    setting = pytest.importorskip("scoring.setting")
    if not hasattr(setting, "is_house_way") or not hasattr(setting, "house_way_setting"):
        pytest.skip("scoring.setting.is_house_way / house_way_setting not written yet (S2)")
    return setting


def test_dealer_off_house_way_is_deviation():
    setting = _house_way()
    tiles = ["6-6", "1-1", "4-5", "2-6"]
    hw = setting.house_way_setting([setting.parse_tile(t) for t in tiles], "reference", "pa")
    others = [s for s in setting.legal_splits(tiles, "pa") if not s.same_hands(hw)]
    assert others, "four distinct tiles have three splits"
    dev = others[0]
    ev = _event({"dealer": _pos([t.face for t in dev.high], [t.face for t in dev.low])})
    alerts = round_alerts(ev)
    assert [(a["kind"], a["position"]) for a in alerts] == [("house_way_deviation", "dealer")]
    ev_ok = _event({"dealer": _pos([t.face for t in hw.high], [t.face for t in hw.low])})
    assert round_alerts(ev_ok) == []


def test_house_way_flag_used_when_dealer_hands_unknown():
    ev = _event({"dealer": {"tiles": ["6-6", "1-1", "4-5", "2-6"], "is_house_way": False}})
    assert [a["kind"] for a in round_alerts(ev)] == ["house_way_deviation"]


def test_merge_keeps_event_alerts_and_adds_new_ones_once():
    given = [{"kind": "mis_set", "position": "2", "detail": "from pipeline"},
             {"kind": "unknown_tile", "position": "5", "detail": "x"}]
    computed = [{"kind": "mis_set", "position": "2", "detail": "computed"},
                {"kind": "duplicate_face", "position": "3", "detail": "face 6-6 seen 3 times"},
                {"kind": "duplicate_face", "position": "3", "detail": "face 1-1 seen 3 times"}]
    merged = merge_alerts(given, computed)
    assert [(a["kind"], a["position"], a["detail"]) for a in merged] == [
        ("mis_set", "2", "from pipeline"), ("unknown_tile", "5", "x"),
        ("duplicate_face", "3", "face 6-6 seen 3 times"),
        ("duplicate_face", "3", "face 1-1 seen 3 times")]
    # the same finding from the tracker (in the event) and from the event's tiles: held once
    ev = _event({"dealer": _pos(["6-6", "4-5"], ["1-3", "2-2"]),
                 "1": _pos(["6-6", "1-1"], ["3-3", "5-5"]),
                 "3": _pos(["6-6", "4-4"], ["2-6", "1-5"])})
    (dup,) = duplicate_faces(ev)
    assert merge_alerts([dict(dup)], duplicate_faces(ev)) == [dup]
    # the wording of a detail is not read: a different detail at the same position is kept
    other = dict(dup, detail="6-6 read 3 times (at dealer, 1, 3), a set holds 2")
    assert merge_alerts([other], [dup]) == [other, dup]


def test_a_typed_round_event_gives_the_alerts_of_its_json_form():
    """round_alerts reads a vision.schema.RoundEvent as it is (no round trip through a dict)
    and finds what it finds in the event's JSON form."""
    from fakes import event_from_deal

    from vision.schema import AlertCode, RoundEvent

    ev = event_from_deal({"dealer": ["6-6", "4-5", "1-3", "2-2"],
                          "1": ["6-6", "1-1", "3-3", "5-5"],
                          "3": ["6-6", "4-4", "2-6", "1-5"]}, "r000009")
    stray = dict(ev["tiles"][0], face="4-5", state="face_up", position=None)
    ev["tiles"] = ev["tiles"] + [stray]  # a 4-5 in no position: the set's only 4-5 is the dealer's
    pos1 = ev["positions"]["1"]
    pos1["high"], pos1["low"] = pos1["low"], pos1["high"]  # laid the wrong way round
    typed = RoundEvent.from_dict(ev)
    got = round_alerts(typed)
    assert got == round_alerts(ev)
    assert [(a["kind"], a["position"]) for a in got] == [
        (AlertCode.DUPLICATE_FACE, "3"), (AlertCode.DUPLICATE_FACE, None),
        (AlertCode.MIS_SET, "1")]
    assert got[1]["detail"] == "face 4-5 seen 2 times (positions dealer, unplaced); a set holds 1"
