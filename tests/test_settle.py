"""Settlement: seat vs banker, money in Decimal, banking player, co-bank, mis-sets, validation
[rules.md 4; NJ (c), (h); PA (d), (i), (g); PA 621a.8]. Money figures are worked by hand in
the comments."""

from __future__ import annotations

import json
from decimal import Decimal as D

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.errors import InputError
from scoring.rules import NJ, PA
from scoring.setting import legal_splits
from scoring.settle import (
    compare_settings,
    parse_position,
    round_commission,
    settle_round,
    settle_seat,
)
from scoring.tiles import STANDARD_SET


def S(text: str):
    """'a b / c d' -> Setting(high a b, low c d)."""
    return parse_position(text)


# Bank: Teen wong (6-6 4-5) / 8 points, Gor high (1-3 2-2).
BANK = "6-6 4-5 / 1-3 2-2"
WIN = "1-2 2-4 / 1-1 2-5"  # Gee Joon beats Teen wong; 1-1 + 2-5 = 9 beats 8
PUSH = "1-2 2-4 / 1-6 1-5"  # Gee Joon wins; 1-6 + 1-5 = 3 loses
LOSE = "1-1 3-6 / 2-2 5-5"  # Day wong loses; 2-2 + 5-5 = 4 loses
COPY_HIGH = "6-6 3-6 / 1-1 2-5"  # Teen wong is a copy (banker); 9 wins -> push


# ---------------------------------------------------------------- one seat

def test_results_win_lose_push_and_copy_goes_to_banker():
    b = S(BANK)
    assert compare_settings(S(WIN), b) == "win"
    assert compare_settings(S(PUSH), b) == "push"
    assert compare_settings(S(LOSE), b) == "lose"
    assert compare_settings(S(COPY_HIGH), b) == "push"
    # both hands copies -> the banker wins both -> lose
    assert compare_settings(S("6-6 3-6 / 1-3 2-2"), b) == "lose"


def test_a_seat_set_exactly_like_the_banker_loses():
    b = S(BANK)
    assert compare_settings(b, b) == "lose"
    assert settle_seat(b, b).net == D(-1)


def test_win_pays_one_to_one_less_five_percent():
    r = settle_seat(S(WIN), S(BANK))
    assert (r.result, r.gross, r.commission, r.net) == ("win", D(1), D("0.05"), D("0.95"))
    assert str(r.net) == "0.95"
    r = settle_seat(S(WIN), S(BANK), bet=D(25))
    assert (r.commission, r.net) == (D("1.25"), D("23.75"))
    r = settle_seat(S(WIN), S(BANK), bet="25", commission="0.0476")
    assert r.net == D("23.81")  # 25 - 1.19
    r = settle_seat(S(LOSE), S(BANK), bet=7)
    assert (r.result, r.net, r.commission) == ("lose", D(-7), D(0))
    r = settle_seat(S(PUSH), S(BANK), bet=7)
    assert (r.result, r.net) == ("push", D(0))


def test_no_floats_in_results():
    r = settle_seat(S(WIN), S(BANK), bet="2.50")
    for v in (r.bet, r.gross, r.commission, r.net):
        assert isinstance(v, D)
    assert r.net == D("2.375")  # 2.50 - 0.125, exact
    with pytest.raises(InputError, match="2.5"):
        settle_seat(S(WIN), S(BANK), bet=2.5)


@pytest.mark.parametrize("mode,commission,net", [
    ("exact", "1.25", "23.75"),  # 5% of 25
    ("cent", "1.25", "23.75"),
    ("unit_down", "1", "24"),
    ("unit_up", "2", "23"),
])
def test_rounding_modes_on_a_25_win(mode, commission, net):
    r = settle_seat(S(WIN), S(BANK), bet=25, rules=PA.with_(commission_rounding=mode))
    assert r.commission == D(commission) and r.net == D(net)


def test_cent_rounding_half_up():
    # 4.76% of 10 = 0.476 -> 0.48; of 12.5 = 0.595 -> 0.60 (half up)
    assert round_commission(D("0.476"), "cent") == D("0.48")
    assert round_commission(D("0.595"), "cent") == D("0.60")
    assert round_commission(D("0.125"), "cent") == D("0.13")
    r = settle_seat(S(WIN), S(BANK), bet=10, rules=PA.with_(commission_rounding="cent"),
                    commission="0.0476")
    assert r.net == D("9.52")


