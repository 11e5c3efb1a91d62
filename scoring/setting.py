"""Setting four tiles into a high (rear) and a low (front) hand.

Sources: docs/rules.md section 4; docs/house-way.md; PA 621a.8(d) for the minimal house way.

This module holds the value type :class:`Setting`, the legal splits of four tiles, the
:class:`HouseWay` interface and the registry of named house ways (docs/house-way.md). The
optimal setting by exact expected value is :mod:`scoring.strategy`.
"""

from __future__ import annotations

import itertools as _it
from dataclasses import dataclass
from typing import Protocol, Sequence

from .errors import InputError
from .hands import HandValue, class_key_table, evaluate
from .rules import PA, RuleProfile, get_profile
from .tiles import Tile, parse_tile

__all__ = [
    "Setting",
    "SettingError",
    "legal_splits",
    "make_setting",
    "HouseWay",
]


class SettingError(InputError):
    """Raised for a setting that is not two hands of two tiles, or four tiles that are not
    four; the message names the input."""


@dataclass(frozen=True)
class Setting:
    """Four tiles set as a high (rear) hand and a low (front) hand.

    Attributes:
        high: the two tiles of the high hand (as given; use :meth:`high_value` for its value).
        low: the two tiles of the low hand.

    A setting is *legal* when the high hand does not rank below the low hand (docs/rules.md 4);
    :meth:`is_mis_set` tells the opposite.
    """

    high: tuple[Tile, Tile]
    low: tuple[Tile, Tile]

    def high_value(self, rules: RuleProfile | str = PA) -> HandValue:
        """Value of the high hand under ``rules``."""
        return evaluate(self.high[0], self.high[1], rules)

    def low_value(self, rules: RuleProfile | str = PA) -> HandValue:
        """Value of the low hand under ``rules``."""
        return evaluate(self.low[0], self.low[1], rules)

    def keys(self, rules: RuleProfile | str = PA) -> tuple[int, int]:
        """(high key, low key) under ``rules``."""
        return self.high_value(rules).key, self.low_value(rules).key

    def is_mis_set(self, rules: RuleProfile | str = PA) -> bool:
        """True when the low hand ranks above the high hand (a foul setting)."""
        hi, lo = self.keys(rules)
        return lo > hi

    @property
    def tiles(self) -> tuple[Tile, Tile, Tile, Tile]:
        """All four tiles, high hand first."""
        return (*self.high, *self.low)

    def canonical(self, rules: RuleProfile | str = PA) -> "Setting":
        """The same two hands with each hand's tiles ordered by single rank (for display and
        equality checks)."""
        return Setting(
            tuple(sorted(self.high, key=lambda t: (t.rank, t.index))),
            tuple(sorted(self.low, key=lambda t: (t.rank, t.index))),
        )

    def same_hands(self, other: "Setting") -> bool:
        """True when both settings put the same faces in the high hand and in the low hand."""
        a, b = self.canonical(), other.canonical()
        return a.high == b.high and a.low == b.low

    def to_dict(self, rules: RuleProfile | str = PA) -> dict:
        """JSON-ready: ``{"high": [faces], "low": [faces], "high_hand": {...}, "low_hand": {...}}``."""
        c = self.canonical()
        return {
            "high": [t.face for t in c.high],
            "low": [t.face for t in c.low],
            "high_hand": self.high_value(rules).to_dict(),
            "low_hand": self.low_value(rules).to_dict(),
        }

    def __str__(self) -> str:
        c = self.canonical()
        return f"{c.high[0]} {c.high[1]} / {c.low[0]} {c.low[1]}"


def _tiles4(tiles: Sequence[Tile | str]) -> list[Tile]:
    ts = [t if isinstance(t, Tile) else parse_tile(t) for t in tiles]
    if len(ts) != 4:
        raise SettingError(
            f"a position holds four tiles, got {len(ts)}: {' '.join(t.face for t in ts)!r}")
    return ts


