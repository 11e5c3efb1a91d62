"""House ways: the reference way of house-way.md rule for rule, and PA 621a.8(d)'s minimal way.

Every expected setting below was worked out by hand from house-way.md (the interpretation of
an ambiguous phrase is the one documented in scoring.setting.ReferenceHouseWay).
"""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from scoring.analysis import class_sets
from scoring.errors import InputError
from scoring.hands import class_key_table
from scoring.setting import (
    HOUSE_WAYS, PAMinimalHouseWay, ReferenceHouseWay, SettingError, get_house_way,
    house_way_setting, legal_splits, make_setting,
)
from scoring.tiles import STANDARD_SET, parse_tiles

REF = HOUSE_WAYS["reference"]


def classes(hand) -> tuple[int, int]:
    return tuple(sorted(t.pair_class for t in hand))


def check(tiles: str, high: str, low: str, way="reference", rule: str | None = None):
    """Assert the way sets ``tiles`` as high / low (compared by pair class)."""
    s = house_way_setting(parse_tiles(tiles), way)
    want = make_setting(parse_tiles(high), parse_tiles(low))
    assert (classes(s.high), classes(s.low)) == (classes(want.high), classes(want.low)), str(s)
    if rule is not None:
        assert rule in get_house_way(way).explain(parse_tiles(tiles))
    return s


# --- worked settings of house-way.md ---------------------------------------------------------

def test_teen_pair_beside_gee_counted_three():
    s = check("6-6 6-6 1-2 1-3", "6-6 6-6", "1-2 1-3", rule="keep the pair")
    low = s.low_value()
    assert low.points == 7 and s.high_value().category == "pair"


def test_gee_5_4_11_plays_7_9():
    s = check("1-2 1-4 1-3 5-6", "1-4 1-3", "1-2 5-6")
    assert (s.low_value().points, s.high_value().points) == (7, 9)
    s = check("2-4 2-3 2-2 5-6", "2-3 2-2", "2-4 5-6")
    assert (s.low_value().points, s.high_value().points) == (7, 9)


def test_teen_gee_5_6_plays_7_9():
    s = check("6-6 1-2 1-4 3-3", "1-2 3-3", "6-6 1-4", rule="T/D + Gee + 5 + 6")
    assert (s.low_value().points, s.high_value().points) == (7, 9)
    s = check("1-1 2-4 2-3 1-5", "2-4 1-5", "1-1 2-3")  # Day, Gee, 5, L6
    assert (s.low_value().points, s.high_value().points) == (7, 9)


def test_two_teens_two_nines_make_two_wongs():
    s = check("6-6 6-6 3-6 4-5", "6-6 3-6", "6-6 4-5")
    assert s.high_value().name == "Teen wong" and s.low_value().name == "Teen wong"


# --- section 5: exceptions table -------------------------------------------------------------

@pytest.mark.parametrize("tiles,high,low,pts", [
    ("6-6 2-6 3-6 2-2", "6-6 2-6", "3-6 2-2", ("gong", 3)),       # T/D + 9 + 8 + L4: 3/Gong
    ("1-1 4-4 4-5 2-2", "1-1 4-4", "4-5 2-2", ("gong", 3)),
    ("3-6 1-4 1-3 2-2", "2-2 1-4", "1-3 3-6", (9, 3)),            # 9 + 5 + H4 + L4: H3/9
    ("1-2 1-4 1-3 2-2", "1-3 1-4", "2-2 1-2", (9, 7)),            # Gee + 5 + H4 + L4: 7/H9
    ("2-4 2-3 2-2 4-6", "2-3 2-2", "2-4 4-6", (9, 6)),            # Gee + 5 + 4 + any
    ("5-6 4-6 4-4 1-6", "5-6 4-4", "4-6 1-6", (9, 7)),            # 11 + 10 + H8 + 7: 7/9
    ("5-6 5-5 4-4 2-5", "5-5 4-4", "5-6 2-5", (8, 8)),            # 11 + H10 + H8 + 7 (8/8)
    ("1-2 3-3 1-5 5-6", "1-2 3-3", "1-5 5-6", (9, 7)),            # Gee + H6 + L6 + 11: 7/H9
])
def test_exception_rows(tiles, high, low, pts):
    s = check(tiles, high, low, rule="exception")
    hv, lv = s.high_value(), s.low_value()
    assert (hv.category if hv.category == "gong" else hv.points, lv.points) == pts


