"""Pai gow tiles: the 21 faces, the 32-tile set and a strict parser.

Sources: N.J.A.C. 13:69F-10.2 (b) and (g) (NJ); 58 Pa. Code 621a.3 (c) and (h) (PA);
docs/rules.md section 1.

A tile is identified by its *face*: an unordered pair of half values 1..6 written
``"low-high"`` (``"1-6"``). Eleven faces come twice in a set (the civil tiles), ten once
(the military tiles); 32 tiles in all.

Two tiles of equal single rank (e.g. 3-6 and 4-5, the Chop Gow) are equal for every
comparison, and so are the two Gee Joon tiles (1-2 and 2-4) when used singly: each may count
3 (taking rank 17) or 6 (taking rank 15) [NJ (e), PA (f)]. The project therefore groups the
32 tiles into 16 *pair classes* of two tiles each, in pair order (class 0 = Gee Joon,
class 1 = Teen, ..., class 15 = Chop Ng). Tiles of one class are interchangeable for scoring;
that is the sense of the encyclopedia's 3,620 distinct four-tile sets and 136 distinct hands.

Spot colours follow usual casino tiles (docs/rules.md section 1): a half showing 1 or 4 has red
spots, and on 6-6 half of the twelve spots are red; all other spots are white.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterable

from .errors import InputError

__all__ = [
    "Tile",
    "TileParseError",
    "FACES",
    "STANDARD_SET",
    "TILES_BY_FACE",
    "PAIR_CLASS_NAMES",
    "parse_tile",
    "parse_tiles",
    "FaceOverSet",
    "faces_over_set",
]


class TileParseError(InputError):
    """Raised when text does not name exactly one pai gow tile face; the message names it."""


# (face, Cantonese name, single rank [NJ (g) / PA (h)], copies in a set), highest rank first.
_FACE_TABLE: tuple[tuple[tuple[int, int], str, int, int], ...] = (
    ((6, 6), "Teen", 1, 2),
    ((1, 1), "Day", 2, 2),
    ((4, 4), "Yun", 3, 2),
    ((1, 3), "Gor", 4, 2),
    ((5, 5), "Mooy", 5, 2),
    ((3, 3), "Chong", 6, 2),
    ((2, 2), "Bon", 7, 2),
    ((5, 6), "Foo", 8, 2),
    ((4, 6), "Ping", 9, 2),
    ((1, 6), "Tit", 10, 2),
    ((1, 5), "Look", 11, 2),
    ((3, 6), "Chop Gow", 12, 1),
    ((4, 5), "Chop Gow", 12, 1),
    ((2, 6), "Chop Bot", 13, 1),
    ((3, 5), "Chop Bot", 13, 1),
    ((2, 5), "Chop Chit", 14, 1),
    ((3, 4), "Chop Chit", 14, 1),
    ((2, 4), "Gee Joon", 15, 1),
    ((1, 4), "Chop Ng", 16, 1),
    ((2, 3), "Chop Ng", 16, 1),
    ((1, 2), "Gee Joon", 17, 1),
)

# Pair classes in pair order [NJ (b)]: index 0 is the Supreme Pair.
PAIR_CLASS_NAMES: tuple[str, ...] = (
    "Gee Joon", "Teen", "Day", "Yun", "Gor", "Mooy", "Chong", "Bon", "Foo", "Ping", "Tit",
    "Look", "Chop Gow", "Chop Bot", "Chop Chit", "Chop Ng",
)


def _pair_class(rank: int) -> int:
    if rank in (15, 17):
        return 0
    if rank <= 14:
        return rank
    return 15  # rank 16, the fives


@dataclass(frozen=True, order=False)
class Tile:
    """One pai gow tile face (immutable value type).

    Attributes:
        low, high: half values, ``1 <= low <= high <= 6`` (int).
        name: Cantonese name ("Teen", "Chop Gow", "Gee Joon", ...).
        rank: single-tile rank, 1 = highest, 17 = lowest [NJ (g), PA (h)]; equal ranks are
            equal for every tie-break.
        copies: how many tiles of this face a 32-tile set holds (1 or 2).
        index: position of the face in :data:`FACES` (0..20, rank order).

    Raises:
        ValueError: for half values that are not a face of the pai gow set.
    """

    low: int
    high: int
    name: str = field(compare=False)
    rank: int = field(compare=False)
    copies: int = field(compare=False)
    index: int = field(compare=False)

    @property
    def face(self) -> str:
        """The face as ``"low-high"``, e.g. ``"1-6"``."""
        return f"{self.low}-{self.high}"

    @property
    def spots(self) -> int:
        """Total spots on the tile (3..12)."""
        return self.low + self.high

    @property
    def red(self) -> int:
        """Red spots on a usual casino tile (halves of 1 or 4; six of the Teen's twelve)."""
        if (self.low, self.high) == (6, 6):
            return 6
        return sum(h for h in (self.low, self.high) if h in (1, 4))

    @property
    def white(self) -> int:
        """White spots on a usual casino tile (``spots - red``)."""
        return self.spots - self.red

    @property
    def pair_class(self) -> int:
        """Pair class 0..15 in pair order (0 = Gee Joon, 1 = Teen, ..., 15 = Chop Ng)."""
        return _pair_class(self.rank)

    @property
    def is_gee_joon(self) -> bool:
        """True for 1-2 and 2-4, the two halves of the Supreme Pair."""
        return self.rank in (15, 17)

    def __str__(self) -> str:
        return self.face

    def __repr__(self) -> str:
        return f"Tile({self.face!r})"


FACES: tuple[Tile, ...] = tuple(
    Tile(low, high, name, rank, copies, i)
    for i, ((low, high), name, rank, copies) in enumerate(_FACE_TABLE)
)
"""The 21 faces, highest single rank first (shape: 21 Tiles)."""

TILES_BY_FACE: dict[str, Tile] = {t.face: t for t in FACES}

STANDARD_SET: tuple[Tile, ...] = tuple(t for t in FACES for _ in range(t.copies))
"""The 32 tiles of one set, in rank order; civil faces appear twice."""

assert len(STANDARD_SET) == 32

_UNIQUE_NAMES: dict[str, Tile] = {}
_AMBIGUOUS: dict[str, list[str]] = {}
for _t in FACES:
    _key = _t.name.lower().replace(" ", "")
    if _key in _UNIQUE_NAMES or _key in _AMBIGUOUS:
        _AMBIGUOUS.setdefault(_key, [_UNIQUE_NAMES.pop(_key).face] if _key in _UNIQUE_NAMES else [])
        _AMBIGUOUS[_key].append(_t.face)
    else:
        _UNIQUE_NAMES[_key] = _t
for _key, _faces in list(_AMBIGUOUS.items()):
    if _key.startswith("chop"):
        _AMBIGUOUS[_key[4:]] = _faces
_UNIQUE_NAMES.update({"gee3": TILES_BY_FACE["1-2"], "gee6": TILES_BY_FACE["2-4"],
                      "geejoon3": TILES_BY_FACE["1-2"], "geejoon6": TILES_BY_FACE["2-4"]})

_FACE_RE = re.compile(r"^([1-6])\s*[-/:]?\s*([1-6])$")


def parse_tile(text: str) -> Tile:
    """Parse one tile: ``"6-6"``, ``"66"``, ``"6/6"``, ``"6-1"`` (order free), ``"teen"``,
    ``"gee3"`` (the 1-2), ``"gee6"`` (the 2-4); case and surrounding spaces are ignored.

    Returns:
        The :class:`Tile` of that face.

    Raises:
        TileParseError: for anything else, e.g. ``"7-7"``, ``"0-3"`` (no blanks in pai gow),
            ``"3-3-3"`` or ``"gow"`` (names two faces); the message quotes the text.
    """
    if not isinstance(text, str):
        raise TileParseError(f"not a tile: {text!r} (expected text such as '6-6' or 'teen')")
    s = text.strip().lower()
    m = _FACE_RE.match(s)
    if m:
        a, b = sorted((int(m.group(1)), int(m.group(2))))
        return TILES_BY_FACE[f"{a}-{b}"]
    key = re.sub(r"[\s_-]", "", s)
    if key in _UNIQUE_NAMES:
        return _UNIQUE_NAMES[key]
    if key in _AMBIGUOUS:
        raise TileParseError(
            f"tile name {text!r} names {' and '.join(_AMBIGUOUS[key])}; write the face instead"
        )
    raise TileParseError(
        f"unknown tile {text!r}: write a face such as '1-6' or '66' (halves 1..6, no blanks) "
        "or a name such as 'teen', 'day', 'gee3'"
    )


def parse_tiles(texts: str | Iterable[str]) -> list[Tile]:
    """Parse several tiles, from an iterable of strings or one string split on spaces/commas.

    Raises:
        TileParseError: naming the first text that is not a tile.
    """
    if isinstance(texts, str):
        texts = [p for p in re.split(r"[\s,]+", texts.strip()) if p]
    return [parse_tile(t) for t in texts]


@dataclass(frozen=True)
class FaceOverSet:
    """A face seen more often than one 32-tile set holds it (docs/rules.md section 1): some
    read of it is wrong.

    Attributes:
        tile: the face.
        count: how many times it was seen (> ``tile.copies``).
        where: who showed it, once per sighting in the order seen (a position label, or
            None for a tile in no position).
        excess_at: who showed the sighting one beyond the set's copies.
    """

    tile: Tile
    count: int
    where: tuple[str | None, ...]
    excess_at: str | None

    @property
    def holders(self) -> tuple[str | None, ...]:
        """The distinct entries of ``where``, in the order first seen."""
        return tuple(dict.fromkeys(self.where))


def faces_over_set(sightings: Iterable[tuple[Tile | str, str | None]]) -> list[FaceOverSet]:
    """The faces seen more often than a set holds them (``Tile.copies``: 2 for civil faces,
    1 for military ones; docs/rules.md section 1).

    Args:
        sightings: ``(tile or face text, who showed it)`` pairs, in the order to walk them
            (the order decides :attr:`FaceOverSet.excess_at`).

    Returns:
        one :class:`FaceOverSet` per face over the set, in the order of :data:`FACES`.

    Raises:
        TileParseError: a face text that is not a tile (see :func:`parse_tile`).
    """
    where: dict[Tile, list[str | None]] = {}
    for tile, who in sightings:
        t = tile if isinstance(tile, Tile) else parse_tile(tile)
        where.setdefault(t, []).append(who)
    return [FaceOverSet(t, len(w), tuple(w), w[t.copies])
            for t, w in sorted(where.items(), key=lambda kv: kv[0].index) if len(w) > t.copies]