def legal_splits(tiles: Sequence[Tile | str], rules: RuleProfile | str = PA) -> list[Setting]:
    """The distinct ways to set four tiles, each oriented so the high hand ranks >= the low hand.

    There are three ways to split four tiles into two hands, and two when they hold a pair
    of equal faces (docs/rules.md 4), also when they hold two such pairs (T T / 10 10 and
    T 10 / T 10).

    Returns:
        list of :class:`Setting` (1..3), in a fixed order.

    Raises:
        SettingError: when not exactly four tiles are given.
    """
    prof = get_profile(rules)
    ts = _tiles4(tiles)
    out: list[Setting] = []
    seen: set[tuple] = set()
    for j in (1, 2, 3):
        rest = [k for k in (1, 2, 3) if k != j]
        h1 = (ts[0], ts[j])
        h2 = (ts[rest[0]], ts[rest[1]])
        k1 = evaluate(h1[0], h1[1], prof).key
        k2 = evaluate(h2[0], h2[1], prof).key
        high, low = (h1, h2) if k1 >= k2 else (h2, h1)
        s = Setting(high, low).canonical()
        sig = tuple(sorted((tuple(t.face for t in s.high), tuple(t.face for t in s.low))))
        if sig in seen:
            continue
        seen.add(sig)
        out.append(s)
    return out


def make_setting(high: Sequence[Tile | str], low: Sequence[Tile | str]) -> Setting:
    """A :class:`Setting` from two hands of two tiles each (strings or tiles).

    Raises:
        SettingError: when a hand is not two tiles.
        TileParseError: when a text is not a tile.
    """
    hi = [t if isinstance(t, Tile) else parse_tile(t) for t in high]
    lo = [t if isinstance(t, Tile) else parse_tile(t) for t in low]
    if len(hi) != 2 or len(lo) != 2:
        raise SettingError(
            f"a setting is two hands of two tiles, got {len(hi)} / {len(lo)}: "
            f"{' '.join(t.face for t in hi)} / {' '.join(t.face for t in lo)}")
    return Setting((hi[0], hi[1]), (lo[0], lo[1]))


class HouseWay(Protocol):
    """A house way: the fixed procedure by which the dealer sets four tiles.

    Attributes:
        name: registry name (``"reference"``, ``"pa-minimal"``, ...).
        description: one line, with its source.
    """

    name: str
    description: str

    def set(self, tiles: Sequence[Tile], rules: RuleProfile | str = PA) -> Setting:
        """Return the setting this way plays for ``tiles`` (four tiles). Must return one of
        :func:`legal_splits` (high >= low) and never split the Supreme Pair.

        Raises:
            SettingError: when not exactly four tiles are given.
        """
        ...


# ---------------------------------------------------------------------------------------------
# House ways (docs/house-way.md; PA 621a.8(d)) and the optimal setting.
# ---------------------------------------------------------------------------------------------

__all__ += [
    "HOUSE_WAYS",
    "UnknownHouseWayError",
    "ClassHouseWay",
    "ReferenceHouseWay",
    "PAMinimalHouseWay",
    "get_house_way",
    "house_way_setting",
    "is_house_way",
]


class UnknownHouseWayError(InputError):
    """Raised for a house-way name that is not registered; the message names it."""


# Pair classes (scoring.tiles): the house-way shorthand maps one to one onto them, except that
# "Gee" is class 0 used singly (either Gee Joon tile counts 3 or 6).
GEE, TEEN, DAY, H8, H4, H10, H6, L4, ELEVEN, L10, H7, L6, NINE, L8, L7, FIVE = range(16)
TD = frozenset({TEEN, DAY})
TENS = frozenset({H10, L10})
SEVENS = frozenset({H7, L7})
EIGHTS = frozenset({H8, L8})
FOURS = frozenset({H4, L4})
SIXES = frozenset({H6, L6})
SMALL = frozenset({H4, L4, FIVE, H6, L6, GEE})
"""docs/house-way.md: 'Small tiles' = 4s, 5s, 6s and Gee."""
ANY = frozenset(range(16))
#: spot total of each class (Gee: 3 here; hands count it 3 or 6 through the key table)
CLASS_SPOTS = (3, 12, 2, 8, 4, 10, 6, 4, 11, 10, 7, 6, 9, 8, 7, 5)
#: "Chong (3-3) or better": single ranks 1..6 are classes 1..6 (T, D, H8, H4, H10, H6)
CHONG_OR_BETTER = frozenset(range(1, 7))

