"""Not-settled reasons as codes (issue 44 item 3): every :class:`vision.schema.SettleReason`
reached by a worked round, the code carried beside the unchanged words on positions and on the
round event, the dealer's words chosen by code, and events written before the codes still
loaded and told the same."""

from __future__ import annotations

import json

import pytest
from fakes import event_errors
from helpers.audit_events import _unread_round
from helpers.table_reads import LAYOUT, position_tiles, tile

from scoring.reasons import SeatReason
from scoring.rules import PA
from scoring.settle import settle_round
from vision.io.views import plain_reason, positions_view, reason_code_of
from vision.schema import PositionOutcome, RoundEvent, SettleReason
from vision.table.events import build_round
from vision.table.rounds import FrameHeader, RoundTracker, assign_positions, build_positions

S = SettleReason
ORIGINS = {"dealer": (800, 100), "1": (1400, 700), "2": (900, 700)}
DEAL = {"dealer": ["6-6", "4-5", "1-3", "2-2"], "1": ["1-1", "5-6", "3-4", "2-6"],
        "2": ["1-2", "2-4", "3-3", "5-5"]}
OTHER = {"dealer": ["1-4", "1-6", "2-5", "4-6"], "1": ["2-3", "3-6", "4-4", "5-5"],
         "2": ["1-5", "3-5", "3-4", "1-1"]}  # no face of DEAL's positions: another deal


def reads_of(deal, state=(), extra=()):
    """Tile reads of ``deal``; ``state``: (position, index, "unknown" | "face_down");
    ``extra``: (position, face) tiles added beside the position's four."""
    out = []
    for pos, faces in deal.items():
        ts = position_tiles(faces, *ORIGINS[pos])
        for p, k, st in state:
            if p == pos:
                ts[k] = tile(None, *ts[k].centre, state=st)
        for p, face in extra:
            if p == pos:
                ts.append(tile(face, ORIGINS[pos][0] + 330, ORIGINS[pos][1]))
        out += ts
    return out


def positions_of(reads, **kw):
    return build_positions(assign_positions(reads, LAYOUT), **kw)


def still(reads, **kw):
    """The round of one still picture (settled, or flushed: source ended)."""
    tracker = RoundTracker(n_stable=1, **kw)
    rnd = tracker.update(positions_of(reads), FrameHeader(index=0))
    return rnd or tracker.flush()


def event(rnd):
    ev = build_round(rnd, "r000001", time="2026-12-05T10:00:00.000Z")
    d = ev.to_dict()
    assert event_errors(d) == []  # docs/round-event.schema.json
    return ev, d


def codes_agree(rnd):
    """Every not-settled reason has its code, and the words are the code's own."""
    assert set(rnd.codes) == set(rnd.not_settled)
    for p, code in rnd.codes.items():
        assert isinstance(code, SettleReason), (p, code)
    assert (rnd.reason is None) == (rnd.reason_code is None)


# ------------------------------------------------------------------ the scoring engine


def test_the_scoring_engines_seat_reasons_carry_their_codes():
    bank = "1-1 1-1 / 4-4 5-6"
    r = settle_round({"dealer": bank, "1": "1-2 1-3 / 6-6 6-6"})             # a mis-set hand
    s = r.seats["1"]
    assert s.reason_code is SeatReason.MIS_SET_RESET
    assert s.reason == "mis-set (low hand above high hand): re-set by the house way 'reference'"
    r = settle_round({"dealer": bank, "1": "1-2 1-3 / 6-6 6-6"}, rules=PA.with_(mis_set="forfeit"))
    assert r.seats["1"].reason_code is SeatReason.MIS_SET_FORFEITED
    assert r.seats["1"].reason == "mis-set (low hand above high hand): forfeited"
    r = settle_round({"dealer": bank, "1": ["1-2", "2-4", "3-3", "2-5"]})    # given unset
    assert (r.seats["1"].reason_code, r.seats["1"].reason) == (
        SeatReason.SET_BY_HOUSE_WAY, "set by the house way (given unset)")
    assert r.seats["1"].to_dict()["reason_code"] == "set_by_house_way"
    # a banking player: the dealer's wager wins without commission; co-bank: not settled
    banking = {"dealer": "6-6 6-6 / 1-1 1-1", "1": "2-3 3-4 / 4-6 5-5"}
    d = settle_round(banking, banker="1").seats["dealer"]
    assert (d.result, d.reason_code, d.reason) == ("win", SeatReason.HOUSE_WAGER,
                                                    "house wager: no commission")
    d = settle_round(banking, banker="1", co_bank=True).seats["dealer"]
    assert (d.result, d.reason_code, d.reason) == ("not_settled", SeatReason.CO_BANK,
                                                    "co-bank: the house is half of the bank")
    assert all(r.seats["1"].reason_code is None
               for r in [settle_round({"dealer": bank, "1": "6-6 6-6 / 1-2 1-3"})])