def test_zero_zero_pa_banker_nj_higher_tile():
    bank = S("1-1 4-6 / 3-3 2-2")  # 12 -> 2 points; low 0 points, Chong high
    seat = S("1-3 5-6 / 5-5 4-6")  # 15 -> 5 beats 2; low 0 points, Mooy high
    assert compare_settings(seat, bank, "pa") == "push"  # PA (g): zero-zero to the banker
    assert compare_settings(seat, bank, "nj") == "win"  # NJ: 5-5 beats 3-3


# ---------------------------------------------------------------- a round, dealer banks

def test_round_with_dealer_banking():
    # one physical set: seat 2 pushes with a Mooy pair (beats the wong) and 3 points,
    # seat 3 loses with a Day wong and 4 points
    r = settle_round({"dealer": BANK, "1": WIN, "2": "5-5 5-5 / 1-6 1-5",
                      "3": "1-1 3-6 / 2-2 4-6"}, bets={"1": "10", "3": "4"})
    assert {p: s.result for p, s in r.seats.items()} == {"1": "win", "2": "push", "3": "lose"}
    # seat 1 +10 (commission 0.50 -> 9.50), seat 2 0, seat 3 -4
    assert r.seats["1"].net == D("9.50")
    assert r.bank_gross == D(-6)  # -(10 + 0 - 4)
    assert r.bank_net == D(-6)
    assert r.commission_total == D("0.50")
    assert r.house_net == D("-5.50")  # -6 + 0.50
    assert sum(s.net for s in r.seats.values()) + r.house_net == 0
    d = r.to_dict()
    json.dumps(d)
    assert d["seats"]["1"]["net"] == "9.50" and d["seats"]["1"]["result"] == "win"
    assert d["banker"]["high"] == ["6-6", "4-5"] and d["banker"]["low"] == ["1-3", "2-2"]
    assert d["banker"]["high_hand"] == "Teen wong"


def test_round_validates_everything_first():
    good = {"dealer": BANK, "1": WIN}
    with pytest.raises(InputError, match="five|5"):
        settle_round({"dealer": BANK, "1": "1-2 2-4 1-1 2-5 1-6"})
    with pytest.raises(InputError, match="6-6"):  # three 6-6 in one round
        settle_round({"dealer": BANK, "1": "6-6 6-6 / 1-1 1-1"})
    for bad in ("-5", "abc", "0"):
        with pytest.raises(InputError, match=repr(bad)):
            settle_round(good, bets={"1": bad})
    with pytest.raises(InputError, match="'8'"):
        settle_round({"dealer": BANK, "8": WIN})
    with pytest.raises(InputError, match="'5'"):
        settle_round(good, banker="5")
    with pytest.raises(InputError, match="'7'"):  # a bet for a seat that has no tiles
        settle_round(good, bets={"7": "5"})
    with pytest.raises(InputError, match="co-bank"):
        settle_round(good, co_bank=True)
    with pytest.raises(InputError, match="7-7"):
        settle_round({"dealer": BANK, "1": "7-7 1-1 / 2-2 3-3"})
    with pytest.raises(InputError, match="nowhere"):
        settle_round(good, way="nowhere")


# ---------------------------------------------------------------- banking player, co-bank

# Bank (seat 3): Yun pair (4-4 4-4) / 4 points, Tit high (1-6 2-5).
P_BANK = "4-4 4-4 / 1-6 2-5"
P_ROUND = {
    "3": P_BANK,
    "dealer": "1-5 1-5 3-3 1-3",  # unset: any setting loses both (no pair above Yun; low <= 2)
    "1": "6-6 6-6 / 1-1 5-5",  # Teen pair wins; 2 points loses -> push
    "2": "1-2 2-4 / 5-5 3-4",  # Gee Joon wins; 7 points wins -> win
    "4": "2-2 2-2 / 3-6 2-3",  # Bon pair loses; 4 points, Gow high below Tit -> lose
}


