"""Exact game analysis: every deal of player and banker tiles, house way or optimal play.

Sources: docs/rules.md sections 4-5 (settlement; Wizard of Odds reference figures), docs/house-way.md.

A deal is the player's 4 tiles out of 32 and the banker's 4 out of the remaining 28:
35,960 x 20,475 = 736,281,000 deals, all equally likely. Tiles of one pair class are
interchangeable for every comparison (scoring.tiles), so deals are enumerated by class
*sets* (multisets of the 16 classes, each class at most twice: 3,620 of them) with exact
integer weights = the number of physical deals they stand for:

    weight(player p, banker b) = prod_k C(2, p_k) * C(2 - p_k, b_k)

and the house way is computed once per class set. Outcomes are counted with numpy over a
(player sets x banker sets) grid in int64; every count is exact.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from math import comb

import numpy as np

from .errors import InputError
from .hands import class_key_table
from .rules import PA, RuleProfile, commission_fraction, get_profile
from .setting import get_house_way

__all__ = [
    "AnalysisResult",
    "analyze",
    "class_sets",
    "house_way_keys",
    "class_split_keys",
    "opponent_counts",
    "TOTAL_DEALS",
    "N_CLASS_SETS",
]

TOTAL_DEALS = comb(32, 4) * comb(28, 4)
"""736,281,000 = 35,960 x 20,475 deals (player's 4 of 32, banker's 4 of the other 28)."""
N_CLASS_SETS = 3620
"""Distinct four-tile sets when tiles of one pair class are alike (encyclopedia figure)."""

# _WTAB[p][b] = C(2 - p, b): ways to take b tiles of a class when the player holds p of its 2.
_WTAB = np.array([[comb(2 - p, b) for b in range(3)] for p in range(3)], dtype=np.int64)


@lru_cache(maxsize=None)
def class_sets() -> tuple[np.ndarray, np.ndarray, tuple[tuple[int, ...], ...]]:
    """The 3,620 class sets.

    Returns:
        counts: int8 array (3620, 16), tiles of each pair class in the set (0..2).
        mult: int64 array (3620,), physical four-tile sets it stands for, prod C(2, count);
            sums to 35,960.
        tuples: the sets as sorted tuples of 4 class ids (positions used by house ways).
    """
    tuples = [c for c in itertools.combinations_with_replacement(range(16), 4)
              if max(c.count(k) for k in set(c)) <= 2]
    counts = np.zeros((len(tuples), 16), dtype=np.int8)
    for i, c in enumerate(tuples):
        for k in c:
            counts[i, k] += 1
    mult = np.prod(_WTAB[0][counts.astype(np.int64)], axis=1)
    assert len(tuples) == N_CLASS_SETS and int(mult.sum()) == comb(32, 4)
    counts.setflags(write=False)
    mult.setflags(write=False)
    return counts, mult, tuple(tuples)


_HW_CACHE: dict = {}


def house_way_keys(way="reference", rules: RuleProfile | str = PA) -> tuple[np.ndarray, np.ndarray]:
    """(high key, low key) of the house way's setting of every class set.

    Returns:
        two int16 arrays (3620,) in :func:`class_sets` order (cached per way and profile).
    Raises:
        UnknownHouseWayError: unknown way name.
    """

    prof = get_profile(rules)
    hw = get_house_way(way)
    key = (id(hw), prof.zero_zero_copy)
    hit = _HW_CACHE.get(key)
    if hit is not None and hit[0] is hw:
        return hit[1], hit[2]
    _, _, tuples = class_sets()
    hk = np.empty(len(tuples), dtype=np.int16)
    lk = np.empty(len(tuples), dtype=np.int16)
    if hasattr(hw, "split_classes"):
        for i, c in enumerate(tuples):
            s = hw.split_classes(c, prof)
            hk[i], lk[i] = s[2], s[3]
    else:  # any HouseWay: set one physical representative of each class set
        from .tiles import STANDARD_SET
        reps = [[t for t in STANDARD_SET if t.pair_class == k] for k in range(16)]
        for i, c in enumerate(tuples):
            ts, used = [], {}
            for k in c:
                ts.append(reps[k][used.get(k, 0)])
                used[k] = used.get(k, 0) + 1
            hk[i], lk[i] = hw.set(ts, prof).keys(prof)
    hk.setflags(write=False)
    lk.setflags(write=False)
    _HW_CACHE[key] = (hw, hk, lk)
    return hk, lk


@lru_cache(maxsize=None)
def class_split_keys(zz: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Keys of the legal splits of every class set (for the optimal strategy).

    Args:
        zz: the profile's ``zero_zero_copy``.
    Returns:
        hk, lk: int16 arrays (3620, 3), high key >= low key per split (the three partitions
        of the sorted class tuple; a set with a pair has fewer *distinct* ones, duplicates
        are harmless for a maximum); valid: bool (3620, 3), all True.
    """
    kt = (class_key_table(PA) if zz else class_key_table("nj")).astype(np.int16)
    _, _, tuples = class_sets()
    c = np.array(tuples, dtype=np.int64)
    parts = (((0, 1), (2, 3)), ((0, 2), (1, 3)), ((0, 3), (1, 2)))
    hk = np.empty((len(c), 3), dtype=np.int16)
    lk = np.empty((len(c), 3), dtype=np.int16)
    for j, (a, b) in enumerate(parts):
        ka = kt[c[:, a[0]], c[:, a[1]]]
        kb = kt[c[:, b[0]], c[:, b[1]]]
        hk[:, j] = np.maximum(ka, kb)
        lk[:, j] = np.minimum(ka, kb)
    return hk, lk, np.ones((len(c), 3), dtype=bool)