def test_the_vision_enum_lists_the_scoring_codes_by_the_same_strings():
    for c in SeatReason:
        assert S(c.value) == c and S[c.name].value == c.value
        assert S(c.value).say(*(["reference"] if c is SeatReason.MIS_SET_RESET else [])) == \
            c.say(*(["reference"] if c is SeatReason.MIS_SET_RESET else []))
    with pytest.raises(TypeError):
        S.DUPLICATE_FACE.say()
    with pytest.raises(TypeError):
        S.NOT_STABLE.say("x")


def test_a_co_bank_round_carries_the_code_on_the_dealers_position():
    deal = {"dealer": ["6-6", "6-6", "1-1", "1-1"], "1": ["2-3", "3-4", "4-6", "5-5"]}
    rnd = still(reads_of(deal), banker="1", co_bank=True)
    ev, d = event(rnd)
    assert ev.settled and ev.positions["dealer"].result == "not_settled"
    assert d["positions"]["dealer"]["reason"] == "co-bank: the house is half of the bank"
    assert d["positions"]["dealer"]["reason_code"] == "co_bank"
    assert "reason_code" not in d["positions"]["1"] and "reason_code" not in d  # settled


# ------------------------------------------------------------------ a position's problems


def test_five_tiles_at_a_position_are_a_wrong_tile_count():
    rnd = still(reads_of(DEAL, extra=[("1", "1-4")]))
    codes_agree(rnd)
    assert rnd.not_settled["1"] == "5 tiles, a position holds 4"
    assert rnd.codes["1"] is S.WRONG_TILE_COUNT
    ev, d = event(rnd)
    assert d["positions"]["1"]["reason_code"] == "wrong_tile_count"
    assert ev.positions["1"].reason_code is S.WRONG_TILE_COUNT
    assert rnd.result is not None and "reason_code" not in d["positions"]["2"]


def test_a_tile_face_down_and_an_unknown_tile():
    rnd = still(reads_of(DEAL, state=[("1", 2, "face_down"), ("2", 3, "unknown")]))
    codes_agree(rnd)
    assert (rnd.codes["1"], rnd.not_settled["1"]) == (S.FACE_DOWN, "1 tile(s) face down")
    assert (rnd.codes["2"], rnd.not_settled["2"]) == (S.UNKNOWN_TILE, "1 tile(s) unknown (test)")


def test_of_several_problems_the_code_is_the_one_the_dealer_is_told():
    pos = positions_of(reads_of(DEAL, state=[("1", 0, "unknown"), ("1", 1, "face_down")],
                                extra=[("1", "1-4")]))["1"]
    assert [str(k) for k, _ in pos.problems] == ["wrong_tile_count", "unknown_tile",
                                                 "face_down"]
    assert pos.reason_code is S.WRONG_TILE_COUNT
    # the text alone (an old event) is told the same words
    assert plain_reason("1", pos.reason) == plain_reason("1", pos.reason, code=pos.reason_code)
    assert positions_of(reads_of(DEAL))["1"].reason_code is None


def test_a_grouping_that_is_unclear():
    groups = assign_positions(reads_of(DEAL), LAYOUT)
    pos = build_positions(groups, problems={"2": [(
        "seat_unclear", "a group of 3 tile(s) lies between positions 1 and 2")]})
    assert pos["2"].reason_code is S.SEAT_UNCLEAR
    rnd = RoundTracker(n_stable=1).update(pos, FrameHeader())
    assert rnd.codes["2"] is S.SEAT_UNCLEAR
    assert rnd.not_settled["2"] == "a group of 3 tile(s) lies between positions 1 and 2"


# ------------------------------------------------------------------ the round tracker


