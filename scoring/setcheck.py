"""The tile set check: are the tiles shown face up one complete set of 32 (16 pairs)?

Before play the tiles are shown face up and checked as a complete set of 16 pairs
[58 Pa. Code 621a.4; docs/rules.md section 1]. This module is the pure logic of that check:
given the faces read off the tiles laid out (None for a tile whose face could not be read), it
says whether they are exactly :data:`scoring.tiles.STANDARD_SET`, and if not, which faces are
missing, which are extra (seen more often than a set holds them), which are foreign (a read
that is not one of the 21 faces, e.g. ``"0-3"`` of a western domino) and how many tiles are
unread. An unread tile is never guessed: the check does not pass while any tile is unread.

Example::

    >>> from scoring.tiles import STANDARD_SET
    >>> faces = [t.face for t in STANDARD_SET]
    >>> check_set(faces).complete
    True
    >>> faces.remove("6-6")
    >>> check_set(faces).missing
    ('6-6',)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from .tiles import FACES, STANDARD_SET, TileParseError, parse_tile

__all__ = ["SetCheck", "check_set", "COMPLETE", "INCOMPLETE"]

#: verdicts of :class:`SetCheck`
COMPLETE = "complete"
INCOMPLETE = "incomplete"


@dataclass(frozen=True)
class SetCheck:
    """The result of one set check (module docstring).

    Attributes:
        verdict: ``"complete"`` (exactly the 32 tiles of one set, every face read) or
            ``"incomplete"``.
        tiles: how many tiles were seen (read or not).
        counts: ``{face: n}`` of the pai gow faces read, in :data:`scoring.tiles.FACES` order
            (faces not seen left out).
        missing: one entry per tile of the set not seen among the reads, in FACES order (a
            civil face missing both copies appears twice). With unread tiles some of these
            may be among them: see :attr:`unread`.
        extra: one entry per tile read beyond the set's copies of its face (a third 6-6, a
            second 3-6), in FACES order.
        foreign: the reads that are no pai gow face (text as given, e.g. ``"0-3"``), in the
            order given.
        unread: tiles whose face could not be read (None; face down or unknown): never
            guessed.
    """

    verdict: str
    tiles: int
    counts: dict[str, int]
    missing: tuple[str, ...]
    extra: tuple[str, ...]
    foreign: tuple[str, ...]
    unread: int

    @property
    def complete(self) -> bool:
        """True only for a complete set (:attr:`verdict` ``"complete"``)."""
        return self.verdict == COMPLETE

    @property
    def pairs(self) -> int:
        """Pair classes (0..16) whose two tiles were both read exactly once each (a civil
        face twice, or the two faces of a military class)."""
        by_class: Counter[int] = Counter()
        for face, n in self.counts.items():
            t = parse_tile(face)
            if n == t.copies:
                by_class[t.pair_class] += n
        return sum(1 for n in by_class.values() if n == 2)

    def summary(self) -> str:
        """One line in plain words, e.g. ``"set complete: 32 tiles, 16 pairs"`` or ``"set
        NOT complete (31 tiles): missing 6-6"``."""
        if self.complete:
            return f"set complete: {self.tiles} tiles, 16 pairs"
        parts = []
        if self.missing:
            parts.append("missing " + " ".join(self.missing)
                         + (" (unless among the unread tiles)" if self.unread else ""))
        if self.extra:
            parts.append("extra " + " ".join(self.extra))
        if self.foreign:
            parts.append("foreign " + " ".join(self.foreign) + " (not a pai gow tile)")
        if self.unread:
            parts.append(f"{self.unread} tile(s) could not be read -- check by eye")
        if not parts:  # cannot happen (32 clean reads are a complete set); kept for safety
            parts.append("tiles do not make one set")
        return f"set NOT complete ({self.tiles} tiles): " + "; ".join(parts)

    def to_dict(self) -> dict:
        """JSON-ready ``{"verdict", "complete", "tiles", "pairs", "counts", "missing",
        "extra", "foreign", "unread", "summary"}``."""
        return {"verdict": self.verdict, "complete": self.complete, "tiles": self.tiles,
                "pairs": self.pairs, "counts": dict(self.counts),
                "missing": list(self.missing), "extra": list(self.extra),
                "foreign": list(self.foreign), "unread": self.unread,
                "summary": self.summary()}


def check_set(faces: Iterable[str | None]) -> SetCheck:
    """Check the faces read off the tiles laid out against one 32-tile set.

    Args:
        faces: one entry per tile seen: its face text (``"6-6"``, any form
            :func:`scoring.tiles.parse_tile` accepts), None for a tile whose face could not be
            read, or text that is no pai gow face (e.g. ``"0-3"``: reported as foreign).

    Returns:
        :class:`SetCheck`; ``complete`` only when every tile was read, none is foreign, and
        each of the 21 faces was read exactly as often as a set holds it (32 tiles).
    """
    counts: Counter[str] = Counter()
    foreign: list[str] = []
    unread = 0
    n = 0
    for f in faces:
        n += 1
        if f is None:
            unread += 1
            continue
        try:
            counts[parse_tile(f).face] += 1
        except TileParseError:
            foreign.append(str(f))
    missing: list[str] = []
    extra: list[str] = []
    for t in FACES:
        got = counts.get(t.face, 0)
        missing += [t.face] * max(t.copies - got, 0)
        extra += [t.face] * max(got - t.copies, 0)
    ok = not (missing or extra or foreign or unread) and n == len(STANDARD_SET)
    return SetCheck(COMPLETE if ok else INCOMPLETE, n,
                    {t.face: counts[t.face] for t in FACES if counts.get(t.face)},
                    tuple(missing), tuple(extra), tuple(foreign), unread)
