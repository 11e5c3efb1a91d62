"""Exact analysis over all 736,281,000 deals [rules.md 5]."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import numpy as np
import pytest

from scoring.analysis import (
    TOTAL_DEALS, _weights, analyze, class_sets, class_split_keys, house_way_keys,
)
from scoring.errors import InputError


def test_class_sets_and_weights():
    counts, mult, tuples = class_sets()
    assert len(tuples) == counts.shape[0] == 3620
    assert int(mult.sum()) == comb(32, 4) == 35960
    assert counts.max() == 2 and (counts.sum(axis=1) == 4).all()
    w = _weights(counts[:50])
    assert (w.sum(axis=1) == comb(28, 4)).all()
    assert TOTAL_DEALS == 736_281_000
    # a banker set needing both Gee Joon tiles is impossible when the player holds one
    gee_pair = tuples.index((0, 0, 1, 1))
    holds_gee = [i for i, c in enumerate(tuples) if c.count(0) == 1][:5]
    assert (_weights(counts[holds_gee])[:, gee_pair] == 0).all()


def test_house_way_and_split_keys_agree():
    hk, lk = house_way_keys("reference")
    sh, sl, _ = class_split_keys(True)
    assert (hk >= lk).all()
    # the house way's setting is one of the three splits of its class set
    assert (((sh == hk[:, None]) & (sl == lk[:, None])).any(axis=1)).all()


@pytest.mark.slow
def test_house_vs_house_exact_and_banking_swaps():
    r = analyze("house")
    b = analyze("house", banking=True)
    assert r.total == b.total == 736_281_000
    assert r.wins + r.losses + r.pushes == r.total
    assert r.p_win + r.p_loss + r.p_push == 1
    assert (b.p_win, b.p_loss, b.p_push) == (r.p_loss, r.p_win, r.p_push)
    assert r.commission == Fraction(1, 20)
    assert r.edge == r.p_loss - Fraction(19, 20) * r.p_win
    assert b.edge == b.p_loss - Fraction(19, 20) * b.p_win
    # exact figures of this engine (reference way, pa, 5%): regression pins
    assert (r.wins, r.losses, r.pushes) == (216_227_310, 222_999_182, 297_054_508)
    # same structure as the Wizard of Odds figures (29.21 / 30.18 / 40.61; edge 2.44%)
    assert abs(float(r.p_win) - 0.2921) < 0.005 and abs(float(r.p_loss) - 0.3018) < 0.005
    assert 0.02 < float(r.edge) < 0.03 and 0.0 < float(b.edge) < 0.01
    d = r.to_dict()
    assert d["p_win"] == f"{r.p_win.numerator}/{r.p_win.denominator}"
    assert abs(d["p_win_float"] - float(r.p_win)) < 1e-15 and d["total"] == 736_281_000


def test_pa_minimal_and_errors():
    with pytest.raises(InputError, match="greedy"):
        analyze("greedy")
    with pytest.raises(InputError, match="nowhere"):
        analyze(way="nowhere")
    hk, lk = house_way_keys("pa-minimal")
    assert hk.shape == (3620,) and hk.dtype == np.int16


class _OwnWay:
    """A casino's own way written against the HouseWay protocol only (no ClassHouseWay)."""

    name = "own"
    description = "delegates to the reference way (test double)"

    def set(self, tiles, rules="pa"):
        from scoring.setting import house_way_setting
        return house_way_setting(tiles, "reference", rules)


def test_any_house_way_object_plugs_in():
    own_hk, own_lk = house_way_keys(_OwnWay())
    hk, lk = house_way_keys("reference")
    assert (own_hk == hk).all() and (own_lk == lk).all()


def test_nj_profile_differs_only_through_zero_zero():
    pa_hk, _ = house_way_keys("reference", "pa")
    nj_hk, nj_lk = house_way_keys("reference", "nj")
    assert (nj_hk >= nj_lk).all()
    assert nj_lk.min() > 0  # no zero-zero key under NJ: every 0-point hand keeps its top tile
