"""Setting four tiles into a high (rear) and a low (front) hand.

Sources: rules.md section 4; house-way.md; PA 621a.8(d) for the minimal house way.

This module holds the value type :class:`Setting`, the legal splits of four tiles, the
:class:`HouseWay` interface and the registry of named house ways. The reference house way
and the optimal setting live here too (see below).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, Sequence

from .errors import InputError
from .hands import HandValue, evaluate
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

    A setting is *legal* when the high hand does not rank below the low hand (rules.md 4);
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

    There are three ways to split four tiles into two hands, two when they hold a pair of
    equal faces (rules.md 4), and one when they are two pairs of identical faces.

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