def test_h9_is_the_nine_with_the_higher_top():
    s = house_way_setting(parse_tiles("1-2 1-4 1-3 2-2"))
    assert s.high_value().high_tile.face == "1-3"  # 5 + H4, Gor on top
    s = house_way_setting(parse_tiles("1-2 3-3 1-5 5-6"))
    assert s.high_value().high_tile.face == "3-3"  # Gee + H6, Chong on top


def test_gee_5_4_any_does_not_split_a_pair():
    # 4-4 pair... "any" = a tile making no pair: 1-3, 1-3 (pair of 4s) is never split
    check("1-2 1-4 1-3 1-3", "1-3 1-3", "1-2 1-4", rule="keep the pair")


# --- section 1: pairs -------------------------------------------------------------------------

@pytest.mark.parametrize("pair", ["1-3 1-3", "2-2 2-2", "1-4 2-3", "3-3 3-3", "1-5 1-5",
                                  "5-5 5-5", "4-6 4-6", "5-6 5-6"])
def test_never_split_pairs(pair):
    # with T + 9 beside them (a wong) the pair still stays together as the high hand
    s = check(pair + " 6-6 3-6", pair, "6-6 3-6", rule="keep the pair")
    assert s.high_value().category == "pair" and s.low_value().name == "Teen wong"


def test_split_sevens_with_teen_and_day():
    s = check("1-6 1-6 6-6 1-1", "6-6 1-6", "1-1 1-6", rule="split")
    assert (s.high_value().points, s.low_value().points) == (9, 9)
    check("2-5 3-4 6-6 5-6", "6-6 2-5", "5-6 3-4", rule="split")   # T with an 11
    check("1-6 1-6 6-6 3-6", "1-6 1-6", "6-6 3-6", rule="keep")      # T with a 9: keep


def test_split_eights():
    s = check("4-4 4-4 3-6 5-6", "4-4 5-6", "4-4 3-6", rule="split")  # 9 + 11
    assert (s.high_value().points, s.low_value().points) == (9, 7)
    check("2-6 3-5 5-5 4-6", "2-6 5-5", "3-5 4-6", rule="split")      # H10 + L10: 8/8
    check("4-4 4-4 3-6 5-5", "4-4 4-4", "3-6 5-5", rule="keep")       # 9 + 10: keep


def test_split_mixed_nines():
    s = check("3-6 4-5 5-5 4-6", "3-6 5-5", "4-5 4-6", rule="split")
    assert (s.high_value().points, s.low_value().points) == (9, 9)
    check("3-6 4-5 5-6 5-5", "3-6 4-5", "5-6 5-5", rule="keep")


def test_gee_joon_pair_is_kept_under_pa_but_the_published_rule_splits_it():
    s = check("1-2 2-4 1-3 3-3", "1-2 2-4", "1-3 3-3", rule="keep")
    assert s.high_value().pair_rank == 1
    raw = ReferenceHouseWay(split_supreme_pair=True)
    s = raw.set(parse_tiles("1-2 2-4 1-3 3-3"))
    assert {s.high_value().points, s.low_value().points} == {7, 9}
    s = raw.set(parse_tiles("1-2 2-4 3-3 1-5"))  # L6 and H6
    assert s.high_value().category == "points"
    assert raw.set(parse_tiles("1-2 2-4 1-3 5-5")).high_value().pair_rank == 1  # 4 + 10: keep


def test_split_teen_or_day_pair():
    s = check("6-6 6-6 3-6 5-6", "6-6 3-6", "6-6 5-6", rule="split")  # 9 + 11
    assert s.high_value().name == "Teen wong" and s.low_value().points == 3
    s = check("1-1 1-1 4-5 5-6", "1-1 4-5", "1-1 5-6", rule="split")
    assert s.high_value().name == "Day wong"
    s = check("6-6 6-6 1-3 3-3", "6-6 3-3", "6-6 1-3", rule="split")  # exactly 6/8
    assert (s.high_value().points, s.low_value().points) == (8, 6)
    check("6-6 6-6 4-6 1-6", "6-6 6-6", "4-6 1-6", rule="keep")       # 2/9: keep
    check("6-6 6-6 2-4 2-3", "6-6 6-6", "2-4 2-3", rule="keep")       # Gee with a 5: keep


# --- section 2: no pair, T or D --------------------------------------------------------------