def test_a_duplicate_face_at_the_banker_leaves_the_round_unsettled():
    deal = dict(DEAL, **{"2": ["6-6", "2-4", "3-3", "5-5"]})  # with the dealer's: a 6-6 too many
    deal["dealer"] = ["6-6", "6-6", "1-3", "2-2"]
    rnd = still(reads_of(deal))
    codes_agree(rnd)
    assert (rnd.codes["dealer"], rnd.not_settled["dealer"]) == (S.DUPLICATE_FACE,
                                                                "duplicate face 6-6")
    assert rnd.codes["2"] is S.DUPLICATE_FACE
    # the seat that was fine waits on the bank; the round says the same
    assert rnd.not_settled["1"] == "banker dealer not settled (duplicate face 6-6)"
    assert rnd.codes["1"] is S.BANKER_NOT_SETTLED
    assert rnd.reason == "banker dealer not settled (duplicate face 6-6)"
    assert (rnd.reason_code, rnd.cause_code) == (S.BANKER_NOT_SETTLED, None)
    ev, d = event(rnd)
    assert d["reason_code"] == "banker_not_settled" and d["reason"] == rnd.reason
    assert list(d).index("reason_code") == list(d).index("reason") + 1


def test_an_unread_banker_tile_is_told_as_such_whatever_comes_first():
    rnd = still(reads_of(DEAL, state=[("dealer", 0, "face_down"), ("dealer", 1, "unknown")]))
    codes_agree(rnd)
    assert rnd.codes["dealer"] is S.FACE_DOWN  # the banker's own first problem
    assert rnd.codes["1"] is S.BANKER_UNREAD   # but one of its tiles is unread
    assert rnd.not_settled["1"] == ("banker dealer not settled (1 tile(s) unknown (test); "
                                    "1 tile(s) face down)")
    assert plain_reason("1", rnd.not_settled["1"], code=rnd.codes["1"]) == \
        "Seat 1: not settled -- the banker's tiles cannot be read"


def test_an_unread_tile_that_decides_a_seat():
    deal = {"dealer": ["6-6", "6-6", "1-1", "4-6"], "1": ["2-3", "3-4", "4-6", "5-5"],
            "2": ["4-4", "4-4", "1-5", "5-6"]}
    rnd = still(reads_of(deal, state=[("dealer", 3, "unknown")]))
    codes_agree(rnd)
    assert rnd.result is not None and rnd.final == ["dealer", "1"]
    assert rnd.codes["2"] is S.UNREAD_DECIDES
    assert rnd.not_settled["2"] == "the banker's unread tile decides this seat"
    ev, d = event(rnd)
    assert d["positions"]["2"]["reason_code"] == "unread_decides"
    assert "reason_code" not in d  # the round settled


def test_an_empty_banker_and_no_other_position_settled():
    rnd = still(reads_of({"1": DEAL["1"], "2": DEAL["2"]}))
    codes_agree(rnd)
    assert (rnd.codes["dealer"], rnd.not_settled["dealer"]) == (S.BANKER_EMPTY,
                                                                "banker position empty")
    assert rnd.cause_code is S.BANKER_NOT_SETTLED
    rnd = still(reads_of({"dealer": DEAL["dealer"], "1": DEAL["1"]},
                         state=[("1", 1, "face_down")]))
    codes_agree(rnd)
    assert (rnd.codes["dealer"], rnd.reason_code) == (S.NO_OTHER_SETTLED, S.NO_OTHER_SETTLED)
    assert rnd.not_settled["dealer"] == "no other position settled"


def test_not_stable_and_a_cleared_table():
    tr = RoundTracker(n_stable=2, settle_wait=0)
    pos = positions_of(reads_of(DEAL))
    moved = positions_of(reads_of(dict(DEAL, **{"1": ["1-1", "3-4", "5-6", "2-6"]})))
    assert tr.update(pos, FrameHeader(index=0)) is None
    rnd = tr.update({**pos, "1": moved["1"]}, FrameHeader(index=1))  # the bank held 2 frames
    codes_agree(rnd)
    assert rnd.result is not None and rnd.final == ["dealer", "2"]
    assert (rnd.codes["1"], rnd.not_settled["1"]) == (S.NOT_STABLE, "not stable")
    # a deal cleared before it settled (the bank never held still)
    tr = RoundTracker(n_stable=2)
    tr.update(positions_of(reads_of(DEAL, state=[("dealer", 0, "unknown"),
                                                 ("dealer", 1, "face_down")])), FrameHeader())
    tr.update({}, FrameHeader(index=1))
    rnd = tr.update({}, FrameHeader(index=2))
    codes_agree(rnd)
    assert rnd.reason.startswith("table cleared before the round settled: banker dealer")
    assert rnd.reason_code is S.TABLE_CLEARED
    ev, d = event(rnd)
    assert d["reason_code"] == "table_cleared" and d["reason"] == rnd.reason


