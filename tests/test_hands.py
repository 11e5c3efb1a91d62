"""Two-tile hand values and their order [rules.md 2-3; NJ (b)-(h); PA (c)-(i)].

The key order is checked against an independent comparator written here straight from
rules.md (pair table, wong/gong, points with the 3-or-6 Gee Joon, highest tile), over all
221 x 221 physical hands, under both profiles.
"""

from __future__ import annotations


import pytest
from hypothesis import given
from hypothesis import strategies as st

from scoring.hands import PHYSICAL_HANDS, HandError, evaluate, hand_key, key_table, parse_hand
from scoring.rules import NJ, PA
from scoring.tiles import STANDARD_SET

# ---------------------------------------------------------------- reference from rules.md

PAIR_ORDER = [  # highest first [NJ (b), PA (c)]
    ("1-2", "2-4"), ("6-6", "6-6"), ("1-1", "1-1"), ("4-4", "4-4"), ("1-3", "1-3"),
    ("5-5", "5-5"), ("3-3", "3-3"), ("2-2", "2-2"), ("5-6", "5-6"), ("4-6", "4-6"),
    ("1-6", "1-6"), ("1-5", "1-5"), ("3-6", "4-5"), ("2-6", "3-5"), ("2-5", "3-4"),
    ("1-4", "2-3"),
]
PAIR_NAMES = ["Gee Joon", "Teen", "Day", "Yun", "Gor", "Mooy", "Chong", "Bon", "Foo", "Ping",
              "Tit", "Look", "Chop Gow", "Chop Bot", "Chop Chit", "Chop Ng"]
RANK = {"6-6": 1, "1-1": 2, "4-4": 3, "1-3": 4, "5-5": 5, "3-3": 6, "2-2": 7, "5-6": 8,
        "4-6": 9, "1-6": 10, "1-5": 11, "3-6": 12, "4-5": 12, "2-6": 13, "3-5": 13, "2-5": 14,
        "3-4": 14, "2-4": 15, "1-4": 16, "2-3": 16, "1-2": 17}


def spots(face: str) -> int:
    a, b = face.split("-")
    return int(a) + int(b)


def ref_value(f1: str, f2: str, zero_zero_copy: bool) -> tuple:
    """A tuple ordered like the hands: higher tuple wins, equal tuples are a copy."""
    pair = tuple(sorted((f1, f2)))
    for i, p in enumerate(PAIR_ORDER):
        if tuple(sorted(p)) == pair:
            return (3, -i)
    for top, w in (("6-6", 2), ("1-1", 1)):
        if top in (f1, f2):
            other = f2 if f1 == top else f1
            if other in ("3-6", "4-5"):
                return (2, w)
    for top, w in (("6-6", 2), ("1-1", 1)):
        if top in (f1, f2):
            other = f2 if f1 == top else f1
            if other in ("2-6", "3-5", "4-4"):
                return (1, w)

    def options(f):
        if f in ("1-2", "2-4"):
            return [(3, 17), (6, 15)]
        return [(spots(f), RANK[f])]

    best = None
    for v1, r1 in options(f1):
        for v2, r2 in options(f2):
            pts = (v1 + v2) % 10
            val = (0, pts, -min(r1, r2))
            if pts == 0 and zero_zero_copy:
                val = (0, 0, 0)
            if best is None or val > best:
                best = val
    return best


def sign(x) -> int:
    return (x > 0) - (x < 0)


@pytest.mark.parametrize("prof", [PA, NJ], ids=["pa", "nj"])
def test_key_order_matches_reference_on_all_221x221_hands(prof):
    vals = [(evaluate(a, b, prof).key, ref_value(a.face, b.face, prof.zero_zero_copy))
            for a, b in PHYSICAL_HANDS]
    for ka, ra in vals:
        for kb, rb in vals:
            assert sign(ka - kb) == (ra > rb) - (ra < rb)


def test_key_table_agrees_with_evaluate():
    t = key_table(NJ)
    assert t.shape == (21, 21)
    for a, b in PHYSICAL_HANDS:
        assert t[a.index, b.index] == hand_key(a, b, NJ)


# ---------------------------------------------------------------- pair order, categories

def test_full_pair_order():
    keys = [hand_key(a, b) for a, b in PAIR_ORDER]
    assert keys == sorted(keys, reverse=True)
    assert len(set(keys)) == 16
    for (a, b), name in zip(PAIR_ORDER, PAIR_NAMES):
        v = evaluate(a, b)
        assert v.category == "pair"
        assert name in v.name
    assert evaluate("1-2", "2-4").pair_rank == 1
    assert evaluate("1-4", "2-3").pair_rank == 16


def test_only_sixteen_pairs():
    assert evaluate("4-4", "2-6").category != "pair"  # rules.md 2.1
    assert evaluate("1-5", "2-4").category != "pair"
    n_pairs = sum(1 for a, b in PHYSICAL_HANDS if evaluate(a, b).category == "pair")
    assert n_pairs == 16