def test_banking_player():
    r = settle_round(P_ROUND, bets={"3": "20", "2": "10", "4": "5"}, banker="3")
    assert r.banker_position == "3"
    assert {p: s.result for p, s in r.seats.items()} == {
        "dealer": "lose", "1": "push", "2": "win", "4": "lose"}
    # dealer wagers the banking seat's own bet, 20, and loses it; no commission on house money
    assert r.seats["dealer"].bet == D(20) and r.seats["dealer"].net == D(-20)
    assert r.seats["2"].net == D("9.50")  # 10 less 0.50
    assert r.seats["4"].net == D(-5)
    # bank gross = -(-20 + 0 + 10 - 5) = 15; commission 5% = 0.75; banking player nets 14.25
    assert r.bank_gross == D(15)
    assert r.bank_commission == D("0.75")
    assert r.bank_net == D("14.25")
    # house: dealer -20, seat commission 0.50, bank commission 0.75 -> -18.75
    assert r.house_net == D("-18.75")
    assert r.commission_total == D("1.25")
    players = sum(s.net for p, s in r.seats.items() if p != "dealer")
    assert players + r.bank_net + r.house_net == 0
    d = r.to_dict()
    assert d["banker"]["position"] == "3" and d["banker"]["net"] == "14.25"
    assert d["banker"]["bet"] == "20"


def test_banking_player_loses_no_commission():
    r = settle_round({"3": P_BANK, "2": "1-2 2-4 / 5-5 3-4"}, bets={"2": "10"}, banker="3")
    assert r.bank_gross == D(-10) and r.bank_commission == 0 and r.bank_net == D(-10)
    assert r.house_net == D("0.50")


def test_dealer_wager_can_be_given():
    r = settle_round(P_ROUND, bets={"3": "20", "dealer": "8"}, banker="3")
    assert r.seats["dealer"].net == D(-8)


def test_co_bank_halves_the_bank():
    bets = {"3": "20", "2": "10", "4": "5"}
    r = settle_round(P_ROUND, bets=bets, banker="3", co_bank=True)
    assert r.seats["dealer"].result == "not_settled" and r.seats["dealer"].net == 0
    # bank gross = -(0 + 10 - 5) = -5: player's half -2.50, no commission; house -2.50 + 0.50
    assert r.bank_gross == D(-5)
    assert (r.bank_commission, r.bank_net) == (D(0), D("-2.5"))
    assert r.house_net == D("-2.0")
    r = settle_round(P_ROUND, bets={"2": "10", "4": "30"}, banker="3", co_bank=True)
    # bank gross = -(10 - 30) = 20: player's half 10, commission 0.50 -> 9.50;
    # house: half 10 + seat 2's 0.50 + 0.50 = 11.00
    assert r.bank_gross == D(20)
    assert (r.bank_commission, r.bank_net) == (D("0.50"), D("9.50"))
    assert r.house_net == D("11.00")
    players = sum(s.net for p, s in r.seats.items() if p != "dealer")
    assert players + r.bank_net + r.house_net == 0


# ---------------------------------------------------------------- house way, mis-sets

def test_unset_tiles_are_set_by_the_house_way():
    # house-way.md: 6-6, 6-6, 1-2, 1-3 keeps the Teen pair beside a 7 (Gee counted as 3)
    r = settle_round({"dealer": "1-1 1-1 4-4 5-6", "1": "6-6 6-6 1-2 1-3"})
    s = r.seats["1"]
    c = s.setting.canonical()
    assert [t.face for t in c.high] == ["6-6", "6-6"]
    assert sorted(t.face for t in c.low) == ["1-2", "1-3"]
    assert s.reset_by_house_way and not s.mis_set
    assert r.banker_reset_by_house_way


def test_mis_set_seat_reset_by_house_way_or_forfeited():
    mis = "1-2 1-3 / 6-6 6-6"  # low Teen pair above a 7: mis-set
    bank = "1-1 1-1 / 4-4 5-6"  # Day pair / 9 points
    r = settle_round({"dealer": bank, "1": mis}, rules=PA)
    s = r.seats["1"]
    assert s.mis_set and s.reset_by_house_way
    assert [t.face for t in s.setting.canonical().high] == ["6-6", "6-6"]
    # Teen pair beats Day pair; 7 points loses to 9 -> push
    assert s.result == "push"
    assert any(a.kind == "mis_set" and a.position == "1" for a in r.alerts)
    r = settle_round({"dealer": bank, "1": mis}, bets={"1": "5"}, rules=PA.with_(mis_set="forfeit"))
    s = r.seats["1"]
    assert (s.result, s.net, s.mis_set, s.reset_by_house_way) == ("lose", D(-5), True, False)
    assert "forfeit" in s.reason


