"""Settings, legal splits, dealer compliance and the exact optimal setting [rules.md 4]."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from itertools import combinations

import pytest

from scoring.errors import InputError
from scoring.setting import (
    Setting, SettingError, house_way_setting, is_house_way, legal_splits, make_setting,
)
from scoring.strategy import optimal_setting, setting_ev
from scoring.tiles import STANDARD_SET, parse_tiles


def test_legal_splits_counts_and_orientation():
    assert len(legal_splits(parse_tiles("6-6 1-1 5-5 2-3"))) == 3
    assert len(legal_splits(parse_tiles("6-6 6-6 5-5 2-3"))) == 2
    assert len(legal_splits(parse_tiles("6-6 6-6 5-5 5-5"))) == 2  # pairs, or T 10 / T 10
    for s in legal_splits(parse_tiles("1-2 2-4 1-3 3-3")):
        assert s.keys()[0] >= s.keys()[1]


def test_make_setting_and_mis_set():
    s = make_setting(["1-3", "2-2"], ["6-6", "3-6"])
    assert s.is_mis_set()  # 8 points below a Teen wong
    assert not make_setting(["6-6", "3-6"], ["1-3", "2-2"]).is_mis_set()
    with pytest.raises(SettingError, match="1-3"):
        make_setting(["1-3"], ["6-6", "3-6"])
    with pytest.raises(SettingError):
        legal_splits(parse_tiles("6-6 1-1 5-5"))


def test_is_house_way_by_class():
    ts = parse_tiles("6-6 1-6 3-6 5-5")
    hw = house_way_setting(ts)
    assert is_house_way(hw)
    assert is_house_way(make_setting(["1-6", "6-6"], ["5-5", "3-6"]))
    others = [s for s in legal_splits(ts) if not s.same_hands(hw)]
    assert len(others) == 2 and not any(is_house_way(s) for s in others)
    # a 4-5 in place of the 3-6 (same pair class) is still the house way
    assert is_house_way(make_setting(["6-6", "1-6"], ["4-5", "5-5"]))
    # hands swapped (a mis-set) is not
    assert not is_house_way(make_setting(["5-5", "3-6"], ["6-6", "1-6"]))
    # the Teen pair kept, by the reference way, not by splitting it
    assert not is_house_way(make_setting(["6-6", "1-2"], ["6-6", "1-3"]))


def _brute_force_counts(ts, setting: Setting, banking: bool):
    """Physical enumeration of the 20,475 opponent deals (independent of the class tables)."""
    rest = list(STANDARD_SET)
    for t in ts:
        rest.remove(t)
    hk, lk = setting.keys()
    win = loss = n = 0
    for opp in combinations(rest, 4):
        bh, bl = house_way_setting(opp).keys()
        n += 1
        if banking:
            win += hk >= bh and lk >= bl
            loss += hk < bh and lk < bl
        else:
            win += hk > bh and lk > bl
            loss += hk <= bh and lk <= bl
    return win, loss, n


@pytest.mark.parametrize("faces,banking", [("6-6 1-2 1-4 3-3", False), ("1-2 2-4 1-3 3-3", True)])
def test_setting_ev_matches_physical_enumeration(faces, banking):
    ts = parse_tiles(faces)
    evs = setting_ev(ts, banking=banking)
    assert len(evs) == len(legal_splits(ts))
    s = next(iter(evs))
    w, l, n = _brute_force_counts(ts, s, banking)
    assert n == 20475
    assert evs[s] == Fraction(19, 20) * Fraction(w, n) - Fraction(l, n)


@pytest.mark.parametrize("faces", ["6-6 6-6 1-2 1-3", "1-2 1-4 1-3 5-6", "6-6 1-6 3-6 5-5",
                                   "4-4 1-3 1-6 2-6", "1-3 5-5 5-6 4-6"])
def test_optimal_is_at_least_the_house_way(faces):
    ts = parse_tiles(faces)
    evs = setting_ev(ts)
    opt = optimal_setting(ts)
    hw = house_way_setting(ts)
    ev_hw = next(v for s, v in evs.items() if s.same_hands(hw) or is_house_way(s))
    assert evs[opt] == max(evs.values()) >= ev_hw
    assert all(isinstance(v, Fraction) for v in evs.values())


def test_optimal_differs_from_house_way_where_it_pays():
    # section 3 "largest with smallest" (4/6) vs the better 9/1
    ts = parse_tiles("1-3 5-5 3-6 2-5")
    evs = setting_ev(ts)
    opt = optimal_setting(ts)
    assert not is_house_way(opt)
    assert evs[opt] > next(v for s, v in evs.items() if is_house_way(s))


def test_commission_and_banking_change_ev():
    ts = parse_tiles("6-6 6-6 3-6 4-5")
    e5 = setting_ev(ts)
    e0 = setting_ev(ts, commission=0)
    e4 = setting_ev(ts, commission=Decimal("0.0476"))
    for s in e5:
        assert e0[s] >= e4[s] >= e5[s]
    eb = setting_ev(ts, banking=True)
    assert all(eb[s] >= e5[s] for s in e5)  # copies go to the bank
    with pytest.raises(InputError, match="1.5"):
        setting_ev(ts, commission=1.5)
    with pytest.raises(InputError, match="nope"):
        optimal_setting(ts, way="nope")