def test_teen_and_day_together_with_ten_and_small():
    s = check("6-6 1-1 5-5 2-3", "5-5 2-3", "6-6 1-1", rule="T and D together")
    assert (s.high_value().points, s.low_value().points) == (5, 4)


def test_teen_low_with_4_and_5():
    s = check("6-6 1-1 1-3 2-3", "1-1 2-3", "6-6 1-3", rule="T low")
    assert (s.high_value().points, s.low_value().points) == (7, 6)


def test_teen_high_otherwise():
    s = check("6-6 1-1 2-5 3-6", "6-6 3-6", "1-1 2-5", rule="T high")
    assert s.high_value().name == "Teen wong" and s.low_value().points == 9


def test_single_teen_with_lowest_of_7_8_9_stands_when_low_is_h3():
    s = check("6-6 1-6 3-6 5-5", "6-6 1-6", "3-6 5-5", rule="lowest 7, 8, 9")
    assert (s.high_value().points, s.low_value().points) == (9, 9)  # no wong on purpose


def test_single_teen_pumps_up_when_low_is_below_h3():
    s = check("6-6 2-5 4-5 5-6", "6-6 4-5", "2-5 5-6", rule="pump up")
    assert s.high_value().name == "Teen wong"


def test_single_teen_without_7_8_9_balances():
    s = check("6-6 1-3 2-3 5-5", "6-6 1-3", "2-3 5-5", rule="balance")
    assert (s.high_value().points, s.low_value().points) == (6, 5)


# --- section 3: no pair, no T or D ------------------------------------------------------------

def test_two_small_tiles_then_balance_with_a_ten():
    # 4 + 5 = 9 leaves 10 + 10 = 0; cannot pump up; a 10 is held: balance (5 / 4)
    check("1-3 2-3 5-5 4-6", "2-3 5-5", "1-3 4-6", rule="10/11 held: balance")


def test_two_small_tiles_stand_when_low_is_h3():
    s = check("2-2 1-5 1-3 5-6", "2-2 1-3", "1-5 5-6", rule="low H3 or better")
    assert (s.high_value().points, s.low_value().points) == (8, 7)


def test_three_small_tiles_with_gee_play_non_gee_together():
    s = check("1-2 1-3 2-2 3-6", "1-3 2-2", "1-2 3-6", rule="non-Gee together")
    assert (s.high_value().points, s.low_value().points) == (8, 5)


def test_largest_with_smallest():
    s = check("5-6 4-6 3-6 1-6", "4-6 3-6", "5-6 1-6", rule="largest tile with smallest")
    assert (s.high_value().points, s.low_value().points) == (9, 8)


# --- section 4: general guidelines ------------------------------------------------------------

def test_never_leave_0_over_6_or_lower():
    # largest (11) with smallest (H4) = 5 / 10 + 10 = 0 -> balanced to 1 / 4
    s = check("1-3 5-5 5-6 4-6", "1-3 4-6", "5-5 5-6", rule="never 0/6")
    assert (s.high_value().points, s.low_value().points) == (4, 1)


def test_pump_up_2_over_6():
    s = check("2-4 6-6 5-5 4-6", "6-6 2-4", "5-5 4-6", rule="2/6 or lower")
    assert (s.high_value().points, s.low_value().points) == (8, 0)


def test_separate_chong_or_better_tiles():
    # pumped 6-6 3-3 (8) / 2-2 1-5 (0): Teen and Chong separated, same 8/0, Teen stays high
    s = check("6-6 3-3 2-2 1-5", "6-6 1-5", "3-3 2-2", rule="separate")
    assert (s.high_value().points, s.low_value().points) == (8, 0)


# --- properties -------------------------------------------------------------------------------

tile_sets = st.lists(st.integers(0, 31), min_size=4, max_size=4, unique=True).map(
    lambda ix: [STANDARD_SET[i] for i in ix])


def _strong(key: int) -> bool:
    return key >= 200  # pair, wong or gong


@pytest.mark.parametrize("name", [n for n in HOUSE_WAYS if n != "reference-split-gee"])
@given(ts=tile_sets)
def test_way_returns_a_legal_split_and_keeps_the_supreme_pair(name, ts):
    s = house_way_setting(ts, name)
    hands = lambda x: sorted([sorted(t.face for t in x.high), sorted(t.face for t in x.low)])
    assert any(hands(s) == hands(x) for x in legal_splits(ts))  # equal keys: either order
    hk, lk = s.keys()
    assert hk >= lk and not s.is_mis_set()
    if sum(t.is_gee_joon for t in ts) == 2:
        assert s.high_value().pair_rank == 1