H3_KEY = 20 * 3 + (18 - 6)
"""Key of the weakest "H3" hand: 3 points, highest tile Chong (rank 6). A hand is "H3 or
better" exactly when its key is >= H3_KEY (pairs, wongs and gongs included)."""


def _pts(key: int) -> int:
    """Points of a points-hand key (0..9); 10 for a gong, 11 wong, 12 pair (for comparisons
    such as "high hand 8 or better" where a gong/wong/pair counts above any points)."""
    if key >= 400:
        return 12
    if key >= 300:
        return 11
    if key >= 200:
        return 10
    return key // 20


_SPLITS = (((0, 1), (2, 3)), ((0, 2), (1, 3)), ((0, 3), (1, 2)))


class _Hand4:
    """Four pair classes (sorted) with the three partitions and their keys; the working state
    of a house-way interpreter. Positions 0..3 index ``cls``."""

    __slots__ = ("cls", "kt", "splits")

    def __init__(self, cls: tuple[int, ...], kt: list[list[int]]):
        self.cls = cls
        self.kt = kt
        out = []
        for a, b in _SPLITS:
            ka = kt[cls[a[0]]][cls[a[1]]]
            kb = kt[cls[b[0]]][cls[b[1]]]
            out.append((a, b, ka, kb) if ka >= kb else (b, a, kb, ka))
        self.splits = out  # (high positions, low positions, high key, low key)

    def key(self, i: int, j: int) -> int:
        return self.kt[self.cls[i]][self.cls[j]]

    def split_of(self, i: int, j: int):
        """The oriented split in which positions i and j form one hand."""
        for s in self.splits:
            if {i, j} == set(s[0]) or {i, j} == set(s[1]):
                return s
        raise AssertionError((i, j))

    def pump_up(self):
        """docs/house-way.md "pump up the high hand": the split with the strongest high hand; the
        key already prefers the higher tile among equal points ("playing the highest tile in
        it"); equal high hands are broken by the stronger low hand."""
        return max(self.splits, key=lambda s: (s[2], s[3]))

    def balance(self):
        """docs/house-way.md "balance": the strongest low hand that stays <= the high hand (every
        oriented split satisfies that); equal low hands are broken by the stronger high hand."""
        return max(self.splits, key=lambda s: (s[3], s[2]))

    def pair_positions(self) -> list[tuple[int, int]]:
        c = self.cls
        return [(i, j) for i, j in _it.combinations(range(4), 2) if c[i] == c[j]]

    def match(self, pattern: Sequence[frozenset]) -> tuple[int, ...] | None:
        """Positions p such that cls[p[k]] is in pattern[k] for k = 0..3, or None."""
        for perm in _it.permutations(range(4)):
            if all(self.cls[perm[k]] in pattern[k] for k in range(4)):
                return perm
        return None


