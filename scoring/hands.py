"""Two-tile hands: pair, wong, gong or points, and a total order as one integer key.

Sources: NJ 13:69F-10.2 (b)-(h), PA 621a.3 (c)-(i), docs/rules.md sections 2-3.

The key of a hand is an ``int`` (fits int16) such that, for two hands under the same profile,
``key(a) > key(b)`` exactly when hand a beats hand b, and ``key(a) == key(b)`` exactly when they
are a copy (won by the banker). Layout:

==========  =================================================  =========
category    key                                                range
==========  =================================================  =========
pair        400 + (17 - pair rank), pair rank 1 (Gee Joon)..16  401..416
wong        302 Teen wong, 301 Day wong                         301..302
gong        202 Teen gong, 201 Day gong                         201..202
points      20 * points + (18 - rank of the highest tile)       1..197
zero-zero   0 under ``pa`` for every 0-point hand [PA (g)]      0
==========  =================================================  =========

A Gee Joon tile used outside the Supreme Pair counts 3 (rank 17) or 6 (rank 15), whichever
gives the higher key [PA (f), NJ (e)].
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Sequence

import numpy as np

from .errors import InputError
from .rules import PA, RuleProfile, get_profile
from .tiles import FACES, PAIR_CLASS_NAMES, Tile, parse_tile

__all__ = [
    "HandValue",
    "HandError",
    "evaluate",
    "hand_key",
    "key_table",
    "class_key_table",
    "PHYSICAL_HANDS",
    "beats",
]

PAIR_BASE, WONG_BASE, GONG_BASE = 400, 300, 200
CATEGORIES = ("pair", "wong", "gong", "points")


class HandError(InputError):
    """Raised for a hand that is not exactly two tiles; the message names the input."""


@dataclass(frozen=True)
class HandValue:
    """The value of one two-tile hand under one rule profile.

    Attributes:
        tiles: the two tiles, higher single rank first.
        category: ``"pair"``, ``"wong"``, ``"gong"`` or ``"points"``.
        points: 0..9 for category points, else None.
        high_tile: the tile that breaks ties (for points: the higher after a Gee Joon is
            counted 3 or 6); for pairs, wongs and gongs the higher-ranked tile.
        key: integer order key (see module docstring); higher beats lower, equal is a copy.
        name: readable label, e.g. ``"Teen pair"``, ``"Day wong"``, ``"7 points, Foo"``.
        pair_rank: 1..16 for pairs [NJ (b)], else None.
    """

    tiles: tuple[Tile, Tile]
    category: str
    points: int | None
    high_tile: Tile
    key: int
    name: str
    pair_rank: int | None = None

    def to_dict(self) -> dict:
        """JSON-ready form: tiles as faces, category, points, high_tile, name, key."""
        return {
            "tiles": [t.face for t in self.tiles],
            "category": self.category,
            "points": self.points,
            "high_tile": self.high_tile.face,
            "name": self.name,
            "key": self.key,
        }


def _as_tile(t: Tile | str) -> Tile:
    return t if isinstance(t, Tile) else parse_tile(t)


def _pair_rank(a: Tile, b: Tile) -> int | None:
    """Pair rank 1..16 [NJ (b)] or None. Pairs are exactly: the Gee Joon (1-2 with 2-4) and
    two tiles of equal single rank (matched pairs and the four mixed pairs)."""
    if a.is_gee_joon and b.is_gee_joon and a != b:
        return 1
    if a.rank == b.rank and not a.is_gee_joon:
        return a.pair_class + 1
    return None


def _points_options(t: Tile) -> tuple[tuple[int, int], ...]:
    """(spot value, single rank) choices for one tile used in a points hand."""
    if t.is_gee_joon:
        return ((3, 17), (6, 15))
    return ((t.spots, t.rank),)


def _evaluate(a: Tile, b: Tile, zero_zero_copy: bool) -> HandValue:
    hi, lo = (a, b) if a.rank <= b.rank else (b, a)
    pr = _pair_rank(a, b)
    if pr is not None:
        label = "Gee Joon (Supreme pair)" if pr == 1 else f"{PAIR_CLASS_NAMES[pr - 1]} pair"
        return HandValue((hi, lo), "pair", None, hi, PAIR_BASE + 17 - pr, label, pr)
    if hi.rank in (1, 2):  # Teen or Day
        other = lo
        who = "Teen" if hi.rank == 1 else "Day"
        bonus = 2 if hi.rank == 1 else 1
        if other.spots == 9:
            return HandValue((hi, lo), "wong", None, hi, WONG_BASE + bonus, f"{who} wong")
        if other.spots == 8:
            return HandValue((hi, lo), "gong", None, hi, GONG_BASE + bonus, f"{who} gong")
    best: tuple[int, int, Tile] | None = None
    for va, ra in _points_options(a):
        for vb, rb in _points_options(b):
            pts = (va + vb) % 10
            top_rank, top = (ra, a) if ra <= rb else (rb, b)
            key = 20 * pts + (18 - top_rank)
            if pts == 0 and zero_zero_copy:
                key = 0
            if best is None or key > best[0]:
                best = (key, pts, top)
    key, pts, top = best
    other = lo if top is hi else hi
    tiles = (top, other)
    return HandValue(tiles, "points", pts, top, key, f"{pts} point{'' if pts == 1 else 's'}, {top.name}")


def evaluate(a: Tile | str, b: Tile | str, rules: RuleProfile | str = PA) -> HandValue:
    """Evaluate the two-tile hand ``a`` + ``b`` under ``rules``.

    Examples (docs/rules.md): 1-1 + 3-3 is 8 points; 5-6 + 1-6 is 8; 2-4 + 1-5 is not a pair and
    scores 9 (2-4 counted 3); 6-6 + 5-5 scores 2; 1-1 + 4-4 is a Day gong.

    Raises:
        TileParseError: if a string is not a tile.
    """
    prof = get_profile(rules)
    return _cached_eval(_as_tile(a), _as_tile(b), prof.zero_zero_copy)


@lru_cache(maxsize=None)
def _cached_eval(a: Tile, b: Tile, zz: bool) -> HandValue:
    return _evaluate(a, b, zz)


def hand_key(a: Tile | str, b: Tile | str, rules: RuleProfile | str = PA) -> int:
    """The integer order key of hand ``a`` + ``b`` (see module docstring)."""
    return evaluate(a, b, rules).key


def beats(player_key, banker_key):
    """True where the player's hand beats the banker's: strictly greater key (a copy goes to
    the banker) [NJ (c), (h); PA (d), (i)]. Works on ints or numpy arrays of keys."""
    return player_key > banker_key


@lru_cache(maxsize=None)
def _key_table(zz: bool) -> np.ndarray:
    n = len(FACES)
    out = np.empty((n, n), dtype=np.int16)
    for i, a in enumerate(FACES):
        for j, b in enumerate(FACES):
            out[i, j] = _evaluate(a, b, zz).key
    out.setflags(write=False)
    return out


def key_table(rules: RuleProfile | str = PA) -> np.ndarray:
    """Keys of every face pair: int16 array of shape (21, 21) indexed by ``Tile.index``
    (symmetric; the diagonal of a military face, which a set cannot deal, is its pair key).
    Read-only."""
    return _key_table(get_profile(rules).zero_zero_copy)


@lru_cache(maxsize=None)
def _class_table(zz: bool) -> np.ndarray:
    reps: list[Tile] = [None] * 16  # one representative face per pair class
    for t in FACES:
        if reps[t.pair_class] is None:
            reps[t.pair_class] = t
    out = np.empty((16, 16), dtype=np.int16)
    for i in range(16):
        for j in range(16):
            a = reps[i]
            b = reps[j]
            if i == j:  # two tiles of one class: the class's pair
                b = next(t for t in FACES if t.pair_class == i and (t != a or t.copies == 2))
            out[i, j] = _evaluate(a, b, zz).key
    out.setflags(write=False)
    return out


def class_key_table(rules: RuleProfile | str = PA) -> np.ndarray:
    """Keys by pair class (see :mod:`scoring.tiles`): int16 array (16, 16); entry [c, c] is the
    pair of class c. Tiles of one class are interchangeable, so this is all analysis needs."""
    return _class_table(get_profile(rules).zero_zero_copy)


def _physical_hands() -> tuple[tuple[Tile, Tile], ...]:
    hands = []
    for i, a in enumerate(FACES):
        for b in FACES[i:]:
            if a == b and a.copies < 2:
                continue
            hands.append((a, b))
    return tuple(hands)


PHYSICAL_HANDS: tuple[tuple[Tile, Tile], ...] = _physical_hands()
"""Every distinct two-tile hand by physical face: 221 of them (docs/rules.md section 1)."""


def parse_hand(texts: Sequence[str | Tile]) -> tuple[Tile, Tile]:
    """Two tiles from two texts.

    Raises:
        HandError: when not exactly two tiles are given.
        TileParseError: when a text is not a tile.
    """
    if len(texts) != 2:
        raise HandError(f"a hand is two tiles, got {len(texts)}: {' '.join(map(str, texts))!r}")
    return _as_tile(texts[0]), _as_tile(texts[1])