@given(ts=tile_sets)
def test_pa_minimal_plays_pair_wong_or_gong_when_possible(ts):
    possible = any(_strong(k) for x in legal_splits(ts) for k in x.keys())
    s = house_way_setting(ts, "pa-minimal")
    assert _strong(s.keys()[0]) == possible


def test_reference_plays_pair_wong_gong_except_by_its_own_rules():
    """Over all 3,620 class sets: where a pair, wong or gong is possible but not played, the
    deciding rule is a pair-splitting rule (section 1) or section 2's "play T/D with the
    lowest 7, 8, 9" (e.g. T + 7 + 9 plays 9 points, not the wong); never anything else."""
    _, _, tuples = class_sets()
    reasons = set()
    kt = class_key_table("pa")
    for c in tuples:
        keys = [kt[c[a], c[b]] for a, b in ((0, 1), (2, 3), (0, 2), (1, 3), (0, 3), (1, 2))]
        hi, lo, hk, lk = REF.split_classes(c)
        if any(k >= 200 for k in keys) and hk < 200:
            reasons.add(REF._memo[(True, c)][1].split(";")[0].split(" the ")[0])
        if len(set(c)) < 4:  # a pair present: decided by section 1 (exceptions need no pair)
            assert REF._memo[(True, c)][1].startswith("1:"), c
    assert reasons == {"1: split", "1: two pairs, a pair rule splits them",
                       "2: T/D with"}, reasons


def test_house_way_is_memoised_by_class_and_equal_for_equal_classes():
    a = house_way_setting(parse_tiles("3-6 6-6 1-6 5-5"))
    b = house_way_setting(parse_tiles("4-5 6-6 1-6 5-5"))
    assert (classes(a.high), classes(a.low)) == (classes(b.high), classes(b.low))
    assert {t.face for t in b.tiles} == {"4-5", "6-6", "1-6", "5-5"}


def test_registry_and_errors():
    assert set(HOUSE_WAYS) == {"reference", "pa-minimal", "reference-split-gee"}
    assert get_house_way("Reference") is HOUSE_WAYS["reference"]
    assert isinstance(get_house_way("pa-minimal"), PAMinimalHouseWay)
    with pytest.raises(InputError, match="vegas"):
        get_house_way("vegas")
    with pytest.raises(SettingError, match="got 3"):
        house_way_setting(parse_tiles("6-6 1-1 5-5"))


def test_pa_minimal_rules():
    check("1-2 2-4 6-6 6-6", "1-2 2-4", "6-6 6-6", way="pa-minimal")     # Supreme Pair kept
    check("6-6 3-6 1-3 2-2", "6-6 3-6", "1-3 2-2", way="pa-minimal")     # wong
    s = check("1-6 2-2 1-3 5-5", "2-2 1-3", "1-6 5-5", way="pa-minimal")  # two worth 7-9
    assert (s.high_value().points, s.low_value().points) == (8, 7)
    s = check("5-6 4-6 1-3 2-2", "1-3 2-2", "5-6 4-6", way="pa-minimal")
    assert (s.high_value().points, s.low_value().points) == (8, 1)


@given(ts=tile_sets)
def test_split_gee_variant_is_legal_and_splits_only_in_the_published_cases(ts):
    """reference-split-gee: house-way.md 1 as published -- the Gee Joon pair is split only
    with a 4 and a 6, a 5 and a 6, or L6 and H6; every setting is still legal."""
    s = house_way_setting(ts, "reference-split-gee")
    hk, lk = s.keys()
    assert hk >= lk
    if sum(t.is_gee_joon for t in ts) == 2 and s.high_value().pair_rank != 1:
        others = sorted(t.spots for t in ts if not t.is_gee_joon)
        assert others in ([4, 6], [5, 6], [6, 6]), (ts, s)


def test_split_gee_variant_worked_example():
    s = house_way_setting(parse_tiles("1-2 2-4 1-3 1-5"), "reference-split-gee")
    assert s.high_value().pair_rank != 1
    assert house_way_setting(parse_tiles("1-2 2-4 1-3 1-5")).high_value().pair_rank == 1