class ClassHouseWay:
    """Base of the house ways: a way decides on the four *pair classes* (tiles of one class are
    interchangeable, scoring.tiles), the decision is memoised per class set (3,620 of them) and
    mapped back onto the physical tiles. Subclasses implement :meth:`_decide`.

    Attributes:
        name: registry name. description: one line with the source.
    """

    name = "base"
    description = ""

    def __init__(self) -> None:
        self._memo: dict[tuple, tuple] = {}

    def split_classes(self, cls: Sequence[int], rules: RuleProfile | str = PA):
        """The way's split of four pair classes.

        Args:
            cls: four pair classes 0..15, sorted ascending, each at most twice.
        Returns:
            ``(high positions, low positions, high key, low key)``: positions index ``cls``;
            keys as :mod:`scoring.hands` (high key >= low key).
        """
        prof = get_profile(rules)
        memo_key = (prof.zero_zero_copy, tuple(cls))
        hit = self._memo.get(memo_key)
        if hit is None:
            kt = class_key_table(prof).tolist()
            hit = self._decide(_Hand4(tuple(cls), kt))
            self._memo[memo_key] = hit
        return hit[0]

    def _decide(self, h: _Hand4):  # pragma: no cover - abstract
        """Return ``(split, rule)``: an entry of ``h.splits`` and the rule's label."""
        raise NotImplementedError

    def explain(self, tiles: Sequence[Tile | str], rules: RuleProfile | str = PA) -> str:
        """Label of the rule that decided the setting of ``tiles`` (e.g. ``"1: keep the
        pair"``, ``"exception: T/D + Gee + 5 + 6: 7/9"``), for overlays and tests."""
        ts = sorted(_tiles4(tiles), key=lambda t: (t.pair_class, t.rank, t.index))
        cls = tuple(t.pair_class for t in ts)
        self.split_classes(cls, rules)
        return self._memo[(get_profile(rules).zero_zero_copy, cls)][1]

    def set(self, tiles: Sequence[Tile | str], rules: RuleProfile | str = PA) -> Setting:
        """The setting this way plays for four tiles (see :class:`HouseWay`).

        Raises:
            SettingError: when not exactly four tiles are given.
            TileParseError: for a text that is not a tile.
        """
        ts = sorted(_tiles4(tiles), key=lambda t: (t.pair_class, t.rank, t.index))
        hi, lo, _, _ = self.split_classes(tuple(t.pair_class for t in ts), rules)
        return Setting((ts[hi[0]], ts[hi[1]]), (ts[lo[0]], ts[lo[1]])).canonical()

    def __repr__(self) -> str:
        return f"<house way {self.name!r}>"


# --- the reference way (docs/house-way.md), as data ------------------------------------------------

#: docs/house-way.md section 5, in the order they are tried (the more specific row of two rows that
#: overlap first). Each row: (label, four class sets matched to the four tiles, the two
#: pattern positions that form one hand, no-pair required).
REFERENCE_EXCEPTIONS: tuple[tuple[str, tuple[frozenset, ...], tuple[int, int], bool], ...] = (
    ("T/D + Gee + 5 + 6: 7/9", (TD, {GEE}, {FIVE}, SIXES), (0, 2), True),
    ("T/D + 9 + 8 + L4: 3/Gong", (TD, {NINE}, EIGHTS, {L4}), (0, 2), True),
    ("9 + 5 + H4 + L4: H3/9", ({NINE}, {FIVE}, {H4}, {L4}), (0, 2), True),
    ("Gee + 5 + H4 + L4: 7/H9", ({GEE}, {FIVE}, {H4}, {L4}), (1, 2), True),
    ("Gee + 5 + 4 + any: the 9 in the high hand", ({GEE}, {FIVE}, FOURS, ANY), (1, 2), True),
    ("11 + H10 + H8 + 7: 7/8 (read as 8/8, see ReferenceHouseWay)",
     ({ELEVEN}, {H10}, {H8}, SEVENS), (0, 3), True),
    ("11 + 10 + H8 + 7: 7/9", ({ELEVEN}, TENS, {H8}, SEVENS), (0, 2), True),
    ("Gee + H6 + L6 + 11: 7/H9", ({GEE}, {H6}, {L6}, {ELEVEN}), (0, 1), True),
)
REFERENCE_EXCEPTIONS = tuple((lab, tuple(frozenset(s) for s in pat), hand, np_)
                             for lab, pat, hand, np_ in REFERENCE_EXCEPTIONS)

#: docs/house-way.md section 1: pairs that are never split.
NEVER_SPLIT = frozenset({H4, L4, FIVE, H6, L6, H10, L10, ELEVEN})


def _two_of(x: int, y: int, allowed: frozenset) -> bool:
    return x in allowed and y in allowed