def test_a_round_cleared_while_its_still_reading_was_pending():
    tr = RoundTracker(n_stable=1)
    assert tr.update(positions_of(reads_of(DEAL)), FrameHeader(), provisional=True) is None
    rnd = tr.update({}, FrameHeader(index=1))
    codes_agree(rnd)
    assert (rnd.codes["dealer"], rnd.not_settled["dealer"]) == (
        S.READING_PENDING, "its still reading had not landed")
    assert plain_reason("dealer", "its still reading had not landed", code=S.READING_PENDING) \
        == "Dealer: the hands could not be read in time -- supervisor to check"


def test_dealt_again_before_the_round_settled():
    tr = RoundTracker(n_stable=1)
    bad_bank = [("dealer", 0, "unknown"), ("dealer", 1, "face_down")]  # never settles
    for i in range(2):
        assert tr.update(positions_of(reads_of(DEAL, state=bad_bank)), FrameHeader(index=i)) \
            is None
    rnd = tr.update(positions_of(reads_of(OTHER)), FrameHeader(index=2))
    codes_agree(rnd)
    assert rnd.reason_code is S.DEALT_AGAIN
    assert rnd.reason.startswith("the table was dealt again before the round settled: ")
    assert (rnd.codes["1"], rnd.not_settled["1"]) == (
        S.NOT_CONFIRMED, "not confirmed before the table was dealt again")


def test_tiles_no_position_could_hold():
    tr = RoundTracker(n_stable=1)
    why = "no layout: the positions could not be placed (no tiles found)"
    assert tr.update({}, FrameHeader(), loose=reads_of({"1": DEAL["1"]}), placement=why) is None
    rnd = tr.flush()
    assert (rnd.reason_code, rnd.cause_code) == (S.SOURCE_ENDED, S.NO_PLACEMENT)
    assert rnd.reason == f"source ended before the round settled: {why}"


