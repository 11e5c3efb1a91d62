"""The optimal setting: the split of four tiles with the best exact expected value against a
banker who sets by a house way (docs/house-way.md, ``optimal``; docs/rules.md section 6).

Kept apart from :mod:`scoring.setting` because it needs :mod:`scoring.analysis` (the exact
opponent counts), which itself needs the house ways of :mod:`scoring.setting`: the imports run
one way, setting <- analysis <- strategy.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Sequence

from .analysis import opponent_counts
from .rules import PA, RuleProfile, commission_fraction, get_profile
from .setting import (HouseWay, Setting, SettingError, _tiles4, get_house_way, is_house_way,
                      legal_splits)
from .tiles import Tile

__all__ = ["setting_ev", "optimal_setting"]


def setting_ev(tiles: Sequence[Tile | str], rules: RuleProfile | str = PA,
               way: "str | HouseWay" = "reference", banking: bool = False,
               commission=None) -> dict[Setting, Fraction]:
    """Exact expected value of each legal split of four tiles, in bet units.

    Against every one of the C(28, 4) = 20,475 deals of the other side from the remaining
    28 tiles, which is set by the house way ``way``. Non-banking: the player wins when both
    hands beat the banker's (copies lose); ``banking=True``: the player is the bank (copies
    win) against an opponent. EV = (1 - c) * P(win) - P(loss), c = ``commission`` or
    ``rules.commission``.

    Returns:
        ``{Setting: Fraction}`` in :func:`legal_splits` order.
    Raises:
        SettingError, TileParseError, UnknownHouseWayError, InputError (bad commission).
    """
    prof = get_profile(rules)
    c = commission_fraction(commission, prof)
    ts = _tiles4(tiles)
    splits = legal_splits(ts, prof)
    counts = [0] * 16
    for t in ts:
        counts[t.pair_class] += 1
    if max(counts) > 2:
        raise SettingError(f"tiles {' '.join(t.face for t in ts)!r} are not from one set")
    out: dict[Setting, Fraction] = {}
    for s in splits:
        hk, lk = s.keys(prof)
        w, l, n = opponent_counts(counts, hk, lk, prof, get_house_way(way), banking)
        out[s] = (1 - c) * Fraction(w, n) - Fraction(l, n)
    return out


def optimal_setting(tiles: Sequence[Tile | str], rules: RuleProfile | str = PA,
                    way: "str | HouseWay" = "reference", banking: bool = False,
                    commission=None) -> Setting:
    """The legal split of four tiles with the highest exact EV (:func:`setting_ev`); on a tie
    the house way's setting if it is among the best, else the first in legal_splits order.

    Raises: as :func:`setting_ev`.
    """
    evs = setting_ev(tiles, rules, way, banking, commission)
    best = max(evs.values())
    tied = [s for s, v in evs.items() if v == best]
    if len(tied) > 1:
        for s in tied:
            if is_house_way(s, way, rules):
                return s
    return tied[0]