def _weights(pcounts: np.ndarray) -> np.ndarray:
    """Banker weights for a block of player class counts.

    Args:
        pcounts: int array (n, 16).
    Returns:
        int64 array (n, 3620): physical banker deals per banker class set given the player's
        tiles (0 where the set needs tiles the player holds); each row sums to 20,475.
    """
    bcounts, _, _ = class_sets()
    b = bcounts.astype(np.intp)
    p = np.asarray(pcounts, dtype=np.intp)
    w = np.ones((p.shape[0], b.shape[0]), dtype=np.int64)
    for k in range(16):
        w *= _WTAB[p[:, k]][:, b[:, k]]
    return w


def _outcomes(ph, pl, bh, bl, banking: bool):
    """Boolean (win, loss) grids of player keys ph/pl (n, 1) against banker keys bh/bl (m,).
    Non-banking: win = both strictly higher, loss = both lower or equal (copies to the
    banker). Banking (the player is the bank): win = both higher or equal, loss = both lower."""
    if banking:
        return (ph >= bh) & (pl >= bl), (ph < bh) & (pl < bl)
    return (ph > bh) & (pl > bl), (ph <= bh) & (pl <= bl)


def opponent_counts(counts, hk: int, lk: int, rules: RuleProfile | str = PA, way="reference",
                    banking: bool = False) -> tuple[int, int, int]:
    """Physical opponent deals won / lost by one player setting.

    Args:
        counts: the player's tiles per pair class (16 ints, each 0..2).
        hk, lk: the player's high and low hand keys.
        way: house way the opponent (the banker, or with ``banking`` the player facing the
            bank) sets by.
    Returns:
        (wins, losses, total) as ints; total = 20,475.
    """
    prof = get_profile(rules)
    bh, bl = house_way_keys(way, prof)
    w = _weights(np.asarray(counts, dtype=np.intp)[None, :])[0]
    win, loss = _outcomes(np.int16(hk), np.int16(lk), bh, bl, banking)
    n = int(w.sum())
    assert n == comb(28, 4)
    return int(w[win].sum()), int(w[loss].sum()), n


def _frac_str(f: Fraction) -> str:
    return f"{f.numerator}/{f.denominator}"