def test_a_settlement_that_fails_says_so_with_its_code(monkeypatch):
    """Fault: the scoring engine raises while settling what the camera read."""
    import vision.table.rounds as rounds

    def boom(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(rounds, "settle_round", boom)
    rnd = still(reads_of(DEAL))
    codes_agree(rnd)
    assert rnd.reason == "settlement failed: boom" and rnd.reason_code is S.SETTLEMENT_FAILED
    assert set(rnd.codes.values()) == {S.SETTLEMENT_FAILED}
    _, d = event(rnd)
    assert d["reason_code"] == "settlement_failed"


def test_a_manual_entry_that_leaves_the_round_unsettled():
    from vision.audit.entries import manual_round

    ev, rid, k, face = _unread_round()
    dealer = [n for n, t in enumerate(ev["tiles"]) if t["position"] == "dealer"]
    for n in dealer:  # the dealer's four tiles unread: one entered leaves three
        ev["tiles"][n].update(face=None, state="unknown", confidence=0.2)
    m = manual_round(ev, [{"tile": dealer[0], "face": "6-6" if face != "6-6" else "1-1"}])
    assert m["settled"] is False and m["reason_code"] == S.MANUAL_UNSETTLED
    assert m["reason"].startswith("still not settled after the manual entry: banker dealer "
                                  "not settled (3 tile(s) unknown")
    assert event_errors(m) == []


def test_an_event_shaped_without_a_reason_says_not_settled():
    rnd = still(reads_of(DEAL, extra=[("1", "1-4")]))
    rnd.not_settled.pop("1")
    rnd.codes.pop("1")
    ev, d = event(rnd)
    assert (d["positions"]["1"]["reason"], d["positions"]["1"]["reason_code"]) == (
        "not settled", "not_settled")


def test_every_code_is_reached_above_and_documented():
    import pathlib

    here = pathlib.Path(__file__).read_text(encoding="utf-8")
    doc = (pathlib.Path(__file__).parent.parent / "docs" / "round-event.md").read_text(
        encoding="utf-8")
    for c in SettleReason:
        assert f"| `{c.value}` |" in doc, c
        if c is not S.NOT_SETTLED and c.value not in {x.value for x in SeatReason}:
            assert f"S.{c.name}" in here, c


# ------------------------------------------------------------------ consumers


def test_the_display_chooses_its_words_by_code_not_by_the_text():
    """Fault: a reason whose words mislead (a decoder's message naming a duplicate) is told
    by its code; the same words without a code were told by their text."""
    text = "1 tile(s) unknown (read A: a duplicate of the spots beside it)"
    assert plain_reason("3", text) == "Seat 3: the same tile is seen twice -- check the tiles"
    assert plain_reason("3", text, code="unknown_tile") == \
        "Seat 3: a tile cannot be read -- move the hand into view"
    assert plain_reason("3", "5 tiles, a position holds 4", code="wrong_tile_count") == \
        "Seat 3: 5 tiles -- a hand needs 4 tiles"
    assert plain_reason("dealer", "co-bank: the house is half of the bank", code="co_bank") == \
        "Dealer: co-bank -- the house is half of the bank"
    assert plain_reason("3", "anything", code="not_confirmed") == \
        "Seat 3: the table was dealt again before the round was settled"
    assert plain_reason("3", "anything", code="a code of a later version") == \
        "Seat 3: cannot be settled -- call a supervisor"
    ev = json.loads(json.dumps(event(still(reads_of(DEAL, extra=[("1", "1-4")])))[1]))
    ev["positions"]["1"]["reason"] = "1 tile(s) unknown (read A: duplicate)"  # misleading
    assert positions_view(ev)["1"]["say"] == "Seat 1: wrong number of tiles -- a hand needs 4 tiles"


def _worked_rounds():
    return [still(reads_of(DEAL, extra=[("1", "1-4")])),
            still(reads_of(DEAL, state=[("1", 2, "face_down"), ("2", 3, "unknown")])),
            still(reads_of(DEAL, state=[("dealer", 0, "face_down"), ("dealer", 1, "unknown")])),
            still(reads_of({"dealer": ["6-6", "6-6", "1-1", "4-6"],
                            "1": ["2-3", "3-4", "4-6", "5-5"], "2": ["4-4", "4-4", "1-5", "5-6"]},
                           state=[("dealer", 3, "unknown")])),
            still(reads_of({"dealer": ["6-6", "6-6", "1-3", "2-2"], "1": DEAL["1"],
                            "2": ["6-6", "2-4", "3-3", "5-5"]})),
            still(reads_of({"dealer": ["6-6", "6-6", "1-1", "1-1"],
                            "1": ["2-3", "3-4", "4-6", "5-5"]}), banker="1", co_bank=True)]


def test_an_event_written_before_the_codes_loads_and_is_told_the_same():
    seen = set()
    for rnd in _worked_rounds():
        _, new = event(rnd)
        old = json.loads(json.dumps(new))
        old.pop("reason_code", None)
        for p in old["positions"].values():
            p.pop("reason_code", None)
        back = RoundEvent.from_dict(old)
        assert back.reason_code is None and all(
            o.reason_code is None for o in back.positions.values())
        assert back.to_dict() == old  # its bytes kept: no code is added
        assert event_errors(old) == []
        view_new, view_old = positions_view(new), positions_view(old)
        for p in view_new:
            assert view_new[p]["say"] == view_old[p]["say"], (p, new["positions"][p])
            code = new["positions"][p].get("reason_code")
            if code:
                seen.add(code)
                # the one fallback reads the code the words were made from (as told)
                text = new["positions"][p]["reason"]
                assert plain_reason(p, text, code=reason_code_of(text)) == view_new[p]["say"]
    assert {"wrong_tile_count", "face_down", "unknown_tile", "banker_unread", "unread_decides",
            "duplicate_face", "banker_not_settled", "co_bank"} <= seen


def test_a_position_outcome_without_a_code_and_with_an_unknown_one():
    o = PositionOutcome.from_dict({"tiles": [None], "result": "not_settled", "reason": "x"})
    assert o.reason_code is None and "reason_code" not in o.to_dict()
    o = PositionOutcome.from_dict({"tiles": [None], "result": "not_settled", "reason": "x",
                                   "reason_code": "camera_moved"})
    assert o.reason_code == "camera_moved" and not isinstance(o.reason_code, SettleReason)
    o = PositionOutcome.from_dict({"tiles": [None], "result": "not_settled", "reason": "x",
                                   "reason_code": "not_stable"})
    assert o.reason_code is S.NOT_STABLE and o.to_dict()["reason_code"] == "not_stable"