def _one_each(x: int, y: int, a: frozenset, b: frozenset) -> bool:
    return (x in a and y in b) or (y in a and x in b)


class ReferenceHouseWay(ClassHouseWay):
    """The reference house way of docs/house-way.md, rule for rule (a published Midwest casino way).

    Order: exceptions table (section 5, overrides everything) -> pairs (section 1) -> no pair
    with T or D (section 2) or without (section 3) -> general guidelines (section 4, applied to
    the results of sections 2 and 3; a kept or deliberately split pair is final).

    Interpretations where the text is ambiguous (all checked by tests/test_house_way.py):

    - Shorthand by pair class: T=Teen, D=Day, 11=Foo, H10=Mooy, L10=Ping, 9=Chop Gow,
      H8=Yun, L8=Chop Bot, H7=Tit, L7=Chop Chit, H6=Chong, L6=Look, H4=Gor, L4=Bon,
      5=Chop Ng, Gee=either Gee Joon tile used singly. "4" = H4 or L4, "6" = H6 or L6, etc.
    - "H3 or better": a hand whose key is >= 3 points with a Chong top (pairs, wongs and
      gongs included); see :data:`H3_KEY`. "H9" in the exceptions = the 9 made with the
      higher top tile (5 + H4 = 9 with Gor; Gee + H6 = 9 with Chong).
    - "Pump up": the split with the strongest high hand (ties: stronger low hand).
      "Balance": the split with the strongest low hand (ties: stronger high hand).
    - Supreme Pair: section 1 splits the Gee Joon pair with 4+6, 5+6, L6+H6, but PA
      621a.8(d)(1) ("always keep the Supreme Pair") and docs/house-way.md's checks forbid it, so the
      default way keeps it; ``ReferenceHouseWay(split_supreme_pair=True)`` applies the
      published rule (registered as ``reference-split-gee``; fails the Supreme-Pair check by
      design).
    - "any two of H10, L10, 11, T, D" allows two tiles of one class (so 8-8 + T-T splits).
      Two pairs: the split happens when either pair's rule says so and the other pair is not
      one that is never split (4s, 5s, 6s, 10s, 11s, Gee Joon); so T-T + 9-9 -> two wongs (the
      worked example), and literally also T-T + 8-8 -> two gongs, T-T + 7-7 -> 9/9.
    - "Splitting gives 6/8 or better": low hand >= 6 points and high hand >= 8 points (a gong,
      wong counts above 9).
    - Exceptions: "Gee + 5 + 4 + any" applies when the fourth tile makes no pair (a pair of 4s
      or 5s is never split); "11 + H10 + H8 + 7: 7/8" names a setting these tiles cannot make
      (they make 7/9, 8/8 or 1/5) and, being the more specific row beside "11 + 10 + H8 + 7:
      7/9", is read as the other strong setting, 8/8 (11+7 / H10+H8).
    - Section 2, both T and D split apart: of the two ways, the one that puts T in the wanted
      hand; if both (or neither) do, the balanced one of them.
    - "Play it with the lowest of 7, 8, 9": lowest spot total, then lowest rank (L7 before H7).
    - Section 3, several pairs of small tiles total 7, 8 or 9: the lowest such hand (as section
      2's "lowest"). "Three small tiles ... including one Gee": the Gee and two (or three) other
      small tiles with some two of them totalling 7, 8 or 9; the two non-Gee small tiles are
      played together (of three non-Gee small tiles: a pair totalling 7-9 if any, lowest
      first). "Pump up ... if that is possible": a split with a stronger high hand exists.
      "Largest tile with smallest": by spot total (Gee counts 3), ties by rank.
    - Section 4: G1 "0/6 or lower with a 0 low hand" -> balance. G2 "2/6 or lower" = low <= 2
      points and high <= 6 points -> pump up when that reaches 7+ points. G3 applies to two
      points hands only; the two Chong-or-better tiles are separated into a split that keeps
      the same (high, low) points and leaves no hand with two Chong-or-better tiles, the
      higher tile going low when the low hand is <= 7 points
      unless (low below H3 and high 7-9), else high; if only one separating split keeps the
      points, that one.
    """

    name = "reference"
    description = "reference house way (docs/house-way.md; a published Midwest casino way)"

    def __init__(self, split_supreme_pair: bool = False) -> None:
        super().__init__()
        self.split_supreme_pair = split_supreme_pair
        if split_supreme_pair:
            self.name = "reference-split-gee"

    def _decide(self, h: _Hand4):
        pairs = h.pair_positions()
        for label, pattern, hand, no_pair in REFERENCE_EXCEPTIONS:
            if no_pair and pairs:
                continue
            m = h.match(pattern)
            if m is not None:
                return h.split_of(m[hand[0]], m[hand[1]]), f"exception: {label}"
        if pairs:
            return self._pairs(h, pairs)
        c = h.cls
        if TEEN in c or DAY in c:
            s, rule = self._teen_day(h)
        else:
            s, rule = self._no_teen_day(h)
        return self._guidelines(h, s, rule)

    # -- section 1 ---------------------------------------------------------------------------
    def _pair_rule(self, h: _Hand4, p: tuple[int, int]) -> bool:
        """True when section 1 splits the pair at positions p."""
        c = h.cls
        pc = c[p[0]]
        x, y = (c[k] for k in range(4) if k not in p)
        if pc in NEVER_SPLIT:
            return False
        if pc in SEVENS:
            return {x, y} == {TEEN, DAY} or _one_each(x, y, TD, TENS | {ELEVEN})
        if pc in EIGHTS:
            return {x, y} == {NINE, ELEVEN} or _two_of(x, y, TENS | {ELEVEN} | TD)
        if pc == NINE:
            return _two_of(x, y, TENS | TD)
        if pc == GEE:
            if not self.split_supreme_pair:
                return False  # PA 621a.8(d)(1)
            return (_one_each(x, y, FOURS, SIXES) or _one_each(x, y, {FIVE}, SIXES)
                    or {x, y} == {L6, H6})
        if pc in TD:
            if _one_each(x, y, {GEE}, FOURS | {FIVE} | SIXES):
                return False
            if {x, y} == {NINE, ELEVEN}:
                return True
            q = [k for k in range(4) if k not in p]
            s = h.split_of(p[0], q[0])
            return _pts(s[3]) >= 6 and _pts(s[2]) >= 8
        return False

    def _pairs(self, h: _Hand4, pairs):
        c = h.cls
        if len(pairs) == 2:
            (a, b) = pairs
            if c[a[0]] in NEVER_SPLIT or c[b[0]] in NEVER_SPLIT or GEE in (c[a[0]], c[b[0]]):
                return h.split_of(*a), "1: two pairs, one never split: keep both"
            if self._pair_rule(h, a) or self._pair_rule(h, b):
                return h.split_of(a[0], b[0]), "1: two pairs, a pair rule splits them"
            return h.split_of(*a), "1: keep both pairs"
        p = pairs[0]
        q = [k for k in range(4) if k not in p]
        if self._pair_rule(h, p):
            return h.split_of(p[0], q[0]), f"1: split the {c[p[0]]} pair"
        return h.split_of(*p), "1: keep the pair"

    # -- section 2 ---------------------------------------------------------------------------
    def _teen_day(self, h: _Hand4):
        c = h.cls
        if TEEN in c and DAY in c:
            t, d = c.index(TEEN), c.index(DAY)
            x, y = (k for k in range(4) if k not in (t, d))
            if _one_each(c[x], c[y], TENS | {ELEVEN}, {GEE} | FOURS | {FIVE} | SIXES):
                return h.split_of(t, d), "2: T and D together"
            t_low = (_one_each(c[x], c[y], FOURS, {FIVE}) or _one_each(c[x], c[y], FOURS, SIXES)
                     or _one_each(c[x], c[y], TENS, {ELEVEN}))
            options = [h.split_of(t, x), h.split_of(t, y)]
            good = [s for s in options if (t in s[1]) == t_low] or options
            s = max(good, key=lambda s: (s[3], s[2]))
            return s, "2: T and D split, T " + ("low" if t_low else "high")
        td = c.index(TEEN) if TEEN in c else c.index(DAY)
        cands = [k for k in range(4) if c[k] in SEVENS | EIGHTS | {NINE}]
        if not cands:
            return h.balance(), "2: T/D without 7, 8, 9: balance"
        low = min(cands, key=lambda k: (CLASS_SPOTS[c[k]], -c[k]))
        s = h.split_of(td, low)
        if s[3] >= H3_KEY:
            return s, "2: T/D with the lowest 7, 8, 9; low H3 or better"
        return h.pump_up(), "2: T/D with 7, 8, 9; low below H3: pump up"

    # -- section 3 ---------------------------------------------------------------------------
    def _no_teen_day(self, h: _Hand4):
        c = h.cls
        small = [k for k in range(4) if c[k] in SMALL]
        cands = [(i, j) for i, j in _it.combinations(small, 2) if 7 <= _pts(h.key(i, j)) <= 9]
        if cands:
            gee = [k for k in small if c[k] == GEE]
            others = [k for k in small if c[k] != GEE]
            if gee and len(others) >= 2:
                pairs = list(_it.combinations(others, 2))
                pairs.sort(key=lambda p: (not (7 <= _pts(h.key(*p)) <= 9), h.key(*p)))
                s, rule = h.split_of(*pairs[0]), "3: three small tiles with Gee: non-Gee together"
            else:
                best = min(cands, key=lambda p: h.key(*p))
                s, rule = h.split_of(*best), "3: two small tiles total 7, 8 or 9"
            if s[3] >= H3_KEY:
                return s, rule + "; low H3 or better"
            up = h.pump_up()
            if up[2] > s[2]:
                return up, rule + "; low below H3: pump up"
            if any(x in TENS or x == ELEVEN for x in c):
                return h.balance(), rule + "; cannot pump up, 10/11 held: balance"
            return s, rule + "; stand"
        big = max(range(4), key=lambda k: (CLASS_SPOTS[c[k]], -c[k]))
        sm = min((k for k in range(4) if k != big), key=lambda k: (CLASS_SPOTS[c[k]], -c[k]))
        return h.split_of(big, sm), "3: largest tile with smallest"

    # -- section 4 ---------------------------------------------------------------------------
    def _guidelines(self, h: _Hand4, s, rule: str):
        hk, lk = s[2], s[3]
        if lk < 200 and hk < 200 and _pts(lk) == 0 and _pts(hk) <= 6:
            s = h.balance()
            rule += "; 4: never 0/6 or lower: balance"
        hk, lk = s[2], s[3]
        if hk < 200 and _pts(lk) <= 2 and _pts(hk) <= 6:
            up = h.pump_up()
            if up[2] < 200 and _pts(up[2]) >= 7 or up[2] >= 200:
                s = up
                rule += "; 4: 2/6 or lower: pump up"
        hk, lk = s[2], s[3]
        if hk < 200 and lk < 200:
            c = h.cls
            for hand in (s[0], s[1]):
                if c[hand[0]] in CHONG_OR_BETTER and c[hand[1]] in CHONG_OR_BETTER:
                    a, b = sorted(hand, key=lambda k: c[k])  # a: the higher tile
                    pts = (_pts(hk), _pts(lk))
                    alts = [t for t in h.splits if t is not s
                            and (_pts(t[2]), _pts(t[3])) == pts and t[2] < 200 and t[3] < 200
                            and not any(c[u[0]] in CHONG_OR_BETTER
                                        and c[u[1]] in CHONG_OR_BETTER for u in t[:2])]
                    if not alts:
                        continue
                    want_low = pts[1] <= 7 and not (lk < H3_KEY and 7 <= pts[0] <= 9)
                    pref = [t for t in alts if (a in t[1]) == want_low] or alts
                    s = pref[0]
                    rule += "; 4: separate two Chong-or-better tiles"
                    break
        return s, rule