@dataclass(frozen=True)
class AnalysisResult:
    """Exact outcome counts over all 736,281,000 deals.

    Attributes:
        strategy: ``"house"`` (player sets by the house way) or ``"optimal"`` (player picks
            the split of highest exact EV against the house way).
        banking: True when the player is the bank (copies go to him).
        way: house way name; rules: profile name; commission: Fraction.
        wins, losses, pushes, total: exact integer counts of deals (total = 736,281,000).
        p_win, p_loss, p_push: Fractions (sum to 1).
        edge: P(loss) - (1 - commission) * P(win), the house edge per unit bet (Fraction).
        seconds: wall time of the enumeration.
    """

    strategy: str
    banking: bool
    way: str
    rules: str
    commission: Fraction
    wins: int
    losses: int
    pushes: int
    total: int
    p_win: Fraction
    p_loss: Fraction
    p_push: Fraction
    edge: Fraction
    seconds: float = 0.0

    def to_dict(self) -> dict:
        """JSON-ready: fractions as ``"n/d"`` strings plus ``*_float`` values."""
        d = {"strategy": self.strategy, "banking": self.banking, "way": self.way,
             "rules": self.rules, "wins": self.wins, "losses": self.losses,
             "pushes": self.pushes, "total": self.total, "seconds": round(self.seconds, 3)}
        for name in ("commission", "p_win", "p_loss", "p_push", "edge"):
            f = getattr(self, name)
            d[name] = _frac_str(f)
            d[name + "_float"] = float(f)
        return d


def analyze(strategy: str = "house", banking: bool = False, rules: RuleProfile | str = PA,
            way="reference", commission=None, progress: bool = False,
            block: int = 256) -> AnalysisResult:
    """Exact win/loss/push counts over every deal (see module docstring).

    Args:
        strategy: ``"house"`` or ``"optimal"`` (the player's setting).
        banking: the player is the bank against an opponent setting by the house way.
        rules: rule profile; way: house way of the banker (and of the player for "house").
        commission: fraction of a win (default ``rules.commission``).
        progress: show a tqdm bar on stderr.
        block: player class sets per numpy block (memory ~ block x 3620 x 8 bytes x 4).
    Returns:
        :class:`AnalysisResult`.
    Raises:
        InputError: unknown strategy, bad commission; UnknownHouseWayError, UnknownProfileError.
    """

    t0 = time.perf_counter()
    if strategy not in ("house", "optimal"):
        raise InputError(f"unknown strategy {strategy!r}: choose 'house' or 'optimal'")
    prof = get_profile(rules)
    hw = get_house_way(way)
    c = commission_fraction(commission, prof)
    cn, cd = c.numerator, c.denominator
    counts, mult, _ = class_sets()
    bh, bl = house_way_keys(hw, prof)
    if strategy == "house":
        ph_all, pl_all = bh[:, None], bl[:, None]
    else:
        ph_all, pl_all, _ = class_split_keys(prof.zero_zero_copy)
    n = counts.shape[0]
    wins = losses = total = 0
    rng = range(0, n, block)
    if progress:
        from tqdm import tqdm
        rng = tqdm(rng, desc=f"{strategy}{' banking' if banking else ''}", unit="block",
                   file=None)
    for s in rng:
        e = min(n, s + block)
        w = _weights(counts[s:e])
        m = mult[s:e]
        nw = np.empty((e - s, ph_all.shape[1]), dtype=np.int64)
        nl = np.empty_like(nw)
        for j in range(ph_all.shape[1]):
            win, loss = _outcomes(ph_all[s:e, j, None], pl_all[s:e, j, None], bh, bl, banking)
            nw[:, j] = (w * win).sum(axis=1)
            nl[:, j] = (w * loss).sum(axis=1)
        if nw.shape[1] == 1:
            bw, bl_ = nw[:, 0], nl[:, 0]
        else:  # exact EV x cd = (cd - cn) * wins - cd * losses; highest wins
            val = (cd - cn) * nw - cd * nl
            best = np.argmax(val, axis=1)
            bw = nw[np.arange(e - s), best]
            bl_ = nl[np.arange(e - s), best]
        wins += int((bw * m).sum())
        losses += int((bl_ * m).sum())
        total += int((w.sum(axis=1) * m).sum())
    assert total == TOTAL_DEALS, total
    pushes = total - wins - losses
    pw, plo = Fraction(wins, total), Fraction(losses, total)
    return AnalysisResult(
        strategy=strategy, banking=bool(banking), way=hw.name, rules=prof.name, commission=c,
        wins=wins, losses=losses, pushes=pushes, total=total, p_win=pw, p_loss=plo,
        p_push=Fraction(pushes, total), edge=plo - (1 - c) * pw,
        seconds=time.perf_counter() - t0)