def test_mis_set_banker_is_always_reset():
    r = settle_round({"dealer": "4-4 5-6 / 1-1 1-1", "1": "6-6 6-6 / 1-2 1-3"},
                     rules=PA.with_(mis_set="forfeit"))
    assert r.banker_mis_set and r.banker_reset_by_house_way
    assert not r.banker_setting.is_mis_set()
    assert any(a.kind == "mis_set" and a.position == "dealer" for a in r.alerts)


# ---------------------------------------------------------------- properties

@st.composite
def rounds(draw):
    perm = draw(st.permutations(range(32)))
    n_seats = draw(st.integers(1, 7))
    seat_ids = draw(st.lists(st.sampled_from("1234567"), min_size=n_seats, max_size=n_seats,
                             unique=True))
    positions = {}
    for k, pos in enumerate(["dealer", *seat_ids]):
        tiles = [STANDARD_SET[i] for i in perm[4 * k:4 * k + 4]]
        splits = legal_splits(tiles)
        positions[pos] = splits[draw(st.integers(0, len(splits) - 1))]
    bets = {p: str(draw(st.integers(1, 500))) for p in positions if p != "dealer"}
    banker = draw(st.sampled_from(["dealer", *seat_ids]))
    co_bank = banker != "dealer" and draw(st.booleans())
    mode = draw(st.sampled_from(["exact", "cent", "unit_down", "unit_up"]))
    prof = draw(st.sampled_from([PA, NJ])).with_(commission_rounding=mode)
    return positions, bets, banker, co_bank, prof


@given(rounds())
def test_round_money_is_conserved_and_results_follow_the_keys(rnd):
    positions, bets, banker, co_bank, prof = rnd
    r = settle_round(positions, bets=bets, banker=banker, co_bank=co_bank, rules=prof)
    # the bank as settled: a mis-set bank hand is re-set by the house way (scoring.settle), so
    # the hand as given is not what the seats play against
    bank = r.banker_setting
    assert bank == positions[banker] or r.banker_reset_by_house_way
    bh, bl = bank.keys(prof)
    for pos, s in r.seats.items():
        if s.result == "not_settled":
            continue
        ph, pl = s.setting.keys(prof)
        expected = "win" if ph > bh and pl > bl else "lose" if ph <= bh and pl <= bl else "push"
        assert s.result == expected
        assert s.net == {"win": s.bet - s.commission, "lose": -s.bet, "push": 0}[s.result]
        assert D(0) <= s.commission <= s.bet
    bank_side = r.bank_net if banker != "dealer" else D(0)
    players = sum(s.net for p, s in r.seats.items() if p != "dealer")
    dealer_net = r.seats["dealer"].net if "dealer" in r.seats else D(0)
    # every unit won by someone is lost by someone else
    assert players + bank_side + r.house_net == 0
    if banker != "dealer":
        assert r.house_net == dealer_net + r.commission_total + (
            r.bank_gross - r.bank_gross / 2 if co_bank else 0)


@given(st.permutations(range(32)), st.integers(0, 2), st.integers(0, 2))
def test_win_for_one_is_loss_for_the_other(perm, i, j):
    a = legal_splits([STANDARD_SET[k] for k in perm[:4]])
    b = legal_splits([STANDARD_SET[k] for k in perm[4:8]])
    p, q = a[i % len(a)], b[j % len(b)]
    res = compare_settings(p, q)
    assert res in ("win", "lose", "push")
    if res == "win":
        assert compare_settings(q, p) == "lose"
    assert compare_settings(p, p) == "lose"


def test_dealer_off_the_house_way_is_settled_as_placed_with_an_alert():
    # house way keeps the Teen pair beside the 7; this dealer plays 8 / 6 instead (legal)
    dealer = "6-6 1-2 / 6-6 1-3"
    r = settle_round({"dealer": dealer, "1": "1-1 1-1 / 4-4 5-6"})
    assert [a.kind for a in r.alerts] == ["house_way_deviation"]
    assert r.banker_setting.same_hands(S(dealer))
    # Day pair beats 8 points; 9 beats 6 -> the seat wins against the placed hands
    assert r.seats["1"].result == "win"
    r = settle_round({"dealer": "6-6 6-6 / 1-2 1-3", "1": "1-1 1-1 / 4-4 5-6"})
    assert r.alerts == [] and r.seats["1"].result == "push"