class PAMinimalHouseWay(ClassHouseWay):
    """PA 621a.8(d)'s opening rules as a house way (docs/rules.md section 4).

    1. Always keep the Supreme Pair [(d)(1)].
    2. Otherwise play a pair, wong or gong when possible [(d)(2)]; of several settings that do,
       the one with the most such hands, then the strongest high hand, then the strongest low.
    3. Otherwise put two tiles worth 7, 8 or 9 together; of several, the strongest low hand
       (balance), then the strongest high hand.
    4. Fallback (not in the regulation): the strongest high hand, then the strongest low hand.
    """

    name = "pa-minimal"
    description = "PA 621a.8(d) opening rules: Supreme Pair, pair/wong/gong, 7-8-9, else max high"

    def _decide(self, h: _Hand4):
        c = h.cls
        if c.count(GEE) == 2:
            g = [k for k in range(4) if c[k] == GEE]
            return h.split_of(*g), "(d)(1): keep the Supreme Pair"
        strong = [s for s in h.splits if s[2] >= 200]
        if strong:
            return (max(strong, key=lambda s: ((s[3] >= 200), s[2], s[3])),
                    "(d)(2): pair, wong or gong")
        seven = [s for s in h.splits if any(140 <= k < 200 for k in (s[2], s[3]))]
        if seven:
            return max(seven, key=lambda s: (s[3], s[2])), "(d): two tiles worth 7, 8 or 9"
        return h.pump_up(), "fallback: strongest high hand"


