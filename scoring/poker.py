"""Texas hold 'em bonus poker hand ranking.

Source: N.J.A.C. 13:69F-28.5 (docs/README.md, sources); docs/rules.md section 6.

Card ranks, highest first: A K Q J 10 9 8 7 6 5 4 3 2 [(a)]; an ace also plays low, but only in
the straight (flush) A-2-3-4-5, the lowest one [(a), (b) 2 and 6]; no wraparound (Q-K-A-2-3 is
not a straight). Hand ranks, highest first [(b)]: royal flush, straight flush, four of a kind,
full house, flush, straight, three of a kind, two pairs, one pair; below them "high card" (the
hands holding none of the nine [(c)]).

Hands of equal rank [(c)]: "the hand which contains the highest ranking card ... which is not
contained in the other hand" wins; fully equal hands push. This is implemented as the usual
rank-then-kickers comparison (the cards making the rank first, by rank, then the others), which
gives (b)'s orders: three aces with two kings is the highest full house, two aces and two kings
the highest two pairs, A-K-Q-J-9 the highest flush.

A hand's :attr:`PokerHand.key` is a tuple ``(category, ranks...)`` with category 0 (high card)
.. 9 (royal flush) and card ranks 2..14; a higher key wins, equal keys push.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import combinations
from typing import Iterable, Sequence

from .errors import InputError

__all__ = ["Card", "PokerHand", "parse_card", "parse_cards", "best_hand", "evaluate5",
           "compare", "CATEGORY_NAMES"]

CATEGORY_NAMES: tuple[str, ...] = (
    "high card", "one pair", "two pairs", "three of a kind", "straight", "flush",
    "full house", "four of a kind", "straight flush", "royal flush",
)
"""Names by category index 0..9 (lowest first) [(b), and "none" of (c) as "high card"]."""

_RANK_CHARS = {"2": 2, "3": 3, "4": 4, "5": 5, "6": 6, "7": 7, "8": 8, "9": 9, "t": 10,
               "10": 10, "j": 11, "q": 12, "k": 13, "a": 14}
_RANK_TEXT = {v: k.upper() for k, v in _RANK_CHARS.items() if k != "10"}
_SUITS = "shdc"
_CARD_RE = re.compile(r"^(10|[2-9tjqka])([shdc])$")


@dataclass(frozen=True, order=True)
class Card:
    """A playing card.

    Attributes:
        rank: 2..14 (11 J, 12 Q, 13 K, 14 A).
        suit: one of ``"s"``, ``"h"``, ``"d"``, ``"c"``.
    """

    rank: int
    suit: str

    def __str__(self) -> str:
        return f"{_RANK_TEXT[self.rank]}{self.suit}"

    def __repr__(self) -> str:
        return f"Card({str(self)!r})"


def parse_card(text: str) -> Card:
    """Parse ``"As"``, ``"Td"``, ``"10h"``, ``"kc"`` (case-free; suits s h d c).

    Raises:
        InputError: naming the text for anything else (``"1s"``, ``"Ax"``, ``"11h"``).
    """
    s = str(text).strip().lower()
    m = _CARD_RE.match(s)
    if not m:
        raise InputError(
            f"unknown card {text!r}: write rank 2-9, T or 10, J, Q, K, A then suit s, h, d or c "
            "(e.g. 'As', 'Td', '10h')")
    return Card(_RANK_CHARS[m.group(1)], m.group(2))


def parse_cards(texts: str | Iterable[str | Card]) -> list[Card]:
    """Parse several cards (an iterable, or one text split on spaces/commas).

    Raises:
        InputError: naming a text that is not a card, or a card given twice.
    """
    if isinstance(texts, str):
        texts = [p for p in re.split(r"[\s,]+", texts.strip()) if p]
    cards = [t if isinstance(t, Card) else parse_card(t) for t in texts]
    seen: set[Card] = set()
    for c in cards:
        if c in seen:
            raise InputError(f"card {c} given twice")
        seen.add(c)
    return cards


@dataclass(frozen=True)
class PokerHand:
    """The best five-card hand from 5..7 cards.

    Attributes:
        cards: the five cards used, in key order (rank-making cards first).
        category: 0 (high card) .. 9 (royal flush).
        key: ``(category, r1, r2, ...)``, card ranks 2..14 (the ace of a wheel counts 5 in
            the straight's key); compare keys: higher wins, equal pushes.
        name: e.g. ``"full house"``.
    """

    cards: tuple[Card, ...]
    category: int
    key: tuple[int, ...]

    @property
    def name(self) -> str:
        """The rank's name [(b)]."""
        return CATEGORY_NAMES[self.category]

    def to_dict(self) -> dict:
        """JSON-ready ``{"rank": name, "category": int, "cards": [...], "key": [...]}``."""
        return {"rank": self.name, "category": self.category,
                "cards": [str(c) for c in self.cards], "key": list(self.key)}


def evaluate5(cards: Sequence[Card]) -> PokerHand:
    """Rank exactly five cards.

    Raises:
        InputError: when not five cards.
    """
    if len(cards) != 5:
        raise InputError(f"a poker hand is five cards, got {len(cards)}")
    ranks = sorted((c.rank for c in cards), reverse=True)
    flush = len({c.suit for c in cards}) == 1
    distinct = sorted(set(ranks), reverse=True)
    straight_high = None
    if len(distinct) == 5:
        if distinct[0] - distinct[4] == 4:
            straight_high = distinct[0]
        elif distinct == [14, 5, 4, 3, 2]:  # the wheel, A-2-3-4-5 [(a)]
            straight_high = 5
    counts: dict[int, int] = {}
    for r in ranks:
        counts[r] = counts.get(r, 0) + 1
    # groups: by count then rank, highest first -> (count, rank)
    groups = sorted(((n, r) for r, n in counts.items()), reverse=True)
    by_group = [r for n, r in groups]
    shape = tuple(n for n, r in groups)
    if straight_high is not None and flush:
        cat = 9 if straight_high == 14 else 8
        key = (cat, straight_high)
    elif shape == (4, 1):
        cat, key = 7, (7, *by_group)
    elif shape == (3, 2):
        cat, key = 6, (6, *by_group)
    elif flush:
        cat, key = 5, (5, *ranks)
    elif straight_high is not None:
        cat, key = 4, (4, straight_high)
    elif shape == (3, 1, 1):
        cat, key = 3, (3, *by_group)
    elif shape == (2, 2, 1):
        cat, key = 2, (2, *by_group)
    elif shape == (2, 1, 1, 1):
        cat, key = 1, (1, *by_group)
    else:
        cat, key = 0, (0, *ranks)
    order = {r: i for i, r in enumerate(by_group)}
    if straight_high == 5:
        order = {5: 0, 4: 1, 3: 2, 2: 3, 14: 4}
    ordered = tuple(sorted(cards, key=lambda c: (order[c.rank], _SUITS.index(c.suit))))
    return PokerHand(ordered, cat, key)


def best_hand(cards: str | Iterable[str | Card]) -> PokerHand:
    """The best five-card hand from 5..7 cards (text or :class:`Card`).

    Raises:
        InputError: for a bad or repeated card, or fewer than 5 / more than 7 cards.
    """
    cs = parse_cards(cards)
    if not 5 <= len(cs) <= 7:
        raise InputError(
            f"a poker hand is 5 to 7 cards, got {len(cs)}: {' '.join(map(str, cs))!r}")
    return max((evaluate5(c) for c in combinations(cs, 5)), key=lambda h: h.key)


def _as_hand(h) -> PokerHand:
    return h if isinstance(h, PokerHand) else best_hand(h)


def compare(hand_a, hand_b) -> int:
    """1 when ``hand_a`` ranks higher, -1 when lower, 0 for a push [(c)].

    Each argument is a :class:`PokerHand` or 5..7 cards (text or :class:`Card`); the two may
    share cards (community cards).

    Raises:
        InputError: for bad cards.
    """
    a, b = _as_hand(hand_a).key, _as_hand(hand_b).key
    return (a > b) - (a < b)