def test_categories_in_order_pair_wong_gong_points():
    lowest_pair = hand_key("1-4", "2-3")
    teen_wong, day_wong = hand_key("6-6", "4-5"), hand_key("1-1", "3-6")
    teen_gong, day_gong = hand_key("6-6", "4-4"), hand_key("1-1", "2-6")
    best_points = max(hand_key(a, b) for a, b in PHYSICAL_HANDS
                      if evaluate(a, b).category == "points")
    assert lowest_pair > teen_wong > day_wong > teen_gong > day_gong > best_points
    assert evaluate("6-6", "3-6").name == "Teen wong"
    assert evaluate("1-1", "3-5").name == "Day gong"


def test_single_rank_order_breaks_equal_points():
    # 9 points each: the hand with the higher single tile wins [NJ (f), PA (g)]
    ordered = [("6-6", "3-4"), ("1-1", "2-5"), ("4-4", "5-6"), ("1-3", "2-3"), ("5-5", "4-5"),
               ("3-3", "1-2")]
    keys = [hand_key(a, b) for a, b in ordered]
    assert all(evaluate(a, b).points == 9 for a, b in ordered)
    assert len(set(keys)) == len(keys)
    assert keys == sorted(keys, reverse=True)
    # the lower tile never breaks a tie: 5-6 + 1-6 (Tit) and 5-6 + 3-4 (Chit) are a copy
    assert evaluate("5-6", "1-6").points == evaluate("5-6", "3-4").points == 8
    assert hand_key("5-6", "1-6") == hand_key("5-6", "3-4")


# ---------------------------------------------------------------- worked examples (rules.md)

def test_worked_examples():
    assert evaluate("1-1", "3-3").points == 8
    assert evaluate("1-1", "3-3").category == "points"
    assert evaluate("5-6", "1-6").points == 8
    assert hand_key("3-4", "2-2") < hand_key("5-6", "5-5")  # both 1 point, 5-5 outranks 2-2
    assert hand_key("2-2", "1-6") == hand_key("2-2", "3-4")  # copy: banker wins
    v = evaluate("1-2", "5-6")
    assert (v.points, v.high_tile.face) == (7, "5-6")
    v = evaluate("2-4", "1-5")
    assert v.category == "points" and v.points == 9
    assert evaluate("6-6", "5-5").points == 2
    assert evaluate("1-1", "4-4").category == "gong"
    assert hand_key("6-6", "4-5") == hand_key("6-6", "3-6")  # a copy of Teen wongs


def test_zero_zero_pa_copy_nj_higher_tile():
    strong, weak = ("5-5", "4-6"), ("3-3", "2-2")  # both 0 points; 5-5 outranks 3-3
    assert evaluate(*strong, rules="pa").points == 0 == evaluate(*weak, rules="pa").points
    assert hand_key(*strong, rules=PA) == hand_key(*weak, rules=PA)  # PA (g): banker wins
    assert hand_key(*strong, rules=NJ) > hand_key(*weak, rules=NJ)  # NJ (f): 5-5 decides


def test_gee_joon_counts_three_or_six():
    assert evaluate("2-4", "5-6").points == 7  # 6 + 11 = 17
    assert evaluate("2-4", "1-5").points == 9  # 3 + 6
    assert evaluate("1-2", "1-5").points == 9  # 3 + 6, not 6 + 6 = 2
    assert evaluate("1-2", "4-6").points == 6  # 6 + 10, not 3 + 10 = 3
    v = evaluate("1-2", "1-4")  # 6 + 5 = 1 or 3 + 5 = 8: the 8
    assert v.points == 8


def test_parse_hand_errors():
    with pytest.raises(HandError, match="three|3"):
        parse_hand(["1-1", "2-2", "3-3"])
    assert parse_hand(["teen", "day"])[0].face == "6-6"


# ---------------------------------------------------------------- properties

hand_idx = st.lists(st.integers(0, 31), min_size=2, max_size=2, unique=True)


@given(hand_idx, hand_idx, hand_idx, st.sampled_from([PA, NJ]))
def test_hand_order_is_a_total_preorder(h1, h2, h3, prof):
    ks = [hand_key(STANDARD_SET[i], STANDARD_SET[j], prof) for i, j in (h1, h2, h3)]
    a, b, c = ks
    assert a >= b or b >= a  # total
    if a >= b and b >= c:
        assert a >= c  # transitive
    # the order agrees with the reference comparator
    ra = ref_value(STANDARD_SET[h1[0]].face, STANDARD_SET[h1[1]].face, prof.zero_zero_copy)
    rb = ref_value(STANDARD_SET[h2[0]].face, STANDARD_SET[h2[1]].face, prof.zero_zero_copy)
    assert sign(a - b) == (ra > rb) - (ra < rb)


@given(hand_idx)
def test_hand_value_independent_of_tile_order(h):
    a, b = STANDARD_SET[h[0]], STANDARD_SET[h[1]]
    assert hand_key(a, b) == hand_key(b, a)
    assert evaluate(a, b).name == evaluate(b, a).name