HOUSE_WAYS: dict[str, HouseWay] = {
    "reference": ReferenceHouseWay(),
    "pa-minimal": PAMinimalHouseWay(),
    # docs/house-way.md section 1 as published splits the Gee Joon pair with 4+6, 5+6 or L6+H6;
    # the cited PA 621a.8(d)(1) says never. The default follows the regulation; the published
    # text stays available by name.
    "reference-split-gee": ReferenceHouseWay(split_supreme_pair=True),
}
"""The registered house ways by name. A casino's own way: subclass :class:`ClassHouseWay`
(or implement :class:`HouseWay`) and add it here; comparison code never changes."""


def get_house_way(name: "str | HouseWay" = "reference") -> HouseWay:
    """The registered house way ``name`` (case-insensitive), or ``name`` itself if it is
    already a house way.

    Raises:
        UnknownHouseWayError: for an unknown name (the message names it and the choices).
    """
    if not isinstance(name, str) and hasattr(name, "set"):
        return name
    key = str(name).strip().lower()
    if key in HOUSE_WAYS:
        return HOUSE_WAYS[key]
    raise UnknownHouseWayError(
        f"unknown house way {name!r}: choose one of {', '.join(HOUSE_WAYS)}")


def house_way_setting(tiles: Sequence[Tile | str], way: "str | HouseWay" = "reference",
                      rules: RuleProfile | str = PA) -> Setting:
    """The setting the house way ``way`` plays for four tiles (docs/house-way.md).

    Raises:
        SettingError: not four tiles. TileParseError: a text is not a tile.
        UnknownHouseWayError: unknown way name.
    """
    return get_house_way(way).set(_tiles4(tiles), rules)


def _class_hands(s: Setting) -> tuple[tuple[int, int], tuple[int, int]]:
    return (tuple(sorted(t.pair_class for t in s.high)),
            tuple(sorted(t.pair_class for t in s.low)))


def is_house_way(setting: Setting, way: "str | HouseWay" = "reference",
                 rules: RuleProfile | str = PA) -> bool:
    """True when ``setting`` is the setting the house way plays for its four tiles (dealer
    compliance). Hands are compared by pair class (tiles of equal rank are interchangeable);
    a setting with the hands swapped counts only when both hands have equal keys."""
    prof = get_profile(rules)
    hw = house_way_setting(setting.tiles, way, prof)
    a, b = _class_hands(setting), _class_hands(hw)
    if a == b:
        return True
    hk, lk = setting.keys(prof)
    return hk == lk and (a[1], a[0]) == b
